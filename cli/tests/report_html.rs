//! `vmafcuda score --report FILE.html --plot FILE.svg` on the corpus multi-shot pair: the page's
//! numbers against libvmaf's per-shot runs, its structure (one point per frame, one band per
//! shot), and the page loaded in headless Chromium: no script or console errors, the script
//! ran, the chart has the right elements, and a screenshot is written. The browser part skips
//! with a message where no Chromium is installed (CI installs Debian's `chromium`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

const PAIR: &str = "s_multishot_576x324__x264_crf30";
const SHOT_STARTS: [usize; 4] = [0, 14, 36, 46];
const FRAMES: usize = 64;

fn out_dir() -> PathBuf {
    let dir = common::workspace_dir().join("target/report-tests");
    std::fs::create_dir_all(&dir).expect("output dir");
    dir
}

/// (report.html, curve.svg) of the pair, made once per test process.
fn outputs() -> &'static (PathBuf, PathBuf) {
    static OUT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    OUT.get_or_init(|| {
        let reference = common::pair_reference(PAIR);
        let distorted = common::pair_distorted(PAIR);
        let dir = out_dir();
        let (html, svg) = (dir.join("report.html"), dir.join("curve.svg"));
        let shots = SHOT_STARTS.map(|s| s.to_string()).join(",");
        let o = Command::new(env!("CARGO_BIN_EXE_vmafcuda"))
            .args([
                "score",
                "-q",
                "--backend",
                "cpu",
                "--feature",
                "psnr",
                "--shots",
                &shots,
            ])
            .arg("-r")
            .arg(&reference)
            .arg("-d")
            .arg(&distorted)
            .arg("--report")
            .arg(&html)
            .arg("--plot")
            .arg(&svg)
            .output()
            .expect("run vmafcuda");
        assert!(
            o.status.success(),
            "vmafcuda failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        (html, svg)
    })
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Values of attribute `attr` on elements whose markup contains `marker` (e.g. a class).
fn attrs(page: &str, marker: &str, attr: &str) -> Vec<String> {
    page.split('<')
        .filter(|el| el.contains(marker))
        .filter_map(|el| {
            let start = el.find(&format!(" {attr}=\""))? + attr.len() + 3;
            el[start..].split('"').next().map(str::to_owned)
        })
        .collect()
}

/// libvmaf's fresh per-shot runs: (global frame index, VMAF) of every frame, per shot.
fn libvmaf_shots() -> Vec<Vec<(usize, f64)>> {
    let dir = common::require_corpus().join("vmaf");
    SHOT_STARTS
        .iter()
        .enumerate()
        .map(|(k, &start)| {
            let path = dir.join(format!("{PAIR}.shot{k}.vmaf_v0.6.1.full.json"));
            let json: Value = serde_json::from_str(&read(&path)).expect("libvmaf JSON");
            json["frames"]
                .as_array()
                .expect("frames")
                .iter()
                .map(|f| {
                    let local = f["frameNum"].as_u64().expect("frameNum") as usize;
                    (start + local, f["metrics"]["vmaf"].as_f64().expect("vmaf"))
                })
                .collect()
        })
        .collect()
}

#[test]
fn report_has_a_point_per_frame_a_band_per_shot_and_libvmaf_shot_means() {
    let page = read(&outputs().0);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(&format!("<body data-frames=\"{FRAMES}\" data-shots=\"4\"")));

    let points = attrs(&page, "class=\"curve\"", "points");
    assert_eq!(points.len(), 1, "one curve (one model)");
    assert_eq!(points[0].split(' ').count(), FRAMES, "one point per frame");
    assert_eq!(
        attrs(&page, "class=\"curve\"", "data-points"),
        [FRAMES.to_string()]
    );

    // One band per shot, at libvmaf's fresh per-shot runs' frames, labelled with their mean.
    let shots = libvmaf_shots();
    let firsts = attrs(&page, "class=\"shot-band\"", "data-first");
    let means = attrs(&page, "class=\"shot-band\"", "data-mean");
    assert_eq!(firsts, SHOT_STARTS.map(|s| s.to_string()));
    for (k, frames) in shots.iter().enumerate() {
        let expected = frames.iter().map(|f| f.1).sum::<f64>() / frames.len() as f64;
        let got: f64 = means[k].parse().expect("mean");
        assert!(
            (got - expected).abs() < 1e-6,
            "shot {k}: {got} vs libvmaf {expected}"
        );
    }
    assert_eq!(page.matches("class=\"shot-row\"").count(), 4);

    // Worst frames: the lowest libvmaf frames over the four shots, lowest first, with their
    // timestamps at the y4m's 25 fps.
    let mut all: Vec<(usize, f64)> = shots.concat();
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    let worst = attrs(&page, "class=\"worst-row\"", "data-frame");
    assert_eq!(worst.len(), 10);
    let expected: Vec<String> = all[..10].iter().map(|f| f.0.to_string()).collect();
    assert_eq!(worst, expected);
    let (frame, score) = all[0];
    let seconds = frame as f64 / 25.0;
    let row = page
        .split("<tr class=\"worst-row\"")
        .nth(1)
        .expect("first worst row");
    assert!(
        row.contains(&format!("<td>{score:.3}</td>"))
            && row.contains(&format!(
                "<td>0:{:02}.{:03}</td>",
                seconds as u64,
                (seconds.fract() * 1000.0).round() as u64
            )),
        "frame {frame} ({score}) row: {row}"
    );
    assert!(row.contains("VIF scale") || row.contains("ADM") || row.contains("PSNR"));

    // Facts and pooled table.
    for fact in [
        "576x324",
        "8 bits",
        "25 fps (25/1)",
        "vmaf_v0.6.1",
        "CPU, ",
        "vmafcuda 0.",
    ] {
        assert!(page.contains(fact), "facts lack {fact:?}");
    }
    let pooled_mean = all.iter().map(|f| f.1).sum::<f64>() / all.len() as f64;
    assert!(page.contains(&format!("<td>{pooled_mean:.6}</td>")));

    // Self-contained: nothing is fetched.
    for external in ["http:", "https:", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(external), "the page references {external}");
    }
}

