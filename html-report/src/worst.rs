//! The worst frames of a run and a hint at why each is bad: which elementary feature fell
//! furthest below its usual level in the frame's shot.
//!
//! VMAF is a regression over a few features (VIF at four scales, ADM, motion); a low score
//! usually follows one of them dropping. We compare each distortion feature of the frame with
//! the median of the same feature over its shot (over the whole clip for shots of fewer than
//! [`MIN_SHOT_FOR_MEDIAN`] frames) and name the one with the largest relative drop. Motion is
//! left out: it measures the reference's temporal change, not a distortion, and it is 0 on
//! every shot's first frame by definition.

use vmafcuda::report::{FrameResult, Report};

/// Shots shorter than this use the whole clip's median (a median of two frames says little).
pub const MIN_SHOT_FOR_MEDIAN: usize = 3;

/// Metric key prefixes that measure distortion (higher is better for all of them).
const DISTORTION_FEATURES: &[&str] = &[
    "integer_vif_scale",
    "integer_adm2",
    "integer_adm_scale",
    "psnr_",
];

/// A feature of one frame compared with its shot's median.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureDrop {
    /// libvmaf metric key, e.g. `integer_vif_scale0`.
    pub key: String,
    pub value: f64,
    /// Median of the feature over the frame's shot (or the clip, see the module docs).
    pub median: f64,
    /// `(median - value) / |median|`: 0.25 means 25 % below the median.
    pub relative_drop: f64,
}

impl FeatureDrop {
    /// A readable name: `VIF scale 0`, `ADM`, `ADM scale 3`, `PSNR Y`.
    pub fn label(&self) -> String {
        feature_label(&self.key)
    }
}

/// One of the lowest-scoring frames.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstFrame {
    /// Global frame index.
    pub index: usize,
    pub shot: Option<usize>,
    pub score: f64,
    /// The distortion feature with the largest relative drop, if any fell below its median.
    pub cause: Option<FeatureDrop>,
}

/// A readable name for a libvmaf metric key (unknown keys are returned unchanged).
pub fn feature_label(key: &str) -> String {
    let (base, egl) = match key.strip_suffix("_egl_1") {
        Some(b) => (b, " (gain limit 1)"),
        None => (key, ""),
    };
    let name = if let Some(s) = base.strip_prefix("integer_vif_scale") {
        format!("VIF scale {s}")
    } else if let Some(s) = base.strip_prefix("integer_adm_scale") {
        format!("ADM scale {s}")
    } else if base == "integer_adm2" {
        "ADM".into()
    } else if let Some(p) = base.strip_prefix("psnr_") {
        format!("PSNR {}", p.to_uppercase())
    } else if base == "integer_motion2" {
        "motion".into()
    } else {
        base.to_owned()
    };
    format!("{name}{egl}")
}

