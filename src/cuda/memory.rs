//! Device buffers (`cuMemAlloc`) and pinned host buffers (`cuMemHostAlloc`), each freed on drop
//! and counted in [`super::live_resources`].

use std::ffi::c_void;

use cudarc::driver::sys;

use super::context::Context;
use super::counters;
use super::driver::{guarded, release};
use super::error::{check, CudaError, CudaResult};
use super::fault::{self, FaultKind};
use super::pool::{self, PoolsInner, Side};
use std::sync::Arc;

/// Plain values that may be copied to and from the device byte for byte: integers and floats
/// (no padding, every bit pattern valid).
pub trait DeviceRepr: Copy + Default + Send + Sync + 'static + private::Sealed {}

mod private {
    pub trait Sealed {}
}

macro_rules! device_repr {
    ($($t:ty),*) => {$(
        impl private::Sealed for $t {}
        impl DeviceRepr for $t {}
    )*};
}
device_repr!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// Byte view of a slice of plain values.
pub(crate) fn as_bytes<T: DeviceRepr>(v: &[T]) -> &[u8] {
    // SAFETY: DeviceRepr types have no padding and no invalid bit patterns; the byte slice
    // covers exactly the same memory with the same lifetime.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Mutable byte view of a slice of plain values.
pub(crate) fn as_bytes_mut<T: DeviceRepr>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as in as_bytes; any bytes written form valid values of T.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

/// The layout of a feature's scratch as one allocation of parts (a full rebuild makes and frees
/// every buffer of an engine, so each feature makes one): each part starts at a multiple of
/// [`Parts::ALIGN`] bytes.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    bytes: usize,
}

impl Parts {
    /// Alignment of every part (bytes), as a separate allocation's would be at least.
    pub(crate) const ALIGN: usize = 256;

    /// Adds a part of `bytes`; returns its offset.
    pub(crate) fn add(&mut self, bytes: usize) -> usize {
        let at = self.bytes;
        self.bytes += bytes.div_ceil(Self::ALIGN) * Self::ALIGN;
        at
    }

    /// The allocation's size (at least one byte).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.max(1)
    }
}

/// Device memory of a fixed size in one [`Context`]; freed on drop.
pub struct DeviceBuffer {
    ctx: Context,
    ptr: sys::CUdeviceptr,
    bytes: usize,
    /// The scorer pools it came from ([`super::with_pools`]); `None`: `cuMemAlloc`.
    pool: Option<Arc<PoolsInner>>,
}

