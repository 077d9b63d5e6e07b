//! The per-frame VMAF chart as SVG: one curve per model, shaded shot bands labelled with each
//! shot's pooled mean, markers on chosen frames (the worst ones), frame and time axes.
//!
//! The SVG uses presentation attributes only (no CSS, no scripts, no external references), so
//! the same markup is embedded in the HTML report and stands alone as a file
//! (`vmafcuda score --plot curve.svg`) to paste into documents. Machine-readable attributes
//! (`data-frames`, `data-points`, `data-shots`, ...) let the report's script and tests read the
//! chart without parsing coordinates.
//!
//! Long runs stay small: above [`DEFAULT_MAX_POINTS`] frames the curve is decimated to the
//! minimum and maximum frame of each of `max_points / 2` equal buckets of frames (every dip
//! survives; every plotted point is a real frame).

use std::fmt::Write as _;

use crate::timing::{trim_number, Timing};
use vmafcuda::report::Report;

/// Curves with more frames than this are decimated (see the module docs).
pub const DEFAULT_MAX_POINTS: usize = 20_000;

/// Curve colours, one per model in order (colour-blind-safe palette).
const CURVE_COLOURS: &[&str] = &["#1f6feb", "#e36209", "#2da44e", "#8250df", "#bf3989"];
const BAND_FILLS: &[&str] = &["#eef3fb", "#fbf6ee"];
const MARKER_COLOUR: &str = "#cf222e";

/// A chart of the frames of `reports` (all scored on the same frames; the first one's shots
/// give the bands).
#[derive(Clone, Debug)]
pub struct Chart<'a> {
    pub reports: &'a [Report],
    pub timing: &'a Timing,
    /// Frames (global indices) to mark with a dot, e.g. the worst ones.
    pub markers: &'a [usize],
    pub max_points: usize,
    pub width: f64,
    pub height: f64,
}

/// Plot area inside the SVG (pixels).
#[derive(Clone, Copy, Debug)]
struct Frame {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    /// Frame-index range shown: [x0, x1].
    x0: f64,
    x1: f64,
    /// Score range shown: [y0, y1].
    y0: f64,
    y1: f64,
}

impl Frame {
    fn x(&self, index: f64) -> f64 {
        self.left + (index - self.x0) / (self.x1 - self.x0) * (self.right - self.left)
    }
    fn y(&self, score: f64) -> f64 {
        let s = score.clamp(self.y0, self.y1);
        self.bottom - (s - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)
    }
}

/// Escapes text for XML/HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Frame positions (into `scores`) to plot: all of them, or the min and max of each bucket.
pub fn decimate(scores: &[f64], max_points: usize) -> Vec<usize> {
    let n = scores.len();
    if n <= max_points.max(2) {
        return (0..n).collect();
    }
    let buckets = (max_points / 2).max(1);
    let mut out = Vec::with_capacity(buckets * 2);
    for b in 0..buckets {
        let (start, end) = (b * n / buckets, (b + 1) * n / buckets);
        let mut lo: Option<usize> = None;
        let mut hi: Option<usize> = None;
        for i in start..end {
            if scores[i].is_nan() {
                continue;
            }
            if lo.is_none_or(|j| scores[i] < scores[j]) {
                lo = Some(i);
            }
            if hi.is_none_or(|j| scores[i] > scores[j]) {
                hi = Some(i);
            }
        }
        match (lo, hi) {
            (Some(a), Some(b)) if a != b => out.extend([a.min(b), a.max(b)]),
            (Some(a), _) => out.push(a),
            _ => out.push(start),
        }
    }
    out
}

/// Up to about `target` round tick values covering [lo, hi].
fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let span = (hi - lo).max(1.0);
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= target as f64)
        .unwrap_or(10.0 * mag)
        .max(1.0);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

fn px(x: f64) -> String {
    trim_number(x, 1)
}

impl<'a> Chart<'a> {
    pub fn new(reports: &'a [Report], timing: &'a Timing) -> Self {
        Chart {
            reports,
            timing,
            markers: &[],
            max_points: DEFAULT_MAX_POINTS,
            width: 960.0,
            height: 320.0,
        }
    }

