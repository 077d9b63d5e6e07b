//! Bus messages: the `VMAF` element messages (frame, shot, alert, gap, align; the pooled
//! one is built by `finish`) and posting them once the state lock is released.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use gst::prelude::*;
use gst::subclass::prelude::*;

use vmafcuda::pool::PooledStats;
use vmafcuda::report::{FrameResult, ShotResult};

use super::super::alerts::{Alert, ScoredFrame};
use super::super::align::Estimate;
use super::super::feeds::AlignNews;
use super::super::metrics::{write_atomically, QcMetrics};
use super::super::{PoolMethod, VmafMessage};
use super::settings::DEFAULT_FRAME_NS;
use super::state::State;
use super::{lock, VmafCuda, CAT};

/// What a step of scoring produced, posted once the state lock is released.
pub(super) type Messages = Vec<gst::Message>;

/// `metrics-file`: where the run's QC metrics go, and what they are so far.
pub(super) struct MetricsSink {
    path: PathBuf,
    metrics: QcMetrics,
    /// A write failed and was reported (once per run).
    warned: bool,
}

impl VmafCuda {
    pub(super) fn vmaf_structure(kind: &str) -> gst::structure::Builder {
        gst::Structure::builder("VMAF")
            .field("type", kind)
            .field("stream", 0i32)
    }

    pub(super) fn element_message(&self, s: gst::Structure) -> gst::Message {
        gst::message::Element::builder(s).src(&*self.obj()).build()
    }

    pub(super) fn pooled_fields(
        b: gst::structure::Builder,
        stats: &PooledStats,
        method: PoolMethod,
    ) -> gst::structure::Builder {
        b.field("score", pick(stats, method))
            .field("mean", stats.mean)
            .field("harmonic-mean", stats.harmonic_mean)
            .field("min", stats.min)
            .field("max", stats.max)
            .field("p5", stats.p5)
    }

    pub(super) fn frame_message(&self, state: &State, f: &FrameResult) -> gst::Message {
        let times = state.times.get(&f.index).copied().unwrap_or_default();
        // `index` is a gint and the times are guint64 (GST_CLOCK_TIME_NONE when unknown), as
        // upstream `vmaf` posts them, so that its applications read ours unchanged.
        let mut b = Self::vmaf_structure("frame")
            .field("index", i32::try_from(f.index).unwrap_or(i32::MAX))
            .field("shot", state.shots_posted)
            .field("timestamp", times.pts)
            .field("stream-time", times.stream_time)
            .field("running-time", times.running_time)
            .field("duration", times.duration)
            .field("score", f.vmaf());
        if let Some(p) = f.get("psnr_y") {
            b = b.field("psnr-y", p);
        }
        for (key, value) in &f.metrics {
            b = b.field(key.as_str(), *value);
        }
        self.element_message(b.build())
    }

    /// The fields upstream `vmaf` puts in its pooled message, beside ours: `timestamp`,
    /// `stream-time`, `running-time` (the end of the last frame, where upstream's output
    /// segment stands at EOS), `duration` (frames times the reference frame duration, as
    /// upstream) and, with `psnr`, `psnr-y` pooled with `pool-method`.
    pub(super) fn pooled_upstream_fields(
        &self,
        b: gst::structure::Builder,
        state: &State,
    ) -> gst::structure::Builder {
        let last = state.last_times;
        let end = |t: Option<gst::ClockTime>| match (t, last.duration) {
            (Some(t), Some(d)) => Some(t + d),
            (t, _) => t,
        };
        let fps = state.ref_format.as_ref().map(|f| f.info.fps());
        let duration = match fps {
            Some(fps) if fps.numer() > 0 && fps.denom() > 0 => gst::ClockTime::SECOND
                .mul_div_floor(
                    state.next_frame as u64 * fps.denom() as u64,
                    fps.numer() as u64,
                ),
            _ => None,
        };
        let mut b = b
            .field("timestamp", end(last.pts))
            .field("stream-time", end(last.stream_time))
            .field("running-time", end(last.running_time))
            .field("duration", duration);
        if let Some(stats) = state.stream_psnr_y.as_ref().and_then(|p| p.stats()) {
            b = b.field("psnr-y", pick(&stats, state.settings.pool_method));
        }
        b
    }

    pub(super) fn shot_message(&self, state: &mut State, shot: &ShotResult) -> Messages {
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
    pub(super) fn alert_messages(&self, a: &Alert) -> Messages {
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
    pub(super) fn close_gap(&self, state: &mut State) -> Messages {
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
    pub(super) fn align_message(&self, state: &State, news: AlignNews) -> gst::Message {
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

    pub(super) fn post(&self, messages: Messages) {
        for m in messages {
            self.update_metrics(&m);
            let _ = self.obj().post_message(m);
        }
    }

    /// Starts `metrics-file` for a run (None: off) and writes it once, all zeros, so that a
    /// scraper finds the series from the start.
    pub(super) fn start_metrics(&self, path: Option<&str>) {
        let sink = path.map(|p| MetricsSink {
            path: PathBuf::from(p.replace("%d", "0")),
            metrics: QcMetrics::default(),
            warned: false,
        });
        *lock(&self.metrics) = sink;
        self.write_metrics();
    }

    fn update_metrics(&self, message: &gst::Message) {
        let changed = {
            let mut sink = lock(&self.metrics);
            match (sink.as_mut(), VmafMessage::parse(message)) {
                (Some(sink), Some(m)) => sink.metrics.observe(&m),
                _ => false,
            }
        };
        if changed {
            self.write_metrics();
        }
    }

    fn write_metrics(&self) {
        let mut guard = lock(&self.metrics);
        let Some(sink) = guard.as_mut() else {
            return;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let text = sink.metrics.render(&self.obj().name(), now);
        if let Err(e) = write_atomically(&sink.path, &text) {
            // Once per run: a full disk must not flood the bus, and scoring goes on.
            if !sink.warned {
                sink.warned = true;
                let path = sink.path.display().to_string();
                drop(guard);
                gst::element_imp_warning!(
                    self,
                    gst::ResourceError::OpenWrite,
                    ("cannot write metrics-file {path}: {e}")
                );
            }
        }
    }
}

/// The statistic `method` names.
fn pick(stats: &PooledStats, method: PoolMethod) -> f64 {
    match method {
        PoolMethod::Min => stats.min,
        PoolMethod::Max => stats.max,
        PoolMethod::Mean => stats.mean,
        PoolMethod::HarmonicMean => stats.harmonic_mean,
    }
}
