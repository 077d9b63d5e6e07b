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
/// 8-bit, 2 for 9..16-bit LSB-aligned), each row starting `pitch` bytes after the previous one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevicePlane {
    pub ptr: sys::CUdeviceptr,
    /// Bytes from one row to the next.
    pub pitch: usize,
    pub width: usize,
    pub height: usize,
    pub bytes_per_sample: usize,
}

impl DevicePlane {
    /// Checks the geometry: non-empty, 1 or 2 bytes per sample, a pitch holding a row, and
    /// sample-aligned rows.
    pub fn validate(&self) -> CudaResult<()> {
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
        if self.pitch < self.row_bytes() {
            return bad(format!(
                "pitch {} < row of {} bytes",
                self.pitch,
                self.row_bytes()
            ));
        }
        if self.bytes_per_sample == 2
            && !(self.ptr.is_multiple_of(2) && self.pitch.is_multiple_of(2))
        {
            return bad("16-bit samples not 2-byte aligned".into());
        }
        if u32::try_from(self.width).is_err() || u32::try_from(self.height).is_err() {
            return bad(format!("{}x{} too large", self.width, self.height));
        }
        Ok(())
    }

    /// Bytes of samples in one row.
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
