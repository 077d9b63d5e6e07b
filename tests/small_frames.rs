//! The smallest pictures libvmaf scores: 17 pixels in a dimension (it crashes at 16 and below).
//! `tests/data/small/` holds 6-frame y4m pairs (17x17, 17x18, 40x17; 8- and 10-bit; a blurred,
//! noisy distortion; made by `make.py`) and two libvmaf references for each (see its README):
//! * `*.full.json`: libvmaf 3.2.0 (the corpus commit, x86 asm build) through its C API
//!   (`libvmaf_api_dump.c`), every value a full double;
//! * `*.ffmpeg.json`: FFmpeg 9's `libvmaf` filter (PyPI `imageio-ffmpeg`), 6 decimals.
//!
//! Both were made on a CPU without AVX-512, while this engine reproduces libvmaf's AVX-512 build
//! (the corpus'). At these sizes the two builds differ in ADM where `adm.rs` documents it:
//! scale-0 bands at most 16 wide (pictures at most 32 wide) take `pow(2, -1)` as 2^32 - 1 under
//! AVX-512 and 0 in C/AVX2, and DWT inputs of 3..4 samples read row/column -1 of libvmaf's
//! scratch memory, which holds whatever the process left there (the API dump and FFmpeg disagree
//! with each other there by up to 0.56 in `integer_adm_scale3`). So, per metric:
//! * PSNR, VIF (all scales), motion: equal to the full-precision run within 1e-9, and to FFmpeg's
//!   within print rounding, at every size;
//! * ADM and VMAF of 40x17 (scale-0 bands 20 wide): equal to FFmpeg's within print rounding and
//!   `integer_adm_scale0` to the full-precision run within 1e-9;
//! * ADM and VMAF at width 17: within the documented AVX-512/C difference of FFmpeg's (scale 0
//!   within 5e-5, VMAF within 1e-3); the AVX-512 numbers themselves are checked on a
//!   libvmaf AVX-512 run in the corpus at 18x18 and 19x19 (`tests/feature_adm.rs`).
//!
//! Also: 16 pixels are refused with a true message, and the CUDA path gives the CPU's numbers
//! at 17 (skipped without a GPU).

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use vmafcuda::model::Model;
use vmafcuda::report::Report;
use vmafcuda::scorer::BackendRequest;
use vmafcuda::y4m::Y4mReader;
use vmafcuda::{Error, Geometry, Scorer, ScorerConfig};

/// libvmaf prints 6 decimals: half a unit of the last printed digit, plus the double's own slack.
const PRINT_TOL: f64 = 5.000001e-7;

const CASES: &[&str] = &[
    "small_17x17_8bit",
    "small_17x17_10bit",
    "small_17x18_8bit",
    "small_17x18_10bit",
    "small_40x17_8bit",
    "small_40x17_10bit",
];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/small")
        .join(name)
}

fn score(case: &str, backend: BackendRequest) -> Result<Report, Error> {
    let mut r = Y4mReader::open(data(&format!("{case}_ref.y4m"))).expect("open reference");
    let mut d = Y4mReader::open(data(&format!("{case}_dist.y4m"))).expect("open distorted");
    let h = r.header().clone();
    let config = ScorerConfig {
        psnr: true,
        ..ScorerConfig::new(Model::builtin("vmaf_v0.6.1").expect("model"))
    };
    let geometry = Geometry {
        width: h.width,
        height: h.height,
        bpc: h.bpc,
    };
    let mut scorer = Scorer::with_backend(config, geometry, backend)?;
    while let (Some(rp), Some(dp)) = (
        r.read_picture().expect("read reference"),
        d.read_picture().expect("read distorted"),
    ) {
        scorer.push(&rp.view(), &dp.view())?;
    }
    Ok(scorer.finish())
}

/// Metrics libvmaf computes the same way in every build at these sizes.
const DETERMINISTIC: &[&str] = &[
    "psnr_y",
    "psnr_cb",
    "psnr_cr",
    "integer_motion2",
    "integer_vif_scale0",
    "integer_vif_scale1",
    "integer_vif_scale2",
    "integer_vif_scale3",
];

/// ADM metrics and VMAF (which depend on ADM).
const ADM: &[&str] = &[
    "integer_adm2",
    "integer_adm_scale0",
    "integer_adm_scale1",
    "integer_adm_scale2",
    "integer_adm_scale3",
    "vmaf",
];

