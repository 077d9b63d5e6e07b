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
}

impl CudaEngine {
    /// Loads the kernels in `ctx` (or device `device`'s primary context) for `plan`.
    pub(crate) fn new(
        ctx: Option<cuda::Context>,
        device: i32,
        plan: &FeaturePlan,
    ) -> CudaResult<CudaEngine> {
        cuda::probe()?;
        let ctx = match ctx {
            Some(c) => c,
            None => cuda::Context::primary(device)?,
        };
        let kernels = cuda::GpuKernels::load(&ctx)?;
        // Build one shot's state now, so an unusable GPU (out of memory, say) shows up here,
        // where `Auto` can still fall back, rather than at the first frame.
        let features = cuda::GpuFeatures::new(&kernels, plan)?;
        Ok(CudaEngine {
            features: Some(features),
            needs_reset: false,
            staging: cuda::HostStaging::new(&ctx),
            kernels,
            plan: plan.clone(),
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
}
