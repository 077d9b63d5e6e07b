//! The GPU feature engine: every per-frame feature of a [`FeaturePlan`] (ADM and VIF per
//! enhancement-gain limit, motion, PSNR) on one stream of one context, for frames in host
//! memory (staged through pinned buffers) or in device memory (read in place).
//!
//! Lifecycle (see also the crate docs):
//! * [`GpuKernels`]: the loaded modules, once per context; shared by every session and shot.
//! * [`GpuFeatures`]: one per scorer (a memory pool): creating it allocates the stream, the
//!   event, the device scratch of every feature and the pinned result slots; dropping it
//!   releases all of them (after draining the stream). Each shot starts a fresh libvmaf session
//!   on it with [`GpuFeatures::reset_session`]. Nothing is allocated per frame.
//! * [`HostStaging`]: pinned buffers for host frames, per scorer, made on first use.
//!
//! The results are the integer sums the kernels produce, turned into doubles on the host by
//! the same functions as the CPU path, so both paths give identical numbers.

use crate::extract::{FeaturePlan, SpatialFeatures};
use crate::features;
use crate::frame::{PictureRef, Plane, Samples};

use super::adm::{AdmKernels, GpuAdm};
use super::context::Context;
use super::copy::dtoh_async;
use super::error::{CudaError, CudaResult};
use super::event::Event;
use super::memory::{DeviceBuffer, PinnedBuffer};
use super::motion::{GpuMotion, MotionKernels};
use super::plane::{DevicePlane, DevicePlaneBuf};
use super::psnr::PsnrKernels;
use super::stream::Stream;
use super::vif::{GpuVif, VifKernels};

/// Result slots per feature (the engine works on one frame at a time for now).
const SLOTS: usize = 1;

/// A picture in device memory: the luma plane and, for PSNR, the two chroma planes, all
/// LSB-aligned samples (8-bit: one byte; 9..16-bit: little-endian `u16`).
#[derive(Clone, Copy, Debug)]
pub struct DevicePicture {
    pub luma: DevicePlane,
    pub chroma: Option<[DevicePlane; 2]>,
    pub bpc: u32,
}

/// Every kernel module the engine uses, loaded into one context.
#[derive(Clone)]
pub struct GpuKernels {
    pub adm: AdmKernels,
    pub vif: VifKernels,
    pub motion: MotionKernels,
    pub psnr: PsnrKernels,
    ctx: Context,
}

