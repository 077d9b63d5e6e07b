//! CUDA events: completion markers on a stream, and GPU-side timers.

use std::ffi::c_float;

use cudarc::driver::sys;

use super::context::Context;
use super::counters;
use super::driver::{self, guarded, release};
use super::error::{check, CudaError, CudaResult};
use super::record::{self, Op};
use super::stream::Stream;

/// An event in a [`Context`]; destroyed on drop.
pub struct Event {
    ctx: Context,
    raw: sys::CUevent,
    timing: bool,
}

// SAFETY: event handles may be used from any thread with their context pushed (every use binds
// it); recording and querying are thread-safe in the driver.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

const NOT_READY: u32 = 600; // CUDA_ERROR_NOT_READY

type ElapsedTime = unsafe extern "C" fn(*mut c_float, sys::CUevent, sys::CUevent) -> sys::CUresult;

impl Event {
    /// A new event; `timing` enables [`Event::elapsed_ms`] (slightly costlier to record).
    pub fn new(ctx: &Context, timing: bool) -> CudaResult<Event> {
        guarded("Event::new", || {
            super::fault::hit(super::fault::FaultKind::Create, || "cuEventCreate".into())?;
            let _bound = ctx.bind()?;
            let flags = if timing {
                sys::CUevent_flags_enum::CU_EVENT_DEFAULT as u32
            } else {
                sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32
            };
            let mut raw: sys::CUevent = std::ptr::null_mut();
            // SAFETY: context current; valid out pointer; valid flags.
            check(unsafe { sys::cuEventCreate(&mut raw, flags) }, || {
                "cuEventCreate".into()
            })?;
            counters::up(&counters::EVENTS, 1);
            Ok(Event {
                ctx: ctx.clone(),
                raw,
                timing,
            })
        })
    }

    pub fn raw(&self) -> sys::CUevent {
        self.raw
    }

    /// Marks the point in `stream`'s work that this event completes at.
    pub fn record(&self, stream: &Stream) -> CudaResult<()> {
        guarded("Event::record", || {
            let op = || {
                Ok(Op::Record {
                    event: self.raw as usize,
                    stream: stream.raw() as usize,
                })
            };
            if record::push(op)? {
                return Ok(());
            }
            let _bound = self.ctx.bind()?;
            // SAFETY: live event and stream.
            check(
                unsafe { sys::cuEventRecord(self.raw, stream.raw()) },
                || "cuEventRecord".into(),
            )
        })
    }

    /// Makes later work on `stream` (any stream of the same context) wait until this event
    /// completes.
    pub fn wait_in(&self, stream: &Stream) -> CudaResult<()> {
        guarded("Event::wait_in", || {
            let op = || {
                Ok(Op::Wait {
                    event: self.raw as usize,
                    stream: stream.raw() as usize,
                })
            };
            if record::push(op)? {
                return Ok(());
            }
            let _bound = stream.context().bind()?;
            // SAFETY: live stream and event; flags must be 0.
            check(
                unsafe { sys::cuStreamWaitEvent(stream.raw(), self.raw, 0) },
                || "cuStreamWaitEvent".into(),
            )
        })
    }

    /// Waits until the work before the last record has finished.
    pub fn synchronize(&self) -> CudaResult<()> {
        guarded("Event::synchronize", || {
            record::refuse("a wait on the host")?;
            let _bound = self.ctx.bind()?;
            // SAFETY: live event.
            check(unsafe { sys::cuEventSynchronize(self.raw) }, || {
                "cuEventSynchronize".into()
            })
        })
    }

    /// Whether the work before the last record has finished (without waiting).
    pub fn is_complete(&self) -> CudaResult<bool> {
        guarded("Event::is_complete", || {
            let _bound = self.ctx.bind()?;
            // SAFETY: live event.
            let r = unsafe { sys::cuEventQuery(self.raw) };
            if r as u32 == NOT_READY {
                return Ok(false);
            }
            check(r, || "cuEventQuery".into())?;
            Ok(true)
        })
    }

    /// Milliseconds of GPU time from `self` to `end` (both recorded and complete, both made with
    /// timing on).
    pub fn elapsed_ms(&self, end: &Event) -> CudaResult<f32> {
        guarded("Event::elapsed_ms", || {
            if !self.timing || !end.timing {
                return Err(CudaError::InvalidArgument(
                    "elapsed time of an event made without timing".into(),
                ));
            }
            let _bound = self.ctx.bind()?;
            // The bindings of our version feature only have _v2 (CUDA 12.8+ drivers); the plain
            // name is exported by every driver.
            // SAFETY: both names have this C signature; the driver is initialised (we hold an
            // event).
            let f = unsafe {
                driver::symbol::<ElapsedTime>(&["cuEventElapsedTime_v2", "cuEventElapsedTime"])
            }?;
            let mut ms: c_float = 0.0;
            // SAFETY: live events; valid out pointer.
            check(unsafe { f(&mut ms, self.raw, end.raw) }, || {
                "cuEventElapsedTime".into()
            })?;
            Ok(ms)
        })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let (raw, ctx) = (self.raw, &self.ctx);
        if release("event", || {
            let _bound = ctx.bind()?;
            // SAFETY: our live event; destroyed once, here.
            check(unsafe { sys::cuEventDestroy_v2(raw) }, || {
                "cuEventDestroy".into()
            })
        }) {
            counters::down(&counters::EVENTS, 1);
        }
    }
}