#[test]
fn plot_is_a_standalone_svg_chart() {
    let svg = read(&outputs().1);
    assert!(svg.starts_with(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""
    ));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        attrs(&svg, "class=\"curve\"", "data-points"),
        [FRAMES.to_string()]
    );
    assert_eq!(svg.matches("class=\"shot-band\"").count(), 4);
    assert_eq!(svg.matches("class=\"worst-marker\"").count(), 10);
    assert!(!svg.contains("<script") && !svg.contains("href="));
}

#[test]
fn report_renders_in_headless_chromium_without_errors() {
    let Some(browser) = common::browser::find() else {
        eprintln!(
            "SKIPPED report_renders_in_headless_chromium_without_errors: no chromium on PATH \
             (apt-get install chromium, or set VMAFCUDA_CHROMIUM)"
        );
        return;
    };
    let (html, svg) = outputs();
    let dir = out_dir();
    // A throw-away browser profile (removed at the end).
    let profile = dir.join(format!("chromium-profile-{}", std::process::id()));
    std::fs::create_dir_all(&profile).expect("profile dir");

    // The DOM after the scripts ran.
    let run = common::browser::run(&browser, html, &profile, &["--dump-dom"]);
    let dom = &run.stdout;
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page script did not finish; console: {:?}",
        run.console_lines()
    );
    assert!(!dom.contains(" data-errors=\""), "script errors: {dom}");
    assert!(
        run.console_lines().is_empty(),
        "console output: {:?}",
        run.console_lines()
    );
    assert_eq!(
        attrs(dom, "class=\"curve\"", "data-points"),
        [FRAMES.to_string()]
    );
    assert_eq!(
        attrs(dom, "class=\"curve\"", "points")[0]
            .split(' ')
            .count(),
        FRAMES
    );
    assert_eq!(
        attrs(dom, "vmaf-chart", "data-readout-points"),
        [FRAMES.to_string()],
        "the script read every plotted frame"
    );
    assert_eq!(dom.matches("class=\"shot-band\"").count(), 4);

    // A screenshot of the page and one of the bare chart.
    for (page, name, size) in [
        (html, "report.png", (1100u32, 1400u32)),
        (svg, "curve.png", (1000, 340)),
    ] {
        let png = dir.join(name);
        let _ = std::fs::remove_file(&png);
        common::browser::run(
            &browser,
            page,
            &profile,
            &[
                &format!("--screenshot={}", png.display()),
                &format!("--window-size={},{}", size.0, size.1),
            ],
        );
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert_eq!(common::browser::png_size(&bytes), size);
        // A blank page of this size compresses to a few kB; the chart and tables do not.
        assert!(
            bytes.len() > 20_000,
            "{name}: only {} bytes, is it blank?",
            bytes.len()
        );
        eprintln!("screenshot {} ({} bytes)", png.display(), bytes.len());
    }
    let _ = std::fs::remove_dir_all(&profile);
}

#[test]
fn report_title_names_the_files_without_stray_quotes() {
    let page = read(&outputs().0);
    let title = page
        .split("<title>")
        .nth(1)
        .and_then(|t| t.split("</title>").next())
        .expect("a <title>");
    let distorted = common::pair_distorted(PAIR);
    let reference = common::pair_reference(PAIR);
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let tail = format!(": {} vs {}", name(&distorted), name(&reference));
    assert!(
        title.starts_with("VMAF ") && title.ends_with(&tail),
        "title {title:?} should end with {tail:?}"
    );
    assert!(
        !title.contains('"') && !title.contains("&quot;"),
        "{title:?}"
    );
}
