//! Device memory that someone else owns (a PyTorch or CuPy tensor, another library's buffer):
//! where it lives, waiting for its producer's stream, and reading it back to the host.
//!
//! The scorer reads such memory in place ([`crate::Scorer::submit_device`]); these helpers
//! check it first and handle the cases the scorer does not: a producer still writing on its
//! own stream, and a fall-back to the CPU that needs the samples on the host.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::context::Context;
use super::driver::{self, guarded};
use super::error::{check, CudaError, CudaResult};
use super::plane::DevicePlane;

/// The ordinal of the device that owns `ptr`, which must be device (or managed) memory of
/// this process: host memory, or an address the driver does not know, is an error that says
/// so.
pub fn pointer_device(ptr: sys::CUdeviceptr) -> CudaResult<i32> {
    guarded("pointer_device", || {
        driver::init()?;
        let mut memory_type: u32 = 0;
        // SAFETY: a valid out pointer of the attribute's type (an unsigned int); the driver
        // checks `ptr` itself and answers with an error for an unknown address.
        let known = check(
            unsafe {
                sys::cuPointerGetAttribute(
                    (&mut memory_type as *mut u32).cast::<c_void>(),
                    sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    ptr,
                )
            },
            || format!("cuPointerGetAttribute(MEMORY_TYPE, {ptr:#x})"),
        );
        if known.is_err() {
            return Err(CudaError::InvalidArgument(format!(
                "address {ptr:#x} is not memory the CUDA driver knows (not a CUDA allocation of this process)"
            )));
        }
        if memory_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
            return Err(CudaError::InvalidArgument(format!(
                "address {ptr:#x} is not device memory (CUDA memory type {memory_type})"
            )));
        }
        let mut ordinal: i32 = -1;
        // SAFETY: a valid out pointer of the attribute's type (an int).
        check(
            unsafe {
                sys::cuPointerGetAttribute(
                    (&mut ordinal as *mut i32).cast::<c_void>(),
                    sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                    ptr,
                )
            },
            || format!("cuPointerGetAttribute(DEVICE_ORDINAL, {ptr:#x})"),
        )?;
        Ok(ordinal)
    })
}

/// Waits until the work queued so far on a stream of someone else's (`raw`, a `CUstream`, or
/// 1 / 2 for the legacy / per-thread default stream, as `__cuda_array_interface__` gives it)
/// has finished, so that memory it writes can be read.
///
/// # Safety
/// `raw` must be a live stream of `ctx` (or 1 or 2), not destroyed during the call.
pub unsafe fn wait_for_stream(ctx: &Context, raw: usize) -> CudaResult<()> {
    guarded("wait_for_stream", || {
        let _bound = ctx.bind()?;
        // SAFETY: guaranteed by the caller; the handles 1 and 2 are the driver's own
        // CU_STREAM_LEGACY and CU_STREAM_PER_THREAD.
        check(
            unsafe { sys::cuStreamSynchronize(raw as sys::CUstream) },
            || format!("cuStreamSynchronize(stream {raw:#x})"),
        )
    })
}

/// Copies a device plane to the host, rows packed (`row_bytes` each), synchronously.
///
/// # Safety
/// The plane must be device memory of `ctx`, valid for `height` rows of its pitch.
pub unsafe fn download_plane(ctx: &Context, plane: &DevicePlane) -> CudaResult<Vec<u8>> {
    guarded("download_plane", || {
        plane.validate()?;
        let row = plane.row_bytes();
        let mut host = vec![0u8; row * plane.height];
        let p = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: plane.ptr,
            srcArray: std::ptr::null_mut(),
            srcPitch: plane.pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            dstHost: host.as_mut_ptr().cast(),
            dstDevice: 0,
            dstArray: std::ptr::null_mut(),
            dstPitch: row,
            WidthInBytes: row,
            Height: plane.height,
        };
        let _bound = ctx.bind()?;
        // SAFETY: the descriptor is fully initialised; `host` holds height rows of `row`
        // bytes; the caller guarantees the device side.
        check(unsafe { sys::cuMemcpy2D_v2(&p) }, || {
            format!("cuMemcpy2D({row}x{} bytes, device -> host)", plane.height)
        })?;
        Ok(host)
    })
}
