//! `Scorer`: drives sessions across shots. Takes frame pairs, splits them into shots at the
//! configured (or explicitly declared) boundaries, scores each shot as a fresh session, and
//! returns per-frame results, per-shot pools and the whole-stream pool.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use crate::cuda::engine::PlaneDims;
use crate::cuda::{self, CudaResult, GpuFrame};
use crate::emulated_gpu::{self, EmulatedGpu};
use crate::error::{Error, Result};
use crate::extract::{FeaturePlan, SpatialExtractors, SpatialFeatures};
use crate::fallback::HostPair;
use crate::frame::{ChromaFormat, PictureRef, Plane};
use crate::gpu_pipeline::{CudaEngine, EngineFactory, GpuPipeline, Rebuilding};
use crate::model::{Model, PredictOptions};
use crate::pinned_picture::PinnedPicture;
use crate::pool::{FramePool, Pooling};
use crate::report::{FrameResult, Report, ShotResult};
use crate::session::{FrameFeatures, Session};

/// Smallest frame side libvmaf can score (17: it crashes at 16 px and below).
pub const MIN_DIMENSION: usize = 17;

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
    /// How the whole-stream pool ([`Report::pooled`]) keeps values: [`Pooling::Exact`]
    /// (default) keeps every value for exact percentiles; [`Pooling::Bounded`] keeps constant
    /// memory (min/max/mean/harmonic mean still bit-identical, percentiles within the bound in
    /// [`crate::pool`]). Shots are always pooled exactly.
    pub pooling: Pooling,
    /// Keep every shot's result for the final report. A scorer that runs for days and hands
    /// shot results out as they come (the GStreamer element without a results file) turns this
    /// off so nothing grows with the number of shots.
    pub keep_shots: bool,
    /// With `BackendRequest::Cuda` or `CudaContext`: when a CUDA call fails mid-stream, go on
    /// on the CPU (as `Auto` always does) instead of returning the error. See
    /// [`crate::fallback`].
    pub cpu_fallback: bool,
    /// What a shot boundary does to the backend's state: a full rebuild (default) or an
    /// in-place reset. Scores are the same either way.
    pub rebuild: Rebuild,
}

/// `VMAFCUDA_COLD_REBUILD=1`: [`Rebuild::Full`] becomes [`Rebuild::Cold`] (for runs whose
/// configuration cannot be changed, e.g. a measurement through a pipeline).
fn cold_rebuild() -> bool {
    std::env::var_os("VMAFCUDA_COLD_REBUILD").is_some_and(|v| v == "1")
}

/// What happens to a scorer's backend state at a shot boundary. Either way the next shot
/// scores exactly as a fresh libvmaf run on it; the difference is what is made anew.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rebuild {
    /// Tear the whole per-shot engine down and build a new one: on the GPU its streams,
    /// events, every device allocation, pinned staging and result slots, built ahead on a
    /// thread while the shot before runs (the CUDA context, the kernel modules and the
    /// scorer's memory pools it allocates from live as long as the scorer; crate docs,
    /// "Lifecycle"); on the CPU the worker scratch.
    #[default]
    Full,
    /// Keep the engine and reset its session state in place (a queued memset on the GPU).
    Reset,
    /// [`Rebuild::Full`], and the kernel modules are loaded again for every shot and its
    /// memory comes from and goes back to the driver instead of the scorer's pools: nothing of
    /// the engine outlives its shot but the CUDA context. Costs throughput (the driver's
    /// module loads and frees stall the whole device: about half the rate at 1080p in
    /// 25-frame shots on an H100); for proving that nothing leaks across a complete
    /// re-initialisation. On the CPU the same as `Full`.
    Cold,
}

impl Rebuild {
    pub fn name(self) -> &'static str {
        match self {
            Rebuild::Full => "full",
            Rebuild::Reset => "reset",
            Rebuild::Cold => "cold",
        }
    }

    /// `full`, `reset` or `cold`.
    pub fn parse(text: &str) -> Option<Rebuild> {
        match text {
            "full" => Some(Rebuild::Full),
            "reset" => Some(Rebuild::Reset),
            "cold" => Some(Rebuild::Cold),
            _ => None,
        }
    }

    /// Whether a boundary builds a whole new engine (`Full` and `Cold`).
    pub fn is_full(self) -> bool {
        matches!(self, Rebuild::Full | Rebuild::Cold)
    }
}

