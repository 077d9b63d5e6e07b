//! A test hook: a GPU backend that computes on the CPU but behaves like the CUDA engine (frames
//! in flight, results returned late, host copies of its last frames, a session reset per shot)
//! and fails where [`crate::cuda::fault`] tells it to. With it, machines without a GPU test
//! what a scorer does when the GPU fails in the middle of a stream ([`crate::fallback`]).
//!
//! [`enable`] makes every scorer that would open a CUDA device (`BackendRequest::Auto` or
//! `Cuda { .. }`; a borrowed context stays real) use the emulation instead. The switch is
//! process-wide: tests that use it run in their own test binary, one at a time. It reports
//! itself as the CUDA backend, with a note saying it is the emulation.
//!
//! Operations that can fail, by [`FaultKind`]: building the engine (`ModuleLoad`, then
//! `Alloc`), a session reset (`Copy`), staging a frame (`Copy`), computing it (`Launch`),
//! collecting a result (`Copy`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cuda::engine::{KEPT, SLOTS};
use crate::cuda::fault::{self, FaultKind};
use crate::cuda::{CudaError, CudaResult, DevicePicture, GpuFrame};
use crate::extract::{FeaturePlan, SpatialExtractors};
use crate::fallback::HostPair;
use crate::features::motion::MotionExtractor;
use crate::frame::PictureRef;
use crate::gpu_pipeline::{EngineToken, GpuPipeline};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Scorers made from now on emulate their GPU (see the module docs).
pub fn enable() {
    ENABLED.store(true, Ordering::SeqCst);
}

/// Back to real GPUs for scorers made from now on.
pub fn disable() {
    ENABLED.store(false, Ordering::SeqCst);
}

pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

pub(crate) struct EmulatedGpu {
    plan: FeaturePlan,
    extractors: SpatialExtractors,
    motion: MotionExtractor,
    needs_reset: bool,
    in_flight: VecDeque<GpuFrame>,
    kept: VecDeque<(usize, HostPair)>,
    _counted: EngineToken,
}

impl EmulatedGpu {
    pub(crate) fn new(plan: &FeaturePlan) -> CudaResult<EmulatedGpu> {
        fault::hit(FaultKind::ModuleLoad, || "emulated module load".into())?;
        fault::hit(FaultKind::Alloc, || "emulated feature memory".into())?;
        fault::hit(FaultKind::Create, || "emulated stream creation".into())?;
        Ok(EmulatedGpu {
            plan: plan.clone(),
            extractors: SpatialExtractors::new(plan),
            motion: MotionExtractor::new(plan.width, plan.height, plan.bpc),
            needs_reset: false,
            in_flight: VecDeque::with_capacity(SLOTS),
            kept: VecDeque::with_capacity(KEPT),
            _counted: EngineToken::new(),
        })
    }

    fn submit(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
        keep: bool,
    ) -> CudaResult<Vec<GpuFrame>> {
        let result = self.try_submit(reference, distorted, tag, keep);
        if result.is_err() {
            // As the CUDA engine: what was in flight is lost with the error.
            self.in_flight.clear();
        }
        result
    }

    fn try_submit(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
        keep: bool,
    ) -> CudaResult<Vec<GpuFrame>> {
        let mut out = Vec::new();
        while self.in_flight.len() >= SLOTS {
            fault::hit(FaultKind::Copy, || "emulated result copy".into())?;
            out.extend(self.in_flight.pop_front());
        }
        if self.needs_reset {
            fault::hit(FaultKind::Copy, || "emulated session reset".into())?;
            let p = &self.plan;
            self.motion = MotionExtractor::new(p.width, p.height, p.bpc);
            self.extractors.new_session();
            self.needs_reset = false;
        }
        fault::hit(FaultKind::Copy, || {
            format!("emulated staging of frame {tag}")
        })?;
        // Like the pinned staging: the frame being staged takes the oldest copy's place.
        if keep {
            if self.kept.len() >= KEPT {
                self.kept.pop_front();
            }
            self.kept
                .push_back((tag, HostPair::copy_of(reference, distorted)));
        }
        fault::hit(FaultKind::Launch, || {
            format!("emulated kernels of frame {tag}")
        })?;
        let spatial = self.extractors.extract(reference, distorted, false);
        let motion_sum = if self.plan.motion {
            self.motion.push_returning_sum(&reference.luma)
        } else {
            None
        };
        self.in_flight.push_back(GpuFrame {
            tag,
            spatial,
            motion_sum,
        });
        Ok(out)
    }
}

impl GpuPipeline for EmulatedGpu {
    fn submit_host(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        self.submit(reference, distorted, tag, true)
    }

    unsafe fn submit_device(
        &mut self,
        _reference: &DevicePicture,
        _distorted: &DevicePicture,
        _tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        Err(CudaError::InvalidArgument(
            "the emulated GPU reads no device memory".into(),
        ))
    }

    fn submit_unkept(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        self.submit(reference, distorted, tag, false)
    }

    fn drain(&mut self) -> CudaResult<Vec<GpuFrame>> {
        let mut out = Vec::with_capacity(self.in_flight.len());
        while !self.in_flight.is_empty() {
            if let Err(e) = fault::hit(FaultKind::Copy, || "emulated result copy".into()) {
                self.in_flight.clear();
                return Err(e);
            }
            out.extend(self.in_flight.pop_front());
        }
        Ok(out)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn new_session(&mut self) {
        self.needs_reset = true;
    }

    fn host_copy(&self, tag: usize) -> Option<HostPair> {
        self.kept
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, p)| p.clone())
    }
}
