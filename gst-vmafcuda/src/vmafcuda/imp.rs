//! The `vmafcuda` aggregator: pairs reference and distorted buffers, feeds the engine's
//! [`Scorer`], turns shot boundaries from every source into `Scorer::end_shot`, and posts the
//! results. See the module docs of `super` for pads, properties and messages.

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use vmafcuda::cuda;
use vmafcuda::model::{Model, PredictOptions};
use vmafcuda::pool::PooledStats;
use vmafcuda::report::{FrameResult, Report, ShotResult};
use vmafcuda::scorer::{BackendKind, BackendRequest};
use vmafcuda::shots::{ShotDetector, ShotDetectorConfig};
use vmafcuda::{Geometry, Scorer, ScorerConfig};

use super::alerts::{Alert, AlertConfig, AlertMonitor, ScoredFrame};
use super::align::Estimate;
use super::feeds::{AlignNews, FeedConfig, Feeds};
use super::pairing::Mode;
use super::picture::{ChromaLayout, HostPicture, Layout, FORMATS};
use super::report_page::{self, PageInputs};
use super::{
    Align, Backend, Pairing, PoolMethod, ResultsFormat, ShotDetection, SHOT_BOUNDARY_EVENT,
};
use crate::cuda_ffi::{self, Api, CudaMappedFrame};

mod pairing_loop;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "vmafcuda",
        gst::DebugColorFlags::empty(),
        Some("VMAF (bit-exact with libvmaf) on CUDA or CPU"),
    )
});

const DEFAULT_MODEL: &str = "vmaf_v0.6.1";

#[derive(Clone, Debug)]
struct Settings {
    model_filename: String,
    disable_clip: bool,
    enable_transform: bool,
    psnr: bool,
    pool_method: PoolMethod,
    subsample: u32,
    frame_message: bool,
    results_filename: Option<String>,
    results_format: ResultsFormat,
    report_filename: Option<String>,
    shot_detection: ShotDetection,
    shot_threshold: f64,
    min_shot_length: u32,
    shot_boundaries: String,
    backend: Backend,
    cuda_device_id: i32,
    pairing: Pairing,
    pairing_tolerance: u64,
    align: Align,
    align_offset: i64,
    align_window: u64,
    stall_timeout: u64,
    alert_threshold: f64,
    alert_shot_threshold: f64,
    alert_frames: u32,
    alert_interval: u64,
}

impl Default for Settings {
    fn default() -> Self {
        let detector = ShotDetectorConfig::default();
        Settings {
            model_filename: DEFAULT_MODEL.into(),
            disable_clip: false,
            enable_transform: false,
            psnr: false,
            pool_method: PoolMethod::Mean,
            subsample: 1,
            frame_message: false,
            results_filename: None,
            results_format: ResultsFormat::None,
            report_filename: None,
            shot_detection: ShotDetection::Events,
            shot_threshold: detector.threshold,
            min_shot_length: detector.min_shot_length as u32,
            shot_boundaries: String::new(),
            backend: Backend::Auto,
            cuda_device_id: -1,
            pairing: Pairing::Timestamps,
            pairing_tolerance: 0,
            align: Align::None,
            align_offset: 0,
            align_window: 2_000_000_000,
            stall_timeout: 1_000_000_000,
            alert_threshold: 0.0,
            alert_shot_threshold: 0.0,
            alert_frames: 1,
            alert_interval: 10_000_000_000,
        }
    }
}

impl Settings {
    /// How the feeds are paired, for reference frames of `frame_ns`.
    fn feed_config(&self, frame_ns: i64) -> FeedConfig {
        FeedConfig {
            mode: match self.pairing {
                Pairing::Arrival => Mode::Arrival,
                Pairing::Timestamps => Mode::Timestamps,
            },
            // Default: anything closer than half a frame (exclusive, so that a frame exactly
            // between two slots does not match both).
            tolerance_ns: match self.pairing_tolerance {
                0 => (frame_ns / 2 - 1).max(0),
                t => t.min(i64::MAX as u64) as i64,
            },
            auto_align: self.align == Align::Auto,
            offset_ns: self.align_offset,
            window_ns: self.align_window.min(i64::MAX as u64 / 4) as i64,
            stall_ns: self.stall_timeout.min(i64::MAX as u64 / 4) as i64,
            frame_ns,
        }
    }

    fn alert_config(&self) -> AlertConfig {
        AlertConfig {
            frame_threshold: self.alert_threshold,
            shot_threshold: self.alert_shot_threshold,
            frames: self.alert_frames,
            interval_ns: self.alert_interval,
        }
    }
}

/// Reference frames of a gap being collected.
#[derive(Clone, Copy, Debug)]
struct OpenGap {
    reason: &'static str,
    shot: u64,
    frames: u64,
    start: Option<gst::ClockTime>,
    end: Option<gst::ClockTime>,
}

/// Duration of a reference frame when neither caps nor buffers say (25 fps).
const DEFAULT_FRAME_NS: i64 = 40_000_000;

/// Maps frame `index`'s buffer in system memory for reading (`what`: reference or distorted).
fn map_readable<'b>(
    buf: &'b gst::Buffer,
    f: &PadFormat,
    what: &str,
    index: usize,
) -> Result<gst_video::VideoFrameRef<&'b gst::BufferRef>, gst::ErrorMessage> {
    gst_video::VideoFrameRef::from_buffer_ref_readable(buf.as_ref(), &f.info).map_err(|_| {
        gst::error_msg!(
            gst::StreamError::Decode,
            ("frame {index}: cannot map the {what} buffer for reading")
        )
    })
}

