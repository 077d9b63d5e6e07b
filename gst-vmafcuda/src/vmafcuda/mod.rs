//! Element `vmafcuda`: VMAF of a distorted stream against its reference, per frame, per shot
//! and pooled, bit-exact with libvmaf 3.2.0, on CUDA (zero-copy from `memory:CUDAMemory`) or
//! the CPU.
//!
//! # Pads
//! * `ref_sink`, `dist_sink` (always): the reference and distorted streams (paired by running
//!   time, see below).
//!   `video/x-raw` or `video/x-raw(memory:CUDAMemory)`, formats I420, NV12, Y444, I420_10LE,
//!   P010_10LE, GRAY8, GRAY16_LE. Both must have the same size and bit depth.
//! * `src` (always): the reference buffers, passed through.
//!
//! # Shots
//! Each shot is scored as a fresh libvmaf run (motion restarts at 0). A shot starts at:
//! every frame listed in `shot-boundaries`; a `vmafcuda-shot-boundary` custom downstream event
//! (always obeyed); a new segment (after a flush or seek) or stream-start; with
//! `shot-detection=events` or `auto`, an upstream `GstForceKeyUnit` event (what `scenechange`
//! sends); with `auto`, a cut found by the built-in detector on the reference luma
//! ([`vmafcuda::shots`]).
//!
//! `rebuild` says what a boundary does to the engine ([`vmafcuda::Rebuild`]): `full` (default)
//! tears the whole per-shot GPU or CPU engine down and swaps in a new one, built ahead on a
//! thread while the shot before runs (no stall); `reset` resets its state in place. The scores
//! are the same either way.
//!
//! # Memory over months (`pooling`)
//! Per-shot statistics are always exact (a shot's scores are kept until it ends). The
//! whole-stream pool (the `pooled` message, the pooled block of `results-filename`) is kept in
//! one of two ways ([`vmafcuda::pool`]): `exact` keeps every score (8 bytes per frame and
//! metric, 17 MB per day of 25 fps) for exact percentiles; `bounded` keeps constant memory:
//! `min`, `max`, `mean` and `harmonic-mean` are running sums in frame order, bit-identical to
//! `exact`, and `p5`/`p10` come from a histogram of relative resolution `2^-11`, within
//! `2^-12` of the exact value's magnitude (at most 0.0245 VMAF points). `pooling=auto`
//! (default) is `bounded` when a live source is connected (the aggregator reports a latency)
//! and `exact` otherwise (files). `results-filename` is written as frames are scored (spool
//! files `<name>.frames.part` and `<name>.shots.part` beside it, assembled into the file at
//! EOS): it holds no frames in memory in either mode. `report-filename` (the HTML report)
//! needs every frame and shot at EOS: enabling it keeps them all (about 1 kB per frame), so
//! leave it off on a stream that runs for days.
//!
//! # Pairing, alignment, live feeds (broadcast QC)
//! * `pairing=timestamps` (default): the reference frame at running time `t` is matched with the
//!   distorted frame at `t + align-offset`, within `pairing-tolerance` (default: just under half
//!   a reference frame). Where both feeds carry the same timestamps this is the old arrival
//!   order, with the same numbers. A reference frame whose partner never came (a dropped frame)
//!   passes through unscored and is reported in a `gap` message, never paired with the wrong
//!   frame; a distorted frame that matches no reference frame (a repeated timestamp) is counted
//!   (`frames-extra`); a scored distorted frame that is sample-for-sample the previous one while
//!   the reference moved on is counted as repeated (`frames-repeated`). Frames without
//!   timestamps, and `pairing=arrival`, pair in arrival order. Frame indices (`index`,
//!   `shot-boundaries`) count scored pairs.
//! * `align=auto`: the offset is searched within `±align-window` (whole reference frames) by
//!   comparing luma fingerprints (the means of a 4x4 grid of regions, read from at most 64x36
//!   samples per frame: microseconds on the CPU; CUDA frames are mapped into system memory for
//!   it, a download of each frame, so only with `align=auto`). Frames are held until both feeds
//!   cover `align-window` + 1 s, then the offset is locked and an `align` message posted; it is
//!   re-checked at every shot boundary (an `align` message with `reason=changed` if it moved).
//!   `align-offset` sets the offset by hand (`align=none`).
//! * Live: the element reports its own latency (what reference frames wait here: the positive
//!   part of `align-offset` plus the tolerance; with `align=auto`, `align-window` + 1 s + the
//!   tolerance). When the distorted feed goes silent, reference frames wait at most
//!   `stall-timeout` past their partner's due time: then the shot ends and they pass through
//!   unscored as one `stalled` gap; queues stay bounded. Non-live feeds never stall (upstream is
//!   just slower); one buffer per pad is taken per cycle.
//! * Alerts: `alert-frames` consecutive frames below `alert-threshold` (once per run), or a
//!   shot whose pooled score (`pool-method`) is below `alert-shot-threshold` (0: the same as
//!   `alert-threshold`), post an `alert` message and a GStreamer warning; alerts closer than
//!   `alert-interval` of stream time are suppressed and counted in the next one.
//!
//! # Bus messages
//! Element messages with a structure named `VMAF`, field `type` one of:
//! * `frame` (with `frame-message=true`): `index` (frame number, gint as upstream), `shot`,
//!   `timestamp` (PTS), `stream-time`, `running-time` (of the PTS in the reference pad's
//!   segment), `duration`, `score` (VMAF), with `psnr` also `psnr-y` (upstream's name), and
//!   every metric under its libvmaf key (`integer_adm2`, `integer_motion2`, `psnr_y`, ...).
//! * `shot`: `index` (shot number), `first-frame`, `last-frame`, `frames`, `start`
//!   (PTS of the first frame), `end` (PTS of the last frame plus its duration), `score`
//!   (pooled with `pool-method`), `mean`, `harmonic-mean`, `min`, `max`, `p5`,
//!   `frames-missing` (reference frames of the shot without a distorted partner),
//!   `frames-repeated`.
//! * `pooled` (at EOS): `frames`, `shots`, `frames-in-place` (frame pairs read straight from
//!   CUDA memory, no copy of frame data), `frames-system-memory`, `frames-missing`,
//!   `frames-repeated`, `frames-extra`, `gaps`, `alerts`, `alerts-suppressed`, `align-offset`
//!   (ns), and the same statistics over the whole stream; and upstream's fields: `timestamp`,
//!   `stream-time`, `running-time` (the end of the last frame), `duration` (frames times the
//!   reference frame duration), with `psnr` also `psnr-y` (pooled with `pool-method`).
//! * `gap`: reference frames that went out unscored: `reason` (`dropped`, `stalled`,
//!   `leading` = before the distorted feed began), `shot` (open when the gap began),
//!   `before-frame` (index of the next scored frame), `frames`, `start`, `end` (PTS range).
//! * `alert`: `reason` (`frames` or `shot`), `shot`, `first-frame`, `last-frame`, `start`,
//!   `end`, `score` (the shot's pooled score, or the mean of the run), `threshold`,
//!   `worst-frame`, `worst-score`, `suppressed` (alerts held back since the previous one).
//! * `align`: `offset` (ns, distorted minus reference running time), `offset-frames`,
//!   `reason` (`locked`, `changed`), `detail`, `found` (false: nothing matched, `align-offset`
//!   used), `matched`, `cost` (mean fingerprint distance), `distinct` (no other offset matched
//!   nearly as well).
//!
//! All also carry `stream` = 0. [`VmafMessage`] parses them.
//!
//! # Upstream `vmaf` parity
//! Every property of GStreamer's `vmaf` element (gst-plugins-bad 1.28) exists with its name,
//! type, default, range and enum nicks/values, and the upstream message fields (`timestamp`,
//! `stream-time`, `running-time`, `duration` as guint64, `score`, `type`, gint `index`,
//! `psnr-y`) are posted with upstream's types, so an application switches by renaming the
//! element. `phone-model` applies the model's transform (as upstream: the same flag as
//! `enable-transform`). `ssim`, `ms-ssim` and `conf-interval` are not computed here: set to
//! true they post an element warning when the run starts and add no field. `threads` and
//! `log-level` are accepted and change nothing (logging: `GST_DEBUG=vmafcuda:N`).
//!
//! # QC metrics
//! `metrics-file`: the counters and gauges of [`metrics`] (last shot score, alerts, gaps, ...)
//! in Prometheus text format, rewritten after every shot, gap, alert and at EOS.
//!
//! # Report
//! `report-filename`: a self-contained HTML report ([`vmafcuda_html`]: chart with shot bands,
//! worst frames, pooled tables) written at EOS, timed by buffer PTS (else caps `framerate`).

