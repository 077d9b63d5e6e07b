//! Our own CUDA streams. Non-blocking (no implicit ordering with the legacy default stream that
//! other libraries in the process may use), synchronised only by us, never through
//! `cuCtxSynchronize`.

use cudarc::driver::sys;

use super::context::Context;
use super::counters;
use super::driver::{guarded, release};
use super::error::{check, CudaResult};

/// A non-blocking stream in a [`Context`]. Dropping it waits for its pending work, then
/// destroys it.
pub struct Stream {
    ctx: Context,
    raw: sys::CUstream,
}

// SAFETY: stream handles may be used from any thread with their context pushed (every use binds
// it); the driver serialises work submitted to one stream.
unsafe impl Send for Stream {}
// SAFETY: as above; &Stream only submits work or waits, which the driver makes thread-safe.
unsafe impl Sync for Stream {}

impl Stream {
    pub fn new(ctx: &Context) -> CudaResult<Stream> {
        Stream::with_priority(ctx, 0)
    }

    /// A stream whose work the GPU schedules before lower priorities' (`priority`: 0, the
    /// default, down to [`Stream::greatest_priority`]; lower numbers go first).
    pub fn with_priority(ctx: &Context, priority: i32) -> CudaResult<Stream> {
        guarded("Stream::new", || {
            super::fault::hit(super::fault::FaultKind::Create, || "cuStreamCreate".into())?;
            let _bound = ctx.bind()?;
            let mut raw: sys::CUstream = std::ptr::null_mut();
            let flags = sys::CUstream_flags_enum::CU_STREAM_NON_BLOCKING as u32;
            if priority == 0 {
                // SAFETY: context current; valid out pointer; valid flags.
                check(unsafe { sys::cuStreamCreate(&mut raw, flags) }, || {
                    "cuStreamCreate(non-blocking)".into()
                })?;
            } else {
                // SAFETY: context current; valid out pointer; valid flags; the driver clamps
                // the priority into its range.
                check(
                    unsafe { sys::cuStreamCreateWithPriority(&mut raw, flags, priority) },
                    || format!("cuStreamCreateWithPriority({priority})"),
                )?;
            }
            counters::up(&counters::STREAMS, 1);
            Ok(Stream {
                ctx: ctx.clone(),
                raw,
            })
        })
    }

    /// The context's greatest (first scheduled) stream priority, a number at most 0.
    pub fn greatest_priority(ctx: &Context) -> CudaResult<i32> {
        guarded("Stream::greatest_priority", || {
            let _bound = ctx.bind()?;
            let (mut least, mut greatest) = (0, 0);
            // SAFETY: context current; valid out pointers.
            check(
                unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) },
                || "cuCtxGetStreamPriorityRange".into(),
            )?;
            Ok(greatest)
        })
    }

    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Waits until all work submitted to this stream has finished.
    pub fn synchronize(&self) -> CudaResult<()> {
        guarded("Stream::synchronize", || {
            super::record::refuse("a wait on the host")?;
            let _bound = self.ctx.bind()?;
            // SAFETY: our live stream, its context current.
            check(unsafe { sys::cuStreamSynchronize(self.raw) }, || {
                "cuStreamSynchronize".into()
            })
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let raw = self.raw;
        let ctx = &self.ctx;
        let mut destroyed = false;
        release("stream", || {
            let _bound = ctx.bind()?;
            // Finish pending work first: buffers it uses may be freed right after us.
            // SAFETY: our live stream, its context current.
            let synced = check(unsafe { sys::cuStreamSynchronize(raw) }, || {
                "cuStreamSynchronize (before cuStreamDestroy)".into()
            });
            // SAFETY: our live stream; destroyed once, here.
            check(unsafe { sys::cuStreamDestroy_v2(raw) }, || {
                "cuStreamDestroy".into()
            })?;
            destroyed = true;
            synced
        });
        if destroyed {
            counters::down(&counters::STREAMS, 1);
        }
    }
}
