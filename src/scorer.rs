//! `Scorer`: drives sessions across shots. Takes frame pairs, splits them into shots at the
//! configured (or explicitly declared) boundaries, scores each shot as a fresh session, and
//! returns per-frame results, per-shot pools and the whole-stream pool.

use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::cuda;
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
    /// Keep every shot's result for the final report. A scorer that runs for days and hands
    /// shot results out as they come (the GStreamer element without a results file) turns this
    /// off so nothing grows with the number of shots.
    pub keep_shots: bool,
}

impl ScorerConfig {
    pub fn new(model: Model) -> Self {
        ScorerConfig {
            model,
            predict: PredictOptions::default(),
            psnr: false,
            shot_starts: Vec::new(),
            keep_frames: true,
            keep_shots: true,
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

/// Where a [`Scorer`] computes its features.
#[derive(Clone, Debug, Default)]
pub enum BackendRequest {
    /// CUDA on device 0 if a driver and a device are there, else the CPU (the reason is kept:
    /// [`Scorer::backend_note`]).
    #[default]
    Auto,
    Cpu,
    /// CUDA on the device of this ordinal, in its primary context; an error if unavailable.
    Cuda {
        device: i32,
    },
    /// CUDA in a context someone else owns (GStreamer, FFmpeg): borrowed, never destroyed.
    CudaContext(cuda::Context),
}

/// The backend in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Cpu,
    Cuda,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
        }
    }
}

/// The GPU side of a CUDA scorer: kernels for the whole run, features rebuilt per shot.
struct CudaEngine {
    /// The per-frame feature state and its memory: kept for the whole run (a pool, so a shot
    /// rebuild costs no allocations) and reset to a fresh session at every shot boundary.
    /// Rebuilt from scratch only after an error.
    features: Option<cuda::GpuFeatures>,
    /// A shot ended: reset the features' session state before the next frame.
    needs_reset: bool,
    kernels: cuda::GpuKernels,
    /// Pinned staging for host frames, kept across shots (see [`cuda::HostStaging`]).
    staging: cuda::HostStaging,
}

