//! Integer motion (`VMAF_integer_feature_motion_sad_score`, `integer_motion2`, `integer_motion3`)
//! against libvmaf 3.2.0's full-precision output, frame by frame.

mod common;

use serde_json::Value;
use vmafcuda::features::motion::MotionExtractor;
use vmafcuda::frame::Picture;
use vmafcuda::y4m::Y4mReader;

/// (sad, motion2, motion3) of one frame.
type Motion = (f64, f64, f64);

/// Frames `skip..skip + count` of a clip.
fn read_frames(path: &std::path::Path, skip: usize, count: usize) -> Vec<Picture> {
    let mut r = Y4mReader::open(path).expect("open y4m");
    let mut out = Vec::new();
    let mut n = 0;
    while let Some(p) = r.read_picture().expect("read y4m") {
        if n >= skip + count {
            break;
        }
        if n >= skip {
            out.push(p);
        }
        n += 1;
    }
    out
}

/// Runs one motion session over `frames`, filling every value where the API says it is known.
fn run_session(frames: &[Picture]) -> Vec<Motion> {
    let first = &frames[0].luma;
    let mut m = MotionExtractor::new(first.width, first.height, first.bpc);
    let mut out: Vec<Option<Motion>> = vec![None; frames.len()];
    let mut sad = vec![f64::NAN; frames.len()];
    for (n, f) in frames.iter().enumerate() {
        let u = m.push(&f.luma.view());
        assert_eq!(u.index, n);
        sad[n] = u.sad;
        match (n, u.previous) {
            (0, None) => {}
            (n, Some((m2, m3))) if n > 0 => out[n - 1] = Some((sad[n - 1], m2, m3)),
            _ => panic!("frame {n}: previous frame's motion missing or unexpected"),
        }
    }
    let fin = m.flush().expect("flush of a non-empty session");
    assert_eq!(fin.index, frames.len() - 1);
    out[fin.index] = Some((sad[fin.index], fin.motion2, fin.motion3));
    out.into_iter()
        .map(|v| v.expect("every frame completed"))
        .collect()
}

