//! The few functions of libgstcuda-1.0 (GStreamer's CUDA helper library, part of
//! gst-plugins-bad) this element uses. No Rust bindings exist, so they are declared here, in
//! one place, and loaded at run time with `dlopen`: the plugin loads (CPU path) where the
//! library or the NVIDIA driver is missing.
//!
//! Signatures are those of GStreamer 1.22's `gst/cuda/gstcudautils.h`, `gstcudacontext.h`,
//! `gstcudaloader.h` and `gstcudamemory.h`. `GstCudaContext *` is declared as
//! `*mut GstObject` (it is a `GstObject` subclass and we only ref/unref it and pass it back).
//!
//! Nothing here may be called before [`Api::get`] returned `Some`, which it does only when
//! `gst_cuda_load_library()` found the driver: with no driver, `gst_cuda_context_new()` (called
//! by `gst_cuda_ensure_element_context`) aborts the process.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use gst::glib;
use gst::glib::translate::{from_glib_full, ToGlibPtr};
use gst::prelude::*;

type Gboolean = glib::ffi::gboolean;
type GstElement = gst::ffi::GstElement;
type GstObject = gst::ffi::GstObject;

/// `GST_MAP_CUDA` (`GST_MAP_FLAG_LAST << 1`): map a `GstCudaMemory` as a device pointer.
pub const GST_MAP_CUDA: gst::ffi::GstMapFlags = gst::ffi::GST_MAP_FLAG_LAST << 1;

/// `GST_CUDA_CONTEXT_TYPE`: the context type name of a shared `GstCudaContext`.
pub const CUDA_CONTEXT_TYPE: &str = "gst.cuda.context";

/// `GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY`.
pub const CAPS_FEATURE_MEMORY_CUDA_MEMORY: &str = "memory:CUDAMemory";

/// The public head of GStreamer 1.22's `struct _GstCudaMemory` (we read `context` only).
#[repr(C)]
struct GstCudaMemoryHead {
    mem: gst::ffi::GstMemory,
    context: *mut GstObject,
}

pub struct Api {
    // Kept loaded for as long as the function pointers below live (the whole process).
    _lib: libloading::Library,
    ensure_element_context:
        unsafe extern "C" fn(*mut GstElement, c_int, *mut *mut GstObject) -> Gboolean,
    handle_set_context: unsafe extern "C" fn(
        *mut GstElement,
        *mut gst::ffi::GstContext,
        c_int,
        *mut *mut GstObject,
    ) -> Gboolean,
    handle_context_query:
        unsafe extern "C" fn(*mut GstElement, *mut gst::ffi::GstQuery, *mut GstObject) -> Gboolean,
    context_get_handle: unsafe extern "C" fn(*mut GstObject) -> *mut c_void,
    is_cuda_memory: unsafe extern "C" fn(*mut gst::ffi::GstMemory) -> Gboolean,
}

static API: OnceLock<Option<Api>> = OnceLock::new();

impl Api {
    /// The library, if it loads and `gst_cuda_load_library()` found a CUDA driver.
    pub fn get() -> Option<&'static Api> {
        API.get_or_init(Api::load).as_ref()
    }

    fn load() -> Option<Api> {
        // SAFETY: loading a GStreamer library runs no initialisers beyond GLib type setup,
        // which is safe once GStreamer is initialised (it is: we run inside an element).
        let lib = unsafe { libloading::Library::new("libgstcuda-1.0.so.0") }.ok()?;
        // SAFETY: each symbol is declared with its C signature from GStreamer 1.22's headers
        // (see the module docs); the pointers stay valid while `lib` is loaded (forever).
        unsafe {
            let load_library = *lib
                .get::<unsafe extern "C" fn() -> Gboolean>(b"gst_cuda_load_library\0")
                .ok()?;
            // Loads libcuda.so.1 and its entry points; FALSE when there is no driver.
            if load_library() == glib::ffi::GFALSE {
                return None;
            }
            Some(Api {
                ensure_element_context: *lib.get(b"gst_cuda_ensure_element_context\0").ok()?,
                handle_set_context: *lib.get(b"gst_cuda_handle_set_context\0").ok()?,
                handle_context_query: *lib.get(b"gst_cuda_handle_context_query\0").ok()?,
                context_get_handle: *lib.get(b"gst_cuda_context_get_handle\0").ok()?,
                is_cuda_memory: *lib.get(b"gst_is_cuda_memory\0").ok()?,
                _lib: lib,
            })
        }
    }

    /// Finds a `GstCudaContext` through context sharing (neighbours, the application) or
    /// creates one for `device_id` (-1: any), keeping the one already in `slot`.
    pub fn ensure_element_context(
        &self,
        element: &gst::Element,
        device_id: i32,
        slot: &mut Option<gst::Object>,
    ) -> bool {
        let mut raw: *mut GstObject = match slot {
            Some(ctx) => ctx.to_glib_full(),
            None => std::ptr::null_mut(),
        };
        // SAFETY: valid element; `raw` is null or a reference we own, which the call keeps or
        // replaces with another owned reference (transfer full in and out).
        let ok =
            unsafe { (self.ensure_element_context)(element.to_glib_none().0, device_id, &mut raw) };
        // SAFETY: `raw` is null or an owned reference to a GstCudaContext (a GstObject).
        *slot = unsafe { take_object(raw) };
        ok != glib::ffi::GFALSE && slot.is_some()
    }

    /// `GstElement::set_context`: adopts a shared CUDA context for `device_id` if `context`
    /// carries one. True when it did.
    pub fn handle_set_context(
        &self,
        element: &gst::Element,
        context: &gst::Context,
        device_id: i32,
        slot: &mut Option<gst::Object>,
    ) -> bool {
        let mut raw: *mut GstObject = match slot {
            Some(ctx) => ctx.to_glib_full(),
            None => std::ptr::null_mut(),
        };
        // SAFETY: valid element and context (borrowed for the call); `raw` as in
        // `ensure_element_context`.
        let ok = unsafe {
            (self.handle_set_context)(
                element.to_glib_none().0,
                context.as_mut_ptr(),
                device_id,
                &mut raw,
            )
        };
        // SAFETY: as in `ensure_element_context`.
        *slot = unsafe { take_object(raw) };
        ok != glib::ffi::GFALSE
    }

    /// Answers a `GST_QUERY_CONTEXT` for `gst.cuda.context` with our context. True if answered.
    pub fn handle_context_query(
        &self,
        element: &gst::Element,
        query: &mut gst::QueryRef,
        context: &gst::Object,
    ) -> bool {
        // SAFETY: valid element, a writable query we were handed, and a GstCudaContext (only
        // ever stored from the functions above); all borrowed for the call.
        unsafe {
            (self.handle_context_query)(
                element.to_glib_none().0,
                query.as_mut_ptr(),
                context.to_glib_none().0,
            ) != glib::ffi::GFALSE
        }
    }

    /// The `CUcontext` of a `GstCudaContext` (owned by it: never destroy it).
    pub fn context_handle(&self, context: &gst::Object) -> *mut c_void {
        // SAFETY: `context` is a GstCudaContext (see `handle_context_query`).
        unsafe { (self.context_get_handle)(context.to_glib_none().0) }
    }

    /// Whether `mem` is a `GstCudaMemory`.
    pub fn is_cuda_memory(&self, mem: &gst::MemoryRef) -> bool {
        // SAFETY: a valid memory, borrowed for the call (the function only reads its
        // allocator).
        unsafe { (self.is_cuda_memory)(mem.as_mut_ptr()) != glib::ffi::GFALSE }
    }

    /// The `GstCudaContext` a CUDA memory belongs to (None if `mem` is not CUDA memory).
    pub fn memory_context_ptr(&self, mem: &gst::MemoryRef) -> Option<*mut c_void> {
        if !self.is_cuda_memory(mem) {
            return None;
        }
        let head = mem.as_ptr() as *const GstCudaMemoryHead;
        // SAFETY: `mem` is a GstCudaMemory (checked above), whose public layout starts with
        // GstMemory followed by the context pointer (GStreamer 1.22 gstcudamemory.h).
        Some(unsafe { (*head).context } as *mut c_void)
    }
}

