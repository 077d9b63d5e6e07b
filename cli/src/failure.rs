//! How the CLI fails: a message for stderr and an exit code.

use vmafcuda::Error;

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
