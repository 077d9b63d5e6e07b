//! The checks the CPU's two spatial features, ADM and VIF, share: a clip scored frame by frame,
//! compared with libvmaf's JSON metric by metric; every SIMD level against the scalar one; planes
//! with padded rows; synthetic cases against libvmaf's bits. Each feature's test file names its
//! cases, tolerances and expected tables.

use std::fmt::Debug;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::Value;
use vmafcuda::features::adm::{AdmExtractor, AdmScores, DEFAULT_ADM_ENHN_GAIN_LIMIT};
use vmafcuda::features::simd::SimdLevel;
use vmafcuda::features::vif::{VifExtractor, VifScores, DEFAULT_VIF_ENHN_GAIN_LIMIT};
use vmafcuda::frame::{Plane, Samples};
use vmafcuda::y4m::Y4mReader;

/// A spatial feature's extractor as these checks drive it.
pub trait Spatial: Sized {
    type Scores: PartialEq + Debug;
    /// libvmaf's default enhancement gain limit of the feature.
    const DEFAULT_GAIN: f64;
    fn make(width: usize, height: usize, bpc: u32, gain_limit: f64) -> Self;
    fn set_level(&mut self, level: SimdLevel) -> SimdLevel;
    fn level(&self) -> SimdLevel;
    fn score(&mut self, reference: &Plane, distorted: &Plane) -> Self::Scores;
    /// libvmaf's names of the metrics [`Spatial::values`] gives, in its order.
    const METRICS: &'static [&'static str];
    /// One frame's scores in [`Spatial::METRICS`]' order.
    fn values(scores: &Self::Scores) -> Vec<f64>;
}

impl Spatial for AdmExtractor {
    type Scores = AdmScores;
    const DEFAULT_GAIN: f64 = DEFAULT_ADM_ENHN_GAIN_LIMIT;
    fn make(width: usize, height: usize, bpc: u32, gain_limit: f64) -> Self {
        AdmExtractor::new(width, height, bpc, gain_limit)
    }
    fn set_level(&mut self, level: SimdLevel) -> SimdLevel {
        self.set_simd_level(level)
    }
    fn level(&self) -> SimdLevel {
        self.simd_level()
    }
    fn score(&mut self, reference: &Plane, distorted: &Plane) -> AdmScores {
        self.extract(reference, distorted)
    }
    const METRICS: &'static [&'static str] = &[
        "integer_adm2",
        "integer_adm_scale0",
        "integer_adm_scale1",
        "integer_adm_scale2",
        "integer_adm_scale3",
        "integer_aim",
        "integer_adm3",
    ];
    fn values(o: &AdmScores) -> Vec<f64> {
        vec![
            o.adm2, o.scale[0], o.scale[1], o.scale[2], o.scale[3], o.aim, o.adm3,
        ]
    }
}

impl Spatial for VifExtractor {
    type Scores = VifScores;
    const DEFAULT_GAIN: f64 = DEFAULT_VIF_ENHN_GAIN_LIMIT;
    fn make(width: usize, height: usize, bpc: u32, gain_limit: f64) -> Self {
        VifExtractor::new(width, height, bpc, gain_limit)
    }
    fn set_level(&mut self, level: SimdLevel) -> SimdLevel {
        self.set_simd_level(level)
    }
    fn level(&self) -> SimdLevel {
        self.simd_level()
    }
    fn score(&mut self, reference: &Plane, distorted: &Plane) -> VifScores {
        self.extract(reference, distorted)
    }
    const METRICS: &'static [&'static str] = &[
        "integer_vif_scale0",
        "integer_vif_scale1",
        "integer_vif_scale2",
        "integer_vif_scale3",
    ];
    fn values(o: &VifScores) -> Vec<f64> {
        o.scale.to_vec()
    }
}

type Clip = Y4mReader<BufReader<File>>;

