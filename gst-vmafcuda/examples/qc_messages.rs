//! Live QC from Rust: run a pipeline with a `vmafcuda` element and turn its bus messages into
//! one line each (frame scores, shot results, gaps, alerts, the pooled result at EOS), using the
//! typed parser `gstvmafcuda::VmafMessage`.
//!
//! ```sh
//! cargo run -p gst-vmafcuda --example qc_messages                  # a built-in test pipeline
//! cargo run -p gst-vmafcuda --example qc_messages -- \
//!   'filesrc location=ref.y4m ! y4mdec ! vmafcuda name=v frame-message=true alert-threshold=60 ! fakesink
//!    filesrc location=dist.y4m ! y4mdec ! v.dist_sink'
//! ```
//!
//! The plugin is registered statically here, so no `GST_PLUGIN_PATH` is needed.

use gst::prelude::*;
use gstvmafcuda::VmafMessage;

/// A pipeline that runs anywhere: a moving pattern against a noisier copy of it, with a shot
/// boundary at frame 10, frame messages and alerts on.
pub const DEMO_PIPELINE: &str = "videotestsrc num-buffers=20 pattern=ball ! \
    video/x-raw,format=I420,width=160,height=90,framerate=25/1 ! tee name=t \
    t. ! queue ! v.ref_sink \
    t. ! queue ! videobalance contrast=0.6 ! v.dist_sink \
    vmafcuda name=v frame-message=true shot-boundaries=10 alert-threshold=99 ! fakesink";

/// What a run reported, in the order the bus delivered it.
#[derive(Debug, Default)]
pub struct QcLog {
    pub lines: Vec<String>,
    pub messages: Vec<VmafMessage>,
}

/// Runs `description` to EOS and collects the element's messages as lines. Errors on the bus
/// end the run with their text.
pub fn watch(description: &str) -> Result<QcLog, String> {
    gst::init().map_err(|e| e.to_string())?;
    gstvmafcuda::plugin_register_static().map_err(|e| e.to_string())?;
    let pipeline = gst::parse::launch(description).map_err(|e| e.to_string())?;
    let bus = pipeline.bus().ok_or("pipeline without a bus")?;
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| e.to_string())?;
    let mut log = QcLog::default();
    let mut result = Ok(());
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                result = Err(format!("{}: {:?}", e.error(), e.debug()));
                break;
            }
            gst::MessageView::Warning(w) => log.lines.push(format!("warning: {}", w.error())),
            _ => {}
        }
        if let Some(m) = VmafMessage::parse(&msg) {
            log.lines.push(describe(&m));
            log.messages.push(m);
        }
    }
    let _ = pipeline.set_state(gst::State::Null);
    result.map(|_| log)
}

/// One line for a message.
pub fn describe(m: &VmafMessage) -> String {
    match m {
        VmafMessage::Frame(f) => format!(
            "frame {} (shot {}) at {}: VMAF {:.3}",
            f.index,
            f.shot,
            f.timestamp.map_or("-".into(), |t| t.to_string()),
            f.score
        ),
        VmafMessage::Shot(s) => format!(
            "shot {}: frames {}..={} VMAF {:.3} (min {:.3}), {} missing, {} repeated",
            s.index,
            s.first_frame,
            s.last_frame,
            s.pooled.score,
            s.pooled.min,
            s.frames_missing,
            s.frames_repeated
        ),
        VmafMessage::Gap(g) => format!(
            "gap ({}): {} reference frames unscored before frame {}",
            g.reason, g.frames, g.before_frame
        ),
        VmafMessage::Alert(a) => format!(
            "ALERT ({}): shot {} frames {}..={} at {:.3} below {}",
            a.reason, a.shot, a.first_frame, a.last_frame, a.score, a.threshold
        ),
        VmafMessage::Align(a) => format!("align ({}): offset {} ns", a.reason, a.offset),
        VmafMessage::Pooled(p) => format!(
            "stream: {} frames, {} shots, VMAF {:.3}, {} gaps, {} alerts",
            p.frames, p.shots, p.pooled.score, p.gaps, p.alerts
        ),
    }
}

#[allow(dead_code)] // The test that includes this file calls `watch` instead.
fn main() {
    let description = std::env::args()
        .nth(1)
        .unwrap_or_else(|| DEMO_PIPELINE.to_string());
    match watch(&description) {
        Ok(log) => {
            for line in log.lines {
                println!("{line}");
            }
        }
        Err(e) => {
            eprintln!("qc_messages: {e}");
            std::process::exit(1);
        }
    }
}
