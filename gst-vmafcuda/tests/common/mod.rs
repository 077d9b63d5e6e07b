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
        std::fs::write(&out, zst::decode_all(&data).expect("zstd")).expect("write y4m");
    }
    out
}

pub fn json(rel: &str) -> serde_json::Value {
    let path = corpus().join("vmaf").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("json")
}

#[path = "../../../tests/common/zst.rs"]
mod zst;

// The process memory measures, shared with the engine's rebuild test.
#[path = "../../../tests/common/memory.rs"]
mod memory;
#[allow(unused_imports)] // not every test binary measures memory
pub use memory::{heap_in_use, rss, rss_anon};

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
    rerun_with_env(test, args, &[("MALLOC_ARENA_MAX", "2")])
}

/// Like [`malloc_arenas_capped`], and with the allocators' other caches off too, so that
/// [`heap_in_use`] counts live allocations to the byte: glibc's per-thread caches
/// (`glibc.malloc.tcache_count=0`: a chunk freed into a thread's cache still counts as in
/// use) and GLib's slice magazines (`G_SLICE=always-malloc`: GLib 2.74 keeps freed slices
/// for 15 s and returns them in a batch, a drop of about 0.7 MB that hides any growth).
/// Measured with the caches on (2,000-3,000 element state cycles, CPU path): the bytes in
/// use rose 20-40 B a cycle and fell by 0.7 MB at once, and RSS took steps of 24-64 KiB
/// (one CI run failed on one); with them off the bytes in use were flat but for the test's
/// own sample vectors, and RSS took no step in five runs. heaptrack over 400 and 1,400
/// cycles: the same number of allocations still live at exit (16 apart) and the same peak
/// but for 3 KB of the test's vectors, so no leak hid behind the noise either way.
pub fn allocator_caches_off(test: &str, args: &[&str]) -> bool {
    rerun_with_env(
        test,
        args,
        &[
            ("MALLOC_ARENA_MAX", "2"),
            ("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0"),
            ("G_SLICE", "always-malloc"),
        ],
    )
}

/// Whether this process runs with `env`'s first variable set; if not, runs `test` of this
/// test binary again in a child process with all of `env` set (the allocators read them
/// once, at start-up), asserts that it passed, and returns false.
fn rerun_with_env(test: &str, args: &[&str], env: &[(&str, &str)]) -> bool {
    if std::env::var_os(env[0].0).is_some() {
        return true;
    }
    let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .args(args)
        .envs(env.iter().copied())
        .status()
        .expect("the test again, in a child process");
    assert!(status.success(), "{test} with {env:?}: {status}");
    false
}
