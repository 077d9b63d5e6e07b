//! A scorer's memory pools: where every per-shot engine takes its device memory and pinned
//! host memory from, and gives it back to, so that building and dropping engines beside a
//! running shot neither waits for the GPU nor blocks it.
//!
//! Measured on an H100 (`tests/driver_stalls.rs`): `cuMemFree` and `cuMemFreeHost` wait until
//! every stream of the device is idle and, while they wait, block every other thread's
//! launches and copies; `cuMemHostAlloc` blocks them for milliseconds. A full rebuild
//! ([`crate::Rebuild::Full`]) drops one engine and builds the next on a thread of its own while
//! the scoring thread goes on, so plain allocations turned every boundary into a pipeline
//! drain. Device memory comes from a stream-ordered pool of the scorer's own
//! (`cuMemPoolCreate`, `cuMemAllocFromPoolAsync` / `cuMemFreeAsync`), which neither waits nor
//! blocks. Pinned host memory is allocated from the driver (`cuMemHostAlloc`) the first time a
//! size is asked for, and kept by the scorer when its engine is dropped, for the next engine
//! to take: a host-located stream-ordered pool was measured on the H100 to make the
//! asynchronous result copies into it slow (1080p device-resident frames: 0.249 ms per frame
//! instead of 0.165).
//!
//! The pools live as long as the scorer (every engine built for it holds them), and keep the
//! memory freed into them for the next engine (release threshold: never), so after the first
//! shot a rebuild allocates nothing from the driver. Dropping the scorer destroys them and
//! their memory goes back to the driver; [`super::live_resources`] counts them (`pools`) and
//! every buffer handed out, which must be back to zero once the scorer is gone.
//!
//! An engine's allocations are made from the pools while [`with_pools`] runs (its build),
//! which waits for them once, at its end: the rebuild thread's driver calls hold up the
//! scoring thread's launches, so a build makes as few as it can (H200, a 576x324 engine with
//! overlap lanes: about 10 allocations and one wait instead of about 45 of each cut its build
//! from 0.61 to 0.29 ms).
//! Without pool support (old drivers, some virtual GPUs) allocations are plain.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use cudarc::driver::sys;

use super::context::Context;
use super::counters;
use super::driver::release;
use super::error::{check, CudaResult};
use super::stream::Stream;

/// A scorer's device pool, with the stream its allocations and frees are ordered on, and the
/// pinned host blocks its engines gave back.
#[derive(Clone)]
pub struct ScorerPools {
    inner: Arc<PoolsInner>,
}

pub(crate) struct PoolsInner {
    ctx: Context,
    device: sys::CUmemoryPool,
    /// Pinned host blocks (address, bytes) no engine uses now.
    pinned: std::sync::Mutex<Vec<(usize, usize)>>,
    stream: Stream,
}

// SAFETY: pool handles are context-wide, not thread-bound; every call binds the context.
unsafe impl Send for PoolsInner {}
// SAFETY: as above; pool calls are thread-safe in the driver.
unsafe impl Sync for PoolsInner {}

fn create(location: sys::CUmemLocationType, id: i32) -> CudaResult<sys::CUmemoryPool> {
    super::fault::hit(super::fault::FaultKind::Create, || {
        format!("cuMemPoolCreate({location:?})")
    })?;
    // SAFETY: an all-zero CUmemPoolProps is valid (no handle types, default location
    // fields), the fields the API needs are set below.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type_ = location;
    props.location.id = id;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: context current (callers bind it); valid props and out pointer.
    check(unsafe { sys::cuMemPoolCreate(&mut pool, &props) }, || {
        format!("cuMemPoolCreate({location:?})")
    })?;
    counters::up(&counters::POOLS, 1);
    // Keep freed memory in the pool for the next engine: never trim it back to the driver
    // at synchronisation points (it goes back when the pool is destroyed).
    let mut threshold: u64 = u64::MAX;
    // SAFETY: our pool; the attribute takes a cuuint64_t.
    let kept = check(
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
        },
        || "cuMemPoolSetAttribute(RELEASE_THRESHOLD)".to_owned(),
    );
    if let Err(e) = kept {
        destroy(pool);
        return Err(e);
    }
    Ok(pool)
}

