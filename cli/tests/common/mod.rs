//! Helpers of the CLI's tests: the engine's test helpers (corpus, outputs: `tests/common` at the
//! workspace root), a headless browser for the HTML report, and a pseudo-terminal for the
//! progress bar.
#![allow(dead_code)]

#[path = "../../../tests/common/mod.rs"]
mod engine;

pub mod browser;

pub use engine::*;

use std::path::Path;

/// Runs `command` (a shell line) on a pseudo-terminal (script(1)) with `VMAFCUDA_SERVICE` set
/// to `service`, in `dir`; `None` where script(1) is missing. Returns the success and what the
/// terminal showed (stdout and stderr together).
pub fn on_terminal(command: &str, service: &std::ffi::OsStr, dir: &Path) -> Option<(bool, String)> {
    let o = std::process::Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env("VMAFCUDA_SERVICE", service)
        .current_dir(dir)
        .output()
        .ok()?;
    Some((
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    ))
}

/// What the progress bar draws (on a terminal, without --quiet) for the built-in clip.
pub fn shows_progress_bar(terminal: &str) -> bool {
    terminal.contains("/48 frames") && terminal.contains(" fps  ETA ")
}