use gst::glib;
use gst::prelude::*;

mod alerts;
mod align;
mod fallback;
mod feeds;
mod imp;
pub mod metrics;
mod pairing;
mod picture;
mod report_page;
mod signature;

pub use picture::FORMATS;

glib::wrapper! {
    pub struct VmafCuda(ObjectSubclass<imp::VmafCuda>)
        @extends gst_base::Aggregator, gst::Element, gst::Object;
}

/// Registers the element with `plugin`.
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "vmafcuda",
        gst::Rank::NONE,
        VmafCuda::static_type(),
    )
}

/// Name of the custom downstream event that declares a shot boundary before the next frame.
pub const SHOT_BOUNDARY_EVENT: &str = "vmafcuda-shot-boundary";

/// A `vmafcuda-shot-boundary` event: send it downstream on either sink pad's stream (or
/// push it into the pad) before the first frame of the new shot.
pub fn shot_boundary_event() -> gst::Event {
    gst::event::CustomDownstream::new(gst::Structure::new_empty(SHOT_BOUNDARY_EVENT))
}

/// How the per-frame scores are pooled into the `score` field (upstream `vmaf` names).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaPoolMethod")]
pub enum PoolMethod {
    #[enum_value(name = "Minimum value", nick = "min")]
    Min = 1,
    #[enum_value(name = "Maximum value", nick = "max")]
    Max = 2,
    #[default]
    #[enum_value(name = "Arithmetic mean", nick = "mean")]
    Mean = 3,
    #[enum_value(name = "Harmonic mean", nick = "harmonic_mean")]
    HarmonicMean = 4,
}

