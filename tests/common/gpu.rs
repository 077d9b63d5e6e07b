//! The GPU tests' shared set-up: one lock per test binary (the fault-injection switch and the
//! live-resource counters are process-wide), and a visible skip where there is no GPU.

use std::io::Write;
use std::sync::{Mutex, MutexGuard};

use vmafcuda::cuda::{self, fault, CudaError};

static GPU: Mutex<()> = Mutex::new(());

/// The GPU lock, or `None` (after saying so) when there is no driver or device. A test starts
/// with no fault armed and nothing alive in the CUDA layer.
pub fn gpu() -> Option<MutexGuard<'static, ()>> {
    match cuda::probe() {
        Ok(_) => {
            let guard = GPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            fault::clear();
            assert_no_live_resources("before the test");
            Some(guard)
        }
        Err(e) => {
            skipping(&e);
            None
        }
    }
}

/// Says why a test is skipped, on stderr directly: unlike `eprintln!`, the test harness does not
/// capture it, so the skip is visible in `cargo test` output.
pub fn skipping(e: &CudaError) {
    let name = std::thread::current().name().unwrap_or("test").to_owned();
    let _ = writeln!(std::io::stderr(), "skipping {name}: {e}");
}

pub fn assert_no_live_resources(when: &str) {
    let live = cuda::live_resources();
    assert!(live.is_zero(), "live CUDA resources {when}: {live:?}");
}

/// Whether the tests run under compute-sanitizer (`VMAFCUDA_UNDER_SANITIZER=1`, set by
/// scripts/gpu-check.sh). Throughput reports skip themselves there: they prove nothing about
/// correctness, and racecheck's host bookkeeping for their thousands of 4K launches grew past
/// the device machine's 128 GiB (the process was OOM-killed on 2026-11-27).
#[allow(dead_code)] // not every test binary that includes this module reports throughput
pub fn under_sanitizer() -> bool {
    let on = std::env::var_os("VMAFCUDA_UNDER_SANITIZER").is_some();
    if on {
        let _ = writeln!(
            std::io::stderr(),
            "skipping: throughput under compute-sanitizer"
        );
    }
    on
}