/// The two clips of a pair, opened, with their luma's width, height and depth.
fn open_pair(reference: &Path, distorted: &Path) -> (Clip, Clip, usize, usize, u32) {
    let r = Y4mReader::open(reference).expect("open reference");
    let d = Y4mReader::open(distorted).expect("open distorted");
    let (w, h, bpc) = {
        let hd = r.header();
        (hd.width, hd.height, hd.bpc)
    };
    (r, d, w, h, bpc)
}

/// Scores every frame pair of two clips.
pub fn score_clips<X: Spatial>(
    reference: &Path,
    distorted: &Path,
    gain_limit: f64,
) -> Vec<X::Scores> {
    let (mut r, mut d, w, h, bpc) = open_pair(reference, distorted);
    let mut x = X::make(w, h, bpc, gain_limit);
    let mut out = Vec::new();
    while let (Some(rp), Some(dp)) = (
        r.read_picture().expect("read reference"),
        d.read_picture().expect("read distorted"),
    ) {
        out.push(x.score(&rp.luma.view(), &dp.luma.view()));
    }
    out
}

/// Every frame's every metric (its name + `suffix`) within `tol` of libvmaf's JSON.
pub fn compare<X: Spatial>(
    label: &str,
    ours: &[X::Scores],
    expected: &Value,
    suffix: &str,
    tol: f64,
) {
    let frames = expected["frames"].as_array().expect("frames");
    assert_eq!(ours.len(), frames.len(), "{label}: frame count");
    let mut worst = 0f64;
    for (i, (o, e)) in ours.iter().zip(frames).enumerate() {
        for (key, ov) in X::METRICS.iter().zip(X::values(o)) {
            let key = format!("{key}{suffix}");
            let ev = e["metrics"][&key]
                .as_f64()
                .unwrap_or_else(|| panic!("{label}: no {key}"));
            let diff = (ov - ev).abs();
            worst = worst.max(diff);
            assert!(
                diff <= tol,
                "{label} frame {i} {key}: ours {ov:?} libvmaf {ev:?} (diff {diff:e})"
            );
        }
    }
    eprintln!("{label}: {} frames, max |diff| {worst:e}", ours.len());
}

/// A corpus pair against its full-precision JSON; `neg` also checks the `_egl_1` values of
/// `vmaf_v0.6.1neg` (gain limit 1).
pub fn check_pair<X: Spatial>(pair: &str, neg: bool, tol: f64) {
    let reference = super::pair_reference(pair);
    let distorted = super::pair_distorted(pair);
    let ours = score_clips::<X>(&reference, &distorted, X::DEFAULT_GAIN);
    let expected = super::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json"));
    compare::<X>(pair, &ours, &expected, "", tol);
    if neg {
        let ours = score_clips::<X>(&reference, &distorted, 1.0);
        let expected = super::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1neg.full.json"));
        compare::<X>(&format!("{pair} (egl 1)"), &ours, &expected, "_egl_1", tol);
    }
}

/// An edge case of the corpus (`edge_cases/<name>_ref/_dist.y4m.zst`) against `json`.
pub fn check_edge<X: Spatial>(name: &str, json: &str, tol: f64) {
    let reference = super::y4m(&format!("edge_cases/{name}_ref.y4m.zst"));
    let distorted = super::y4m(&format!("edge_cases/{name}_dist.y4m.zst"));
    let ours = score_clips::<X>(&reference, &distorted, X::DEFAULT_GAIN);
    let expected = super::load_json(&format!("edge_cases/{json}"));
    compare::<X>(name, &ours, &expected, "", tol);
}

