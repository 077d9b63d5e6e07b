//! The CUDA layer's error type: every driver failure names the call and the driver's code.

use std::ffi::CStr;

use cudarc::driver::sys;

/// A failure of the CUDA layer. Out of memory and missing drivers are ordinary errors the
/// caller can handle (fall back to the CPU, retry smaller); nothing here aborts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// No CUDA driver library (`libcuda.so.1`) could be loaded.
    #[error("no CUDA driver: {0}")]
    NoDriver(String),
    /// The driver loaded but reports no device (or not the one asked for).
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A driver call failed, e.g. `cuMemAlloc(1048576 bytes): CUDA_ERROR_OUT_OF_MEMORY`.
    #[error("{call}: {name}{}", if *.injected { " (injected fault)" } else { "" })]
    Driver {
        /// The call and its salient arguments.
        call: String,
        /// The raw `CUresult` value.
        code: u32,
        /// The driver's name for `code` (`CUDA_ERROR_...`).
        name: String,
        /// Set when [`crate::cuda::fault`] made the call fail.
        injected: bool,
    },
    /// The driver library lacks an entry point we need (a driver older than CUDA 12).
    #[error("the CUDA driver has no {0} (driver too old)")]
    MissingSymbol(String),
    /// A panic inside the CUDA bindings, caught at our boundary.
    #[error("CUDA bindings panicked in {what}: {message}")]
    Panic { what: &'static str, message: String },
    /// A caller error caught before reaching the driver.
    #[error("invalid CUDA request: {0}")]
    InvalidArgument(String),
}

impl CudaError {
    /// True for `CUDA_ERROR_OUT_OF_MEMORY` (real or injected).
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, CudaError::Driver { code, .. } if *code == OUT_OF_MEMORY)
    }

    /// The raw `CUresult` of a driver failure.
    pub fn driver_code(&self) -> Option<u32> {
        match self {
            CudaError::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether [`crate::cuda::fault`] caused this error.
    pub fn is_injected(&self) -> bool {
        matches!(self, CudaError::Driver { injected: true, .. })
    }
}

pub type CudaResult<T> = Result<T, CudaError>;

pub(crate) const OUT_OF_MEMORY: u32 = 2;

/// Turns a `CUresult` into `Ok` or a [`CudaError::Driver`] naming `call()`. The call string is
/// built only on failure.
pub(crate) fn check(result: sys::CUresult, call: impl FnOnce() -> String) -> CudaResult<()> {
    // The value is read as the integer the driver returned and never matched against the Rust
    // enum, so codes added by drivers newer than the bindings still come through by number.
    let code = result as u32;
    if code == 0 {
        Ok(())
    } else {
        Err(CudaError::Driver {
            call: call(),
            code,
            name: error_name(result),
            injected: false,
        })
    }
}

/// A synthetic driver error, as made by fault injection.
pub(crate) fn injected(call: String, code: u32, name: &str) -> CudaError {
    CudaError::Driver {
        call,
        code,
        name: name.to_owned(),
        injected: true,
    }
}

/// The driver's own name for a `CUresult`, or its number when the driver knows no name.
fn error_name(result: sys::CUresult) -> String {
    let mut ptr: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName only writes a pointer to a static NUL-terminated string (or leaves
    // it null for an unknown code); it needs no context and no cuInit. This is only reached after
    // a driver call returned, so the library is loaded.
    let named = unsafe { sys::cuGetErrorName(result, &mut ptr) } as u32 == 0;
    if named && !ptr.is_null() {
        // SAFETY: checked non-null above; the driver's strings are static and NUL-terminated.
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    } else {
        format!("CUresult {}", result as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_error_names_call_and_code() {
        let e = CudaError::Driver {
            call: "cuMemAlloc(1048576 bytes)".into(),
            code: OUT_OF_MEMORY,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            injected: false,
        };
        assert_eq!(
            e.to_string(),
            "cuMemAlloc(1048576 bytes): CUDA_ERROR_OUT_OF_MEMORY"
        );
        assert!(e.is_out_of_memory());
        assert!(!e.is_injected());
        let i = injected("cuLaunchKernel(k)".into(), 719, "CUDA_ERROR_LAUNCH_FAILED");
        assert_eq!(
            i.to_string(),
            "cuLaunchKernel(k): CUDA_ERROR_LAUNCH_FAILED (injected fault)"
        );
        assert_eq!(i.driver_code(), Some(719));
    }
}
