//! QC metrics in Prometheus text exposition format (`metrics-file`): what the element's own
//! `VMAF` messages say, kept as counters and gauges per element, and written to a file that
//! node_exporter's textfile collector (or any scraper reading a file) picks up.
//!
//! The file is rewritten after every shot, gap, alert and at EOS (written beside it and renamed
//! over it, so a reader never sees half a file). Metrics, each labelled `element="<name>"`:
//! * `vmafcuda_last_shot_score` (gauge): the last shot's pooled VMAF (`pool-method`);
//!   `vmafcuda_last_shot_min_score`, `vmafcuda_last_shot_index`, `vmafcuda_last_shot_frames`;
//! * `vmafcuda_last_frame_score` (gauge, with `frame-message=true`);
//! * `vmafcuda_frames_scored_total`, `vmafcuda_shots_total` (counters);
//! * `vmafcuda_alerts_total{reason="frames"|"shot"}`, `vmafcuda_alerts_suppressed_total`;
//! * `vmafcuda_gaps_total{reason}`, `vmafcuda_gap_frames_total{reason}` (`dropped`, `stalled`,
//!   `leading`), `vmafcuda_frames_missing_total`, `vmafcuda_frames_repeated_total`;
//! * `vmafcuda_stream_score` (gauge, once the stream ended) and `vmafcuda_end_of_stream` (0/1);
//! * `vmafcuda_last_update_timestamp_seconds`: when the file was written (to spot a stale one).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use super::VmafMessage;

/// The counters and gauges of one element's run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QcMetrics {
    pub frames_scored: u64,
    pub shots: u64,
    pub last_shot: Option<LastShot>,
    pub last_frame_score: Option<f64>,
    /// Alerts by reason (`frames`, `shot`).
    pub alerts: BTreeMap<String, u64>,
    pub alerts_suppressed: u64,
    /// Gaps and the reference frames they left unscored, by reason.
    pub gaps: BTreeMap<String, u64>,
    pub gap_frames: BTreeMap<String, u64>,
    pub frames_missing: u64,
    pub frames_repeated: u64,
    /// The whole stream's pooled score, once it ended.
    pub stream_score: Option<f64>,
}

/// The last completed shot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LastShot {
    pub index: u64,
    pub score: f64,
    pub min: f64,
    pub frames: u64,
}

impl QcMetrics {
    /// Takes in one of the element's messages; true when the file should be rewritten (a shot,
    /// gap, alert or the end of the stream).
    pub fn observe(&mut self, message: &VmafMessage) -> bool {
        match message {
            VmafMessage::Frame(f) => {
                self.last_frame_score = Some(f.score);
                false
            }
            VmafMessage::Shot(s) => {
                self.shots += 1;
                self.frames_scored += s.frames;
                self.frames_missing += s.frames_missing;
                self.frames_repeated += s.frames_repeated;
                self.last_shot = Some(LastShot {
                    index: s.index,
                    score: s.pooled.score,
                    min: s.pooled.min,
                    frames: s.frames,
                });
                true
            }
            VmafMessage::Gap(g) => {
                *self.gaps.entry(g.reason.clone()).or_default() += 1;
                *self.gap_frames.entry(g.reason.clone()).or_default() += g.frames;
                true
            }
            VmafMessage::Alert(a) => {
                *self.alerts.entry(a.reason.clone()).or_default() += 1;
                self.alerts_suppressed += a.suppressed;
                true
            }
            VmafMessage::Pooled(p) => {
                self.stream_score = Some(p.pooled.score);
                true
            }
            VmafMessage::Align(_) => false,
        }
    }

