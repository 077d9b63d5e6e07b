//! Where a frame's time goes on the CUDA path: staging host frames into pinned memory (CPU), the
//! upload, ADM, VIF and motion, each measured alone, and the whole frame as the engine runs it,
//! all on the same content. Behind the stage table of `vmafcuda bench`.
//!
//! The features are built as [`GpuFeatures::new`] builds them and timed one at a time on one
//! stream, on frames already in device memory; the whole frame goes through [`GpuFeatures`]
//! itself (ADM, VIF and motion on three streams, overlapping, frames back to back), so the
//! features' times add up to more than the whole frame's. A stage's GPU time per frame is the
//! span between an event recorded before a frame's work and one recorded after it, summed over
//! the frames: gaps between frames (the GPU waiting for the host) are left out, but a frame whose
//! launches reach the GPU more slowly than it runs them (small pictures) counts the launches'
//! pace. The whole frame is the span of all timed frames over their number.

use std::time::Instant;

use crate::extract::FeaturePlan;
use crate::frame::{Plane, Samples};

use super::adm::GpuAdm;
use super::context::Context;
use super::engine::{stage_planes, DevicePicture, GpuFeatures, GpuKernels, KEPT, SLOTS};
use super::error::{CudaError, CudaResult};
use super::event::Event;
use super::memory::PinnedBuffer;
use super::motion::{GpuMotion, MotionPath};
use super::plane::{DevicePlane, DevicePlaneBuf};
use super::stream::Stream;
use super::vif::GpuVif;

/// Untimed frames before each measurement: the first launch of a kernel loads it, and the
/// first frames find their slots empty.
const WARMUP: usize = SLOTS + 2;
/// Frames whose events are in flight at once.
const RING: usize = 8;

/// Milliseconds per frame of each stage of the CUDA path.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// CPU time copying both lumas into pinned memory, as the host path does for every frame.
    pub staging: f64,
    /// GPU time of copying both lumas from pinned memory to the device (host path).
    pub upload: f64,
    /// GPU time of ADM (every ADM instance of the plan), alone on one stream.
    pub adm: f64,
    /// GPU time of VIF (every VIF instance of the plan), alone on one stream.
    pub vif: f64,
    /// GPU time of motion, alone on one stream.
    pub motion: f64,
    /// GPU time per frame through [`GpuFeatures`]: every feature of the plan, on its
    /// overlapping streams, frames back to back.
    pub whole: f64,
}

