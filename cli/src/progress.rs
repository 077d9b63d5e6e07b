//! A one-line progress bar on stderr: frames done, frames per second and time left. Drawn only
//! when stderr is a terminal and `--quiet` is not given, so pipes and logs stay clean.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const BAR: usize = 28;
const REDRAW: Duration = Duration::from_millis(200);

pub struct ProgressBar {
    enabled: bool,
    total: Option<usize>,
    started: Instant,
    last: Option<Instant>,
}

/// `m:ss` (or `h:mm:ss`).
fn clock(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The line for `done` of `total` frames after `elapsed` seconds.
pub fn render(done: usize, total: Option<usize>, elapsed: f64) -> String {
    let fps = if elapsed > 0.0 {
        done as f64 / elapsed
    } else {
        0.0
    };
    match total {
        Some(total) if total > 0 => {
            let done = done.min(total);
            let filled = done * BAR / total;
            let bar: String = (0..BAR)
                .map(|i| match i.cmp(&filled) {
                    std::cmp::Ordering::Less => '=',
                    std::cmp::Ordering::Equal => '>',
                    std::cmp::Ordering::Greater => ' ',
                })
                .collect();
            let eta = if fps > 0.0 {
                clock((total - done) as f64 / fps)
            } else {
                "?".into()
            };
            format!("[{bar}] {done}/{total} frames  {fps:.1} fps  ETA {eta}")
        }
        _ => format!("{done} frames  {fps:.1} fps  {} elapsed", clock(elapsed)),
    }
}

impl ProgressBar {
    /// A bar for `total` frames (if known); silent when `quiet` or stderr is not a terminal.
    pub fn new(total: Option<usize>, quiet: bool) -> Self {
        ProgressBar {
            enabled: !quiet && std::io::stderr().is_terminal(),
            total,
            started: Instant::now(),
            last: None,
        }
    }

    /// Redraws the line (at most five times a second).
    pub fn update(&mut self, done: usize) {
        if !self.enabled || self.last.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.last = Some(Instant::now());
        let line = render(done, self.total, self.started.elapsed().as_secs_f64());
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r{line}\x1b[K");
        let _ = e.flush();
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.enabled && self.last.is_some() {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
        }
        self.enabled = false;
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_shows_fps_and_time_left() {
        assert_eq!(
            render(50, Some(200), 2.0),
            "[=======>                    ] 50/200 frames  25.0 fps  ETA 0:06"
        );
        assert_eq!(
            render(7200, Some(7300), 3600.0),
            format!(
                "[{}>] 7200/7300 frames  2.0 fps  ETA 0:00:50",
                "=".repeat(27)
            )
            .replace("0:00:50", "0:50")
        );
        assert_eq!(render(10, None, 4.0), "10 frames  2.5 fps  0:04 elapsed");
        assert!(render(1, Some(100_000), 0.5).ends_with("ETA 13:53:20"));
    }
}
