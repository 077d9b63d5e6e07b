//! Pooling against libvmaf 3.2.0's `pooled_metrics`: for every full-precision JSON of the
//! reference corpus, pooling each metric's per-frame values (in frame order) must give libvmaf's
//! min / max / mean / harmonic_mean (expected bit-exact; asserted within 1e-9).

mod common;

use std::path::PathBuf;

use serde_json::Value;
use vmafcuda::pool::{self, PooledStats};

const TOL: f64 = 1e-9;
const STATS: [&str; 4] = ["min", "max", "mean", "harmonic_mean"];

fn jsons(full: bool) -> Vec<PathBuf> {
    let corpus = common::require_corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join("vmaf"))
        .expect("read corpus/vmaf")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".json") && n.ends_with(".full.json") == full
        })
        .collect();
    files.sort();
    files
}

fn get(s: &PooledStats, stat: &str) -> f64 {
    match stat {
        "min" => s.min,
        "max" => s.max,
        "mean" => s.mean,
        "harmonic_mean" => s.harmonic_mean,
        _ => unreachable!(),
    }
}

/// Pools every metric of `json` and compares with its `pooled_metrics`. Returns (values
/// compared, bit-exact ones, max abs difference).
fn check(label: &str, json: &Value, tol: f64) -> (usize, usize, f64) {
    let frames = json["frames"].as_array().expect("frames");
    let pooled = json["pooled_metrics"].as_object().expect("pooled_metrics");
    assert!(pooled.contains_key("vmaf"), "{label}: no pooled vmaf");
    let (mut n, mut exact, mut worst) = (0, 0, 0.0f64);
    for (key, expected) in pooled {
        let values: Vec<f64> = frames
            .iter()
            .map(|f| {
                f["metrics"][key.as_str()]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{label}: frame without {key}"))
            })
            .collect();
        let stats = PooledStats::from_values(&values).expect("non-empty");
        for stat in STATS {
            let want = expected[stat].as_f64().expect("pooled value");
            let got = get(&stats, stat);
            let d = (got - want).abs();
            assert!(
                d <= tol,
                "{label}: {key}.{stat} pooled {got:?}, libvmaf {want:?} (diff {d:e})"
            );
            n += 1;
            worst = worst.max(d);
            if got.to_bits() == want.to_bits() {
                exact += 1;
            }
        }
        // The free functions agree with the struct.
        assert_eq!(pool::mean(&values), Some(stats.mean));
        assert_eq!(pool::harmonic_mean(&values), Some(stats.harmonic_mean));
        assert_eq!(pool::min(&values), Some(stats.min));
        assert_eq!(pool::max(&values), Some(stats.max));
        assert_eq!(pool::percentile(&values, 5.0), Some(stats.p5));
        assert_eq!(pool::percentile(&values, 10.0), Some(stats.p10));
        assert!(stats.min <= stats.p5 && stats.p5 <= stats.p10 && stats.p10 <= stats.max);
    }
    (n, exact, worst)
}

#[test]
fn pooled_metrics_match_every_full_json() {
    let corpus = common::require_corpus();
    let mut files = jsons(true);
    assert!(
        files.len() >= 38,
        "expected the corpus' full JSONs, found {}",
        files.len()
    );
    files.push(corpus.join("edge_cases/odd_19x19.vmaf_v0.6.1.full.json"));
    let (mut n, mut exact, mut worst) = (0, 0, 0.0f64);
    for path in &files {
        let label = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let json: Value = serde_json::from_str(&text).unwrap();
        let (a, b, w) = check(&label, &json, TOL);
        n += a;
        exact += b;
        worst = worst.max(w);
    }
    eprintln!(
        "{} files, {n} pooled values, {exact} bit-exact, max |diff| {worst:e}",
        files.len()
    );
    assert_eq!(exact, n, "every pooled value should be bit-exact");
}

/// The CLI's 6-decimal JSONs: frame values are rounded to 6 decimals, so pooling them can
/// differ from libvmaf's pooling of the full values by print rounding (5e-7) and the rounding
/// of the pooled value itself (5e-7); the harmonic mean amplifies it a little more for values
/// near -1, which do not occur here.
#[test]
fn pooled_metrics_match_six_decimal_jsons() {
    let mut files = jsons(false);
    let corpus = common::require_corpus();
    for case in [
        "tiny_18x18",
        "flat_black_vs_black",
        "flat_black_vs_gray",
        "dist_has_fewer_frames_8_vs_6",
    ] {
        files.push(corpus.join(format!("edge_cases/{case}.vmaf_v0.6.1.json")));
    }
    for path in &files {
        let label = path.file_name().unwrap().to_string_lossy().into_owned();
        let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        check(&label, &json, 1.5e-6);
    }
}

