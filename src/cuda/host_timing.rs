//! Where the host's time per frame goes in the engine, for small frames whose rate the host
//! sets (BENCHMARKS.md, stop 54: every step took about 1.45 times as long in 576x324's slow
//! pace). With `VMAFCUDA_HOST_TIMING=1` the engine adds the time of each [`Stage`] to counters
//! of the calling thread, which `vmafcuda bench`'s trace prints; otherwise each stage costs one
//! relaxed load.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

/// A step of the engine's work for a frame, on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for a slot: collecting the frames that held it (event waits and results).
    Wait,
    /// Motion's launches beside an overlapping graph.
    Motion,
    /// Recording a frame's operations ([`super::record`]).
    Record,
    /// Capturing a frame into a graph (its work queued under the capture).
    Capture,
    /// Updating or instantiating the slot's executable graph from a capture.
    Update,
    /// Setting a replayed graph's changed kernel parameters.
    Replay,
    /// Launching the graph.
    Launch,
}

/// How many stages there are.
pub const STAGES: usize = 7;

impl Stage {
    pub const ALL: [Stage; STAGES] = [
        Stage::Wait,
        Stage::Motion,
        Stage::Record,
        Stage::Capture,
        Stage::Update,
        Stage::Replay,
        Stage::Launch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Wait => "wait",
            Stage::Motion => "motion",
            Stage::Record => "record",
            Stage::Capture => "capture",
            Stage::Update => "update",
            Stage::Replay => "replay",
            Stage::Launch => "launch",
        }
    }
}

/// 0: not read yet, 1: off, 2: on.
static ON: AtomicU8 = AtomicU8::new(0);

thread_local! {
    static TOTALS: Cell<[u64; STAGES]> = const { Cell::new([0; STAGES]) };
}

/// Whether stages are timed (`VMAFCUDA_HOST_TIMING=1`, read once per process).
pub fn enabled() -> bool {
    match ON.load(Ordering::Relaxed) {
        0 => {
            let on = wanted(std::env::var("VMAFCUDA_HOST_TIMING").ok().as_deref());
            ON.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        v => v == 2,
    }
}

fn wanted(setting: Option<&str>) -> bool {
    setting.map(str::trim) == Some("1")
}

/// The start of a timed stage: `None` when timing is off.
pub fn start() -> Option<Instant> {
    enabled().then(Instant::now)
}

/// Adds the time since `started` (from [`start`]) to `stage`'s total on this thread.
pub fn add(stage: Stage, started: Option<Instant>) {
    if let Some(t) = started {
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        TOTALS.with(|c| {
            let mut v = c.get();
            v[stage as usize] = v[stage as usize].saturating_add(ns);
            c.set(v);
        });
    }
}

/// This thread's totals per stage in nanoseconds, in [`Stage::ALL`] order, set back to zero.
pub fn take_on_this_thread() -> [u64; STAGES] {
    TOTALS.with(|c| c.replace([0; STAGES]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_is_asked_with_1_and_totals_are_per_stage_and_taken_once() {
        assert!(wanted(Some("1")) && wanted(Some(" 1")));
        assert!(!wanted(None) && !wanted(Some("0")) && !wanted(Some("yes")));
        let t = Instant::now() - std::time::Duration::from_micros(5);
        add(Stage::Capture, Some(t));
        add(Stage::Launch, None);
        let totals = take_on_this_thread();
        assert!(totals[Stage::Capture as usize] >= 5_000);
        assert_eq!(totals[Stage::Launch as usize], 0);
        assert_eq!(take_on_this_thread(), [0; STAGES]);
        let names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), STAGES);
        assert!(Stage::ALL.iter().enumerate().all(|(i, &s)| s as usize == i));
    }
}