/// Results file format (upstream `vmaf` nicks and values, which are libvmaf's
/// `VmafOutputFormat`, so that numeric settings mean the same on both elements).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaResultsFormat")]
pub enum ResultsFormat {
    #[default]
    #[enum_value(name = "None (JSON when results-filename is set)", nick = "none")]
    None = 0,
    #[enum_value(name = "XML", nick = "xml")]
    Xml = 1,
    #[enum_value(name = "JSON", nick = "json")]
    Json = 2,
    #[enum_value(name = "Comma Separated File (csv)", nick = "csv")]
    Csv = 3,
}

/// `log-level` (upstream `vmaf` nicks and values, libvmaf's `VmafLogLevel`). Upstream sets
/// libvmaf's own log level with it; this element logs through its GStreamer debug category
/// (`GST_DEBUG=vmafcuda:N`), so the value is kept and read back but changes nothing.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaLogLevel")]
pub enum LogLevel {
    #[default]
    #[enum_value(name = "No logging", nick = "none")]
    None = 0,
    #[enum_value(name = "Error", nick = "error")]
    Error = 1,
    #[enum_value(name = "Warning", nick = "warning")]
    Warning = 2,
    #[enum_value(name = "Info", nick = "info")]
    Info = 3,
    #[enum_value(name = "Debug", nick = "debug")]
    Debug = 4,
}