fn destroy(pool: sys::CUmemoryPool) {
    if release("memory pool", || {
        // SAFETY: our pool, destroyed once; frees still queued complete first (the driver
        // releases the pool's memory after them).
        check(unsafe { sys::cuMemPoolDestroy(pool) }, || {
            "cuMemPoolDestroy".to_owned()
        })
    }) {
        counters::down(&counters::POOLS, 1);
    }
}

impl ScorerPools {
    /// Pools for one scorer in `ctx`, or `None` where the device has no memory pools.
    pub fn new(ctx: &Context) -> CudaResult<Option<ScorerPools>> {
        let _bound = ctx.bind()?;
        let mut supported = 0;
        // SAFETY: valid out pointer; the ordinal is the context's device.
        check(
            unsafe {
                sys::cuDeviceGetAttribute(
                    &mut supported,
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                    ctx.device_ordinal(),
                )
            },
            || "cuDeviceGetAttribute(MEMORY_POOLS_SUPPORTED)".to_owned(),
        )?;
        if supported == 0 {
            return Ok(None);
        }
        let stream = Stream::new(ctx)?;
        let device = create(
            sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            ctx.device_ordinal(),
        )?;
        Ok(Some(ScorerPools {
            inner: Arc::new(PoolsInner {
                ctx: ctx.clone(),
                device,
                pinned: std::sync::Mutex::new(Vec::new()),
                stream,
            }),
        }))
    }
}

impl Drop for PoolsInner {
    fn drop(&mut self) {
        let _bound = self.ctx.bind();
        let blocks = std::mem::take(self.pinned.get_mut().unwrap_or_else(|p| p.into_inner()));
        for (address, bytes) in blocks {
            if release("pinned buffer", || {
                // SAFETY: a block of ours from cuMemHostAlloc, given back by its buffer (so
                // unused), freed once, here.
                check(
                    unsafe { sys::cuMemFreeHost(address as *mut std::ffi::c_void) },
                    || format!("cuMemFreeHost({bytes} bytes)"),
                )
            }) {
                counters::down(&counters::PINNED_KEPT, 1);
            }
        }
        destroy(self.device);
    }
}

thread_local! {
    /// The pools allocations on this thread come from ([`with_pools`]).
    static CURRENT: RefCell<Option<ScorerPools>> = const { RefCell::new(None) };
    /// Work queued on the current pools' stream (allocations, zero fills) that [`with_pools`]
    /// has yet to wait for.
    static PENDING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `build` with device and pinned allocations in `pools`' context taken from `pools`
/// (`None`: plain allocations). The previous pools come back afterwards, also on a panic.
///
/// The device allocations (and [`DeviceBuffer::zero`] fills) made inside are queued on the
/// pools' stream and waited for once, when `build` has returned: what it built is usable on
/// every stream and by the CPU only then, so `build` itself must not use that memory on
/// another stream. One wait instead of one per buffer: an engine holds tens of buffers, and a
/// full rebuild makes one beside a running shot, whose launches its driver calls hold up.
///
/// [`DeviceBuffer::zero`]: super::memory::DeviceBuffer::zero
pub fn with_pools<T>(
    pools: Option<&ScorerPools>,
    build: impl FnOnce() -> CudaResult<T>,
) -> CudaResult<T> {
    struct Restore(Option<ScorerPools>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
            PENDING.with(|p| p.set(self.1));
        }
    }
    let previous = CURRENT.with(|c| c.replace(pools.cloned()));
    let _restore = Restore(previous, PENDING.with(|p| p.replace(false)));
    let built = build()?;
    if PENDING.with(|p| p.replace(false)) {
        if let Some(pools) = pools {
            // (on failure `built` is dropped: its buffers go back to the pool, ordered on the
            // same stream)
            pools.inner.stream.synchronize()?;
        }
    }
    Ok(built)
}

/// After work on `pools`' stream for memory being built: inside [`with_pools`] for these
/// pools, the scope waits for it at its end; elsewhere it is waited for now.
fn ordered(pools: &PoolsInner) -> CudaResult<()> {
    let in_scope = CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|p| std::ptr::eq(Arc::as_ptr(&p.inner), pools))
    });
    if in_scope {
        PENDING.with(|p| p.set(true));
        Ok(())
    } else {
        pools.stream.synchronize()
    }
}

