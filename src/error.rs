//! The engine's error type: every failure a caller can hit, with the context to act on it.

use std::path::PathBuf;

use crate::model::ModelError;
use crate::y4m::Y4mError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Y4m(#[from] Y4mError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("frame size {width}x{height} is too small: VMAF needs at least {min}x{min} (libvmaf itself crashes at 16 pixels and below)")]
    FrameTooSmall {
        width: usize,
        height: usize,
        min: usize,
    },
    #[error("bit depth {0} is not supported (8 to 16 bits)")]
    UnsupportedBitDepth(u32),
    #[error(
        "reference and distorted differ in {what}: reference {reference}, distorted {distorted}"
    )]
    Mismatch {
        what: &'static str,
        reference: String,
        distorted: String,
    },
    #[error("frame {frame}: {what} does not match the session ({expected} expected, got {got})")]
    FrameGeometry {
        frame: usize,
        what: &'static str,
        expected: String,
        got: String,
    },
    #[error("invalid plane: {0}")]
    InvalidPlane(String),
    #[error("invalid shot list: {0}")]
    ShotList(String),
    #[error("backend: {0}")]
    Backend(String),
    /// The GPU failed, the scorer now runs on the CPU, and frames it has no host copy of
    /// (device frames) were lost: push frames `from..to` again as host frames, in order, then
    /// go on with frame `to`. (`Scorer::frames_pushed` is `from` now.)
    #[error("CUDA failed ({reason}); scoring continues on the CPU: frames {from}..{to} must be pushed again as host frames")]
    ReplayOnHost {
        from: usize,
        to: usize,
        reason: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
