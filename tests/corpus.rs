//! End-to-end: every pair and model of the libvmaf reference corpus, scored through the public
//! `Scorer` API, must equal libvmaf 3.2.0's full-precision output within 1e-9 — per frame, per
//! feature, pooled — and per shot for the multi-shot clip.

mod common;

use serde_json::Value;
use vmafcuda::model::Model;
use vmafcuda::report::Report;
use vmafcuda::y4m::Y4mReader;
use vmafcuda::{Geometry, Rebuild, Scorer, ScorerConfig};

const TOL: f64 = 1e-9;
/// The six features of the v0.6.1 models (suffixed `_egl_1` for neg) and the score: must exist.
const REQUIRED: &[&str] = &[
    "integer_adm2",
    "integer_motion2",
    "integer_vif_scale0",
    "integer_vif_scale1",
    "integer_vif_scale2",
    "integer_vif_scale3",
    "vmaf",
];

fn score(
    reference: &std::path::Path,
    distorted: &std::path::Path,
    model: &str,
    shots: Vec<usize>,
    skip: usize,
    count: usize,
) -> Report {
    let range = (skip, count);
    score_with(Rebuild::Full, reference, distorted, model, shots, range)
}

/// As [`score`], with the given shot-boundary mode; `(skip, count)`: the frames scored.
fn score_with(
    rebuild: Rebuild,
    reference: &std::path::Path,
    distorted: &std::path::Path,
    model: &str,
    shots: Vec<usize>,
    (skip, count): (usize, usize),
) -> Report {
    let mut r = Y4mReader::open(reference).expect("open reference");
    let mut d = Y4mReader::open(distorted).expect("open distorted");
    let h = r.header().clone();
    let config = ScorerConfig {
        psnr: true,
        shot_starts: shots,
        rebuild,
        ..ScorerConfig::new(Model::builtin(model).expect("builtin model"))
    };
    let mut scorer = Scorer::new(
        config,
        Geometry {
            width: h.width,
            height: h.height,
            bpc: h.bpc,
        },
    )
    .expect("scorer");
    let mut n = 0;
    while let (Some(rp), Some(dp)) = (
        r.read_picture().expect("read reference"),
        d.read_picture().expect("read distorted"),
    ) {
        if n >= skip && n < skip + count {
            scorer.push(&rp.view(), &dp.view()).expect("push");
        }
        n += 1;
    }
    scorer.finish()
}

fn key_matches(reference_key: &str, required: &str) -> bool {
    reference_key == required || reference_key == format!("{required}_egl_1")
}

/// Compares every metric of the libvmaf JSON with ours; `frame_offset` maps the JSON's
/// frameNum to our global index.
fn compare(label: &str, ours: &Report, expected: &Value, frame_offset: usize) {
    let frames = expected["frames"].as_array().expect("frames");
    assert_eq!(
        ours.frames.len(),
        frames.len(),
        "{label}: frame count differs"
    );
    let mut worst = 0.0f64;
    for (ef, of) in frames.iter().zip(&ours.frames) {
        let idx = ef["frameNum"].as_u64().expect("frameNum") as usize;
        assert_eq!(of.index, idx + frame_offset, "{label}: frame index");
        let metrics = ef["metrics"].as_object().expect("metrics");
        for req in REQUIRED {
            assert!(
                metrics.keys().any(|k| key_matches(k, req)),
                "{label}: reference lacks {req}"
            );
        }
        for (key, ev) in metrics {
            let ev = ev.as_f64().expect("number");
            let Some(ov) = of.get(key) else {
                panic!("{label} frame {idx}: we do not report {key}");
            };
            let diff = (ov - ev).abs();
            worst = worst.max(diff);
            assert!(
                diff <= TOL,
                "{label} frame {idx} {key}: ours {ov:?} libvmaf {ev:?} (diff {diff:e})"
            );
        }
    }
    let pooled = expected["pooled_metrics"].as_object().expect("pooled");
    for (key, stats) in pooled {
        let ours_stats = ours
            .pooled(key)
            .unwrap_or_else(|| panic!("{label}: no pooled {key}"));
        for (method, ov) in [
            ("min", ours_stats.min),
            ("max", ours_stats.max),
            ("mean", ours_stats.mean),
            ("harmonic_mean", ours_stats.harmonic_mean),
        ] {
            let ev = stats[method].as_f64().expect("pooled number");
            assert!(
                (ov - ev).abs() <= TOL,
                "{label} pooled {key}.{method}: ours {ov:?} libvmaf {ev:?}"
            );
        }
    }
    eprintln!("{label}: {} frames, worst |diff| {worst:e}", frames.len());
}

fn check_pair(pair: &str) {
    let corpus = common::require_corpus();
    let manifest: Value = common::load_json("manifest.json");
    let entry = &manifest["pairs"][pair];
    let jsons = entry["vmaf_json"].as_object().expect("vmaf_json");
    let reference = common::pair_reference(pair);
    let distorted = common::pair_distorted(pair);
    let mut checked = 0;
    for (model, rel) in jsons {
        let Some(model) = model.strip_suffix(".full") else {
            continue;
        };
        // Multi-shot pairs also list fresh per-shot runs (`shot<k>.<model>`): those are
        // checked by `multishot_shots_equal_fresh_per_shot_runs`.
        if model.starts_with("shot") {
            continue;
        }
        let expected = common::load_json(rel.as_str().expect("path"));
        let ours = score(&reference, &distorted, model, Vec::new(), 0, usize::MAX);
        compare(&format!("{pair} {model}"), &ours, &expected, 0);
        checked += 1;
    }
    assert!(
        checked > 0,
        "{pair}: no full-precision reference in {}",
        corpus.display()
    );
}

