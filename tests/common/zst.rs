//! The corpus clips are zstd files: decompressed in pure Rust (`ruzstd`), so building the tests
//! compiles no C library (the C zstd took 40-80 s of CI's compile time per profile). Shared by
//! the engine's tests and, through `#[path]` modules, the other crates' and the library's own.
#![allow(dead_code)]

use std::io::Read;

/// A reader of the decompressed bytes of a zstd stream's first frame (what the `zstd` tool
/// writes for one file).
pub fn reader<R: Read>(compressed: R) -> std::io::Result<impl Read> {
    ruzstd::decoding::StreamingDecoder::new(compressed)
        .map_err(|e| std::io::Error::other(format!("zstd: {e}")))
}

/// Every frame of a zstd stream, decompressed.
pub fn decode_all(mut compressed: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    while !compressed.is_empty() {
        reader(&mut compressed)?.read_to_end(&mut out)?;
    }
    Ok(out)
}
