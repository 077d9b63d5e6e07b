//! Fault injection for tests: make the n-th allocation, module load, kernel launch or copy fail
//! with a synthetic driver error, to prove that every error path releases what it holds.
//!
//! Always compiled: when nothing is armed the cost is two relaxed loads per operation.
//! Operations are counted ([`operations`]) only once a test has called [`clear`] or
//! [`inject`]: counting is an atomic add on one process-wide word, which every scorer thread
//! would otherwise write at every launch and copy (64 scorers, tens of operations per frame
//! each). The state is process-wide, so tests that inject must not run concurrently with other
//! CUDA tests of the same binary (take a lock).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::error::{injected, CudaResult};

/// How many kinds of fault there are.
const KINDS: usize = 5;

/// A class of operations that can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// Device (`cuMemAlloc`) and pinned host (`cuMemHostAlloc`) allocations: fail with
    /// `CUDA_ERROR_OUT_OF_MEMORY`.
    Alloc,
    /// `cuModuleLoadData`: fails with `CUDA_ERROR_OUT_OF_MEMORY`.
    ModuleLoad,
    /// `cuLaunchKernel`: fails with `CUDA_ERROR_LAUNCH_FAILED`.
    Launch,
    /// Every memcpy and memset helper: fails with `CUDA_ERROR_INVALID_VALUE`.
    Copy,
    /// Stream, event and memory pool creation (`cuStreamCreate`, `cuEventCreate`,
    /// `cuMemPoolCreate`): fail with `CUDA_ERROR_OUT_OF_MEMORY`.
    Create,
}

impl FaultKind {
    pub const ALL: [FaultKind; KINDS] = [
        FaultKind::Alloc,
        FaultKind::ModuleLoad,
        FaultKind::Launch,
        FaultKind::Copy,
        FaultKind::Create,
    ];

    fn index(self) -> usize {
        self as usize
    }

    fn synthetic(self) -> (u32, &'static str) {
        match self {
            FaultKind::Alloc | FaultKind::ModuleLoad | FaultKind::Create => {
                (2, "CUDA_ERROR_OUT_OF_MEMORY")
            }
            FaultKind::Launch => (719, "CUDA_ERROR_LAUNCH_FAILED"),
            FaultKind::Copy => (1, "CUDA_ERROR_INVALID_VALUE"),
        }
    }
}

/// The fault state; one process-wide instance backs the public functions.
struct Faults {
    armed: AtomicBool,
    /// Whether `seen` counts: from the first `clear` or `inject` on (tests only).
    counting: AtomicBool,
    /// Per kind: operations left before the failing one (1 = the next fails), 0 = disarmed.
    countdown: [AtomicU64; KINDS],
    /// Per kind: operations attempted since the last clear.
    seen: [AtomicU64; KINDS],
}

impl Faults {
    const fn new() -> Self {
        Faults {
            armed: AtomicBool::new(false),
            counting: AtomicBool::new(false),
            countdown: [const { AtomicU64::new(0) }; KINDS],
            seen: [const { AtomicU64::new(0) }; KINDS],
        }
    }

    fn inject(&self, kind: FaultKind, nth: u64) {
        self.counting.store(true, Ordering::SeqCst);
        self.countdown[kind.index()].store(nth, Ordering::SeqCst);
        if nth > 0 {
            self.armed.store(true, Ordering::SeqCst);
        }
    }

    fn clear(&self) {
        self.armed.store(false, Ordering::SeqCst);
        for i in 0..KINDS {
            self.countdown[i].store(0, Ordering::SeqCst);
            self.seen[i].store(0, Ordering::SeqCst);
        }
        self.counting.store(true, Ordering::SeqCst);
    }

    fn hit(&self, kind: FaultKind, call: impl FnOnce() -> String) -> CudaResult<()> {
        let i = kind.index();
        if self.counting.load(Ordering::Relaxed) {
            self.seen[i].fetch_add(1, Ordering::Relaxed);
        }
        if !self.armed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let before = self.countdown[i].fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            left.checked_sub(1)
        });
        if before == Ok(1) {
            let (code, name) = kind.synthetic();
            Err(injected(call(), code, name))
        } else {
            Ok(())
        }
    }
}

static FAULTS: Faults = Faults::new();

/// Makes the `nth` (1-based, counted from now) operation of `kind` fail once. `nth == 0`
/// disarms that kind.
pub fn inject(kind: FaultKind, nth: u64) {
    FAULTS.inject(kind, nth);
}

/// Disarms every fault and resets the operation counts.
pub fn clear() {
    FAULTS.clear();
}

/// Operations of `kind` attempted since the last [`clear`] (to choose `nth` values that hit);
/// none are counted before the process's first [`clear`] or [`inject`].
pub fn operations(kind: FaultKind) -> u64 {
    FAULTS.seen[kind.index()].load(Ordering::SeqCst)
}

/// Whether an injected fault of `kind` is still waiting to fire.
pub fn pending(kind: FaultKind) -> bool {
    FAULTS.countdown[kind.index()].load(Ordering::SeqCst) > 0
}

/// Called by each operation of `kind` before it reaches the driver.
pub(crate) fn hit(kind: FaultKind, call: impl FnOnce() -> String) -> CudaResult<()> {
    FAULTS.hit(kind, call)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_counted_only_after_a_clear_or_an_injection() {
        let f = Faults::new();
        assert!(f.hit(FaultKind::Launch, || "k".into()).is_ok());
        assert_eq!(f.seen[FaultKind::Launch.index()].load(Ordering::SeqCst), 0);
        f.clear();
        assert!(f.hit(FaultKind::Launch, || "k".into()).is_ok());
        assert_eq!(f.seen[FaultKind::Launch.index()].load(Ordering::SeqCst), 1);
        let g = Faults::new();
        g.inject(FaultKind::Copy, 0);
        assert!(g.hit(FaultKind::Launch, || "k".into()).is_ok());
        assert_eq!(g.seen[FaultKind::Launch.index()].load(Ordering::SeqCst), 1);
    }

    // A private instance: the process-wide one may be in use by GPU tests running alongside.
    #[test]
    fn nth_operation_fails_once() {
        let f = Faults::new();
        f.inject(FaultKind::Launch, 3);
        let results: Vec<bool> = (0..5)
            .map(|_| f.hit(FaultKind::Launch, || "k".into()).is_ok())
            .collect();
        assert_eq!(results, [true, true, false, true, true]);
        assert_eq!(f.seen[FaultKind::Launch.index()].load(Ordering::SeqCst), 5);
        f.inject(FaultKind::Alloc, 1);
        let e = f
            .hit(FaultKind::Alloc, || "cuMemAlloc(8 bytes)".into())
            .unwrap_err();
        assert!(e.is_out_of_memory() && e.is_injected());
        assert_eq!(
            e.to_string(),
            "cuMemAlloc(8 bytes): CUDA_ERROR_OUT_OF_MEMORY (injected fault)"
        );
        f.clear();
        assert_eq!(f.seen[FaultKind::Launch.index()].load(Ordering::SeqCst), 0);
        f.inject(FaultKind::Copy, 0);
        assert!(f.hit(FaultKind::Copy, || "c".into()).is_ok());
    }
}
