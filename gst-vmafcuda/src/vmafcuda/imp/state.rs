//! What one run keeps between buffers: the element's `State`, and the gap and frame timings
//! it records.

use std::collections::BTreeMap;

use vmafcuda::model::Model;
use vmafcuda::pool::MetricPool;
use vmafcuda::results_file::ResultsWriter;
use vmafcuda::shots::ShotDetector;
use vmafcuda::Scorer;

use super::super::alerts::{AlertMonitor, ScoredFrame};
use super::super::feeds::Feeds;
use super::caps::PadFormat;
use super::settings::Settings;

/// Reference frames of a gap being collected.
#[derive(Clone, Copy, Debug)]
pub(super) struct OpenGap {
    pub(super) reason: &'static str,
    pub(super) shot: u64,
    pub(super) frames: u64,
    pub(super) start: Option<gst::ClockTime>,
    pub(super) end: Option<gst::ClockTime>,
}

/// Timing of a frame, kept until its shot is posted.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct FrameTimes {
    pub(super) pts: Option<gst::ClockTime>,
    pub(super) duration: Option<gst::ClockTime>,
    /// Of `pts` in the reference pad's segment (upstream `vmaf`'s `running-time`, `stream-time`).
    pub(super) running_time: Option<gst::ClockTime>,
    pub(super) stream_time: Option<gst::ClockTime>,
}

#[derive(Default)]
pub(super) struct State {
    /// Settings as they were at start (properties are read once per run).
    pub(super) settings: Settings,
    pub(super) boundaries: Vec<usize>,
    pub(super) model: Option<Model>,
    pub(super) ref_format: Option<PadFormat>,
    pub(super) dist_format: Option<PadFormat>,
    pub(super) scorer: Option<Scorer>,
    pub(super) detector: Option<ShotDetector>,
    /// Frames pushed to the scorer so far (global index of the next frame).
    pub(super) next_frame: usize,
    pub(super) times: BTreeMap<usize, FrameTimes>,
    /// (frame index, VMAF) of scored, subsampled frames whose shot is not posted yet.
    pub(super) pending: Vec<(usize, f64)>,
    /// VMAF of the scored, subsampled frames, pooled for the `pooled` message (in the run's
    /// pooling mode: bounded keeps no scores); made with the scorer.
    pub(super) stream_vmaf: Option<MetricPool>,
    /// `psnr_y` of the same frames (with `psnr`), for the pooled message's `psnr-y`, pooled
    /// the same way.
    pub(super) stream_psnr_y: Option<MetricPool>,
    /// `results-filename`, written as frames are scored; made with the scorer.
    pub(super) results: Option<ResultsWriter>,
    /// Timing of the last frame pair taken, for the pooled message.
    pub(super) last_times: FrameTimes,
    pub(super) shots_posted: u64,
    /// Device frames stopped working: host path from now on.
    pub(super) device_disabled: bool,
    /// Why frames take the host path was logged once.
    pub(super) host_path_logged: bool,
    /// Frame pairs scored in place from CUDA memory (no copy of frame data) ...
    pub(super) frames_in_place: u64,
    /// ... and from system memory (mapped for reading, then the CPU or an upload).
    pub(super) frames_system_memory: u64,
    pub(super) dist_ended_warned: bool,
    pub(super) finished: bool,
    /// Frames waiting to be paired, alignment (see `feeds`); made at start.
    pub(super) feeds: Option<Feeds>,
    pub(super) alerts: Option<AlertMonitor>,
    /// Scored frames of the open shot, for shot alerts (only with alerts on).
    pub(super) shot_frames: Vec<ScoredFrame>,
    pub(super) gap: Option<OpenGap>,
    pub(super) gaps: u64,
    pub(super) frames_missing: u64,
    pub(super) frames_repeated: u64,
    pub(super) frames_extra: u64,
    pub(super) shot_missing: u64,
    pub(super) shot_repeated: u64,
    /// Reference PTS by frame index, kept for `report-filename` only.
    pub(super) report_pts: Vec<Option<gst::ClockTime>>,
    /// Follows the scorer from the GPU to the CPU mid-stream.
    pub(super) fallback: super::super::fallback::Fallback,
}