impl GpuKernels {
    pub fn load(ctx: &Context) -> CudaResult<GpuKernels> {
        Ok(GpuKernels {
            adm: AdmKernels::load(ctx)?,
            vif: VifKernels::load(ctx)?,
            motion: MotionKernels::load(ctx)?,
            psnr: PsnrKernels::load(ctx)?,
            ctx: ctx.clone(),
        })
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

/// Pinned staging and device planes for host frames: reference and distorted, luma and (for
/// PSNR) chroma. Kept per scorer, not per shot: pinned allocations take milliseconds, and a
/// shot rebuild must not.
pub struct HostStaging {
    pinned: Vec<PinnedBuffer>,
    planes: Vec<DevicePlaneBuf>,
    ctx: Context,
}

impl HostStaging {
    /// Empty; buffers are made for the first frame's planes.
    pub fn new(ctx: &Context) -> HostStaging {
        HostStaging {
            pinned: Vec::new(),
            planes: Vec::new(),
            ctx: ctx.clone(),
        }
    }

    fn ensure(&mut self, planes: &[&Plane]) -> CudaResult<()> {
        let fits = self.planes.len() == planes.len()
            && self
                .planes
                .iter()
                .zip(planes)
                .all(|(d, p)| (d.plane().width, d.plane().height) == (p.width, p.height));
        if fits {
            return Ok(());
        }
        self.pinned.clear();
        self.planes.clear();
        for p in planes {
            let bps = if p.bpc == 8 { 1 } else { 2 };
            self.pinned
                .push(PinnedBuffer::new(&self.ctx, p.width * p.height * bps)?);
            self.planes
                .push(DevicePlaneBuf::new(&self.ctx, p.width, p.height, bps)?);
        }
        Ok(())
    }
}

/// PSNR's partial sums and results (luma, cb, cr).
struct PsnrState {
    partial: DeviceBuffer,
    sse: DeviceBuffer,
    sse_host: PinnedBuffer,
    blocks: u32,
}

/// The per-frame features of one shot on the GPU. See the module docs.
pub struct GpuFeatures {
    // Drop order: the stream first (its drop waits for pending work), then what the work used.
    stream: Stream,
    done: Event,
    adm: Vec<GpuAdm>,
    vif: Vec<GpuVif>,
    motion: GpuMotion,
    psnr: Option<PsnrState>,
    kernels: GpuKernels,
    plan: FeaturePlan,
    /// Samples per chroma plane of the frame in flight, when its chroma PSNR is computed.
    chroma_pixels: Option<usize>,
}

impl GpuFeatures {
    pub fn new(kernels: &GpuKernels, plan: &FeaturePlan) -> CudaResult<GpuFeatures> {
        let ctx = kernels.context();
        let (w, h, bpc) = (plan.width, plan.height, plan.bpc);
        let stream = Stream::new(ctx)?;
        let done = Event::new(ctx, false)?;
        let adm = plan
            .adm
            .iter()
            .map(|(egl, _)| GpuAdm::new(ctx, kernels.adm.clone(), w, h, bpc, *egl, SLOTS))
            .collect::<CudaResult<Vec<_>>>()?;
        let vif = plan
            .vif
            .iter()
            .map(|(egl, _)| GpuVif::new(ctx, kernels.vif.clone(), w, h, bpc, *egl, SLOTS))
            .collect::<CudaResult<Vec<_>>>()?;
        let motion = GpuMotion::new(ctx, kernels.motion.clone(), w, h, bpc, SLOTS)?;
        let psnr = if plan.psnr {
            let blocks = super::psnr::MAX_BLOCKS.min(h as u32).max(1);
            Some(PsnrState {
                partial: DeviceBuffer::new(ctx, 8 * blocks as usize * 3)?,
                sse: DeviceBuffer::new(ctx, 8 * 3)?,
                sse_host: PinnedBuffer::new(ctx, 8 * 3)?,
                blocks,
            })
        } else {
            None
        };
        Ok(GpuFeatures {
            stream,
            done,
            adm,
            vif,
            motion,
            psnr,
            kernels: kernels.clone(),
            plan: plan.clone(),
            chroma_pixels: None,
        })
    }

    /// Starts a new libvmaf session on the same buffers (a new shot): the next frame has no
    /// motion predecessor and ADM's carried scratch words are back to zero. Queued on the
    /// stream, so it is ordered after the last frame's work.
    pub fn reset_session(&mut self) -> CudaResult<()> {
        self.motion.reset();
        for adm in &mut self.adm {
            adm.reset(&self.stream)?;
        }
        Ok(())
    }

    /// Features of one pair of host pictures (uploaded through `staging`, which must not be
    /// in use by another stream).
    pub fn compute_host(
        &mut self,
        staging: &mut HostStaging,
        reference: &PictureRef,
        distorted: &PictureRef,
    ) -> CudaResult<(SpatialFeatures, Option<u64>)> {
        let with_chroma =
            self.plan.psnr && reference.chroma.is_some() && distorted.chroma.is_some();
        let mut host_planes: Vec<&Plane> = vec![&reference.luma, &distorted.luma];
        if with_chroma {
            if let (Some([ru, rv]), Some([du, dv])) = (&reference.chroma, &distorted.chroma) {
                host_planes.extend([ru, rv, du, dv]);
            }
        }
        for p in &host_planes {
            p.validate()
                .map_err(|e| CudaError::InvalidArgument(format!("host plane: {e}")))?;
        }
        if !staging.ctx.same_as(self.kernels.context()) {
            return Err(CudaError::InvalidArgument(
                "host staging of another context".into(),
            ));
        }
        staging.ensure(&host_planes)?;
        for (i, p) in host_planes.iter().enumerate() {
            let bps = staging.planes[i].plane().bytes_per_sample;
            stage_plane(&mut staging.pinned[i], p)?;
            // SAFETY: pinned buffer and device plane of the staging, idle (every frame's work is
            // waited for before compute_* returns), alive until then (borrowed for the call).
            unsafe {
                staging.planes[i].upload_pinned_async(
                    &staging.pinned[i],
                    p.width * bps,
                    &self.stream,
                )
            }?;
        }
        let planes: Vec<DevicePlane> = staging.planes.iter().map(|p| p.plane()).collect();
        let picture = |luma: usize, chroma: [usize; 2]| DevicePicture {
            luma: planes[luma],
            chroma: with_chroma.then(|| [planes[chroma[0]], planes[chroma[1]]]),
            bpc: reference.luma.bpc,
        };
        let (r, d) = (picture(0, [2, 3]), picture(1, [4, 5]));
        // SAFETY: the staging planes, borrowed for this call, which returns only when the GPU
        // is done with them.
        unsafe { self.compute_device(&r, &d) }
    }

    /// Features of one pair of device pictures, read in place. Returns when the GPU has
    /// finished with them.
    ///
    /// # Safety
    /// Every plane is device memory of this context holding its final samples, valid and
    /// unwritten until this returns.
    pub unsafe fn compute_device(
        &mut self,
        reference: &DevicePicture,
        distorted: &DevicePicture,
    ) -> CudaResult<(SpatialFeatures, Option<u64>)> {
        // SAFETY: forwarded from this function's contract.
        let result = unsafe { self.enqueue(reference, distorted) };
        if let Err(e) = result {
            // Nothing queued before the failure may still read the caller's planes.
            if let Err(sync) = self.stream.synchronize() {
                eprintln!("vmafcuda: draining the GPU stream after an error failed: {sync}");
            }
            return Err(e);
        }
        self.done.synchronize()?;
        self.collect(reference.chroma.is_some() && distorted.chroma.is_some())
    }

    /// # Safety
    /// As [`GpuFeatures::compute_device`].
    unsafe fn enqueue(
        &mut self,
        reference: &DevicePicture,
        distorted: &DevicePicture,
    ) -> CudaResult<()> {
        let (w, h, bpc) = (self.plan.width, self.plan.height, self.plan.bpc);
        let bps = if bpc == 8 { 1 } else { 2 };
        for (what, p) in [("reference", reference), ("distorted", distorted)] {
            p.luma.validate()?;
            if (p.luma.width, p.luma.height, p.luma.bytes_per_sample, p.bpc) != (w, h, bps, bpc) {
                return Err(CudaError::InvalidArgument(format!(
                    "{what} luma {}x{} {}-bit ({} bytes/sample), expected {w}x{h} {bpc}-bit",
                    p.luma.width, p.luma.height, p.bpc, p.luma.bytes_per_sample
                )));
            }
        }
        let (r, d) = (&reference.luma, &distorted.luma);
        for adm in &mut self.adm {
            // SAFETY: the planes stay valid until our stream completes (the caller's contract);
            // the feature's buffers are its own and idle (the last frame was waited for).
            unsafe { adm.enqueue(&self.stream, r, d, 0) }?;
        }
        for vif in &mut self.vif {
            // SAFETY: as above.
            unsafe { vif.enqueue(&self.stream, r, d, 0) }?;
        }
        if self.plan.motion {
            // SAFETY: as above.
            unsafe { self.motion.enqueue(&self.stream, r, 0) }?;
        }
        if let Some(psnr) = &mut self.psnr {
            let mut pairs = vec![(*r, *d)];
            if let (Some([ru, rv]), Some([du, dv])) = (&reference.chroma, &distorted.chroma) {
                pairs.push((*ru, *du));
                pairs.push((*rv, *dv));
            }
            self.chroma_pixels = (pairs.len() == 3).then(|| pairs[1].0.width * pairs[1].0.height);
            for (i, (pr, pd)) in pairs.iter().enumerate() {
                let partial = psnr
                    .partial
                    .ptr_at(8 * psnr.blocks as usize * i, 8 * psnr.blocks as usize)?;
                let out = psnr.sse.ptr_at(8 * i, 8)?;
                // SAFETY: planes valid per the caller; partial/out are our buffers' slices.
                unsafe {
                    self.kernels.psnr.enqueue_sse(
                        &self.stream,
                        pr,
                        pd,
                        bpc,
                        partial,
                        psnr.blocks,
                        out,
                    )
                }?;
            }
            let n = pairs.len();
            // SAFETY: our device results into our pinned buffer, both alive until drained.
            unsafe {
                dtoh_async(
                    psnr.sse_host.as_mut_ptr(),
                    psnr.sse.ptr(),
                    8 * n,
                    &self.stream,
                )
            }?;
        }
        self.done.record(&self.stream)
    }

    fn collect(&self, with_chroma: bool) -> CudaResult<(SpatialFeatures, Option<u64>)> {
        let adm = self.adm.iter().map(|a| a.scores(0)).collect();
        let vif = self.vif.iter().map(|v| v.scores(0)).collect();
        let motion = if self.plan.motion {
            self.motion.sum(0)?
        } else {
            None
        };
        let psnr = match &self.psnr {
            Some(p) => {
                let sse = p.sse_host.typed::<u64>(3)?;
                let bpc = self.plan.bpc;
                let y =
                    features::psnr::psnr_from_sse(sse[0], self.plan.width * self.plan.height, bpc);
                let c = self.chroma_pixels.filter(|_| with_chroma).map(|n| {
                    (
                        features::psnr::psnr_from_sse(sse[1], n, bpc),
                        features::psnr::psnr_from_sse(sse[2], n, bpc),
                    )
                });
                Some((y, c))
            }
            None => None,
        };
        Ok((SpatialFeatures { adm, vif, psnr }, motion))
    }
}

/// Copies a host plane's rows, tightly packed, into pinned staging.
fn stage_plane(dst: &mut PinnedBuffer, src: &Plane) -> CudaResult<()> {
    let (w, h) = (src.width, src.height);
    match src.samples {
        Samples::U8(_) => {
            let out = dst.typed_mut::<u8>(w * h)?;
            for (y, row) in out.chunks_exact_mut(w).enumerate() {
                row.copy_from_slice(src.row_u8(y));
            }
        }
        Samples::U16(_) => {
            let out = dst.typed_mut::<u16>(w * h)?;
            for (y, row) in out.chunks_exact_mut(w).enumerate() {
                row.copy_from_slice(src.row_u16(y));
            }
        }
    }
    Ok(())
}