/// Which boundary sources beyond the explicit ones are used.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaShotDetection")]
pub enum ShotDetection {
    #[enum_value(
        name = "Only shot-boundaries, vmafcuda-shot-boundary events, segments, stream-start",
        nick = "none"
    )]
    None = 0,
    #[default]
    #[enum_value(
        name = "Also upstream force-key-unit events (scenechange)",
        nick = "events"
    )]
    Events = 1,
    #[enum_value(
        name = "Also the built-in cut detector on the reference luma",
        nick = "auto"
    )]
    Auto = 2,
}

/// Where the features are computed.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaBackend")]
pub enum Backend {
    #[default]
    #[enum_value(name = "CUDA if a GPU is usable, else CPU", nick = "auto")]
    Auto = 0,
    #[enum_value(name = "CUDA (error if unusable)", nick = "cuda")]
    Cuda = 1,
    #[enum_value(name = "CPU", nick = "cpu")]
    Cpu = 2,
}

/// What a shot boundary does to the scoring engine ([`vmafcuda::Rebuild`]). Scores are the same
/// either way.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaRebuild")]
pub enum Rebuild {
    #[default]
    #[enum_value(
        name = "Tear the whole engine down and build a new one (built ahead, no stall)",
        nick = "full"
    )]
    Full = 0,
    #[enum_value(name = "Reset the engine's state in place", nick = "reset")]
    Reset = 1,
    #[enum_value(
        name = "Full rebuild that also reloads the kernel modules and returns all memory to the driver (slower; for leak checks)",
        nick = "cold"
    )]
    Cold = 2,
}

/// How the whole-stream pool keeps its values ([`vmafcuda::pool::Pooling`]).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaPooling")]
pub enum Pooling {
    #[default]
    #[enum_value(
        name = "Bounded when a live source is connected, else exact",
        nick = "auto"
    )]
    Auto = 0,
    #[enum_value(
        name = "Keep every score: exact percentiles, memory grows 8 bytes per frame and metric",
        nick = "exact"
    )]
    Exact = 1,
    #[enum_value(
        name = "Constant memory: exact min/max/mean/harmonic mean, percentiles within 2^-12",
        nick = "bounded"
    )]
    Bounded = 2,
}

impl From<Rebuild> for vmafcuda::Rebuild {
    fn from(r: Rebuild) -> Self {
        match r {
            Rebuild::Full => vmafcuda::Rebuild::Full,
            Rebuild::Reset => vmafcuda::Rebuild::Reset,
            Rebuild::Cold => vmafcuda::Rebuild::Cold,
        }
    }
}

/// How reference and distorted frames are matched.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaPairing")]
pub enum Pairing {
    #[enum_value(name = "In arrival order (n-th with n-th)", nick = "arrival")]
    Arrival = 0,
    #[default]
    #[enum_value(
        name = "By running time (offset and tolerance; untimed frames in arrival order)",
        nick = "timestamps"
    )]
    Timestamps = 1,
}

/// Whether the offset between the feeds is searched.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaAlign")]
pub enum Align {
    #[default]
    #[enum_value(name = "Use align-offset as set", nick = "none")]
    None = 0,
    #[enum_value(
        name = "Find the offset within align-window from luma fingerprints, re-check at shots",
        nick = "auto"
    )]
    Auto = 1,
}

/// Pooled statistics carried by `shot` and `pooled` messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PooledScore {
    /// Pooled with the element's `pool-method`.
    pub score: f64,
    pub mean: f64,
    pub harmonic_mean: f64,
    pub min: f64,
    pub max: f64,
    pub p5: f64,
}

/// A `type=frame` message.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameScore {
    pub index: u64,
    pub shot: u64,
    pub timestamp: Option<gst::ClockTime>,
    /// Of `timestamp` in the reference pad's segment (as upstream `vmaf` posts them).
    pub stream_time: Option<gst::ClockTime>,
    pub running_time: Option<gst::ClockTime>,
    pub duration: Option<gst::ClockTime>,
    pub score: f64,
    /// Every metric under its libvmaf key, `vmaf` included, in libvmaf's order.
    pub metrics: Vec<(String, f64)>,
}