enum Engine {
    Cpu,
    Cuda(Box<CudaEngine>),
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

/// Scores frame pairs with a VMAF model: the engine's entry point, used by the CLI, the
/// GStreamer element and the C library alike.
///
/// Build one per stream with [`Scorer::with_backend`] (or [`Scorer::new`] for the CPU), push
/// reference/distorted pairs in order ([`Scorer::push`], [`Scorer::push_batch`], or device
/// frames with [`Scorer::push_device`]), declare run-time cuts with [`Scorer::end_shot`], and
/// call [`Scorer::finish`] for the [`Report`]: per-frame metrics, per-shot and whole-stream
/// pools, with libvmaf's numbers. Each shot scores as a separate libvmaf run would.
///
/// ```
/// use vmafcuda::frame::{ChromaFormat, Picture, PlaneBuf, SampleBuf};
/// use vmafcuda::model::Model;
/// use vmafcuda::scorer::BackendRequest;
/// use vmafcuda::{Geometry, Scorer, ScorerConfig};
///
/// # fn main() -> Result<(), vmafcuda::Error> {
/// let (width, height) = (64, 36);
/// // An 8-bit luma-only picture whose samples come from `f(x, y, frame)`.
/// let picture = |t: usize, f: fn(usize, usize, usize) -> u8| {
///     let samples = (0..width * height).map(|i| f(i % width, i / width, t)).collect();
///     Picture {
///         luma: PlaneBuf { data: SampleBuf::U8(samples), width, height, bpc: 8 },
///         chroma: Vec::new(),
///         format: ChromaFormat::Mono,
///     }
/// };
///
/// let mut config = ScorerConfig::new(Model::builtin("vmaf_v0.6.1")?);
/// config.shot_starts = vec![0, 3]; // a cut before frame 3: two shots
/// let geometry = Geometry { width, height, bpc: 8 };
/// // `Auto` takes the first CUDA GPU when there is one and the CPU otherwise (same numbers).
/// let mut scorer = Scorer::with_backend(config, geometry, BackendRequest::Auto)?;
/// for t in 0..6 {
///     let reference = picture(t, |x, y, t| ((x * 7 + y * 3 + t * 5) % 251) as u8);
///     let distorted = picture(t, |x, y, t| ((x * 7 + y * 3 + t * 5) % 251) as u8 / 2 * 2);
///     scorer.push(&reference.view(), &distorted.view())?;
/// }
/// let report = scorer.finish();
/// assert_eq!(report.frames.len(), 6);
/// assert_eq!(report.shots.len(), 2);
/// let vmaf = report.pooled("vmaf").expect("vmaf is always pooled");
/// assert!(vmaf.mean > 0.0 && vmaf.mean <= 100.0);
/// println!("VMAF {:.3} (harmonic mean {:.3})", vmaf.mean, vmaf.harmonic_mean);
/// # Ok(())
/// # }
/// ```
pub struct Scorer {
    config: ScorerConfig,
    geometry: Geometry,
    plan: FeaturePlan,
    engine: Engine,
    backend_note: Option<String>,
    /// A GPU error met where it could not be returned (ending a shot): returned by the next
    /// call that can.
    deferred: Option<Error>,
    /// Spare extractor sets for worker threads (one is taken per frame in flight).
    extractors: Mutex<Vec<SpatialExtractors>>,
    /// For sizes where a frame's ADM depends on the previous frame of the session (libvmaf's
    /// scratch word, [`SpatialExtractors::carries_state`]): the one extractor set every frame
    /// goes through, in order, reset at each shot. `None`: frames are independent and spread
    /// over the pool above.
    sequential: Option<SpatialExtractors>,
    shot: ShotState,
    next_frame: usize,
    next_start: usize,
    frames: Vec<FrameResult>,
    shots: Vec<ShotResult>,
    started: Instant,
}

impl Scorer {
    /// A scorer on the CPU.
    pub fn new(config: ScorerConfig, geometry: Geometry) -> Result<Self> {
        Scorer::with_backend(config, geometry, BackendRequest::Cpu)
    }

    /// A scorer on the requested backend. `Auto` never fails for want of a GPU: it falls back
    /// to the CPU and records why ([`Scorer::backend_note`]).
    pub fn with_backend(
        config: ScorerConfig,
        geometry: Geometry,
        request: BackendRequest,
    ) -> Result<Self> {
        let mut scorer = Scorer::cpu_scorer(config, geometry)?;
        let engine = match request {
            BackendRequest::Cpu => None,
            BackendRequest::Cuda { device } => Some(
                cuda_engine(None, device, &scorer.plan)
                    .map_err(|e| Error::Backend(format!("CUDA device {device}: {e}")))?,
            ),
            BackendRequest::CudaContext(ctx) => Some(
                cuda_engine(Some(ctx), 0, &scorer.plan)
                    .map_err(|e| Error::Backend(format!("CUDA (borrowed context): {e}")))?,
            ),
            BackendRequest::Auto => match cuda_engine(None, 0, &scorer.plan) {
                Ok(e) => Some(e),
                Err(e) => {
                    scorer.backend_note = Some(format!("no usable CUDA GPU ({e}): using the CPU"));
                    None
                }
            },
        };
        if let Some(engine) = engine {
            scorer.engine = Engine::Cuda(Box::new(engine));
            let g = scorer.geometry;
            scorer.shot.session = Session::scores_only(g.width, g.height, g.bpc);
        }
        Ok(scorer)
    }

    /// The backend in use.
    pub fn backend(&self) -> BackendKind {
        match self.engine {
            Engine::Cpu => BackendKind::Cpu,
            Engine::Cuda(_) => BackendKind::Cuda,
        }
    }

    /// Why `Auto` chose the CPU, if it did.
    pub fn backend_note(&self) -> Option<&str> {
        self.backend_note.as_deref()
    }

