//! Recording a frame's driver operations instead of queuing them, so the engine can compare a
//! frame's work with the work its slot's executable graph was built from, and replay that graph
//! with only the kernel parameters that changed (`cuGraphExecKernelNodeSetParams`), instead of
//! capturing every frame and updating the graph from the capture.
//!
//! While [`record`] runs its closure on a thread, the operations a frame's work is made of
//! ([`super::module::Function::launch`], [`super::copy::dtoh_async`],
//! [`super::copy::memset_async`], [`super::event::Event::record`] and
//! [`super::event::Event::wait_in`]) append an [`Op`] and return without calling the driver;
//! operations that cannot be recorded (other copies, waits on the host) fail. [`Op::queue`]
//! queues a recorded operation for real (the engine does that inside a stream capture to build
//! the graph), so what runs is always exactly what was recorded.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Mutex;

use cudarc::driver::sys;

use super::error::{check, CudaError, CudaResult};

/// A kernel's parameters: (offset, size) of each, in bytes, as `cuFuncGetParamInfo` gives them.
/// Interned ([`intern`]): a recorded launch refers to its layout without counting.
pub type ParamLayout = &'static [(usize, usize)];

/// The distinct layouts seen in this process (as many as the kernels have signatures, however
/// often modules are loaded).
static LAYOUTS: Mutex<Vec<ParamLayout>> = Mutex::new(Vec::new());

/// The interned copy of `layout`.
pub fn intern(layout: Vec<(usize, usize)>) -> ParamLayout {
    let mut known = LAYOUTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&l) = known.iter().find(|&&l| l == layout.as_slice()) {
        return l;
    }
    let l: ParamLayout = Vec::leak(layout);
    known.push(l);
    l
}

/// A recorded `cuLaunchKernel`: `args` holds the parameter values packed at `layout`'s offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub function: usize,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    pub stream: usize,
    pub layout: ParamLayout,
    pub args: Vec<u8>,
}

impl Launch {
    /// Whether `other` launches the same kernel in the same shape on the same stream (its
    /// parameter values may differ).
    pub fn same_shape(&self, other: &Launch) -> bool {
        (
            self.function,
            self.grid,
            self.block,
            self.shared_bytes,
            self.stream,
            self.args.len(),
        ) == (
            other.function,
            other.grid,
            other.block,
            other.shared_bytes,
            other.stream,
            other.args.len(),
        )
    }

    /// Pointers to each parameter's value in `args`, as `kernelParams` wants them. Valid while
    /// `args` is neither moved nor changed.
    pub fn params(&self) -> Vec<*mut c_void> {
        self.layout
            .iter()
            .map(|&(offset, _)| self.args[offset..].as_ptr().cast_mut().cast())
            .collect()
    }
}

/// One recorded driver operation. Handles are kept as integers (compared, never dereferenced
/// here); they belong to the engine that recorded them, which outlives its graphs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `cuLaunchKernel`.
    Launch(Launch),
    /// `cuMemcpyDtoHAsync`.
    Dtoh {
        dst: usize,
        src: u64,
        bytes: usize,
        stream: usize,
    },
    /// `cuMemsetD8Async`.
    Memset {
        dst: u64,
        value: u8,
        bytes: usize,
        stream: usize,
    },
    /// `cuEventRecord`.
    Record { event: usize, stream: usize },
    /// `cuStreamWaitEvent`.
    Wait { event: usize, stream: usize },
}

impl Op {
    /// Whether `other` is the same operation, but for a launch's parameter values.
    pub fn same_shape(&self, other: &Op) -> bool {
        match (self, other) {
            (Op::Launch(a), Op::Launch(b)) => a.same_shape(b),
            (a, b) => a == b,
        }
    }

