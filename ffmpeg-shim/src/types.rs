//! The C types and constants of include/vmafcuda.h, mirrored field for field (`#[repr(C)]`).
//! tests/header.rs checks sizes, offsets and constant values against the header.

use std::ffi::{c_char, c_void};

pub const VMAFCUDA_API_VERSION: i32 = 1;

pub const VMAFCUDA_OK: i32 = 0;
pub const VMAFCUDA_ERR_INVALID_ARGUMENT: i32 = -1;
pub const VMAFCUDA_ERR_MODEL: i32 = -2;
pub const VMAFCUDA_ERR_GEOMETRY: i32 = -3;
pub const VMAFCUDA_ERR_UNSUPPORTED: i32 = -4;
pub const VMAFCUDA_ERR_CUDA: i32 = -5;
pub const VMAFCUDA_ERR_IO: i32 = -6;
pub const VMAFCUDA_ERR_STATE: i32 = -7;
pub const VMAFCUDA_ERR_NOT_FOUND: i32 = -8;
pub const VMAFCUDA_ERR_INTERNAL: i32 = -99;

pub const VMAFCUDA_BACKEND_AUTO: i32 = 0;
pub const VMAFCUDA_BACKEND_CPU: i32 = 1;
pub const VMAFCUDA_BACKEND_CUDA: i32 = 2;

pub const VMAFCUDA_REBUILD_FULL: i32 = 0;
pub const VMAFCUDA_REBUILD_RESET: i32 = 1;
pub const VMAFCUDA_REBUILD_COLD: i32 = 2;

pub const VMAFCUDA_CHROMA_NONE: i32 = 0;
pub const VMAFCUDA_CHROMA_420: i32 = 420;
pub const VMAFCUDA_CHROMA_422: i32 = 422;
pub const VMAFCUDA_CHROMA_444: i32 = 444;

pub const VMAFCUDA_LOG_JSON: i32 = 0;
pub const VMAFCUDA_LOG_CSV: i32 = 1;
pub const VMAFCUDA_LOG_XML: i32 = 2;

