//! Set-up shared by the element's integration tests: GStreamer with the plugin registered, a
//! per-process scratch directory, and the libvmaf reference corpus.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub fn init() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        // A fresh registry, so a stale cache never hides a plugin change.
        let registry = scratch().join("registry.bin");
        std::env::set_var("GST_REGISTRY", &registry);
        std::env::set_var("GST_REGISTRY_FORK", "no");
        gst::init().expect("gst init");
        gstvmafcuda::plugin_register_static().expect("register vmafcuda");
    });
}

/// Per-process scratch directory (decompressed clips, registry, results files).
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

pub fn corpus() -> PathBuf {
    let dir = std::env::var("VMAFCUDA_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    assert!(
        dir.join("manifest.json").exists(),
        "libvmaf reference corpus not found at {} (set VMAFCUDA_CORPUS)",
        dir.display()
    );
    dir
}

/// Decompresses `video/<name>.y4m.zst` into the scratch directory (once per process).
pub fn y4m(name: &str) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = scratch().join(format!("{name}.y4m"));
    if !out.exists() {
        let src = corpus().join(format!("video/{name}.y4m.zst"));
        let data = std::fs::read(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        std::fs::write(&out, zstd::decode_all(&data[..]).expect("zstd")).expect("write y4m");
    }
    out
}

pub fn json(rel: &str) -> serde_json::Value {
    let path = corpus().join("vmaf").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("json")
}

/// Resident set size of this process in bytes.
pub fn rss() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0
}

/// Whether this process runs with glibc's malloc arenas capped (`MALLOC_ARENA_MAX`); if not,
/// runs `test` of this test binary again in a child process with them capped at two (with
/// `args`, e.g. `--ignored`), asserts that it passed, and returns false: the caller then
/// returns at once.
///
/// Why: glibc gives new threads new malloc arenas, up to eight per core, each touching a few
/// hundred kB to a few MB the first time a thread lands on it. Threads come and go with every
/// state change and shot rebuild, so when each arena first gets used depends on the machine's
/// scheduling: RSS rises in steps that level off (the allocator's cache, not a leak), and a
/// slope measured over a run can catch one. The cap must be set before the process starts
/// (glibc reads it once). A leak still shows with the cap: it is the allocator's noise that
/// goes, not the memory a leak keeps.
pub fn malloc_arenas_capped(test: &str, args: &[&str]) -> bool {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return true;
    }
    let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .args(args)
        .env("MALLOC_ARENA_MAX", "2")
        .status()
        .expect("the test again, with MALLOC_ARENA_MAX=2");
    assert!(status.success(), "{test} with MALLOC_ARENA_MAX=2: {status}");
    false
}
