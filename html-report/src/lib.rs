//! A self-contained HTML report of a scoring run, for people: the per-frame VMAF chart with
//! shot bands ([`crate::plot`]), per-shot and pooled tables per model, the worst frames with the
//! feature that dropped ([`crate::worst`]), and the facts of the run (inputs, sizes, backend,
//! device, version).
//!
//! One file, no network: styles, the chart (inline SVG) and a small script (hover read-out)
//! are all inline; no fonts, images or scripts are fetched. Without JavaScript the page is
//! complete; the script only adds the read-out under the pointer. It records script errors on
//! `<html data-errors>` and sets `<body data-ready="1">` when it has run, so tests in a headless
//! browser can tell that it loaded cleanly.
//!
//! The engine (`vmafcuda`) makes the [`Report`] data; this crate only renders it, for the CLI
//! (`--report`, `--plot`) and the GStreamer element (`report-filename`).

pub mod plot;
pub mod timing;
pub mod worst;

use std::fmt::Write as _;
use std::path::Path;

use vmafcuda::pool::PooledStats;
use vmafcuda::report::Report;

use crate::plot::{escape, Chart};
use crate::timing::{format_seconds, trim_number, Timing};
use crate::worst::{worst_frames, WorstFrame};

/// How many of the lowest-scoring frames the report lists (and marks on the chart).
pub const WORST_FRAMES: usize = 10;

/// What the report says about the run besides the scores.
#[derive(Clone, Debug, PartialEq)]
pub struct InputFacts {
    /// Reference and distorted input as the user named them (path, pad, URI).
    pub reference: String,
    pub distorted: String,
    /// Frame timing, for timestamps.
    pub timing: Timing,
    /// Where it ran, e.g. `NVIDIA H100 (sm_90, 79.1 GiB)` or `CPU, 16 threads`.
    pub device: String,
    pub version: String,
    /// Further rows for the facts table (name, value), e.g. the pixel format.
    pub extra: Vec<(String, String)>,
}

impl InputFacts {
    pub fn new(reference: impl Into<String>, distorted: impl Into<String>) -> Self {
        InputFacts {
            reference: reference.into(),
            distorted: distorted.into(),
            timing: Timing::Unknown,
            device: String::new(),
            version: vmafcuda::VERSION_STRING.into(),
            extra: Vec::new(),
        }
    }
}

/// Describes the device a run used: the CUDA device's name, compute capability and memory for
/// `cuda` (asks the driver; never fails, falls back to the ordinal), the thread count for `cpu`.
pub fn describe_device(backend: &str, cuda_device: i32) -> String {
    if backend == "cuda" {
        let found = vmafcuda::cuda::probe().ok().and_then(|info| {
            let d = info
                .devices
                .into_iter()
                .find(|d| d.ordinal == cuda_device.max(0))?;
            Some(format!(
                "{} (CUDA device {}, sm_{}{}, {:.1} GiB), driver CUDA {}.{}",
                d.name,
                d.ordinal,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_memory as f64 / (1u64 << 30) as f64,
                info.driver_version / 1000,
                info.driver_version % 1000 / 10
            ))
        });
        found.unwrap_or_else(|| format!("CUDA device {}", cuda_device.max(0)))
    } else {
        format!("CPU, {} threads", rayon::current_num_threads())
    }
}

/// Writes the HTML report (`html`) and/or the bare chart (`svg`) of `reports` (the first one
/// gives the shots and worst frames; all share the same frames). Errors name the file.
pub fn write_files(
    reports: &[Report],
    facts: &InputFacts,
    html: Option<&Path>,
    svg: Option<&Path>,
) -> Result<(), String> {
    if let Some(path) = html {
        std::fs::write(path, render_page(reports, facts))
            .map_err(|e| format!("{}: cannot write the report: {e}", path.display()))?;
    }
    if let Some(path) = svg {
        std::fs::write(path, render_chart(reports, &facts.timing))
            .map_err(|e| format!("{}: cannot write the chart: {e}", path.display()))?;
    }
    Ok(())
}