// SAFETY: the allocation belongs to the context, not to a thread; every driver call on it binds
// the context first. &DeviceBuffer hands out only the address.
unsafe impl Send for DeviceBuffer {}
// SAFETY: as above.
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    /// Allocates `bytes` (> 0) of device memory, uninitialised. Out of memory is an ordinary
    /// error ([`CudaError::is_out_of_memory`]).
    pub fn new(ctx: &Context, bytes: usize) -> CudaResult<DeviceBuffer> {
        guarded("DeviceBuffer::new", || {
            if bytes == 0 {
                return Err(CudaError::InvalidArgument(
                    "zero-byte device allocation".into(),
                ));
            }
            let call = || format!("cuMemAlloc({bytes} bytes)");
            fault::hit(FaultKind::Alloc, call)?;
            let (ptr, pool) = match pool::allocate(ctx, Side::Device, bytes, call)? {
                Some((ptr, pool)) => (ptr, Some(pool)),
                None => {
                    let _bound = ctx.bind()?;
                    let mut ptr: sys::CUdeviceptr = 0;
                    // SAFETY: context current; valid out pointer.
                    check(unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }, call)?;
                    (ptr, None)
                }
            };
            counters::up(&counters::DEVICE_BUFFERS, 1);
            counters::up(&counters::DEVICE_BYTES, bytes);
            Ok(DeviceBuffer {
                ctx: ctx.clone(),
                ptr,
                bytes,
                pool,
            })
        })
    }

    /// The device address of the first byte.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Sets `range` of a new buffer to zero before any use of it. Memory of the scorer's pools
    /// is zeroed on their stream, after its allocation, and (inside [`super::with_pools`])
    /// waited for with the rest of the build; other memory on a stream of its own, waited for
    /// here.
    pub fn zero(&mut self, range: std::ops::Range<usize>) -> CudaResult<()> {
        let len = range.end.saturating_sub(range.start);
        let ptr = self.ptr_at(range.start, len)?;
        if len == 0 {
            return Ok(());
        }
        match &self.pool {
            Some(pool) => pool::zero(pool, ptr, len),
            None => {
                let stream = super::stream::Stream::new(&self.ctx)?;
                // SAFETY: our buffer, in bounds (checked); waited for before returning.
                unsafe { super::copy::memset_async(ptr, 0, len, &stream) }?;
                stream.synchronize()
            }
        }
    }

    /// The address `offset` bytes in, checking that `len` bytes from there are inside.
    pub fn ptr_at(&self, offset: usize, len: usize) -> CudaResult<sys::CUdeviceptr> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes => Ok(self.ptr + offset as u64),
            _ => Err(CudaError::InvalidArgument(format!(
                "{len} bytes at offset {offset} outside a {}-byte device buffer",
                self.bytes
            ))),
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let (ptr, bytes, ctx) = (self.ptr, self.bytes, &self.ctx);
        let freed = match &self.pool {
            // Back to the scorer's pool, ordered on its stream: no wait for the GPU.
            Some(pool) => pool::free(pool, Side::Device, ptr, bytes),
            None => release("device buffer", || {
                let _bound = ctx.bind()?;
                // SAFETY: our allocation, freed once, here. Work using it was submitted on our
                // streams, which their owners synchronise before dropping buffers (see copy.rs).
                check(unsafe { sys::cuMemFree_v2(ptr) }, || {
                    format!("cuMemFree({bytes} bytes)")
                })
            }),
        };
        if freed {
            counters::down(&counters::DEVICE_BUFFERS, 1);
            counters::down(&counters::DEVICE_BYTES, bytes);
        }
    }
}

/// Page-locked host memory (for asynchronous copies), zero-filled at allocation; freed on drop.
pub struct PinnedBuffer {
    ctx: Context,
    ptr: *mut u8,
    bytes: usize,
    /// The scorer's pinned pool it came from ([`super::with_pools`]); `None`: `cuMemHostAlloc`.
    pool: Option<Arc<PoolsInner>>,
}

