//! CUDA contexts: owned (we retain a device's primary context, or create a dedicated one) or
//! borrowed (a raw `CUcontext` handed to us by GStreamer or FFmpeg, never destroyed by us).
//!
//! Work is done with the context pushed on the calling thread ([`Context::bind`]) and popped
//! afterwards, never with `cuCtxSetCurrent`, so a caller's own current context survives. Every
//! resource keeps a clone of its [`Context`], so an owned context outlives what was made in it.

use std::ffi::{c_uint, c_void};
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys;

use super::counters;
use super::driver::{self, guarded, release};
use super::error::{check, CudaError, CudaResult};

/// How a [`Context`] came to us, which decides what dropping it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextKind {
    /// The device's primary context, retained by us and released on drop.
    Primary,
    /// A context we created with `cuCtxCreate` and destroy on drop.
    Dedicated,
    /// Someone else's context: never destroyed or released by us.
    Borrowed,
}

/// A handle to a CUDA context; clones share it. See the module docs.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    raw: sys::CUcontext,
    device: sys::CUdevice,
    kind: ContextKind,
}

// SAFETY: a CUcontext may be used from any thread as long as it is made current there, which
// every use does (bind pushes it); the handle itself is immutable after construction.
unsafe impl Send for Inner {}
// SAFETY: as above; the driver serialises concurrent use of one context internally.
unsafe impl Sync for Inner {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("raw", &self.inner.raw)
            .field("device", &self.inner.device)
            .field("kind", &self.inner.kind)
            .finish()
    }
}

type CtxCreateV2 =
    unsafe extern "C" fn(*mut sys::CUcontext, c_uint, sys::CUdevice) -> sys::CUresult;
type CtxCreateV4 =
    unsafe extern "C" fn(*mut sys::CUcontext, *mut c_void, c_uint, sys::CUdevice) -> sys::CUresult;

impl Context {
    /// Retains the primary context of device `ordinal` (the one the CUDA runtime and most
    /// libraries share); released when the last clone and resource made in it are dropped.
    pub fn primary(ordinal: i32) -> CudaResult<Context> {
        guarded("Context::primary", || {
            let device = driver::device(ordinal)?;
            let mut raw: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: initialised driver, valid device, valid out pointer.
            check(
                unsafe { sys::cuDevicePrimaryCtxRetain(&mut raw, device) },
                || format!("cuDevicePrimaryCtxRetain(device {ordinal})"),
            )?;
            Ok(Context::adopt(raw, device, ContextKind::Primary))
        })
    }

    /// Creates a context of our own on device `ordinal` (as GStreamer does for its
    /// `GstCudaContext`); destroyed when the last clone and resource are dropped.
    pub fn dedicated(ordinal: i32) -> CudaResult<Context> {
        guarded("Context::dedicated", || {
            let device = driver::device(ordinal)?;
            let mut raw: sys::CUcontext = std::ptr::null_mut();
            // cuCtxCreate_v2 is what CUDA 12 headers call; CUDA 13 headers map to _v4, but the
            // driver keeps exporting _v2. Flags 0 = CU_CTX_SCHED_AUTO.
            // SAFETY: the type matches cuCtxCreate_v2's C signature; init() ran in device().
            let created = match unsafe { driver::symbol::<CtxCreateV2>(&["cuCtxCreate_v2"]) } {
                // SAFETY: valid out pointer and device.
                Ok(create) => unsafe { create(&mut raw, 0, device) },
                Err(_) => {
                    // SAFETY: the type matches cuCtxCreate_v4's C signature.
                    let create = unsafe { driver::symbol::<CtxCreateV4>(&["cuCtxCreate_v4"]) }?;
                    // SAFETY: a null parameter block asks for defaults (CUDA 12.5+ drivers).
                    unsafe { create(&mut raw, std::ptr::null_mut(), 0, device) }
                }
            };
            check(created, || format!("cuCtxCreate(device {ordinal})"))?;
            // Own it before anything else can fail, so it is destroyed on every path.
            let ctx = Context::adopt(raw, device, ContextKind::Dedicated);
            // cuCtxCreate also pushed the new context on this thread: undo that.
            let mut popped: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: the new context is current on this thread (pushed by cuCtxCreate).
            check(unsafe { sys::cuCtxPopCurrent_v2(&mut popped) }, || {
                "cuCtxPopCurrent after cuCtxCreate".into()
            })?;
            Ok(ctx)
        })
    }

    /// Wraps a context owned by someone else (GStreamer's `GstCudaContext`, FFmpeg's
    /// `AVCUDADeviceContext`). We push/pop it around our work and never destroy it.
    ///
    /// # Safety
    /// `raw` must be a valid context that stays alive until this `Context`, its clones and every
    /// resource made in it are dropped.
    pub unsafe fn borrow(raw: sys::CUcontext) -> CudaResult<Context> {
        guarded("Context::borrow", || {
            driver::init()?;
            if raw.is_null() {
                return Err(CudaError::InvalidArgument("null CUcontext".into()));
            }
            // Ask the context for its device (with it pushed: cuCtxGetDevice reads the current
            // one). The handle counts as ours only after that succeeded.
            let probe = Context::adopt(raw, 0, ContextKind::Borrowed);
            let device = {
                let _bound = probe.bind()?;
                let mut device: sys::CUdevice = 0;
                // SAFETY: the context is current (bound); valid out pointer.
                check(unsafe { sys::cuCtxGetDevice(&mut device) }, || {
                    "cuCtxGetDevice(borrowed context)".into()
                })?;
                device
            };
            drop(probe);
            Ok(Context::adopt(raw, device, ContextKind::Borrowed))
        })
    }