impl StageTimes {
    /// Each stage's median over `runs` (all zero for none).
    pub fn median(runs: &[StageTimes]) -> StageTimes {
        let median = |stage: fn(&StageTimes) -> f64| {
            let mut v: Vec<f64> = runs.iter().map(stage).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        StageTimes {
            staging: median(|t| t.staging),
            upload: median(|t| t.upload),
            adm: median(|t| t.adm),
            vif: median(|t| t.vif),
            motion: median(|t| t.motion),
            whole: median(|t| t.whole),
        }
    }
}

/// Times every stage `runs` times on `frames` frames each (after a few untimed ones) and returns
/// each stage's median. `pairs` are (reference, distorted) lumas of the plan's geometry, rotated
/// through: copied to the device once for the GPU stages, staged and uploaded frame by frame for
/// the host stages as [`GpuFeatures::submit_host`] does.
pub fn time_stages(
    ctx: &Context,
    plan: &FeaturePlan,
    pairs: &[(Plane, Plane)],
    frames: usize,
    runs: usize,
) -> CudaResult<StageTimes> {
    let (w, h, bpc) = (plan.width, plan.height, plan.bpc);
    if pairs.is_empty() || frames == 0 || runs == 0 {
        return Err(CudaError::InvalidArgument(format!(
            "stage timing of {} pairs, {frames} frames, {runs} runs",
            pairs.len()
        )));
    }
    for p in pairs.iter().flat_map(|(r, d)| [r, d]) {
        if (p.width, p.height, p.bpc) != (w, h, bpc) {
            return Err(CudaError::InvalidArgument(format!(
                "stage timing: a {}x{} {}-bit plane for a {w}x{h} {bpc}-bit plan",
                p.width, p.height, p.bpc
            )));
        }
    }
    let bps = if bpc == 8 { 1 } else { 2 };
    let kernels = GpuKernels::load(ctx)?;
    let device = {
        let stream = Stream::new(ctx)?;
        pairs
            .iter()
            .map(|(r, d)| Ok((to_device(ctx, r, &stream)?, to_device(ctx, d, &stream)?)))
            .collect::<CudaResult<Vec<_>>>()?
    };
    let planes: Vec<(DevicePlane, DevicePlane)> =
        device.iter().map(|(r, d)| (r.plane(), d.plane())).collect();
    let pinned_pair = || -> CudaResult<[PinnedBuffer; 2]> {
        Ok([
            PinnedBuffer::new(ctx, w * h * bps)?,
            PinnedBuffer::new(ctx, w * h * bps)?,
        ])
    };
    let mut pinned = (0..KEPT)
        .map(|_| pinned_pair())
        .collect::<CudaResult<Vec<_>>>()?;
    let device_pair = || -> CudaResult<(DevicePlaneBuf, DevicePlaneBuf)> {
        Ok((
            DevicePlaneBuf::new(ctx, w, h, bps)?,
            DevicePlaneBuf::new(ctx, w, h, bps)?,
        ))
    };
    let mut targets = (0..SLOTS)
        .map(|_| device_pair())
        .collect::<CudaResult<Vec<_>>>()?;
    let mut measured = Vec::with_capacity(runs);
    for _ in 0..runs {
        let staging = time_staging(&mut pinned, pairs, frames)?;
        let upload = time_upload(ctx, &pinned, &mut targets, w * bps, frames)?;
        // SAFETY: `planes` view `device`, buffers of this context holding their final samples
        // (copied synchronously above), alive and unwritten until this function returns.
        let adm = unsafe { time_adm(&kernels, plan, &planes, frames) }?;
        // SAFETY: as above.
        let vif = unsafe { time_vif(&kernels, plan, &planes, frames) }?;
        // SAFETY: as above.
        let motion = unsafe { time_motion(&kernels, plan, &planes, frames) }?;
        // SAFETY: as above.
        let whole = unsafe { time_whole(&kernels, plan, &planes, frames) }?;
        measured.push(StageTimes {
            staging,
            upload,
            adm,
            vif,
            motion,
            whole,
        });
    }
    Ok(StageTimes::median(&measured))
}

/// A copy of a host plane in device memory (waits for the copy).
fn to_device(ctx: &Context, p: &Plane, stream: &Stream) -> CudaResult<DevicePlaneBuf> {
    let bps = if p.bpc == 8 { 1 } else { 2 };
    let mut buf = DevicePlaneBuf::new(ctx, p.width, p.height, bps)?;
    match p.samples {
        Samples::U8(s) => buf.upload(s, p.stride, stream)?,
        Samples::U16(s) => buf.upload(s, p.stride, stream)?,
    }
    Ok(buf)
}

/// Sums the GPU spans of frames, each between an event recorded before the frame's work and one
/// recorded after it, with [`RING`] frames' events in flight.
struct FrameTimer {
    spans: Vec<(Event, Event)>,
    timed: usize,
    total_ms: f64,
}

impl FrameTimer {
    fn new(ctx: &Context) -> CudaResult<FrameTimer> {
        let spans = (0..RING)
            .map(|_| Ok((Event::new(ctx, true)?, Event::new(ctx, true)?)))
            .collect::<CudaResult<_>>()?;
        Ok(FrameTimer {
            spans,
            timed: 0,
            total_ms: 0.0,
        })
    }

    /// Before the next frame's work on `stream`.
    fn start(&mut self, stream: &Stream) -> CudaResult<()> {
        let k = self.timed % RING;
        if self.timed >= RING {
            self.collect(k)?;
        }
        self.spans[k].0.record(stream)
    }

    /// After that frame's work, on the stream it ends on.
    fn stop(&mut self, stream: &Stream) -> CudaResult<()> {
        self.spans[self.timed % RING].1.record(stream)?;
        self.timed += 1;
        Ok(())
    }

    fn collect(&mut self, k: usize) -> CudaResult<()> {
        let (start, end) = &self.spans[k];
        end.synchronize()?;
        self.total_ms += f64::from(start.elapsed_ms(end)?);
        Ok(())
    }