impl ScorerConfig {
    pub fn new(model: Model) -> Self {
        ScorerConfig {
            model,
            predict: PredictOptions::default(),
            psnr: false,
            shot_starts: Vec::new(),
            keep_frames: true,
            pooling: Pooling::Exact,
            keep_shots: true,
            cpu_fallback: false,
            rebuild: Rebuild::Full,
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
    /// [`Scorer::backend_note`]). A CUDA failure later in the stream moves the run to the CPU
    /// too ([`crate::fallback`]).
    #[default]
    Auto,
    Cpu,
    /// CUDA on the device of this ordinal, in its primary context; an error if unavailable,
    /// and CUDA failures stay errors (unless [`ScorerConfig::cpu_fallback`]).
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

enum Engine {
    Cpu,
    /// The CUDA engine, or its emulation ([`crate::emulated_gpu`]).
    Gpu(Box<dyn GpuPipeline>),
}

/// What `push` hands back: frames completed now, and a shot if one ended.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub frames: Vec<FrameResult>,
    pub shots: Vec<ShotResult>,
}

impl Progress {
    /// Appends `more` (later results).
    pub fn extend(&mut self, more: Progress) {
        self.frames.extend(more.frames);
        self.shots.extend(more.shots);
    }
}

struct ShotState {
    index: usize,
    first_frame: usize,
    session: Session,
    /// VMAF and feature values of this shot's frames (always exact: shots are bounded).
    pool: FramePool,
    /// Index of the shot's last scored frame.
    last_frame: Option<usize>,
}

impl ShotState {
    fn new(index: usize, first_frame: usize, session: Session) -> Self {
        ShotState {
            index,
            first_frame,
            session,
            pool: FramePool::new(Pooling::Exact),
            last_frame: None,
        }
    }

    fn record(&mut self, result: &FrameResult) {
        self.pool.push(&result.metrics);
        self.last_frame = Some(result.index);
    }
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
    /// Whether a GPU failure moves the run to the CPU ([`crate::fallback`]).
    fallback_allowed: bool,
    /// Why the run moved from the GPU to the CPU, once it has.
    fell_back: Option<String>,
    /// The first frame submitted to the GPU whose result has not come back.
    gpu_next: usize,
    /// After a fall-back: frames below this index are pushed again only to prime the CPU's
    /// temporal state (they were scored on the GPU).
    prime_below: usize,
    /// A shot ended while its last frames were lost on the GPU and must be replayed by the
    /// caller: the shot ends before this frame.
    replay_boundary: Option<usize>,
    /// Results completed by a call that then failed: handed out by the next call that
    /// succeeds.
    unreported: Progress,
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
    /// The whole-stream pool, in [`ScorerConfig::pooling`]'s mode.
    stream: FramePool,
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
        scorer.fallback_allowed =
            matches!(request, BackendRequest::Auto) || scorer.config.cpu_fallback;
        let emulate = emulated_gpu::is_enabled();
        let plan = scorer.plan.clone();
        let full = scorer.config.rebuild.is_full();
        let cold = scorer.config.rebuild == Rebuild::Cold || (full && cold_rebuild());
        let build = |ctx: Option<cuda::Context>, device: i32| -> CudaResult<Box<dyn GpuPipeline>> {
            let (first, factory): (Box<dyn GpuPipeline>, EngineFactory) =
                if emulate && ctx.is_none() {
                    let plan = plan.clone();
                    (
                        Box::new(EmulatedGpu::new(&plan)?),
                        Box::new(move |_: &[PlaneDims]| {
                            Ok(Box::new(EmulatedGpu::new(&plan)?) as Box<dyn GpuPipeline>)
                        }),
                    )
                } else {
                    let first = CudaEngine::new(ctx, device, &plan, full && !cold)?;
                    let (ctx, plan) = (first.context().clone(), plan.clone());
                    let (kernels, pools) = first.shared();
                    (
                        Box::new(first),
                        Box::new(move |shape: &[PlaneDims]| {
                            let shared = (!cold).then_some((&kernels, pools.as_ref()));
                            Ok(Box::new(CudaEngine::for_shot(&ctx, &plan, shape, shared)?)
                                as Box<dyn GpuPipeline>)
                        }),
                    )
                };
            if !full {
                return Ok(first);
            }
            Ok(Box::new(Rebuilding::new(first, factory)?))
        };
        let engine = match request {
            BackendRequest::Cpu => None,
            BackendRequest::Cuda { device } => Some(
                build(None, device)
                    .map_err(|e| Error::Backend(format!("CUDA device {device}: {e}")))?,
            ),
            BackendRequest::CudaContext(ctx) => Some(
                build(Some(ctx), 0)
                    .map_err(|e| Error::Backend(format!("CUDA (borrowed context): {e}")))?,
            ),
            BackendRequest::Auto => match build(None, 0) {
                Ok(e) => Some(e),
                Err(e) => {
                    scorer.backend_note = Some(format!("no usable CUDA GPU ({e}): using the CPU"));
                    None
                }
            },
        };
        if let Some(engine) = engine {
            if emulate {
                scorer.backend_note = Some("emulated GPU (test hook): computed on the CPU".into());
            }
            scorer.engine = Engine::Gpu(engine);
            let g = scorer.geometry;
            scorer.shot.session = Session::scores_only(g.width, g.height, g.bpc);
        }
        Ok(scorer)
    }

    /// The backend in use.
    pub fn backend(&self) -> BackendKind {
        match self.engine {
            Engine::Cpu => BackendKind::Cpu,
            Engine::Gpu(_) => BackendKind::Cuda,
        }
    }

    /// Why `Auto` chose the CPU, or why the run moved to the CPU, if it did.
    pub fn backend_note(&self) -> Option<&str> {
        self.backend_note.as_deref()
    }

    /// What setting up the GPU backend cost, step by step (driver, context, kernels, device
    /// memory); empty on the CPU.
    pub fn setup_timing(&self) -> Vec<(&'static str, std::time::Duration)> {
        match &self.engine {
            Engine::Gpu(g) => g.setup_timing(),
            Engine::Cpu => Vec::new(),
        }
    }

    /// Waits until the next shot's engine, built in the background under
    /// [`Rebuild::Full`], is ready, so that counts of live resources
    /// ([`crate::cuda::live_resources`], [`crate::engine_counts`]) are steady. Only tests and
    /// soaks need it; a build failure is kept for the next frame, where it is handled as the
    /// failure of that frame would be.
    pub fn settle_rebuild(&mut self) {
        if let Engine::Gpu(gpu) = &mut self.engine {
            gpu.settle();
        }
    }

    /// The GPU failure that moved this run to the CPU mid-stream, if one did
    /// ([`crate::fallback`]).
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fell_back.as_deref()
    }