/// A `type=shot` message.
#[derive(Clone, Debug, PartialEq)]
pub struct ShotScore {
    pub index: u64,
    pub first_frame: u64,
    pub last_frame: u64,
    pub frames: u64,
    pub start: Option<gst::ClockTime>,
    pub end: Option<gst::ClockTime>,
    pub pooled: PooledScore,
    /// Reference frames of this shot with no distorted partner (not scored).
    pub frames_missing: u64,
    /// Scored distorted frames that repeat the previous distorted picture.
    pub frames_repeated: u64,
}

/// A `type=pooled` message (end of stream).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamScore {
    pub frames: u64,
    pub shots: u64,
    pub pooled: PooledScore,
    pub frames_missing: u64,
    pub frames_repeated: u64,
    /// Distorted frames that matched no reference frame (repeated timestamps, extra frames).
    pub frames_extra: u64,
    pub gaps: u64,
    pub alerts: u64,
}

/// A `type=gap` message: reference frames that went out unscored.
#[derive(Clone, Debug, PartialEq)]
pub struct GapReport {
    /// `dropped` (distorted frames missing), `stalled` (the distorted feed went silent longer
    /// than `stall-timeout`; the shot was ended) or `leading` (before the distorted feed began).
    pub reason: String,
    /// Shot the gap fell in, and the index the next scored frame gets.
    pub shot: u64,
    pub before_frame: u64,
    pub frames: u64,
    /// PTS of the first missing reference frame, and PTS + duration of the last.
    pub start: Option<gst::ClockTime>,
    pub end: Option<gst::ClockTime>,
}

/// A `type=alert` message.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertReport {
    /// `frames` (`alert-frames` consecutive frames below `alert-threshold`) or `shot` (a shot's
    /// pooled score below `alert-shot-threshold`).
    pub reason: String,
    pub shot: u64,
    pub first_frame: u64,
    pub last_frame: u64,
    pub start: Option<gst::ClockTime>,
    pub end: Option<gst::ClockTime>,
    /// The shot's pooled score, or the mean of the run of frames.
    pub score: f64,
    pub threshold: f64,
    pub worst_frame: u64,
    pub worst_score: f64,
    /// Alerts held back by `alert-interval` since the previous one.
    pub suppressed: u64,
}

/// A `type=align` message: the offset between the feeds was locked or changed.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignReport {
    /// Distorted running time minus reference running time, ns (positive: distorted is late).
    pub offset: i64,
    /// The same in reference frames.
    pub offset_frames: i64,
    /// `locked` (first lock) or `changed` (a re-check at a shot boundary moved it).
    pub reason: String,
    /// Why it locked when it did (`enough frames`, `end of a feed`, ...).
    pub detail: String,
    /// The search found it (false: `align-offset` was used, no offset matched).
    pub found: bool,
    /// Frame pairs compared at this offset and their mean fingerprint distance.
    pub matched: u64,
    pub cost: f64,
    /// No other offset two or more frames away matched nearly as well.
    pub distinct: bool,
}

/// A parsed `VMAF` element message.
#[derive(Clone, Debug, PartialEq)]
pub enum VmafMessage {
    Frame(FrameScore),
    Shot(ShotScore),
    Pooled(StreamScore),
    Gap(GapReport),
    Alert(AlertReport),
    Align(AlignReport),
}

/// Fields of frame messages that are not metrics.
const FRAME_FIELDS: &[&str] = &[
    "type",
    "stream",
    "index",
    "shot",
    "timestamp",
    "stream-time",
    "running-time",
    "duration",
    "score",
    // Upstream `vmaf`'s name for `psnr_y`, which is among the metrics already.
    "psnr-y",
];

impl VmafMessage {
    /// Parses an element message posted by `vmafcuda`; None for any other message.
    pub fn parse(msg: &gst::MessageRef) -> Option<VmafMessage> {
        match msg.view() {
            gst::MessageView::Element(e) => e.structure().and_then(Self::from_structure),
            _ => None,
        }
    }

