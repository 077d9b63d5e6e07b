//! Settings: the properties' values, their defaults, and the property table (`ObjectImpl`'s
//! `properties`, `set_property` and `property` delegate here).

use std::sync::LazyLock;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;

use vmafcuda::shots::ShotDetectorConfig;

use super::super::alerts::AlertConfig;
use super::super::feeds::FeedConfig;
use super::super::pairing::Mode;
use super::super::{
    Align, Backend, LogLevel, Pairing, PoolMethod, Pooling, Rebuild, ResultsFormat, ShotDetection,
};
use super::{lock, VmafCuda, CAT};

const DEFAULT_MODEL: &str = "vmaf_v0.6.1";

#[derive(Clone, Debug)]
pub(super) struct Settings {
    pub(super) model_filename: String,
    pub(super) disable_clip: bool,
    pub(super) enable_transform: bool,
    pub(super) phone_model: bool,
    pub(super) psnr: bool,
    pub(super) ssim: bool,
    pub(super) ms_ssim: bool,
    pub(super) threads: u32,
    pub(super) conf_interval: bool,
    pub(super) log_level: LogLevel,
    pub(super) pool_method: PoolMethod,
    pub(super) subsample: u32,
    pub(super) frame_message: bool,
    pub(super) results_filename: Option<String>,
    pub(super) results_format: ResultsFormat,
    pub(super) report_filename: Option<String>,
    pub(super) metrics_file: Option<String>,
    pub(super) shot_detection: ShotDetection,
    pub(super) shot_threshold: f64,
    pub(super) min_shot_length: u32,
    pub(super) shot_boundaries: String,
    pub(super) backend: Backend,
    pub(super) cuda_device_id: i32,
    pub(super) rebuild: Rebuild,
    pub(super) pooling: Pooling,
    pub(super) pairing: Pairing,
    pub(super) pairing_tolerance: u64,
    pub(super) align: Align,
    pub(super) align_offset: i64,
    pub(super) align_window: u64,
    pub(super) stall_timeout: u64,
    pub(super) alert_threshold: f64,
    pub(super) alert_shot_threshold: f64,
    pub(super) alert_frames: u32,
    pub(super) alert_interval: u64,
}