/// Queues `bytes` zero bytes at `ptr` (memory of `pools`) on the pools' stream, after its
/// allocation; waited for as [`ordered`] says.
pub(crate) fn zero(pools: &PoolsInner, ptr: sys::CUdeviceptr, bytes: usize) -> CudaResult<()> {
    let _bound = pools.ctx.bind()?;
    // SAFETY: our pool's memory, in bounds (the caller's range); ordered after its allocation
    // on the same stream.
    unsafe { super::copy::memset_async(ptr, 0, bytes, &pools.stream) }?;
    ordered(pools)
}

/// Where an allocation comes from.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Device,
    Host,
}

/// A stream-ordered allocation of `bytes` from the current pools of `ctx` ([`with_pools`]):
/// `Some((address, pools))`, usable on every stream once the enclosing `with_pools` has
/// returned (pinned memory: at once), or `None` when there are no such pools (the caller
/// allocates plainly).
pub(crate) fn allocate(
    ctx: &Context,
    side: Side,
    bytes: usize,
    call: impl Fn() -> String,
) -> CudaResult<Option<(sys::CUdeviceptr, Arc<PoolsInner>)>> {
    let Some(pools) = CURRENT.with(|c| c.borrow().clone()) else {
        return Ok(None);
    };
    let inner = pools.inner;
    if !inner.ctx.same_as(ctx) {
        return Ok(None);
    }
    let pool = match side {
        Side::Device => inner.device,
        Side::Host => {
            let kept = {
                let mut blocks = inner.pinned.lock().unwrap_or_else(|p| p.into_inner());
                let found = blocks.iter().position(|&(_, b)| b == bytes);
                found.map(|i| blocks.swap_remove(i))
            };
            if let Some((address, _)) = kept {
                counters::down(&counters::PINNED_KEPT, 1);
                return Ok(Some((address as sys::CUdeviceptr, inner)));
            }
            let _bound = ctx.bind()?;
            let mut ptr: *mut std::ffi::c_void = std::ptr::null_mut();
            // SAFETY: context current; valid out pointer; PORTABLE is a valid flag.
            check(
                unsafe { sys::cuMemHostAlloc(&mut ptr, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) },
                call,
            )?;
            return Ok(Some((ptr as usize as sys::CUdeviceptr, inner)));
        }
    };
    let _bound = ctx.bind()?;
    let mut ptr: sys::CUdeviceptr = 0;
    // SAFETY: context current; our pool and stream; valid out pointer.
    check(
        unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, pool, inner.stream.raw()) },
        call,
    )?;
    // Ordered on the pools' stream: waiting for it (it holds nothing else) makes the memory
    // usable on every stream and by the CPU; with_pools waits once for all of its build's.
    // This waits on the building thread only.
    if let Err(e) = ordered(&inner) {
        free(&inner, Side::Device, ptr, bytes);
        return Err(e);
    }
    Ok(Some((ptr, inner)))
}

/// Gives `ptr` (`bytes`), allocated by [`allocate`] from `pools`, back: a device block's free
/// is queued on the pool's stream, a pinned block is kept for the next engine. The caller
/// guarantees no queued work still uses it (as for every buffer: their owners synchronise
/// their streams before dropping them).
pub(crate) fn free(pools: &PoolsInner, side: Side, ptr: sys::CUdeviceptr, bytes: usize) -> bool {
    if let Side::Host = side {
        let mut blocks = pools.pinned.lock().unwrap_or_else(|p| p.into_inner());
        blocks.push((ptr as usize, bytes));
        counters::up(&counters::PINNED_KEPT, 1);
        return true;
    }
    release("pooled allocation", || {
        let _bound = pools.ctx.bind()?;
        // SAFETY: allocated from one of these pools, freed once, here; unused by queued work.
        check(
            unsafe { sys::cuMemFreeAsync(ptr, pools.stream.raw()) },
            || "cuMemFreeAsync".to_owned(),
        )
    })
}
