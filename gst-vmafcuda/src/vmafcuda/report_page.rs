//! `report-filename`: the CLI's HTML report ([`vmafcuda_html`]) written at EOS, with the
//! element's view of the inputs (negotiated caps) and its timestamps (buffer PTS, else the caps
//! frame rate).

use vmafcuda::report::Report;
use vmafcuda_html::timing::Timing;
use vmafcuda_html::{self as html, InputFacts};

/// What the element knows about the run besides the scores.
pub(super) struct PageInputs {
    /// Negotiated formats of `ref_sink` and `dist_sink`, described for people.
    pub reference: String,
    pub distorted: String,
    /// `framerate` of the reference caps.
    pub frame_rate: Option<gst::Fraction>,
    /// PTS of every reference buffer by frame index, if the run recorded them.
    pub pts: Vec<Option<gst::ClockTime>>,
    pub cuda_device: i32,
}

/// Buffer PTS when every frame has one (what a player shows), else the caps frame rate.
fn timing(inputs: &PageInputs, frames: usize) -> Timing {
    if frames > 0 && inputs.pts.len() >= frames && inputs.pts.iter().all(Option::is_some) {
        return Timing::PerFrame(
            inputs
                .pts
                .iter()
                .map(|t| t.map(|t| t.nseconds() as f64 / 1e9))
                .collect(),
        );
    }
    let rate = inputs.frame_rate.and_then(|f| {
        let (n, d) = (
            u32::try_from(f.numer()).ok()?,
            u32::try_from(f.denom()).ok()?,
        );
        Some((n, d))
    });
    Timing::from_frame_rate(rate)
}

/// Writes the report of `report` to `path` (`%d` is replaced by the stream index 0, as for
/// `results-filename`).
pub(super) fn write(report: &Report, path: &str, inputs: &PageInputs) -> Result<(), String> {
    let frames = report.frames.last().map_or(0, |f| f.index + 1);
    let facts = InputFacts {
        timing: timing(inputs, frames),
        device: html::describe_device(&report.backend, inputs.cuda_device),
        extra: vec![("produced by".into(), "GStreamer element vmafcuda".into())],
        ..InputFacts::new(
            format!("ref_sink: {}", inputs.reference),
            format!("dist_sink: {}", inputs.distorted),
        )
    };
    let path = path.replace("%d", "0");
    html::write_files(
        std::slice::from_ref(report),
        &facts,
        Some(std::path::Path::new(&path)),
        None,
    )
}
