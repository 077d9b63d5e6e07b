//! `Scorer`: drives sessions across shots. Takes frame pairs, splits them into shots at the
//! configured (or explicitly declared) boundaries, scores each shot as a fresh session, and
//! returns per-frame results, per-shot pools and the whole-stream pool.

use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::extract::{FeaturePlan, SpatialExtractors, SpatialFeatures};
use crate::frame::{PictureRef, Plane};
use crate::model::{Model, PredictOptions};
use crate::report::{FrameResult, Report, ShotResult};
use crate::session::{FrameFeatures, Session};

/// Smallest frame side libvmaf can score (it crashes in ADM at 17 px and below).
pub const MIN_DIMENSION: usize = 18;

/// What to compute.
#[derive(Clone, Debug)]
pub struct ScorerConfig {
    pub model: Model,
    pub predict: PredictOptions,
    /// Also compute psnr_y/cb/cr.
    pub psnr: bool,
    /// First frames of shots (global indices, ascending). Frame 0 always starts a shot.
    pub shot_starts: Vec<usize>,
    /// Keep every frame's result for the final report (the CLI does; a long-running element
    /// may drop them and only keep shot pools).
    pub keep_frames: bool,
}

impl ScorerConfig {
    pub fn new(model: Model) -> Self {
        ScorerConfig {
            model,
            predict: PredictOptions::default(),
            psnr: false,
            shot_starts: Vec::new(),
            keep_frames: true,
        }
    }
}

/// Size and depth every frame of a run must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
}

/// What `push` hands back: frames completed now, and a shot if one ended.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub frames: Vec<FrameResult>,
    pub shots: Vec<ShotResult>,
}

struct ShotState {
    index: usize,
    first_frame: usize,
    session: Session,
    /// VMAF and feature values of this shot's frames, for the shot pool.
    frames: Vec<FrameResult>,
}

pub struct Scorer {
    config: ScorerConfig,
    geometry: Geometry,
    plan: FeaturePlan,
    /// Spare extractor sets for worker threads (one is taken per frame in flight).
    extractors: Mutex<Vec<SpatialExtractors>>,
    shot: ShotState,
    next_frame: usize,
    next_start: usize,
    frames: Vec<FrameResult>,
    shots: Vec<ShotResult>,
    started: Instant,
}

