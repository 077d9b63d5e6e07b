//! Shared test helpers: locating the libvmaf reference corpus and decompressing its clips.
#![allow(dead_code)]

pub mod gpu;
pub mod report;
pub mod spatial;
pub mod synth;
pub mod zst;

use std::path::{Path, PathBuf};

/// The workspace's root folder (these helpers serve the engine's tests and, through a
/// `#[path]` module, the CLI crate's): the nearest folder above the test's crate that holds
/// `Cargo.lock`.
pub fn workspace_dir() -> PathBuf {
    let krate = Path::new(env!("CARGO_MANIFEST_DIR"));
    krate
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists())
        .unwrap_or(krate)
        .to_path_buf()
}

/// `../shared/corpus` beside the repository, or `$VMAFCUDA_CORPUS`.
pub fn corpus_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("VMAFCUDA_CORPUS") {
        return PathBuf::from(dir);
    }
    workspace_dir().join("../shared/corpus")
}

/// Whether the corpus is present (tests that need it fail loudly when it is not: CI has it).
pub fn require_corpus() -> PathBuf {
    let dir = corpus_dir();
    assert!(
        dir.join("manifest.json").exists(),
        "libvmaf reference corpus not found at {} (set VMAFCUDA_CORPUS)",
        dir.display()
    );
    dir
}

/// Decompresses `<corpus>/<rel>` (a `.y4m.zst`) once into `target/corpus-cache/` and returns the
/// path of the plain y4m. Safe to call from parallel tests: writes go through a temp file + rename.
pub fn y4m(rel: &str) -> PathBuf {
    let src = require_corpus().join(rel);
    let cache = workspace_dir().join("target/corpus-cache");
    std::fs::create_dir_all(&cache).expect("create corpus cache");
    let name = Path::new(rel)
        .file_name()
        .and_then(|n| n.to_str())
        .expect("file name")
        .trim_end_matches(".zst")
        .to_owned();
    let out = cache.join(&name);
    if out.exists() {
        return out;
    }
    let data = std::fs::read(&src).unwrap_or_else(|e| panic!("read {}: {e}", src.display()));
    let plain = zst::decode_all(&data).expect("zstd decode");
    // Unique per process and thread: parallel tests may decompress the same clip at once.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = cache.join(format!("{name}.{}.{n}.tmp", std::process::id()));
    std::fs::write(&tmp, plain).expect("write decompressed clip");
    std::fs::rename(&tmp, &out).expect("rename decompressed clip");
    out
}

/// Reference clip of a pair id (`<ref>__<distortion>`).
pub fn pair_reference(pair: &str) -> PathBuf {
    let reference = pair.split("__").next().expect("pair id");
    y4m(&format!("video/{reference}.y4m.zst"))
}

/// Distorted clip of a pair id; the `identical` pair uses the reference itself.
pub fn pair_distorted(pair: &str) -> PathBuf {
    if pair.ends_with("__identical") {
        return pair_reference(pair);
    }
    y4m(&format!("video/{pair}.y4m.zst"))
}

/// Parsed libvmaf JSON output.
pub fn load_json(rel: &str) -> serde_json::Value {
    let path = require_corpus().join(rel);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// A JSON file written by a run (an output of ours), parsed.
pub fn load_output(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A finished process's stderr, as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A clock for timing tests on a shared machine: this thread's time on a CPU
/// (`/proc/thread-self/schedstat`, nanoseconds) where Linux provides it, so that other load
/// does not count; wall time otherwise. Returns seconds since an arbitrary origin.
#[allow(dead_code)]
pub fn thread_seconds() -> f64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let on_cpu = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
    match on_cpu {
        Some(ns) => ns as f64 * 1e-9,
        None => ORIGIN
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_secs_f64(),
    }
}