/// Parses `shot-boundaries`: frame indices separated by commas, spaces or semicolons.
fn parse_boundaries(text: &str) -> Result<Vec<usize>, String> {
    let mut out = text
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<usize>()
                .map_err(|_| format!("shot-boundaries: {t:?} is not a frame index"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Negotiated caps of one sink pad.
#[derive(Clone, Debug)]
struct PadFormat {
    info: gst_video::VideoInfo,
    layout: Layout,
    cuda: bool,
}

impl PadFormat {
    fn describe(&self) -> String {
        format!(
            "{}x{} {:?} ({}-bit{})",
            self.info.width(),
            self.info.height(),
            self.info.format(),
            self.layout.bpc,
            if self.cuda { ", CUDA memory" } else { "" }
        )
    }
}

/// Timing of a frame, kept until its shot is posted.
#[derive(Clone, Copy, Debug, Default)]
struct FrameTimes {
    pts: Option<gst::ClockTime>,
    duration: Option<gst::ClockTime>,
}

#[derive(Default)]
struct State {
    /// Settings as they were at start (properties are read once per run).
    settings: Settings,
    boundaries: Vec<usize>,
    model: Option<Model>,
    ref_format: Option<PadFormat>,
    dist_format: Option<PadFormat>,
    scorer: Option<Scorer>,
    detector: Option<ShotDetector>,
    /// Frames pushed to the scorer so far (global index of the next frame).
    next_frame: usize,
    times: BTreeMap<usize, FrameTimes>,
    /// (frame index, VMAF) of scored, subsampled frames whose shot is not posted yet.
    pending: Vec<(usize, f64)>,
    /// VMAF of every scored, subsampled frame (for the pooled message).
    all_scores: Vec<f64>,
    shots_posted: u64,
    /// Device frames stopped working: host path from now on.
    device_disabled: bool,
    /// Why frames take the host path was logged once.
    host_path_logged: bool,
    /// Frame pairs scored in place from CUDA memory (no copy of frame data) ...
    frames_in_place: u64,
    /// ... and from system memory (mapped for reading, then the CPU or an upload).
    frames_system_memory: u64,
    dist_ended_warned: bool,
    finished: bool,
    /// Frames waiting to be paired, alignment (see `feeds`); made at start.
    feeds: Option<Feeds>,
    alerts: Option<AlertMonitor>,
    /// Scored frames of the open shot, for shot alerts (only with alerts on).
    shot_frames: Vec<ScoredFrame>,
    gap: Option<OpenGap>,
    gaps: u64,
    frames_missing: u64,
    frames_repeated: u64,
    frames_extra: u64,
    shot_missing: u64,
    shot_repeated: u64,
    /// Reference PTS by frame index, kept for `report-filename` only.
    report_pts: Vec<Option<gst::ClockTime>>,
    /// Follows the scorer from the GPU to the CPU mid-stream.
    fallback: super::fallback::Fallback,
}

pub struct VmafCuda {
    ref_pad: gst_base::AggregatorPad,
    dist_pad: gst_base::AggregatorPad,
    settings: Mutex<Settings>,
    state: Mutex<State>,
    /// The shared `GstCudaContext`, found through context sharing or created for us.
    cuda_context: Mutex<Option<gst::Object>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic never crosses a vfunc (see `catch`), so poisoning only follows a bug; the data
    // is still consistent enough to shut down.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a step of scoring produced, posted once the state lock is released.
type Messages = Vec<gst::Message>;

impl VmafCuda {
    fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    fn vmaf_structure(kind: &str) -> gst::structure::Builder {
        gst::Structure::builder("VMAF")
            .field("type", kind)
            .field("stream", 0i32)
    }

    fn element_message(&self, s: gst::Structure) -> gst::Message {
        gst::message::Element::builder(s).src(&*self.obj()).build()
    }

    fn pooled_fields(
        b: gst::structure::Builder,
        stats: &PooledStats,
        method: PoolMethod,
    ) -> gst::structure::Builder {
        let score = match method {
            PoolMethod::Min => stats.min,
            PoolMethod::Max => stats.max,
            PoolMethod::Mean => stats.mean,
            PoolMethod::HarmonicMean => stats.harmonic_mean,
        };
        b.field("score", score)
            .field("mean", stats.mean)
            .field("harmonic-mean", stats.harmonic_mean)
            .field("min", stats.min)
            .field("max", stats.max)
            .field("p5", stats.p5)
    }

    fn frame_message(&self, state: &State, f: &FrameResult) -> gst::Message {
        let times = state.times.get(&f.index).copied().unwrap_or_default();
        let mut b = Self::vmaf_structure("frame")
            .field("index", f.index as u64)
            .field("shot", state.shots_posted)
            .field("timestamp", times.pts)
            .field("duration", times.duration)
            .field("score", f.vmaf());
        for (key, value) in &f.metrics {
            b = b.field(key.as_str(), *value);
        }
        self.element_message(b.build())
    }

    fn shot_message(&self, state: &mut State, shot: &ShotResult) -> Messages {
        let split = state
            .pending
            .iter()
            .position(|&(i, _)| i > shot.last_frame)
            .unwrap_or(state.pending.len());
        let scores: Vec<f64> = state.pending.drain(..split).map(|(_, v)| v).collect();
        // With subsample 1 these are the shot's frames in order, so the statistics equal the
        // engine's shot pool; with subsample N only every N-th frame counts, as in libvmaf.
        let stats = PooledStats::from_values(&scores)
            .or_else(|| shot.pooled("vmaf").copied())
            .unwrap_or(PooledStats {
                min: f64::NAN,
                max: f64::NAN,
                mean: f64::NAN,
                harmonic_mean: f64::NAN,
                p5: f64::NAN,
                p10: f64::NAN,
            });
        let first = state
            .times
            .get(&shot.first_frame)
            .copied()
            .unwrap_or_default();
        let last = state
            .times
            .get(&shot.last_frame)
            .copied()
            .unwrap_or_default();
        let end = match (last.pts, last.duration) {
            (Some(p), Some(d)) => Some(p + d),
            (p, _) => p,
        };
        let b = Self::vmaf_structure("shot")
            .field("index", shot.index as u64)
            .field("first-frame", shot.first_frame as u64)
            .field("last-frame", shot.last_frame as u64)
            .field("frames", shot.frame_count() as u64)
            .field("start", first.pts)
            .field("end", end)
            .field("frames-missing", std::mem::take(&mut state.shot_missing))
            .field("frames-repeated", std::mem::take(&mut state.shot_repeated));
        let b = Self::pooled_fields(b, &stats, state.settings.pool_method);
        let mut out = vec![self.element_message(b.build())];
        let split = state
            .shot_frames
            .iter()
            .position(|f| f.index > shot.last_frame as u64)
            .unwrap_or(state.shot_frames.len());
        let frames: Vec<ScoredFrame> = state.shot_frames.drain(..split).collect();
        let pooled = match state.settings.pool_method {
            PoolMethod::Min => stats.min,
            PoolMethod::Max => stats.max,
            PoolMethod::Mean => stats.mean,
            PoolMethod::HarmonicMean => stats.harmonic_mean,
        };
        let shot_index = state.shots_posted;
        if let Some(alert) = state
            .alerts
            .as_mut()
            .and_then(|m| m.shot(shot_index, pooled, &frames, end.map(|e| e.nseconds())))
        {
            out.extend(self.alert_messages(&alert));
        }
        state.times.retain(|&i, _| i > shot.last_frame);
        state.shots_posted += 1;
        out
    }

    /// The `alert` element message and the GStreamer warning that go with it.
    fn alert_messages(&self, a: &Alert) -> Messages {
        let time = |t: Option<u64>| t.map(gst::ClockTime::from_nseconds);
        let s = Self::vmaf_structure("alert")
            .field("reason", a.kind.name())
            .field("shot", a.shot)
            .field("first-frame", a.first_frame)
            .field("last-frame", a.last_frame)
            .field("start", time(a.start))
            .field("end", time(a.end))
            .field("score", a.score)
            .field("threshold", a.threshold)
            .field("worst-frame", a.worst_frame)
            .field("worst-score", a.worst_score)
            .field("suppressed", a.suppressed)
            .build();
        let text =
            format!(
            "VMAF alert: {} {}..={} of shot {} at {:.3} (threshold {}; worst frame {} at {:.3}){}",
            if a.kind.name() == "shot" { "shot frames" } else { "frames" },
            a.first_frame,
            a.last_frame,
            a.shot,
            a.score,
            a.threshold,
            a.worst_frame,
            a.worst_score,
            if a.suppressed > 0 {
                format!("; {} alerts suppressed before this one", a.suppressed)
            } else {
                String::new()
            }
        );
        gst::warning!(CAT, imp = self, "{text}");
        let warning = gst::message::Warning::builder(gst::StreamError::Failed, &text)
            .src(&*self.obj())
            .build();
        vec![self.element_message(s), warning]
    }

    /// The `gap` message of the gap being collected, if any.
    fn close_gap(&self, state: &mut State) -> Messages {
        let Some(g) = state.gap.take() else {
            return Messages::new();
        };
        state.gaps += 1;
        gst::info!(
            CAT,
            imp = self,
            "gap ({}): {} reference frames unscored before frame {}",
            g.reason,
            g.frames,
            state.next_frame
        );
        let s = Self::vmaf_structure("gap")
            .field("reason", g.reason)
            .field("shot", g.shot)
            .field("before-frame", state.next_frame as u64)
            .field("frames", g.frames)
            .field("start", g.start)
            .field("end", g.end)
            .build();
        vec![self.element_message(s)]
    }

    /// The `align` message for a lock or a change of the offset.
    fn align_message(&self, state: &State, news: AlignNews) -> gst::Message {
        let (reason, detail, e): (&str, &str, Option<Estimate>) = match news {
            AlignNews::Locked(e, why) => ("locked", why, e),
            AlignNews::Changed(e) => ("changed", "re-check at a shot boundary", Some(e)),
        };
        let feeds = state.feeds.as_ref();
        let offset = feeds.and_then(|f| f.offset_ns()).unwrap_or(0);
        let frame_ns = feeds.map_or(DEFAULT_FRAME_NS, |f| f.config.frame_ns).max(1);
        gst::info!(
            CAT,
            imp = self,
            "offset {reason} ({detail}): distorted {offset} ns after the reference ({e:?})"
        );
        let s = Self::vmaf_structure("align")
            .field("offset", offset)
            .field(
                "offset-frames",
                (offset as f64 / frame_ns as f64).round() as i64,
            )
            .field("reason", reason)
            .field("detail", detail)
            .field("found", e.is_some())
            .field("matched", e.map_or(0, |e| e.matched as u64))
            .field("cost", e.map_or(f64::NAN, |e| e.cost))
            .field("distinct", e.is_some_and(|e| e.distinct))
            .build();
        self.element_message(s)
    }

    /// Frame and shot messages for what the scorer completed.
    fn handle_progress(&self, state: &mut State, progress: vmafcuda::scorer::Progress) -> Messages {
        let mut out = Messages::new();
        let subsample = state.settings.subsample.max(1) as usize;
        for f in &progress.frames {
            if !f.index.is_multiple_of(subsample) {
                continue;
            }
            state.pending.push((f.index, f.vmaf()));
            state.all_scores.push(f.vmaf());
            if state.settings.frame_message {
                out.push(self.frame_message(state, f));
            }
            if let Some(monitor) = state.alerts.as_mut() {
                let times = state.times.get(&f.index).copied().unwrap_or_default();
                let frame = ScoredFrame {
                    index: f.index as u64,
                    shot: state.shots_posted,
                    pts: times.pts.map(|t| t.nseconds()),
                    duration: times.duration.map(|t| t.nseconds()),
                    score: f.vmaf(),
                };
                state.shot_frames.push(frame);
                if let Some(alert) = monitor.frame(frame) {
                    out.extend(self.alert_messages(&alert));
                }
            }
        }
        for s in &progress.shots {
            gst::debug!(
                CAT,
                imp = self,
                "shot {} ended: frames {}..={}",
                s.index,
                s.first_frame,
                s.last_frame
            );
            out.extend(self.shot_message(state, s));
        }
        if !progress.shots.is_empty() {
            // The offset between the feeds is re-checked at every shot boundary.
            if let Some(news) = state.feeds.as_mut().and_then(|f| f.recheck()) {
                out.push(self.align_message(state, news));
            }
        }
        out
    }

    /// A shot starts at the next frame.
    fn boundary(&self, state: &mut State, why: &str) -> Messages {
        if let Some(d) = state.detector.as_mut() {
            d.reset();
        }
        let Some(scorer) = state.scorer.as_mut() else {
            return Messages::new();
        };
        gst::debug!(
            CAT,
            imp = self,
            "shot boundary before frame {} ({why})",
            state.next_frame
        );
        let progress = scorer.end_shot();
        self.handle_progress(state, progress)
    }

    fn post(&self, messages: Messages) {
        for m in messages {
            let _ = self.obj().post_message(m);
        }
    }

    fn pad_format(caps: &gst::CapsRef) -> Result<PadFormat, String> {
        let info = gst_video::VideoInfo::from_caps(caps)
            .map_err(|e| format!("cannot parse caps {caps}: {e}"))?;
        let layout = Layout::of(info.format())
            .ok_or_else(|| format!("unsupported format {:?}", info.format()))?;
        Ok(PadFormat {
            info,
            layout,
            cuda: cuda_ffi::caps_are_cuda(caps),
        })
    }

    fn check_formats(state: &State) -> Result<(), String> {
        let (Some(r), Some(d)) = (&state.ref_format, &state.dist_format) else {
            return Ok(());
        };
        if (r.info.width(), r.info.height()) != (d.info.width(), d.info.height()) {
            return Err(format!(
                "ref_sink and dist_sink differ in frame size: reference {}, distorted {}",
                r.describe(),
                d.describe()
            ));
        }
        if r.layout.bpc != d.layout.bpc {
            return Err(format!(
                "ref_sink and dist_sink differ in bit depth: reference {}, distorted {}",
                r.describe(),
                d.describe()
            ));
        }
        Ok(())
    }

    /// The scorer for the negotiated formats, built on the first frame pair.
    fn ensure_scorer(&self, state: &mut State) -> Result<(), gst::ErrorMessage> {
        if state.scorer.is_some() {
            return Ok(());
        }
        let (Some(r), Some(_)) = (&state.ref_format, &state.dist_format) else {
            return Err(gst::error_msg!(
                gst::CoreError::Negotiation,
                ("buffers arrived before caps on ref_sink and dist_sink")
            ));
        };
        let any_cuda_caps = r.cuda || state.dist_format.as_ref().is_some_and(|d| d.cuda);
        let geometry = Geometry {
            width: r.info.width() as usize,
            height: r.info.height() as usize,
            bpc: r.layout.bpc,
        };
        let settings = state.settings.clone();
        let model = state
            .model
            .clone()
            .ok_or_else(|| gst::error_msg!(gst::LibraryError::Init, ("no model loaded")))?;
        let mut config = ScorerConfig::new(model);
        config.predict = PredictOptions {
            enable_transform: settings.enable_transform,
            disable_clip: settings.disable_clip,
        };
        config.psnr = settings.psnr;
        config.shot_starts = state.boundaries.clone();
        let keep = settings.results_filename.is_some() || settings.report_filename.is_some();
        config.keep_frames = keep;
        config.keep_shots = keep;
        // A GPU failure mid-stream moves the run to the CPU unless backend=cuda is forced.
        config.cpu_fallback = settings.backend != Backend::Cuda;

        let request = self.backend_request(&settings, any_cuda_caps);
        let forced = settings.backend == Backend::Cuda;
        let scorer = match Scorer::with_backend(config.clone(), geometry, request) {
            Ok(s) => s,
            Err(e) if !forced && settings.backend != Backend::Cpu => {
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Init,
                    ("CUDA unavailable, scoring on the CPU"),
                    ["{}", e]
                );
                Scorer::new(config, geometry)
                    .map_err(|e| gst::error_msg!(gst::LibraryError::Init, ("cannot score: {e}")))?
            }
            Err(e) => {
                return Err(gst::error_msg!(
                    gst::LibraryError::Init,
                    ("cannot score with backend {:?}: {e}", settings.backend)
                ))
            }
        };
        if settings.backend == Backend::Auto
            && scorer.backend() == BackendKind::Cpu
            && cuda::probe().is_ok()
        {
            // A GPU is there but could not be used (out of memory, say): say so.
            gst::element_imp_warning!(
                self,
                gst::LibraryError::Init,
                ("CUDA unavailable, scoring on the CPU"),
                ["{}", scorer.backend_note().unwrap_or("no reason given")]
            );
        }
        gst::info!(
            CAT,
            imp = self,
            "scoring {}x{} {}-bit on {}{}",
            geometry.width,
            geometry.height,
            geometry.bpc,
            scorer.backend().name(),
            scorer
                .backend_note()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
        if settings.shot_detection == ShotDetection::Auto {
            state.detector = Some(ShotDetector::new(ShotDetectorConfig {
                threshold: settings.shot_threshold,
                min_shot_length: settings.min_shot_length as usize,
            }));
        }
        state.scorer = Some(scorer);
        Ok(())
    }

    fn backend_request(&self, settings: &Settings, cuda_caps: bool) -> BackendRequest {
        if settings.backend == Backend::Cpu {
            return BackendRequest::Cpu;
        }
        let device = settings.cuda_device_id.max(0);
        if cuda_caps {
            // Frames already live in GStreamer's CUDA context: work in that context.
            if let (Some(api), Some(ctx)) = (Api::get(), lock(&self.cuda_context).clone()) {
                let raw = api.context_handle(&ctx) as cuda::sys::CUcontext;
                if !raw.is_null() {
                    // SAFETY: `raw` is the CUcontext of a live GstCudaContext; we keep that
                    // object (`cuda_context`) alive for as long as the element runs, and the
                    // engine only borrows it (push/pop, never destroyed).
                    match unsafe { cuda::Context::borrow(raw) } {
                        Ok(c) => return BackendRequest::CudaContext(c),
                        Err(e) => gst::warning!(
                            CAT,
                            imp = self,
                            "cannot borrow GStreamer's CUDA context: {e}"
                        ),
                    }
                }
            }
        }
        match settings.backend {
            Backend::Cuda => BackendRequest::Cuda { device },
            _ => BackendRequest::Auto,
        }
    }

    /// Device pictures of a mapped CUDA frame, if the engine can read its layout in place.
    fn device_picture(
        frame: &CudaMappedFrame,
        format: &PadFormat,
        psnr: bool,
    ) -> Option<cuda::DevicePicture> {
        let layout = format.layout;
        // P010's MSB-aligned samples are shifted and NV12/P010's interleaved chroma is split
        // by the kernels as they load them: every layout is read in place.
        let (w, h) = (format.info.width() as usize, format.info.height() as usize);
        let plane = |i: usize, width: usize, height: usize| {
            frame.plane(i).map(|(ptr, pitch)| cuda::DevicePlane {
                ptr,
                pitch,
                width,
                height,
                bytes_per_sample: layout.bytes,
                shift: layout.shift,
            })
        };
        let chroma = match (psnr, layout.chroma, layout.chroma_size(w, h)) {
            (false, _, _) | (true, ChromaLayout::None, _) | (true, _, None) => None,
            (true, ChromaLayout::Planar { .. }, Some((cw, ch))) => {
                Some(cuda::DeviceChroma::Planar([
                    plane(1, cw, ch)?,
                    plane(2, cw, ch)?,
                ]))
            }
            // One plane of CbCr pairs, `cw` pairs per row.
            (true, ChromaLayout::Interleaved, Some((cw, ch))) => {
                Some(cuda::DeviceChroma::Interleaved(plane(1, cw, ch)?))
            }
        };
        Some(cuda::DevicePicture {
            luma: plane(0, w, h)?,
            chroma,
            bpc: layout.bpc,
        })
    }

    /// Tries the zero-copy path; None when it does not apply (the caller uses the host path).
    fn push_device(
        &self,
        state: &mut State,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Option<Result<vmafcuda::scorer::Progress, vmafcuda::Error>> {
        match self.try_push_device(state, reference, distorted) {
            Ok(r) => Some(r),
            Err(why) => {
                if !state.host_path_logged {
                    state.host_path_logged = true;
                    gst::info!(CAT, imp = self, "frames go through system memory: {why}");
                }
                None
            }
        }
    }

    /// The zero-copy path, or why it does not apply.
    fn try_push_device(
        &self,
        state: &mut State,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Result<Result<vmafcuda::scorer::Progress, vmafcuda::Error>, &'static str> {
        if state.device_disabled {
            return Err("the CUDA path failed earlier");
        }
        let (rf, df) = match (state.ref_format.clone(), state.dist_format.clone()) {
            (Some(r), Some(d)) => (r, d),
            _ => return Err("caps not negotiated"),
        };
        if !(rf.cuda && df.cuda) {
            return Err("the pads did not negotiate memory:CUDAMemory on both inputs");
        }
        let scorer = state.scorer.as_mut().ok_or("no scorer")?;
        if scorer.backend() != BackendKind::Cuda {
            return Err("the scorer runs on the CPU");
        }
        let api = Api::get().ok_or("libgstcuda not loaded")?;
        let ours = lock(&self.cuda_context)
            .as_ref()
            .ok_or("no shared GstCudaContext")?
            .as_ptr() as *mut std::ffi::c_void;
        // Only memory of the GstCudaContext the scorer borrowed can be read in place.
        for buf in [reference, distorted] {
            if buf.n_memory() != 1 {
                return Err("a buffer with several memories");
            }
            match api.memory_context_ptr(buf.peek_memory(0)) {
                None => return Err("a buffer that is not GstCudaMemory"),
                Some(c) if c != ours => {
                    return Err("CUDA memory of another GstCudaContext than ours")
                }
                Some(_) => {}
            }
        }
        let psnr = state.settings.psnr;
        let rmap = CudaMappedFrame::map(reference, &rf.info)
            .ok_or("mapping the reference with GST_MAP_CUDA failed")?;
        let dmap = CudaMappedFrame::map(distorted, &df.info)
            .ok_or("mapping the distorted with GST_MAP_CUDA failed")?;
        let rp = Self::device_picture(&rmap, &rf, psnr)
            .ok_or("reference planes missing from the CUDA mapping")?;
        let dp = Self::device_picture(&dmap, &df, psnr)
            .ok_or("distorted planes missing from the CUDA mapping")?;
        let interleaved =
            |p: &cuda::DevicePicture| matches!(p.chroma, Some(cuda::DeviceChroma::Interleaved(_)));
        if rp.chroma.is_some() && dp.chroma.is_some() && interleaved(&rp) != interleaved(&dp) {
            return Err("the pads' chroma layouts differ (NV12/P010 and planar) with psnr");
        }
        // SAFETY: both pictures point into CUDA memory mapped above (GST_MAP_CUDA) in the
        // GstCudaContext whose CUcontext the scorer borrowed (checked above); the mappings
        // (`rmap`, `dmap`) outlive the call, and push_device returns only after the GPU has
        // finished reading them, so unmapping afterwards is safe.
        let result = unsafe { scorer.push_device(&rp, &dp) };
        drop((rmap, dmap));
        Ok(result)
    }

    /// Scores one frame pair.
    fn score_pair(
        &self,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Result<Messages, gst::ErrorMessage> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        self.ensure_scorer(state)?;
        let mut messages = Messages::new();
        let index = state.next_frame;
        state.times.insert(
            index,
            FrameTimes {
                pts: reference.pts(),
                duration: reference.duration(),
            },
        );
        if state.settings.report_filename.is_some() {
            state.report_pts.push(reference.pts());
        }
        let explicit_start = state.boundaries.binary_search(&index).is_ok();
        let rf = state
            .ref_format
            .clone()
            .ok_or_else(|| gst::error_msg!(gst::CoreError::Negotiation, ("no reference caps")))?;
        let df = state
            .dist_format
            .clone()
            .ok_or_else(|| gst::error_msg!(gst::CoreError::Negotiation, ("no distorted caps")))?;

        // Built-in detector: it reads the reference luma in system memory.
        if let Some(detector) = state.detector.as_mut() {
            if explicit_start {
                detector.reset();
            }
            let frame = map_readable(reference, &rf, "reference", index)?;
            let pic = HostPicture::new(&frame, false).map_err(|e| {
                gst::error_msg!(gst::StreamError::Format, ("frame {index}, reference: {e}"))
            })?;
            if detector.push(&pic.luma()) && !explicit_start {
                if let Some(c) = detector.last_change() {
                    gst::info!(CAT, imp = self, "cut detected at frame {index}: {c:?}");
                }
                let m = self.boundary_keep_detector(state);
                messages.extend(m);
            }
        }

        let in_place_before = state.frames_in_place;
        let progress = match self.push_device(state, reference, distorted) {
            Some(Ok(p)) => {
                state.frames_in_place += 1;
                Some(p)
            }
            Some(Err(vmafcuda::Error::ReplayOnHost { from, .. })) => {
                // The scorer moved to the CPU and lost these frames on the GPU: they come
                // again from system memory (this one just below).
                let again = state.fallback.replay(from, index).map_err(|e| {
                    gst::error_msg!(gst::LibraryError::Failed, ("frame {index}: {e}"))
                })?;
                for (r, d) in again {
                    let p = self.push_host(state, &r, &d, &rf, &df, from)?;
                    messages.extend(self.handle_progress(state, p));
                }
                None
            }
            Some(Err(e)) => {
                if state.settings.backend == Backend::Cuda {
                    return Err(gst::error_msg!(
                        gst::LibraryError::Failed,
                        ("frame {index}: CUDA scoring failed: {e}")
                    ));
                }
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Failed,
                    ("CUDA frames could not be scored in place; reading them in system memory"),
                    ["frame {index}: {e}"]
                );
                state.device_disabled = true;
                None
            }
            None => None,
        };
        let progress = match progress {
            Some(p) => p,
            None => self.push_host(state, reference, distorted, &rf, &df, index)?,
        };
        if let Some(scorer) = state.scorer.as_ref() {
            let in_place = state.frames_in_place > in_place_before;
            state
                .fallback
                .scored(scorer, in_place, index, reference, distorted);
            if let Some(reason) = state.fallback.warning(scorer) {
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Failed,
                    ("CUDA failed mid-stream; scoring continues on the CPU"),
                    ["frame {index}: {reason}"]
                );
            }
        }
        state.next_frame += 1;
        messages.extend(self.handle_progress(state, progress));
        Ok(messages)
    }

    /// Scores frame `index` from system memory (CUDA memory is mapped for reading there).
    fn push_host(
        &self,
        state: &mut State,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
        rf: &PadFormat,
        df: &PadFormat,
        index: usize,
    ) -> Result<vmafcuda::scorer::Progress, gst::ErrorMessage> {
        let psnr = state.settings.psnr;
        let rframe = map_readable(reference, rf, "reference", index)?;
        let dframe = map_readable(distorted, df, "distorted", index)?;
        let rp = HostPicture::new(&rframe, psnr).map_err(|e| {
            gst::error_msg!(gst::StreamError::Format, ("frame {index}, reference: {e}"))
        })?;
        let dp = HostPicture::new(&dframe, psnr).map_err(|e| {
            gst::error_msg!(gst::StreamError::Format, ("frame {index}, distorted: {e}"))
        })?;
        let scorer = state
            .scorer
            .as_mut()
            .ok_or_else(|| gst::error_msg!(gst::LibraryError::Failed, ("scorer missing")))?;
        let p = scorer
            .push(&rp.picture(), &dp.picture())
            .map_err(|e| gst::error_msg!(gst::LibraryError::Failed, ("{e}")))?;
        state.frames_system_memory += 1;
        Ok(p)
    }

    /// A boundary found by the detector itself (which has already started its new shot).
    fn boundary_keep_detector(&self, state: &mut State) -> Messages {
        let Some(scorer) = state.scorer.as_mut() else {
            return Messages::new();
        };
        let progress = scorer.end_shot();
        self.handle_progress(state, progress)
    }

    /// Ends the last shot, posts the pooled result and writes the results file. Once per run.
    fn finish(&self) -> Result<(), gst::ErrorMessage> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        if state.finished {
            return Ok(());
        }
        state.finished = true;
        let Some(mut scorer) = state.scorer.take() else {
            return Ok(());
        };
        let progress = scorer.end_shot();
        let mut messages = self.handle_progress(state, progress);
        let report = scorer.finish();
        if let Some(stats) = PooledStats::from_values(&state.all_scores) {
            let b = Self::vmaf_structure("pooled")
                .field("frames", state.all_scores.len() as u64)
                .field("shots", state.shots_posted)
                .field("frames-in-place", state.frames_in_place)
                .field("frames-system-memory", state.frames_system_memory)
                .field("frames-missing", state.frames_missing)
                .field("frames-repeated", state.frames_repeated)
                .field("frames-extra", state.frames_extra)
                .field("gaps", state.gaps)
                .field("alerts", state.alerts.as_ref().map_or(0, |a| a.posted))
                .field(
                    "alerts-suppressed",
                    state.alerts.as_ref().map_or(0, |a| a.suppressed_total),
                )
                .field(
                    "align-offset",
                    state
                        .feeds
                        .as_ref()
                        .and_then(|f| f.offset_ns())
                        .unwrap_or(0),
                );
            gst::info!(
                CAT,
                imp = self,
                "{} frame pairs read in place from CUDA memory, {} from system memory",
                state.frames_in_place,
                state.frames_system_memory
            );
            let b = Self::pooled_fields(b, &stats, state.settings.pool_method);
            messages.push(self.element_message(b.build()));
        }
        let settings = state.settings.clone();
        let page_inputs = settings.report_filename.as_ref().map(|_| PageInputs {
            reference: state
                .ref_format
                .as_ref()
                .map_or_else(String::new, |f| f.describe()),
            distorted: state
                .dist_format
                .as_ref()
                .map_or_else(String::new, |f| f.describe()),
            frame_rate: state.ref_format.as_ref().map(|f| f.info.fps()),
            pts: std::mem::take(&mut state.report_pts),
            cuda_device: settings.cuda_device_id,
        });
        drop(guard);
        self.post(messages);
        if let (Some(path), Some(inputs)) = (settings.report_filename.as_deref(), page_inputs) {
            report_page::write(&report, path, &inputs).map_err(|e| {
                gst::error_msg!(gst::ResourceError::OpenWrite, ("report-filename: {e}"))
            })?;
        }
        if let Some(path) = settings.results_filename.as_deref() {
            self.write_results(report, path, &settings)?;
        }
        Ok(())
    }

    fn write_results(
        &self,
        mut report: Report,
        path: &str,
        settings: &Settings,
    ) -> Result<(), gst::ErrorMessage> {
        let n = settings.subsample.max(1) as usize;
        if n > 1 {
            // libvmaf writes and pools only every n-th frame.
            report.frames.retain(|f| f.index.is_multiple_of(n));
            report.pooled = Report::pool_frames(&report.frames);
            for s in &mut report.shots {
                let frames: Vec<FrameResult> = report
                    .frames
                    .iter()
                    .filter(|f| (s.first_frame..=s.last_frame).contains(&f.index))
                    .cloned()
                    .collect();
                s.pooled = Report::pool_frames(&frames);
            }
        }
        let format = match settings.results_format {
            ResultsFormat::Csv => vmafcuda::report::Format::Csv,
            ResultsFormat::Xml => vmafcuda::report::Format::Xml,
            ResultsFormat::Json | ResultsFormat::None => vmafcuda::report::Format::Json,
        };
        // Upstream's element formats the name with the stream index (one stream here).
        let path = path.replace("%d", "0");
        std::fs::write(&path, report.render(format)).map_err(|e| {
            gst::error_msg!(
                gst::ResourceError::OpenWrite,
                ("cannot write results file {path}: {e}")
            )
        })
    }

    fn on_caps(&self, pad: &gst_base::AggregatorPad, caps: &gst::CapsRef) -> bool {
        gst::info!(CAT, imp = self, "{}: caps {caps}", pad.name());
        let format = match Self::pad_format(caps) {
            Ok(f) => f,
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Format, ("{}: {e}", pad.name()));
                return false;
            }
        };
        if format.cuda && lock(&self.settings).backend != Backend::Cpu {
            self.ensure_cuda_context();
        }
        let mut state = lock(&self.state);
        let is_ref = pad == &self.ref_pad;
        if let Some(scorer) = &state.scorer {
            let g = scorer.geometry();
            if (g.width, g.height, g.bpc)
                != (
                    format.info.width() as usize,
                    format.info.height() as usize,
                    format.layout.bpc,
                )
            {
                drop(state);
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Format,
                    (
                        "{}: caps changed mid-stream to {}",
                        pad.name(),
                        format.describe()
                    )
                );
                return false;
            }
        }
        if is_ref {
            state.ref_format = Some(format);
        } else {
            state.dist_format = Some(format);
        }
        if let Err(e) = Self::check_formats(&state) {
            drop(state);
            gst::element_imp_error!(self, gst::StreamError::Format, ("{e}"));
            return false;
        }
        let ref_format = state.ref_format.clone().filter(|_| is_ref);
        drop(state);
        if let Some(f) = ref_format {
            self.on_reference_format(&f);
            self.obj().src_pad().mark_reconfigure();
        }
        true
    }

    fn ensure_cuda_context(&self) {
        let Some(api) = Api::get() else {
            gst::debug!(
                CAT,
                imp = self,
                "no CUDA driver: CUDA memory is read in system memory"
            );
            return;
        };
        if lock(&self.cuda_context).is_some() {
            return;
        }
        // Share the context upstream uses, so its memory can be read in place. libgstcuda's
        // gst_cuda_ensure_element_context does the same steps, but our `set_context` (called
        // back by the bin while it runs) stores into the mutex, not into the pointer it holds,
        // so it would create a second context; ask the neighbours and the bin first ourselves.
        let obj = self.obj();
        let pads: [&gst::Pad; 3] = [
            self.ref_pad.upcast_ref(),
            self.dist_pad.upcast_ref(),
            obj.src_pad().upcast_ref(),
        ];
        for pad in pads {
            let mut q = gst::query::Context::new(cuda_ffi::CUDA_CONTEXT_TYPE);
            if pad.peer_query(&mut q) {
                if let Some(ctx) = q.context().map(|c| c.to_owned()) {
                    self.adopt_context(api, &ctx);
                }
            }
            if lock(&self.cuda_context).is_some() {
                gst::debug!(
                    CAT,
                    imp = self,
                    "CUDA context from the peer of {}",
                    pad.name()
                );
                return;
            }
        }
        // The bin answers with set_context, synchronously, if some element shared one.
        let msg = gst::message::NeedContext::builder(cuda_ffi::CUDA_CONTEXT_TYPE)
            .src(&*obj)
            .build();
        let _ = obj.post_message(msg);
        if lock(&self.cuda_context).is_some() {
            gst::debug!(CAT, imp = self, "CUDA context from the pipeline");
            return;
        }
        let device = lock(&self.settings).cuda_device_id;
        let element = cuda_ffi::as_element(&*obj);
        let mut slot = None;
        if !api.ensure_element_context(&element, device, &mut slot) {
            gst::warning!(CAT, imp = self, "no CUDA context for device {device}");
        }
        let mut guard = lock(&self.cuda_context);
        if guard.is_none() {
            *guard = slot;
        }
    }

    fn adopt_context(&self, api: &Api, context: &gst::Context) {
        let device = lock(&self.settings).cuda_device_id;
        let element = cuda_ffi::as_element(&*self.obj());
        let mut slot = lock(&self.cuda_context).clone();
        api.handle_set_context(&element, context, device, &mut slot);
        *lock(&self.cuda_context) = slot;
    }

    fn answer_context_query(&self, query: &mut gst::QueryRef) -> bool {
        if let gst::QueryViewMut::Context(q) = query.view_mut() {
            if q.context_type() != cuda_ffi::CUDA_CONTEXT_TYPE {
                return false;
            }
        } else {
            return false;
        }
        let (Some(api), Some(ctx)) = (Api::get(), lock(&self.cuda_context).clone()) else {
            return false;
        };
        api.handle_context_query(&cuda_ffi::as_element(&*self.obj()), query, &ctx)
    }
}

