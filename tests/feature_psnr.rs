//! PSNR (`psnr_y`, `psnr_cb`, `psnr_cr`) against libvmaf 3.2.0's full-precision output.

mod common;

use serde_json::Value;
use vmafcuda::features::psnr::psnr;
use vmafcuda::y4m::Y4mReader;

/// Scores the first `count` frame pairs and compares every PSNR key within `tol`.
fn check(
    label: &str,
    reference: &std::path::Path,
    distorted: &std::path::Path,
    expected: &Value,
    tol: f64,
) {
    let frames = expected["frames"].as_array().expect("frames");
    let mut r = Y4mReader::open(reference).expect("open reference");
    let mut d = Y4mReader::open(distorted).expect("open distorted");
    for (i, e) in frames.iter().enumerate() {
        let rp = r.read_picture().expect("read").expect("reference frame");
        let dp = d.read_picture().expect("read").expect("distorted frame");
        // Chroma at libvmaf's floor(w/2) x floor(h/2): the top-left samples of odd-size planes.
        let (rv, dv) = (rp.view(), dp.view());
        let [ru, rcr] = rv.chroma.expect("reference chroma");
        let [du, dcr] = dv.chroma.expect("distorted chroma");
        for (key, ours) in [
            ("psnr_y", psnr(&rv.luma, &dv.luma)),
            ("psnr_cb", psnr(&ru, &du)),
            ("psnr_cr", psnr(&rcr, &dcr)),
        ] {
            let ev = e["metrics"][key].as_f64().expect("psnr value");
            assert!(
                (ours - ev).abs() <= tol,
                "{label} frame {i} {key}: ours {ours:?} libvmaf {ev:?}"
            );
        }
    }
}

fn check_pair(pair: &str) {
    let expected = common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json"));
    check(
        pair,
        &common::pair_reference(pair),
        &common::pair_distorted(pair),
        &expected,
        1e-9,
    );
}

#[test]
fn psnr_astronaut() {
    check_pair("s_astronaut_576x324__x264_crf28");
}

/// Odd size: chroma measured on the floor-sized top-left part.
#[test]
fn psnr_odd_size_chelsea() {
    check_pair("s_chelsea_641x359__x264_crf27_padcrop");
}

/// 10-bit: peak 1023, cap 72 dB.
#[test]
fn psnr_10bit_coffee() {
    check_pair("s_coffee_1280x720_10bit__x265_crf28");
}

/// Identical frames hit the 8-bit cap of 60 dB.
#[test]
fn psnr_identical_is_capped_at_60() {
    check_pair("s_testsrc2_576x324__identical");
}

#[test]
fn psnr_rocket_noise() {
    check_pair("s_rocket_176x144__noise10");
}

#[test]
fn psnr_multishot_per_shot() {
    let pair = "s_multishot_576x324__x264_crf30";
    check_pair(pair);
    // PSNR has no state: a shot's values are the whole clip's (only the frame offset differs).
    let whole = common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json"));
    let shots: Value = common::load_json("video/s_multishot_576x324.shots.json");
    for (k, start) in shots["shot_starts"]
        .as_array()
        .expect("starts")
        .iter()
        .enumerate()
    {
        let start = start.as_u64().expect("start") as usize;
        let shot = common::load_json(&format!("vmaf/{pair}.shot{k}.vmaf_v0.6.1.full.json"));
        for (i, f) in shot["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .enumerate()
        {
            for key in ["psnr_y", "psnr_cb", "psnr_cr"] {
                assert_eq!(
                    f["metrics"][key],
                    whole["frames"][start + i]["metrics"][key],
                    "shot {k} frame {i} {key}"
                );
            }
        }
    }
}

#[test]
fn psnr_odd_19x19() {
    let expected = common::load_json("edge_cases/odd_19x19.vmaf_v0.6.1.full.json");
    check(
        "odd_19x19",
        &common::y4m("edge_cases/odd_19x19_ref.y4m.zst"),
        &common::y4m("edge_cases/odd_19x19_dist.y4m.zst"),
        &expected,
        1e-9,
    );
}

#[test]
fn psnr_dist_has_fewer_frames() {
    let expected = common::load_json("edge_cases/dist_has_fewer_frames_8_vs_6.vmaf_v0.6.1.json");
    check(
        "dist_has_fewer_frames",
        &common::y4m("edge_cases/count_64x36_ref.y4m.zst"),
        &common::y4m("edge_cases/count_64x36_dist6.y4m.zst"),
        &expected,
        5e-7,
    );
}

/// Every SIMD level the CPU supports gives exactly the scalar level's PSNR, 8 to 16 bits, on
/// noise planes long enough for the 32-bit runs of deep samples to matter.
#[test]
fn every_simd_level_matches_scalar() {
    use vmafcuda::features::psnr::psnr_at;
    use vmafcuda::features::simd::SimdLevel;
    use vmafcuda::frame::{Plane, Samples};
    let levels = SimdLevel::supported();
    for level in SimdLevel::ALL.into_iter().filter(|l| !levels.contains(l)) {
        eprintln!("SKIPPED: SIMD level {level} (this CPU lacks it)");
    }
    let (w, h) = (4099, 3);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut noise = |bpc: u32| -> Vec<u16> {
        (0..w * h)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 20) as u16 & ((1u32 << bpc) - 1) as u16
            })
            .collect()
    };
    for bpc in [8u32, 10, 12, 15, 16] {
        let (a, b) = (noise(bpc), noise(bpc));
        let (a8, b8): (Vec<u8>, Vec<u8>) = (
            a.iter().map(|&v| v as u8).collect(),
            b.iter().map(|&v| v as u8).collect(),
        );
        fn plane<'a>(v16: &'a [u16], v8: &'a [u8], w: usize, h: usize, bpc: u32) -> Plane<'a> {
            Plane {
                samples: if bpc == 8 {
                    Samples::U8(v8)
                } else {
                    Samples::U16(v16)
                },
                width: w,
                height: h,
                stride: w,
                bpc,
            }
        }
        let (pa, pb) = (plane(&a, &a8, w, h, bpc), plane(&b, &b8, w, h, bpc));
        let scalar = psnr_at(SimdLevel::Scalar, &pa, &pb);
        for &level in &levels[1..] {
            assert_eq!(psnr_at(level, &pa, &pb), scalar, "{bpc}-bit at {level}");
        }
    }
}