fn is_distortion_feature(key: &str) -> bool {
    DISTORTION_FEATURES.iter().any(|p| key.starts_with(p))
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Medians of every distortion feature over `frames`.
fn feature_medians(frames: &[&FrameResult]) -> Vec<(String, f64)> {
    let Some(first) = frames.first() else {
        return Vec::new();
    };
    first
        .metrics
        .iter()
        .filter(|(k, _)| is_distortion_feature(k))
        .filter_map(|(k, _)| {
            median(frames.iter().filter_map(|f| f.get(k)).collect()).map(|m| (k.clone(), m))
        })
        .collect()
}

/// The `n` lowest-VMAF frames of `report`, lowest first (ties: earlier frame first); frames
/// whose score is NaN are never picked.
pub fn worst_frames(report: &Report, n: usize) -> Vec<WorstFrame> {
    let mut order: Vec<&FrameResult> = report
        .frames
        .iter()
        .filter(|f| !f.vmaf().is_nan())
        .collect();
    order.sort_by(|a, b| a.vmaf().total_cmp(&b.vmaf()).then(a.index.cmp(&b.index)));
    order.truncate(n);

    let clip: Vec<&FrameResult> = report.frames.iter().collect();
    let clip_medians = feature_medians(&clip);
    order
        .into_iter()
        .map(|f| {
            let shot = report.shot_of(f.index);
            let shot_frames: Vec<&FrameResult> = match shot.and_then(|s| report.shots.get(s)) {
                Some(s) if s.frame_count() >= MIN_SHOT_FOR_MEDIAN => report
                    .frames
                    .iter()
                    .filter(|g| (s.first_frame..=s.last_frame).contains(&g.index))
                    .collect(),
                _ => Vec::new(),
            };
            let medians = if shot_frames.len() >= MIN_SHOT_FOR_MEDIAN {
                feature_medians(&shot_frames)
            } else {
                clip_medians.clone()
            };
            WorstFrame {
                index: f.index,
                shot,
                score: f.vmaf(),
                cause: largest_drop(f, &medians),
            }
        })
        .collect()
}

/// The feature of `frame` furthest below its median, relative to the median; `None` if no
/// feature is below its median.
fn largest_drop(frame: &FrameResult, medians: &[(String, f64)]) -> Option<FeatureDrop> {
    medians
        .iter()
        .filter(|(_, m)| *m != 0.0)
        .filter_map(|(key, median)| {
            let value = frame.get(key)?;
            let relative_drop = (median - value) / median.abs();
            (relative_drop.is_finite() && relative_drop > 0.0).then(|| FeatureDrop {
                key: key.clone(),
                value,
                median: *median,
                relative_drop,
            })
        })
        .max_by(|a, b| a.relative_drop.total_cmp(&b.relative_drop))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmafcuda::report::ShotResult;

    fn frame(index: usize, vif0: f64, adm2: f64, motion: f64, vmaf: f64) -> FrameResult {
        FrameResult {
            index,
            metrics: vec![
                ("integer_adm2".into(), adm2),
                ("integer_vif_scale0".into(), vif0),
                ("integer_motion2".into(), motion),
                ("vmaf".into(), vmaf),
            ],
        }
    }

    fn report(frames: Vec<FrameResult>, shots: &[(usize, usize)]) -> Report {
        Report {
            model: "vmaf_v0.6.1".into(),
            width: 64,
            height: 36,
            bpc: 8,
            backend: "cpu".into(),
            fps: 0.0,
            shots: shots
                .iter()
                .enumerate()
                .map(|(index, &(first_frame, last_frame))| ShotResult {
                    index,
                    first_frame,
                    last_frame,
                    pooled: Vec::new(),
                })
                .collect(),
            pooled: Report::pool_frames(&frames),
            frames,
        }
    }

    #[test]
    fn names_the_feature_that_fell_furthest_below_its_shot_median() {
        let mut frames: Vec<FrameResult> = (0..8).map(|i| frame(i, 0.8, 0.95, 5.0, 90.0)).collect();
        // Frame 3: VIF 0 down 50 %, ADM down ~5 %, motion down to 0 (not a distortion).
        frames[3] = frame(3, 0.4, 0.9, 0.0, 60.0);
        // Frame 6: ADM down ~21 %, VIF 0 unchanged.
        frames[6] = frame(6, 0.8, 0.75, 5.0, 70.0);
        let worst = worst_frames(&report(frames, &[(0, 7)]), 2);
        assert_eq!(worst.len(), 2);
        assert_eq!((worst[0].index, worst[0].score), (3, 60.0));
        let cause = worst[0].cause.as_ref().expect("a cause");
        assert_eq!(cause.key, "integer_vif_scale0");
        assert_eq!(cause.median, 0.8);
        assert!((cause.relative_drop - 0.5).abs() < 1e-12);
        assert_eq!(cause.label(), "VIF scale 0");
        assert_eq!(worst[1].index, 6);
        assert_eq!(worst[1].cause.as_ref().expect("a cause").label(), "ADM");
    }

    #[test]
    fn medians_are_per_shot() {
        // Shot 0 has VIF 0.9, shot 1 VIF 0.5; frame 5 (shot 1) at 0.5 is normal for its shot.
        let mut frames: Vec<FrameResult> = (0..4).map(|i| frame(i, 0.9, 0.95, 5.0, 95.0)).collect();
        frames.extend((4..8).map(|i| frame(i, 0.5, 0.95, 5.0, 80.0)));
        frames[5] = frame(5, 0.5, 0.8, 5.0, 70.0);
        let worst = worst_frames(&report(frames, &[(0, 3), (4, 7)]), 1);
        assert_eq!(worst[0].index, 5);
        assert_eq!(worst[0].shot, Some(1));
        assert_eq!(
            worst[0].cause.as_ref().expect("a cause").key,
            "integer_adm2"
        );
    }

    #[test]
    fn no_cause_when_nothing_dropped_and_nan_scores_skipped() {
        let mut frames: Vec<FrameResult> = (0..4).map(|i| frame(i, 0.8, 0.9, 5.0, 90.0)).collect();
        frames[1] = frame(1, 0.8, 0.9, 0.0, 85.0);
        frames[2] = frame(2, 0.8, 0.9, 5.0, f64::NAN);
        let worst = worst_frames(&report(frames, &[(0, 3)]), 10);
        assert_eq!(worst.len(), 3, "the NaN frame is not listed");
        assert_eq!(worst[0].index, 1);
        assert_eq!(worst[0].cause, None, "only motion fell");
    }

    #[test]
    fn labels() {
        assert_eq!(feature_label("integer_adm_scale3"), "ADM scale 3");
        assert_eq!(
            feature_label("integer_vif_scale1_egl_1"),
            "VIF scale 1 (gain limit 1)"
        );
        assert_eq!(feature_label("psnr_cb"), "PSNR CB");
    }
}
