//! Scoring results as plain data, and their libvmaf-compatible JSON, CSV and XML renderings.
//!
//! Layout follows libvmaf 3.2.0's `vmaf_write_output_*` (same keys, same nesting), with two
//! deliberate differences: every number is printed as the shortest string that round-trips to
//! the same double (libvmaf rounds to 6 decimals), and a `shots` array (per-shot pooled scores)
//! follows `pooled_metrics`. Pooled entries carry `p5`/`p10` (5th/10th percentiles) after
//! libvmaf's four methods; readers of libvmaf files ignore keys they do not know.

use std::fmt::Write as _;

use crate::pool::PooledStats;

/// One scored frame: libvmaf metric keys in libvmaf's order, `vmaf` last.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameResult {
    /// Global frame index (position in the input stream), also across shots.
    pub index: usize,
    pub metrics: Vec<(String, f64)>,
}

impl FrameResult {
    pub fn get(&self, key: &str) -> Option<f64> {
        self.metrics.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The model score (`vmaf`).
    pub fn vmaf(&self) -> f64 {
        self.get("vmaf").unwrap_or(f64::NAN)
    }
}

/// Pooled statistics of one shot (frames scored in one fresh session).
#[derive(Clone, Debug, PartialEq)]
pub struct ShotResult {
    pub index: usize,
    pub first_frame: usize,
    pub last_frame: usize,
    pub pooled: Vec<(String, PooledStats)>,
}

impl ShotResult {
    pub fn frame_count(&self) -> usize {
        self.last_frame + 1 - self.first_frame
    }

    pub fn pooled(&self, key: &str) -> Option<&PooledStats> {
        self.pooled.iter().find(|(k, _)| k == key).map(|(_, s)| s)
    }
}

/// Everything a scoring run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub model: String,
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
    pub backend: String,
    /// Frames per second of the scoring run (timing only; never compared).
    pub fps: f64,
    pub frames: Vec<FrameResult>,
    pub pooled: Vec<(String, PooledStats)>,
    pub shots: Vec<ShotResult>,
}

impl Report {
    pub fn pooled(&self, key: &str) -> Option<&PooledStats> {
        self.pooled.iter().find(|(k, _)| k == key).map(|(_, s)| s)
    }

    /// Pools every metric over `frames` (in frame order, as libvmaf sums).
    pub fn pool_frames(frames: &[FrameResult]) -> Vec<(String, PooledStats)> {
        let Some(first) = frames.first() else {
            return Vec::new();
        };
        first
            .metrics
            .iter()
            .filter_map(|(key, _)| {
                let values: Vec<f64> = frames.iter().filter_map(|f| f.get(key)).collect();
                PooledStats::from_values(&values).map(|s| (key.clone(), s))
            })
            .collect()
    }
}

/// Output file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Xml,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            "xml" => Ok(Format::Xml),
            other => Err(format!("unknown format {other:?} (json, csv or xml)")),
        }
    }
}

/// Shortest decimal string that parses back to exactly `x`; `null` for NaN and infinities.
pub fn number(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        "null".to_owned()
    }
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn pooled_json(out: &mut String, indent: &str, pooled: &[(String, PooledStats)]) {
    out.push('{');
    for (i, (key, s)) in pooled.iter().enumerate() {
        out.push_str(if i > 0 { ",\n" } else { "\n" });
        let _ = write!(
            out,
            "{indent}  {}: {{\n{indent}    \"min\": {},\n{indent}    \"max\": {},\n{indent}    \"mean\": {},\n{indent}    \"harmonic_mean\": {},\n{indent}    \"p5\": {},\n{indent}    \"p10\": {}\n{indent}  }}",
            json_string(key),
            number(s.min),
            number(s.max),
            number(s.mean),
            number(s.harmonic_mean),
            number(s.p5),
            number(s.p10)
        );
    }
    let _ = write!(out, "\n{indent}}}");
}

impl Report {
    /// libvmaf-layout JSON plus `shots`.
    pub fn to_json(&self) -> String {
        self.render(Format::Json)
    }

    /// libvmaf-layout CSV: `Frame,<key>,...,` then one row per frame (plus a `shot` column).
    pub fn to_csv(&self) -> String {
        self.render(Format::Csv)
    }

    /// libvmaf-layout XML plus `<shots>`.
    pub fn to_xml(&self) -> String {
        self.render(Format::Xml)
    }

    pub fn render(&self, format: Format) -> String {
        let mut out = String::with_capacity(1024 + self.frames.len() * 700);
        self.write_head(&mut out, format, self.frames.first());
        for (i, f) in self.frames.iter().enumerate() {
            write_frame(&mut out, format, i, f, self.shot_of(f.index).unwrap_or(0));
        }
        write_middle(&mut out, format, &self.pooled);
        for (i, s) in self.shots.iter().enumerate() {
            write_shot(&mut out, format, i, s);
        }
        write_tail(&mut out, format);
        out
    }

