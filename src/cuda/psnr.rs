//! libvmaf's `psnr` on the GPU for one plane (luma): the integer sum of squared errors from
//! `kernels/psnr.cu`, then the CPU's own formula ([`features::psnr::psnr_from_sse`]), so the
//! doubles are identical to the CPU path's.
//!
//! Frames come either as host planes, staged through a pinned double buffer (the CPU fills one
//! slot while the GPU works on the other), or as device planes read in place (pointer + pitch,
//! e.g. a mapped `GstCudaMemory`). Submissions are asynchronous; results come back in order.

use std::collections::VecDeque;

use cudarc::driver::sys;
use rayon::prelude::*;

use crate::features;
use crate::frame::{Plane, Samples};

use super::context::Context;
use super::copy::dtoh_async;
use super::error::{CudaError, CudaResult};
use super::event::Event;
use super::kernels;
use super::memory::{DeviceBuffer, PinnedBuffer};
use super::module::{arg, Function, LaunchConfig, Module};
use super::plane::{DevicePlane, DevicePlaneBuf};
use super::stream::Stream;

/// Threads per block of every kernel in psnr.cu (its `kThreads`).
const THREADS: u32 = 256;
/// Most blocks of the first pass, hence most partial sums for the second (one block) to add.
pub(crate) const MAX_BLOCKS: u32 = 1024;
/// libvmaf sums an 8-bit row in a `uint32_t`; rows wider than this could wrap it (65025 per
/// sample), which the kernel does not reproduce.
pub const MAX_WIDTH_8BIT: usize = (u32::MAX / (255 * 255)) as usize;

/// The PSNR kernels of one context; cheap to clone, so a rebuilt session can reuse them.
#[derive(Clone)]
pub struct PsnrKernels {
    sse_u8: Function,
    sse_u16: Function,
    sse_u8_cbcr: Function,
    sse_u16_cbcr: Function,
    sum_partials: Function,
    module: Module,
}

impl PsnrKernels {
    pub fn load(ctx: &Context) -> CudaResult<PsnrKernels> {
        let module = kernels::PSNR.load(ctx)?;
        Ok(PsnrKernels {
            sse_u8: module.function("psnr_sse_u8")?,
            sse_u16: module.function("psnr_sse_u16")?,
            sse_u8_cbcr: module.function("psnr_sse_u8_cbcr")?,
            sse_u16_cbcr: module.function("psnr_sse_u16_cbcr")?,
            sum_partials: module.function("psnr_sum_partials")?,
            module,
        })
    }

    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Queues the SSE of one plane pair into `out` (one `u64`), using `partial` (`blocks`
    /// `u64`s, `blocks` <= [`MAX_BLOCKS`]) as scratch. With `interleaved`, both planes hold
    /// CbCr pairs (NV12/P010 chroma, `width` pairs per row), read once: Cb's SSE goes to
    /// `out`, Cr's to the next `u64`, and `partial` holds `2 * blocks` values. 16-bit samples
    /// are read shifted by each plane's [`DevicePlane::shift`].
    ///
    /// # Safety
    /// Both planes are device memory of the stream's context, valid until the work completes;
    /// `partial` and `out` are device buffers of the sizes above, not used concurrently.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn enqueue_sse(
        &self,
        stream: &Stream,
        reference: &DevicePlane,
        distorted: &DevicePlane,
        interleaved: bool,
        bpc: u32,
        partial: sys::CUdeviceptr,
        blocks: u32,
        out: sys::CUdeviceptr,
    ) -> CudaResult<()> {
        let components = if interleaved { 2 } else { 1 };
        reference.validate_components(components)?;
        distorted.validate_components(components)?;
        let bps = if bpc == 8 { 1 } else { 2 };
        if (
            reference.width,
            reference.height,
            reference.bytes_per_sample,
        ) != (
            distorted.width,
            distorted.height,
            distorted.bytes_per_sample,
        ) || reference.bytes_per_sample != bps
            || bpc + reference.shift.max(distorted.shift) > 16
        {
            return Err(CudaError::InvalidArgument(format!(
                "PSNR planes differ: {reference:?} vs {distorted:?} at {bpc} bits"
            )));
        }
        if bpc == 8 && reference.width > MAX_WIDTH_8BIT {
            return Err(CudaError::InvalidArgument(format!(
                "PSNR: 8-bit rows wider than {MAX_WIDTH_8BIT} samples"
            )));
        }
        if blocks == 0 || blocks > MAX_BLOCKS {
            return Err(CudaError::InvalidArgument(format!("PSNR: {blocks} blocks")));
        }
        let (width, height) = (reference.width as u32, reference.height as u32);
        let args = [
            arg(&reference.ptr),
            arg(&reference.pitch),
            arg(&distorted.ptr),
            arg(&distorted.pitch),
            arg(&width),
            arg(&height),
            arg(&reference.shift),
            arg(&distorted.shift),
            arg(&partial),
        ];
        let first = match (bpc == 8, interleaved) {
            (true, false) => &self.sse_u8,
            (false, false) => &self.sse_u16,
            (true, true) => &self.sse_u8_cbcr,
            (false, true) => &self.sse_u16_cbcr,
        };
        // SAFETY: argument types match PSNR_SSE_PARAMS (const uint8_t* ref, size_t ref_pitch,
        // const uint8_t* dis, size_t dis_pitch, unsigned width, unsigned height, unsigned
        // ref_shift, unsigned dis_shift, unsigned long long* partial): CUdeviceptr = u64,
        // usize = size_t, u32 = unsigned. The planes are valid per the caller and hold
        // `components` samples per pixel (checked); `partial` holds `components * blocks`
        // values, one per component and block of this launch.
        unsafe { first.launch(stream, LaunchConfig::linear(blocks, THREADS), &args) }?;
        for c in 0..components as u64 {
            let (part, sum) = (partial + 8 * u64::from(blocks) * c, out + 8 * c);
            let args = [arg(&part), arg(&blocks), arg(&sum)];
            // SAFETY: types match psnr_sum_partials (const unsigned long long* partial,
            // unsigned n, unsigned long long* out); component c's `blocks` partial sums were
            // written by the launch before on this stream; `sum` is its one u64 of `out`.
            unsafe {
                self.sum_partials
                    .launch(stream, LaunchConfig::linear(1, THREADS), &args)
            }?;
        }
        Ok(())
    }
}

