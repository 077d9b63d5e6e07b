//! Live QC integration: the Rust and Python message examples (`examples/qc_messages.*`) run on a
//! real pipeline and report what the element posted, and `metrics-file` writes valid
//! Prometheus text exposition whose numbers are the element's own messages'.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use gstvmafcuda::VmafMessage;

#[allow(dead_code)]
#[path = "../examples/qc_messages.rs"]
mod example;

use common::{init, scratch};

fn pooled(msgs: &[VmafMessage]) -> &gstvmafcuda::StreamScore {
    msgs.iter()
        .find_map(|m| match m {
            VmafMessage::Pooled(p) => Some(p),
            _ => None,
        })
        .expect("a pooled message")
}

fn shots(msgs: &[VmafMessage]) -> Vec<&gstvmafcuda::ShotScore> {
    msgs.iter()
        .filter_map(|m| match m {
            VmafMessage::Shot(s) => Some(s),
            _ => None,
        })
        .collect()
}

#[test]
fn rust_example_reports_frames_shots_alerts_and_the_pooled_score() {
    init();
    let log = example::watch(example::DEMO_PIPELINE).expect("demo pipeline runs");
    let frames = log
        .messages
        .iter()
        .filter(|m| matches!(m, VmafMessage::Frame(_)))
        .count();
    assert_eq!(frames, 20);
    let shots = shots(&log.messages);
    assert_eq!(
        shots
            .iter()
            .map(|s| (s.first_frame, s.last_frame))
            .collect::<Vec<_>>(),
        vec![(0, 9), (10, 19)]
    );
    let pooled = pooled(&log.messages);
    assert_eq!((pooled.frames, pooled.shots), (20, 2));
    // Reduced contrast scores below 99: the alert threshold fires, and the example says so.
    assert!(pooled.alerts > 0, "{pooled:?}");
    assert!(
        log.lines.iter().any(|l| l.starts_with("ALERT (")),
        "{:?}",
        log.lines
    );
    assert!(
        log.lines
            .last()
            .unwrap()
            .starts_with("stream: 20 frames, 2 shots, VMAF "),
        "{:?}",
        log.lines
    );
}

/// Parses Prometheus text exposition: (metric name, labels) -> value, checking the syntax of
/// every line and that each sample's family was declared with HELP and TYPE before it.
fn parse_exposition(text: &str) -> BTreeMap<(String, String), f64> {
    let mut declared: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(valid_name(name), "bad HELP line {line:?}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let (name, kind) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            assert!(valid_name(name), "{line:?}");
            assert!(["counter", "gauge"].contains(&kind), "{line:?}");
            declared.insert(name.into(), kind.into());
        } else {
            let (series, value) = line.rsplit_once(' ').expect("sample has a value");
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.strip_suffix('}').expect("labels close")),
                None => (series, ""),
            };
            assert!(valid_name(name), "{line:?}");
            let kind = declared
                .get(name)
                .unwrap_or_else(|| panic!("{name} sampled before its TYPE"));
            if kind == "counter" {
                assert!(
                    name.ends_with("_total"),
                    "counter {name} must end in _total"
                );
            }
            for label in labels.split(',').filter(|l| !l.is_empty()) {
                let (k, v) = label.split_once('=').expect("label=value");
                assert!(valid_name(k), "{line:?}");
                assert!(v.starts_with('"') && v.ends_with('"'), "{line:?}");
            }
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line:?}"));
            samples.insert((name.to_string(), labels.to_string()), value);
        }
    }
    samples
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !n.starts_with(|c: char| c.is_ascii_digit())
}

fn run_collecting(description: &str) -> (Vec<VmafMessage>, Vec<String>) {
    init();
    let pipeline = gst::parse::launch(description).expect("pipeline");
    let bus = pipeline.bus().expect("bus");
    use gst::prelude::*;
    pipeline.set_state(gst::State::Playing).expect("playing");
    let mut msgs = Vec::new();
    let mut warnings = Vec::new();
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(60)) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => panic!("error: {}", e.error()),
            gst::MessageView::Warning(w) => warnings.push(w.error().to_string()),
            _ => {}
        }
        msgs.extend(VmafMessage::parse(&msg));
    }
    pipeline.set_state(gst::State::Null).expect("null");
    (msgs, warnings)
}

