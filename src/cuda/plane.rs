//! Image planes in device memory: a borrowed view (pointer + pitch, e.g. a mapped
//! `GstCudaMemory` or an FFmpeg CUDA frame) and an owned, pitched plane.

use cudarc::driver::sys;

use super::context::Context;
use super::error::{CudaError, CudaResult};
use super::memory::DeviceBuffer;

/// Row pitch we give planes we allocate: a multiple of 256 bytes keeps every row aligned for
/// vector loads and whole memory transactions.
pub const PITCH_ALIGN: usize = 256;

/// A plane in device memory: `height` rows of `width` samples of `bytes_per_sample` (1 for
/// 8-bit, 2 for 9..16-bit little-endian), each row starting `pitch` bytes after the previous
/// one. A 2-byte sample's value is the stored `u16` shifted right by `shift`: 0 for LSB-aligned
/// storage, `16 - bpc` for MSB-aligned formats (P010: 6). The kernels shift as they load, so
/// such frames are read in place; 8-bit planes have `shift` 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevicePlane {
    pub ptr: sys::CUdeviceptr,
    /// Bytes from one row to the next.
    pub pitch: usize,
    pub width: usize,
    pub height: usize,
    pub bytes_per_sample: usize,
    /// Bits each stored 2-byte sample is shifted right to give its value (0: LSB-aligned).
    pub shift: u32,
}

impl DevicePlane {
    /// Checks the geometry: non-empty, 1 or 2 bytes per sample, a pitch holding a row, and
    /// sample-aligned rows, a shift only on 2-byte samples.
    pub fn validate(&self) -> CudaResult<()> {
        self.validate_components(1)
    }

    /// [`DevicePlane::validate`] for a plane of `components` interleaved samples per pixel
    /// (2: NV12/P010 chroma, `width` CbCr pairs per row).
    pub fn validate_components(&self, components: usize) -> CudaResult<()> {
        let bad = |why: String| Err(CudaError::InvalidArgument(format!("device plane: {why}")));
        if self.ptr == 0 {
            return bad("null pointer".into());
        }
        if self.width == 0 || self.height == 0 {
            return bad(format!("empty {}x{}", self.width, self.height));
        }
        if !matches!(self.bytes_per_sample, 1 | 2) {
            return bad(format!("{} bytes per sample", self.bytes_per_sample));
        }
        let samples = self
            .width
            .checked_mul(components)
            .filter(|&n| u32::try_from(n).is_ok());
        let Some(samples) = samples.filter(|_| u32::try_from(self.height).is_ok()) else {
            return bad(format!("{}x{} too large", self.width, self.height));
        };
        let row = samples * self.bytes_per_sample;
        if self.pitch < row {
            return bad(format!("pitch {} < row of {row} bytes", self.pitch));
        }
        if self.bytes_per_sample == 2
            && !(self.ptr.is_multiple_of(2) && self.pitch.is_multiple_of(2))
        {
            return bad("16-bit samples not 2-byte aligned".into());
        }
        if self.shift != 0 && self.bytes_per_sample != 2 {
            return bad(format!("shift {} of 1-byte samples", self.shift));
        }
        if self.shift >= 16 {
            return bad(format!("shift {} of 16-bit samples", self.shift));
        }
        Ok(())
    }

    /// Bytes of samples in one row (of one component).
    pub fn row_bytes(&self) -> usize {
        self.width * self.bytes_per_sample
    }
}

/// A plane we own in device memory, rows [`PITCH_ALIGN`]-aligned.
pub struct DevicePlaneBuf {
    buffer: DeviceBuffer,
    plane: DevicePlane,
}

impl DevicePlaneBuf {
    pub fn new(
        ctx: &Context,
        width: usize,
        height: usize,
        bytes_per_sample: usize,
    ) -> CudaResult<DevicePlaneBuf> {
        let row = width
            .checked_mul(bytes_per_sample)
            .ok_or_else(|| CudaError::InvalidArgument(format!("plane width {width} too large")))?;
        let pitch = row.div_ceil(PITCH_ALIGN) * PITCH_ALIGN;
        let bytes = pitch.checked_mul(height).ok_or_else(|| {
            CudaError::InvalidArgument(format!("plane {width}x{height} too large"))
        })?;
        let buffer = DeviceBuffer::new(ctx, bytes)?;
        let plane = DevicePlane {
            ptr: buffer.ptr(),
            pitch,
            width,
            height,
            bytes_per_sample,
            shift: 0,
        };
        plane.validate()?;
        Ok(DevicePlaneBuf { buffer, plane })
    }

    /// The plane as a view (valid while `self` lives).
    pub fn plane(&self) -> DevicePlane {
        self.plane
    }

    pub fn buffer(&self) -> &DeviceBuffer {
        &self.buffer
    }
}