/// Flat black against flat black and against flat gray: every frame's scores pass `check`, and
/// equal libvmaf's exactly.
pub fn check_flat_frames<X: Spatial>(check: impl Fn(&X::Scores)) {
    let black = super::y4m("edge_cases/flat_black_64x36.y4m.zst");
    let gray = super::y4m("edge_cases/flat_gray_64x36.y4m.zst");
    for (d, json) in [
        (&black, "flat_black_vs_black.vmaf_v0.6.1.json"),
        (&gray, "flat_black_vs_gray.vmaf_v0.6.1.json"),
    ] {
        let ours = score_clips::<X>(&black, d, X::DEFAULT_GAIN);
        ours.iter().for_each(&check);
        let expected = super::load_json(&format!("edge_cases/{json}"));
        compare::<X>(json, &ours, &expected, "", 0.0);
    }
}

/// Every SIMD level the CPU supports gives exactly the scalar level's scores on the first
/// `frames` frames of each case (pair, frames, gain limit); levels the CPU lacks are reported
/// as skipped (run this on such a machine too).
pub fn every_simd_level_matches_scalar<X: Spatial>(cases: &[(&str, usize, f64)]) {
    let levels = SimdLevel::supported();
    for level in SimdLevel::ALL.into_iter().filter(|l| !levels.contains(l)) {
        eprintln!("SKIPPED: SIMD level {level} (this CPU lacks it)");
    }
    for &(pair, frames, gain) in cases {
        let (mut r, mut d, w, h, bpc) =
            open_pair(&super::pair_reference(pair), &super::pair_distorted(pair));
        let mut extractors: Vec<X> = levels
            .iter()
            .map(|&l| {
                let mut x = X::make(w, h, bpc, gain);
                assert_eq!(x.set_level(l), l);
                x
            })
            .collect();
        for _ in 0..frames {
            let rp = r.read_picture().expect("read").expect("frame");
            let dp = d.read_picture().expect("read").expect("frame");
            let (rv, dv) = (rp.luma.view(), dp.luma.view());
            let scalar = extractors[0].score(&rv, &dv);
            for (x, level) in extractors[1..].iter_mut().zip(&levels[1..]) {
                assert_eq!(x.score(&rv, &dv), scalar, "{pair} at {level}");
            }
        }
    }
}

/// Runs `f` on a plane view over `data` (8-bit content narrowed to `u8`).
pub fn with_plane<R>(
    data: &[u16],
    w: usize,
    h: usize,
    stride: usize,
    bpc: u32,
    f: impl FnOnce(&Plane) -> R,
) -> R {
    let narrow: Vec<u8>;
    let samples = if bpc == 8 {
        narrow = data.iter().map(|&v| v as u8).collect();
        Samples::U8(&narrow)
    } else {
        Samples::U16(data)
    };
    f(&Plane {
        samples,
        width: w,
        height: h,
        stride,
        bpc,
    })
}

/// Planes whose rows are 13 samples longer than their width (the padding at the depth's
/// maximum) give the same scores as the reader's packed planes, on each pair's first frame.
pub fn padded_stride_scores_the_same<X: Spatial>(pairs: &[&str]) {
    for &pair in pairs {
        let (mut r, mut d, ..) =
            open_pair(&super::pair_reference(pair), &super::pair_distorted(pair));
        let rp = r.read_picture().expect("read").expect("frame");
        let dp = d.read_picture().expect("read").expect("frame");
        let (rv, dv) = (rp.luma.view(), dp.luma.view());
        let (w, h, bpc) = (rv.width, rv.height, rv.bpc);
        let stride = w + 13;
        let pad = |p: &Plane| -> Vec<u16> {
            let mut v = vec![0xffffu16 >> (16 - bpc); stride * h];
            for y in 0..h {
                for x in 0..w {
                    v[y * stride + x] = p.get(x, y) as u16;
                }
            }
            v
        };
        let (r16, d16) = (pad(&rv), pad(&dv));
        let mut a = X::make(w, h, bpc, X::DEFAULT_GAIN);
        let mut b = X::make(w, h, bpc, X::DEFAULT_GAIN);
        let want = a.score(&rv, &dv);
        let got = with_plane(&r16, w, h, stride, bpc, |rpl| {
            with_plane(&d16, w, h, stride, bpc, |dpl| b.score(rpl, dpl))
        });
        assert_eq!(want, got, "{pair}");
    }
}

