//! The `vmafcuda` command line: real runs of the built binary on corpus files and edge cases.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use common::{load_output as load, stderr};

fn vmafcuda(args: &[&str]) -> Output {
    vmafcuda_env(args, &[])
}

/// The binary with `env` set, in its own process (never handed to a service a developer may
/// have running: tests/service.rs covers that).
fn vmafcuda_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vmafcuda"))
        .args(args)
        .env("VMAFCUDA_SERVICE", "off")
        .envs(env.iter().copied())
        .output()
        .expect("run vmafcuda")
}

fn tmp(name: &str) -> PathBuf {
    let dir = common::workspace_dir().join("target/cli-tests");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

fn edge(name: &str) -> String {
    common::y4m(&format!("edge_cases/{name}.y4m.zst"))
        .to_string_lossy()
        .into_owned()
}

fn score_json(reference: &str, distorted: &str, extra: &[&str], out: &str) -> Value {
    let out = tmp(out);
    let out_s = out.to_string_lossy().into_owned();
    let mut args = vec![
        "score", "-r", reference, "-d", distorted, "-o", &out_s, "-q",
    ];
    args.extend_from_slice(extra);
    let o = vmafcuda(&args);
    assert!(o.status.success(), "vmafcuda failed: {}", stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(&out).expect("output")).expect("valid JSON")
}

/// Per-frame and pooled comparison against a libvmaf JSON with tolerance `tol`.
fn assert_matches(ours: &Value, expected: &Value, tol: f64) {
    let of = ours["frames"].as_array().expect("frames");
    let ef = expected["frames"].as_array().expect("frames");
    assert_eq!(of.len(), ef.len(), "frame count");
    for (o, e) in of.iter().zip(ef) {
        for (k, ev) in e["metrics"].as_object().expect("metrics") {
            let ov = o["metrics"][k]
                .as_f64()
                .unwrap_or_else(|| panic!("missing {k}"));
            let ev = ev.as_f64().expect("number");
            assert!(
                (ov - ev).abs() <= tol,
                "frame {} {k}: {ov} vs {ev}",
                e["frameNum"]
            );
        }
    }
    for (k, stats) in expected["pooled_metrics"].as_object().expect("pooled") {
        for m in ["min", "max", "mean", "harmonic_mean"] {
            let ov = ours["pooled_metrics"][k][m].as_f64().expect("pooled");
            let ev = stats[m].as_f64().expect("pooled");
            assert!((ov - ev).abs() <= tol, "pooled {k}.{m}: {ov} vs {ev}");
        }
    }
}

#[test]
fn demo_run_scores_builtin_clip_with_two_shots() {
    let out = tmp("demo.json");
    let o = vmafcuda(&[
        "score",
        "-o",
        out.to_str().expect("utf8"),
        "--backend",
        "cpu",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("VMAF mean"), "summary missing: {stdout}");
    assert!(
        stdout.contains("shot   1"),
        "per-shot line missing: {stdout}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(out).expect("out")).expect("json");
    assert_eq!(v["frames"].as_array().expect("frames").len(), 48);
    assert_eq!(v["shots"].as_array().expect("shots").len(), 2);
    let mean = v["pooled_metrics"]["vmaf"]["mean"].as_f64().expect("mean");
    assert!(
        mean > 5.0 && mean < 99.0,
        "demo distortion should be visible: {mean}"
    );
}

/// `--rebuild full` (the default), `--rebuild reset` and `--rebuild cold` write the same frames
/// and shots, and the shots equal libvmaf's fresh per-shot runs every way; an unknown mode is a
/// usage error.
#[test]
fn rebuild_modes_give_identical_per_shot_scores() {
    let pair = "s_multishot_576x324__x264_crf30";
    let (r, d) = (common::pair_reference(pair), common::pair_distorted(pair));
    let (r, d) = (r.to_str().expect("utf8"), d.to_str().expect("utf8"));
    let shots = ["--shots", "0,14,36,46", "--backend", "cpu"];
    let run = |mode: &str| {
        let mut extra = shots.to_vec();
        extra.extend(["--rebuild", mode]);
        score_json(r, d, &extra, &format!("rebuild-{mode}.json"))
    };
    let full = run("full");
    for other in [run("reset"), run("cold")] {
        assert_eq!(full["frames"], other["frames"]);
        assert_eq!(full["shots"], other["shots"]);
        assert_eq!(full["pooled_metrics"], other["pooled_metrics"]);
    }
    for (k, shot) in full["shots"].as_array().expect("shots").iter().enumerate() {
        let expected = common::load_json(&format!("vmaf/{pair}.shot{k}.vmaf_v0.6.1.full.json"));
        let mean = expected["pooled_metrics"]["vmaf"]["mean"]
            .as_f64()
            .expect("mean");
        let ours = shot["pooled_metrics"]["vmaf"]["mean"]
            .as_f64()
            .expect("ours");
        assert!((ours - mean).abs() <= 1e-9, "shot {k}: {ours} vs {mean}");
    }
    let o = vmafcuda(&["score", "--rebuild", "sometimes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("full, reset or cold"), "{}", stderr(&o));
}

#[test]
fn odd_19x19_matches_libvmaf_api_run() {
    let v = score_json(
        &edge("odd_19x19_ref"),
        &edge("odd_19x19_dist"),
        &["--feature", "psnr"],
        "odd19.json",
    );
    assert_matches(
        &v,
        &common::load_json("edge_cases/odd_19x19.vmaf_v0.6.1.full.json"),
        1e-9,
    );
}

#[test]
fn tiny_18x18_matches_libvmaf() {
    let v = score_json(
        &edge("tiny_18x18_ref"),
        &edge("tiny_18x18_dist"),
        &["--feature", "psnr"],
        "tiny18.json",
    );
    assert_matches(
        &v,
        &common::load_json("edge_cases/tiny_18x18.vmaf_v0.6.1.json"),
        5e-7,
    );
}

#[test]
fn flat_frames_score_97_428043() {
    let black = edge("flat_black_64x36");
    let gray = edge("flat_gray_64x36");
    for (d, name) in [
        (&black, "flat_black_vs_black"),
        (&gray, "flat_black_vs_gray"),
    ] {
        let v = score_json(&black, d, &["--feature", "psnr"], &format!("{name}.json"));
        assert_matches(
            &v,
            &common::load_json(&format!("edge_cases/{name}.vmaf_v0.6.1.json")),
            5e-7,
        );
        for f in v["frames"].as_array().expect("frames") {
            assert!((f["metrics"]["vmaf"].as_f64().expect("vmaf") - 97.428043).abs() < 5e-7);
        }
    }
}

#[test]
fn shorter_distorted_scores_common_frames_and_warns() {
    let r = edge("count_64x36_ref");
    let d = edge("count_64x36_dist6");
    let out = tmp("count.json");
    let o = vmafcuda(&[
        "score",
        "-r",
        &r,
        "-d",
        &d,
        "--feature",
        "psnr",
        "-o",
        out.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("count_64x36_dist6.y4m") && stderr(&o).contains("ended before"),
        "{}",
        stderr(&o)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(out).expect("out")).expect("json");
    assert_matches(
        &v,
        &common::load_json("edge_cases/dist_has_fewer_frames_8_vs_6.vmaf_v0.6.1.json"),
        5e-7,
    );
}

#[test]
fn mismatched_sizes_are_a_clear_error() {
    let o = vmafcuda(&[
        "score",
        "-r",
        &edge("mism_a_64x64_ref"),
        "-d",
        &edge("mism_b_80x64_dist"),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("frame size") && e.contains("64x64") && e.contains("80x64"),
        "{e}"
    );
    assert!(e.contains("mism_b_80x64_dist.y4m"), "{e}");
}

#[test]
fn frames_of_16_pixels_or_less_are_refused_not_crashed() {
    for n in ["16x16", "8x8"] {
        let o = vmafcuda(&[
            "score",
            "-r",
            &edge(&format!("tiny_{n}_ref")),
            "-d",
            &edge(&format!("tiny_{n}_dist")),
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(1), "{n}: {}", stderr(&o));
        assert!(stderr(&o).contains("too small"), "{}", stderr(&o));
        assert!(stderr(&o).contains("16 pixels and below"), "{}", stderr(&o));
    }
}

#[test]
fn truncated_and_corrupt_inputs_are_clear_errors() {
    let good = edge("tiny_18x18_ref");
    let bytes = std::fs::read(&good).expect("read");
    let truncated = tmp("truncated.y4m");
    std::fs::write(&truncated, &bytes[..bytes.len() - 100]).expect("write");
    let o = vmafcuda(&[
        "score",
        "-r",
        &good,
        "-d",
        truncated.to_str().expect("utf8"),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("truncated.y4m") && stderr(&o).contains("truncated"),
        "{}",
        stderr(&o)
    );

    let garbage = tmp("garbage.y4m");
    std::fs::write(&garbage, b"RIFF....WAVEfmt ").expect("write");
    let o = vmafcuda(&[
        "score",
        "-r",
        &good,
        "-d",
        garbage.to_str().expect("utf8"),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a YUV4MPEG2"), "{}", stderr(&o));

    let badframe = tmp("badframe.y4m");
    let header_end = bytes.iter().position(|&b| b == b'\n').expect("header") + 1;
    let mut corrupt = bytes.clone();
    corrupt[header_end..header_end + 5].copy_from_slice(b"XXXXX");
    std::fs::write(&badframe, corrupt).expect("write");
    let o = vmafcuda(&[
        "score",
        "-r",
        &good,
        "-d",
        badframe.to_str().expect("utf8"),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("frame 0"), "{}", stderr(&o));

    let o = vmafcuda(&["score", "-r", &good, "-d", "/nonexistent/dist.y4m", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/nonexistent/dist.y4m"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_arguments_exit_with_usage_errors() {
    let good = edge("tiny_18x18_ref");
    let o = vmafcuda(&["score", "-r", &good, "-d", &good, "--shots", "5,3", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = vmafcuda(&[
        "score", "-r", &good, "-d", &good, "--model", "vmaf_v9", "-q",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("vmaf_v9"), "{}", stderr(&o));
    let o = vmafcuda(&["score", "-r", &good, "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = vmafcuda(&["score", "-r", &good, "-d", &good, "--format", "yaml", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn json_csv_xml_carry_full_precision_and_shots() {
    let pair = "s_multishot_576x324__x264_crf30";
    let r = common::pair_reference(pair);
    let d = common::pair_distorted(pair);
    let (r, d) = (r.to_str().expect("utf8"), d.to_str().expect("utf8"));
    let v = score_json(r, d, &["--shots", "0,14,36,46"], "multishot.json");
    let shots = v["shots"].as_array().expect("shots");
    assert_eq!(shots.len(), 4);
    assert_eq!(shots[1]["first_frame"], 14);
    assert_eq!(shots[1]["last_frame"], 35);
    let expected = common::load_json(&format!("vmaf/{pair}.shot1.vmaf_v0.6.1.full.json"));
    let want = expected["pooled_metrics"]["vmaf"]["mean"]
        .as_f64()
        .expect("mean");
    let got = shots[1]["pooled_metrics"]["vmaf"]["mean"]
        .as_f64()
        .expect("mean");
    assert!((want - got).abs() <= 1e-9, "{want} vs {got}");
    // Frame 14 starts shot 1: fresh motion. Full precision: the printed double reads back exactly.
    let f14 = &v["frames"][14]["metrics"];
    assert_eq!(f14["integer_motion2"].as_f64(), Some(0.0));
    let e0 = expected["frames"][1]["metrics"]["vmaf"]
        .as_f64()
        .expect("vmaf");
    assert_eq!(v["frames"][15]["metrics"]["vmaf"].as_f64(), Some(e0));

    let csv = tmp("multishot.csv");
    let o = vmafcuda(&[
        "score",
        "-r",
        r,
        "-d",
        d,
        "--shots",
        "0,14,36,46",
        "--format",
        "csv",
        "-o",
        csv.to_str().expect("utf8"),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).expect("csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    assert_eq!(header[0], "Frame");
    let col = header
        .iter()
        .position(|h| *h == "vmaf")
        .expect("vmaf column");
    let row15: Vec<&str> = lines.nth(15).expect("row").split(',').collect();
    assert_eq!(row15[0], "15");
    assert_eq!(row15[col].parse::<f64>().expect("number"), e0);

    let xml = tmp("multishot.xml");
    let o = vmafcuda(&[
        "score",
        "-r",
        r,
        "-d",
        d,
        "--shots",
        "0,14,36,46",
        "--format",
        "xml",
        "-o",
        xml.to_str().expect("utf8"),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&xml).expect("xml");
    assert_eq!(text.matches("<frame frameNum=").count(), 64);
    assert_eq!(text.matches("<shot index=").count(), 4);
    assert!(
        text.contains(&format!("vmaf=\"{e0:?}\"")),
        "full-precision vmaf in XML"
    );
}

/// Writes pictures as an 8-bit 4:2:0 y4m file at 25 fps.
fn write_y4m(path: &Path, pictures: &[vmafcuda::frame::Picture]) {
    use vmafcuda::frame::SampleBuf;
    let p0 = &pictures[0];
    let mut out = format!(
        "YUV4MPEG2 W{} H{} F25:1 Ip A1:1 C420jpeg\n",
        p0.width(),
        p0.height()
    )
    .into_bytes();
    for p in pictures {
        out.extend_from_slice(b"FRAME\n");
        for plane in std::iter::once(&p.luma).chain(&p.chroma) {
            match &plane.data {
                SampleBuf::U8(v) => out.extend_from_slice(v),
                SampleBuf::U16(_) => panic!("8-bit only"),
            }
        }
    }
    std::fs::write(path, out).expect("write y4m");
}

fn read_y4m(path: &Path) -> Vec<vmafcuda::frame::Picture> {
    vmafcuda::y4m::Y4mReader::open(path)
        .expect("open")
        .map(|p| p.expect("picture"))
        .collect()
}

/// Everything but the timing (`fps`) must be identical, to the last bit of every double.
fn assert_same_scores(a: &Value, b: &Value, what: &str) {
    let (fa, fb) = (
        a["frames"].as_array().expect("frames"),
        b["frames"].as_array().expect("frames"),
    );
    assert_eq!(fa.len(), fb.len(), "{what}: frame count");
    for (x, y) in fa.iter().zip(fb) {
        assert_eq!(x, y, "{what}: frame {}", x["frameNum"]);
    }
    assert_eq!(a["pooled_metrics"], b["pooled_metrics"], "{what}: pooled");
    assert_eq!(a["shots"], b["shots"], "{what}: shots");
}

/// Every 576x324 corpus pair, grouped by reference: one ladder command per reference.
const LADDERS_576X324: &[(&str, &[&str])] = &[
    (
        "s_astronaut_576x324",
        &["x264_crf28", "x264_crf38", "x265_crf30", "gblur_s1.5"],
    ),
    (
        "s_coffee_576x324",
        &[
            "x264_crf30_blockframe20",
            "ladder384x216_x264_crf26",
            "unsharp_5x5_1.2",
        ],
    ),
    ("s_testsrc2_576x324", &["x264_crf30", "identical"]),
    ("s_multishot_576x324", &["x264_crf30"]),
];

#[test]
fn ladder_of_576x324_pairs_equals_single_runs_and_libvmaf() {
    for (reference, distortions) in LADDERS_576X324 {
        let r = common::y4m(&format!("video/{reference}.y4m.zst"));
        let r = r.to_str().expect("utf8").to_owned();
        let dists: Vec<String> = distortions
            .iter()
            .map(|d| {
                let pair = format!("{reference}__{d}");
                common::pair_distorted(&pair)
                    .to_str()
                    .expect("utf8")
                    .to_owned()
            })
            .collect();
        let dir = tmp(&format!("ladder-{reference}"));
        let _ = std::fs::remove_dir_all(&dir);
        let dir_s = format!("{}/", dir.display());
        let mut args = vec![
            "score",
            "-r",
            &r,
            "--feature",
            "psnr",
            "--backend",
            "cpu",
            "-q",
            "-o",
            &dir_s,
        ];
        for d in &dists {
            args.extend(["-d", d.as_str()]);
        }
        let o = vmafcuda(&args);
        assert!(o.status.success(), "{reference}: {}", stderr(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        for (i, (d, dist)) in distortions.iter().zip(&dists).enumerate() {
            let pair = format!("{reference}__{d}");
            let stem = Path::new(dist)
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.split('.').next())
                .expect("stem")
                .to_owned();
            let ladder = load(&dir.join(format!("{stem}.json")));
            let single = score_json(
                &r,
                dist,
                &["--feature", "psnr", "--backend", "cpu"],
                &format!("{pair}.json"),
            );
            assert_same_scores(&ladder, &single, &pair);
            assert_matches(
                &ladder,
                &common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json")),
                1e-9,
            );
            assert!(
                distortions.len() == 1 || stdout.contains(&format!("rendition {}: ", i + 1)),
                "{stdout}"
            );
        }
        assert_eq!(stdout.matches("VMAF mean").count(), distortions.len());
    }
}

#[test]
fn resized_rendition_scores_as_its_upscaled_file_alone() {
    use vmafcuda_cli::scale::BicubicScaler;
    let pair = "s_astronaut_576x324__x264_crf28";
    let r = common::pair_reference(pair);
    let d = common::pair_distorted(pair);
    // A 384x216 rung made from the distorted clip, and what the scaler makes of it at 576x324.
    let low: Vec<_> = read_y4m(&d)
        .iter()
        .map(|p| BicubicScaler::new(384, 216).scale(p))
        .collect();
    let up: Vec<_> = low
        .iter()
        .map(|p| BicubicScaler::new(576, 324).scale(p))
        .collect();
    let low_path = tmp("astronaut_384x216.y4m");
    let up_path = tmp("astronaut_384x216_up.y4m");
    write_y4m(&low_path, &low);
    write_y4m(&up_path, &up);
    let out = tmp("resized-ladder.json");
    let (r, d) = (r.to_str().expect("utf8"), d.to_str().expect("utf8"));
    let o = vmafcuda(&[
        "score",
        "-r",
        r,
        "-d",
        low_path.to_str().expect("utf8"),
        "-d",
        d,
        "--feature",
        "psnr",
        "--backend",
        "cpu",
        "-o",
        out.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("384x216 is resized to the reference's 576x324"),
        "{}",
        stderr(&o)
    );
    let resized = load(&tmp("resized-ladder.astronaut_384x216.json"));
    let full = load(&tmp("resized-ladder.s_astronaut_576x324__x264_crf28.json"));
    let alone = score_json(
        r,
        up_path.to_str().expect("utf8"),
        &["--feature", "psnr", "--backend", "cpu"],
        "resized-alone.json",
    );
    assert_same_scores(&resized, &alone, "resized rendition");
    // The full-size rendition in the same ladder is untouched: libvmaf's numbers.
    assert_matches(
        &full,
        &common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json")),
        1e-9,
    );
    // Losing a third of the resolution costs VMAF (0.6 points on this clip: the v0.6.1 model
    // is forgiving at this size), but the picture is still the same picture.
    let low_mean = resized["pooled_metrics"]["vmaf"]["mean"]
        .as_f64()
        .expect("mean");
    let full_mean = full["pooled_metrics"]["vmaf"]["mean"]
        .as_f64()
        .expect("mean");
    assert!(
        low_mean < full_mean - 0.3 && low_mean > 90.0,
        "{low_mean} vs {full_mean}"
    );
}

#[test]
fn frame_rate_and_count_differences_are_reported() {
    let r = edge("count_64x36_ref");
    let d6 = edge("count_64x36_dist6");
    // The same frames, declared at 30 fps.
    let bytes = std::fs::read(&d6).expect("read");
    let text = String::from_utf8_lossy(&bytes[..60]).into_owned();
    assert!(text.contains(" F25:1 "), "{text}");
    let mut bytes30 = bytes.clone();
    let at = text.find("F25:1").expect("rate tag");
    bytes30[at..at + 5].copy_from_slice(b"F30:1");
    let d30 = tmp("count_64x36_dist6_30fps.y4m");
    std::fs::write(&d30, bytes30).expect("write");
    let o = vmafcuda(&["score", "-r", &r, "-d", d30.to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("frame rates differ: reference 25 fps") && e.contains("distorted 30 fps"),
        "{e}"
    );
    assert!(
        e.contains("frame counts differ: reference 8 frames")
            && e.contains("distorted 6 frames")
            && e.contains("frames from 6 on are not scored"),
        "{e}"
    );
    assert!(e.contains("ended before"), "{e}");
    // Same rate, same count: no warning at all.
    let o = vmafcuda(&["score", "-r", &r, "-d", &r]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn renditions_of_another_shape_are_refused() {
    let o = vmafcuda(&[
        "score",
        "-r",
        &edge("mism_a_64x64_ref"),
        "-d",
        &edge("mism_a_64x64_ref"),
        "-d",
        &edge("mism_b_80x64_dist"),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("aspect ratio"), "{}", stderr(&o));
}

#[test]
fn progress_bar_only_on_a_terminal_and_not_with_quiet() {
    // Piped stderr (as here): no bar, no carriage returns.
    let o = vmafcuda(&["score", "--backend", "cpu"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains('\r') && !stderr(&o).contains("ETA"),
        "{}",
        stderr(&o)
    );
    // A terminal (script(1) gives the command a pseudo-terminal): the bar with fps and ETA,
    // and nothing with --quiet.
    let bin = env!("CARGO_BIN_EXE_vmafcuda");
    let run = |extra: &str| {
        common::on_terminal(
            &format!("{bin} score --backend cpu {extra}"),
            "off".as_ref(),
            Path::new(env!("CARGO_MANIFEST_DIR")),
        )
    };
    let Some((ok, all)) = run("") else {
        eprintln!("script(1) not available: terminal half skipped");
        return;
    };
    assert!(ok, "{all}");
    assert!(common::shows_progress_bar(&all), "{all}");
    let (_, all) = run("--quiet").expect("script");
    assert!(!all.contains("ETA"), "{all}");
}

#[cfg(feature = "ffmpeg")]
mod ffmpeg_input {
    use super::*;

    fn video(name: &str) -> String {
        common::require_corpus()
            .join("video")
            .join(name)
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn mkv_and_mp4_decode_to_libvmaf_scores() {
        let pair = "s_multishot_576x324__x264_crf30";
        let v = score_json(
            &video("s_multishot_576x324.ffv1.mkv"),
            &video(&format!("{pair}.mp4")),
            &["--feature", "psnr", "--backend", "cpu"],
            "multishot-mkv-mp4.json",
        );
        assert_matches(
            &v,
            &common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json")),
            1e-9,
        );
        let pair = "s_collage_1920x1080__x264_crf23";
        let v = score_json(
            &video("s_collage_1920x1080.ffv1.mkv"),
            &video(&format!("{pair}.mp4")),
            &["--feature", "psnr", "--backend", "cpu"],
            "collage-mkv-mp4.json",
        );
        assert_matches(
            &v,
            &common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json")),
            1e-9,
        );
    }

    #[test]
    fn ten_bit_mp4_against_y4m_reference_matches_libvmaf() {
        let pair = "s_coffee_1280x720_10bit__x265_crf28";
        let r = common::pair_reference(pair);
        let v = score_json(
            r.to_str().expect("utf8"),
            &video(&format!("{pair}.mp4")),
            &["--feature", "psnr", "--backend", "cpu"],
            "coffee10-mp4.json",
        );
        assert_matches(
            &v,
            &common::load_json(&format!("vmaf/{pair}.vmaf_v0.6.1.full.json")),
            1e-9,
        );
    }

    #[test]
    fn container_frame_count_and_rate_are_checked() {
        // The mp4 holds 64 frames at 25 fps; a 24-frame reference is shorter.
        let o = vmafcuda(&[
            "score",
            "-r",
            common::y4m("video/s_astronaut_576x324.y4m.zst")
                .to_str()
                .expect("utf8"),
            "-d",
            &video("s_multishot_576x324__x264_crf30.mp4"),
            "--backend",
            "cpu",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("frame counts differ: reference 24 frames")
                && e.contains("distorted 64 frames"),
            "{e}"
        );
        assert!(!e.contains("frame rates differ"), "{e}");
    }

    #[test]
    fn undecodable_input_is_a_clear_error() {
        let garbage = tmp("garbage.mp4");
        std::fs::write(&garbage, b"\x00\x00\x00\x18ftypmp42 this is not a video").expect("write");
        let o = vmafcuda(&[
            "score",
            "-r",
            &video("s_multishot_576x324.ffv1.mkv"),
            "-d",
            garbage.to_str().expect("utf8"),
            "-q",
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("garbage.mp4"), "{}", stderr(&o));
    }
}

#[cfg(not(feature = "ffmpeg"))]
#[test]
fn without_ffmpeg_other_containers_get_a_hint() {
    let mp4 = common::require_corpus().join("video/s_multishot_576x324__x264_crf30.mp4");
    let o = vmafcuda(&[
        "score",
        "-r",
        &edge("tiny_18x18_ref"),
        "-d",
        mp4.to_str().expect("utf8"),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--features ffmpeg"), "{}", stderr(&o));
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn bench_cpu_prints_cpu_rows_only() {
    let o = vmafcuda(&[
        "bench",
        "--backend",
        "cpu",
        "--size",
        "64x48",
        "--frames",
        "4",
        "--runs",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains("fps") && lines[0].contains("vs cpu"),
        "{out}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[..4], ["64x48", "8", "cpu", "4"], "{out}");
    assert!(row[5].parse::<f64>().is_ok_and(|fps| fps > 0.0), "{out}");
    assert!(!out.contains("cuda") && !out.contains("stages"), "{out}");
}

#[test]
fn bench_cuda_prints_a_stage_table_or_without_a_gpu_a_clear_error() {
    let o = vmafcuda(&[
        "bench",
        "--backend",
        "cuda",
        "--size",
        "64x48",
        "--size",
        "96x54",
        "--frames",
        "8",
        "--runs",
        "1",
        "--shot-length",
        "3",
    ]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(!err.contains("panicked"), "{err}");
    if vmafcuda::cuda::probe().is_ok() {
        // Every requested row of every size is printed (or the command fails).
        assert_eq!(o.status.code(), Some(0), "{err}");
        for size in ["64x48", "96x54"] {
            for path in [
                "cpu",
                "cuda host",
                "cuda device",
                "cuda full/3",
                "cuda reset/3",
            ] {
                let row = format!("{size:>10}    8 {path} ");
                assert!(out.contains(&row), "no {path:?} row for {size}: {out}");
            }
        }
        assert_eq!(
            out.matches("shots of 3 frames: full rebuild").count(),
            2,
            "{out}"
        );
        // --stage-frames (120) is capped at --frames.
        assert!(
            out.contains("stages 64x48 8-bit") && out.contains("of 8 frames"),
            "{out}"
        );
        for stage in vmafcuda_cli::bench::STAGES {
            assert!(out.contains(&format!("    {stage} ")), "{out}");
        }
    } else {
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("bench --backend cuda: cannot measure the CUDA path"),
            "{err}"
        );
        assert!(err.contains("--backend cpu"), "{err}");
        // Nothing measured before the error.
        assert!(out.is_empty(), "{out}");
    }
}

/// The CUDA set-up starts on a thread before the inputs are opened: `auto` still falls back to
/// the CPU with its note where no GPU can be used, a forced `cuda` is still a clear error there,
/// and where a GPU exists both give the CPU's numbers exactly (also with the GPU state left to
/// the driver at exit, and with it torn down).
#[test]
fn cuda_set_up_ahead_of_the_inputs_keeps_auto_fallback_and_cuda_errors() {
    let cpu = load_demo("demo-cpu.json", "cpu", &[]);
    let gpu = vmafcuda::cuda::probe().is_ok();
    let auto = vmafcuda(&["score", "--backend", "auto", "-o", &tmp_s("demo-auto.json")]);
    assert!(auto.status.success(), "{}", stderr(&auto));
    assert_same_scores(&load(&tmp("demo-auto.json")), &cpu, "auto");
    if !gpu {
        assert!(
            stderr(&auto).contains("no usable CUDA GPU"),
            "{}",
            stderr(&auto)
        );
        let forced = vmafcuda(&["score", "--backend", "cuda", "-q"]);
        assert_eq!(forced.status.code(), Some(1), "{}", stderr(&forced));
        let err = stderr(&forced);
        assert!(err.contains("error:") && err.contains("CUDA"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        return;
    }
    for teardown in ["0", "1"] {
        let name = format!("demo-cuda-{teardown}.json");
        let v = load_demo(&name, "cuda", &[("VMAFCUDA_FULL_TEARDOWN", teardown)]);
        assert_same_scores(&v, &cpu, "cuda");
        assert_eq!(v["backend"], "cuda", "{v}");
    }
}

fn tmp_s(name: &str) -> String {
    tmp(name).to_string_lossy().into_owned()
}

fn load_demo(name: &str, backend: &str, env: &[(&str, &str)]) -> Value {
    let o = vmafcuda_env(
        &["score", "--backend", backend, "-q", "-o", &tmp_s(name)],
        env,
    );
    assert!(o.status.success(), "{backend}: {}", stderr(&o));
    load(&tmp(name))
}

/// 10-bit files: samples are read straight into the planes (little-endian bytes, no byte
/// buffer in between) by both readers (the library's `Y4mReader` and the CLI's positional
/// read-ahead), so both must give the exact values, and a sample above 10 bits must be named
/// with its frame, not scored.
#[test]
fn ten_bit_samples_are_read_exactly_and_an_out_of_range_one_is_named() {
    let (w, h, frames) = (48usize, 32usize, 3usize);
    let header = format!("YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C420p10 XYSCSS=420P10\n");
    let sample = |f: usize, plane: usize, i: usize| ((f * 97 + plane * 389 + i * 13) % 1024) as u16;
    let planes = [(w, h), (w / 2, h / 2), (w / 2, h / 2)];
    let mut bytes = header.clone().into_bytes();
    for f in 0..frames {
        bytes.extend_from_slice(b"FRAME\n");
        for (k, &(pw, ph)) in planes.iter().enumerate() {
            for i in 0..pw * ph {
                bytes.extend_from_slice(&sample(f, k, i).to_le_bytes());
            }
        }
    }
    let good = tmp("ten_bit_good.y4m");
    std::fs::write(&good, &bytes).expect("write");
    for (f, p) in read_y4m(&good).iter().enumerate() {
        for (k, plane) in std::iter::once(&p.luma).chain(&p.chroma).enumerate() {
            let vmafcuda::frame::SampleBuf::U16(v) = &plane.data else {
                panic!("10-bit samples in u16 planes");
            };
            let want: Vec<u16> = (0..v.len()).map(|i| sample(f, k, i)).collect();
            assert_eq!(v, &want, "frame {f} plane {k}");
        }
    }
    let o = vmafcuda(&[
        "score",
        "-r",
        tmp_s("ten_bit_good.y4m").as_str(),
        "-d",
        tmp_s("ten_bit_good.y4m").as_str(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Frame 1, luma sample 5 -> 1024 (11 bits).
    let at = header.len() + (6 + 2 * (w * h + 2 * (w / 2) * (h / 2))) + 6 + 2 * 5;
    let mut bad = bytes.clone();
    bad[at..at + 2].copy_from_slice(&1024u16.to_le_bytes());
    let bad_path = tmp("ten_bit_bad.y4m");
    std::fs::write(&bad_path, &bad).expect("write");
    let err = vmafcuda::y4m::Y4mReader::open(&bad_path)
        .expect("open")
        .nth(1)
        .expect("a second frame")
        .expect_err("out of range");
    assert!(
        matches!(
            err,
            vmafcuda::y4m::Y4mError::SampleRange {
                frame: 1,
                value: 1024,
                bpc: 10,
                ..
            }
        ),
        "{err}"
    );
    let o = vmafcuda(&[
        "score",
        "-r",
        tmp_s("ten_bit_good.y4m").as_str(),
        "-d",
        tmp_s("ten_bit_bad.y4m").as_str(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("frame 1: sample value 1024 exceeds 10-bit range"),
        "{}",
        stderr(&o)
    );
}