#[test]
fn libvmaf_definitions() {
    let v = [3.0, 0.0, 1.0, 7.0];
    assert_eq!(pool::mean(&v), Some(((3.0 + 0.0) + 1.0 + 7.0) / 4.0));
    // Harmonic mean shifted by one: n / sum(1/(v+1)) - 1.
    let inv: f64 = 1.0 / 4.0 + 1.0 / 1.0 + 1.0 / 2.0 + 1.0 / 8.0;
    assert_eq!(pool::harmonic_mean(&v), Some(4.0 / inv - 1.0));
    assert_eq!(pool::min(&v), Some(0.0));
    assert_eq!(pool::max(&v), Some(7.0));
    // Summation is in slice order (not pairwise or sorted): visible with cancellation.
    let w = [1e16, 1.0, -1e16, 1.0];
    assert_eq!(pool::mean(&w), Some((((1e16 + 1.0) + -1e16) + 1.0) / 4.0));
}

#[test]
fn percentiles_interpolate_between_closest_ranks() {
    // Sorted: 10, 20, ..., 110 (n = 11, r = p * 10 / 100).
    let v: Vec<f64> = [50, 110, 10, 30, 20, 90, 100, 40, 60, 80, 70]
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    assert_eq!(pool::percentile(&v, 10.0), Some(20.0));
    assert_eq!(pool::percentile(&v, 5.0), Some(10.0 * 0.5 + 20.0 * 0.5));
    assert_eq!(pool::percentile(&v, 0.0), Some(10.0));
    assert_eq!(pool::percentile(&v, 100.0), Some(110.0));
    assert_eq!(pool::percentile(&v, 25.0), Some(30.0 * 0.5 + 40.0 * 0.5));
    // n = 24 frames: r = 0.05 * 23 = 1.15 -> v1 + (v2 - v1) * 0.15.
    let v: Vec<f64> = (0..24).map(|i| f64::from(i) * 2.0).collect();
    let r = 5.0 * 23.0 / 100.0;
    assert_eq!(
        pool::percentile(&v, 5.0),
        Some(2.0 + (4.0 - 2.0) * (r - 1.0))
    );
    // Equal neighbours give their value exactly; the result stays within min..max.
    let same = [0.1; 24];
    assert_eq!(pool::percentile(&same, 5.0), Some(0.1));
    assert_eq!(pool::percentile(&same, 10.0), Some(0.1));
    let s = PooledStats::from_values(&[42.0]).unwrap();
    assert_eq!(
        s,
        PooledStats {
            min: 42.0,
            max: 42.0,
            mean: 42.0,
            harmonic_mean: 42.0,
            p5: 42.0,
            p10: 42.0
        }
    );
}

#[test]
fn empty_input_gives_none() {
    assert_eq!(PooledStats::from_values(&[]), None);
    assert_eq!(pool::mean(&[]), None);
    assert_eq!(pool::harmonic_mean(&[]), None);
    assert_eq!(pool::min(&[]), None);
    assert_eq!(pool::max(&[]), None);
    assert_eq!(pool::percentile(&[], 50.0), None);
}

// ---- Bounded pooling (live streams): exact min/max/mean/harmonic mean, percentiles within the
// documented bound -------------------------------------------------------------------------

/// The documented bound of a bounded percentile (`vmafcuda::pool` docs): `2^-12` of the larger
/// magnitude of the two order statistics interpolated, plus the interpolation's own rounding.
fn sketch_bound(sorted: &[f64], p: f64) -> f64 {
    let r = p * (sorted.len() - 1) as f64 / 100.0;
    let scale = sorted[r.floor() as usize]
        .abs()
        .max(sorted[r.ceil() as usize].abs());
    scale * (2f64.powi(-12) + 4.0 * f64::EPSILON)
}

/// Pools `values` both ways; asserts the four libvmaf statistics are the same bits and every
/// percentile in `ps` within the bound. Returns the largest error relative to its bound.
fn compare_modes(label: &str, values: &[f64], ps: &[f64]) -> f64 {
    let (mut exact, mut bounded) = (
        pool::MetricPool::new(pool::Pooling::Exact),
        pool::MetricPool::new(pool::Pooling::Bounded),
    );
    let mut sketch = pool::PercentileSketch::default();
    for &v in values {
        exact.push(v);
        bounded.push(v);
        sketch.push(v);
    }
    let (e, b) = (exact.stats().unwrap(), bounded.stats().unwrap());
    for (x, y, what) in [
        (e.min, b.min, "min"),
        (e.max, b.max, "max"),
        (e.mean, b.mean, "mean"),
        (e.harmonic_mean, b.harmonic_mean, "harmonic_mean"),
    ] {
        assert_eq!(x.to_bits(), y.to_bits(), "{label}: {what} {x:?} vs {y:?}");
    }
    assert!(
        b.min <= b.p5 && b.p5 <= b.p10 && b.p10 <= b.max,
        "{label}: {b:?}"
    );
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut worst = 0.0f64;
    for &p in ps.iter().chain(&[5.0, 10.0]) {
        let want = pool::percentile(values, p).unwrap();
        let got = sketch.percentile(p).unwrap();
        let bound = sketch_bound(&sorted, p);
        let err = (got - want).abs();
        assert!(
            err <= bound,
            "{label}: p{p} bounded {got:?}, exact {want:?}: error {err:e} above the bound {bound:e}"
        );
        if bound > 0.0 {
            worst = worst.max(err / bound);
        }
    }
    assert_eq!(b.p5, sketch.percentile(5.0).unwrap());
    assert_eq!(b.p10, sketch.percentile(10.0).unwrap());
    worst
}