    fn new_session(&self) -> Session {
        let g = self.geometry;
        match self.engine {
            Engine::Cpu => Session::new(g.width, g.height, g.bpc),
            Engine::Cuda(_) => Session::scores_only(g.width, g.height, g.bpc),
        }
    }

    fn cpu_scorer(config: ScorerConfig, geometry: Geometry) -> Result<Self> {
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
        let mut scorer = Scorer {
            geometry,
            extractors: Mutex::new(Vec::new()),
            sequential: None,
            shot: ShotState {
                index: 0,
                first_frame: 0,
                session: Session::new(width, height, bpc),
                frames: Vec::new(),
            },
            plan,
            engine: Engine::Cpu,
            backend_note: None,
            deferred: None,
            config,
            next_frame: 0,
            next_start: 0,
            frames: Vec::new(),
            shots: Vec::new(),
            started: Instant::now(),
        };
        let first = SpatialExtractors::new(&scorer.plan);
        if first.carries_state() {
            scorer.sequential = Some(first);
        } else if let Ok(mut pool) = scorer.extractors.lock() {
            pool.push(first);
        }
        Ok(scorer)
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

    /// Scores one frame pair. On the CPU, ADM and VIF of the pair run on two threads.
    pub fn push(&mut self, reference: &PictureRef, distorted: &PictureRef) -> Result<Progress> {
        self.check_pair(self.next_frame, reference, distorted)?;
        if let Engine::Cuda(_) = self.engine {
            // Host frames are copied into pinned staging before this returns, so they can stay
            // in flight: the next frame is staged while the GPU works on this one.
            let mut progress = self.gpu_begin_frame()?;
            let index = self.next_frame;
            let (features, staging) = self.gpu_features()?;
            let done = features
                .submit_host(staging, reference, distorted, index)
                .map_err(|e| Error::Backend(format!("CUDA, frame {index}: {e}")))?;
            self.next_frame += 1;
            self.absorb(done, &mut progress);
            return Ok(progress);
        }
        if self.sequential.is_some() {
            // The boundary first: the shot's first frame must see a fresh session.
            let mut progress = self.begin_frame();
            let index = self.next_frame;
            let spatial = match self.sequential.as_mut() {
                Some(ex) => ex.extract(reference, distorted, true),
                None => return Err(Error::Backend("sequential extractor missing".into())),
            };
            let luma = &reference.luma;
            self.end_frame(&mut progress, |session| session.push(index, luma, spatial));
            return Ok(progress);
        }
        let spatial = self.with_extractors(|ex| ex.extract(reference, distorted, true));
        Ok(self.push_spatial(&reference.luma, spatial))
    }

    /// Scores one pair of pictures in device memory (CUDA backend only), read in place.
    /// Returns once the GPU has finished reading them.
    ///
    /// # Safety
    /// Every plane is device memory of the scorer's CUDA context, holding its final samples
    /// and valid until this returns.
    pub unsafe fn push_device(
        &mut self,
        reference: &cuda::DevicePicture,
        distorted: &cuda::DevicePicture,
    ) -> Result<Progress> {
        // SAFETY: forwarded (submit_device checks backend and geometry); drained before
        // returning, so the planes are free afterwards.
        let mut progress = unsafe { self.submit_device(reference, distorted) }?;
        let more = self.drain_device()?;
        progress.frames.extend(more.frames);
        progress.shots.extend(more.shots);
        Ok(progress)
    }

    /// Queues a pair of device pictures (CUDA backend only) without waiting for the GPU: up to
    /// [`cuda::engine::SLOTS`] frames are in flight, so the host prepares the next frame while
    /// the GPU computes. Returns the frames completed meanwhile.
    ///
    /// # Safety
    /// Every plane is device memory of the scorer's CUDA context holding its final samples,
    /// valid and unwritten until the frame's GPU work is over: after `SLOTS` further
    /// `submit_device` calls have returned, or after [`Scorer::drain_device`] (or any other
    /// call of this scorer but `submit_device`) has returned.
    pub unsafe fn submit_device(
        &mut self,
        reference: &cuda::DevicePicture,
        distorted: &cuda::DevicePicture,
    ) -> Result<Progress> {
        let Engine::Cuda(_) = self.engine else {
            return Err(Error::Backend(
                "device frames need the CUDA backend (this scorer runs on the CPU)".into(),
            ));
        };
        let index = self.next_frame;
        let g = self.geometry;
        for (what, p) in [("reference", reference), ("distorted", distorted)] {
            if (p.luma.width, p.luma.height, p.bpc) != (g.width, g.height, g.bpc) {
                return Err(Error::FrameGeometry {
                    frame: index,
                    what: "size or bit depth",
                    expected: format!("{}x{} {}-bit", g.width, g.height, g.bpc),
                    got: format!("{}x{} {}-bit ({what})", p.luma.width, p.luma.height, p.bpc),
                });
            }
        }
        let mut progress = self.gpu_begin_frame()?;
        let (features, _) = self.gpu_features()?;
        // SAFETY: forwarded from this function's contract.
        let done = unsafe { features.submit_device(reference, distorted, index) }
            .map_err(|e| Error::Backend(format!("CUDA, frame {index}: {e}")))?;
        self.next_frame += 1;
        self.absorb(done, &mut progress);
        Ok(progress)
    }

    /// Waits for the frames in flight on the GPU and completes them.
    pub fn drain_device(&mut self) -> Result<Progress> {
        let mut progress = Progress::default();
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        let Engine::Cuda(engine) = &mut self.engine else {
            return Ok(progress);
        };
        let Some(features) = engine.features.as_mut() else {
            return Ok(progress);
        };
        if features.in_flight() == 0 {
            return Ok(progress);
        }
        let done = features
            .drain()
            .map_err(|e| Error::Backend(format!("CUDA: {e}")))?;
        self.absorb(done, &mut progress);
        Ok(progress)
    }

    /// Hands GPU results to the session, in order.
    fn absorb(&mut self, frames: Vec<cuda::GpuFrame>, progress: &mut Progress) {
        for f in frames {
            for done in self.shot.session.push_sum(f.tag, f.motion_sum, f.spatial) {
                let r = self.finish_frame(done);
                progress.frames.push(r);
            }
        }
    }

    /// On the GPU paths: a pending error first, then, if this frame starts a shot, the frames
    /// in flight (they belong to the old shot), then the boundary.
    fn gpu_begin_frame(&mut self) -> Result<Progress> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        let mut progress = Progress::default();
        if self.config.shot_starts.get(self.next_start) == Some(&self.next_frame) {
            let drained = self.drain_device()?;
            progress.frames.extend(drained.frames);
        }
        let b = self.begin_frame();
        progress.frames.extend(b.frames);
        progress.shots.extend(b.shots);
        Ok(progress)
    }

