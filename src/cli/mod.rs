//! Parts of the `vmafcuda` binary that are not the engine.

use vmafcuda::Error;

pub mod args;
#[cfg(feature = "ffmpeg")]
pub mod ffmpeg_input;
pub mod input;
pub mod ladder;
pub mod progress;
pub mod service;

/// A failure the CLI reports: a message and an exit code (1 = bad input, 3 = output error).
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure {
            code: 1,
            message: e.to_string(),
        }
    }
}

pub fn fail(code: u8, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}