// SAFETY: like a Vec<u8>: the memory is ours alone, accessed through &self/&mut self.
unsafe impl Send for PinnedBuffer {}
// SAFETY: as above.
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    /// Allocates `bytes` (> 0) of pinned host memory, usable from every context (portable).
    pub fn new(ctx: &Context, bytes: usize) -> CudaResult<PinnedBuffer> {
        guarded("PinnedBuffer::new", || {
            if bytes == 0 {
                return Err(CudaError::InvalidArgument(
                    "zero-byte pinned allocation".into(),
                ));
            }
            let call = || format!("cuMemHostAlloc({bytes} bytes)");
            fault::hit(FaultKind::Alloc, call)?;
            let (ptr, pool) = match pool::allocate(ctx, Side::Host, bytes, call)? {
                // A host pool's memory is host memory: its address is the host pointer.
                Some((address, pool)) => (address as usize as *mut c_void, Some(pool)),
                None => {
                    let _bound = ctx.bind()?;
                    let mut ptr: *mut c_void = std::ptr::null_mut();
                    // SAFETY: context current; valid out pointer; PORTABLE is a valid flag.
                    check(
                        unsafe {
                            sys::cuMemHostAlloc(&mut ptr, bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
                        },
                        call,
                    )?;
                    (ptr, None)
                }
            };
            // SAFETY: the driver returned `bytes` writable bytes at `ptr`. Zeroed so the safe
            // slice views never expose uninitialised memory.
            unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, bytes) };
            counters::up(&counters::PINNED_BUFFERS, 1);
            counters::up(&counters::PINNED_BYTES, bytes);
            Ok(PinnedBuffer {
                ctx: ctx.clone(),
                ptr: ptr.cast(),
                bytes,
                pool,
            })
        })
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `bytes` initialised bytes owned by self, borrowed immutably.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `bytes` initialised bytes owned by self, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }

    /// The address through which device code reaches this buffer (None where the driver gives
    /// none, e.g. for a pool's blocks: then results are copied into it instead). Device code
    /// may write through it until the buffer is dropped; `&mut self` since it lets them.
    pub fn device_address(&mut self) -> Option<u64> {
        let (host, ctx) = (self.ptr, &self.ctx);
        guarded("PinnedBuffer::device_address", || {
            let _bound = ctx.bind()?;
            let mut dev: sys::CUdeviceptr = 0;
            // SAFETY: `host` is the start of this live pinned allocation of `ctx`; the driver
            // only writes `dev`.
            check(
                unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host.cast(), 0) },
                || "cuMemHostGetDevicePointer".into(),
            )?;
            Ok(dev)
        })
        .ok()
        .filter(|&d| d != 0)
    }

    /// The first `len` values of type `T` (the buffer must hold them and be aligned for `T`).
    pub fn typed<T: DeviceRepr>(&self, len: usize) -> CudaResult<&[T]> {
        self.check_typed::<T>(len)?;
        // SAFETY: in bounds and aligned (checked); DeviceRepr accepts any bytes.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.cast::<T>(), len) })
    }

    /// Mutable variant of [`PinnedBuffer::typed`].
    pub fn typed_mut<T: DeviceRepr>(&mut self, len: usize) -> CudaResult<&mut [T]> {
        self.check_typed::<T>(len)?;
        // SAFETY: in bounds and aligned (checked); DeviceRepr accepts any bytes.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<T>(), len) })
    }

    fn check_typed<T: DeviceRepr>(&self, len: usize) -> CudaResult<()> {
        let size = std::mem::size_of::<T>();
        let fits = len.checked_mul(size).is_some_and(|b| b <= self.bytes);
        if !fits || !self.ptr.cast::<T>().is_aligned() {
            return Err(CudaError::InvalidArgument(format!(
                "{len} values of {size} bytes do not fit a {}-byte pinned buffer",
                self.bytes
            )));
        }
        Ok(())
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        let (ptr, bytes, ctx) = (self.ptr, self.bytes, &self.ctx);
        let freed = match &self.pool {
            Some(pool) => pool::free(pool, Side::Host, ptr as usize as sys::CUdeviceptr, bytes),
            None => release("pinned buffer", || {
                let _bound = ctx.bind()?;
                // SAFETY: our allocation, freed once, here; no copy from or to it is pending (the
                // async copy helpers are unsafe with that contract).
                check(unsafe { sys::cuMemFreeHost(ptr.cast()) }, || {
                    format!("cuMemFreeHost({bytes} bytes)")
                })
            }),
        };
        if freed {
            counters::down(&counters::PINNED_BUFFERS, 1);
            counters::down(&counters::PINNED_BYTES, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Parts;

    #[test]
    fn parts_start_aligned_one_after_another() {
        let mut parts = Parts::default();
        assert_eq!(parts.bytes(), 1, "an empty layout still allocates a byte");
        assert_eq!(parts.add(1), 0);
        assert_eq!(parts.add(Parts::ALIGN), Parts::ALIGN);
        assert_eq!(parts.add(Parts::ALIGN + 1), 2 * Parts::ALIGN);
        assert_eq!(parts.add(0), 4 * Parts::ALIGN);
        assert_eq!(
            parts.add(8),
            4 * Parts::ALIGN,
            "an empty part takes no room"
        );
        assert_eq!(parts.bytes(), 5 * Parts::ALIGN);
    }
}