fn compare(label: &str, ours: &[Motion], expected: &Value, tol: f64) {
    let frames = expected["frames"].as_array().expect("frames");
    assert_eq!(ours.len(), frames.len(), "{label}: frame count");
    for (i, (o, e)) in ours.iter().zip(frames).enumerate() {
        let m = &e["metrics"];
        for (key, ov) in [
            ("VMAF_integer_feature_motion_sad_score", o.0),
            ("integer_motion2", o.1),
            ("integer_motion3", o.2),
        ] {
            let ev = m[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{label}: no {key}"));
            assert!(
                (ov - ev).abs() <= tol,
                "{label} frame {i} {key}: ours {ov:?} libvmaf {ev:?}"
            );
        }
    }
}

fn check_pair(pair: &str) {
    let frames = read_frames(&common::pair_reference(pair), 0, usize::MAX);
    let expected = common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json"));
    compare(pair, &run_session(&frames), &expected, 1e-9);
}

#[test]
fn motion_astronaut() {
    check_pair("s_astronaut_576x324__x264_crf28");
}

#[test]
fn motion_odd_size_chelsea() {
    check_pair("s_chelsea_641x359__x264_crf27_padcrop");
}

#[test]
fn motion_10bit_coffee() {
    check_pair("s_coffee_1280x720_10bit__x265_crf28");
}

#[test]
fn motion_testsrc2() {
    check_pair("s_testsrc2_576x324__identical");
}

#[test]
fn motion_rocket_qcif() {
    check_pair("s_rocket_176x144__noise10");
}

#[test]
fn motion_1080p_collage() {
    check_pair("s_collage_1920x1080__x264_crf23");
}

/// Each shot is a fresh session: motion restarts at its first frame and its last frame uses no
/// next frame, exactly as a separate libvmaf run on the shot.
#[test]
fn motion_restarts_at_shot_boundary() {
    let pair = "s_multishot_576x324__x264_crf30";
    let shots: Value = common::load_json("video/s_multishot_576x324.shots.json");
    let starts: Vec<usize> = shots["shot_starts"]
        .as_array()
        .expect("shot_starts")
        .iter()
        .map(|v| v.as_u64().expect("start") as usize)
        .collect();
    let all = read_frames(&common::pair_reference(pair), 0, usize::MAX);
    for (k, &start) in starts.iter().enumerate() {
        let expected = common::load_json(&format!("vmaf/{pair}.shot{k}.vmaf_v0.6.1.full.json"));
        let n = expected["frames"].as_array().expect("frames").len();
        let ours = run_session(&all[start..start + n]);
        compare(&format!("{pair} shot{k}"), &ours, &expected, 1e-9);
    }
    // And the whole clip as one session.
    let expected = common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json"));
    compare(pair, &run_session(&all), &expected, 1e-9);
}

#[test]
fn motion_odd_19x19() {
    let frames = read_frames(
        &common::y4m("edge_cases/odd_19x19_ref.y4m.zst"),
        0,
        usize::MAX,
    );
    let expected = common::load_json("edge_cases/odd_19x19.vmaf_v0.6.1.full.json");
    compare("odd_19x19", &run_session(&frames), &expected, 1e-9);
}

/// libvmaf scores the common frames when the distorted clip is shorter; its JSON has 6 decimals.
#[test]
fn motion_dist_has_fewer_frames() {
    let frames = read_frames(&common::y4m("edge_cases/count_64x36_ref.y4m.zst"), 0, 6);
    let expected = common::load_json("edge_cases/dist_has_fewer_frames_8_vs_6.vmaf_v0.6.1.json");
    compare(
        "dist_has_fewer_frames",
        &run_session(&frames),
        &expected,
        5e-7,
    );
}

/// One- and two-frame sessions, checked against what libvmaf's flush makes of their sad scores
/// (the sad of frame 1 of a session is the same whatever comes after it).
#[test]
fn motion_one_and_two_frame_sessions() {
    let frames = read_frames(&common::pair_reference("s_rocket_176x144__noise10"), 10, 2);
    let one = run_session(&frames[..1]);
    assert_eq!(one, vec![(0.0, 0.0, 0.0)]);
    let two = run_session(&frames);
    let expected = common::load_json("vmaf/s_rocket_176x144__noise10.vmaf_v0.6.1.full.json");
    let sad11 = expected["frames"][11]["metrics"]["VMAF_integer_feature_motion_sad_score"]
        .as_f64()
        .expect("sad");
    // Frame 0: motion2 0, motion3 = the (blended) sad of frame 1; frame 1: its own sad.
    assert_eq!(two, vec![(0.0, 0.0, sad11), (sad11, sad11, sad11)]);
}

/// Every SIMD level the CPU supports gives exactly the scalar level's sad scores: corpus clips
/// (8- and 10-bit, odd size) and a 16-bit noise clip (the wide path). Levels the CPU lacks are
/// reported as skipped.
#[test]
fn every_simd_level_matches_scalar() {
    use vmafcuda::features::simd::SimdLevel;
    use vmafcuda::frame::{Plane, Samples};
    let levels = SimdLevel::supported();
    for level in SimdLevel::ALL.into_iter().filter(|l| !levels.contains(l)) {
        eprintln!("SKIPPED: SIMD level {level} (this CPU lacks it)");
    }
    let sads = |planes: &[Plane], level: SimdLevel| -> Vec<f64> {
        let p = &planes[0];
        let mut m = MotionExtractor::new(p.width, p.height, p.bpc);
        assert_eq!(m.set_simd_level(level), level);
        planes.iter().map(|p| m.push(p).sad).collect()
    };
    for pair in [
        "s_chelsea_641x359__x264_crf27_padcrop",
        "s_coffee_1280x720_10bit__x265_crf28",
    ] {
        let frames = read_frames(&common::pair_reference(pair), 0, 4);
        let planes: Vec<Plane> = frames.iter().map(|f| f.luma.view()).collect();
        let scalar = sads(&planes, SimdLevel::Scalar);
        for &level in &levels[1..] {
            assert_eq!(sads(&planes, level), scalar, "{pair} at {level}");
        }
    }
    let (w, h) = (83, 37);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<Vec<u16>> = (0..3)
        .map(|_| {
            (0..w * h)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u16
                })
                .collect()
        })
        .collect();
    let planes: Vec<Plane> = noise
        .iter()
        .map(|v| Plane {
            samples: Samples::U16(v),
            width: w,
            height: h,
            stride: w,
            bpc: 16,
        })
        .collect();
    let scalar = sads(&planes, SimdLevel::Scalar);
    assert!(scalar[1] > 0.0);
    for &level in &levels[1..] {
        assert_eq!(sads(&planes, level), scalar, "16-bit noise at {level}");
    }
}