    /// Queues the operation on its stream for real. The caller has the context current.
    ///
    /// # Safety
    /// The handles must still be alive, and the memory the operation touches valid until it
    /// completes: as when it was recorded (the recording's contract).
    pub unsafe fn queue(&self) -> CudaResult<()> {
        match self {
            Op::Launch(l) => {
                let mut params = l.params();
                let (grid, block) = (l.grid, l.block);
                // SAFETY: a function of a loaded module and a live stream (the caller's
                // contract); one pointer per parameter, to a value of its size, read by the
                // driver during this call.
                check(
                    unsafe {
                        sys::cuLaunchKernel(
                            l.function as sys::CUfunction,
                            grid.0,
                            grid.1,
                            grid.2,
                            block.0,
                            block.1,
                            block.2,
                            l.shared_bytes,
                            l.stream as sys::CUstream,
                            params.as_mut_ptr(),
                            std::ptr::null_mut(),
                        )
                    },
                    || {
                        format!(
                            "cuLaunchKernel(function {:#x}, grid {grid:?}, block {block:?})",
                            l.function
                        )
                    },
                )
            }
            Op::Dtoh {
                dst,
                src,
                bytes,
                stream,
            } => check(
                // SAFETY: as recorded (the caller's contract).
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(
                        *dst as *mut c_void,
                        *src,
                        *bytes,
                        *stream as sys::CUstream,
                    )
                },
                || format!("cuMemcpyDtoHAsync({bytes} bytes)"),
            ),
            Op::Memset {
                dst,
                value,
                bytes,
                stream,
            } => check(
                // SAFETY: as recorded (the caller's contract).
                unsafe { sys::cuMemsetD8Async(*dst, *value, *bytes, *stream as sys::CUstream) },
                || format!("cuMemsetD8Async({bytes} bytes)"),
            ),
            Op::Record { event, stream } => check(
                // SAFETY: live event and stream (the caller's contract).
                unsafe { sys::cuEventRecord(*event as sys::CUevent, *stream as sys::CUstream) },
                || "cuEventRecord".into(),
            ),
            Op::Wait { event, stream } => check(
                // SAFETY: live event and stream (the caller's contract); flags must be 0.
                unsafe {
                    sys::cuStreamWaitEvent(*stream as sys::CUstream, *event as sys::CUevent, 0)
                },
                || "cuStreamWaitEvent".into(),
            ),
        }
    }
}

thread_local! {
    static RECORDING: RefCell<Option<Vec<Op>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's driver operations recorded instead of queued; returns its
/// result and the operations, in order. Not reentrant: a nested call fails.
pub fn record<T>(f: impl FnOnce() -> CudaResult<T>) -> CudaResult<(T, Vec<Op>)> {
    let started = RECORDING.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_some() {
            return false;
        }
        *r = Some(Vec::new());
        true
    });
    if !started {
        return Err(CudaError::InvalidArgument(
            "recording driver operations while already recording".into(),
        ));
    }
    /// Stops the recording however `f` ends (an error, a panic caught further up).
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            RECORDING.with(|r| r.borrow_mut().take());
        }
    }
    let stop = Stop;
    let result = f();
    let ops = RECORDING
        .with(|r| r.borrow_mut().take())
        .unwrap_or_default();
    drop(stop);
    result.map(|t| (t, ops))
}

/// Whether this thread is recording.
pub fn recording() -> bool {
    RECORDING.with(|r| r.borrow().is_some())
}

/// Appends `op()` when this thread is recording; false (and `op` not called) when it is not.
pub(crate) fn push(op: impl FnOnce() -> CudaResult<Op>) -> CudaResult<bool> {
    if !recording() {
        return Ok(false);
    }
    let op = op()?;
    RECORDING.with(|r| {
        if let Some(ops) = r.borrow_mut().as_mut() {
            ops.push(op);
        }
    });
    Ok(true)
}

/// For operations that cannot be recorded: an error while this thread records.
pub(crate) fn refuse(what: &str) -> CudaResult<()> {
    if recording() {
        return Err(CudaError::InvalidArgument(format!(
            "{what} cannot be part of a recorded frame"
        )));
    }
    Ok(())
}

