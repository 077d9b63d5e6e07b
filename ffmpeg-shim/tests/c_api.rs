//! The C API from C: builds tests/c/test_vmafcuda.c against include/vmafcuda.h, links it with
//! libvmafcuda.so and with libvmafcuda.a, runs it on a corpus pair (under valgrind when it is
//! installed; always in CI) and compares its JSON log with libvmaf's.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "../../tests/common/zst.rs"]
mod zst;

const PAIR: &str = "s_rocket_176x144__x264_crf32";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus() -> PathBuf {
    let dir = std::env::var("VMAFCUDA_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| manifest_dir().join("../../shared/corpus"));
    assert!(
        dir.join("manifest.json").exists(),
        "libvmaf reference corpus not found at {} (set VMAFCUDA_CORPUS)",
        dir.display()
    );
    dir
}

fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-api");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Decompresses a corpus `.y4m.zst` into the scratch dir.
fn y4m(rel: &str) -> PathBuf {
    let name = Path::new(rel).file_name().expect("name").to_string_lossy();
    let out = scratch().join(name.trim_end_matches(".zst"));
    if !out.exists() {
        // Tests run on several threads of one process: each writes its own temporary file
        // (process id and a counter), and the first rename wins (they hold the same bytes).
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let data = std::fs::read(corpus().join(rel)).expect("read clip");
        let tmp = out.with_extension(format!("{}.{n}.tmp", std::process::id()));
        std::fs::write(&tmp, zst::decode_all(&data).expect("zstd")).expect("write clip");
        std::fs::rename(&tmp, &out).expect("rename clip");
    }
    out
}

/// Builds libvmafcuda.{so,a} (cargo builds a cdylib/staticlib-only crate for its own
/// integration tests only as a test harness, not as the libraries) and returns their dir.
fn lib_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // The release profile: the outer `cargo test` holds the lock of the debug dir, and
            // the release engine is what CI's main job (and meson) build anyway.
            let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("target dir")
                .to_path_buf();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args([
                    "build",
                    "--locked",
                    "--release",
                    "-p",
                    "vmafcuda-ffi",
                    "--manifest-path",
                ])
                .arg(manifest_dir().join("Cargo.toml"))
                .env("CARGO_TARGET_DIR", &target)
                .status()
                .expect("run cargo build");
            assert!(
                status.success(),
                "cargo build --release -p vmafcuda-ffi failed"
            );
            let dir = target.join("release");
            assert!(dir.join("libvmafcuda.so").exists() && dir.join("libvmafcuda.a").exists());
            dir
        })
        .clone()
}

fn libvmaf_json() -> Value {
    let path = corpus().join(format!("vmaf/{PAIR}.vmaf_v0.6.1.full.json"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("read libvmaf JSON")).expect("JSON")
}

/// The C program's expectations: frame count, per-frame vmaf, pooled min max mean hmean.
fn expected_file(reference: &Value) -> PathBuf {
    let frames = reference["frames"].as_array().expect("frames");
    let mut text = format!("{}\n", frames.len());
    for f in frames {
        text.push_str(&format!(
            "{:?}\n",
            f["metrics"]["vmaf"].as_f64().expect("vmaf")
        ));
    }
    let p = &reference["pooled_metrics"]["vmaf"];
    for k in ["min", "max", "mean", "harmonic_mean"] {
        text.push_str(&format!("{:?}\n", p[k].as_f64().expect("pooled")));
    }
    let path = scratch().join("expected.txt");
    std::fs::write(&path, text).expect("write expected");
    path
}

fn compile(out: &Path, link: &[&str]) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(cc)
        .args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(manifest_dir().join("include"))
        .arg(manifest_dir().join("tests/c/test_vmafcuda.c"))
        .arg("-o")
        .arg(out)
        .args(link)
        .status()
        .expect("run cc");
    assert!(status.success(), "compiling test_vmafcuda.c failed");
}

fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every metric of every frame and every pooled value within 1e-9 of libvmaf.
fn assert_matches_libvmaf(ours: &Value, libvmaf: &Value) {
    let (of, ef) = (
        ours["frames"].as_array().expect("frames"),
        libvmaf["frames"].as_array().expect("frames"),
    );
    assert_eq!(of.len(), ef.len(), "frame count");
    for (o, e) in of.iter().zip(ef) {
        for (k, ev) in e["metrics"].as_object().expect("metrics") {
            let ov = o["metrics"][k]
                .as_f64()
                .unwrap_or_else(|| panic!("missing {k}"));
            let ev = ev.as_f64().expect("number");
            assert!(
                (ov - ev).abs() <= 1e-9,
                "frame {} {k}: {ov} vs {ev}",
                e["frameNum"]
            );
        }
    }
    for (k, ep) in libvmaf["pooled_metrics"].as_object().expect("pooled") {
        for m in ["min", "max", "mean", "harmonic_mean"] {
            let ov = ours["pooled_metrics"][k][m].as_f64().expect("pooled value");
            let ev = ep[m].as_f64().expect("number");
            assert!((ov - ev).abs() <= 1e-9, "pooled {k} {m}: {ov} vs {ev}");
        }
    }
}

fn run_c_test(exe: &Path, under_valgrind: bool, tag: &str) {
    let reference = libvmaf_json();
    let expected = expected_file(&reference);
    let r = y4m(&format!(
        "video/{}.y4m.zst",
        PAIR.split("__").next().expect("ref")
    ));
    let d = y4m(&format!("video/{PAIR}.y4m.zst"));
    let json = scratch().join(format!("{tag}.json"));
    let _ = std::fs::remove_file(&json);
    let mut cmd = if under_valgrind {
        let mut c = Command::new("valgrind");
        c.args([
            "--quiet",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--error-exitcode=1",
        ]);
        c.arg(exe);
        c
    } else {
        Command::new(exe)
    };
    let out = cmd
        .arg(&r)
        .arg(&d)
        .arg(&expected)
        .arg(&json)
        .output()
        .expect("run test_vmafcuda");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "test_vmafcuda ({tag}) failed:\n{log}");
    assert!(log.contains("all checks passed"), "{log}");
    let ours: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("C log")).expect("JSON");
    assert_matches_libvmaf(&ours, &reference);
}

#[test]
fn c_program_linked_dynamically_matches_libvmaf_under_valgrind() {
    // Lay the library out as installed: the real file under its SONAME plus the dev link.
    let lib = scratch().join("lib");
    std::fs::create_dir_all(&lib).expect("lib dir");
    let so0 = lib.join("libvmafcuda.so.0");
    let _ = std::fs::remove_file(&so0);
    std::fs::copy(lib_dir().join("libvmafcuda.so"), &so0).expect("copy libvmafcuda.so");
    let dev = lib.join("libvmafcuda.so");
    let _ = std::fs::remove_file(&dev);
    std::os::unix::fs::symlink("libvmafcuda.so.0", &dev).expect("dev link");
    let exe = scratch().join("test_vmafcuda_dynamic");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let libdir = format!("-L{}", lib.display());
    compile(&exe, &[&libdir, "-lvmafcuda", &rpath, "-lm"]);
    // The program records the SONAME, not the file it was linked with.
    let dynamic = Command::new("readelf").arg("-d").arg(&exe).output();
    if let Ok(o) = dynamic {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains("[libvmafcuda.so.0]"),
            "no SONAME dependency:\n{text}"
        );
    }
    let valgrind = valgrind_available();
    if !valgrind {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is required in CI (apt-get install valgrind)"
        );
        eprintln!("valgrind not installed: running test_vmafcuda without it");
    }
    run_c_test(&exe, valgrind, "dynamic");
}

#[test]
fn c_program_linked_statically_matches_libvmaf() {
    let lib = lib_dir();
    let exe = scratch().join("test_vmafcuda_static");
    let archive = lib.join("libvmafcuda.a").to_string_lossy().into_owned();
    compile(
        &exe,
        &[
            &archive,
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
        ],
    );
    run_c_test(&exe, false, "static");
}
