//! Where frame memory is read: the `GstCudaContext` shared with the pipeline (and the
//! scorer's backend in it), CUDA frames read in place (zero-copy), and buffers mapped in
//! system memory.

use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;

use vmafcuda::cuda;
use vmafcuda::scorer::{BackendKind, BackendRequest};

use super::super::picture::ChromaLayout;
use super::super::Backend;
use super::caps::PadFormat;
use super::settings::Settings;
use super::state::State;
use super::{lock, VmafCuda, CAT};
use crate::cuda_ffi::{self, Api, CudaMappedFrame};

/// Maps frame `index`'s buffer in system memory for reading (`what`: reference or distorted).
pub(super) fn map_readable<'b>(
    buf: &'b gst::Buffer,
    f: &PadFormat,
    what: &str,
    index: usize,
) -> Result<gst_video::VideoFrameRef<&'b gst::BufferRef>, gst::ErrorMessage> {
    gst_video::VideoFrameRef::from_buffer_ref_readable(buf.as_ref(), &f.info).map_err(|_| {
        gst::error_msg!(
            gst::StreamError::Decode,
            ("frame {index}: cannot map the {what} buffer for reading")
        )
    })
}

impl VmafCuda {
    pub(super) fn backend_request(&self, settings: &Settings, cuda_caps: bool) -> BackendRequest {
        if settings.backend == Backend::Cpu {
            return BackendRequest::Cpu;
        }
        let device = settings.cuda_device_id.max(0);
        if cuda_caps {
            // Frames already live in GStreamer's CUDA context: work in that context.
            if let (Some(api), Some(ctx)) = (Api::get(), lock(&self.cuda_context).clone()) {
                let raw = api.context_handle(&ctx) as cuda::sys::CUcontext;
                if !raw.is_null() {
                    // SAFETY: `raw` is the CUcontext of a live GstCudaContext; we keep that
                    // object (`cuda_context`) alive for as long as the element runs, and the
                    // engine only borrows it (push/pop, never destroyed).
                    match unsafe { cuda::Context::borrow(raw) } {
                        Ok(c) => return BackendRequest::CudaContext(c),
                        Err(e) => gst::warning!(
                            CAT,
                            imp = self,
                            "cannot borrow GStreamer's CUDA context: {e}"
                        ),
                    }
                }
            }
        }
        match settings.backend {
            Backend::Cuda => BackendRequest::Cuda { device },
            _ => BackendRequest::Auto,
        }
    }

    /// Device pictures of a mapped CUDA frame, if the engine can read its layout in place.
    fn device_picture(
        frame: &CudaMappedFrame,
        format: &PadFormat,
        psnr: bool,
    ) -> Option<cuda::DevicePicture> {
        let layout = format.layout;
        // P010's MSB-aligned samples are shifted and NV12/P010's interleaved chroma is split
        // by the kernels as they load them: every layout is read in place.
        let (w, h) = (format.info.width() as usize, format.info.height() as usize);
        let plane = |i: usize, width: usize, height: usize| {
            frame.plane(i).map(|(ptr, pitch)| cuda::DevicePlane {
                ptr,
                pitch,
                width,
                height,
                bytes_per_sample: layout.bytes,
                shift: layout.shift,
            })
        };
        let chroma = match (psnr, layout.chroma, layout.chroma_size(w, h)) {
            (false, _, _) | (true, ChromaLayout::None, _) | (true, _, None) => None,
            (true, ChromaLayout::Planar { .. }, Some((cw, ch))) => {
                Some(cuda::DeviceChroma::Planar([
                    plane(1, cw, ch)?,
                    plane(2, cw, ch)?,
                ]))
            }
            // One plane of CbCr pairs, `cw` pairs per row.
            (true, ChromaLayout::Interleaved, Some((cw, ch))) => {
                Some(cuda::DeviceChroma::Interleaved(plane(1, cw, ch)?))
            }
        };
        Some(cuda::DevicePicture {
            luma: plane(0, w, h)?,
            chroma,
            bpc: layout.bpc,
        })
    }

