//! What a [`crate::Scorer`] needs from a GPU backend: frames go in, results come back later
//! (up to [`cuda::engine::SLOTS`] frames in flight), in order, as integer sums the host turns
//! into the CPU path's doubles. The CUDA engine is one; [`crate::emulated_gpu`] (a test hook
//! that computes on the CPU but fails like a GPU) is the other.

use crate::cuda::{self, CudaResult, DevicePicture, GpuFrame};
use crate::extract::FeaturePlan;
use crate::fallback::HostPair;
use crate::frame::PictureRef;

pub(crate) trait GpuPipeline: Send + Sync {
    /// Queues a pair of host pictures (copied before this returns). Returns the frames whose
    /// results had to be collected to make room (oldest first).
    fn submit_host(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>>;

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
    /// Pinned staging for host frames, kept across shots (see [`cuda::HostStaging`]).
    staging: cuda::HostStaging,
    plan: FeaturePlan,
    /// What the set-up cost, step by step.
    setup: SetupSteps,
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
        // Build one shot's state now, so an unusable GPU (out of memory, say) shows up here,
        // where `Auto` can still fall back, rather than at the first frame.
        let features = cuda::GpuFeatures::new(&kernels, plan)?;
        setup.push(("feature state (device memory)", t.elapsed()));
        Ok(CudaEngine {
            features: Some(features),
            needs_reset: false,
            staging: cuda::HostStaging::new(kernels.context()),
            kernels,
            plan: plan.clone(),
            setup,
        })
    }

    /// The GPU features of the current shot, built on first use after an error, reset after a
    /// boundary.
    fn features(&mut self) -> CudaResult<(&mut cuda::GpuFeatures, &mut cuda::HostStaging)> {
        if self.features.is_none() {
            self.features = Some(cuda::GpuFeatures::new(&self.kernels, &self.plan)?);
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
}