#[test]
fn metrics_file_is_prometheus_text_with_the_messages_numbers() {
    let path = scratch().join("qc.prom");
    let description = example::DEMO_PIPELINE.replace(
        "vmafcuda name=v",
        &format!("vmafcuda name=v metrics-file={}", path.display()),
    );
    let (msgs, _) = run_collecting(&description);
    let text = std::fs::read_to_string(&path).expect("metrics file written");
    let m = parse_exposition(&text);
    let get = |name: &str, extra: &str| {
        *m.get(&(name.to_string(), format!("element=\"v\"{extra}")))
            .unwrap_or_else(|| panic!("{name}{extra} missing in\n{text}"))
    };
    let shots = shots(&msgs);
    let pooled = pooled(&msgs);
    assert_eq!(get("vmafcuda_frames_scored_total", ""), 20.0);
    assert_eq!(get("vmafcuda_shots_total", ""), 2.0);
    assert_eq!(get("vmafcuda_last_shot_index", ""), 1.0);
    assert_eq!(get("vmafcuda_last_shot_score", ""), shots[1].pooled.score);
    assert_eq!(get("vmafcuda_last_shot_min_score", ""), shots[1].pooled.min);
    assert_eq!(get("vmafcuda_stream_score", ""), pooled.pooled.score);
    assert_eq!(get("vmafcuda_end_of_stream", ""), 1.0);
    let alerts = get("vmafcuda_alerts_total", ",reason=\"frames\"")
        + get("vmafcuda_alerts_total", ",reason=\"shot\"");
    assert_eq!(alerts, pooled.alerts as f64);
    assert!(alerts > 0.0);
    assert_eq!(get("vmafcuda_gaps_total", ",reason=\"dropped\""), 0.0);
    let frame_scores: Vec<f64> = msgs
        .iter()
        .filter_map(|m| match m {
            VmafMessage::Frame(f) => Some(f.score),
            _ => None,
        })
        .collect();
    assert_eq!(
        get("vmafcuda_last_frame_score", ""),
        *frame_scores.last().unwrap()
    );
    assert!(get("vmafcuda_last_update_timestamp_seconds", "") > 1.7e9);
    // Replaced atomically: no temporary file is left behind.
    assert!(!PathBuf::from(format!("{}.tmp", path.display())).exists());
}

#[test]
fn unwritable_metrics_file_warns_once_and_scoring_goes_on() {
    let description = example::DEMO_PIPELINE.replace(
        "vmafcuda name=v",
        "vmafcuda name=v metrics-file=/nonexistent-dir/qc.prom alert-threshold=0",
    );
    let (msgs, warnings) = run_collecting(&description);
    let metrics_warnings: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("metrics-file") && w.contains("/nonexistent-dir/qc.prom"))
        .collect();
    assert_eq!(metrics_warnings.len(), 1, "{warnings:?}");
    assert_eq!(pooled(&msgs).frames, 20);
}

/// A Python 3 that has PyGObject with GStreamer (Debian: python3-gi gir1.2-gstreamer-1.0).
fn python_with_gi() -> Option<String> {
    ["python3", "/usr/bin/python3"].into_iter().find_map(|p| {
        let ok = Command::new(p)
            .args([
                "-c",
                "import gi; gi.require_version('Gst', '1.0'); from gi.repository import Gst",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| p.to_string())
    })
}

/// The directory of the built plugin (target/<profile>/libgstvmafcuda.so).
fn plugin_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?;
    dir.join("libgstvmafcuda.so")
        .exists()
        .then(|| dir.to_path_buf())
}

#[test]
fn python_example_prints_the_messages_as_json_lines() {
    let Some(python) = python_with_gi() else {
        eprintln!(
            "skipped: no python3 with PyGObject (apt-get install python3-gi gir1.2-gstreamer-1.0)"
        );
        return;
    };
    let Some(plugins) = plugin_dir() else {
        eprintln!("skipped: libgstvmafcuda.so not built beside the test binary");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/qc_messages.py");
    let out = Command::new(python)
        .arg(&script)
        .env("GST_PLUGIN_PATH", &plugins)
        .env("GST_REGISTRY", scratch().join("python-registry.bin"))
        .output()
        .expect("run the Python example");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let of_type = |t: &str| lines.iter().filter(|v| v["type"] == t).collect::<Vec<_>>();
    let frames = of_type("frame");
    assert_eq!(frames.len(), 20);
    // Upstream's fields with their values, as Python sees them.
    assert_eq!(frames[3]["index"], 3);
    assert_eq!(frames[3]["timestamp"], 120_000_000u64);
    assert_eq!(frames[3]["running-time"], 120_000_000u64);
    assert!(frames[3]["score"].as_f64().is_some());
    assert_eq!(of_type("shot").len(), 2);
    assert!(!of_type("alert").is_empty());
    let pooled = of_type("pooled");
    assert_eq!(pooled.len(), 1);
    assert_eq!(pooled[0]["frames"], 20);
    // The same run in Rust gives the same pooled score.
    let rust = example::watch(example::DEMO_PIPELINE).expect("rust run");
    let py = pooled[0]["score"].as_f64().unwrap();
    assert_eq!(py, pooled_score(&rust.messages));
}

fn pooled_score(msgs: &[VmafMessage]) -> f64 {
    pooled(msgs).pooled.score
}