    /// Waits for the frames still in flight; milliseconds per timed frame.
    fn ms_per_frame(mut self) -> CudaResult<f64> {
        for i in self.timed.saturating_sub(RING)..self.timed {
            self.collect(i % RING)?;
        }
        Ok(self.total_ms / self.timed.max(1) as f64)
    }
}

/// Runs `enqueue(i)` (frame i's work on `stream`) for [`WARMUP`] + `frames` frames and returns
/// the GPU milliseconds per frame of the last `frames`.
fn time_frames(
    stream: &Stream,
    frames: usize,
    mut enqueue: impl FnMut(usize) -> CudaResult<()>,
) -> CudaResult<f64> {
    let mut timer = FrameTimer::new(stream.context())?;
    for i in 0..WARMUP + frames {
        let timed = i >= WARMUP;
        if timed {
            timer.start(stream)?;
        }
        enqueue(i)?;
        if timed {
            timer.stop(stream)?;
        }
    }
    timer.ms_per_frame()
}

/// CPU milliseconds per frame of staging both lumas into pinned memory, rotating through the
/// pinned sets as the host path does (no copy from them may be in flight).
fn time_staging(
    pinned: &mut [[PinnedBuffer; 2]],
    pairs: &[(Plane, Plane)],
    frames: usize,
) -> CudaResult<f64> {
    let mut started = Instant::now();
    for i in 0..WARMUP + frames {
        if i == WARMUP {
            started = Instant::now();
        }
        let (r, d) = &pairs[i % pairs.len()];
        let sets = pinned.len();
        stage_planes(&mut pinned[i % sets], &[r, d])?;
    }
    Ok(started.elapsed().as_secs_f64() * 1e3 / frames as f64)
}

/// GPU milliseconds per frame of uploading both lumas from pinned memory (rows `row_bytes`
/// apart) into device planes, as the host path does.
fn time_upload(
    ctx: &Context,
    pinned: &[[PinnedBuffer; 2]],
    targets: &mut [(DevicePlaneBuf, DevicePlaneBuf)],
    row_bytes: usize,
    frames: usize,
) -> CudaResult<f64> {
    // Made after the buffers it copies between and dropped before them: its drop waits for the
    // copies.
    let stream = Stream::new(ctx)?;
    let slots = targets.len();
    time_frames(&stream, frames, |i| {
        let [src_r, src_d] = &pinned[i % pinned.len()];
        let (dst_r, dst_d) = &mut targets[i % slots];
        // SAFETY: both sides are borrowed for this whole function, so neither is dropped nor the
        // pinned side written before `stream`, dropped at its end, has waited for the copies.
        unsafe { dst_r.upload_pinned_async(src_r, row_bytes, &stream) }?;
        // SAFETY: as above.
        unsafe { dst_d.upload_pinned_async(src_d, row_bytes, &stream) }
    })
}

/// GPU milliseconds per frame of the plan's ADM instances alone on one stream.
///
/// # Safety
/// The planes are device memory of the kernels' context with the plan's geometry, valid and
/// unwritten until this function returns.
unsafe fn time_adm(
    kernels: &GpuKernels,
    plan: &FeaturePlan,
    planes: &[(DevicePlane, DevicePlane)],
    frames: usize,
) -> CudaResult<f64> {
    let (ctx, (w, h, bpc)) = (kernels.context(), (plan.width, plan.height, plan.bpc));
    let adm = plan
        .adm
        .iter()
        .map(|(egl, _)| GpuAdm::new(ctx, kernels.adm.clone(), w, h, bpc, *egl, SLOTS))
        .collect::<CudaResult<Vec<_>>>()?;
    // SAFETY: forwarded from this function's contract; GpuAdm::enqueue takes such planes.
    unsafe { time_instances(ctx, adm, planes, frames, GpuAdm::enqueue) }
}

/// GPU milliseconds per frame of the plan's VIF instances alone on one stream.
///
/// # Safety
/// As [`time_adm`].
unsafe fn time_vif(
    kernels: &GpuKernels,
    plan: &FeaturePlan,
    planes: &[(DevicePlane, DevicePlane)],
    frames: usize,
) -> CudaResult<f64> {
    let (ctx, (w, h, bpc)) = (kernels.context(), (plan.width, plan.height, plan.bpc));
    let vif = plan
        .vif
        .iter()
        .map(|(egl, _)| GpuVif::new(ctx, kernels.vif.clone(), w, h, bpc, *egl, SLOTS))
        .collect::<CudaResult<Vec<_>>>()?;
    // SAFETY: forwarded from this function's contract; GpuVif::enqueue takes such planes.
    unsafe { time_instances(ctx, vif, planes, frames, GpuVif::enqueue) }
}

/// The enqueue of a feature that reads a reference and a distorted plane into a slot.
type PairEnqueue<F> =
    unsafe fn(&mut F, &Stream, &DevicePlane, &DevicePlane, usize) -> CudaResult<()>;

/// GPU milliseconds per frame of `instances` of one feature (one frame: each instance's
/// `enqueue`), alone on one stream.
///
/// # Safety
/// As [`time_adm`], and `enqueue` is the instances' own enqueue, whose contract that is.
unsafe fn time_instances<F>(
    ctx: &Context,
    mut instances: Vec<F>,
    planes: &[(DevicePlane, DevicePlane)],
    frames: usize,
    enqueue: PairEnqueue<F>,
) -> CudaResult<f64> {
    // Dropped before the instances: its drop waits for their work.
    let stream = Stream::new(ctx)?;
    time_frames(&stream, frames, |i| {
        let (r, d) = &planes[i % planes.len()];
        for f in &mut instances {
            // SAFETY: the planes are valid until this function returns (the caller's contract),
            // after `stream` has waited for this work; frames go in order on one stream.
            unsafe { enqueue(f, &stream, r, d, i % SLOTS) }?;
        }
        Ok(())
    })
}

/// GPU milliseconds per frame of motion alone on one stream (0 when the plan has none).
///
/// # Safety
/// As [`time_adm`].
unsafe fn time_motion(
    kernels: &GpuKernels,
    plan: &FeaturePlan,
    planes: &[(DevicePlane, DevicePlane)],
    frames: usize,
) -> CudaResult<f64> {
    if !plan.motion {
        return Ok(0.0);
    }
    let ctx = kernels.context();
    let mut motion = GpuMotion::new(
        ctx,
        kernels.motion.clone(),
        plan.width,
        plan.height,
        plan.bpc,
        SLOTS,
        MotionPath::for_size(plan.width, plan.height),
        false,
    )?;
    // Dropped before `motion`: its drop waits for the work that uses motion's buffers.
    let stream = Stream::new(ctx)?;
    time_frames(&stream, frames, |i| {
        let (r, _) = &planes[i % planes.len()];
        // SAFETY: the plane is valid until this function returns (the caller's contract), after
        // `stream` has waited for this work. The slots' sums are never read, so overwriting a
        // slot before its sum was read loses nothing.
        unsafe { motion.enqueue(&stream, r, i % SLOTS) }
    })
}

/// GPU milliseconds per frame through [`GpuFeatures`], as the device path scores: the span from
/// the end of the warm-up frames to the end of the last frame on every stream, over the frames
/// (the streams run frames back to back, so this is the engine's pace, not one frame's
/// latency).
///
/// # Safety
/// As [`time_adm`].
unsafe fn time_whole(
    kernels: &GpuKernels,
    plan: &FeaturePlan,
    planes: &[(DevicePlane, DevicePlane)],
    frames: usize,
) -> CudaResult<f64> {
    let mut features = GpuFeatures::new(kernels, plan)?;
    let (start, end) = (
        Event::new(kernels.context(), true)?,
        Event::new(kernels.context(), true)?,
    );
    let picture = |luma| DevicePicture {
        luma,
        chroma: None,
        bpc: plan.bpc,
    };
    for i in 0..WARMUP + frames {
        let (r, d) = planes[i % planes.len()];
        if i == WARMUP {
            // The span starts once the warm-up frames are over on every stream.
            features.join()?;
            start.record(features.main_stream())?;
        }
        // SAFETY: the planes are valid and unwritten until this function returns (the caller's
        // contract), after `features` has drained or, dropped, waited for its streams.
        unsafe { features.submit_device(&picture(r), &picture(d), i) }?;
    }
    features.join()?;
    end.record(features.main_stream())?;
    end.synchronize()?;
    let ms = f64::from(start.elapsed_ms(&end)?) / frames.max(1) as f64;
    features.drain()?;
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_is_taken_stage_by_stage() {
        let run = |staging, whole| StageTimes {
            staging,
            whole,
            ..StageTimes::default()
        };
        let m = StageTimes::median(&[run(3.0, 0.1), run(1.0, 0.3), run(2.0, 0.2)]);
        assert_eq!((m.staging, m.whole), (2.0, 0.2));
        assert_eq!(StageTimes::median(&[]), StageTimes::default());
    }
}