    fn new_session(&self) -> Session {
        let g = self.geometry;
        match self.engine {
            Engine::Cpu => Session::new(g.width, g.height, g.bpc),
            Engine::Gpu(_) => Session::scores_only(g.width, g.height, g.bpc),
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
        let pooling = config.pooling;
        let config = ScorerConfig {
            shot_starts: starts,
            ..config
        };
        let mut scorer = Scorer {
            geometry,
            extractors: Mutex::new(Vec::new()),
            sequential: None,
            shot: ShotState::new(0, 0, Session::new(width, height, bpc)),
            plan,
            engine: Engine::Cpu,
            backend_note: None,
            deferred: None,
            fallback_allowed: false,
            fell_back: None,
            gpu_next: 0,
            prime_below: 0,
            replay_boundary: None,
            unreported: Progress::default(),
            config,
            next_frame: 0,
            next_start: 0,
            frames: Vec::new(),
            stream: FramePool::new(pooling),
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

    /// `depth`: also scan the samples against the bit depth ([`Scorer::check_depth`]).
    fn check_plane(&self, frame: usize, what: &'static str, p: &Plane, depth: bool) -> Result<()> {
        p.validate()
            .map_err(|e| Error::InvalidPlane(format!("frame {frame}, {what}: {e}")))?;
        if depth {
            self.check_depth(frame, what, p)?;
        }
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

    /// On the CPU, a host plane's samples must fit its bit depth (see
    /// [`Plane::first_sample_above_depth`]): the SIMD levels would not agree on one that does
    /// not. Host frames for the GPU are not scanned here: a separate pass over every sample
    /// costs the 10-bit host path 15-35% of its speed (H100, 2026-11-26), so that check belongs
    /// in the staging copy, which reads every sample anyway.
    fn check_depth(&self, frame: usize, what: &str, p: &Plane) -> Result<()> {
        if let Engine::Gpu(_) = self.engine {
            return Ok(());
        }
        match p.first_sample_above_depth() {
            None => Ok(()),
            Some((x, y, v)) => Err(Error::InvalidPlane(format!(
                "frame {frame}, {what}: sample {v} at x={x}, y={y} does not fit {} bits (at \
                 most {}); MSB-aligned samples (P010-style) must be shifted down to the declared \
                 depth",
                p.bpc,
                (1u32 << p.bpc) - 1
            ))),
        }
    }

    /// The depth scans of [`Scorer::check_pair`] alone (luma, and chroma where PSNR is on).
    fn check_depths(&self, frame: usize, r: &PictureRef, d: &PictureRef) -> Result<()> {
        self.check_depth(frame, "reference luma", &r.luma)?;
        self.check_depth(frame, "distorted luma", &d.luma)?;
        if self.config.psnr {
            for (what, pic) in [("reference chroma", r), ("distorted chroma", d)] {
                for p in pic.chroma.iter().flatten() {
                    self.check_depth(frame, what, p)?;
                }
            }
        }
        Ok(())
    }

    /// Every check of a frame pair; without `depth`, all but the scans of the samples against
    /// the bit depth (which [`Scorer::check_depths`] then makes).
    fn check_pair(&self, frame: usize, r: &PictureRef, d: &PictureRef, depth: bool) -> Result<()> {
        self.check_plane(frame, "reference luma", &r.luma, depth)?;
        self.check_plane(frame, "distorted luma", &d.luma, depth)?;
        if self.config.psnr {
            for (what, pic) in [("reference chroma", r), ("distorted chroma", d)] {
                if let Some(planes) = &pic.chroma {
                    for p in planes {
                        p.validate().map_err(|e| {
                            Error::InvalidPlane(format!("frame {frame}, {what}: {e}"))
                        })?;
                        if depth {
                            self.check_depth(frame, what, p)?;
                        }
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

    /// Drops the CPU's worker scratch (the extractor sets) and makes it anew, as a full rebuild
    /// does at a shot boundary: spare sets are made again as frames need them.
    fn rebuild_cpu_scratch(&mut self) {
        self.extractors = Mutex::new(Vec::new());
        if self.sequential.is_some() {
            self.sequential = Some(SpatialExtractors::new(&self.plan));
        }
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
    ///
    /// On the GPU, a failure either is returned (forced CUDA) or moves the run to the CPU
    /// ([`crate::fallback`]); then this frame and the lost ones are scored on the CPU, and the
    /// call only fails ([`Error::ReplayOnHost`]) if some lost frames were device frames.
    pub fn push(&mut self, reference: &PictureRef, distorted: &PictureRef) -> Result<Progress> {
        // Host frames are copied into pinned staging before this returns, so they can stay in
        // flight: the next frame is staged while the GPU works on this one.
        self.push_scanned(reference, distorted, true)
    }

    /// [`Scorer::push`], scanning the samples against the depth only with `depth`.
    fn push_scanned(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        depth: bool,
    ) -> Result<Progress> {
        self.push_host_pair(reference, distorted, depth, |gpu, index| {
            gpu.submit_host(reference, distorted, index)
        })
    }

    /// [`Scorer::push`] and [`Scorer::push_pinned`]: checks the pair (without `depth`, all but
    /// the scans of the samples against the bit depth), hands it to the GPU with `submit` (on a
    /// failure there, recovers or fails as the backend request says) or scores it on the CPU.
    fn push_host_pair(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
        depth: bool,
        submit: impl FnOnce(&mut dyn GpuPipeline, usize) -> CudaResult<Vec<GpuFrame>>,
    ) -> Result<Progress> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        self.check_pair(self.next_frame, reference, distorted, depth)?;
        if let Engine::Gpu(_) = self.engine {
            let index = self.next_frame;
            match self.gpu_submit(index, |gpu| submit(gpu, index)) {
                Ok(p) => return Ok(self.deliver(p)),
                Err(failure) => {
                    let p = self.recover(failure, index + 1)?;
                    self.unreported.extend(p);
                }
            }
        }
        let p = self.push_cpu(reference, distorted);
        Ok(self.deliver(p))
    }

    /// A picture of the scorer's geometry (and `format`'s chroma) for [`Scorer::push_pinned`]:
    /// in page-locked memory of the scorer's CUDA context on the GPU, so that its frames are
    /// uploaded without the copy into staging ([`crate::pinned_picture`]); in ordinary memory
    /// on the CPU. Allocating page-locked memory is slow (milliseconds): keep a few pictures and
    /// write into them again once the scorer has let go of them ([`Arc::get_mut`]: it keeps a
    /// frame's pictures for a few frames after it was pushed). The pictures stay valid after
    /// the scorer is gone, or after it fell back to the CPU.
    pub fn pinned_picture(&self, format: ChromaFormat) -> Result<PinnedPicture> {
        let g = self.geometry;
        if let Engine::Gpu(gpu) = &self.engine {
            if let Some(ctx) = gpu.host_context() {
                return PinnedPicture::pinned(&ctx, g.width, g.height, g.bpc, format)
                    .map_err(|e| Error::Backend(format!("CUDA: page-locked picture: {e}")));
            }
        }
        PinnedPicture::heap(g.width, g.height, g.bpc, format).map_err(Error::InvalidPlane)
    }

    /// The CUDA context [`Scorer::pinned_picture`] allocates in (`None` on the CPU), for
    /// readers on other threads that make [`PinnedPicture`]s themselves
    /// ([`PinnedPicture::pinned`]).
    pub fn host_context(&self) -> Option<cuda::Context> {
        match &self.engine {
            Engine::Gpu(gpu) => gpu.host_context(),
            Engine::Cpu => None,
        }
    }

    /// Scores one frame pair given as [`PinnedPicture`]s, as [`Scorer::push`] would score
    /// their views. On the GPU, page-locked pictures are uploaded in place: the scorer keeps
    /// a reference to both while the frame is in flight and for a few frames after (as the host
    /// copy a fall-back to the CPU scores again), so they cannot be written meanwhile.
    pub fn push_pinned(
        &mut self,
        reference: &Arc<PinnedPicture>,
        distorted: &Arc<PinnedPicture>,
    ) -> Result<Progress> {
        self.push_host_pair(&reference.view(), &distorted.view(), true, |gpu, index| {
            gpu.submit_pinned(reference, distorted, index)
        })
    }

    /// The CPU path of [`Scorer::push`] (checked input).
    fn push_cpu(&mut self, reference: &PictureRef, distorted: &PictureRef) -> Progress {
        if self.next_frame < self.prime_below {
            // Scored on the GPU before a fall-back: it only gives the CPU its temporal state.
            self.shot.session.prime(&reference.luma);
            if let Some(ex) = &mut self.sequential {
                ex.prime(reference, distorted);
            }
            self.next_frame += 1;
            return Progress::default();
        }
        if self.sequential.is_some() {
            // The boundary first: the shot's first frame must see a fresh session.
            let mut progress = self.begin_frame();
            let index = self.next_frame;
            let spatial = match self.sequential.as_mut() {
                Some(ex) => ex.extract(reference, distorted, true),
                None => SpatialExtractors::new(&self.plan).extract(reference, distorted, true),
            };
            let luma = &reference.luma;
            self.end_frame(&mut progress, |session| session.push(index, luma, spatial));
            return progress;
        }
        let spatial = self.with_extractors(|ex| ex.extract(reference, distorted, true));
        self.push_spatial(&reference.luma, spatial)
    }

    /// Results held back by a failed call first, then `progress`.
    fn deliver(&mut self, progress: Progress) -> Progress {
        let mut out = std::mem::take(&mut self.unreported);
        out.extend(progress);
        out
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
        progress.extend(more);
        Ok(progress)
    }

    /// Queues a pair of device pictures (CUDA backend only) without waiting for the GPU: up to
    /// [`cuda::engine::SLOTS`] frames are in flight, so the host prepares the next frame while
    /// the GPU computes. Returns the frames completed meanwhile. Frames below 300,000 pixels go
    /// to the GPU two at a time, so such a frame may wait for the next `submit_device` (or a
    /// drain, or the end of its shot) before its work starts; the contract below covers that.
    ///
    /// If the GPU fails and the scorer may fall back ([`crate::fallback`]), the scorer moves
    /// to the CPU and returns [`Error::ReplayOnHost`]: push the frames it names (this one
    /// included) again as host frames.
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
        self.check_device_frame(&[
            (
                "reference",
                reference.luma.width,
                reference.luma.height,
                reference.bpc,
            ),
            (
                "distorted",
                distorted.luma.width,
                distorted.luma.height,
                distorted.bpc,
            ),
        ])?;
        let index = self.next_frame;
        // SAFETY: forwarded from this function's contract.
        self.submit_unkept(index, |gpu| unsafe {
            gpu.submit_device(reference, distorted, index)
        })
    }

    /// Test hook ([`crate::emulated_gpu`]): host pictures submitted as if they were device
    /// frames, so the scorer keeps no copy of them and a GPU failure asks for a replay.
    #[doc(hidden)]
    pub fn submit_emulated_device(
        &mut self,
        reference: &PictureRef,
        distorted: &PictureRef,
    ) -> Result<Progress> {
        let (r, d) = (&reference.luma, &distorted.luma);
        self.check_device_frame(&[
            ("reference", r.width, r.height, r.bpc),
            ("distorted", d.width, d.height, d.bpc),
        ])?;
        let index = self.next_frame;
        self.submit_unkept(index, |gpu| gpu.submit_unkept(reference, distorted, index))
    }

    fn check_device_frame(&mut self, pictures: &[(&str, usize, usize, u32)]) -> Result<()> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        let Engine::Gpu(_) = self.engine else {
            return Err(Error::Backend(
                "device frames need the CUDA backend (this scorer runs on the CPU)".into(),
            ));
        };
        let g = self.geometry;
        for &(what, w, h, bpc) in pictures {
            if (w, h, bpc) != (g.width, g.height, g.bpc) {
                return Err(Error::FrameGeometry {
                    frame: self.next_frame,
                    what: "size or bit depth",
                    expected: format!("{}x{} {}-bit", g.width, g.height, g.bpc),
                    got: format!("{w}x{h} {bpc}-bit ({what})"),
                });
            }
        }
        Ok(())
    }

    /// Submits frame `index`, of which the scorer keeps no host copy: after a fall-back the
    /// caller must push it again.
    fn submit_unkept(
        &mut self,
        index: usize,
        submit: impl FnOnce(&mut dyn GpuPipeline) -> CudaResult<Vec<GpuFrame>>,
    ) -> Result<Progress> {
        match self.gpu_submit(index, submit) {
            Ok(p) => Ok(self.deliver(p)),
            Err(failure) => {
                let p = self.recover(failure.clone(), index + 1)?;
                self.unreported.extend(p);
                Err(Error::ReplayOnHost {
                    from: self.next_frame,
                    to: index + 1,
                    reason: failure,
                })
            }
        }
    }

    /// Waits for the frames in flight on the GPU and completes them.
    pub fn drain_device(&mut self) -> Result<Progress> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        match self.gpu_drain() {
            Ok(p) => Ok(self.deliver(p)),
            Err(failure) => {
                let to = self.next_frame;
                let p = self.recover(failure, to)?;
                Ok(self.deliver(p))
            }
        }
    }

    fn gpu_drain(&mut self) -> Result<Progress, String> {
        let mut progress = Progress::default();
        let Engine::Gpu(gpu) = &mut self.engine else {
            return Ok(progress);
        };
        if gpu.in_flight() == 0 {
            return Ok(progress);
        }
        let done = gpu.drain().map_err(|e| format!("CUDA: {e}"))?;
        self.absorb(done, &mut progress);
        Ok(progress)
    }

    /// Submits frame `index` to the GPU: first, if it starts a shot, the frames in flight
    /// (they belong to the old shot) and the boundary. On failure, the results completed so
    /// far wait in `unreported`.
    fn gpu_submit(
        &mut self,
        index: usize,
        submit: impl FnOnce(&mut dyn GpuPipeline) -> CudaResult<Vec<GpuFrame>>,
    ) -> Result<Progress, String> {
        let mut progress = Progress::default();
        if self.config.shot_starts.get(self.next_start) == Some(&index) {
            progress.extend(self.gpu_drain()?);
        }
        progress.extend(self.begin_frame());
        let Engine::Gpu(gpu) = &mut self.engine else {
            self.unreported.extend(progress);
            return Err("not a GPU scorer".into());
        };
        match submit(gpu.as_mut()) {
            Ok(done) => {
                self.next_frame += 1;
                self.absorb(done, &mut progress);
                Ok(progress)
            }
            Err(e) => {
                self.unreported.extend(progress);
                Err(format!("CUDA, frame {index}: {e}"))
            }
        }
    }

    /// A GPU call failed: an error if the scorer may not fall back, else the move to the CPU.
    /// `to`: the end of the frames the caller has submitted, the failing one included.
    fn recover(&mut self, failure: String, to: usize) -> Result<Progress> {
        if !self.fallback_allowed {
            return Err(Error::Backend(failure));
        }
        self.fall_back(failure, to)
    }

    /// Moves the run to the CPU (see [`crate::fallback`]): releases the GPU engine, continues
    /// the shot's session on the host and scores the frames the GPU lost again from the host
    /// copies it kept. Without a copy of each, the caller replays them: `ReplayOnHost`.
    fn fall_back(&mut self, reason: String, to: usize) -> Result<Progress> {
        let Engine::Gpu(gpu) = std::mem::replace(&mut self.engine, Engine::Cpu) else {
            return Ok(Progress::default());
        };
        let until = self.next_frame;
        let lost_from = self.gpu_next.min(until);
        // Frames of this shot came back from the GPU: the last of them primes the CPU's
        // temporal state (motion's previous frame, ADM's carried word).
        let prime = self.shot.session.frame_count() > 0;
        let first = if prime {
            lost_from.saturating_sub(1)
        } else {
            lost_from
        };
        let copies: Option<Vec<HostPair>> = (first..until).map(|i| gpu.host_copy(i)).collect();
        // Every CUDA resource of the run goes here.
        drop(gpu);
        let g = self.geometry;
        let session = std::mem::replace(
            &mut self.shot.session,
            Session::new(g.width, g.height, g.bpc),
        );
        if prime {
            self.shot.session = session.resume_on_host();
        }
        if let Some(ex) = &mut self.sequential {
            ex.new_session();
        }
        self.prime_below = lost_from;
        self.next_frame = first;
        self.backend_note = Some(format!(
            "CUDA failed at frame {until} ({reason}): continuing on the CPU"
        ));
        self.fell_back = Some(reason.clone());
        match copies {
            Some(copies) => {
                let mut progress = Progress::default();
                for c in &copies {
                    let (r, d) = (c.reference.view(), c.distorted.view());
                    progress.extend(self.push_cpu(&r, &d));
                }
                Ok(progress)
            }
            None => Err(Error::ReplayOnHost {
                from: first,
                to,
                reason,
            }),
        }
    }

    /// Hands GPU results to the session, in order.
    fn absorb(&mut self, frames: Vec<GpuFrame>, progress: &mut Progress) {
        for f in frames {
            self.gpu_next = f.tag + 1;
            for done in self.shot.session.push_sum(f.tag, f.motion_sum, f.spatial) {
                let r = self.finish_frame(done);
                progress.frames.push(r);
            }
        }
    }

    /// Ends the shot if the next frame starts one.
    fn begin_frame(&mut self) -> Progress {
        let mut progress = Progress::default();
        let configured = self.config.shot_starts.get(self.next_start) == Some(&self.next_frame);
        let replayed = self.replay_boundary == Some(self.next_frame);
        if configured {
            self.next_start += 1;
        }
        if replayed {
            self.replay_boundary = None;
        }
        if configured || replayed {
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
        self.push_batch_scanned(pairs, true)
    }

    /// [`Scorer::push_batch`] for pictures whose every sample the caller has already checked
    /// against the bit depth, as `vmafcuda score`'s y4m readers do while the samples are still
    /// in the cache ([`crate::y4m::samples_from_le`]): the same results, without the scorer
    /// scanning every deeper-than-8-bit sample a second time (1.3% of a 1080p 10-bit run
    /// on the CPU). Every other check still runs. A sample above the depth that the caller
    /// let through is not an error here: it gives scores that may differ from libvmaf's and
    /// between SIMD levels (never undefined behaviour).
    pub fn push_batch_depth_checked(
        &mut self,
        pairs: &[(PictureRef, PictureRef)],
    ) -> Result<Progress> {
        self.push_batch_scanned(pairs, false)
    }

    /// [`Scorer::push_batch`], scanning the samples against the depth only with `depth`.
    fn push_batch_scanned(
        &mut self,
        pairs: &[(PictureRef, PictureRef)],
        depth: bool,
    ) -> Result<Progress> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        let one_by_one = matches!(self.engine, Engine::Gpu(_))
            || self.sequential.is_some()
            || self.next_frame < self.prime_below
            || self.replay_boundary.is_some();
        if one_by_one {
            let mut progress = Progress::default();
            for (r, d) in pairs {
                progress.extend(self.push_scanned(r, d, depth)?);
            }
            return Ok(progress);
        }
        // The cheap checks here; the scans of every sample against the depth on the workers,
        // each just before its frame is scored (in parallel, and the scan brings the frame
        // into the cache for the extractors). If a cheap check fails, every check runs here in
        // frame order, so the error is the one `push` would give frame by frame.
        let first = self.next_frame;
        let shapes_ok = (pairs.iter().enumerate())
            .all(|(i, (r, d))| self.check_pair(first + i, r, d, false).is_ok());
        if !shapes_ok {
            for (i, (r, d)) in pairs.iter().enumerate() {
                self.check_pair(first + i, r, d, depth)?;
            }
        }
        // Motion runs with the rest on the workers: frame i compares with frame i - 1 of the
        // batch, or (the first) with the session's stored previous frame; a frame that starts
        // a session (the scorer's first, or a configured shot start) has no motion sum.
        let starts = &self.config.shot_starts[self.next_start..];
        let session = &self.shot.session;
        let starts_session = |i: usize| starts.binary_search(&(self.next_frame + i)).is_ok();
        let first_prev = if starts_session(0) {
            None
        } else {
            session.motion_prev()
        };
        let prev_of = |i: usize| match i {
            _ if starts_session(i) => None,
            0 => first_prev.as_ref(),
            _ => Some(&pairs[i - 1].0.luma),
        };
        let scored: Vec<Result<(SpatialFeatures, Option<u64>)>> = pairs
            .par_iter()
            .enumerate()
            .map(|(i, (r, d))| {
                if depth {
                    self.check_depths(first + i, r, d)?;
                }
                Ok(self.with_extractors(|ex| {
                    let sum = prev_of(i).map(|p| ex.motion_sum(p, &r.luma));
                    (ex.extract(r, d, false), sum)
                }))
            })
            .collect();
        // Nothing of the batch is kept if a frame failed: the first failure in frame order.
        let scored = scored.into_iter().collect::<Result<Vec<_>>>()?;
        let mut progress = Progress::default();
        for (s, sum) in scored {
            progress.extend(self.push_spatial_sum(s, sum));
        }
        // The next batch's first frame compares with this one's last.
        if let Some((r, _)) = pairs.last() {
            self.shot.session.prime(&r.luma);
        }
        Ok(self.deliver(progress))
    }

    /// [`Scorer::push_spatial`] for a frame whose motion sum is known (`None`: the first frame
    /// of its session).
    fn push_spatial_sum(&mut self, spatial: SpatialFeatures, sum: Option<u64>) -> Progress {
        let mut progress = self.begin_frame();
        let index = self.next_frame;
        self.end_frame(&mut progress, |session| {
            session.push_sum(index, sum, spatial)
        });
        progress
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
        match self.gpu_drain() {
            Ok(p) => progress.extend(p),
            Err(failure) => {
                let to = self.next_frame;
                match self.recover(failure, to) {
                    Ok(p) => progress.extend(p),
                    Err(e @ Error::ReplayOnHost { .. }) => {
                        // The shot's last frames come again from the caller: it ends after
                        // them.
                        self.replay_boundary = Some(to);
                        self.deferred = Some(e);
                        return self.deliver(progress);
                    }
                    Err(e) => self.deferred = Some(e),
                }
            }
        }
        if let Some(shot) = self.end_shot_inner(&mut progress.frames) {
            progress.shots.push(shot);
        }
        self.deliver(progress)
    }

    fn end_shot_inner(&mut self, completed: &mut Vec<FrameResult>) -> Option<ShotResult> {
        if self.shot.session.frame_count() == 0 {
            self.shot.first_frame = self.next_frame;
            return None;
        }
        let fresh = ShotState::new(self.shot.index, self.next_frame, self.new_session());
        let ShotState {
            index,
            first_frame,
            session,
            mut pool,
            mut last_frame,
        } = std::mem::replace(&mut self.shot, fresh);
        // The next shot starts a fresh libvmaf session: on the GPU a new engine (`Full`, swapped
        // in before the next frame) or the feature state reset in place (`Reset`); on the CPU
        // new worker scratch (`Full`) or the sequential extractor's reset.
        if let Engine::Gpu(gpu) = &mut self.engine {
            gpu.new_session();
        }
        match self.config.rebuild {
            Rebuild::Full | Rebuild::Cold => self.rebuild_cpu_scratch(),
            Rebuild::Reset => {
                if let Some(ex) = &mut self.sequential {
                    ex.new_session();
                }
            }
        }
        // The current shot is already the fresh one: the flushed frames go to the old one.
        for f in session.flush() {
            let r = self.result_of(f);
            pool.push(&r.metrics);
            last_frame = Some(r.index);
            self.record_stream(&r);
            completed.push(r);
        }
        self.shot.index = index + 1;
        let shot = ShotResult {
            index,
            first_frame,
            last_frame: last_frame.unwrap_or(first_frame),
            pooled: pool.pooled(),
        };
        if self.config.keep_shots {
            self.shots.push(shot.clone());
        }
        Some(shot)
    }

    fn finish_frame(&mut self, f: FrameFeatures) -> FrameResult {
        let result = self.result_of(f);
        self.shot.record(&result);
        self.record_stream(&result);
        result
    }

    fn result_of(&self, f: FrameFeatures) -> FrameResult {
        FrameResult {
            index: f.index,
            metrics: self.metrics(&f),
        }
    }

    /// Adds a frame to the whole-stream pool (and the report's frames if they are kept).
    fn record_stream(&mut self, result: &FrameResult) {
        self.stream.push(&result.metrics);
        if self.config.keep_frames {
            self.frames.push(result.clone());
        }
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
    pub fn finish(self) -> Report {
        self.finish_inner(AtEnd::TearDown).0
    }

    /// [`Scorer::finish`] for a process that is about to exit: the GPU state (context
    /// reference, kernels, device and pinned memory) is left for the driver to reclaim when the
    /// process ends instead of being torn down here, one allocation at a time. Never use it in a
    /// process that goes on working: what is left is never freed. On the CPU it is `finish`.
    pub fn finish_before_exit(self) -> Report {
        self.finish_inner(AtEnd::Leave).0
    }

    /// [`Scorer::finish`] that hands the GPU state back instead of tearing it down, so a
    /// process that goes on working (the CLI's resident service) can answer first and release
    /// the state afterwards: dropping the [`GpuTeardown`] frees everything, as `finish` does.
    pub fn finish_deferred(self) -> (Report, GpuTeardown) {
        self.finish_inner(AtEnd::Defer)
    }

    fn finish_inner(mut self, at_end: AtEnd) -> (Report, GpuTeardown) {
        if let Err(e) = self.drain_device() {
            // Only device frames can be lost here (host frames are scored again on the CPU):
            // callers with device frames drain before finishing.
            eprintln!("vmafcuda: frames lost at the end of the stream: {e}");
        }
        let mut tail = Vec::new();
        self.end_shot_inner(&mut tail);
        let backend = self.backend().name().into();
        let mut teardown = GpuTeardown(None);
        if at_end != AtEnd::TearDown {
            if let Engine::Gpu(engine) = std::mem::replace(&mut self.engine, Engine::Cpu) {
                if at_end == AtEnd::Leave {
                    // The process exits next (finish_before_exit's contract): the driver
                    // reclaims it.
                    std::mem::forget(engine);
                } else {
                    teardown.0 = Some(engine);
                }
            }
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let fps = if elapsed > 0.0 {
            self.next_frame as f64 / elapsed
        } else {
            0.0
        };
        let pooled = self.stream.pooled();
        let report = Report {
            model: self.config.model.name().to_owned(),
            width: self.geometry.width,
            height: self.geometry.height,
            bpc: self.geometry.bpc,
            backend,
            fps,
            frames: self.frames,
            pooled,
            shots: self.shots,
        };
        (report, teardown)
    }
}

/// What [`Scorer::finish`] does with the GPU state.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AtEnd {
    TearDown,
    Leave,
    Defer,
}

/// The GPU state of a finished [`Scorer`] (see [`Scorer::finish_deferred`]): released, every
/// allocation of it, when this is dropped. Empty for a scorer that ran on the CPU.
#[must_use = "dropping it tears the GPU state down at once"]
pub struct GpuTeardown(Option<Box<dyn GpuPipeline>>);
