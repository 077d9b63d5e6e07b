//! The `vmafcuda` command line over the engine crate (`vmafcuda`): command-line arguments,
//! input files (y4m read ahead on threads; anything FFmpeg decodes with the `ffmpeg` feature),
//! ladders of renditions and their scaler, the progress bar, `vmafcuda bench` and the resident
//! service (`vmafcuda serve`). The commands themselves are in `main.rs`; this library holds
//! their parts so the CLI's tests can reach them.

pub mod args;
pub mod bench;
pub mod failure;
#[cfg(feature = "ffmpeg")]
pub mod ffmpeg_input;
pub mod input;
pub mod ladder;
pub mod prefetch;
pub mod progress;
pub mod scale;
pub mod service;
pub mod stream_info;