    /// The file's start, up to its first frame: the run's facts (JSON, XML; only known at the
    /// end: fps, the backend after a fall-back) or the column names of `first` (CSV).
    /// [`crate::results_file`] writes the same pieces as the frames come.
    pub(crate) fn write_head(&self, out: &mut String, format: Format, first: Option<&FrameResult>) {
        match format {
            Format::Json => {
                out.push_str("{\n");
                let _ = writeln!(
                    out,
                    "  \"version\": {},",
                    json_string(crate::VERSION_STRING)
                );
                let _ = writeln!(
                    out,
                    "  \"fps\": {},",
                    number((self.fps * 100.0).round() / 100.0)
                );
                let _ = writeln!(out, "  \"model\": {},", json_string(&self.model));
                let _ = writeln!(out, "  \"backend\": {},", json_string(&self.backend));
                out.push_str("  \"frames\": [");
            }
            Format::Csv => {
                out.push_str("Frame,");
                if let Some(f) = first {
                    for (key, _) in &f.metrics {
                        let _ = write!(out, "{key},");
                    }
                }
                out.push_str("shot,\n");
            }
            Format::Xml => {
                let _ = writeln!(out, "<VMAF version=\"{}\">", crate::VERSION_STRING);
                let _ = writeln!(
                    out,
                    "  <params qualityWidth=\"{}\" qualityHeight=\"{}\" model=\"{}\" backend=\"{}\" />",
                    self.width,
                    self.height,
                    xml_escape(&self.model),
                    xml_escape(&self.backend)
                );
                let _ = writeln!(out, "  <fyi fps=\"{:.2}\" />", self.fps);
                out.push_str("  <frames>\n");
            }
        }
    }

    /// Index of the shot holding global frame `index`.
    pub fn shot_of(&self, index: usize) -> Option<usize> {
        self.shots
            .iter()
            .find(|s| (s.first_frame..=s.last_frame).contains(&index))
            .map(|s| s.index)
    }
}

/// Frame `i` (0-based position in the file) of shot `shot`.
pub(crate) fn write_frame(
    out: &mut String,
    format: Format,
    i: usize,
    f: &FrameResult,
    shot: usize,
) {
    match format {
        Format::Json => {
            out.push_str(if i > 0 { ",\n" } else { "\n" });
            let _ = write!(
                out,
                "    {{\n      \"frameNum\": {},\n      \"metrics\": {{\n",
                f.index
            );
            for (j, (key, value)) in f.metrics.iter().enumerate() {
                let sep = if j + 1 < f.metrics.len() { "," } else { "" };
                let _ = writeln!(out, "        {}: {}{sep}", json_string(key), number(*value));
            }
            out.push_str("      }\n    }");
        }
        Format::Csv => {
            let _ = write!(out, "{},", f.index);
            for (_, v) in &f.metrics {
                let _ = write!(out, "{},", number(*v));
            }
            let _ = writeln!(out, "{shot},");
        }
        Format::Xml => {
            let _ = write!(out, "    <frame frameNum=\"{}\" ", f.index);
            for (k, v) in &f.metrics {
                let _ = write!(out, "{k}=\"{}\" ", number(*v));
            }
            out.push_str("/>\n");
        }
    }
}

/// Between the frames and the shots: the whole-stream pool.
pub(crate) fn write_middle(out: &mut String, format: Format, pooled: &[(String, PooledStats)]) {
    match format {
        Format::Json => {
            out.push_str("\n  ],\n  \"pooled_metrics\": ");
            pooled_json(out, "  ", pooled);
            out.push_str(",\n  \"aggregate_metrics\": {\n  },\n  \"shots\": [");
        }
        Format::Csv => {}
        Format::Xml => {
            out.push_str("  </frames>\n  <pooled_metrics>\n");
            xml_pooled(out, "    ", pooled);
            out.push_str("  </pooled_metrics>\n  <aggregate_metrics />\n  <shots>\n");
        }
    }
}

/// Shot `i` (0-based position in the file); CSV has no shot list.
pub(crate) fn write_shot(out: &mut String, format: Format, i: usize, s: &ShotResult) {
    match format {
        Format::Json => {
            out.push_str(if i > 0 { ",\n" } else { "\n" });
            let _ = write!(
                out,
                "    {{\n      \"index\": {},\n      \"first_frame\": {},\n      \"last_frame\": {},\n      \"pooled_metrics\": ",
                s.index, s.first_frame, s.last_frame
            );
            pooled_json(out, "      ", &s.pooled);
            out.push_str("\n    }");
        }
        Format::Csv => {}
        Format::Xml => {
            let _ = writeln!(
                out,
                "    <shot index=\"{}\" first_frame=\"{}\" last_frame=\"{}\">",
                s.index, s.first_frame, s.last_frame
            );
            xml_pooled(out, "      ", &s.pooled);
            out.push_str("    </shot>\n");
        }
    }
}

pub(crate) fn write_tail(out: &mut String, format: Format) {
    match format {
        Format::Json => out.push_str("\n  ]\n}\n"),
        Format::Csv => {}
        Format::Xml => out.push_str("  </shots>\n</VMAF>\n"),
    }
}

fn xml_pooled(out: &mut String, indent: &str, pooled: &[(String, PooledStats)]) {
    for (k, s) in pooled {
        let _ = writeln!(
            out,
            "{indent}<metric name=\"{}\" min=\"{}\" max=\"{}\" mean=\"{}\" harmonic_mean=\"{}\" p5=\"{}\" p10=\"{}\" />",
            xml_escape(k),
            number(s.min),
            number(s.max),
            number(s.mean),
            number(s.harmonic_mean),
            number(s.p5),
            number(s.p10)
        );
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
