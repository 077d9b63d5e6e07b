//! The embedded kernel images must be built from the current `kernels/*.cu` (and the
//! `kernels/*.cuh` headers they include) with the flags of `scripts/build-kernels.sh`:
//! `kernels/SOURCES.sha256` records them, and this test (run by CI, no GPU needed) fails when a
//! source, a header, an image or the flags changed without a rebuild.
//! Fix: run `scripts/build-kernels.sh` and commit the images.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The crate root: `cargo test` sets CARGO_MANIFEST_DIR at run time too, which lets a prebuilt
/// test binary run against another checkout (scripts/gpu-check.sh).
fn root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn sha256_hex(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The manifest: `flags ...`, then `source <sha256>  <name>.cu` / `image <sha256>  <name>.fatbin`,
/// then `header <sha256>  <name>.cuh`.
fn manifest() -> (String, BTreeMap<String, String>) {
    let path = root().join("kernels/SOURCES.sha256");
    let text = std::fs::read_to_string(&path)
        .expect("kernels/SOURCES.sha256 (run scripts/build-kernels.sh)");
    let mut flags = String::new();
    let mut hashes = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        if let Some(f) = line.strip_prefix("flags ") {
            flags = f.to_owned();
        } else {
            let mut parts = line.split_whitespace();
            let (Some(kind), Some(hash), Some(file), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                panic!("bad manifest line {line:?}");
            };
            assert!(
                matches!(kind, "source" | "image" | "header"),
                "bad manifest line {line:?}"
            );
            hashes.insert(file.to_owned(), hash.to_owned());
        }
    }
    (flags, hashes)
}

/// The `FLAGS=(...)` line of the build script, as the script writes it into the manifest.
fn script_flags() -> String {
    let script =
        std::fs::read_to_string(root().join("scripts/build-kernels.sh")).expect("build script");
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("FLAGS=("))
        .expect("FLAGS=( line in scripts/build-kernels.sh");
    line.strip_suffix(')')
        .expect("FLAGS on one line")
        .to_owned()
}

#[test]
fn kernel_images_match_their_sources_and_flags() {
    let (flags, hashes) = manifest();
    assert_eq!(
        flags,
        script_flags(),
        "build flags changed since the images were built: run scripts/build-kernels.sh"
    );
    let with_extension = |ext: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(root().join("kernels"))
            .expect("kernels/")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .map(|p| {
                p.file_stem()
                    .and_then(|s| s.to_str())
                    .expect("utf-8 name")
                    .to_owned()
            })
            .collect();
        names.sort();
        names
    };
    let sources = with_extension("cu");
    assert!(!sources.is_empty(), "no kernels/*.cu");
    let files = sources
        .iter()
        .flat_map(|stem| [format!("{stem}.cu"), format!("{stem}.fatbin")])
        .chain(
            with_extension("cuh")
                .into_iter()
                .map(|stem| format!("{stem}.cuh")),
        );
    let mut expected_files = 0;
    for file in files {
        let recorded = hashes.get(&file).unwrap_or_else(|| {
            panic!("kernels/{file} not in SOURCES.sha256: run scripts/build-kernels.sh")
        });
        assert_eq!(
            &sha256_hex(&root().join("kernels").join(&file)),
            recorded,
            "kernels/{file} changed since the last scripts/build-kernels.sh"
        );
        expected_files += 1;
    }
    assert_eq!(
        hashes.len(),
        expected_files,
        "SOURCES.sha256 lists files that no longer exist: run scripts/build-kernels.sh"
    );
}

#[test]
fn every_image_is_embedded() {
    let embedded: Vec<&str> = vmafcuda::cuda::kernels::ALL
        .iter()
        .map(|k| k.name)
        .collect();
    let (_, hashes) = manifest();
    for file in hashes.keys().filter(|f| f.ends_with(".fatbin")) {
        let stem = file.trim_end_matches(".fatbin");
        assert!(
            embedded.contains(&stem),
            "kernels/{file} is not in cuda::kernels::ALL"
        );
    }
    for image in vmafcuda::cuda::kernels::ALL {
        let on_disk =
            std::fs::read(root().join(format!("kernels/{}.fatbin", image.name))).expect("fatbin");
        assert_eq!(
            image.fatbin,
            &on_disk[..],
            "{}: embedded image differs from the file",
            image.name
        );
    }
}