    /// The GPU features of the current shot, built on first use after a boundary.
    fn gpu_features(&mut self) -> Result<(&mut cuda::GpuFeatures, &mut cuda::HostStaging)> {
        let Engine::Cuda(engine) = &mut self.engine else {
            return Err(Error::Backend("not a CUDA scorer".into()));
        };
        if engine.features.is_none() {
            let f = cuda::GpuFeatures::new(&engine.kernels, &self.plan)
                .map_err(|e| Error::Backend(format!("CUDA session setup: {e}")))?;
            engine.features = Some(f);
        }
        let CudaEngine {
            features,
            staging,
            needs_reset,
            ..
        } = &mut **engine;
        let features = features
            .as_mut()
            .ok_or_else(|| Error::Backend("CUDA session missing".into()))?;
        if *needs_reset {
            features
                .reset_session()
                .map_err(|e| Error::Backend(format!("CUDA session reset: {e}")))?;
            *needs_reset = false;
        }
        Ok((features, staging))
    }

    /// Ends the shot if the next frame starts one.
    fn begin_frame(&mut self) -> Progress {
        let mut progress = Progress::default();
        if self.config.shot_starts.get(self.next_start) == Some(&self.next_frame) {
            self.next_start += 1;
            if let Some(shot) = self.end_shot_inner(&mut progress.frames) {
                progress.shots.push(shot);
            }
        }
        progress
    }

