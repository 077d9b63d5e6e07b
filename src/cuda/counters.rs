//! Process-wide counts of live CUDA resources, so tests and long-running sessions can check that
//! teardown released everything (compute-sanitizer does not see leaked modules; these do).
//!
//! Each RAII owner counts itself up once its handle exists and down once the driver confirmed
//! the release; a release that failed stays counted, so a leak shows.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A snapshot of [`live_resources`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveResources {
    pub device_buffers: usize,
    pub device_bytes: usize,
    pub pinned_buffers: usize,
    pub pinned_bytes: usize,
    pub streams: usize,
    pub events: usize,
    pub modules: usize,
    /// [`super::Context`] handles alive (owned or borrowed), not handles clones share.
    pub contexts: usize,
    /// Device memory pools of scorers ([`super::ScorerPools`]).
    pub pools: usize,
    /// Pinned blocks scorers keep for their next engines (not in `pinned_buffers`).
    pub pinned_kept: usize,
    /// CUDA graphs and executable graphs ([`super::graph`]).
    pub graphs: usize,
}

impl LiveResources {
    /// True when nothing is alive.
    pub fn is_zero(&self) -> bool {
        *self == LiveResources::default()
    }
}

/// The resources the CUDA layer holds right now, across all contexts and threads.
pub fn live_resources() -> LiveResources {
    LiveResources {
        device_buffers: DEVICE_BUFFERS.load(Ordering::SeqCst),
        device_bytes: DEVICE_BYTES.load(Ordering::SeqCst),
        pinned_buffers: PINNED_BUFFERS.load(Ordering::SeqCst),
        pinned_bytes: PINNED_BYTES.load(Ordering::SeqCst),
        streams: STREAMS.load(Ordering::SeqCst),
        events: EVENTS.load(Ordering::SeqCst),
        modules: MODULES.load(Ordering::SeqCst),
        contexts: CONTEXTS.load(Ordering::SeqCst),
        pools: POOLS.load(Ordering::SeqCst),
        pinned_kept: PINNED_KEPT.load(Ordering::SeqCst),
        graphs: GRAPHS.load(Ordering::SeqCst),
    }
}

pub(crate) static DEVICE_BUFFERS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static DEVICE_BYTES: AtomicUsize = AtomicUsize::new(0);
pub(crate) static PINNED_BUFFERS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static PINNED_BYTES: AtomicUsize = AtomicUsize::new(0);
pub(crate) static STREAMS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static EVENTS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static MODULES: AtomicUsize = AtomicUsize::new(0);
pub(crate) static CONTEXTS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static POOLS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static PINNED_KEPT: AtomicUsize = AtomicUsize::new(0);
pub(crate) static GRAPHS: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn up(counter: &AtomicUsize, n: usize) {
    counter.fetch_add(n, Ordering::SeqCst);
}

pub(crate) fn down(counter: &AtomicUsize, n: usize) {
    counter.fetch_sub(n, Ordering::SeqCst);
}
