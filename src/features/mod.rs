//! CPU reference implementations of libvmaf's integer features, bit-exact with libvmaf 3.2.0.

pub mod adm;
pub mod motion;
pub mod psnr;
pub mod simd;
pub mod vif;
#[cfg(target_arch = "aarch64")]
mod vif_aarch64;
#[cfg(target_arch = "x86_64")]
mod vif_x86;
