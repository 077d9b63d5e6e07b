//! Element `vmafcuda`: VMAF of a distorted stream against its reference, per frame, per shot
//! and pooled, bit-exact with libvmaf 3.2.0, on CUDA (zero-copy from `memory:CUDAMemory`) or
//! the CPU.
//!
//! # Pads
//! * `ref_sink`, `dist_sink` (always): the reference and distorted streams, frame aligned.
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
//! # Bus messages
//! Element messages with a structure named `VMAF`, field `type` one of:
//! * `frame` (with `frame-message=true`): `index` (frame number), `shot`, `timestamp` (PTS),
//!   `duration`, `score` (VMAF) and every metric under its libvmaf key (`integer_adm2`,
//!   `integer_motion2`, `psnr_y`, ...).
//! * `shot`: `index` (shot number), `first-frame`, `last-frame`, `frames`, `start`
//!   (PTS of the first frame), `end` (PTS of the last frame plus its duration), `score`
//!   (pooled with `pool-method`), `mean`, `harmonic-mean`, `min`, `max`, `p5`.
//! * `pooled` (at EOS): `frames`, `shots`, `frames-in-place` (frame pairs read straight from
//!   CUDA memory, no copy of frame data), `frames-system-memory`, and the same statistics over
//!   the whole stream.
//!
//! All also carry `stream` = 0 (the field upstream's `vmaf` element uses). [`VmafMessage`]
//! parses them.

use gst::glib;
use gst::prelude::*;

mod fallback;
mod imp;
mod picture;

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

/// Results file format (upstream `vmaf` names).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstVmafCudaResultsFormat")]
pub enum ResultsFormat {
    #[default]
    #[enum_value(name = "None (JSON when results-filename is set)", nick = "none")]
    None = 0,
    #[enum_value(name = "Comma Separated File (csv)", nick = "csv")]
    Csv = 1,
    #[enum_value(name = "XML", nick = "xml")]
    Xml = 2,
    #[enum_value(name = "JSON", nick = "json")]
    Json = 3,
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
}

/// A `type=pooled` message (end of stream).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamScore {
    pub frames: u64,
    pub shots: u64,
    pub pooled: PooledScore,
}

/// A parsed `VMAF` element message.
#[derive(Clone, Debug, PartialEq)]
pub enum VmafMessage {
    Frame(FrameScore),
    Shot(ShotScore),
    Pooled(StreamScore),
}

/// Fields of frame messages that are not metrics.
const FRAME_FIELDS: &[&str] = &[
    "type",
    "stream",
    "index",
    "shot",
    "timestamp",
    "duration",
    "score",
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
                index: s.get("index").ok()?,
                shot: s.get("shot").ok()?,
                timestamp: time("timestamp"),
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
            })),
            "pooled" => Some(VmafMessage::Pooled(StreamScore {
                frames: s.get("frames").ok()?,
                shots: s.get("shots").ok()?,
                pooled: pooled()?,
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