/// The chart alone, as a standalone SVG file (with worst frames marked).
pub fn render_chart(reports: &[Report], timing: &Timing) -> String {
    let worst: Vec<usize> = reports
        .first()
        .map(|r| {
            worst_frames(r, WORST_FRAMES)
                .iter()
                .map(|w| w.index)
                .collect()
        })
        .unwrap_or_default();
    let chart = Chart {
        markers: &worst,
        ..Chart::new(reports, timing)
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}",
        chart.svg(true)
    )
}

fn fixed(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "–".into()
    }
}

/// A number for the embedded JSON: `null` for NaN and infinities.
fn json_number(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        trim_number(x, decimals)
    } else {
        "null".into()
    }
}

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #24292f;
       margin: 0 auto; padding: 24px; max-width: 1040px; line-height: 1.4; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.sub { color: #57606a; margin: 0 0 16px; word-break: break-all; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; min-width: 96px; }
.card b { display: block; font-size: 20px; }
.card span { color: #57606a; font-size: 12px; }
.chart-box { position: relative; overflow-x: auto; }
.chart-box svg { display: block; max-width: 100%; height: auto; }
#tip { position: absolute; pointer-events: none; background: #24292f; color: #fff; font-size: 12px;
       padding: 4px 8px; border-radius: 4px; white-space: nowrap; display: none; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0 8px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eaeef2; text-align: right; }
th { background: #f6f8fa; font-weight: 600; }
td.l, th.l { text-align: left; }
tr.hl td { background: #fff8c5; }
tr.key-vmaf td { font-weight: 600; }
.facts td { text-align: left; word-break: break-all; }
.note { color: #57606a; font-size: 12px; }
footer { margin-top: 32px; color: #8c959f; font-size: 12px; }
"#;

/// Records errors from every later script before anything else runs.
const ERROR_HOOK: &str =
    "window.addEventListener('error',function(e){var h=document.documentElement;\
h.setAttribute('data-errors',(h.getAttribute('data-errors')||'')+(e.message||'error')+'; ');});";

/// Hover read-out: the frame under the pointer (nearest plotted point), its time and scores.
const SCRIPT: &str = r#"
(function () {
  var svg = document.querySelector('svg.vmaf-chart');
  var data = JSON.parse(document.getElementById('vmaf-data').textContent);
  var tip = document.getElementById('tip');
  if (svg && tip && data.frames.length) {
    var d = svg.dataset, cursor = svg.querySelector('.cursor');
    // What the read-out knows, for tests: as many frames as the curve has points.
    svg.setAttribute('data-readout-points', data.frames.length);
    var left = +d.left, right = +d.right, top = +d.top, bottom = +d.bottom;
    var x0 = +d.x0, x1 = +d.x1;
    var nearest = function (frame) {
      var lo = 0, hi = data.frames.length - 1;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (data.frames[mid] < frame) lo = mid + 1; else hi = mid;
      }
      if (lo > 0 && frame - data.frames[lo - 1] < data.frames[lo] - frame) lo -= 1;
      return lo;
    };
    var shotOf = function (frame) {
      for (var i = 0; i < data.shots.length; i++) {
        if (frame >= data.shots[i][0] && frame <= data.shots[i][1]) return i;
      }
      return -1;
    };
    var fmt = function (s) {
      var ms = Math.round(s * 1000), h = Math.floor(ms / 3600000), m = Math.floor(ms / 60000) % 60;
      var sec = Math.floor(ms / 1000) % 60, r = ms % 1000;
      var p = function (v, n) { v = String(v); while (v.length < n) v = '0' + v; return v; };
      return (h ? h + ':' + p(m, 2) : m) + ':' + p(sec, 2) + '.' + p(r, 3);
    };
    var show = function (i, clientX, clientY) {
      var frame = data.frames[i];
      var text = 'frame ' + frame;
      if (data.times && data.times[i] !== null) text += ' \u00b7 ' + fmt(data.times[i]);
      var s = shotOf(frame);
      if (s >= 0) text += ' \u00b7 shot ' + s;
      data.models.forEach(function (m) {
        var v = m.scores[i];
        text += ' \u00b7 ' + m.name + ' ' + (v === null ? '\u2013' : v.toFixed(3));
      });
      tip.textContent = text;
      var x = left + (frame - x0) / (x1 - x0) * (right - left);
      cursor.setAttribute('x1', x); cursor.setAttribute('x2', x);
      cursor.setAttribute('y1', top); cursor.setAttribute('y2', bottom);
      cursor.setAttribute('visibility', 'visible');
      var box = svg.parentNode.getBoundingClientRect();
      var sx = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      tip.style.display = 'block';
      tip.style.left = Math.min(x * sx + 12, box.width - tip.offsetWidth - 4) + 'px';
      tip.style.top = (clientY === undefined ? top * sx : clientY - box.top + 12) + 'px';
    };
    var hide = function () {
      tip.style.display = 'none';
      cursor.setAttribute('visibility', 'hidden');
    };
    svg.addEventListener('mousemove', function (e) {
      var r = svg.getBoundingClientRect();
      var x = (e.clientX - r.left) * svg.viewBox.baseVal.width / r.width;
      if (x < left || x > right) { hide(); return; }
      show(nearest(x0 + (x - left) / (right - left) * (x1 - x0)), e.clientX, e.clientY);
    });
    svg.addEventListener('mouseleave', hide);
    document.querySelectorAll('tr[data-frame]').forEach(function (row) {
      row.addEventListener('mouseenter', function () { show(nearest(+row.dataset.frame)); });
      row.addEventListener('mouseleave', hide);
    });
  }
  document.body.setAttribute('data-ready', '1');
})();
"#;

/// The whole page.
pub fn render_page(reports: &[Report], facts: &InputFacts) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let Some(primary) = reports.first() else {
        return "<!DOCTYPE html><html><body><p>No frames were scored.</p></body></html>\n".into();
    };
    let worst = worst_frames(primary, WORST_FRAMES);
    let markers: Vec<usize> = worst.iter().map(|w| w.index).collect();
    let chart = Chart {
        markers: &markers,
        ..Chart::new(reports, &facts.timing)
    };
    let vmaf = primary.pooled("vmaf");
    let title = format!(
        "VMAF {}: {} vs {}",
        vmaf.map_or("–".into(), |v| fixed(v.mean, 2)),
        base_name(&facts.distorted),
        base_name(&facts.reference)
    );

    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"{}\">\n<title>{}</title>\n<style>{STYLE}</style>\n\
         <script>{ERROR_HOOK}</script>\n</head>\n",
        escape(&facts.version),
        escape(&title)
    );
    let _ = writeln!(
        out,
        "<body data-frames=\"{}\" data-shots=\"{}\" data-models=\"{}\" data-worst=\"{}\">",
        primary.frames.len(),
        primary.shots.len(),
        reports.len(),
        worst.len()
    );
    let _ = writeln!(
        out,
        "<h1>{}</h1>\n<p class=\"sub\">distorted <b>{}</b> against reference <b>{}</b></p>",
        escape(&title),
        escape(&facts.distorted),
        escape(&facts.reference)
    );
    summary_cards(&mut out, primary, facts);

    out.push_str("<h2 id=\"chart\">Per-frame VMAF</h2>\n<div class=\"chart-box\">\n");
    out.push_str(&chart.svg(false));
    out.push_str("<div id=\"tip\"></div>\n</div>\n");
    let plotted = chart.plotted();
    let _ = writeln!(
        out,
        "<p class=\"note\">Shaded bands are shots (each scored as a fresh libvmaf run), labelled \
         with their mean VMAF; red dots are the {} worst frames.{}</p>",
        worst.len(),
        if plotted.len() < primary.frames.len() {
            format!(
                " The curve shows {} of {} frames (the lowest and highest of each span of \
                 frames), so every dip is visible.",
                plotted.len(),
                primary.frames.len()
            )
        } else {
            String::new()
        }
    );

    shot_table(&mut out, reports, &facts.timing);
    worst_table(&mut out, &worst, &facts.timing);
    for report in reports {
        pooled_table(&mut out, report);
    }
    facts_table(&mut out, reports, facts);
    let _ = writeln!(
        out,
        "<footer>Generated by {}. Numbers match libvmaf 3.2.0; the JSON output \
         (<code>--output</code>) has every value at full precision.</footer>",
        escape(&facts.version)
    );
    embedded_data(&mut out, reports, &plotted, &facts.timing);
    let _ = writeln!(out, "<script>{SCRIPT}</script>\n</body>\n</html>");
    out
}

fn base_name(s: &str) -> &str {
    Path::new(s)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(s)
}

fn summary_cards(out: &mut String, primary: &Report, facts: &InputFacts) {
    out.push_str("<div class=\"cards\">\n");
    let mut card = |value: String, what: &str| {
        let _ = writeln!(
            out,
            "<div class=\"card\"><b>{}</b><span>{}</span></div>",
            escape(&value),
            escape(what)
        );
    };
    if let Some(v) = primary.pooled("vmaf") {
        card(fixed(v.mean, 2), "mean VMAF");
        card(fixed(v.harmonic_mean, 2), "harmonic mean");
        card(fixed(v.min, 2), "min");
        card(fixed(v.p5, 2), "5th percentile");
    }
    card(primary.frames.len().to_string(), "frames");
    card(primary.shots.len().to_string(), "shots");
    if let (Some(first), Some(last)) = (primary.frames.first(), primary.frames.last()) {
        if let (Some(a), Some(b)) = (
            facts.timing.seconds(first.index),
            facts.timing.seconds(last.index + 1),
        ) {
            card(format_seconds(b - a), "duration");
        }
    }
    out.push_str("</div>\n");
}

fn time_cell(timing: &Timing, index: usize) -> String {
    timing.label(index).unwrap_or_else(|| "–".into())
}

fn shot_table(out: &mut String, reports: &[Report], timing: &Timing) {
    let primary = &reports[0];
    out.push_str("<h2 id=\"shots\">Shots</h2>\n<table class=\"shots\">\n<tr><th>shot</th><th>first frame</th><th>last frame</th><th>frames</th><th>start</th><th>end</th>");
    let _ = write!(
        out,
        "<th>mean</th><th>harmonic mean</th><th>min</th><th>p5</th>"
    );
    for r in &reports[1..] {
        let _ = write!(out, "<th>mean {}</th>", escape(&r.model));
    }
    out.push_str("</tr>\n");
    for s in &primary.shots {
        let v = s.pooled("vmaf");
        let cell = |f: fn(&PooledStats) -> f64| v.map_or("–".into(), |v| fixed(f(v), 3));
        let _ = write!(
            out,
            "<tr class=\"shot-row\" data-shot=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            s.index,
            s.index,
            s.first_frame,
            s.last_frame,
            s.frame_count(),
            time_cell(timing, s.first_frame),
            time_cell(timing, s.last_frame),
            cell(|p| p.mean),
            cell(|p| p.harmonic_mean),
            cell(|p| p.min),
            cell(|p| p.p5),
        );
        for r in &reports[1..] {
            let mean = r
                .shots
                .iter()
                .find(|o| o.first_frame == s.first_frame)
                .and_then(|o| o.pooled("vmaf"))
                .map_or("–".into(), |p| fixed(p.mean, 3));
            let _ = write!(out, "<td>{mean}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn worst_table(out: &mut String, worst: &[WorstFrame], timing: &Timing) {
    out.push_str(
        "<h2 id=\"worst\">Worst frames</h2>\n<p class=\"note\">The distortion feature (VIF, ADM, \
         PSNR) that fell furthest below its median over the frame's shot, relative to that \
         median. Motion is not a distortion and is left out.</p>\n<table class=\"worst\">\n\
         <tr><th>rank</th><th>frame</th><th>time</th><th>shot</th><th>VMAF</th>\
         <th class=\"l\">largest drop</th><th>value</th><th>shot median</th><th>drop</th></tr>\n",
    );
    for (rank, w) in worst.iter().enumerate() {
        let (feature, value, median, drop) = match &w.cause {
            Some(c) => (
                format!(
                    "{} <span class=\"note\">{}</span>",
                    escape(&c.label()),
                    escape(&c.key)
                ),
                fixed(c.value, 4),
                fixed(c.median, 4),
                format!("{:.1} %", 100.0 * c.relative_drop),
            ),
            None => (
                "none below median".into(),
                "–".into(),
                "–".into(),
                "–".into(),
            ),
        };
        let _ = writeln!(
            out,
            "<tr class=\"worst-row\" data-frame=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{feature}</td><td>{value}</td><td>{median}</td><td>{drop}</td></tr>",
            w.index,
            rank + 1,
            w.index,
            time_cell(timing, w.index),
            w.shot.map_or("–".into(), |s| s.to_string()),
            fixed(w.score, 3),
        );
    }
    out.push_str("</table>\n");
}

fn pooled_table(out: &mut String, report: &Report) {
    let _ = writeln!(
        out,
        "<h2 id=\"pooled-{0}\">Pooled over all frames: {0}</h2>\n<table class=\"pooled\" data-model=\"{0}\">\n\
         <tr><th class=\"l\">metric</th><th>mean</th><th>harmonic mean</th><th>min</th><th>max</th><th>p5</th><th>p10</th></tr>",
        escape(&report.model)
    );
    // VMAF first, then the features in libvmaf's order.
    let mut rows: Vec<&(String, PooledStats)> = report.pooled.iter().collect();
    rows.sort_by_key(|(k, _)| k != "vmaf");
    for (key, s) in rows {
        let _ = writeln!(
            out,
            "<tr class=\"key-{}\"><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if key == "vmaf" { "vmaf" } else { "feature" },
            escape(key),
            fixed(s.mean, 6),
            fixed(s.harmonic_mean, 6),
            fixed(s.min, 6),
            fixed(s.max, 6),
            fixed(s.p5, 6),
            fixed(s.p10, 6)
        );
    }
    out.push_str("</table>\n");
}

fn facts_table(out: &mut String, reports: &[Report], facts: &InputFacts) {
    let primary = &reports[0];
    let mut rows: Vec<(String, String)> = vec![
        ("reference".into(), facts.reference.clone()),
        ("distorted".into(), facts.distorted.clone()),
        (
            "frame size".into(),
            format!("{}x{}", primary.width, primary.height),
        ),
        ("bit depth".into(), format!("{} bits", primary.bpc)),
        ("frames scored".into(), primary.frames.len().to_string()),
        ("shots".into(), primary.shots.len().to_string()),
        ("frame timing".into(), facts.timing.describe()),
        (
            "models".into(),
            reports
                .iter()
                .map(|r| r.model.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("backend".into(), primary.backend.clone()),
    ];
    if !facts.device.is_empty() {
        rows.push(("device".into(), facts.device.clone()));
    }
    if primary.fps > 0.0 {
        rows.push((
            "scoring speed".into(),
            format!("{:.1} frames/s", primary.fps),
        ));
    }
    rows.extend(facts.extra.iter().cloned());
    rows.push(("version".into(), facts.version.clone()));
    out.push_str("<h2 id=\"inputs\">Run</h2>\n<table class=\"facts\">\n");
    for (k, v) in rows {
        let _ = writeln!(
            out,
            "<tr><th class=\"l\">{}</th><td>{}</td></tr>",
            escape(&k),
            escape(&v)
        );
    }
    out.push_str("</table>\n");
}

/// The plotted points for the hover read-out, as JSON in a non-executed script element.
fn embedded_data(out: &mut String, reports: &[Report], plotted: &[usize], timing: &Timing) {
    let primary = &reports[0];
    let indices: Vec<usize> = plotted.iter().map(|&p| primary.frames[p].index).collect();
    let join = |v: Vec<String>| v.join(",");
    let frames = join(indices.iter().map(|i| i.to_string()).collect());
    let times = if matches!(timing, Timing::Unknown) {
        "null".to_owned()
    } else {
        format!(
            "[{}]",
            join(
                indices
                    .iter()
                    .map(|&i| timing
                        .seconds(i)
                        .map_or("null".into(), |s| json_number(s, 3)))
                    .collect()
            )
        )
    };
    let models = join(
        reports
            .iter()
            .map(|r| {
                let scores = join(
                    indices
                        .iter()
                        .map(|&i| {
                            Chart::score_at(r, i).map_or("null".into(), |v| json_number(v, 3))
                        })
                        .collect(),
                );
                format!(
                    "{{\"name\":{},\"scores\":[{scores}]}}",
                    serde_json::Value::String(r.model.clone())
                )
            })
            .collect(),
    );
    let shots = join(
        primary
            .shots
            .iter()
            .map(|s| format!("[{},{}]", s.first_frame, s.last_frame))
            .collect(),
    );
    let json = format!(
        "{{\"frames\":[{frames}],\"times\":{times},\"models\":[{models}],\"shots\":[{shots}]}}"
    );
    // `</` would end the script element early.
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"vmaf-data\">{}</script>",
        json.replace("</", "<\\/")
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmafcuda::report::{FrameResult, ShotResult};

    fn report(model: &str, n: usize, offset: f64) -> Report {
        let frames: Vec<FrameResult> = (0..n)
            .map(|index| FrameResult {
                index,
                metrics: vec![
                    ("integer_vif_scale0".into(), 0.8 - 0.01 * (index % 5) as f64),
                    ("vmaf".into(), offset + (index % 5) as f64),
                ],
            })
            .collect();
        let shots = vec![
            ShotResult {
                index: 0,
                first_frame: 0,
                last_frame: n / 2 - 1,
                pooled: Report::pool_frames(&frames[..n / 2]),
            },
            ShotResult {
                index: 1,
                first_frame: n / 2,
                last_frame: n - 1,
                pooled: Report::pool_frames(&frames[n / 2..]),
            },
        ];
        Report {
            model: model.into(),
            width: 64,
            height: 36,
            bpc: 10,
            backend: "cpu".into(),
            fps: 12.5,
            pooled: Report::pool_frames(&frames),
            frames,
            shots,
        }
    }

    #[test]
    fn page_has_every_section_and_no_external_reference() {
        let reports = [
            report("vmaf_v0.6.1", 20, 80.0),
            report("vmaf_4k_v0.6.1", 20, 85.0),
        ];
        let mut facts = InputFacts::new("dir/ref <a>.y4m", "dist.y4m");
        facts.timing = Timing::from_frame_rate(Some((25, 1)));
        facts.device = "CPU, 2 threads".into();
        let page = render_page(&reports, &facts);
        assert!(page.contains("data-frames=\"20\" data-shots=\"2\" data-models=\"2\""));
        assert_eq!(page.matches("class=\"curve\"").count(), 2);
        assert_eq!(page.matches("class=\"shot-row\"").count(), 2);
        assert_eq!(page.matches("class=\"worst-row\"").count(), WORST_FRAMES);
        assert_eq!(page.matches("<table class=\"pooled\"").count(), 2);
        assert!(page.contains("ref &lt;a&gt;.y4m"), "names are escaped");
        assert!(page.contains("10 bits") && page.contains("CPU, 2 threads"));
        assert!(page.contains("<td>0:00.760</td>"), "frame 19 at 25 fps");
        for external in ["http:", "https:", "src=", "href=", "@import", "url("] {
            assert!(!page.contains(external), "page references {external}");
        }
    }

    #[test]
    fn embedded_data_cannot_close_its_script() {
        let mut r = report("</script><b>x", 4, 80.0);
        r.shots.truncate(1);
        let page = render_page(&[r], &InputFacts::new("a", "b"));
        assert_eq!(
            page.matches("</script>").count(),
            3,
            "error hook, data, script"
        );
    }
}