/// Packs the values `args` point to at `layout`'s offsets.
///
/// # Safety
/// Each pointer of `args` must address a readable value of at least its parameter's size.
pub(crate) unsafe fn pack(
    name: &str,
    layout: &[(usize, usize)],
    args: &[*mut c_void],
) -> CudaResult<Vec<u8>> {
    if layout.len() != args.len() {
        return Err(CudaError::InvalidArgument(format!(
            "{name}: {} arguments for {} parameters",
            args.len(),
            layout.len()
        )));
    }
    let end = layout.iter().map(|&(o, s)| o + s).max().unwrap_or(0);
    let mut blob = vec![0u8; end];
    for (&(offset, size), &p) in layout.iter().zip(args) {
        // SAFETY: the caller's contract: `p` addresses at least `size` readable bytes; the
        // destination is inside `blob` (end covers every offset + size).
        unsafe {
            std::ptr::copy_nonoverlapping(p.cast::<u8>(), blob.as_mut_ptr().add(offset), size)
        };
    }
    Ok(blob)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_collects_pushed_ops_and_ends_on_error() {
        assert!(!recording());
        let ((), ops) = record(|| {
            assert!(recording());
            assert!(push(|| Ok(Op::Record {
                event: 1,
                stream: 2
            }))?);
            assert!(record(|| Ok(())).is_err(), "not reentrant");
            Ok(())
        })
        .unwrap();
        assert_eq!(
            ops,
            vec![Op::Record {
                event: 1,
                stream: 2
            }]
        );
        assert!(!recording());
        assert!(!push(|| Ok(Op::Wait {
            event: 1,
            stream: 2
        }))
        .unwrap());
        let failed: CudaResult<((), Vec<Op>)> =
            record(|| Err(CudaError::InvalidArgument("x".into())));
        assert!(failed.is_err());
        assert!(!recording());
        assert!(refuse("a copy").is_ok());
    }

    #[test]
    fn packed_parameters_sit_at_their_offsets_and_counts_must_match() {
        let (a, b): (u32, u64) = (7, 0x1122_3344_5566_7788);
        let layout = [(0, 4), (8, 8)];
        let args = [
            (&a as *const u32).cast_mut().cast(),
            (&b as *const u64).cast_mut().cast(),
        ];
        // SAFETY: both pointers address values of their parameter's size.
        let blob = unsafe { pack("k", &layout, &args) }.unwrap();
        assert_eq!(blob.len(), 16);
        assert_eq!(blob[..4], 7u32.to_ne_bytes());
        assert_eq!(blob[8..], b.to_ne_bytes());
        let launch = Launch {
            function: 1,
            grid: (1, 1, 1),
            block: (1, 1, 1),
            shared_bytes: 0,
            stream: 2,
            layout: intern(layout.to_vec()),
            args: blob,
        };
        let params = launch.params();
        assert_eq!(params[1] as usize - params[0] as usize, 8);
        // SAFETY: as above.
        assert!(unsafe { pack("k", &layout, &args[..1]) }.is_err());
    }

    #[test]
    fn equal_layouts_are_interned_once() {
        let a = intern(vec![(0, 8), (8, 4)]);
        let b = intern(vec![(0, 8), (8, 4)]);
        assert!(std::ptr::eq(a, b));
        assert!(!std::ptr::eq(a, intern(vec![(0, 8)])));
    }

    #[test]
    fn launches_of_the_same_shape_differ_only_in_their_values() {
        let launch = |args: Vec<u8>, grid| {
            Op::Launch(Launch {
                function: 1,
                grid,
                block: (32, 1, 1),
                shared_bytes: 0,
                stream: 9,
                layout: intern(vec![(0, 8)]),
                args,
            })
        };
        let a = launch(vec![0; 8], (1, 1, 1));
        assert!(a.same_shape(&launch(vec![1; 8], (1, 1, 1))));
        assert!(!a.same_shape(&launch(vec![0; 8], (2, 1, 1))));
        assert!(!a.same_shape(&Op::Record {
            event: 1,
            stream: 9
        }));
        let r = Op::Record {
            event: 1,
            stream: 9,
        };
        assert!(r.same_shape(&r.clone()));
        assert!(!r.same_shape(&Op::Record {
            event: 2,
            stream: 9
        }));
    }
}