const PS: [f64; 11] = [
    0.0, 0.5, 1.0, 2.5, 25.0, 33.3, 50.0, 75.0, 90.0, 99.0, 100.0,
];

#[test]
fn bounded_pooling_on_real_scores_is_exact_but_for_percentiles_within_the_bound() {
    let mut stream: Vec<f64> = Vec::new();
    let mut worst = 0.0f64;
    let mut metrics = 0;
    for path in jsons(true) {
        let label = path.file_name().unwrap().to_string_lossy().into_owned();
        let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let frames = json["frames"].as_array().expect("frames");
        let keys: Vec<String> = frames[0]["metrics"]
            .as_object()
            .expect("metrics")
            .keys()
            .cloned()
            .collect();
        for key in keys {
            let values: Vec<f64> = frames
                .iter()
                .map(|f| f["metrics"][key.as_str()].as_f64().expect("number"))
                .collect();
            worst = worst.max(compare_modes(&format!("{label} {key}"), &values, &PS));
            metrics += 1;
            if key == "vmaf" {
                stream.extend(&values);
            }
        }
    }
    // Every corpus clip's VMAF one after the other: one long stream of real scores.
    let w = compare_modes("all corpus VMAF", &stream, &PS);
    eprintln!(
        "{metrics} metrics and one stream of {} VMAF scores: largest percentile error {:.3} of the bound",
        stream.len(),
        worst.max(w)
    );
    assert!(stream.len() >= 900, "{} VMAF scores", stream.len());
    // The sketch is not exact on real scores (else this test would prove nothing).
    assert!(worst.max(w) > 0.01, "no percentile was approximated");
}

#[test]
fn bounded_pooling_on_synthetic_streams_stays_within_the_bound() {
    let mut rng = common::synth::SplitMix(17);
    let mut unit = move || rng.next() as f64 / u64::MAX as f64;
    let n = 200_000;
    let streams: Vec<(&str, Vec<f64>)> = vec![
        (
            "uniform VMAF 0..100",
            (0..n).map(|_| 100.0 * unit()).collect(),
        ),
        (
            "clipped VMAF: a third at 100",
            (0..n)
                .map(|i| {
                    if i % 3 == 0 {
                        100.0
                    } else {
                        60.0 + 40.0 * unit()
                    }
                })
                .collect(),
        ),
        (
            "log-uniform 1e-6..1e3 (motion-like)",
            (0..n).map(|_| 10f64.powf(-6.0 + 9.0 * unit())).collect(),
        ),
        (
            "signed, around zero (disable-clip VMAF)",
            (0..n).map(|_| 20.0 * (unit() - 0.3)).collect(),
        ),
        (
            "few distinct values",
            (0..n).map(|i| [0.0, 0.5, 0.25, 1.0][i % 4]).collect(),
        ),
        ("short stream", (0..7).map(|_| 100.0 * unit()).collect()),
    ];
    let mut worst = 0.0f64;
    for (label, values) in &streams {
        worst = worst.max(compare_modes(label, values, &PS));
    }
    eprintln!("synthetic streams: largest percentile error {worst:.3} of the bound");
    assert!(worst > 0.1, "no percentile was approximated");
}

#[test]
fn sketch_memory_depends_on_the_range_not_the_count() {
    let mut s = pool::PercentileSketch::default();
    let mut rng = common::synth::SplitMix(5);
    // A million VMAF scores from 1 to 100: 7 powers of two, at most 2048 bins each.
    for _ in 0..1_000_000 {
        s.push(1.0 + 99.0 * (rng.next() as f64 / u64::MAX as f64));
    }
    let bins = s.bins();
    assert!(bins <= 7 * 2048, "{bins} bins");
    for _ in 0..1_000_000 {
        s.push(1.0 + 99.0 * (rng.next() as f64 / u64::MAX as f64));
    }
    assert_eq!(s.count(), 2_000_000);
    assert!(s.bins() <= bins + 16, "{} bins after {bins}", s.bins());
}