macro_rules! pair_tests {
    ($($name:ident => $pair:expr),* $(,)?) => {
        $(#[test] fn $name() { check_pair($pair); })*
    };
}

pair_tests! {
    astronaut_x264_crf28_all_models => "s_astronaut_576x324__x264_crf28",
    astronaut_x264_crf38 => "s_astronaut_576x324__x264_crf38",
    astronaut_x265_crf30 => "s_astronaut_576x324__x265_crf30",
    astronaut_gblur => "s_astronaut_576x324__gblur_s1.5",
    coffee_blockframe => "s_coffee_576x324__x264_crf30_blockframe20",
    coffee_ladder => "s_coffee_576x324__ladder384x216_x264_crf26",
    coffee_unsharp_all_models => "s_coffee_576x324__unsharp_5x5_1.2",
    testsrc2_x264 => "s_testsrc2_576x324__x264_crf30",
    testsrc2_identical => "s_testsrc2_576x324__identical",
    chelsea_odd_size => "s_chelsea_641x359__x264_crf27_padcrop",
    rocket_qcif_x264 => "s_rocket_176x144__x264_crf32",
    rocket_qcif_ladder => "s_rocket_176x144__ladder88x72_x264_crf23",
    rocket_qcif_noise => "s_rocket_176x144__noise10",
    collage_1080p_all_models => "s_collage_1920x1080__x264_crf23",
    coffee_10bit_all_models => "s_coffee_1280x720_10bit__x265_crf28",
    multishot_whole_clip_all_models => "s_multishot_576x324__x264_crf30",
}

#[test]
fn every_manifest_pair_has_a_test() {
    let manifest: Value = common::load_json("manifest.json");
    let pairs: Vec<&String> = manifest["pairs"]
        .as_object()
        .expect("pairs")
        .keys()
        .collect();
    let source = include_str!("corpus.rs");
    for p in pairs {
        assert!(
            source.contains(&format!("\"{p}\"")),
            "corpus pair {p} has no test here"
        );
    }
}

/// Each shot scored as a fresh session inside one run equals a fresh libvmaf run on that shot,
/// with a full rebuild at each boundary (the default) and with an in-place reset.
#[test]
fn multishot_shots_equal_fresh_per_shot_runs() {
    let pair = "s_multishot_576x324__x264_crf30";
    let shots: Value = common::load_json("video/s_multishot_576x324.shots.json");
    let starts: Vec<usize> = shots["shot_starts"]
        .as_array()
        .expect("shot_starts")
        .iter()
        .map(|v| v.as_u64().expect("start") as usize)
        .collect();
    let reference = common::pair_reference(pair);
    let distorted = common::pair_distorted(pair);
    let models = ["vmaf_v0.6.1", "vmaf_4k_v0.6.1", "vmaf_v0.6.1neg"];
    for (model, rebuild) in models
        .into_iter()
        .flat_map(|m| [(m, Rebuild::Full), (m, Rebuild::Reset), (m, Rebuild::Cold)])
    {
        let all = (0, usize::MAX);
        let whole = score_with(rebuild, &reference, &distorted, model, starts.clone(), all);
        assert_eq!(whole.shots.len(), starts.len(), "{model}: shot count");
        for (k, shot) in whole.shots.iter().enumerate() {
            let expected = common::load_json(&format!("vmaf/{pair}.shot{k}.{model}.full.json"));
            let n = expected["frames"].as_array().expect("frames").len();
            assert_eq!(shot.first_frame, starts[k], "{model} shot {k} first frame");
            assert_eq!(shot.frame_count(), n, "{model} shot {k} length");
            // The shot's slice of the whole run, compared frame by frame...
            let frames: Vec<_> = whole
                .frames
                .iter()
                .filter(|f| (shot.first_frame..=shot.last_frame).contains(&f.index))
                .cloned()
                .collect();
            let slice = Report {
                pooled: shot.pooled.clone(),
                frames,
                ..whole.clone()
            };
            compare(
                &format!("{pair} shot{k} {model}"),
                &slice,
                &expected,
                starts[k],
            );
            // ...and equal to scoring the shot alone.
            let alone = score(&reference, &distorted, model, Vec::new(), starts[k], n);
            for (a, b) in alone.frames.iter().zip(&slice.frames) {
                assert_eq!(a.metrics, b.metrics, "{model} shot {k} frame {}", b.index);
            }
        }
    }
}

/// Explicit boundaries, one frame per shot and 1-3 frame shots: each shot equals a fresh run.
#[test]
fn very_short_shots_equal_fresh_runs() {
    let pair = "s_rocket_176x144__x264_crf32";
    let reference = common::pair_reference(pair);
    let distorted = common::pair_distorted(pair);
    let starts = vec![0, 1, 2, 4, 7, 8, 11];
    let whole = score(&reference, &distorted, "vmaf_v0.6.1", starts.clone(), 0, 14);
    assert_eq!(whole.shots.len(), starts.len());
    for shot in &whole.shots {
        let alone = score(
            &reference,
            &distorted,
            "vmaf_v0.6.1",
            Vec::new(),
            shot.first_frame,
            shot.frame_count(),
        );
        let whole_frames: Vec<_> = whole
            .frames
            .iter()
            .filter(|f| (shot.first_frame..=shot.last_frame).contains(&f.index))
            .collect();
        assert_eq!(alone.frames.len(), whole_frames.len());
        for (a, b) in alone.frames.iter().zip(whole_frames) {
            assert_eq!(a.metrics, b.metrics, "frame {}", b.index);
            assert_eq!(a.index + shot.first_frame, b.index);
        }
        // A shot's first frame has no motion.
        let first = whole
            .frames
            .iter()
            .find(|f| f.index == shot.first_frame)
            .expect("first");
        assert_eq!(first.get("integer_motion2"), Some(0.0));
    }
}
