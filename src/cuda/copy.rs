//! Copies between host and device: asynchronous on one of our streams (from pinned memory),
//! synchronous convenience forms, and 2D pitched copies for image planes.
//!
//! The asynchronous forms are `unsafe`: the driver reads or writes the memory after the call
//! returns, so the caller must keep both sides alive and untouched until the stream has been
//! synchronised (or an event recorded after the copy has completed). Owners such as
//! [`super::psnr::GpuPsnr`] keep buffers and stream together and synchronise before dropping.

use std::ffi::c_void;
use std::ops::Range;

use cudarc::driver::sys;

use super::context::Context;
use super::driver::guarded;
use super::error::{check, CudaError, CudaResult};
use super::fault::{self, FaultKind};
use super::memory::{as_bytes, as_bytes_mut, DeviceBuffer, DeviceRepr, PinnedBuffer};
use super::plane::DevicePlaneBuf;
use super::record::{self, Op};
use super::stream::Stream;

const HOST: sys::CUmemorytype = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
const DEVICE: sys::CUmemorytype = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;

/// One side of a 2D copy: rows `pitch` bytes apart, in host or device memory.
#[derive(Clone, Copy, Debug)]
pub enum Memory2D {
    Host { ptr: *mut u8, pitch: usize },
    Device { ptr: sys::CUdeviceptr, pitch: usize },
}

fn same_context(a: &Context, b: &Context, what: &str) -> CudaResult<()> {
    if a.same_as(b) {
        Ok(())
    } else {
        Err(CudaError::InvalidArgument(format!(
            "{what}: buffer and stream belong to different contexts"
        )))
    }
}

fn in_range(range: &Range<usize>, len: usize, what: &str) -> CudaResult<usize> {
    if range.start <= range.end && range.end <= len {
        Ok(range.end - range.start)
    } else {
        Err(CudaError::InvalidArgument(format!(
            "{what}: range {range:?} outside {len} bytes"
        )))
    }
}

/// Copies `height` rows of `width_bytes` from `src` to `dst` on `stream` (`cuMemcpy2DAsync`).
///
/// # Safety
/// Both sides must be valid for `height` rows of their pitch in `stream`'s context (host memory
/// pinned for a truly asynchronous copy) and stay valid and unaliased by writers until the copy
/// has completed on `stream`.
pub unsafe fn copy_2d_async(
    dst: Memory2D,
    src: Memory2D,
    width_bytes: usize,
    height: usize,
    stream: &Stream,
) -> CudaResult<()> {
    guarded("copy_2d_async", || {
        record::refuse("a 2-D copy")?;
        let call = || format!("cuMemcpy2DAsync({width_bytes}x{height} bytes, {src:?} -> {dst:?})");
        fault::hit(FaultKind::Copy, call)?;
        // Every field spelled out: the memory-type enums have no zero value, so the struct
        // cannot be zero-initialised.
        let (src_type, src_host, src_device, src_pitch) = match src {
            Memory2D::Host { ptr, pitch } => (HOST, ptr as *const c_void, 0, pitch),
            Memory2D::Device { ptr, pitch } => (DEVICE, std::ptr::null(), ptr, pitch),
        };
        let (dst_type, dst_host, dst_device, dst_pitch) = match dst {
            Memory2D::Host { ptr, pitch } => (HOST, ptr as *mut c_void, 0, pitch),
            Memory2D::Device { ptr, pitch } => (DEVICE, std::ptr::null_mut(), ptr, pitch),
        };
        let p = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src_type,
            srcHost: src_host,
            srcDevice: src_device,
            srcArray: std::ptr::null_mut(),
            srcPitch: src_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst_type,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstArray: std::ptr::null_mut(),
            dstPitch: dst_pitch,
            WidthInBytes: width_bytes,
            Height: height,
        };
        let _bound = stream.context().bind()?;
        // SAFETY: the descriptor is fully initialised; the caller guarantees both sides.
        check(unsafe { sys::cuMemcpy2DAsync_v2(&p, stream.raw()) }, call)
    })
}

/// Copies `bytes` from host `src` to device `dst` on `stream`.
///
/// # Safety
/// As [`copy_2d_async`]: both ranges valid until the copy completed; `src` should be pinned.
pub unsafe fn htod_async(
    dst: sys::CUdeviceptr,
    src: *const u8,
    bytes: usize,
    stream: &Stream,
) -> CudaResult<()> {
    guarded("htod_async", || {
        record::refuse("an upload")?;
        let call = || format!("cuMemcpyHtoDAsync({bytes} bytes)");
        fault::hit(FaultKind::Copy, call)?;
        let _bound = stream.context().bind()?;
        // SAFETY: guaranteed by the caller.
        check(
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream.raw()) },
            call,
        )
    })
}