    /// The exposition text; `unix_time` stamps `vmafcuda_last_update_timestamp_seconds`.
    pub fn render(&self, element: &str, unix_time: f64) -> String {
        let element = escape_label(element);
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(
                    out,
                    "{name}{{element=\"{element}\"{labels}}} {}",
                    number(*value)
                );
            }
        };
        let one = |v: f64| vec![(String::new(), v)];
        let by_reason = |m: &BTreeMap<String, u64>, reasons: &[&str]| -> Vec<(String, f64)> {
            // The usual reasons always appear (0 until they happen), so alerting rules and
            // rate() see the series from the start.
            let mut keys: Vec<&str> = reasons.to_vec();
            keys.extend(
                m.keys()
                    .map(String::as_str)
                    .filter(|k| !reasons.contains(k)),
            );
            keys.iter()
                .map(|k| {
                    (
                        format!(",reason=\"{}\"", escape_label(k)),
                        m.get(*k).copied().unwrap_or(0) as f64,
                    )
                })
                .collect()
        };
        if let Some(s) = self.last_shot {
            family(
                "vmafcuda_last_shot_score",
                "gauge",
                "Pooled VMAF (pool-method) of the last completed shot.",
                &one(s.score),
            );
            family(
                "vmafcuda_last_shot_min_score",
                "gauge",
                "Lowest frame VMAF of the last completed shot.",
                &one(s.min),
            );
            family(
                "vmafcuda_last_shot_index",
                "gauge",
                "Index of the last completed shot.",
                &one(s.index as f64),
            );
            family(
                "vmafcuda_last_shot_frames",
                "gauge",
                "Frames scored in the last completed shot.",
                &one(s.frames as f64),
            );
        }
        if let Some(v) = self.last_frame_score {
            family(
                "vmafcuda_last_frame_score",
                "gauge",
                "VMAF of the last frame posted (frame-message=true).",
                &one(v),
            );
        }
        family(
            "vmafcuda_frames_scored_total",
            "counter",
            "Frame pairs scored in completed shots.",
            &one(self.frames_scored as f64),
        );
        family(
            "vmafcuda_shots_total",
            "counter",
            "Shots completed.",
            &one(self.shots as f64),
        );
        family(
            "vmafcuda_alerts_total",
            "counter",
            "Alerts posted, by reason (frames: a run of frames below alert-threshold; shot: a shot's pooled score below alert-shot-threshold).",
            &by_reason(&self.alerts, &["frames", "shot"]),
        );
        family(
            "vmafcuda_alerts_suppressed_total",
            "counter",
            "Alerts held back by alert-interval.",
            &one(self.alerts_suppressed as f64),
        );
        family(
            "vmafcuda_gaps_total",
            "counter",
            "Runs of reference frames that went out unscored, by reason.",
            &by_reason(&self.gaps, &["dropped", "stalled", "leading"]),
        );
        family(
            "vmafcuda_gap_frames_total",
            "counter",
            "Reference frames that went out unscored, by reason.",
            &by_reason(&self.gap_frames, &["dropped", "stalled", "leading"]),
        );
        family(
            "vmafcuda_frames_missing_total",
            "counter",
            "Reference frames of completed shots without a distorted partner.",
            &one(self.frames_missing as f64),
        );
        family(
            "vmafcuda_frames_repeated_total",
            "counter",
            "Scored distorted frames that repeat the previous distorted picture.",
            &one(self.frames_repeated as f64),
        );
        if let Some(v) = self.stream_score {
            family(
                "vmafcuda_stream_score",
                "gauge",
                "Pooled VMAF (pool-method) of the whole stream, once it ended.",
                &one(v),
            );
        }
        family(
            "vmafcuda_end_of_stream",
            "gauge",
            "1 once the stream ended and its pooled score was posted.",
            &one(if self.stream_score.is_some() {
                1.0
            } else {
                0.0
            }),
        );
        family(
            "vmafcuda_last_update_timestamp_seconds",
            "gauge",
            "Unix time at which this file was written.",
            &one(unix_time),
        );
        out
    }
}

/// Writes `text` to `path` atomically: to a temporary file beside it, then renamed over it.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.flush()?;
    }
    std::fs::rename(&tmp, path)
}

/// A sample value as the exposition format writes it (`NaN`, `+Inf`, `-Inf` spelled out).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// A label value with `\`, `"` and newlines escaped, as the format requires.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::super::{GapReport, PooledScore, ShotScore};
    use super::*;

    fn shot(index: u64, score: f64, frames: u64) -> VmafMessage {
        VmafMessage::Shot(ShotScore {
            index,
            first_frame: 0,
            last_frame: frames - 1,
            frames,
            start: None,
            end: None,
            pooled: PooledScore {
                score,
                mean: score,
                harmonic_mean: score,
                min: score - 1.0,
                max: score + 1.0,
                p5: score,
            },
            frames_missing: 2,
            frames_repeated: 1,
        })
    }

    #[test]
    fn shots_and_gaps_become_counters_and_gauges() {
        let mut m = QcMetrics::default();
        assert!(m.observe(&shot(0, 90.5, 10)));
        assert!(m.observe(&shot(1, 70.25, 5)));
        assert!(m.observe(&VmafMessage::Gap(GapReport {
            reason: "dropped".into(),
            shot: 1,
            before_frame: 12,
            frames: 3,
            start: None,
            end: None,
        })));
        let text = m.render("v\"1", 1.5);
        for line in [
            "vmafcuda_last_shot_score{element=\"v\\\"1\"} 70.25",
            "vmafcuda_last_shot_min_score{element=\"v\\\"1\"} 69.25",
            "vmafcuda_last_shot_index{element=\"v\\\"1\"} 1",
            "vmafcuda_frames_scored_total{element=\"v\\\"1\"} 15",
            "vmafcuda_shots_total{element=\"v\\\"1\"} 2",
            "vmafcuda_frames_missing_total{element=\"v\\\"1\"} 4",
            "vmafcuda_frames_repeated_total{element=\"v\\\"1\"} 2",
            "vmafcuda_gaps_total{element=\"v\\\"1\",reason=\"dropped\"} 1",
            "vmafcuda_gap_frames_total{element=\"v\\\"1\",reason=\"dropped\"} 3",
            "vmafcuda_gaps_total{element=\"v\\\"1\",reason=\"stalled\"} 0",
            "vmafcuda_alerts_total{element=\"v\\\"1\",reason=\"shot\"} 0",
            "vmafcuda_end_of_stream{element=\"v\\\"1\"} 0",
            "vmafcuda_last_update_timestamp_seconds{element=\"v\\\"1\"} 1.5",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        assert!(!text.contains("vmafcuda_stream_score"));
        // Every family has its HELP and TYPE lines before its samples.
        for name in text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split('{').next().unwrap())
        {
            let help = text.find(&format!("# TYPE {name} ")).expect("TYPE");
            let sample = text.find(&format!("\n{name}{{")).expect("sample");
            assert!(help < sample, "{name}");
        }
    }

    #[test]
    fn special_values_are_spelled_as_the_format_wants() {
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(97.5), "97.5");
    }
}