    fn adopt(raw: sys::CUcontext, device: sys::CUdevice, kind: ContextKind) -> Context {
        counters::up(&counters::CONTEXTS, 1);
        Context {
            inner: Arc::new(Inner { raw, device, kind }),
        }
    }

    /// The raw handle (to hand to other CUDA users; it stays ours or theirs as before).
    pub fn raw(&self) -> sys::CUcontext {
        self.inner.raw
    }

    pub fn kind(&self) -> ContextKind {
        self.inner.kind
    }

    /// The device ordinal this context runs on.
    pub fn device_ordinal(&self) -> i32 {
        self.inner.device
    }

    /// Whether two handles name the same driver context.
    pub fn same_as(&self, other: &Context) -> bool {
        self.inner.raw == other.inner.raw
    }

    /// Makes the context current on this thread until the returned guard is dropped: pushes it,
    /// or, where an outer guard of this thread already made it current, only counts one more
    /// user of that push (an engine binds once per frame, and each of the frame's driver calls
    /// inside binds again: nested binds cost no push and pop of their own).
    pub fn bind(&self) -> CudaResult<Bound<'_>> {
        let raw = self.inner.raw;
        let nested = BOUND.with(|b| {
            let (top, depth) = b.get();
            let nested = depth > 0 && top == raw;
            if nested {
                b.set((top, depth + 1));
            }
            nested
        });
        if nested {
            return Ok(Bound {
                raw,
                _ctx: PhantomData,
                outer: None,
                _not_send: PhantomData,
            });
        }
        guarded("Context::bind", || {
            // SAFETY: the context is alive (owned by us, or borrowed under `borrow`'s contract).
            check(unsafe { sys::cuCtxPushCurrent_v2(raw) }, || {
                "cuCtxPushCurrent".into()
            })?;
            Ok(Bound {
                raw,
                _ctx: PhantomData,
                outer: Some(BOUND.with(|b| b.replace((raw, 1)))),
                _not_send: PhantomData,
            })
        })
    }

    /// [`Context::bind`] for a caller that cannot borrow the context for the guard's life (an
    /// engine binding once for a whole frame while it changes its own fields).
    ///
    /// # Safety
    /// The context must stay alive until the returned guard is dropped.
    pub(crate) unsafe fn bind_unbounded(&self) -> CudaResult<Bound<'static>> {
        let bound = self.bind()?;
        // SAFETY: the guard only holds the raw handle; the caller keeps the context alive.
        Ok(unsafe { std::mem::transmute::<Bound<'_>, Bound<'static>>(bound) })
    }

    /// Free and total device memory as the driver reports them (`cuMemGetInfo`).
    pub fn memory_info(&self) -> CudaResult<(usize, usize)> {
        guarded("Context::memory_info", || {
            let _bound = self.bind()?;
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: context current; valid out pointers.
            check(
                unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) },
                || "cuMemGetInfo".into(),
            )?;
            Ok((free, total))
        })
    }
}

thread_local! {
    /// The context the innermost [`Bound`] of this thread pushed, and how many guards share
    /// that push (0: none).
    static BOUND: std::cell::Cell<(sys::CUcontext, usize)> =
        const { std::cell::Cell::new((std::ptr::null_mut(), 0)) };
}

/// The context made current on this thread by [`Context::bind`]; popped on drop (by the guard
/// that pushed it). Not `Send`: it must be popped on the thread that pushed it.
pub struct Bound<'a> {
    raw: sys::CUcontext,
    _ctx: PhantomData<&'a Context>,
    /// For the guard that pushed: what [`BOUND`] was before, restored when it pops.
    outer: Option<(sys::CUcontext, usize)>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Bound<'_> {
    fn drop(&mut self) {
        let Some(outer) = self.outer else {
            BOUND.with(|b| {
                let (top, depth) = b.get();
                // Guards drop in reverse order of their binds: the innermost push is this one's.
                debug_assert!(
                    top == self.raw && depth > 1,
                    "nested context guard out of order"
                );
                b.set((top, depth.saturating_sub(1)));
            });
            return;
        };
        BOUND.with(|b| b.set(outer));
        let expected = self.raw;
        release("context binding", || {
            let mut popped: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: bind() pushed `expected` on this thread; the guard is !Send, so this pops
            // on the same thread, and guards drop in reverse order of their pushes.
            check(unsafe { sys::cuCtxPopCurrent_v2(&mut popped) }, || {
                "cuCtxPopCurrent".into()
            })?;
            if popped != expected {
                return Err(CudaError::InvalidArgument(format!(
                    "popped context {popped:?}, expected {expected:?} (unbalanced push/pop by another user of this thread)"
                )));
            }
            Ok(())
        });
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let (raw, device) = (self.raw, self.device);
        let released = match self.kind {
            ContextKind::Borrowed => true,
            ContextKind::Primary => release("primary context", || {
                // SAFETY: we retained it once in Context::primary; this is the matching release.
                check(unsafe { sys::cuDevicePrimaryCtxRelease_v2(device) }, || {
                    format!("cuDevicePrimaryCtxRelease(device {device})")
                })
            }),
            ContextKind::Dedicated => release("dedicated context", || {
                // SAFETY: we created it; no resource made in it is alive (each holds a clone).
                check(unsafe { sys::cuCtxDestroy_v2(raw) }, || {
                    "cuCtxDestroy".into()
                })
            }),
        };
        if released {
            counters::down(&counters::CONTEXTS, 1);
        }
    }
}