/// Takes ownership of a nullable `GstObject *` (transfer full).
///
/// # Safety
/// `raw` is null or a valid, owned reference.
unsafe fn take_object(raw: *mut GstObject) -> Option<gst::Object> {
    if raw.is_null() {
        None
    } else {
        // SAFETY: forwarded from the contract.
        Some(unsafe { from_glib_full(raw) })
    }
}

/// A video frame mapped with `GST_MAP_READ | GST_MAP_CUDA`: plane pointers are CUDA device
/// pointers. Unmapped on drop.
pub struct CudaMappedFrame {
    frame: gst_video::ffi::GstVideoFrame,
}

// SAFETY: the mapping holds its own buffer reference; device pointers may be used from any
// thread with the context pushed.
unsafe impl Send for CudaMappedFrame {}

impl CudaMappedFrame {
    /// Maps `buffer` (CUDA memory) as device pointers.
    pub fn map(buffer: &gst::Buffer, info: &gst_video::VideoInfo) -> Option<CudaMappedFrame> {
        let mut frame = std::mem::MaybeUninit::<gst_video::ffi::GstVideoFrame>::zeroed();
        // SAFETY: valid info and buffer (gst_video_frame_map takes its own buffer reference);
        // `frame` is writable storage for the result, only read if mapping succeeded.
        let ok = unsafe {
            gst_video::ffi::gst_video_frame_map(
                frame.as_mut_ptr(),
                info.to_glib_none().0 as *mut _,
                buffer.as_mut_ptr(),
                gst::ffi::GST_MAP_READ | GST_MAP_CUDA,
            )
        };
        if ok == glib::ffi::GFALSE {
            return None;
        }
        // SAFETY: initialised by the successful map above.
        Some(CudaMappedFrame {
            frame: unsafe { frame.assume_init() },
        })
    }

    /// Device pointer and pitch (bytes) of plane `i`.
    pub fn plane(&self, i: usize) -> Option<(u64, usize)> {
        if i >= self.frame.data.len() {
            return None;
        }
        let ptr = self.frame.data[i] as u64;
        let stride = usize::try_from(self.frame.info.stride[i]).ok()?;
        if ptr == 0 {
            return None;
        }
        Some((ptr, stride))
    }
}

impl Drop for CudaMappedFrame {
    fn drop(&mut self) {
        // SAFETY: mapped by `map` and unmapped exactly once, here.
        unsafe { gst_video::ffi::gst_video_frame_unmap(&mut self.frame) }
    }
}

/// Whether caps carry the `memory:CUDAMemory` feature.
pub fn caps_are_cuda(caps: &gst::CapsRef) -> bool {
    caps.features(0)
        .is_some_and(|f| f.contains(CAPS_FEATURE_MEMORY_CUDA_MEMORY))
}

/// The element as a `gst::Element` (for the C helpers).
pub fn as_element(obj: &impl IsA<gst::Element>) -> gst::Element {
    obj.clone().upcast()
}
