//! Loading and initialising the driver, probing devices, and the panic boundary.
//!
//! cudarc loads `libcuda` lazily and panics when it (or one of its symbols) is missing, so every
//! public entry point of the CUDA layer runs inside `guarded`, and nothing touches the driver
//! before `init` has seen the library present.

use std::any::Any;
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::driver::sys;

use super::error::{check, CudaError, CudaResult};

/// What [`probe`] found: the driver's CUDA version and its devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverInfo {
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
    pub driver_version: i32,
    pub devices: Vec<DeviceInfo>,
}

/// One CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: i32,
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (i32, i32),
    pub total_memory: usize,
    pub multiprocessors: i32,
}

/// Checks that a CUDA driver and at least one device exist, and describes them. Never panics;
/// the error says what is missing (no library, `cuInit` failure, no device).
pub fn probe() -> CudaResult<DriverInfo> {
    guarded("probe", || {
        let driver_version = init()?;
        let mut count: c_int = 0;
        // SAFETY: the driver is loaded and initialised (init); `count` is a valid out pointer.
        check(unsafe { sys::cuDeviceGetCount(&mut count) }, || {
            "cuDeviceGetCount".into()
        })?;
        if count <= 0 {
            return Err(CudaError::NoDevice("the driver reports 0 devices".into()));
        }
        let devices = (0..count).map(device_info).collect::<CudaResult<_>>()?;
        Ok(DriverInfo {
            driver_version,
            devices,
        })
    })
}

/// Loads the driver library and runs `cuInit(0)` once per process; later calls return the
/// first outcome (the driver's own initialisation is one-shot too). Returns the driver version.
pub(crate) fn init() -> CudaResult<i32> {
    static INIT: OnceLock<CudaResult<i32>> = OnceLock::new();
    INIT.get_or_init(|| {
        guarded("cuInit", || {
            // SAFETY: is_culib_present only tries to dlopen the candidate library names.
            if !unsafe { sys::is_culib_present() } {
                return Err(CudaError::NoDriver(
                    "libcuda.so.1 not found (is the NVIDIA driver installed?)".into(),
                ));
            }
            // SAFETY: the library is present (checked above); cuInit takes flags only.
            check(unsafe { sys::cuInit(0) }, || "cuInit(0)".into())?;
            let mut version: c_int = 0;
            // SAFETY: initialised; `version` is a valid out pointer.
            check(unsafe { sys::cuDriverGetVersion(&mut version) }, || {
                "cuDriverGetVersion".into()
            })?;
            Ok(version)
        })
    })
    .clone()
}

/// The `CUdevice` for a device ordinal, with a clear error when it does not exist.
pub(crate) fn device(ordinal: i32) -> CudaResult<sys::CUdevice> {
    init()?;
    let mut count: c_int = 0;
    // SAFETY: initialised; valid out pointer.
    check(unsafe { sys::cuDeviceGetCount(&mut count) }, || {
        "cuDeviceGetCount".into()
    })?;
    if ordinal < 0 || ordinal >= count {
        return Err(CudaError::NoDevice(format!(
            "device {ordinal} asked for, the driver reports {count}"
        )));
    }
    let mut dev: sys::CUdevice = 0;
    // SAFETY: initialised; the ordinal is in range; valid out pointer.
    check(unsafe { sys::cuDeviceGet(&mut dev, ordinal) }, || {
        format!("cuDeviceGet({ordinal})")
    })?;
    Ok(dev)
}

pub(crate) fn device_info(ordinal: i32) -> CudaResult<DeviceInfo> {
    let dev = device(ordinal)?;
    let mut name = [0 as c_char; 256];
    // SAFETY: the buffer holds `len` bytes; the driver writes a NUL-terminated name into it.
    check(
        unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev) },
        || format!("cuDeviceGetName({ordinal})"),
    )?;
    // SAFETY: NUL-terminated by the driver within the buffer (its length was passed).
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut total: usize = 0;
    // SAFETY: valid device and out pointer.
    check(unsafe { sys::cuDeviceTotalMem_v2(&mut total, dev) }, || {
        format!("cuDeviceTotalMem({ordinal})")
    })?;
    let attr = |a: sys::CUdevice_attribute| -> CudaResult<i32> {
        let mut v: c_int = 0;
        // SAFETY: valid device, attribute from the bindings' enum, valid out pointer.
        check(unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) }, || {
            format!("cuDeviceGetAttribute({a:?}, {ordinal})")
        })?;
        Ok(v)
    };
    use sys::CUdevice_attribute as A;
    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability: (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        total_memory: total,
        multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
    })
}

/// Runs `f`, turning a panic (cudarc panics on a missing library or symbol) into
/// [`CudaError::Panic`]. Every public entry point of the CUDA layer goes through this, so no
/// panic from the bindings reaches a caller, least of all across an FFI boundary.
pub(crate) fn guarded<T>(what: &'static str, f: impl FnOnce() -> CudaResult<T>) -> CudaResult<T> {
    // AssertUnwindSafe: on a panic the closure's partial state is dropped by unwinding (RAII
    // owners release what they hold) and the caller only sees the error.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(CudaError::Panic {
            what,
            message: panic_message(payload.as_ref()),
        }),
    }
}

/// Like [`guarded`] for release paths (`Drop`): a failure or panic is reported on stderr, never
/// propagated; a destructor must not panic.
pub(crate) fn release(what: &'static str, f: impl FnOnce() -> CudaResult<()>) -> bool {
    match guarded(what, f) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("vmafcuda: releasing a CUDA {what} failed: {e}");
            false
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

/// Looks up a driver entry point by its exported name, trying `names` in order. For the few
/// calls whose binding the version feature leaves out or renames (e.g. `cuCtxCreate_v2`,
/// `cuEventElapsedTime`): libcuda keeps every old symbol, so the oldest name works on every
/// driver.
///
/// # Safety
/// `F` must be the exact C signature of the named functions. Call only after [`init`].
pub(crate) unsafe fn symbol<F: Copy>(names: &[&str]) -> CudaResult<F> {
    // SAFETY: init() has seen the library present, so culib() loads it rather than panicking.
    let lib = unsafe { sys::culib() };
    for name in names {
        // SAFETY: the caller guarantees F matches the symbol's signature.
        if let Ok(sym) = unsafe { lib.get::<F>(name.as_bytes()) } {
            return Ok(*sym);
        }
    }
    Err(CudaError::MissingSymbol(names.join(" / ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guarded_turns_panics_into_errors() {
        let r: CudaResult<()> = guarded("test", || panic!("boom"));
        assert_eq!(
            r,
            Err(CudaError::Panic {
                what: "test",
                message: "boom".into()
            })
        );
    }

    #[test]
    fn probe_never_panics() {
        // Without a driver (CI) this is NoDriver; on a GPU machine it lists the devices.
        match probe() {
            Ok(info) => assert!(!info.devices.is_empty()),
            Err(e) => assert!(
                matches!(
                    e,
                    CudaError::NoDriver(_) | CudaError::NoDevice(_) | CudaError::Driver { .. }
                ),
                "{e}"
            ),
        }
    }
}