impl Default for Settings {
    fn default() -> Self {
        let detector = ShotDetectorConfig::default();
        Settings {
            model_filename: DEFAULT_MODEL.into(),
            disable_clip: false,
            enable_transform: false,
            phone_model: false,
            psnr: false,
            ssim: false,
            ms_ssim: false,
            threads: 0,
            conf_interval: false,
            log_level: LogLevel::None,
            pool_method: PoolMethod::Mean,
            subsample: 1,
            frame_message: false,
            results_filename: None,
            results_format: ResultsFormat::None,
            report_filename: None,
            metrics_file: None,
            shot_detection: ShotDetection::Events,
            shot_threshold: detector.threshold,
            min_shot_length: detector.min_shot_length as u32,
            shot_boundaries: String::new(),
            backend: Backend::Auto,
            cuda_device_id: -1,
            rebuild: Rebuild::Full,
            pooling: Pooling::Auto,
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
    pub(super) fn feed_config(&self, frame_ns: i64) -> FeedConfig {
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

    /// Whether the model's score transform applies: upstream `vmaf` sets libvmaf's
    /// `VMAF_MODEL_FLAG_ENABLE_TRANSFORM` for `enable-transform` and for `phone-model` alike.
    pub(super) fn transform(&self) -> bool {
        self.enable_transform || self.phone_model
    }

    /// Upstream `vmaf` settings this element accepts but cannot honour, each with the reason
    /// (posted as element warnings when a run starts).
    pub(super) fn unsupported(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.ssim {
            out.push(
                "ssim=true: vmafcuda does not compute SSIM (libvmaf's float_ssim);                  messages carry no ssim field"
                    .to_string(),
            );
        }
        if self.ms_ssim {
            out.push(
                "ms-ssim=true: vmafcuda does not compute MS-SSIM (libvmaf's float_ms_ssim);                  messages carry no ms-ssim field"
                    .to_string(),
            );
        }
        if self.conf_interval {
            out.push(
                "conf-interval=true: vmafcuda has no bootstrapped model collection, so no                  confidence intervals are computed; scores are those of the plain model"
                    .to_string(),
            );
        }
        out
    }

    pub(super) fn alert_config(&self) -> AlertConfig {
        AlertConfig {
            frame_threshold: self.alert_threshold,
            shot_threshold: self.alert_shot_threshold,
            frames: self.alert_frames,
            interval_ns: self.alert_interval,
        }
    }
}

/// Duration of a reference frame when neither caps nor buffers say (25 fps).
pub(super) const DEFAULT_FRAME_NS: i64 = 40_000_000;

/// Parses `shot-boundaries`: frame indices separated by commas, spaces or semicolons.
pub(super) fn parse_boundaries(text: &str) -> Result<Vec<usize>, String> {
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

/// The property table (`ObjectImpl::properties`).
pub(super) fn properties() -> &'static [glib::ParamSpec] {
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
            glib::ParamSpecBoolean::builder("phone-model")
                .nick("phone-model")
                .blurb("Use VMAF phone model (upstream vmaf name: the same as enable-transform, the model's score transform)")
                .default_value(d.phone_model)
                .mutable_ready()
                .build(),
            glib::ParamSpecBoolean::builder("psnr")
                .nick("PSNR")
                .blurb("Also compute psnr_y, psnr_cb, psnr_cr (as libvmaf's psnr feature); messages carry psnr-y as upstream vmaf's do")
                .default_value(d.psnr)
                .mutable_ready()
                .build(),
            glib::ParamSpecBoolean::builder("ssim")
                .nick("ssim")
                .blurb("Estimate SSIM (upstream vmaf property; not computed here: true posts a warning)")
                .default_value(d.ssim)
                .mutable_ready()
                .build(),
            glib::ParamSpecBoolean::builder("ms-ssim")
                .nick("ms-ssim")
                .blurb("Estimate MS-SSIM (upstream vmaf property; not computed here: true posts a warning)")
                .default_value(d.ms_ssim)
                .mutable_ready()
                .build(),
            glib::ParamSpecUInt::builder("threads")
                .nick("threads")
                .blurb("The number of threads (0 = automatic). Upstream vmaf property; accepted for compatibility, scores are the same for any value (the CPU path uses a shared thread pool, the GPU path the device)")
                .minimum(0)
                .maximum(i32::MAX as u32)
                .default_value(d.threads)
                .mutable_ready()
                .build(),
            glib::ParamSpecBoolean::builder("conf-interval")
                .nick("conf-interval")
                .blurb("Enable confidence intervals (upstream vmaf property; not computed here: true posts a warning)")
                .default_value(d.conf_interval)
                .mutable_ready()
                .build(),
            glib::ParamSpecEnum::builder_with_default("log-level", d.log_level)
                .nick("(internal) VMAF log level")
                .blurb("VMAF log level (upstream vmaf property for libvmaf's own log; here logging goes through the vmafcuda debug category, GST_DEBUG=vmafcuda:N)")
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
                .blurb("Write per-frame, per-shot and pooled results to this file (libvmaf layout; %d is replaced by the stream index 0): frames are written as they are scored into <file>.frames.part (shots into <file>.shots.part), assembled into the file at EOS; no frame is held in memory")
                .mutable_ready()
                .build(),
            glib::ParamSpecEnum::builder_with_default("results-format", d.results_format)
                .nick("Results format")
                .blurb("Format of results-filename (none: JSON)")
                .mutable_ready()
                .build(),
            glib::ParamSpecString::builder("report-filename")
                .nick("HTML report file")
                .blurb("Write a self-contained HTML report (VMAF chart with shot bands, worst frames, pooled tables) to this file at EOS; %d is replaced by the stream index 0. It needs every frame: memory grows about 1 kB per frame, so not for streams that run for days")
                .mutable_ready()
                .build(),
            glib::ParamSpecString::builder("metrics-file")
                .nick("Prometheus metrics file")
                .blurb("Write QC metrics (last shot score, frames scored, alerts, gaps, ...) in Prometheus text format to this file, replaced atomically after every shot, gap, alert and at EOS (e.g. for node_exporter's textfile collector; %d is replaced by the stream index 0)")
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
            glib::ParamSpecEnum::builder_with_default("rebuild", d.rebuild)
                .nick("Rebuild")
                .blurb("What a shot boundary does: full = tear the whole GPU/CPU engine down and build a new one (built ahead, no stall); reset = reset the state in place. Scores are the same either way")
                .mutable_ready()
                .build(),
            glib::ParamSpecEnum::builder_with_default("pooling", d.pooling)
                .nick("Pooling")
                .blurb("How the whole-stream pool keeps scores: exact = every score (exact percentiles, 8 bytes per frame and metric); bounded = constant memory for streams that run for months (min/max/mean/harmonic mean identical, p5/p10 within 2^-12 relative: at most 0.0245 VMAF); auto = bounded with a live source, else exact. Shots are always exact")
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

impl VmafCuda {
    pub(super) fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// `ObjectImpl::set_property`.
    pub(super) fn store_property(&self, value: &glib::Value, pspec: &glib::ParamSpec) {
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
            "phone-model" => s.phone_model = value.get().unwrap_or(false),
            "psnr" => s.psnr = value.get().unwrap_or(false),
            "ssim" => s.ssim = value.get().unwrap_or(false),
            "ms-ssim" => s.ms_ssim = value.get().unwrap_or(false),
            "threads" => s.threads = value.get().unwrap_or(0),
            "conf-interval" => s.conf_interval = value.get().unwrap_or(false),
            "log-level" => s.log_level = value.get().unwrap_or_default(),
            "pool-method" => s.pool_method = value.get().unwrap_or_default(),
            "subsample" => s.subsample = value.get().unwrap_or(1),
            "frame-message" => s.frame_message = value.get().unwrap_or(false),
            "results-filename" => s.results_filename = value.get().ok().flatten(),
            "results-format" => s.results_format = value.get().unwrap_or_default(),
            "report-filename" => s.report_filename = value.get().ok().flatten(),
            "metrics-file" => s.metrics_file = value.get().ok().flatten(),
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
            "rebuild" => s.rebuild = value.get().unwrap_or_default(),
            "pooling" => s.pooling = value.get().unwrap_or_default(),
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

    /// `ObjectImpl::property`.
    pub(super) fn read_property(&self, pspec: &glib::ParamSpec) -> glib::Value {
        let s = lock(&self.settings);
        match pspec.name() {
            "model-filename" => s.model_filename.to_value(),
            "disable-clip" => s.disable_clip.to_value(),
            "enable-transform" => s.enable_transform.to_value(),
            "phone-model" => s.phone_model.to_value(),
            "psnr" => s.psnr.to_value(),
            "ssim" => s.ssim.to_value(),
            "ms-ssim" => s.ms_ssim.to_value(),
            "threads" => s.threads.to_value(),
            "conf-interval" => s.conf_interval.to_value(),
            "log-level" => s.log_level.to_value(),
            "pool-method" => s.pool_method.to_value(),
            "subsample" => s.subsample.to_value(),
            "frame-message" => s.frame_message.to_value(),
            "results-filename" => s.results_filename.to_value(),
            "results-format" => s.results_format.to_value(),
            "report-filename" => s.report_filename.to_value(),
            "metrics-file" => s.metrics_file.to_value(),
            "shot-detection" => s.shot_detection.to_value(),
            "shot-threshold" => s.shot_threshold.to_value(),
            "min-shot-length" => s.min_shot_length.to_value(),
            "shot-boundaries" => s.shot_boundaries.to_value(),
            "backend" => s.backend.to_value(),
            "cuda-device-id" => s.cuda_device_id.to_value(),
            "rebuild" => s.rebuild.to_value(),
            "pooling" => s.pooling.to_value(),
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
}