impl Scorer {
    pub fn new(config: ScorerConfig, geometry: Geometry) -> Result<Self> {
        let Geometry { width, height, bpc } = geometry;
        if !(8..=16).contains(&bpc) {
            return Err(Error::UnsupportedBitDepth(bpc));
        }
        if width < MIN_DIMENSION || height < MIN_DIMENSION {
            return Err(Error::FrameTooSmall {
                width,
                height,
                min: MIN_DIMENSION,
            });
        }
        let mut starts = config.shot_starts.clone();
        if starts.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::ShotList(format!(
                "shot starts must be strictly ascending, got {starts:?}"
            )));
        }
        starts.retain(|&s| s != 0);
        let plan = config.model.feature_plan(width, height, bpc, config.psnr);
        let config = ScorerConfig {
            shot_starts: starts,
            ..config
        };
        Ok(Scorer {
            geometry,
            extractors: Mutex::new(Vec::new()),
            shot: ShotState {
                index: 0,
                first_frame: 0,
                session: Session::new(width, height, bpc),
                frames: Vec::new(),
            },
            plan,
            config,
            next_frame: 0,
            next_start: 0,
            frames: Vec::new(),
            shots: Vec::new(),
            started: Instant::now(),
        })
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn config(&self) -> &ScorerConfig {
        &self.config
    }

    /// Frames pushed so far.
    pub fn frames_pushed(&self) -> usize {
        self.next_frame
    }

    fn check_plane(&self, frame: usize, what: &'static str, p: &Plane) -> Result<()> {
        p.validate()
            .map_err(|e| Error::InvalidPlane(format!("frame {frame}, {what}: {e}")))?;
        let g = self.geometry;
        if (p.width, p.height) != (g.width, g.height) {
            return Err(Error::FrameGeometry {
                frame,
                what: "size",
                expected: format!("{}x{}", g.width, g.height),
                got: format!("{}x{} ({what})", p.width, p.height),
            });
        }
        if p.bpc != g.bpc {
            return Err(Error::FrameGeometry {
                frame,
                what: "bit depth",
                expected: g.bpc.to_string(),
                got: format!("{} ({what})", p.bpc),
            });
        }
        Ok(())
    }

    fn check_pair(&self, frame: usize, r: &PictureRef, d: &PictureRef) -> Result<()> {
        self.check_plane(frame, "reference luma", &r.luma)?;
        self.check_plane(frame, "distorted luma", &d.luma)?;
        if self.config.psnr {
            for (what, pic) in [("reference chroma", r), ("distorted chroma", d)] {
                if let Some(planes) = &pic.chroma {
                    for p in planes {
                        p.validate().map_err(|e| {
                            Error::InvalidPlane(format!("frame {frame}, {what}: {e}"))
                        })?;
                    }
                }
            }
            if let (Some([ru, _]), Some([du, _])) = (&r.chroma, &d.chroma) {
                if (ru.width, ru.height) != (du.width, du.height) {
                    return Err(Error::Mismatch {
                        what: "chroma size",
                        reference: format!("{}x{}", ru.width, ru.height),
                        distorted: format!("{}x{}", du.width, du.height),
                    });
                }
            }
        }
        Ok(())
    }

    fn with_extractors<T>(&self, f: impl FnOnce(&mut SpatialExtractors) -> T) -> T {
        let spare = self.extractors.lock().ok().and_then(|mut v| v.pop());
        let mut ex = spare.unwrap_or_else(|| SpatialExtractors::new(&self.plan));
        let out = f(&mut ex);
        if let Ok(mut v) = self.extractors.lock() {
            v.push(ex);
        }
        out
    }

    /// Scores one frame pair. ADM and VIF of the pair run on two threads.
    pub fn push(&mut self, reference: &PictureRef, distorted: &PictureRef) -> Result<Progress> {
        self.check_pair(self.next_frame, reference, distorted)?;
        let spatial = self.with_extractors(|ex| ex.extract(reference, distorted, true));
        Ok(self.push_spatial(&reference.luma, spatial))
    }

    /// Scores several consecutive frame pairs, spreading them over the worker threads.
    /// Results are identical to pushing them one by one.
    pub fn push_batch(&mut self, pairs: &[(PictureRef, PictureRef)]) -> Result<Progress> {
        for (i, (r, d)) in pairs.iter().enumerate() {
            self.check_pair(self.next_frame + i, r, d)?;
        }
        let spatial: Vec<SpatialFeatures> = pairs
            .par_iter()
            .map(|(r, d)| self.with_extractors(|ex| ex.extract(r, d, false)))
            .collect();
        let mut progress = Progress::default();
        for ((r, _), s) in pairs.iter().zip(spatial) {
            let p = self.push_spatial(&r.luma, s);
            progress.frames.extend(p.frames);
            progress.shots.extend(p.shots);
        }
        Ok(progress)
    }

    fn push_spatial(&mut self, reference_luma: &Plane, spatial: SpatialFeatures) -> Progress {
        let mut progress = Progress::default();
        let index = self.next_frame;
        if self.config.shot_starts.get(self.next_start) == Some(&index) {
            self.next_start += 1;
            if let Some(shot) = self.end_shot_inner(&mut progress.frames) {
                progress.shots.push(shot);
            }
        }
        self.next_frame += 1;
        let done = self.shot.session.push(index, reference_luma, spatial);
        for f in done {
            let r = self.finish_frame(f);
            progress.frames.push(r);
        }
        progress
    }

    /// Declares a shot boundary before the next frame (for boundaries found at run time:
    /// upstream events, a detector). Returns the shot that ended, if it had frames.
    pub fn end_shot(&mut self) -> Progress {
        let mut progress = Progress::default();
        if let Some(shot) = self.end_shot_inner(&mut progress.frames) {
            progress.shots.push(shot);
        }
        progress
    }

    fn end_shot_inner(&mut self, completed: &mut Vec<FrameResult>) -> Option<ShotResult> {
        let g = self.geometry;
        let fresh = ShotState {
            index: self.shot.index,
            first_frame: self.next_frame,
            session: Session::new(g.width, g.height, g.bpc),
            frames: Vec::new(),
        };
        let old = std::mem::replace(&mut self.shot, fresh);
        if old.session.frame_count() == 0 {
            return None;
        }
        // finish_frame records into the current shot, which is already the fresh one: move the
        // flushed frames back to the shot they belong to.
        for f in old.session.flush() {
            let r = self.finish_frame(f);
            completed.push(r);
        }
        let mut frames = old.frames;
        frames.append(&mut self.shot.frames);
        self.shot.index = old.index + 1;
        let last_frame = frames.last().map_or(old.first_frame, |f| f.index);
        let shot = ShotResult {
            index: old.index,
            first_frame: old.first_frame,
            last_frame,
            pooled: Report::pool_frames(&frames),
        };
        self.shots.push(shot.clone());
        Some(shot)
    }

    fn finish_frame(&mut self, f: FrameFeatures) -> FrameResult {
        let metrics = self.metrics(&f);
        let result = FrameResult {
            index: f.index,
            metrics,
        };
        self.shot.frames.push(result.clone());
        if self.config.keep_frames {
            self.frames.push(result.clone());
        }
        result
    }

    /// libvmaf's keys in libvmaf's order, `vmaf` last.
    fn metrics(&self, f: &FrameFeatures) -> Vec<(String, f64)> {
        let mut m: Vec<(String, f64)> = Vec::with_capacity(20);
        if let Some((y, c)) = f.spatial.psnr {
            m.push(("psnr_y".into(), y));
            if let Some((cb, cr)) = c {
                m.push(("psnr_cb".into(), cb));
                m.push(("psnr_cr".into(), cr));
            }
        }
        for ((_, sfx), a) in self.plan.adm.iter().zip(&f.spatial.adm) {
            m.push((format!("integer_adm2{sfx}"), a.adm2));
            m.push((format!("integer_aim{sfx}"), a.aim));
            m.push((format!("integer_adm3{sfx}"), a.adm3));
            for (i, s) in a.scale.iter().enumerate() {
                m.push((format!("integer_adm_scale{i}{sfx}"), *s));
            }
        }
        m.push(("VMAF_integer_feature_motion_sad_score".into(), f.motion_sad));
        for ((_, sfx), v) in self.plan.vif.iter().zip(&f.spatial.vif) {
            for (i, s) in v.scale.iter().enumerate() {
                m.push((format!("integer_vif_scale{i}{sfx}"), *s));
            }
        }
        m.push(("integer_motion2".into(), f.motion2));
        m.push(("integer_motion3".into(), f.motion3));
        let model = &self.config.model;
        let inputs: Vec<f64> = model
            .feature_keys()
            .iter()
            .map(|k| {
                m.iter()
                    .find(|(key, _)| key == k)
                    .map_or(f64::NAN, |(_, v)| *v)
            })
            .collect();
        m.push(("vmaf".into(), model.predict(&inputs, self.config.predict)));
        m
    }

    /// Ends the last shot and returns everything.
    pub fn finish(mut self) -> Report {
        let mut tail = Vec::new();
        self.end_shot_inner(&mut tail);
        let elapsed = self.started.elapsed().as_secs_f64();
        let fps = if elapsed > 0.0 {
            self.next_frame as f64 / elapsed
        } else {
            0.0
        };
        let pooled = Report::pool_frames(&self.frames);
        Report {
            model: self.config.model.name().to_owned(),
            width: self.geometry.width,
            height: self.geometry.height,
            bpc: self.geometry.bpc,
            backend: "cpu".into(),
            fps,
            frames: self.frames,
            pooled,
            shots: self.shots,
        }
    }
}