/// Runs a vfunc body, turning a panic into an element error (no panic crosses into C).
fn catch<R>(imp: &VmafCuda, fallback: R, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            gst::element_imp_error!(imp, gst::CoreError::Failed, ("internal error (panic)"));
            fallback
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for VmafCuda {
    const NAME: &'static str = "GstVmafCuda";
    type Type = super::VmafCuda;
    type ParentType = gst_base::Aggregator;

    fn with_class(klass: &Self::Class) -> Self {
        let pad = |name: &str| {
            let templ = klass
                .pad_template(name)
                .expect("pad templates are registered in pad_templates()");
            gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ).build()
        };
        VmafCuda {
            ref_pad: pad("ref_sink"),
            dist_pad: pad("dist_sink"),
            settings: Mutex::new(Settings::default()),
            state: Mutex::new(State::default()),
            cuda_context: Mutex::new(None),
        }
    }
}

impl ObjectImpl for VmafCuda {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let d = Settings::default();
            vec![
                glib::ParamSpecString::builder("model-filename")
                    .nick("Model")
                    .blurb("Built-in model name (vmaf_v0.6.1, vmaf_4k_v0.6.1, vmaf_v0.6.1neg) or path of a libvmaf JSON model")
                    .default_value(Some(DEFAULT_MODEL))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("disable-clip")
                    .nick("Disable clip")
                    .blurb("Do not clip scores to the model's range")
                    .default_value(d.disable_clip)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("enable-transform")
                    .nick("Enable transform")
                    .blurb("Apply the model's score transform")
                    .default_value(d.enable_transform)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("psnr")
                    .nick("PSNR")
                    .blurb("Also compute psnr_y, psnr_cb, psnr_cr (as libvmaf's psnr feature)")
                    .default_value(d.psnr)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("pool-method", d.pool_method)
                    .nick("Pool method")
                    .blurb("How the 'score' field of shot and pooled messages pools frame scores (all statistics are always posted too)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("subsample")
                    .nick("Subsample")
                    .blurb("Report and pool one frame in N (motion still uses every frame, as in libvmaf)")
                    .minimum(1)
                    .maximum(128)
                    .default_value(d.subsample)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("frame-message")
                    .nick("Frame messages")
                    .blurb("Post a VMAF element message (type=frame) for every scored frame")
                    .default_value(d.frame_message)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("results-filename")
                    .nick("Results file")
                    .blurb("Write per-frame, per-shot and pooled results to this file at EOS (libvmaf layout; %d is replaced by the stream index 0)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("results-format", d.results_format)
                    .nick("Results format")
                    .blurb("Format of results-filename (none: JSON)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("report-filename")
                    .nick("HTML report file")
                    .blurb("Write a self-contained HTML report (VMAF chart with shot bands, worst frames, pooled tables) to this file at EOS; %d is replaced by the stream index 0")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("shot-detection", d.shot_detection)
                    .nick("Shot detection")
                    .blurb("Boundary sources beyond shot-boundaries, vmafcuda-shot-boundary events, new segments and stream-start: none; events (+ force-key-unit events, as sent by scenechange); auto (+ the built-in cut detector on the reference)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecDouble::builder("shot-threshold")
                    .nick("Shot threshold")
                    .blurb("Change score (0..1) above which the built-in detector may cut (it must also stand out from the shot's recent frames)")
                    .minimum(0.0)
                    .maximum(1.0)
                    .default_value(d.shot_threshold)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("min-shot-length")
                    .nick("Minimum shot length")
                    .blurb("Frames a shot must have before the built-in detector may cut again")
                    .minimum(1)
                    .default_value(d.min_shot_length)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("shot-boundaries")
                    .nick("Shot boundaries")
                    .blurb("First frame of each shot (0-based frame indices, comma separated, e.g. 0,120,300)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("backend", d.backend)
                    .nick("Backend")
                    .blurb("Where features are computed: auto (CUDA if usable, else CPU), cuda (error if unusable), cpu")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt::builder("cuda-device-id")
                    .nick("CUDA device")
                    .blurb("CUDA device ordinal (-1: the device of the upstream CUDA context, else 0)")
                    .minimum(-1)
                    .default_value(d.cuda_device_id)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("pairing", d.pairing)
                    .nick("Pairing")
                    .blurb("How reference and distorted frames are matched: timestamps (by running time, align-offset and pairing-tolerance; a frame missing on one side is reported as a gap, never paired with the wrong one; untimed frames in arrival order) or arrival (n-th with n-th)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt64::builder("pairing-tolerance")
                    .nick("Pairing tolerance")
                    .blurb("Largest difference of running times (ns) at which two frames still match (0: just under half a reference frame)")
                    .default_value(d.pairing_tolerance)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("align", d.align)
                    .nick("Align")
                    .blurb("none: the distorted feed is align-offset after the reference; auto: find the offset (within align-window, either direction) from luma fingerprints, lock it, post a VMAF align message, re-check it at every shot boundary")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt64::builder("align-offset")
                    .nick("Align offset")
                    .blurb("Running time of the distorted feed minus the reference's (ns; positive: the distorted feed is late). With align=auto, the fallback when no offset matches")
                    .default_value(d.align_offset)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt64::builder("align-window")
                    .nick("Align window")
                    .blurb("Largest offset (ns, either direction) align=auto searches; frames are held about this long plus 1 s before the first lock")
                    .default_value(d.align_window)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt64::builder("stall-timeout")
                    .nick("Stall timeout")
                    .blurb("How long (ns of reference running time) reference frames wait past their partner's due time for a silent distorted feed before the shot is ended and they pass through unscored as a gap")
                    .default_value(d.stall_timeout)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecDouble::builder("alert-threshold")
                    .nick("Alert threshold")
                    .blurb("Post a VMAF alert message and a warning when alert-frames consecutive frames, or a shot's pooled score (unless alert-shot-threshold is set), fall below this VMAF (0: off)")
                    .minimum(0.0)
                    .maximum(1000.0)
                    .default_value(d.alert_threshold)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecDouble::builder("alert-shot-threshold")
                    .nick("Shot alert threshold")
                    .blurb("Pooled shot score (pool-method) below which a shot raises an alert (0: alert-threshold)")
                    .minimum(0.0)
                    .maximum(1000.0)
                    .default_value(d.alert_shot_threshold)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("alert-frames")
                    .nick("Alert frames")
                    .blurb("Consecutive frames below alert-threshold that raise an alert (once per run)")
                    .minimum(1)
                    .default_value(d.alert_frames)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt64::builder("alert-interval")
                    .nick("Alert interval")
                    .blurb("Least stream time (ns) between two alerts; alerts in between are suppressed and counted in the next one (0: no limit)")
                    .default_value(d.alert_interval)
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = lock(&self.settings);
        // Types are checked by GObject against the param specs above.
        match pspec.name() {
            "model-filename" => {
                s.model_filename = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| DEFAULT_MODEL.into())
            }
            "disable-clip" => s.disable_clip = value.get().unwrap_or(false),
            "enable-transform" => s.enable_transform = value.get().unwrap_or(false),
            "psnr" => s.psnr = value.get().unwrap_or(false),
            "pool-method" => s.pool_method = value.get().unwrap_or_default(),
            "subsample" => s.subsample = value.get().unwrap_or(1),
            "frame-message" => s.frame_message = value.get().unwrap_or(false),
            "results-filename" => s.results_filename = value.get().ok().flatten(),
            "results-format" => s.results_format = value.get().unwrap_or_default(),
            "report-filename" => s.report_filename = value.get().ok().flatten(),
            "shot-detection" => s.shot_detection = value.get().unwrap_or_default(),
            "shot-threshold" => s.shot_threshold = value.get().unwrap_or(s.shot_threshold),
            "min-shot-length" => s.min_shot_length = value.get().unwrap_or(s.min_shot_length),
            "shot-boundaries" => {
                let text: String = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                if let Err(e) = parse_boundaries(&text) {
                    gst::warning!(CAT, imp = self, "{e} (checked again at start)");
                }
                s.shot_boundaries = text;
            }
            "backend" => s.backend = value.get().unwrap_or_default(),
            "cuda-device-id" => s.cuda_device_id = value.get().unwrap_or(-1),
            "pairing" => s.pairing = value.get().unwrap_or_default(),
            "pairing-tolerance" => s.pairing_tolerance = value.get().unwrap_or(0),
            "align" => s.align = value.get().unwrap_or_default(),
            "align-offset" => s.align_offset = value.get().unwrap_or(0),
            "align-window" => s.align_window = value.get().unwrap_or(s.align_window),
            "stall-timeout" => s.stall_timeout = value.get().unwrap_or(s.stall_timeout),
            "alert-threshold" => s.alert_threshold = value.get().unwrap_or(0.0),
            "alert-shot-threshold" => s.alert_shot_threshold = value.get().unwrap_or(0.0),
            "alert-frames" => s.alert_frames = value.get().unwrap_or(1),
            "alert-interval" => s.alert_interval = value.get().unwrap_or(s.alert_interval),
            other => gst::warning!(CAT, imp = self, "unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = lock(&self.settings);
        match pspec.name() {
            "model-filename" => s.model_filename.to_value(),
            "disable-clip" => s.disable_clip.to_value(),
            "enable-transform" => s.enable_transform.to_value(),
            "psnr" => s.psnr.to_value(),
            "pool-method" => s.pool_method.to_value(),
            "subsample" => s.subsample.to_value(),
            "frame-message" => s.frame_message.to_value(),
            "results-filename" => s.results_filename.to_value(),
            "results-format" => s.results_format.to_value(),
            "report-filename" => s.report_filename.to_value(),
            "shot-detection" => s.shot_detection.to_value(),
            "shot-threshold" => s.shot_threshold.to_value(),
            "min-shot-length" => s.min_shot_length.to_value(),
            "shot-boundaries" => s.shot_boundaries.to_value(),
            "backend" => s.backend.to_value(),
            "cuda-device-id" => s.cuda_device_id.to_value(),
            "pairing" => s.pairing.to_value(),
            "pairing-tolerance" => s.pairing_tolerance.to_value(),
            "align" => s.align.to_value(),
            "align-offset" => s.align_offset.to_value(),
            "align-window" => s.align_window.to_value(),
            "stall-timeout" => s.stall_timeout.to_value(),
            "alert-threshold" => s.alert_threshold.to_value(),
            "alert-shot-threshold" => s.alert_shot_threshold.to_value(),
            "alert-frames" => s.alert_frames.to_value(),
            "alert-interval" => s.alert_interval.to_value(),
            _ => pspec.default_value().clone(),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        // Adding our own always pads cannot fail: the names are unique.
        let _ = obj.add_pad(&self.ref_pad);
        let _ = obj.add_pad(&self.dist_pad);
    }
}

impl GstObjectImpl for VmafCuda {}

impl ElementImpl for VmafCuda {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "VMAF (CUDA, per shot)",
                "Filter/Analyzer/Video",
                "Netflix VMAF of dist_sink against ref_sink, bit-exact with libvmaf 3.2.0, \
                 scored per shot on CUDA (zero-copy from CUDA memory) or the CPU; \
                 results as VMAF element messages and a libvmaf-layout results file. \
                 Bus: element messages named VMAF with type=frame (with frame-message: index, \
                 shot, timestamp, duration, score, one field per feature), type=shot (index, \
                 first-frame, last-frame, frames, start, end, score, mean, harmonic-mean, min, \
                 max, p5) and type=pooled at EOS (the same statistics, frames, shots, \
                 frames-in-place, frames-system-memory). Shots start at shot-boundaries, at \
                 vmafcuda-shot-boundary custom downstream events, new segments, stream-start, and \
                 with shot-detection=events|auto at force-key-unit events or detected cuts",
                "vmafcuda developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let mut caps = gst_video::VideoCapsBuilder::new()
                .features([cuda_ffi::CAPS_FEATURE_MEMORY_CUDA_MEMORY])
                .format_list(FORMATS.iter().copied())
                .build();
            caps.merge(
                gst_video::VideoCapsBuilder::new()
                    .format_list(FORMATS.iter().copied())
                    .build(),
            );
            let templ = |name: &str, dir| {
                gst::PadTemplate::with_gtype(
                    name,
                    dir,
                    gst::PadPresence::Always,
                    &caps,
                    gst_base::AggregatorPad::static_type(),
                )
                .expect("valid static pad template")
            };
            vec![
                templ("src", gst::PadDirection::Src),
                templ("ref_sink", gst::PadDirection::Sink),
                templ("dist_sink", gst::PadDirection::Sink),
            ]
        });
        TEMPLATES.as_ref()
    }

    fn set_context(&self, context: &gst::Context) {
        if let Some(api) = Api::get() {
            self.adopt_context(api, context);
        }
        self.parent_set_context(context)
    }
}

impl AggregatorImpl for VmafCuda {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        catch(
            self,
            Err(gst::error_msg!(gst::CoreError::Failed, ("panic in start"))),
            || {
                let settings = self.settings();
                let boundaries = parse_boundaries(&settings.shot_boundaries)
                    .map_err(|e| gst::error_msg!(gst::ResourceError::Settings, ("{e}")))?;
                let name = settings.model_filename.as_str();
                let model = Model::builtin(name)
                    .or_else(|builtin_err| {
                        if std::path::Path::new(name).exists() {
                            Model::from_json_file(name).map_err(|e| e.to_string())
                        } else {
                            Err(builtin_err.to_string())
                        }
                    })
                    .map_err(|e| {
                        gst::error_msg!(
                            gst::ResourceError::NotFound,
                            ("cannot load model {name:?}: {e}")
                        )
                    })?;
                let mut state = lock(&self.state);
                let (rf, df) = (state.ref_format.take(), state.dist_format.take());
                let frame_ns = rf.as_ref().map_or(DEFAULT_FRAME_NS, Self::frame_ns);
                let feeds = Feeds::new(settings.feed_config(frame_ns));
                let alerts = AlertMonitor::new(settings.alert_config());
                *state = State {
                    feeds: Some(feeds),
                    alerts: alerts.enabled().then_some(alerts),
                    settings,
                    boundaries,
                    model: Some(model),
                    ref_format: rf,
                    dist_format: df,
                    ..State::default()
                };
                drop(state);
                self.update_latency();
                Ok(())
            },
        )
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        catch(self, Ok(()), || {
            // A run stopped without EOS still reports what it scored (as upstream's vmaf).
            let r = self.finish();
            *lock(&self.state) = State::default();
            r
        })
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        catch(self, Err(gst::FlowError::Error), || {
            self.pair_and_score(timeout)
        })
    }

    fn sink_event(&self, pad: &gst_base::AggregatorPad, event: gst::Event) -> bool {
        let handled = catch(self, Some(false), || {
            use gst::EventView;
            let is_ref = pad == &self.ref_pad;
            let messages = match event.view() {
                EventView::Caps(c) => {
                    if !self.on_caps(pad, c.caps()) {
                        return Some(false);
                    }
                    Messages::new()
                }
                EventView::StreamStart(_) if is_ref => {
                    self.boundary_before_next(is_ref, "stream-start")
                }
                EventView::Segment(s) if is_ref => {
                    self.obj().update_segment(s.segment());
                    self.boundary_before_next(is_ref, "new segment")
                }
                EventView::CustomDownstream(c)
                    if c.structure()
                        .is_some_and(|s| s.name() == SHOT_BOUNDARY_EVENT) =>
                {
                    let m = self.boundary_before_next(is_ref, "vmafcuda-shot-boundary event");
                    self.post(m);
                    // Addressed to us: consumed.
                    return Some(true);
                }
                _ if gst_video::DownstreamForceKeyUnitEvent::parse(&event).is_ok() => {
                    let mode = lock(&self.state).settings.shot_detection;
                    if mode == ShotDetection::None {
                        Messages::new()
                    } else {
                        self.boundary_before_next(is_ref, "force-key-unit event")
                    }
                }
                _ => Messages::new(),
            };
            self.post(messages);
            None
        });
        match handled {
            Some(result) => result,
            None => self.parent_sink_event(pad, event),
        }
    }

    fn flush(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let messages = catch(self, Messages::new(), || {
            let mut state = lock(&self.state);
            if let Some(f) = state.feeds.as_mut() {
                f.clear();
            }
            let mut m = self.close_gap(&mut state);
            m.extend(self.boundary(&mut state, "flush"));
            m
        });
        self.post(messages);
        self.parent_flush()
    }

    fn next_time(&self) -> Option<gst::ClockTime> {
        catch(self, None, || self.live_deadline())
    }

    fn update_src_caps(&self, _caps: &gst::Caps) -> Result<gst::Caps, gst::FlowError> {
        // The reference passes through unchanged.
        self.ref_pad
            .current_caps()
            .ok_or(gst_base::AGGREGATOR_FLOW_NEED_DATA)
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        if catch(self, false, || self.answer_context_query(query)) {
            return true;
        }
        self.parent_src_query(query)
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        if catch(self, false, || self.answer_context_query(query)) {
            return true;
        }
        self.parent_sink_query(pad, query)
    }
}
