//! Errors at the C boundary: one enum, each variant mapped to a `VMAFCUDA_ERR_*` code, and the
//! thread-local message `vmafcuda_last_error()` returns.

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use crate::types::*;

#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    Model(String),
    #[error("{0}")]
    Geometry(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Cuda(String),
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    State(String),
    #[error("{0}")]
    NotFound(String),
    #[error("internal error (a bug in vmafcuda): {0}")]
    Internal(String),
}

pub type ShimResult<T> = Result<T, ShimError>;

impl ShimError {
    pub fn code(&self) -> i32 {
        match self {
            ShimError::InvalidArgument(_) => VMAFCUDA_ERR_INVALID_ARGUMENT,
            ShimError::Model(_) => VMAFCUDA_ERR_MODEL,
            ShimError::Geometry(_) => VMAFCUDA_ERR_GEOMETRY,
            ShimError::Unsupported(_) => VMAFCUDA_ERR_UNSUPPORTED,
            ShimError::Cuda(_) => VMAFCUDA_ERR_CUDA,
            ShimError::Io(_) => VMAFCUDA_ERR_IO,
            ShimError::State(_) => VMAFCUDA_ERR_STATE,
            ShimError::NotFound(_) => VMAFCUDA_ERR_NOT_FOUND,
            ShimError::Internal(_) => VMAFCUDA_ERR_INTERNAL,
        }
    }
}

impl From<engine::Error> for ShimError {
    fn from(e: engine::Error) -> Self {
        use engine::Error as E;
        let msg = e.to_string();
        match e {
            E::Model(_) => ShimError::Model(msg),
            E::FrameTooSmall { .. } | E::Mismatch { .. } | E::FrameGeometry { .. } => {
                ShimError::Geometry(msg)
            }
            E::UnsupportedBitDepth(_) | E::InvalidPlane(_) | E::ShotList(_) => {
                ShimError::InvalidArgument(msg)
            }
            E::Backend(_) => ShimError::Cuda(msg),
            E::Io { .. } => ShimError::Io(msg),
            _ => ShimError::Internal(msg),
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `msg` as this thread's last error.
pub fn set_last_error(msg: &str) {
    // Interior NULs cannot be represented in a C string: replace them.
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Pointer to this thread's last error message; valid until the next error on this thread.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