    /// Tries the zero-copy path; None when it does not apply (the caller uses the host path).
    pub(super) fn push_device(
        &self,
        state: &mut State,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Option<Result<vmafcuda::scorer::Progress, vmafcuda::Error>> {
        match self.try_push_device(state, reference, distorted) {
            Ok(r) => Some(r),
            Err(why) => {
                if !state.host_path_logged {
                    state.host_path_logged = true;
                    gst::info!(CAT, imp = self, "frames go through system memory: {why}");
                }
                None
            }
        }
    }

    /// The zero-copy path, or why it does not apply.
    fn try_push_device(
        &self,
        state: &mut State,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Result<Result<vmafcuda::scorer::Progress, vmafcuda::Error>, &'static str> {
        if state.device_disabled {
            return Err("the CUDA path failed earlier");
        }
        let (rf, df) = match (state.ref_format.clone(), state.dist_format.clone()) {
            (Some(r), Some(d)) => (r, d),
            _ => return Err("caps not negotiated"),
        };
        if !(rf.cuda && df.cuda) {
            return Err("the pads did not negotiate memory:CUDAMemory on both inputs");
        }
        let scorer = state.scorer.as_mut().ok_or("no scorer")?;
        if scorer.backend() != BackendKind::Cuda {
            return Err("the scorer runs on the CPU");
        }
        let api = Api::get().ok_or("libgstcuda not loaded")?;
        let ours = lock(&self.cuda_context)
            .as_ref()
            .ok_or("no shared GstCudaContext")?
            .as_ptr() as *mut std::ffi::c_void;
        // Only memory of the GstCudaContext the scorer borrowed can be read in place.
        for buf in [reference, distorted] {
            if buf.n_memory() != 1 {
                return Err("a buffer with several memories");
            }
            match api.memory_context_ptr(buf.peek_memory(0)) {
                None => return Err("a buffer that is not GstCudaMemory"),
                Some(c) if c != ours => {
                    return Err("CUDA memory of another GstCudaContext than ours")
                }
                Some(_) => {}
            }
        }
        let psnr = state.settings.psnr;
        let rmap = CudaMappedFrame::map(reference, &rf.info)
            .ok_or("mapping the reference with GST_MAP_CUDA failed")?;
        let dmap = CudaMappedFrame::map(distorted, &df.info)
            .ok_or("mapping the distorted with GST_MAP_CUDA failed")?;
        let rp = Self::device_picture(&rmap, &rf, psnr)
            .ok_or("reference planes missing from the CUDA mapping")?;
        let dp = Self::device_picture(&dmap, &df, psnr)
            .ok_or("distorted planes missing from the CUDA mapping")?;
        let interleaved =
            |p: &cuda::DevicePicture| matches!(p.chroma, Some(cuda::DeviceChroma::Interleaved(_)));
        if rp.chroma.is_some() && dp.chroma.is_some() && interleaved(&rp) != interleaved(&dp) {
            return Err("the pads' chroma layouts differ (NV12/P010 and planar) with psnr");
        }
        // SAFETY: both pictures point into CUDA memory mapped above (GST_MAP_CUDA) in the
        // GstCudaContext whose CUcontext the scorer borrowed (checked above); the mappings
        // (`rmap`, `dmap`) outlive the call, and push_device returns only after the GPU has
        // finished reading them, so unmapping afterwards is safe.
        let result = unsafe { scorer.push_device(&rp, &dp) };
        drop((rmap, dmap));
        Ok(result)
    }

    pub(super) fn ensure_cuda_context(&self) {
        let Some(api) = Api::get() else {
            gst::debug!(
                CAT,
                imp = self,
                "no CUDA driver: CUDA memory is read in system memory"
            );
            return;
        };
        if lock(&self.cuda_context).is_some() {
            return;
        }
        // Share the context upstream uses, so its memory can be read in place. libgstcuda's
        // gst_cuda_ensure_element_context does the same steps, but our `set_context` (called
        // back by the bin while it runs) stores into the mutex, not into the pointer it holds,
        // so it would create a second context; ask the neighbours and the bin first ourselves.
        let obj = self.obj();
        let pads: [&gst::Pad; 3] = [
            self.ref_pad.upcast_ref(),
            self.dist_pad.upcast_ref(),
            obj.src_pad().upcast_ref(),
        ];
        for pad in pads {
            let mut q = gst::query::Context::new(cuda_ffi::CUDA_CONTEXT_TYPE);
            if pad.peer_query(&mut q) {
                if let Some(ctx) = q.context().map(|c| c.to_owned()) {
                    self.adopt_context(api, &ctx);
                }
            }
            if lock(&self.cuda_context).is_some() {
                gst::debug!(
                    CAT,
                    imp = self,
                    "CUDA context from the peer of {}",
                    pad.name()
                );
                return;
            }
        }
        // The bin answers with set_context, synchronously, if some element shared one.
        let msg = gst::message::NeedContext::builder(cuda_ffi::CUDA_CONTEXT_TYPE)
            .src(&*obj)
            .build();
        let _ = obj.post_message(msg);
        if lock(&self.cuda_context).is_some() {
            gst::debug!(CAT, imp = self, "CUDA context from the pipeline");
            return;
        }
        let device = lock(&self.settings).cuda_device_id;
        let element = cuda_ffi::as_element(&*obj);
        let mut slot = None;
        if !api.ensure_element_context(&element, device, &mut slot) {
            gst::warning!(CAT, imp = self, "no CUDA context for device {device}");
        }
        let mut guard = lock(&self.cuda_context);
        if guard.is_none() {
            *guard = slot;
        }
    }

    pub(super) fn adopt_context(&self, api: &Api, context: &gst::Context) {
        let device = lock(&self.settings).cuda_device_id;
        let element = cuda_ffi::as_element(&*self.obj());
        let mut slot = lock(&self.cuda_context).clone();
        api.handle_set_context(&element, context, device, &mut slot);
        *lock(&self.cuda_context) = slot;
    }

    pub(super) fn answer_context_query(&self, query: &mut gst::QueryRef) -> bool {
        if let gst::QueryViewMut::Context(q) = query.view_mut() {
            if q.context_type() != cuda_ffi::CUDA_CONTEXT_TYPE {
                return false;
            }
        } else {
            return false;
        }
        let (Some(api), Some(ctx)) = (Api::get(), lock(&self.cuda_context).clone()) else {
            return false;
        };
        api.handle_context_query(&cuda_ffi::as_element(&*self.obj()), query, &ctx)
    }
}