    /// Positions (into the first report's frames) of the plotted points.
    pub fn plotted(&self) -> Vec<usize> {
        let scores: Vec<f64> = self
            .reports
            .first()
            .map(|r| r.frames.iter().map(|f| f.vmaf()).collect())
            .unwrap_or_default();
        decimate(&scores, self.max_points)
    }

    /// VMAF of global frame `index` in `report`, if scored.
    pub fn score_at(report: &Report, index: usize) -> Option<f64> {
        report
            .frames
            .binary_search_by_key(&index, |f| f.index)
            .ok()
            .map(|p| report.frames[p].vmaf())
            .filter(|v| !v.is_nan())
    }

    fn layout(&self) -> Frame {
        let primary = &self.reports[0];
        let first = primary.frames.first().map_or(0, |f| f.index) as f64;
        let last = primary.frames.last().map_or(0, |f| f.index) as f64;
        let scores = self
            .reports
            .iter()
            .flat_map(|r| r.frames.iter().map(|f| f.vmaf()))
            .filter(|v| v.is_finite());
        let (lo, hi) = scores.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let (lo, hi) = if lo.is_finite() {
            (lo, hi)
        } else {
            (0.0, 100.0)
        };
        // Zoom on the scores, in steps of 10, always showing 100 (the top of the scale).
        let y0 = ((lo - 2.0) / 10.0).floor() * 10.0;
        let y0 = y0.min(90.0);
        let y1 = ((hi / 10.0).ceil() * 10.0).max(100.0);
        Frame {
            left: 52.0,
            right: self.width - 16.0,
            top: 30.0,
            bottom: self.height - if self.timing_known() { 58.0 } else { 46.0 },
            x0: first - 0.5,
            x1: last + 0.5,
            y0,
            y1,
        }
    }

    fn timing_known(&self) -> bool {
        !matches!(self.timing, Timing::Unknown)
    }

    /// The chart. `standalone`: with the XML namespace, for a file of its own.
    pub fn svg(&self, standalone: bool) -> String {
        let mut out = String::new();
        let Some(primary) = self.reports.first() else {
            return out;
        };
        let f = self.layout();
        let plotted = self.plotted();
        let (w, h) = (self.width, self.height);
        let ns = if standalone {
            " xmlns=\"http://www.w3.org/2000/svg\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<svg{ns} class=\"vmaf-chart\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
             role=\"img\" aria-label=\"VMAF per frame\" font-family=\"system-ui, sans-serif\" \
             font-size=\"11\" data-frames=\"{}\" data-points=\"{}\" data-decimated=\"{}\" \
             data-shots=\"{}\" data-models=\"{}\" data-left=\"{}\" data-right=\"{}\" \
             data-top=\"{}\" data-bottom=\"{}\" data-x0=\"{}\" data-x1=\"{}\" data-y0=\"{}\" \
             data-y1=\"{}\">",
            primary.frames.len(),
            plotted.len(),
            u8::from(plotted.len() < primary.frames.len()),
            primary.shots.len(),
            self.reports.len(),
            f.left,
            f.right,
            f.top,
            f.bottom,
            f.x0,
            f.x1,
            f.y0,
            f.y1
        );
        let _ = writeln!(
            out,
            "<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>"
        );
        self.shot_bands(&mut out, &f);
        self.axes(&mut out, &f);
        for (m, report) in self.reports.iter().enumerate() {
            self.curve(&mut out, &f, report, m, &plotted);
        }
        self.marks(&mut out, &f);
        self.legend(&mut out, &f);
        out.push_str("<line class=\"cursor\" x1=\"0\" x2=\"0\" y1=\"0\" y2=\"0\" stroke=\"#57606a\" stroke-dasharray=\"3 3\" visibility=\"hidden\"/>\n");
        out.push_str("</svg>\n");
        out
    }

