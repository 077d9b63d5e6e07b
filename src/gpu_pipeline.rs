//! What a [`crate::Scorer`] needs from a GPU backend: frames go in, results come back later
//! (up to [`cuda::engine::SLOTS`] frames in flight), in order, as integer sums the host turns
//! into the CPU path's doubles. The CUDA engine is one; [`crate::emulated_gpu`] (a test hook
//! that computes on the CPU but fails like a GPU) is the other.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use crate::cuda::{self, CudaResult, DevicePicture, GpuFrame};
use crate::extract::FeaturePlan;
use crate::fallback::HostPair;
use crate::frame::PictureRef;
use crate::pinned_picture::PinnedPicture;

pub(crate) trait GpuPipeline: Send + Sync {
    /// Queues a pair of host pictures (copied before this returns). Returns the frames whose
    /// results had to be collected to make room (oldest first).
    fn submit_host(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>>;

    /// Queues a pair of [`PinnedPicture`]s (shared: the pipeline may keep them while the frame
    /// is in flight and as its host copy). By default as host pictures, copied.
    fn submit_pinned(
        &mut self,
        reference: &Arc<PinnedPicture>,
        distorted: &Arc<PinnedPicture>,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        self.submit_host(&reference.view(), &distorted.view(), tag)
    }

    /// The CUDA context host memory for [`PinnedPicture`]s is page-locked in, if any.
    fn host_context(&self) -> Option<cuda::Context> {
        None
    }

    /// Queues a pair of device pictures, read in place.
    ///
    /// # Safety
    /// As [`cuda::GpuFeatures::submit_device`].
    unsafe fn submit_device(
        &mut self,
        reference: &DevicePicture,
        distorted: &DevicePicture,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>>;

    /// Host pictures standing in for device frames: scored like host frames, but no copy is
    /// kept (only the emulated GPU has this, to test the replay of device frames).
    fn submit_unkept(
        &mut self,
        _reference: &PictureRef,
        _distorted: &PictureRef,
        _tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        Err(cuda::CudaError::InvalidArgument(
            "only the emulated GPU takes stand-in device frames".into(),
        ))
    }

    /// Waits for every frame in flight and returns their results, oldest first.
    fn drain(&mut self) -> CudaResult<Vec<GpuFrame>>;

    /// Frames submitted whose results have not been returned.
    fn in_flight(&self) -> usize;

    /// The next frame starts a new libvmaf session (a new shot).
    fn new_session(&mut self);

    /// An owned copy of host frame `tag` if the pipeline still holds one (its last few host
    /// frames), read from host memory only.
    fn host_copy(&self, tag: usize) -> Option<HostPair>;

    /// What setting the pipeline up cost, step by step (for `VMAFCUDA_TIMING`).
    fn setup_timing(&self) -> Vec<(&'static str, std::time::Duration)> {
        Vec::new()
    }

    /// Waits until nothing is being built in the background (the next shot's engine under a
    /// full rebuild), so that counts of live resources are steady: for tests and soaks. A
    /// failed build is kept for the next frame.
    fn settle(&mut self) {}

    /// The sizes of the host planes it last staged (empty if none), so the engine built for the
    /// next shot can have its staging made before its first frame.
    fn staging_shape(&self) -> Vec<cuda::engine::PlaneDims> {
        Vec::new()
    }
}

/// Builds one shot's whole GPU engine in the scorer's context, its host staging sized for
/// planes of the given sizes. Called on the rebuild thread of [`Rebuilding`].
pub(crate) type EngineFactory =
    Box<dyn Fn(&[cuda::engine::PlaneDims]) -> CudaResult<Box<dyn GpuPipeline>> + Send>;

/// How many per-shot GPU engines (real or emulated) were built, and how many are alive now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineCounts {
    /// Built since the process started (every full rebuild adds one).
    pub built: usize,
    /// Alive now (the current shot's, and the next shot's being built or waiting).
    pub live: usize,
}

static ENGINES_BUILT: AtomicUsize = AtomicUsize::new(0);
static ENGINES_LIVE: AtomicUsize = AtomicUsize::new(0);

/// The process-wide [`EngineCounts`]: tests check that a full rebuild really built a new
/// engine at every boundary and that every engine built was dropped.
pub fn engine_counts() -> EngineCounts {
    EngineCounts {
        built: ENGINES_BUILT.load(Ordering::SeqCst),
        live: ENGINES_LIVE.load(Ordering::SeqCst),
    }
}

/// Counts one engine from its construction to its drop (a field of each engine).
pub(crate) struct EngineToken(());

impl EngineToken {
    pub(crate) fn new() -> EngineToken {
        ENGINES_BUILT.fetch_add(1, Ordering::SeqCst);
        ENGINES_LIVE.fetch_add(1, Ordering::SeqCst);
        EngineToken(())
    }
}

impl Drop for EngineToken {
    fn drop(&mut self) {
        ENGINES_LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A job for the rebuild thread: drop the engine of the shot that ended (if any), then build
/// the next one with staging of this shape.
struct RebuildJob {
    retire: Option<Box<dyn GpuPipeline>>,
    shape: Vec<cuda::engine::PlaneDims>,
}

/// [`crate::scorer::Rebuild::Full`]: every shot gets a GPU engine of its own, built whole and
/// torn down whole (streams, events, every device allocation, pinned staging and result
/// slots; the CUDA context, the kernel modules and the scorer's memory pools are kept, or with
/// `VMAFCUDA_COLD_REBUILD=1` only the context). The next shot's engine is built on a thread of its own while the
/// current shot runs, and the engine of the shot that ended is torn down there too, so a
/// boundary only swaps two engines: the pipeline does not wait for the driver.
///
/// The first spare is ordered after the first frame of the first shot (its staging takes that
/// frame's shape); after that, each boundary hands the old engine to the thread, which drops it
/// and builds the next spare. A failed build reaches the scorer at the next shot's first frame,
/// as a failure of that frame (fall-back to the CPU with `Auto`, an error otherwise).
pub(crate) struct Rebuilding {
    current: Box<dyn GpuPipeline>,
    /// A shot ended: the next frame goes to a fresh engine.
    swap_pending: bool,
    /// A spare is being built, waits in `built` or in `ready`.
    spare_ordered: bool,
    /// The spare, or its build's failure, received early by [`GpuPipeline::settle`].
    ready: Option<CudaResult<Box<dyn GpuPipeline>>>,
    /// The last shot's engine, swapped out at this shot's first frame and handed to the rebuild
    /// thread once that frame is queued (so that its teardown's driver calls do not hold up the
    /// first frame of the shot).
    retiring: Option<Box<dyn GpuPipeline>>,
    jobs: Option<mpsc::Sender<RebuildJob>>,
    /// Behind a mutex only because a pipeline must be `Sync`; just this struct receives.
    built: std::sync::Mutex<mpsc::Receiver<CudaResult<Box<dyn GpuPipeline>>>>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Rebuilding {
    /// Wraps the first shot's engine (built by the caller, so a GPU that cannot be used shows
    /// up at set-up) and starts the rebuild thread.
    pub(crate) fn new(
        first: Box<dyn GpuPipeline>,
        factory: EngineFactory,
    ) -> CudaResult<Rebuilding> {
        let (jobs, job_rx) = mpsc::channel::<RebuildJob>();
        let (built_tx, built) = mpsc::sync_channel(1);
        let worker = std::thread::Builder::new()
            .name("vmafcuda-rebuild".into())
            .spawn(move || {
                for job in job_rx {
                    drop(job.retire);
                    let engine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        factory(&job.shape)
                    }))
                    .unwrap_or_else(|_| {
                        Err(cuda::CudaError::InvalidArgument(
                            "building the next shot's engine panicked".into(),
                        ))
                    });
                    if built_tx.send(engine).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| {
                cuda::CudaError::InvalidArgument(format!("cannot start the rebuild thread: {e}"))
            })?;
        Ok(Rebuilding {
            current: first,
            swap_pending: false,
            spare_ordered: false,
            ready: None,
            retiring: None,
            jobs: Some(jobs),
            built: std::sync::Mutex::new(built),
            worker: Some(worker),
        })
    }

    fn order(&mut self, retire: Option<Box<dyn GpuPipeline>>, shape: Vec<cuda::engine::PlaneDims>) {
        let job = RebuildJob { retire, shape };
        // The thread only ends when `jobs` is dropped (in drop), so the send cannot fail;
        // if it did, the receive below says so.
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
        self.spare_ordered = true;
    }

    /// The spare: the one `settle` received, or the one ordered (ordered now if it was not).
    fn take_spare(&mut self) -> CudaResult<Box<dyn GpuPipeline>> {
        if let Some(spare) = self.ready.take() {
            self.spare_ordered = false;
            return spare;
        }
        if !self.spare_ordered {
            self.order(None, self.current.staging_shape());
        }
        self.spare_ordered = false;
        let stopped = || cuda::CudaError::InvalidArgument("the rebuild thread stopped".into());
        self.built
            .get_mut()
            .map_err(|_| stopped())?
            .recv()
            .map_err(|_| stopped())?
    }

    /// The engine for the next frame: after a boundary, the spare takes the current one's place
    /// and the old one waits in `retiring` for the rebuild thread.
    fn engine(&mut self) -> CudaResult<&mut dyn GpuPipeline> {
        if self.swap_pending {
            let spare = self.take_spare()?;
            let old = std::mem::replace(&mut self.current, spare);
            self.swap_pending = false;
            // Only after a failed first frame can an engine still be waiting here: it goes now.
            drop(self.retiring.replace(old));
        }
        Ok(self.current.as_mut())
    }

    /// After a frame went in: the first one of a shot orders the next spare, and hands the
    /// last shot's engine to the rebuild thread to be dropped first.
    fn submitted(&mut self, r: CudaResult<Vec<GpuFrame>>) -> CudaResult<Vec<GpuFrame>> {
        if r.is_ok() && !self.spare_ordered {
            let retire = self.retiring.take();
            self.order(retire, self.current.staging_shape());
        }
        r
    }
}

impl Drop for Rebuilding {
    fn drop(&mut self) {
        // Closing the job queue ends the thread once it has finished what it holds; joining it
        // means every engine it held is gone when the scorer is, and the spare waiting in
        // `built` goes with this struct.
        self.jobs = None;
        if let Ok(built) = self.built.get_mut() {
            while built.try_recv().is_ok() {}
        }
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl GpuPipeline for Rebuilding {
    fn submit_host(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        let r = self.engine()?.submit_host(reference, distorted, tag);
        self.submitted(r)
    }

    fn submit_pinned(
        &mut self,
        reference: &Arc<PinnedPicture>,
        distorted: &Arc<PinnedPicture>,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        let r = self.engine()?.submit_pinned(reference, distorted, tag);
        self.submitted(r)
    }

    fn host_context(&self) -> Option<cuda::Context> {
        self.current.host_context()
    }

    unsafe fn submit_device(
        &mut self,
        reference: &DevicePicture,
        distorted: &DevicePicture,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        // SAFETY: forwarded from this function's contract.
        let r = unsafe { self.engine()?.submit_device(reference, distorted, tag) };
        self.submitted(r)
    }

    fn submit_unkept(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        let r = self.engine()?.submit_unkept(reference, distorted, tag);
        self.submitted(r)
    }

    fn drain(&mut self) -> CudaResult<Vec<GpuFrame>> {
        self.current.drain()
    }

    fn in_flight(&self) -> usize {
        self.current.in_flight()
    }

    fn new_session(&mut self) {
        self.swap_pending = true;
    }

    fn host_copy(&self, tag: usize) -> Option<HostPair> {
        self.current.host_copy(tag)
    }

    fn setup_timing(&self) -> SetupSteps {
        self.current.setup_timing()
    }

    fn settle(&mut self) {
        if self.spare_ordered && self.ready.is_none() {
            self.ready = Some(self.take_spare());
            self.spare_ordered = true;
        }
    }

    fn staging_shape(&self) -> Vec<cuda::engine::PlaneDims> {
        self.current.staging_shape()
    }
}

/// A device's primary context with the kernels loaded, being made on another thread by
/// [`prepare_cuda`].
struct Prepared {
    device: i32,
    work: std::thread::JoinHandle<(CudaResult<cuda::GpuKernels>, SetupSteps)>,
}

type SetupSteps = Vec<(&'static str, std::time::Duration)>;

static PREPARED: std::sync::Mutex<Option<Prepared>> = std::sync::Mutex::new(None);

/// Starts the CUDA set-up of `device` (driver, primary context, kernels) on another thread and
/// returns at once: a [`crate::Scorer`] made later for that device (`Cuda { device }`, or
/// `Auto` for device 0) takes what it made instead of doing it again, so a program can open its
/// inputs and start reading while the driver initialises (hundreds of milliseconds on a
/// machine without a persistence daemon). Only the first scorer takes it; a failure reaches
/// that scorer as if it had tried itself (so `Auto` still falls back). Nothing is kept for the
/// process: if no scorer takes it, [`discard_prepared_cuda`] (or the process's exit) ends it.
pub fn prepare_cuda(device: i32) {
    let work = std::thread::Builder::new()
        .name("vmafcuda-cuda-setup".into())
        .spawn(move || {
            let mut steps = SetupSteps::new();
            let r = CudaEngine::load(None, device, &mut steps);
            (r, steps)
        });
    if let Ok(work) = work {
        let old = lock_prepared().replace(Prepared { device, work });
        if let Some(old) = old {
            let _ = old.work.join();
        }
    }
}

/// Waits for and drops a set-up started by [`prepare_cuda`] that no scorer took.
pub fn discard_prepared_cuda() {
    let old = lock_prepared().take();
    if let Some(old) = old {
        let _ = old.work.join();
    }
}

fn lock_prepared() -> std::sync::MutexGuard<'static, Option<Prepared>> {
    PREPARED.lock().unwrap_or_else(|p| p.into_inner())
}

/// The prepared set-up of `device`, if one was started.
fn take_prepared(device: i32) -> Option<(CudaResult<cuda::GpuKernels>, SetupSteps)> {
    let prepared = {
        let mut slot = lock_prepared();
        match slot.as_ref() {
            Some(p) if p.device == device => slot.take(),
            _ => None,
        }
    }?;
    let waited = std::time::Instant::now();
    match prepared.work.join() {
        Ok((r, mut steps)) => {
            steps.push(("waiting for the prepared set-up", waited.elapsed()));
            Some((r, steps))
        }
        // The set-up thread panicked (a driver bug): do it again here, where it is caught.
        Err(_) => None,
    }
}

/// The CUDA backend: kernels for the whole run, features rebuilt per shot.
pub(crate) struct CudaEngine {
    /// The per-frame feature state and its memory: kept for the whole run (a pool, so a shot
    /// rebuild costs no allocations) and reset to a fresh session at every shot boundary.
    /// Rebuilt from scratch only after an error.
    features: Option<cuda::GpuFeatures>,
    /// A shot ended: reset the features' session state before the next frame.
    needs_reset: bool,
    kernels: cuda::GpuKernels,
    /// The scorer's memory pools (a full rebuild's engines allocate from them), if any.
    pools: Option<cuda::ScorerPools>,
    /// Pinned staging for host frames, kept across shots (see [`cuda::HostStaging`]).
    staging: cuda::HostStaging,
    plan: FeaturePlan,
    /// What the set-up cost, step by step.
    setup: SetupSteps,
    _counted: EngineToken,
}

impl CudaEngine {
    /// Driver, context (`ctx`, or device `device`'s primary context) and kernels.
    fn load(
        ctx: Option<cuda::Context>,
        device: i32,
        steps: &mut SetupSteps,
    ) -> CudaResult<cuda::GpuKernels> {
        let mut t = std::time::Instant::now();
        let mut lap = |what: &'static str, steps: &mut SetupSteps| {
            let now = std::time::Instant::now();
            steps.push((what, now - t));
            t = now;
        };
        cuda::probe()?;
        lap("driver (cuInit, devices)", steps);
        let ctx = match ctx {
            Some(c) => c,
            None => {
                let c = cuda::Context::primary(device)?;
                lap("primary context", steps);
                c
            }
        };
        let kernels = cuda::GpuKernels::load(&ctx)?;
        lap("kernel modules", steps);
        Ok(kernels)
    }

    /// Loads the kernels in `ctx` (or device `device`'s primary context, or takes what
    /// [`prepare_cuda`] made for it) for `plan`.
    pub(crate) fn new(
        ctx: Option<cuda::Context>,
        device: i32,
        plan: &FeaturePlan,
        pooled: bool,
    ) -> CudaResult<CudaEngine> {
        let prepared = match ctx {
            None => take_prepared(device),
            Some(_) => None,
        };
        let (kernels, mut setup) = match prepared {
            Some((r, steps)) => (r?, steps),
            None => {
                let mut steps = SetupSteps::new();
                (CudaEngine::load(ctx, device, &mut steps)?, steps)
            }
        };
        let t = std::time::Instant::now();
        let pools = if pooled {
            cuda::ScorerPools::new(kernels.context())?
        } else {
            None
        };
        // Build one shot's state now, so an unusable GPU (out of memory, say) shows up here,
        // where `Auto` can still fall back, rather than at the first frame.
        let features = cuda::with_pools(pools.as_ref(), || cuda::GpuFeatures::new(&kernels, plan))?;
        setup.push(("feature state (device memory)", t.elapsed()));
        Ok(CudaEngine {
            features: Some(features),
            needs_reset: false,
            staging: cuda::HostStaging::new(kernels.context()),
            kernels,
            pools,
            plan: plan.clone(),
            setup,
            _counted: EngineToken::new(),
        })
    }

    /// One shot's engine, what [`Rebuilding`] builds at every boundary: feature state
    /// (device memory, streams, events, pinned result slots) and host staging sized for planes
    /// of `shape`, all new. With `shared` (the scorer's kernels and pools) its memory comes
    /// from the scorer's pools and the loaded kernels are used; without, the kernel modules
    /// are loaded anew and the memory allocated from the driver (a cold rebuild).
    pub(crate) fn for_shot(
        ctx: &cuda::Context,
        plan: &FeaturePlan,
        shape: &[cuda::engine::PlaneDims],
        shared: Option<(&cuda::GpuKernels, Option<&cuda::ScorerPools>)>,
    ) -> CudaResult<CudaEngine> {
        let t = std::time::Instant::now();
        let (kernels, pools) = match shared {
            Some((kernels, pools)) => (kernels.clone(), pools.cloned()),
            None => (cuda::GpuKernels::load(ctx)?, None),
        };
        let loaded = t.elapsed();
        let (features, staging) = cuda::with_pools(pools.as_ref(), || -> CudaResult<_> {
            let features = cuda::GpuFeatures::new(&kernels, plan)?;
            let staging = cuda::HostStaging::with_shape(ctx, shape, features.slots())?;
            Ok((features, staging))
        })?;
        Ok(CudaEngine {
            features: Some(features),
            needs_reset: false,
            staging,
            kernels,
            pools,
            plan: plan.clone(),
            setup: vec![
                ("kernel modules", loaded),
                (
                    "feature state and staging (device and pinned memory)",
                    t.elapsed() - loaded,
                ),
            ],
            _counted: EngineToken::new(),
        })
    }

    /// The context the engine works in (kept by every engine built for the scorer).
    pub(crate) fn context(&self) -> &cuda::Context {
        self.kernels.context()
    }

    /// The kernels and memory pools the engines of the next shots share with this one.
    pub(crate) fn shared(&self) -> (cuda::GpuKernels, Option<cuda::ScorerPools>) {
        (self.kernels.clone(), self.pools.clone())
    }

    /// The GPU features of the current shot, built on first use after an error, reset after a
    /// boundary.
    fn features(&mut self) -> CudaResult<(&mut cuda::GpuFeatures, &mut cuda::HostStaging)> {
        if self.features.is_none() {
            let (kernels, plan) = (&self.kernels, &self.plan);
            self.features = Some(cuda::with_pools(self.pools.as_ref(), || {
                cuda::GpuFeatures::new(kernels, plan)
            })?);
        }
        let CudaEngine {
            features,
            staging,
            needs_reset,
            ..
        } = self;
        let features = features
            .as_mut()
            .ok_or_else(|| cuda::CudaError::InvalidArgument("CUDA session missing".into()))?;
        if *needs_reset {
            features.reset_session()?;
            *needs_reset = false;
        }
        Ok((features, staging))
    }
}

impl GpuPipeline for CudaEngine {
    fn submit_host(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        let (features, staging) = self.features()?;
        features.submit_host(staging, reference, distorted, tag)
    }

    fn submit_pinned(
        &mut self,
        reference: &Arc<PinnedPicture>,
        distorted: &Arc<PinnedPicture>,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        let (features, staging) = self.features()?;
        features.submit_pinned(staging, reference, distorted, tag)
    }

    fn host_context(&self) -> Option<cuda::Context> {
        Some(self.context().clone())
    }

    unsafe fn submit_device(
        &mut self,
        reference: &DevicePicture,
        distorted: &DevicePicture,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        let (features, _) = self.features()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { features.submit_device(reference, distorted, tag) }
    }

    fn drain(&mut self) -> CudaResult<Vec<GpuFrame>> {
        match self.features.as_mut() {
            Some(f) if f.in_flight() > 0 => f.drain(),
            _ => Ok(Vec::new()),
        }
    }

    fn in_flight(&self) -> usize {
        self.features.as_ref().map_or(0, |f| f.in_flight())
    }

    fn new_session(&mut self) {
        self.needs_reset = true;
    }

    fn host_copy(&self, tag: usize) -> Option<HostPair> {
        self.staging.copy_of(tag)
    }

    fn setup_timing(&self) -> SetupSteps {
        self.setup.clone()
    }

    fn staging_shape(&self) -> Vec<cuda::engine::PlaneDims> {
        self.staging.shape()
    }
}
