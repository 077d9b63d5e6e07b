//! Kernel images compiled ahead of time by `scripts/build-kernels.sh` (cubins for sm_75..sm_90
//! plus PTX for newer GPUs) and embedded in the binary, so users need only the NVIDIA driver.
//! `tests/cuda_kernels_fresh.rs` fails when an image is older than its `kernels/*.cu` source or
//! the `kernels/*.cuh` headers those include.

use super::context::Context;
use super::error::CudaResult;
use super::module::Module;

/// Fatbins must be 8-byte aligned for `cuModuleLoadData`; `include_bytes!` promises only 1.
#[repr(C, align(16))]
struct Aligned<T: ?Sized>(T);

macro_rules! embed {
    ($file:literal) => {{
        static IMAGE: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/kernels/",
            $file
        )));
        &IMAGE.0
    }};
}

/// One embedded kernel image.
#[derive(Clone, Copy, Debug)]
pub struct KernelImage {
    /// The source's stem: `kernels/<name>.cu` compiled to `kernels/<name>.fatbin`.
    pub name: &'static str,
    pub fatbin: &'static [u8],
}

impl KernelImage {
    /// Loads the image into `ctx`.
    pub fn load(&self, ctx: &Context) -> CudaResult<Module> {
        Module::load(ctx, self.name, self.fatbin)
    }
}

/// `kernels/psnr.cu`: `psnr_sse_u8`, `psnr_sse_u16`, `psnr_sse_u8_cbcr`, `psnr_sse_u16_cbcr`,
/// `psnr_sum_partials`.
pub const PSNR: KernelImage = KernelImage {
    name: "psnr",
    fatbin: embed!("psnr.fatbin"),
};

/// `kernels/adm.cu`: `adm_dwt0_u8`, `adm_dwt0_u16`, `adm_mask0_dwt1`, `adm_mask123_dwt23`,
/// `adm_mask123`, `adm_fill_oob`.
pub const ADM: KernelImage = KernelImage {
    name: "adm",
    fatbin: embed!("adm.fatbin"),
};

/// `kernels/motion.cu`: `motion_tiles_u8`, `motion_tiles_u16`, `motion_strips_u8`,
/// `motion_strips_u16`.
pub const MOTION: KernelImage = KernelImage {
    name: "motion",
    fatbin: embed!("motion.fatbin"),
};

/// `kernels/vif.cu`: `vif_scale0_u8`, `vif_scale0_u16`, `vif_scale1..3`, their `*_fine` twins,
/// `vif_scale0_u8_mma`, `vif_scale0_u16_mma`.
pub const VIF: KernelImage = KernelImage {
    name: "vif",
    fatbin: embed!("vif.fatbin"),
};

/// Every embedded image.
pub const ALL: &[KernelImage] = &[ADM, MOTION, PSNR, VIF];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_embedded_aligned() {
        for image in ALL {
            assert!(image.fatbin.len() > 1000, "{}", image.name);
            assert_eq!(image.fatbin.as_ptr() as usize % 8, 0, "{}", image.name);
            // Fatbin magic 0xBA55ED50, little-endian.
            assert_eq!(
                &image.fatbin[..4],
                &[0x50, 0xed, 0x55, 0xba],
                "{}",
                image.name
            );
        }
    }
}