/// One frame's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PsnrFrame {
    /// Sum of squared errors over the plane, as libvmaf computes it.
    pub sse: u64,
    /// PSNR in dB, as libvmaf writes `psnr_y`.
    pub psnr: f64,
}

/// What the host path needs per slot: pinned staging and device copies of both planes.
struct HostStage {
    reference: PinnedBuffer,
    distorted: PinnedBuffer,
    reference_dev: DevicePlaneBuf,
    distorted_dev: DevicePlaneBuf,
}

/// One frame in flight.
struct Slot {
    host: Option<HostStage>,
    partial: DeviceBuffer,
    sse: DeviceBuffer,
    sse_host: PinnedBuffer,
    done: Event,
}

/// PSNR of a stream of plane pairs of one geometry, on one context.
pub struct GpuPsnr {
    // Fields drop in this order: the stream first (its drop waits for pending work), then the
    // buffers that work used.
    stream: Stream,
    slots: [Slot; 2],
    kernels: PsnrKernels,
    ctx: Context,
    width: usize,
    height: usize,
    bpc: u32,
    blocks: u32,
    /// Slot of the next submission.
    next: usize,
    /// Slots in flight, oldest first.
    in_flight: VecDeque<usize>,
    ready: VecDeque<PsnrFrame>,
    parallel_staging: bool,
}

impl GpuPsnr {
    /// Sets up PSNR of `width` x `height` planes of `bpc` bits (8..=16), loading the kernels.
    pub fn new(ctx: &Context, width: usize, height: usize, bpc: u32) -> CudaResult<GpuPsnr> {
        let kernels = PsnrKernels::load(ctx)?;
        GpuPsnr::with_kernels(ctx, kernels, width, height, bpc)
    }