fn expected(case: &str, which: &str) -> Value {
    let path = data(&format!("{case}.vmaf_v0.6.1.{which}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).expect("json")
}

/// Largest |ours - libvmaf| of `key` over the frames (and the pooled values when `pooled`).
fn worst(case: &str, ours: &Report, expected: &Value, key: &str, pooled: bool) -> f64 {
    let frames = expected["frames"].as_array().expect("frames");
    assert_eq!(ours.frames.len(), frames.len(), "{case}: frame count");
    let mut worst = 0.0f64;
    for (ef, of) in frames.iter().zip(&ours.frames) {
        assert_eq!(of.index as u64, ef["frameNum"].as_u64().expect("frameNum"));
        let ev = ef["metrics"][key]
            .as_f64()
            .unwrap_or_else(|| panic!("{case}: libvmaf has no {key}"));
        let ov = of
            .get(key)
            .unwrap_or_else(|| panic!("{case}: we do not report {key}"));
        worst = worst.max((ov - ev).abs());
    }
    if pooled {
        let stats = ours
            .pooled(key)
            .unwrap_or_else(|| panic!("{case}: no pooled {key}"));
        for (method, ov) in [
            ("min", stats.min),
            ("max", stats.max),
            ("mean", stats.mean),
            ("harmonic_mean", stats.harmonic_mean),
        ] {
            let ev = expected["pooled_metrics"][key][method]
                .as_f64()
                .unwrap_or_else(|| panic!("{case}: libvmaf has no pooled {key}.{method}"));
            worst = worst.max((ov - ev).abs());
        }
    }
    worst
}

fn check(case: &str, ours: &Report) {
    let full = expected(case, "full");
    let ffmpeg = expected(case, "ffmpeg");
    for key in DETERMINISTIC {
        let d = worst(case, ours, &full, key, true);
        assert!(
            d <= 1e-9,
            "{case} {key}: {d:e} from libvmaf 3.2.0 (full precision)"
        );
        let d = worst(case, ours, &ffmpeg, key, true);
        assert!(d <= PRINT_TOL, "{case} {key}: {d:e} from FFmpeg's libvmaf");
    }
    let narrow = case.starts_with("small_17x");
    for key in ADM {
        let d = worst(case, ours, &ffmpeg, key, true);
        let allowed = match (narrow, *key) {
            (false, _) => PRINT_TOL,
            (true, "vmaf") => 1e-3,
            (true, _) => 5e-5,
        };
        assert!(
            d <= allowed,
            "{case} {key}: {d:e} from FFmpeg's libvmaf (allowed {allowed:e})"
        );
    }
    if !narrow {
        let d = worst(case, ours, &full, "integer_adm_scale0", true);
        assert!(
            d <= 1e-9,
            "{case} integer_adm_scale0: {d:e} from libvmaf 3.2.0"
        );
    }
}

#[test]
fn seventeen_pixel_frames_match_libvmaf_on_the_cpu() {
    for case in CASES {
        let ours = score(case, BackendRequest::Cpu).expect("17 pixels are scored");
        check(case, &ours);
    }
}

#[test]
fn seventeen_pixel_frames_on_cuda_equal_the_cpu() {
    let Some(_gpu) = common::gpu::gpu() else {
        return;
    };
    for case in CASES {
        let cpu = score(case, BackendRequest::Cpu).expect("cpu");
        let cuda = score(case, BackendRequest::Cuda { device: 0 }).expect("cuda scores 17 px");
        common::report::assert_identical(case, &cuda, &cpu);
        check(case, &cuda);
    }
}

#[test]
fn sixteen_pixels_are_refused_with_a_true_message() {
    let model = || Model::builtin("vmaf_v0.6.1").expect("model");
    for (width, height) in [(16, 17), (17, 16), (16, 16), (8, 8), (40, 16)] {
        let geometry = Geometry {
            width,
            height,
            bpc: 8,
        };
        let err = Scorer::new(ScorerConfig::new(model()), geometry)
            .err()
            .unwrap_or_else(|| panic!("{width}x{height} must be refused"));
        let text = err.to_string();
        assert!(
            matches!(err, Error::FrameTooSmall { min: 17, .. }),
            "{text}"
        );
        assert!(
            text.contains(&format!("{width}x{height}")) && text.contains("17x17"),
            "{text}"
        );
        assert!(text.contains("16 pixels and below"), "{text}");
    }
}

#[test]
fn samples_above_the_declared_depth_are_refused_with_their_position() {
    use vmafcuda::frame::SampleBuf;
    let case = "small_40x17_10bit";
    let read = |name: &str| {
        Y4mReader::open(data(&format!("{case}_{name}.y4m")))
            .expect("open")
            .read_picture()
            .expect("read")
            .expect("a picture")
    };
    let (reference, mut distorted) = (read("ref"), read("dist"));
    let geometry = Geometry {
        width: reference.width(),
        height: reference.height(),
        bpc: 10,
    };
    let config = || ScorerConfig::new(Model::builtin("vmaf_v0.6.1").expect("model"));
    // The largest 10-bit sample is accepted.
    let SampleBuf::U16(samples) = &mut distorted.luma.data else {
        panic!("10-bit samples are u16");
    };
    samples[40 + 7] = 1023;
    let mut scorer = Scorer::with_backend(config(), geometry, BackendRequest::Cpu).expect("scorer");
    scorer
        .push(&reference.view(), &distorted.view())
        .expect("1023 fits 10 bits");
    // One above it (an MSB-aligned sample, say) is named with its place (on the CPU: host
    // frames for the GPU are not scanned, see Scorer::check_depth).
    let SampleBuf::U16(samples) = &mut distorted.luma.data else {
        unreachable!();
    };
    samples[40 + 7] = 1024;
    {
        let mut scorer =
            Scorer::with_backend(config(), geometry, BackendRequest::Cpu).expect("scorer");
        let err = scorer
            .push(&reference.view(), &distorted.view())
            .expect_err("1024 does not fit 10 bits");
        let text = err.to_string();
        assert!(matches!(err, Error::InvalidPlane(_)), "{text}");
        assert!(
            text.contains("frame 0, distorted luma: sample 1024 at x=7, y=1 does not fit 10 bits"),
            "{text}"
        );
        assert_eq!(scorer.frames_pushed(), 0, "nothing was scored");
    }
}