    fn end_frame(
        &mut self,
        progress: &mut Progress,
        push: impl FnOnce(&mut Session) -> Vec<FrameFeatures>,
    ) {
        self.next_frame += 1;
        for f in push(&mut self.shot.session) {
            let r = self.finish_frame(f);
            progress.frames.push(r);
        }
    }

    /// Scores several consecutive frame pairs, spreading them over the worker threads.
    /// Results are identical to pushing them one by one.
    pub fn push_batch(&mut self, pairs: &[(PictureRef, PictureRef)]) -> Result<Progress> {
        if matches!(self.engine, Engine::Cuda(_)) || self.sequential.is_some() {
            let mut progress = Progress::default();
            for (r, d) in pairs {
                let p = self.push(r, d)?;
                progress.frames.extend(p.frames);
                progress.shots.extend(p.shots);
            }
            return Ok(progress);
        }
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
        let mut progress = self.begin_frame();
        let index = self.next_frame;
        self.end_frame(&mut progress, |session| {
            session.push(index, reference_luma, spatial)
        });
        progress
    }

    /// Declares a shot boundary before the next frame (for boundaries found at run time:
    /// upstream events, a detector). Returns the shot that ended, if it had frames.
    pub fn end_shot(&mut self) -> Progress {
        let mut progress = Progress::default();
        // Frames still on the GPU belong to this shot.
        match self.drain_device() {
            Ok(p) => progress.frames.extend(p.frames),
            Err(e) => self.deferred = Some(e),
        }
        if let Some(shot) = self.end_shot_inner(&mut progress.frames) {
            progress.shots.push(shot);
        }
        progress
    }

    fn end_shot_inner(&mut self, completed: &mut Vec<FrameResult>) -> Option<ShotResult> {
        if self.shot.session.frame_count() == 0 {
            self.shot.first_frame = self.next_frame;
            return None;
        }
        let fresh = ShotState {
            index: self.shot.index,
            first_frame: self.next_frame,
            session: self.new_session(),
            frames: Vec::new(),
        };
        let old = std::mem::replace(&mut self.shot, fresh);
        // The next shot starts a fresh libvmaf session: on the GPU the feature state is reset
        // (in place, before the next frame), on the CPU the sequential extractor's.
        if let Engine::Cuda(engine) = &mut self.engine {
            engine.needs_reset = true;
        }
        if let Some(ex) = &mut self.sequential {
            ex.new_session();
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
        if self.config.keep_shots {
            self.shots.push(shot.clone());
        }
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
        if let Err(e) = self.drain_device() {
            eprintln!("vmafcuda: frames lost at the end of the stream: {e}");
        }
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
            backend: self.backend().name().into(),
            fps,
            frames: self.frames,
            pooled,
            shots: self.shots,
        }
    }
}

/// Loads the kernels in `ctx` (or device `device`'s primary context) for `plan`. The first
/// shot's GPU state is built with the first frame.
fn cuda_engine(
    ctx: Option<cuda::Context>,
    device: i32,
    plan: &FeaturePlan,
) -> cuda::CudaResult<CudaEngine> {
    cuda::probe()?;
    let ctx = match ctx {
        Some(c) => c,
        None => cuda::Context::primary(device)?,
    };
    let kernels = cuda::GpuKernels::load(&ctx)?;
    // Build one shot's state now, so an unusable GPU (out of memory, say) shows up here, where
    // `Auto` can still fall back, rather than at the first frame.
    let features = cuda::GpuFeatures::new(&kernels, plan)?;
    Ok(CudaEngine {
        features: Some(features),
        needs_reset: false,
        staging: cuda::HostStaging::new(&ctx),
        kernels,
    })
}
