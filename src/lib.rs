//! vmafcuda: Netflix VMAF, bit-exact with libvmaf 3.2.0, on the CPU (and, later, CUDA GPUs).
//!
//! The engine takes reference/distorted frame pairs ([`frame::PictureRef`]), computes libvmaf's
//! integer features ([`features`]), predicts VMAF with an SVM model ([`model`]) and pools per
//! shot and per stream ([`pool`]). [`scorer::Scorer`] drives it and rebuilds the per-shot state
//! at every shot boundary, so each shot scores exactly as a separate libvmaf run would.

pub mod cuda;
pub mod error;
pub mod extract;
pub mod features;
pub mod frame;
pub mod model;
pub mod pool;
pub mod report;
pub mod scorer;
pub mod session;
pub mod synth;
pub mod y4m;

pub use error::{Error, Result};
pub use scorer::{Geometry, Scorer, ScorerConfig};

/// Version string written into outputs.
pub const VERSION_STRING: &str = concat!(
    "vmafcuda ",
    env!("CARGO_PKG_VERSION"),
    " (libvmaf 3.2.0 compatible)"
);