    pub fn from_structure(s: &gst::StructureRef) -> Option<VmafMessage> {
        if s.name() != "VMAF" {
            return None;
        }
        let time = |k: &str| s.get::<Option<gst::ClockTime>>(k).ok().flatten();
        let count = |k: &str| s.get::<u64>(k).unwrap_or(0);
        let pooled = || -> Option<PooledScore> {
            Some(PooledScore {
                score: s.get("score").ok()?,
                mean: s.get("mean").ok()?,
                harmonic_mean: s.get("harmonic-mean").ok()?,
                min: s.get("min").ok()?,
                max: s.get("max").ok()?,
                p5: s.get("p5").ok()?,
            })
        };
        match s.get::<&str>("type").ok()? {
            "frame" => Some(VmafMessage::Frame(FrameScore {
                // A gint, as upstream `vmaf` posts it (older vmafcuda posted a guint64).
                index: s
                    .get::<i32>("index")
                    .ok()
                    .and_then(|i| u64::try_from(i).ok())
                    .or_else(|| s.get::<u64>("index").ok())?,
                shot: s.get("shot").ok()?,
                timestamp: time("timestamp"),
                stream_time: time("stream-time"),
                running_time: time("running-time"),
                duration: time("duration"),
                score: s.get("score").ok()?,
                metrics: s
                    .iter()
                    .filter(|(k, _)| !FRAME_FIELDS.contains(&k.as_str()))
                    .filter_map(|(k, v)| Some((k.to_string(), v.get::<f64>().ok()?)))
                    .collect(),
            })),
            "shot" => Some(VmafMessage::Shot(ShotScore {
                index: s.get("index").ok()?,
                first_frame: s.get("first-frame").ok()?,
                last_frame: s.get("last-frame").ok()?,
                frames: s.get("frames").ok()?,
                start: time("start"),
                end: time("end"),
                pooled: pooled()?,
                frames_missing: count("frames-missing"),
                frames_repeated: count("frames-repeated"),
            })),
            "pooled" => Some(VmafMessage::Pooled(StreamScore {
                frames: s.get("frames").ok()?,
                shots: s.get("shots").ok()?,
                pooled: pooled()?,
                frames_missing: count("frames-missing"),
                frames_repeated: count("frames-repeated"),
                frames_extra: count("frames-extra"),
                gaps: count("gaps"),
                alerts: count("alerts"),
            })),
            "gap" => Some(VmafMessage::Gap(GapReport {
                reason: s.get::<String>("reason").ok()?,
                shot: s.get("shot").ok()?,
                before_frame: s.get("before-frame").ok()?,
                frames: s.get("frames").ok()?,
                start: time("start"),
                end: time("end"),
            })),
            "alert" => Some(VmafMessage::Alert(AlertReport {
                reason: s.get::<String>("reason").ok()?,
                shot: s.get("shot").ok()?,
                first_frame: s.get("first-frame").ok()?,
                last_frame: s.get("last-frame").ok()?,
                start: time("start"),
                end: time("end"),
                score: s.get("score").ok()?,
                threshold: s.get("threshold").ok()?,
                worst_frame: s.get("worst-frame").ok()?,
                worst_score: s.get("worst-score").ok()?,
                suppressed: s.get("suppressed").ok()?,
            })),
            "align" => Some(VmafMessage::Align(AlignReport {
                offset: s.get("offset").ok()?,
                offset_frames: s.get("offset-frames").ok()?,
                reason: s.get::<String>("reason").ok()?,
                detail: s.get::<String>("detail").ok()?,
                found: s.get("found").ok()?,
                matched: s.get("matched").ok()?,
                cost: s.get("cost").ok()?,
                distinct: s.get("distinct").ok()?,
            })),
            _ => None,
        }
    }
}

impl FrameScore {
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.metrics.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}