    /// Like [`GpuPsnr::new`] with kernels already loaded in `ctx`.
    pub fn with_kernels(
        ctx: &Context,
        kernels: PsnrKernels,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> CudaResult<GpuPsnr> {
        if !kernels.module.context().same_as(ctx) {
            return Err(CudaError::InvalidArgument(
                "PSNR kernels loaded in another context".into(),
            ));
        }
        if !(8..=16).contains(&bpc) {
            return Err(CudaError::InvalidArgument(format!("bit depth {bpc}")));
        }
        if width == 0
            || height == 0
            || u32::try_from(width).is_err()
            || u32::try_from(height).is_err()
        {
            return Err(CudaError::InvalidArgument(format!(
                "plane size {width}x{height}"
            )));
        }
        if bpc == 8 && width > MAX_WIDTH_8BIT {
            return Err(CudaError::InvalidArgument(format!(
                "8-bit plane width {width} > {MAX_WIDTH_8BIT}: libvmaf's 32-bit row sum could wrap"
            )));
        }
        let blocks = (height as u32).min(MAX_BLOCKS);
        let stream = Stream::new(ctx)?;
        let slot = || -> CudaResult<Slot> {
            Ok(Slot {
                host: None,
                partial: DeviceBuffer::new(ctx, blocks as usize * 8)?,
                sse: DeviceBuffer::new(ctx, 8)?,
                sse_host: PinnedBuffer::new(ctx, 8)?,
                done: Event::new(ctx, false)?,
            })
        };
        let slots = [slot()?, slot()?];
        Ok(GpuPsnr {
            stream,
            slots,
            kernels,
            ctx: ctx.clone(),
            width,
            height,
            bpc,
            blocks,
            next: 0,
            in_flight: VecDeque::new(),
            ready: VecDeque::new(),
            parallel_staging: true,
        })
    }

    fn bytes_per_sample(&self) -> usize {
        if self.bpc == 8 {
            1
        } else {
            2
        }
    }

    /// Queues a pair of host planes (the frame's luma, say). Returns once the samples are
    /// copied into pinned memory: the planes may be reused right away.
    pub fn submit_host(&mut self, reference: &Plane, distorted: &Plane) -> CudaResult<()> {
        for (what, p) in [("reference", reference), ("distorted", distorted)] {
            p.validate()
                .map_err(|e| CudaError::InvalidArgument(format!("{what} plane: {e}")))?;
            if (p.width, p.height, p.bpc) != (self.width, self.height, self.bpc) {
                return Err(CudaError::InvalidArgument(format!(
                    "{what} plane {}x{} {}-bit, expected {}x{} {}-bit",
                    p.width, p.height, p.bpc, self.width, self.height, self.bpc
                )));
            }
        }
        let slot = self.claim_slot()?;
        let result = self.stage_and_enqueue(slot, reference, distorted);
        self.settle(slot, result)
    }

    /// Queues a pair of device planes of this context, read in place.
    ///
    /// # Safety
    /// Both planes must be device memory of this context, hold their final samples (any
    /// producer's work on them complete), and stay valid and unwritten until this frame's
    /// result has been returned by [`GpuPsnr::finish`] (or `self` dropped).
    pub unsafe fn submit_device(
        &mut self,
        reference: DevicePlane,
        distorted: DevicePlane,
    ) -> CudaResult<()> {
        for (what, p) in [("reference", reference), ("distorted", distorted)] {
            p.validate()?;
            if (p.width, p.height, p.bytes_per_sample)
                != (self.width, self.height, self.bytes_per_sample())
            {
                return Err(CudaError::InvalidArgument(format!(
                    "{what} device plane {}x{} with {}-byte samples, expected {}x{} {}-bit",
                    p.width, p.height, p.bytes_per_sample, self.width, self.height, self.bpc
                )));
            }
        }
        let slot = self.claim_slot()?;
        // SAFETY: the planes' validity is this function's own contract.
        let result = unsafe { self.enqueue(slot, reference, distorted) };
        self.settle(slot, result)
    }

    /// Waits for every submitted frame and returns the results not yet returned, in
    /// submission order.
    pub fn finish(&mut self) -> CudaResult<Vec<PsnrFrame>> {
        while let Some(&oldest) = self.in_flight.front() {
            self.retire(oldest)?;
        }
        Ok(self.ready.drain(..).collect())
    }

    /// PSNR of one pair of host planes, synchronously (nothing else may be pending).
    pub fn compute_host(&mut self, reference: &Plane, distorted: &Plane) -> CudaResult<PsnrFrame> {
        self.expect_idle()?;
        self.submit_host(reference, distorted)?;
        self.single_result()
    }

    /// PSNR of one pair of device planes, synchronously (nothing else may be pending).
    ///
    /// # Safety
    /// As [`GpuPsnr::submit_device`], until this returns.
    pub unsafe fn compute_device(
        &mut self,
        reference: DevicePlane,
        distorted: DevicePlane,
    ) -> CudaResult<PsnrFrame> {
        self.expect_idle()?;
        // SAFETY: forwarded contract.
        unsafe { self.submit_device(reference, distorted) }?;
        self.single_result()
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Whether host planes are copied into pinned staging by rayon's threads (the default) or
    /// on the calling thread alone. One thread cannot keep up with a 4K frame's memory traffic.
    pub fn set_parallel_staging(&mut self, parallel: bool) {
        self.parallel_staging = parallel;
    }

    fn expect_idle(&self) -> CudaResult<()> {
        if self.in_flight.is_empty() && self.ready.is_empty() {
            Ok(())
        } else {
            Err(CudaError::InvalidArgument(
                "earlier submissions pending: call finish() first".into(),
            ))
        }
    }

    fn single_result(&mut self) -> CudaResult<PsnrFrame> {
        let mut frames = self.finish()?;
        match (frames.pop(), frames.is_empty()) {
            (Some(frame), true) => Ok(frame),
            _ => Err(CudaError::InvalidArgument(
                "expected exactly one result".into(),
            )),
        }
    }

    /// The slot for the next frame, waiting for (and keeping the result of) its previous use.
    fn claim_slot(&mut self) -> CudaResult<usize> {
        let slot = self.next;
        while self.in_flight.contains(&slot) {
            let oldest = self.in_flight[0];
            self.retire(oldest)?;
        }
        Ok(slot)
    }

    /// After a submission: on success the slot is in flight; on failure our stream is drained
    /// so nothing queued before the failure still reads the slot's buffers.
    fn settle(&mut self, slot: usize, result: CudaResult<()>) -> CudaResult<()> {
        match result {
            Ok(()) => {
                self.in_flight.push_back(slot);
                self.next = 1 - slot;
                Ok(())
            }
            Err(e) => {
                if let Err(sync) = self.stream.synchronize() {
                    eprintln!("vmafcuda: draining the PSNR stream after an error failed: {sync}");
                }
                Err(e)
            }
        }
    }

    fn retire(&mut self, slot: usize) -> CudaResult<()> {
        self.slots[slot].done.synchronize()?;
        self.in_flight.retain(|&s| s != slot);
        let sse = self.slots[slot].sse_host.typed::<u64>(1)?[0];
        let psnr = features::psnr::psnr_from_sse(sse, self.width * self.height, self.bpc);
        self.ready.push_back(PsnrFrame { sse, psnr });
        Ok(())
    }

    fn stage_and_enqueue(
        &mut self,
        slot: usize,
        reference: &Plane,
        distorted: &Plane,
    ) -> CudaResult<()> {
        let (w, h, bps) = (self.width, self.height, self.bytes_per_sample());
        if self.slots[slot].host.is_none() {
            let bytes = w * h * bps;
            self.slots[slot].host = Some(HostStage {
                reference: PinnedBuffer::new(&self.ctx, bytes)?,
                distorted: PinnedBuffer::new(&self.ctx, bytes)?,
                reference_dev: DevicePlaneBuf::new(&self.ctx, w, h, bps)?,
                distorted_dev: DevicePlaneBuf::new(&self.ctx, w, h, bps)?,
            });
        }
        let stage = self.slots[slot]
            .host
            .as_mut()
            .ok_or_else(|| CudaError::InvalidArgument("host staging missing".into()))?;
        // The slot is idle (claim_slot waited for its last use), so its staging is free.
        let parallel = self.parallel_staging && w * h * bps >= STAGE_PARALLEL_BYTES;
        stage_plane(&mut stage.reference, reference, w, h, parallel)?;
        stage_plane(&mut stage.distorted, distorted, w, h, parallel)?;
        // SAFETY: staging and device planes belong to this slot, which is not reused before its
        // completion event (claim_slot), and the stream is drained before they are dropped
        // (field order) or after a failed submission (settle).
        unsafe {
            stage
                .reference_dev
                .upload_pinned_async(&stage.reference, w * bps, &self.stream)?;
            stage
                .distorted_dev
                .upload_pinned_async(&stage.distorted, w * bps, &self.stream)?;
        }
        let (r, d) = (stage.reference_dev.plane(), stage.distorted_dev.plane());
        // SAFETY: the slot's own device planes, valid while the slot is (as above).
        unsafe { self.enqueue(slot, r, d) }
    }

    /// Queues both kernels and the read-back of the SSE for `slot`, then its completion event.
    ///
    /// # Safety
    /// `reference` and `distorted` are valid device planes of this context of our geometry that
    /// stay valid until the slot's event has completed.
    unsafe fn enqueue(
        &mut self,
        slot: usize,
        reference: DevicePlane,
        distorted: DevicePlane,
    ) -> CudaResult<()> {
        let s = &mut self.slots[slot];
        let (partial, sse) = (s.partial.ptr(), s.sse.ptr());
        // SAFETY: the planes are valid (caller); `partial` holds `blocks` values and `sse` one,
        // both this slot's, not reused before its event completed.
        unsafe {
            self.kernels.enqueue_sse(
                &self.stream,
                &reference,
                &distorted,
                false,
                self.bpc,
                partial,
                self.blocks,
                sse,
            )
        }?;
        // SAFETY: 8 bytes from our `sse` buffer into our 8-byte pinned buffer; both live until
        // the slot's event completed (field order, claim_slot, settle).
        unsafe { dtoh_async(s.sse_host.as_mut_ptr(), sse, 8, &self.stream) }?;
        s.done.record(&self.stream)
    }
}

/// Planes at least this large are staged by several threads, in bands of [`STAGE_ROWS`] rows
/// (an H100 host, 16 cores: a 1080p 8-bit pair, 2 MB a plane, one thread a plane, 0.28 ms; the
/// 10-bit pair, twice the bytes in bands, 0.14 ms; a 4K plane stages 2.5-4x faster in bands).
pub(crate) const STAGE_PARALLEL_BYTES: usize = 1 << 20;
/// Rows per staging task.
const STAGE_ROWS: usize = 32;

/// Copies a host plane's rows, tightly packed, into pinned staging.
pub(crate) fn stage_plane(
    dst: &mut PinnedBuffer,
    src: &Plane,
    w: usize,
    h: usize,
    parallel: bool,
) -> CudaResult<()> {
    fn copy_rows<'a, T: Copy + Send + Sync + 'a>(
        dst: &mut [T],
        w: usize,
        parallel: bool,
        row: impl Fn(usize) -> &'a [T] + Sync,
    ) {
        let band = |(i, chunk): (usize, &mut [T])| {
            for (k, out) in chunk.chunks_exact_mut(w).enumerate() {
                out.copy_from_slice(row(i * STAGE_ROWS + k));
            }
        };
        if parallel {
            dst.par_chunks_mut(w * STAGE_ROWS)
                .enumerate()
                .for_each(band);
        } else {
            dst.chunks_mut(w * STAGE_ROWS).enumerate().for_each(band);
        }
    }
    match src.samples {
        Samples::U8(_) => copy_rows(dst.typed_mut::<u8>(w * h)?, w, parallel, |y| src.row_u8(y)),
        Samples::U16(_) => copy_rows(dst.typed_mut::<u16>(w * h)?, w, parallel, |y| {
            src.row_u16(y)
        }),
    }
    Ok(())
}

/// PSNR of one pair of host planes on `ctx` (loads the kernels each call: for many frames use
/// [`GpuPsnr`]).
pub fn psnr_host(ctx: &Context, reference: &Plane, distorted: &Plane) -> CudaResult<PsnrFrame> {
    let mut gpu = GpuPsnr::new(ctx, reference.width, reference.height, reference.bpc)?;
    gpu.compute_host(reference, distorted)
}

/// PSNR of one pair of device planes of `bpc` bits on `ctx` (loads the kernels each call).
///
/// # Safety
/// As [`GpuPsnr::submit_device`], until this returns.
pub unsafe fn psnr_device(
    ctx: &Context,
    reference: DevicePlane,
    distorted: DevicePlane,
    bpc: u32,
) -> CudaResult<PsnrFrame> {
    let mut gpu = GpuPsnr::new(ctx, reference.width, reference.height, bpc)?;
    // SAFETY: forwarded contract.
    unsafe { gpu.compute_device(reference, distorted) }
}
