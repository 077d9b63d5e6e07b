//! Per-frame spatial features (everything that depends on one frame pair only: ADM, VIF, PSNR)
//! and the plan of which extractors a run needs.

use crate::features::adm::{AdmExtractor, AdmScores};
use crate::features::motion::MotionExtractor;
use crate::features::psnr::psnr;
use crate::features::vif::{VifExtractor, VifScores};
use crate::frame::{PictureRef, Plane};

/// Which spatial extractors a run needs: one ADM and one VIF instance per distinct
/// enhancement-gain limit, PSNR if asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct FeaturePlan {
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
    /// (gain limit, key suffix such as `""` or `"_egl_1"`), one per ADM instance.
    pub adm: Vec<(f64, String)>,
    /// Same for VIF.
    pub vif: Vec<(f64, String)>,
    pub motion: bool,
    pub psnr: bool,
}

/// Spatial features of one frame pair, in plan order.
#[derive(Clone, Debug)]
pub struct SpatialFeatures {
    pub adm: Vec<AdmScores>,
    pub vif: Vec<VifScores>,
    /// psnr_y, psnr_cb, psnr_cr (cb/cr absent for monochrome input).
    pub psnr: Option<(f64, Option<(f64, f64)>)>,
}

/// One worker's extractor instances; scratch buffers are reused frame after frame.
pub struct SpatialExtractors {
    adm: Vec<AdmExtractor>,
    vif: Vec<VifExtractor>,
    psnr: bool,
    /// Scratch rows for the motion sums of batched frames ([`SpatialExtractors::motion_sum`]).
    motion: MotionExtractor,
}

impl SpatialExtractors {
    pub fn new(plan: &FeaturePlan) -> Self {
        SpatialExtractors {
            adm: plan
                .adm
                .iter()
                .map(|(egl, _)| AdmExtractor::new(plan.width, plan.height, plan.bpc, *egl))
                .collect(),
            vif: plan
                .vif
                .iter()
                .map(|(egl, _)| VifExtractor::new(plan.width, plan.height, plan.bpc, *egl))
                .collect(),
            psnr: plan.psnr,
            motion: MotionExtractor::scratch(plan.width, plan.height, plan.bpc),
        }
    }

    /// The motion sum of `cur` against `prev` (reference lumas of consecutive frames of one
    /// session): [`MotionExtractor::sad_between`] on this set's scratch rows.
    pub fn motion_sum(&mut self, prev: &Plane, cur: &Plane) -> u64 {
        self.motion.sad_between(prev, cur)
    }

    /// Whether scores depend on the previous frame of the session (see
    /// [`AdmExtractor::carries_state`]).
    pub fn carries_state(&self) -> bool {
        self.adm.iter().any(AdmExtractor::carries_state)
    }

    /// Starts a new libvmaf session (per shot).
    pub fn new_session(&mut self) {
        for a in &mut self.adm {
            a.new_session();
        }
    }

    /// Feeds one pair to the state that carries from frame to frame (ADM's word, see
    /// [`SpatialExtractors::carries_state`]) without keeping scores: the frame before the
    /// first one scored after a GPU-to-CPU switch.
    pub fn prime(&mut self, reference: &PictureRef, distorted: &PictureRef) {
        for a in self.adm.iter_mut().filter(|a| a.carries_state()) {
            a.extract(&reference.luma, &distorted.luma);
        }
    }

    /// Computes every spatial feature of one pair. With `split`, ADM and VIF run on two
    /// threads (used when a single frame is pushed; batches parallelise across frames instead).
    pub fn extract(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        split: bool,
    ) -> SpatialFeatures {
        let (r, d) = (&reference.luma, &distorted.luma);
        let adm_ex = &mut self.adm;
        let vif_ex = &mut self.vif;
        let mut run_adm =
            move || -> Vec<AdmScores> { adm_ex.iter_mut().map(|a| a.extract(r, d)).collect() };
        let mut run_vif =
            move || -> Vec<VifScores> { vif_ex.iter_mut().map(|v| v.extract(r, d)).collect() };
        let (adm, vif) = if split {
            rayon::join(run_adm, run_vif)
        } else {
            (run_adm(), run_vif())
        };
        let psnr = self.psnr.then(|| {
            let y = psnr(r, d);
            let c = match (&reference.chroma, &distorted.chroma) {
                (Some([ru, rv]), Some([du, dv])) => Some((psnr(ru, du), psnr(rv, dv))),
                _ => None,
            };
            (y, c)
        });
        SpatialFeatures { adm, vif, psnr }
    }
}
