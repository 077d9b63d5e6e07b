//! The `vmafcuda` command line: real runs of the built binary on corpus files and edge cases.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn vmafcuda(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vmafcuda"))
        .args(args)
        .output()
        .expect("run vmafcuda")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/cli-tests");
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
fn frames_smaller_than_18_are_refused_not_crashed() {
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