/// Every constant of the header, by name (for the header test).
#[cfg(test)]
pub const CONSTANTS: &[(&str, i32)] = &[
    ("VMAFCUDA_API_VERSION", VMAFCUDA_API_VERSION),
    ("VMAFCUDA_OK", VMAFCUDA_OK),
    (
        "VMAFCUDA_ERR_INVALID_ARGUMENT",
        VMAFCUDA_ERR_INVALID_ARGUMENT,
    ),
    ("VMAFCUDA_ERR_MODEL", VMAFCUDA_ERR_MODEL),
    ("VMAFCUDA_ERR_GEOMETRY", VMAFCUDA_ERR_GEOMETRY),
    ("VMAFCUDA_ERR_UNSUPPORTED", VMAFCUDA_ERR_UNSUPPORTED),
    ("VMAFCUDA_ERR_CUDA", VMAFCUDA_ERR_CUDA),
    ("VMAFCUDA_ERR_IO", VMAFCUDA_ERR_IO),
    ("VMAFCUDA_ERR_STATE", VMAFCUDA_ERR_STATE),
    ("VMAFCUDA_ERR_NOT_FOUND", VMAFCUDA_ERR_NOT_FOUND),
    ("VMAFCUDA_ERR_INTERNAL", VMAFCUDA_ERR_INTERNAL),
    ("VMAFCUDA_BACKEND_AUTO", VMAFCUDA_BACKEND_AUTO),
    ("VMAFCUDA_BACKEND_CPU", VMAFCUDA_BACKEND_CPU),
    ("VMAFCUDA_BACKEND_CUDA", VMAFCUDA_BACKEND_CUDA),
    ("VMAFCUDA_REBUILD_FULL", VMAFCUDA_REBUILD_FULL),
    ("VMAFCUDA_REBUILD_RESET", VMAFCUDA_REBUILD_RESET),
    ("VMAFCUDA_REBUILD_COLD", VMAFCUDA_REBUILD_COLD),
    ("VMAFCUDA_CHROMA_NONE", VMAFCUDA_CHROMA_NONE),
    ("VMAFCUDA_CHROMA_420", VMAFCUDA_CHROMA_420),
    ("VMAFCUDA_CHROMA_422", VMAFCUDA_CHROMA_422),
    ("VMAFCUDA_CHROMA_444", VMAFCUDA_CHROMA_444),
    ("VMAFCUDA_LOG_JSON", VMAFCUDA_LOG_JSON),
    ("VMAFCUDA_LOG_CSV", VMAFCUDA_LOG_CSV),
    ("VMAFCUDA_LOG_XML", VMAFCUDA_LOG_XML),
];

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VmafcudaConfig {
    pub struct_size: u32,
    pub psnr: i32,
    pub model: *const c_char,
    pub backend: i32,
    pub cuda_device: i32,
    pub shot_starts: *const u64,
    pub n_shot_starts: usize,
    pub n_subsample: u32,
    pub disable_clip: i32,
    pub enable_transform: i32,
    pub detect_shots: i32,
    pub rebuild: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VmafcudaPlane {
    pub data: *const c_void,
    pub stride: usize,
    pub width: u32,
    pub height: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VmafcudaPicture {
    pub luma: VmafcudaPlane,
    pub chroma: [VmafcudaPlane; 2],
    pub bpc: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VmafcudaDevicePlane {
    pub ptr: u64,
    pub pitch: usize,
    pub width: u32,
    pub height: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VmafcudaDevicePicture {
    pub luma: VmafcudaDevicePlane,
    pub chroma: [VmafcudaDevicePlane; 2],
    pub bpc: u32,
    pub interleaved_chroma: i32,
    pub msb_aligned: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VmafcudaPooled {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub harmonic_mean: f64,
    pub p5: f64,
    pub p10: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct VmafcudaFrameScore {
    pub index: u64,
    pub shot: u32,
    pub n_metrics: u32,
    pub vmaf: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct VmafcudaShotScore {
    pub index: u32,
    pub reserved: u32,
    pub first_frame: u64,
    pub last_frame: u64,
    pub n_frames: u64,
    pub vmaf: VmafcudaPooled,
}

impl From<&engine::pool::PooledStats> for VmafcudaPooled {
    fn from(s: &engine::pool::PooledStats) -> Self {
        VmafcudaPooled {
            min: s.min,
            max: s.max,
            mean: s.mean,
            harmonic_mean: s.harmonic_mean,
            p5: s.p5,
            p10: s.p10,
        }
    }
}

/// Size and field offsets of each struct, for the header test (`"Struct.field"`, offset).
#[cfg(test)]
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    macro_rules! fields {
        ($v:ident, $t:ident { $($f:ident),* }) => {
            $v.push((concat!(stringify!($t), ".sizeof"), size_of::<$t>()));
            $( $v.push((concat!(stringify!($t), ".", stringify!($f)), offset_of!($t, $f))); )*
        };
    }
    let mut v = Vec::new();
    fields!(
        v,
        VmafcudaConfig {
            struct_size,
            psnr,
            model,
            backend,
            cuda_device,
            shot_starts,
            n_shot_starts,
            n_subsample,
            disable_clip,
            enable_transform,
            detect_shots,
            rebuild
        }
    );
    fields!(
        v,
        VmafcudaPlane {
            data,
            stride,
            width,
            height
        }
    );
    fields!(v, VmafcudaPicture { luma, chroma, bpc });
    fields!(
        v,
        VmafcudaDevicePlane {
            ptr,
            pitch,
            width,
            height
        }
    );
    fields!(
        v,
        VmafcudaDevicePicture {
            luma,
            chroma,
            bpc,
            interleaved_chroma,
            msb_aligned
        }
    );
    fields!(
        v,
        VmafcudaPooled {
            min,
            max,
            mean,
            harmonic_mean,
            p5,
            p10
        }
    );
    fields!(
        v,
        VmafcudaFrameScore {
            index,
            shot,
            n_metrics,
            vmaf
        }
    );
    fields!(
        v,
        VmafcudaShotScore {
            index,
            reserved,
            first_frame,
            last_frame,
            n_frames,
            vmaf
        }
    );
    v
}