    fn shot_bands(&self, out: &mut String, f: &Frame) {
        let primary = &self.reports[0];
        out.push_str("<g class=\"shot-bands\">\n");
        for (k, s) in primary.shots.iter().enumerate() {
            let xa = f.x(s.first_frame as f64 - 0.5).max(f.left);
            let xb = f.x(s.last_frame as f64 + 0.5).min(f.right);
            let mean = s.pooled("vmaf").map(|p| p.mean);
            let mean_text = mean.map_or("-".into(), |m| format!("{m:.2}"));
            let times = match (
                self.timing.label(s.first_frame),
                self.timing.label(s.last_frame),
            ) {
                (Some(a), Some(b)) => format!(" ({a} to {b})"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "<rect class=\"shot-band\" data-shot=\"{}\" data-first=\"{}\" data-last=\"{}\" \
                 data-mean=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" \
                 stroke=\"#d0d7de\" stroke-width=\"0.5\"><title>shot {}: frames {} to {}{times}, \
                 VMAF mean {mean_text}</title></rect>",
                s.index,
                s.first_frame,
                s.last_frame,
                mean.map_or("".into(), |m| format!("{m:.6}")),
                px(xa),
                px(f.top),
                px((xb - xa).max(0.0)),
                px(f.bottom - f.top),
                BAND_FILLS[k % BAND_FILLS.len()],
                s.index,
                s.first_frame,
                s.last_frame,
            );
            // Labels only where they fit; the band's tooltip always has them.
            let label = format!("#{} {mean_text}", s.index);
            if xb - xa >= 7.0 * label.len() as f64 {
                let _ = writeln!(
                    out,
                    "<text class=\"shot-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#24292f\">{}</text>",
                    px((xa + xb) / 2.0),
                    px(f.top - 8.0),
                    escape(&label)
                );
            }
        }
        out.push_str("</g>\n");
    }

    fn axes(&self, out: &mut String, f: &Frame) {
        out.push_str("<g class=\"axes\" fill=\"#57606a\">\n");
        let ystep = if f.y1 - f.y0 > 50.0 { 20.0 } else { 10.0 };
        let mut v = f.y0;
        while v <= f.y1 + 1e-9 {
            let y = px(f.y(v));
            let _ = writeln!(
                out,
                "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#afb8c1\" stroke-width=\"0.5\"/>\
                 <text x=\"{}\" y=\"{y}\" dy=\"4\" text-anchor=\"end\">{}</text>",
                px(f.left),
                px(f.right),
                px(f.left - 6.0),
                trim_number(v, 1)
            );
            v += ystep;
        }
        let _ = writeln!(
            out,
            "<text x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">VMAF</text>",
            px((f.top + f.bottom) / 2.0),
            px((f.top + f.bottom) / 2.0)
        );
        let first = f.x0 + 0.5;
        let last = f.x1 - 0.5;
        for t in ticks(first, last, 10) {
            let x = px(f.x(t));
            let _ = writeln!(
                out,
                "<line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" stroke=\"#57606a\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(f.bottom),
                px(f.bottom + 4.0),
                px(f.bottom + 15.0),
                t as usize
            );
            if let Some(label) = self.timing.label(t as usize) {
                let _ = writeln!(
                    out,
                    "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" fill=\"#8c959f\">{}</text>",
                    px(f.bottom + 27.0),
                    escape(&label)
                );
            }
        }
        let caption = if self.timing_known() {
            "frame / time"
        } else {
            "frame"
        };
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{caption}</text>",
            px(f.right),
            px(self.height - 4.0)
        );
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#8c959f\" stroke-width=\"0.75\"/>",
            px(f.left),
            px(f.top),
            px(f.right - f.left),
            px(f.bottom - f.top)
        );
        out.push_str("</g>\n");
    }

    fn curve(&self, out: &mut String, f: &Frame, report: &Report, m: usize, plotted: &[usize]) {
        let primary = &self.reports[0];
        let mut points = String::with_capacity(plotted.len() * 12);
        let mut count = 0usize;
        for &p in plotted {
            let index = primary.frames[p].index;
            let score = if m == 0 {
                Some(primary.frames[p].vmaf()).filter(|v| !v.is_nan())
            } else {
                Self::score_at(report, index)
            };
            if let Some(v) = score {
                if count > 0 {
                    points.push(' ');
                }
                let _ = write!(
                    points,
                    "{},{}",
                    px(f.x(index as f64)),
                    trim_number(f.y(v), 2)
                );
                count += 1;
            }
        }
        let _ = writeln!(
            out,
            "<polyline class=\"curve\" data-model=\"{}\" data-points=\"{count}\" fill=\"none\" \
             stroke=\"{}\" stroke-width=\"1.5\" stroke-linejoin=\"round\" points=\"{points}\"/>",
            escape(&report.model),
            CURVE_COLOURS[m % CURVE_COLOURS.len()]
        );
    }

    fn marks(&self, out: &mut String, f: &Frame) {
        let primary = &self.reports[0];
        out.push_str("<g class=\"markers\">\n");
        for &index in self.markers {
            let Some(v) = Self::score_at(primary, index) else {
                continue;
            };
            let time = self
                .timing
                .label(index)
                .map(|t| format!(" at {t}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "<circle class=\"worst-marker\" data-frame=\"{index}\" cx=\"{}\" cy=\"{}\" r=\"3.5\" \
                 fill=\"{MARKER_COLOUR}\" stroke=\"#ffffff\" stroke-width=\"1\"><title>frame {index}{time}: \
                 VMAF {v:.3}</title></circle>",
                px(f.x(index as f64)),
                trim_number(f.y(v), 2)
            );
        }
        out.push_str("</g>\n");
    }

    fn legend(&self, out: &mut String, f: &Frame) {
        let mut x = f.left - 40.0;
        out.push_str("<g class=\"legend\">\n");
        for (m, r) in self.reports.iter().enumerate() {
            let colour = CURVE_COLOURS[m % CURVE_COLOURS.len()];
            // Bottom left, under the axis (shot labels use the top).
            let y = self.height - 8.0;
            let _ = writeln!(
                out,
                "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
                 <text x=\"{}\" y=\"{}\" fill=\"#24292f\">{}</text>",
                px(x),
                px(x + 16.0),
                px(y),
                px(y),
                px(x + 20.0),
                px(y + 4.0),
                escape(&r.model)
            );
            x += 30.0 + 7.0 * r.model.len() as f64;
        }
        out.push_str("</g>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmafcuda::report::{FrameResult, ShotResult};

    fn report(n: usize, shots: &[(usize, usize)]) -> Report {
        let frames: Vec<FrameResult> = (0..n)
            .map(|index| FrameResult {
                index,
                metrics: vec![("vmaf".into(), 80.0 + (index % 7) as f64)],
            })
            .collect();
        let shots = shots
            .iter()
            .enumerate()
            .map(|(index, &(a, b))| ShotResult {
                index,
                first_frame: a,
                last_frame: b,
                pooled: Report::pool_frames(&frames[a..=b]),
            })
            .collect();
        Report {
            model: "vmaf_v0.6.1".into(),
            width: 64,
            height: 36,
            bpc: 8,
            backend: "cpu".into(),
            fps: 0.0,
            pooled: Report::pool_frames(&frames),
            frames,
            shots,
        }
    }

    fn count(svg: &str, needle: &str) -> usize {
        svg.matches(needle).count()
    }

    #[test]
    fn one_point_per_frame_and_one_band_per_shot() {
        let reports = [report(64, &[(0, 13), (14, 35), (36, 45), (46, 63)])];
        let timing = Timing::from_frame_rate(Some((25, 1)));
        let svg = Chart::new(&reports, &timing).svg(true);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("data-frames=\"64\" data-points=\"64\" data-decimated=\"0\""));
        assert_eq!(count(&svg, "class=\"shot-band\""), 4);
        let points = svg
            .split(" points=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .expect("points");
        assert_eq!(points.split(' ').count(), 64);
        assert!(
            svg.contains(">0:02.000<"),
            "frame 50 labelled with its time at 25 fps"
        );
    }

    #[test]
    fn long_runs_are_decimated_keeping_the_extremes() {
        let mut r = report(100_000, &[(0, 99_999)]);
        r.frames[54_321].metrics[0].1 = 3.0;
        let reports = [r];
        let chart = Chart {
            max_points: 1000,
            ..Chart::new(&reports, &Timing::Unknown)
        };
        let plotted = chart.plotted();
        assert!(plotted.len() <= 1000 && plotted.len() > 900);
        assert!(plotted.contains(&54_321), "the dip survives decimation");
        assert!(plotted.windows(2).all(|w| w[0] < w[1]), "in frame order");
        let svg = chart.svg(false);
        assert!(svg.contains(&format!("data-points=\"{}\"", plotted.len())));
        assert!(svg.contains("data-decimated=\"1\""));
        assert!(svg.len() < 60_000, "{} bytes", svg.len());
    }

    #[test]
    fn escapes_text() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            ticks(0.0, 63.0, 10),
            vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
        );
        assert_eq!(ticks(0.0, 4.0, 10), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    }
}