/// A synthetic case of the features' bit-exactness tests: name, width, height, bpc, gain limit
/// and its frames (reference, distorted; `width * height` samples each, rows packed).
pub type SynthCase = (String, usize, usize, u32, f64, Vec<(Vec<u16>, Vec<u16>)>);

/// Scores a synthetic case at the selected SIMD level, checking that every other level the CPU
/// has gives the same; one line per frame: the metrics' values (in [`Spatial::METRICS`]'
/// order) as f64 bit patterns.
pub fn synth_scores<X: Spatial>(case: &SynthCase) -> Vec<String> {
    let (_, w, h, bpc, gain, frames) = case;
    let (w, h, bpc) = (*w, *h, *bpc);
    let mut x = X::make(w, h, bpc, *gain);
    let mut others: Vec<X> = SimdLevel::supported()
        .into_iter()
        .filter(|&l| l != x.level())
        .map(|l| {
            let mut o = X::make(w, h, bpc, *gain);
            o.set_level(l);
            o
        })
        .collect();
    frames
        .iter()
        .map(|(r, d)| {
            let s = with_plane(r, w, h, w, bpc, |rp| {
                with_plane(d, w, h, w, bpc, |dp| {
                    let s = x.score(rp, dp);
                    for o in &mut others {
                        assert_eq!(s, o.score(rp, dp), "{} path", o.level());
                    }
                    s
                })
            });
            X::values(&s)
                .iter()
                .map(|v| format!("{:016x}", v.to_bits()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Writes synthetic cases as raw little-endian planes (`<name>.r`, `<name>.d`, all frames back
/// to back) plus `cases.txt` (`name width height bpc gain frames`) into the directory named by
/// the environment variable `dir_var` (nothing when it is unset), for libvmaf to score.
pub fn write_synth_cases(dir_var: &str, cases: Vec<SynthCase>) {
    let Some(dir) = std::env::var_os(dir_var) else {
        return;
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut list = String::new();
    for (name, w, h, bpc, gain, frames) in cases {
        for (tag, pick) in [("r", 0), ("d", 1)] {
            let mut bytes = Vec::new();
            for f in &frames {
                for &v in if pick == 0 { &f.0 } else { &f.1 } {
                    if bpc == 8 {
                        bytes.push(v as u8);
                    } else {
                        bytes.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
            std::fs::write(dir.join(format!("{name}.{tag}")), bytes).expect("write");
        }
        list += &format!("{name} {w} {h} {bpc} {gain:?} {}\n", frames.len());
    }
    std::fs::write(dir.join("cases.txt"), list).expect("write list");
}

/// Prints our scores of synthetic cases as `name frame bits...`, the format of the expected
/// tables.
pub fn print_synth_scores<X: Spatial>(cases: Vec<SynthCase>) {
    for case in cases {
        for (i, line) in synth_scores::<X>(&case).iter().enumerate() {
            println!("{} {i} {line}", case.0);
        }
    }
}

/// Every frame of every case scores libvmaf's bits exactly (`expected`: lines of
/// `name frame bits...`), and every expected line is checked.
pub fn check_synth_cases<X: Spatial>(cases: Vec<SynthCase>, expected: &str) {
    let expected: Vec<&str> = expected.lines().filter(|l| !l.is_empty()).collect();
    let mut n = 0;
    for case in cases {
        for (i, line) in synth_scores::<X>(&case).iter().enumerate() {
            let prefix = format!("{} {i} ", case.0);
            let want = expected
                .iter()
                .find_map(|l| l.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("no expected scores for {} frame {i}", case.0));
            assert_eq!(
                line,
                want,
                "{} frame {i} ({} as f64 bits)",
                case.0,
                X::METRICS.join(" ")
            );
            n += 1;
        }
    }
    assert_eq!(n, expected.len());
}