/// Copies `bytes` from device `src` to host `dst` on `stream`.
///
/// # Safety
/// As [`copy_2d_async`]: both ranges valid until the copy completed; `dst` should be pinned.
pub unsafe fn dtoh_async(
    dst: *mut u8,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: &Stream,
) -> CudaResult<()> {
    guarded("dtoh_async", || {
        let call = || format!("cuMemcpyDtoHAsync({bytes} bytes)");
        fault::hit(FaultKind::Copy, call)?;
        if record::push(|| {
            Ok(Op::Dtoh {
                dst: dst as usize,
                src,
                bytes,
                stream: stream.raw() as usize,
            })
        })? {
            return Ok(());
        }
        let _bound = stream.context().bind()?;
        // SAFETY: guaranteed by the caller.
        check(
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.raw()) },
            call,
        )
    })
}

/// Sets `bytes` of device memory at `dst` to `value` on `stream`.
///
/// # Safety
/// `dst..dst + bytes` must be device memory of `stream`'s context, valid until completion.
pub unsafe fn memset_async(
    dst: sys::CUdeviceptr,
    value: u8,
    bytes: usize,
    stream: &Stream,
) -> CudaResult<()> {
    guarded("memset_async", || {
        let call = || format!("cuMemsetD8Async({bytes} bytes)");
        fault::hit(FaultKind::Copy, call)?;
        if record::push(|| {
            Ok(Op::Memset {
                dst,
                value,
                bytes,
                stream: stream.raw() as usize,
            })
        })? {
            return Ok(());
        }
        let _bound = stream.context().bind()?;
        // SAFETY: guaranteed by the caller.
        check(
            unsafe { sys::cuMemsetD8Async(dst, value, bytes, stream.raw()) },
            call,
        )
    })
}

impl DeviceBuffer {
    /// Copies `src` to the start of the buffer and waits for it (pageable memory is fine).
    pub fn upload<T: DeviceRepr>(&mut self, src: &[T], stream: &Stream) -> CudaResult<()> {
        same_context(self.context(), stream.context(), "upload")?;
        let src = as_bytes(src);
        let dst = self.ptr_at(0, src.len())?;
        // SAFETY: in bounds (checked); `src` is borrowed for the whole call and the stream is
        // synchronised before returning, so both sides outlive the copy.
        unsafe { htod_async(dst, src.as_ptr(), src.len(), stream) }?;
        stream.synchronize()
    }

    /// Copies the start of the buffer into `dst` and waits for it.
    pub fn download<T: DeviceRepr>(&self, dst: &mut [T], stream: &Stream) -> CudaResult<()> {
        same_context(self.context(), stream.context(), "download")?;
        let dst = as_bytes_mut(dst);
        let src = self.ptr_at(0, dst.len())?;
        // SAFETY: in bounds (checked); `dst` is borrowed mutably for the whole call and the
        // stream is synchronised before returning.
        unsafe { dtoh_async(dst.as_mut_ptr(), src, dst.len(), stream) }?;
        stream.synchronize()
    }

    /// Queues a copy of `src[range]` to `offset` in this buffer.
    ///
    /// # Safety
    /// Neither buffer may be dropped, nor `src[range]` written, until the copy has completed on
    /// `stream`.
    pub unsafe fn upload_pinned_async(
        &mut self,
        offset: usize,
        src: &PinnedBuffer,
        range: Range<usize>,
        stream: &Stream,
    ) -> CudaResult<()> {
        same_context(self.context(), stream.context(), "upload_pinned_async")?;
        let bytes = in_range(&range, src.len(), "upload_pinned_async")?;
        let dst = self.ptr_at(offset, bytes)?;
        // SAFETY: both ranges in bounds (checked); lifetimes guaranteed by the caller.
        unsafe { htod_async(dst, src.as_ptr().add(range.start), bytes, stream) }
    }

    /// Queues a copy of `dst.len()`-bounded `range` bytes from `offset` in this buffer into
    /// `dst[range]`.
    ///
    /// # Safety
    /// Neither buffer may be dropped, nor `dst[range]` read, until the copy has completed on
    /// `stream`.
    pub unsafe fn download_pinned_async(
        &self,
        offset: usize,
        dst: &mut PinnedBuffer,
        range: Range<usize>,
        stream: &Stream,
    ) -> CudaResult<()> {
        same_context(self.context(), stream.context(), "download_pinned_async")?;
        let bytes = in_range(&range, dst.len(), "download_pinned_async")?;
        let src = self.ptr_at(offset, bytes)?;
        // SAFETY: both ranges in bounds (checked); lifetimes guaranteed by the caller.
        unsafe { dtoh_async(dst.as_mut_ptr().add(range.start), src, bytes, stream) }
    }

    /// Sets every byte of the buffer to `value` and waits.
    pub fn fill(&mut self, value: u8, stream: &Stream) -> CudaResult<()> {
        same_context(self.context(), stream.context(), "fill")?;
        // SAFETY: the whole buffer is ours; the stream is synchronised before returning.
        unsafe { memset_async(self.ptr(), value, self.len(), stream) }?;
        stream.synchronize()
    }
}

impl DevicePlaneBuf {
    /// Queues a copy of a plane stored in `src` with rows `src_pitch` bytes apart.
    ///
    /// # Safety
    /// Neither buffer may be dropped, nor `src` written, until the copy has completed on
    /// `stream`.
    pub unsafe fn upload_pinned_async(
        &mut self,
        src: &PinnedBuffer,
        src_pitch: usize,
        stream: &Stream,
    ) -> CudaResult<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.upload_pinned_at_async(src, 0, src_pitch, stream) }
    }

    /// Queues a copy of a plane stored from byte `offset` of `src` with rows `src_pitch` bytes
    /// apart.
    ///
    /// # Safety
    /// As [`DevicePlaneBuf::upload_pinned_async`].
    pub unsafe fn upload_pinned_at_async(
        &mut self,
        src: &PinnedBuffer,
        offset: usize,
        src_pitch: usize,
        stream: &Stream,
    ) -> CudaResult<()> {
        same_context(self.buffer().context(), stream.context(), "plane upload")?;
        let plane = self.plane();
        let need = ((plane.height - 1) * src_pitch + plane.row_bytes()).saturating_add(offset);
        if src_pitch < plane.row_bytes() || need > src.len() {
            return Err(CudaError::InvalidArgument(format!(
                "plane upload: {} rows of {} bytes with pitch {src_pitch} from offset {offset} need {need} bytes, the pinned buffer has {}",
                plane.height,
                plane.row_bytes(),
                src.len()
            )));
        }
        let src = Memory2D::Host {
            // SAFETY: offset + the rows read <= src.len() (checked above).
            ptr: unsafe { src.as_ptr().add(offset) }.cast_mut(),
            pitch: src_pitch,
        };
        let dst = Memory2D::Device {
            ptr: plane.ptr,
            pitch: plane.pitch,
        };
        // SAFETY: both sides hold `height` rows of their pitch (checked above / by allocation);
        // lifetimes guaranteed by the caller.
        unsafe { copy_2d_async(dst, src, plane.row_bytes(), plane.height, stream) }
    }

    /// Copies a host plane (`T` = `u8` or `u16` samples, rows `stride` samples apart) and waits.
    pub fn upload<T: DeviceRepr>(
        &mut self,
        src: &[T],
        stride: usize,
        stream: &Stream,
    ) -> CudaResult<()> {
        same_context(self.buffer().context(), stream.context(), "plane upload")?;
        let plane = self.plane();
        let size = std::mem::size_of::<T>();
        let need = (plane.height - 1) * stride + plane.width;
        if size != plane.bytes_per_sample || stride < plane.width || src.len() < need {
            return Err(CudaError::InvalidArgument(format!(
                "plane upload: {}x{} plane of {}-byte samples from {} values of {size} bytes, stride {stride}",
                plane.width,
                plane.height,
                plane.bytes_per_sample,
                src.len()
            )));
        }
        let src = Memory2D::Host {
            ptr: src.as_ptr().cast::<u8>().cast_mut(),
            pitch: stride * size,
        };
        let dst = Memory2D::Device {
            ptr: plane.ptr,
            pitch: plane.pitch,
        };
        // SAFETY: sizes checked above; the copy only reads `src`, which is borrowed for the
        // whole call, and the stream is synchronised before returning.
        unsafe { copy_2d_async(dst, src, plane.row_bytes(), plane.height, stream) }?;
        stream.synchronize()
    }
}
