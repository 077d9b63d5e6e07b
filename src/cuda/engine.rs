//! The GPU feature engine: every per-frame feature of a [`FeaturePlan`] (ADM and VIF per
//! enhancement-gain limit, motion, PSNR) on streams of one context (ADM, VIF, motion with
//! PSNR, and host uploads, see [`GpuFeatures`]), for frames in host memory (staged through
//! pinned buffers) or in device memory (read in place).
//!
//! Lifecycle (see also the crate docs):
//! * [`GpuKernels`]: the loaded modules, once per context; shared by every session and shot.
//! * [`GpuFeatures`]: one per scorer (a memory pool): creating it allocates the stream, the
//!   event, the device scratch of every feature and the pinned result slots; dropping it
//!   releases all of them (after draining the stream). Each shot starts a fresh libvmaf session
//!   on it with [`GpuFeatures::reset_session`]. Nothing is allocated per frame.
//! * [`HostStaging`]: pinned buffers for host frames, per scorer, made on first use; it keeps
//!   the last [`KEPT`] host frames, so a scorer can re-score them on the CPU after a GPU failure.
//!
//! The results are the integer sums the kernels produce, turned into doubles on the host by
//! the same functions as the CPU path, so both paths give identical numbers.

use std::sync::Arc;

use rayon::prelude::*;

use crate::extract::{FeaturePlan, SpatialFeatures};
use crate::fallback::HostPair;
use crate::features;
use crate::frame::{PictureRef, Plane, PlaneBuf};
use crate::pinned_picture::{PinnedPicture, PinnedPlane};

use super::adm::{AdmKernels, GpuAdm};
use super::context::Context;
use super::copy::dtoh_async;
use super::error::{CudaError, CudaResult};
use super::event::Event;
use super::graph::{Capture, GraphExec, Recorded, SlotGraph};
use super::host_timing::{self, Stage};
use super::memory::{DeviceBuffer, PinnedBuffer};
use super::motion::{GpuMotion, MotionKernels, MotionPath};
use super::plane::{DevicePlane, DevicePlaneBuf};
use super::psnr::{stage_plane, PsnrKernels, STAGE_PARALLEL_BYTES};
use super::record;
use super::stream::Stream;
use super::vif::{GpuVif, VifKernels};

/// Frames in flight, at most: while the GPU works on them, the host prepares (stages, enqueues)
/// the next. Engines whose frames' graphs overlap (`Lanes`) use `lane_slots` of them, the
/// others `SERIAL_SLOTS`.
pub const SLOTS: usize = 4;
/// Frames in flight of overlapping engines outside [`FOUR_LANE_PIXELS`]. Measured on an H100
/// (BENCHMARKS.md, 2026-11-27), overlapping graphs with three slots against two: 576x324 device
/// frames 25,300-34,400 fps against 22,000-25,300, pinned 21,600-29,600 against 18,200-24,800,
/// 960x540 pinned 21,500 against 17,000-17,300; a third slot for 1080p frames (one graph or
/// launch after another) measured 1-3% slower.
const THREE_LANES: usize = 3;
/// Frames above [`GRAPH_DEVICE_PIXELS`] and up to this size overlap on [`SLOTS`] lanes. Measured
/// on an H200 (BENCHMARKS.md, 2026-11-28, stop 45), device frames on four lanes against three:
/// 1920x1080 11,528-11,832 fps against 10,921-11,175, 1280x720 22,871 against 20,704, 1080p
/// 10-bit 10,541 against 10,164 (five and six lanes no better than four); 3840x2160 3,212-3,283
/// against 3,224-3,252, no clear gain for a fourth copy of 4K scratch (68 MB), so 4K keeps
/// three. Stop 49 measured 4K again (three alternated rounds in each of two device calls): four
/// lanes 3,505-3,527 against 3,435-3,495 in the first, 3,435-3,481 against 3,479-3,498 in the
/// second; still no clear gain. (2560x1440 was not measured.)
const FOUR_LANE_PIXELS: usize = 2560 * 1440;

/// Frames in flight of an overlapping engine with frames of `pixels` pixels: `setting` (the
/// value of `VMAFCUDA_LANES`: 3 or 4, the counts the defaults use) where given and valid, else
/// four lanes above [`GRAPH_DEVICE_PIXELS`] up to [`FOUR_LANE_PIXELS`] and three elsewhere.
fn lane_slots(pixels: usize, setting: Option<&str>) -> usize {
    if let Some(n) = setting
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| (THREE_LANES..=SLOTS).contains(n))
    {
        return n;
    }
    if pixels > GRAPH_DEVICE_PIXELS && pixels <= FOUR_LANE_PIXELS {
        SLOTS
    } else {
        THREE_LANES
    }
}
// Every lane count fits the engine's SLOTS-sized per-slot arrays.
const _: () = assert!(THREE_LANES <= SLOTS);

/// Frames in flight in engines whose frames run one after another.
const SERIAL_SLOTS: usize = 2;

/// A picture in device memory, read in place in the caller's layout: the luma plane and, for
/// PSNR, the chroma (8-bit: one byte per sample; 9..16-bit: little-endian `u16`, LSB-aligned or
/// MSB-aligned as each plane's [`DevicePlane::shift`] says).
#[derive(Clone, Copy, Debug)]
pub struct DevicePicture {
    pub luma: DevicePlane,
    pub chroma: Option<DeviceChroma>,
    pub bpc: u32,
}

/// The chroma of a [`DevicePicture`], at the size libvmaf scores PSNR on (4:2:0: floor(w/2) x
/// floor(h/2)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceChroma {
    /// Two planes, Cb and Cr (I420, Y444, I420_10LE, ...).
    Planar([DevicePlane; 2]),
    /// One semi-planar plane of CbCr pairs, Cb first (NV12, P010): `width` counts pairs, each
    /// row holds `2 * width` samples.
    Interleaved(DevicePlane),
}

impl DeviceChroma {
    /// Width and height of each chroma component.
    pub fn size(&self) -> (usize, usize) {
        match self {
            DeviceChroma::Planar([cb, _]) => (cb.width, cb.height),
            DeviceChroma::Interleaved(p) => (p.width, p.height),
        }
    }
}

impl DevicePicture {
    /// Checks every plane against the picture's bit depth: the luma (and chroma) sample size
    /// and shift (bpc + shift <= 16), equal chroma planes.
    pub fn validate(&self) -> CudaResult<()> {
        let bps = if self.bpc == 8 { 1 } else { 2 };
        let check = |what: &str, p: &DevicePlane, components: usize| -> CudaResult<()> {
            p.validate_components(components)
                .map_err(|e| CudaError::InvalidArgument(format!("{what}: {e}")))?;
            if p.bytes_per_sample != bps || self.bpc + p.shift > 16 {
                return Err(CudaError::InvalidArgument(format!(
                    "{what}: {} bytes/sample shifted by {} for {}-bit samples",
                    p.bytes_per_sample, p.shift, self.bpc
                )));
            }
            Ok(())
        };
        if !(8..=16).contains(&self.bpc) {
            return Err(CudaError::InvalidArgument(format!(
                "bit depth {}",
                self.bpc
            )));
        }
        check("luma", &self.luma, 1)?;
        match &self.chroma {
            None => {}
            Some(DeviceChroma::Planar([cb, cr])) => {
                check("Cb plane", cb, 1)?;
                check("Cr plane", cr, 1)?;
                if (cb.width, cb.height, cb.shift) != (cr.width, cr.height, cr.shift) {
                    return Err(CudaError::InvalidArgument(format!(
                        "Cb plane {}x{} (shift {}) and Cr plane {}x{} (shift {}) differ",
                        cb.width, cb.height, cb.shift, cr.width, cr.height, cr.shift
                    )));
                }
            }
            Some(DeviceChroma::Interleaved(p)) => check("CbCr plane", p, 2)?,
        }
        Ok(())
    }
}

/// The chroma plane pairs PSNR reads (reference, distorted, interleaved), when both pictures
/// have chroma: planar chroma is two pairs, interleaved chroma one pair read once for both
/// components. Layouts and sizes must agree.
fn chroma_pairs(
    reference: &DevicePicture,
    distorted: &DevicePicture,
) -> CudaResult<Vec<(DevicePlane, DevicePlane, bool)>> {
    Ok(match (&reference.chroma, &distorted.chroma) {
        (Some(rc), Some(dc)) if rc.size() != dc.size() => {
            return Err(CudaError::InvalidArgument(format!(
                "reference chroma {:?} and distorted chroma {:?} differ in size",
                rc.size(),
                dc.size()
            )));
        }
        (Some(DeviceChroma::Planar([ru, rv])), Some(DeviceChroma::Planar([du, dv]))) => {
            vec![(*ru, *du, false), (*rv, *dv, false)]
        }
        (Some(DeviceChroma::Interleaved(rc)), Some(DeviceChroma::Interleaved(dc))) => {
            vec![(*rc, *dc, true)]
        }
        (Some(_), Some(_)) => {
            return Err(CudaError::InvalidArgument(
                "reference and distorted chroma differ in layout (planar and interleaved): \
                 give both pictures the same one"
                    .into(),
            ));
        }
        _ => Vec::new(),
    })
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

/// Host frames whose pinned copies [`HostStaging`] keeps: the frames in flight ([`SLOTS`]), the
/// one before them and the one being staged. After a GPU failure these are what the CPU needs
/// to go on ([`HostStaging::copy_of`]): the lost frames, the frame before them (motion and
/// ADM's carried word need it) and the frame that was being submitted.
pub const KEPT: usize = SLOTS + 2;

/// Host frame pairs at least this large have their planes staged on several threads.
const STAGE_PAIR_PARALLEL_BYTES: usize = 1 << 20;

/// Pinned staging for host frames (a ring of [`KEPT`] sets: reference and distorted, luma and,
/// for PSNR, chroma) and the device planes they are uploaded to (one set per slot). Pinned
/// allocations take milliseconds: a shot engine built ahead of its shot
/// ([`crate::scorer::Rebuild::Full`]) gets its staging sized up front ([`HostStaging::with_shape`],
/// the shape of the shot before), so its first frame allocates nothing.
pub struct HostStaging {
    pinned: [Vec<PinnedBuffer>; KEPT],
    /// The frame each pinned set holds, once staged completely.
    held: [Option<Held>; KEPT],
    next_set: usize,
    planes: [Vec<DevicePlaneBuf>; SLOTS],
    ctx: Context,
}

/// A host plane's width, height and bit depth.
pub type PlaneDims = (usize, usize, u32);

/// Which frame a pinned set holds, and its planes' sizes in staging order: reference luma,
/// distorted luma, then (with chroma) reference cb, cr, distorted cb, cr.
#[derive(Clone)]
struct Held {
    tag: usize,
    planes: Vec<PlaneDims>,
    /// Pinned pictures uploaded in place ([`GpuFeatures::submit_pinned`]): the host copy is
    /// theirs (the set's own buffers were not written).
    pictures: Option<PinnedPair>,
}

/// A frame pair of [`PinnedPicture`]s, kept while in flight and as the host copy.
#[derive(Clone)]
struct PinnedPair {
    reference: Arc<PinnedPicture>,
    distorted: Arc<PinnedPicture>,
}

fn dims_bytes((width, height, bpc): PlaneDims) -> usize {
    width * height * if bpc == 8 { 1 } else { 2 }
}

fn plane_bytes(p: &Plane) -> usize {
    dims_bytes((p.width, p.height, p.bpc))
}

impl HostStaging {
    /// Empty; buffers are made for the first frame's planes.
    pub fn new(ctx: &Context) -> HostStaging {
        HostStaging {
            pinned: Default::default(),
            held: Default::default(),
            next_set: 0,
            planes: Default::default(),
            ctx: ctx.clone(),
        }
    }

    /// Staging with every buffer made for frames whose planes (in staging order) have these
    /// sizes ([`HostStaging::shape`] of a previous staging), for an engine of `slots` slots
    /// ([`GpuFeatures::slots`]); empty `shape`: as [`HostStaging::new`].
    pub fn with_shape(ctx: &Context, shape: &[PlaneDims], slots: usize) -> CudaResult<HostStaging> {
        let mut staging = HostStaging::new(ctx);
        if shape.is_empty() {
            return Ok(staging);
        }
        for set in 0..KEPT {
            staging.ensure_pinned(set, shape)?;
        }
        for slot in 0..slots.min(SLOTS) {
            staging.ensure_planes(slot, shape)?;
        }
        Ok(staging)
    }

    /// The sizes of the planes of the last frame staged, in staging order (empty before the
    /// first host frame).
    pub fn shape(&self) -> Vec<PlaneDims> {
        let last = (self.next_set + KEPT - 1) % KEPT;
        self.held[last]
            .as_ref()
            .map(|h| h.planes.clone())
            .unwrap_or_default()
    }

    fn ensure_pinned(&mut self, set: usize, dims: &[PlaneDims]) -> CudaResult<()> {
        let sized = self.pinned[set].len() == dims.len()
            && self.pinned[set]
                .iter()
                .zip(dims)
                .all(|(b, &d)| b.len() == dims_bytes(d));
        if sized {
            return Ok(());
        }
        self.pinned[set].clear();
        for &d in dims {
            self.pinned[set].push(PinnedBuffer::new(&self.ctx, dims_bytes(d))?);
        }
        Ok(())
    }

    fn ensure_planes(&mut self, slot: usize, dims: &[PlaneDims]) -> CudaResult<()> {
        let fits = self.planes[slot].len() == dims.len()
            && self.planes[slot]
                .iter()
                .zip(dims)
                .all(|(d, &(w, h, _))| (d.plane().width, d.plane().height) == (w, h));
        if fits {
            return Ok(());
        }
        self.planes[slot].clear();
        for &(w, h, bpc) in dims {
            let bps = if bpc == 8 { 1 } else { 2 };
            self.planes[slot].push(DevicePlaneBuf::new(&self.ctx, w, h, bps)?);
        }
        Ok(())
    }

    /// An owned copy of host frame `tag`, if it is one of the last [`KEPT`] host frames staged.
    /// Reads host memory only, so it works after any GPU failure.
    pub fn copy_of(&self, tag: usize) -> Option<HostPair> {
        let set = self
            .held
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.tag == tag))?;
        let held = self.held[set].as_ref()?;
        if let Some(p) = &held.pictures {
            return Some(HostPair::copy_of(&p.reference.view(), &p.distorted.view()));
        }
        let planes: Option<Vec<PlaneBuf>> = self.pinned[set]
            .iter()
            .zip(&held.planes)
            .map(|(b, &(w, h, bpc))| PlaneBuf::from_packed(b.as_slice(), w, h, bpc))
            .collect();
        HostPair::from_planes(planes?)
    }
}

/// Copies a frame pair's host planes into pinned buffers of their sizes, as every host frame is
/// staged: the planes side by side once the pair is big enough to be worth a thread each (the
/// copy into pinned memory bounds the host path at 1080p otherwise), and a plane split into
/// bands from [`STAGE_PARALLEL_BYTES`].
pub(crate) fn stage_planes(pinned: &mut [PinnedBuffer], planes: &[&Plane]) -> CudaResult<()> {
    let stage = |(dst, p): (&mut PinnedBuffer, &&Plane)| {
        stage_plane(
            dst,
            p,
            p.width,
            p.height,
            plane_bytes(p) >= STAGE_PARALLEL_BYTES,
        )
    };
    let pair_bytes: usize = planes.iter().map(|p| plane_bytes(p)).sum();
    if pair_bytes >= STAGE_PAIR_PARALLEL_BYTES {
        pinned
            .par_iter_mut()
            .zip(planes.par_iter())
            .map(stage)
            .collect()
    } else {
        pinned.iter_mut().zip(planes.iter()).try_for_each(stage)
    }
}

/// PSNR's partial sums and results (luma, cb, cr), per slot.
struct PsnrState {
    partial: DeviceBuffer,
    sse: DeviceBuffer,
    sse_host: PinnedBuffer,
    blocks: u32,
}

/// One frame's features as the GPU computed them (integer results already turned into the
/// CPU path's doubles).
#[derive(Clone, Debug)]
pub struct GpuFrame {
    /// The caller's tag (the scorer passes the frame index).
    pub tag: usize,
    pub spatial: SpatialFeatures,
    /// Motion sum to the previous frame of the session (`None` for its first frame).
    pub motion_sum: Option<u64>,
}

/// A frame's pictures on their way to the GPU ([`GpuFeatures::frame_work`]).
struct FrameWork<'p> {
    slot: usize,
    reference: &'p DevicePicture,
    distorted: &'p DevicePicture,
    /// PSNR's chroma plane pairs (see [`chroma_pairs`]).
    chroma_pairs: Vec<(DevicePlane, DevicePlane, bool)>,
}

/// Copies `a` and `b` of a feature's scratch, both mutable (distinct and in range: a pair's
/// two slots of an overlapping engine).
fn two_of<T>(v: &mut [T], a: usize, b: usize) -> CudaResult<[&mut T; 2]> {
    let n = v.len();
    v.get_disjoint_mut([a, b]).map_err(|e| {
        CudaError::InvalidArgument(format!("copies {a} and {b} of {n} for a pair: {e}"))
    })
}

/// What a slot holds while its frame is in flight.
struct InFlight {
    slot: usize,
    tag: usize,
    chroma_pixels: Option<usize>,
    launch: Launch,
}

/// How a frame's work was launched, which says which of its slot's events mark its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Launch {
    /// Separate launches on the three streams: `done`, `side_done` and `aux_done`.
    Streams,
    /// One graph on the main stream, which joins the others back: `done`.
    Graph,
    /// One graph on the slot's lane ([`Lanes`]), motion beside it on the aux stream: `done`
    /// (recorded on the lane) and `aux_done`.
    Overlapped,
}

/// Frames whose graphs overlap one another: each slot has its own copy of the ADM and VIF
/// scratch, and a slot's graph is launched on a stream of its own (slot 0: the main stream;
/// slot `k`: `streams[k - 1]`), so the next frame's graph starts while this one still runs.
/// Motion, which reads the previous frame's blurred reference, stays outside the graphs, on the
/// aux stream in frame order. A frame of 576x324 is a chain of short kernels that leaves most
/// SMs idle: measured on an H100 (BENCHMARKS.md, 2026-11-27), frames in device memory ran
/// 19,150 fps as graphs one after another and 24,200-36,600 overlapping with three slots
/// (two rates, about 24,000 or 35,000; cause not found). Larger frames in device memory
/// overlap too while their engine is the only one of the process with frames in flight
/// ([`Busy`]): a 1920x1080 frame's kernels leave parts of the GPU idle at their ends, which the
/// next frame fills (H100, 2026-11-28: 1280x720 12,933-14,769 -> 20,694-22,022 fps, 1920x1080
/// 10,001-10,165 -> 11,012-11,219, 10-bit 9,051 -> 10,096, 3840x2160 unchanged; four lanes
/// from 720p to 1440p since, see [`FOUR_LANE_PIXELS`]). Lanes are
/// made by at most [`OVERLAPPING_ENGINES`] engines at once, not for ADM geometries whose frames
/// carry a word of state ([`GpuAdm::carries_state`]): those need frame order.
struct Lanes {
    streams: Vec<Stream>,
    /// Orders the lanes after the main stream, or the main stream after a lane.
    joined: Event,
    _ticket: OverlapTicket,
}

/// [`GpuFeatures::launch_stream_of`] on the engine's fields.
fn launch_stream<'a>(
    lanes: &'a Option<Lanes>,
    main: &'a Stream,
    slot: usize,
    launch: Launch,
) -> &'a Stream {
    match (launch, lanes) {
        (Launch::Overlapped, Some(l)) => l.of(slot, main),
        _ => main,
    }
}

/// Engines of this process whose graphs overlap, at most [`OVERLAPPING_ENGINES`].
static OVERLAPPING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The engines of this process that may overlap their frames' graphs at once: with full
/// rebuilds, a scorer's current engine and the next one, for two scorers. More scorers fill
/// the GPU by themselves, and overlapping only adds streams and frames in flight there; an
/// engine that could overlap but finds no place left uses no graphs at all (with
/// [`GraphUse::Auto`]): 16 and 64 threads capturing and updating graphs contend in the driver.
/// Measured on an H100 at 576x324 in one call (BENCHMARKS.md, 2026-11-27, midday), aggregate
/// fps with those engines running graphs one after another against plain launches: 16 scorers
/// 27,500-29,400 against 35,300-35,500, 64 scorers 30,500-31,000 against 36,100-36,900 (every
/// engine without graphs: 38,200-38,800 and 36,700-37,300; 4 scorers: 32,200-32,700 before,
/// 31,200-31,400 now, 30,100-30,300 without graphs).
///
/// Earlier (BENCHMARKS.md, 2026-11-27, late morning), aggregate fps at 576x324: with every
/// engine overlapping against none, 1 scorer 25,300-28,100 against 18,700-18,900, 16 scorers
/// 30,700-31,400 against 34,800-35,300; with this limit against none (another machine), 1
/// scorer 22,200-22,800 against 18,500-18,700, 16 scorers 26,300-29,600 against 28,800-30,200,
/// 64 scorers 30,100-32,400 against 31,300-31,800.
const OVERLAPPING_ENGINES: usize = 4;

/// One of the [`OVERLAPPING_ENGINES`] places, held by an engine's [`Lanes`] (taken when the
/// engine is built, so scorers that start together count one another).
struct OverlapTicket(());

impl OverlapTicket {
    fn take() -> Option<OverlapTicket> {
        use std::sync::atomic::Ordering;
        OVERLAPPING
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < OVERLAPPING_ENGINES).then_some(n + 1)
            })
            .ok()
            .map(|_| OverlapTicket(()))
    }
}

impl Drop for OverlapTicket {
    fn drop(&mut self) {
        OVERLAPPING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Engines of this process with frames in flight (see [`Busy`]).
static BUSY: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Held by an engine while it has frames in flight: frames above [`GRAPH_DEVICE_PIXELS`]
/// overlap only while no other engine of the process has any. One such frame fills much of
/// the GPU; two scorers fill it by themselves, and overlapping their frames only adds
/// contention (H100, 1920x1080 device frames, aggregate fps with every engine overlapping
/// against none: 2 scorers 10,933 against 11,607, 16 scorers 10,570 against 10,923; one
/// scorer 10,918-10,996 against 8,892-10,040; BENCHMARKS.md, 2026-11-28).
struct Busy(());

impl Busy {
    fn take() -> Busy {
        BUSY.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Busy(())
    }

    /// Whether an engine holding `held` (or not) is the only one with frames in flight.
    fn alone(held: &Option<Busy>) -> bool {
        BUSY.load(std::sync::atomic::Ordering::SeqCst) <= usize::from(held.is_some())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Lanes {
    /// The stream of `slot`'s graphs: `main` for slot 0.
    fn of<'a>(&'a self, slot: usize, main: &'a Stream) -> &'a Stream {
        slot.checked_sub(1).map_or(main, |k| &self.streams[k])
    }
}

/// A frame's work as one CUDA graph per slot ([`super::graph`]): captured every frame, the
/// slot's executable graph updated with it, launched on the main stream. The events fork the
/// other two streams off the main one inside the capture and join them back.
struct Graphs {
    /// Every frame in device memory too, not only uploaded ones and those that overlap
    /// ([`GraphUse`], [`launch_for`]).
    device_frames: bool,
    /// Frames are recorded, and replay their slot's graph when they have its shape
    /// ([`super::graph::SlotGraph::Replayed`]); else every frame is captured.
    replay: bool,
    execs: Vec<Option<SlotGraph>>,
    fork: Event,
    side_joined: Event,
    aux_joined: Event,
    /// How the last frame was launched: a frame launched another way after it needs a
    /// barrier between the streams ([`barrier`]).
    last_launch: Option<Launch>,
    /// The barrier's events: one per stream the frames run on ([`GpuFeatures::streams`]).
    handover: Vec<Event>,
}

/// Whether frames are recorded and replay their slot's graph ([`super::graph::SlotGraph`]):
/// only where `setting` (the value of `VMAFCUDA_GRAPH_REPLAY`) is `1`, for now. Measured on an
/// H200 (BENCHMARKS.md, 2026-11-29, stop 54): every CUDA suite exact with it; 176x144 device
/// frames 49,559-56,334 fps against 34,211-51,570 captured in one call, 38,258 / 46,419
/// against 40,235 / 31,115 in another; 576x324 no clear change; but the
/// process's bytes in use grow at first with it (1,000 full rebuilds at 1920x1080: 53.6 and
/// 33.5 B per rebuild in the two halves, against 5.4 and 1.5 without), levelling off over
/// longer runs (6,000: 8.6 and 2.0), and that growth is not yet explained.
fn replay_wanted(setting: Option<&str>) -> bool {
    setting.map(str::trim) == Some("1")
}

/// Which frames an engine launches as one CUDA graph each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GraphUse {
    Never,
    /// Frames uploaded from the host (host and pinned pictures) at every size, frames in
    /// device memory up to [`GRAPH_DEVICE_PIXELS`], and larger ones while they overlap
    /// ([`Lanes`]): where graphs were measured faster.
    Auto,
    Always,
}

/// The largest frame in device memory [`GraphUse::Auto`] launches as a graph also when it
/// cannot overlap the next one (and the largest uploaded frame whose graphs overlap). Measured
/// on an H100 (BENCHMARKS.md, 2026-11-27), graphs one after another against separate
/// launches, frames in device memory: 576x324 +21-25%, 960x540 -1%, 1280x720 -3%, 1920x1080
/// -4%, 3840x2160 +1% (a graph runs a frame's three streams' work as one unit, so a frame no
/// longer overlaps the next one's start, which costs more than the launches it saves at the
/// middle sizes). Uploaded frames gained at every size (1080p +8%, 4K +12-16%).
const GRAPH_DEVICE_PIXELS: usize = 960 * 540;

/// What decides how a frame is launched ([`launch_for`]).
#[derive(Clone, Copy, Debug)]
struct LaunchCase {
    /// The engine's graphs ([`Graphs::device_frames`]), if it has any.
    graph_device_frames: Option<bool>,
    /// The engine has overlap lanes ([`Lanes`]).
    lanes: bool,
    /// The frame is at most [`GRAPH_DEVICE_PIXELS`].
    small: bool,
    /// The frame is uploaded from the host (host or pinned pictures).
    uploaded: bool,
}

/// How a frame is launched. Small frames overlap wherever the engine has lanes. Uploaded frames
/// above GRAPH_DEVICE_PIXELS keep their graphs one after another: a slot's upload waits for the
/// slot's last frame, and while graphs overlap, frames end later (1920x1080 pinned pictures:
/// 7,134 fps one after another, 5,143 overlapping; H100). Frames of that size in device memory
/// overlap while the engine is the only one of the process with frames in flight (`alone`, see
/// [`Busy`]), else they are separate launches (as graphs one after another they lose 4% at
/// 1080p: [`GRAPH_DEVICE_PIXELS`]) unless every frame is a graph ([`GraphUse::Always`]).
fn launch_for(case: LaunchCase, alone: impl FnOnce() -> bool) -> Launch {
    let overlap = case.lanes && (case.small || (!case.uploaded && alone()));
    let graphed = case
        .graph_device_frames
        .is_some_and(|device_frames| case.uploaded || device_frames || overlap);
    match (graphed, overlap) {
        (false, _) => Launch::Streams,
        (true, false) => Launch::Graph,
        (true, true) => Launch::Overlapped,
    }
}

/// Orders everything queued so far on each of `streams` before anything queued on any of them
/// afterwards (one event per stream, waited for by the others).
fn barrier(events: &[Event], streams: &[&Stream]) -> CudaResult<()> {
    for (e, s) in events.iter().zip(streams) {
        e.record(s)?;
    }
    for (k, e) in events.iter().enumerate() {
        for (j, s) in streams.iter().enumerate() {
            if j != k {
                e.wait_in(s)?;
            }
        }
    }
    Ok(())
}

/// `VMAFCUDA_CUDA_GRAPH_OVERLAP=0`: graphs of consecutive frames one after another on the main
/// stream ([`Launch::Graph`]) even where they could overlap ([`Lanes`]); for measurements.
fn overlap_allowed() -> bool {
    std::env::var("VMAFCUDA_CUDA_GRAPH_OVERLAP").as_deref() != Ok("0")
}

/// `VMAFCUDA_CUDA_GRAPHS=0` (never), `1` (every frame), anything else or unset: [`GraphUse::Auto`].
fn graph_use() -> GraphUse {
    match std::env::var("VMAFCUDA_CUDA_GRAPHS").as_deref() {
        Ok("0") => GraphUse::Never,
        Ok("1") => GraphUse::Always,
        _ => GraphUse::Auto,
    }
}

/// The per-frame features on the GPU, for one geometry and plan. See the module docs.
///
/// ADM runs on one stream, VIF on a second, motion and PSNR on a third (they share nothing
/// within a frame), so their kernels overlap on the GPU, and each stream goes on to the next
/// frame as soon as its own part of the frame is queued: a frame's ADM overlaps the previous
/// frame's VIF. Host frames are uploaded on a fourth stream that the three wait for. A frame is
/// complete when the three streams' events for its slot are. Up to [`SLOTS`] frames are in
/// flight.
pub struct GpuFeatures {
    // Drop order: the streams first (their drop waits for pending work), then what the work
    // used.
    stream: Stream,
    side: Stream,
    aux: Stream,
    copy: Stream,
    /// Graphs of consecutive frames overlap (see [`Lanes`]).
    lanes: Option<Lanes>,
    /// Per slot: ADM's, VIF's and motion + PSNR's part of the frame is over.
    done: Vec<Event>,
    side_done: Vec<Event>,
    aux_done: Vec<Event>,
    /// Per slot: the host frame's upload is over (host frames only).
    staged: Vec<Event>,
    /// The plan's ADM and VIF instances, per copy of their scratch: one copy, or one per slot
    /// when graphs overlap ([`Lanes`]; slot `s` uses copy `s % copies`).
    adm: Vec<Vec<GpuAdm>>,
    vif: Vec<Vec<GpuVif>>,
    motion: GpuMotion,
    psnr: Option<PsnrState>,
    kernels: GpuKernels,
    plan: FeaturePlan,
    in_flight: std::collections::VecDeque<InFlight>,
    /// Held while `in_flight` is not empty.
    busy: Option<Busy>,
    /// Slots in use: with lanes (also for frames that do not overlap) [`lane_slots`], else
    /// [`SERIAL_SLOTS`].
    slots: usize,
    next_slot: usize,
    graphs: Option<Graphs>,
    /// Graphs run their kernels at their capture streams' priorities ([`First::any`]).
    node_priority: bool,
    /// Frames in device memory go to the GPU in pairs ([`pairs_wanted`]).
    pairs: bool,
    /// A pair's first frame, its slot claimed, waiting for the second (or for a flush:
    /// [`GpuFeatures::flush_pending`]).
    pending: Option<Pending>,
}

/// A frame held for pairing ([`GpuFeatures::pending`]).
struct Pending {
    slot: usize,
    tag: usize,
    reference: DevicePicture,
    distorted: DevicePicture,
}

/// The largest frame whose device-resident frames go to the GPU in pairs: two frames in one
/// graph, each kernel launched once for both (its grid two deep). A small frame's kernels leave
/// most of the GPU idle, and its rate is set by how many launches and graphs the GPU and the
/// host get through, not by its pixels: measured on an H200 (BENCHMARKS.md, 2026-11-29, stop
/// 53), 176x144 and 576x324 frames ran at the same two rates (about 40,000 and 26,000 fps),
/// and 576x324 graphs without any kernels at 67,000-72,000. Below this size every VIF scale
/// runs its latency kernel, which has a paired entry (`*_fine_x2`). `VMAFCUDA_PAIRS=0` turns
/// pairing off.
const PAIR_PIXELS: usize = 300_000;

/// Whether an engine pairs its frames: overlapping graphs ([`Lanes`]) of frames below
/// [`PAIR_PIXELS`], unless `setting` (the value of `VMAFCUDA_PAIRS`) is `0`.
fn pairs_wanted(lanes: bool, pixels: usize, setting: Option<&str>) -> bool {
    lanes && pixels < PAIR_PIXELS && setting.map(str::trim) != Some("0")
}

/// Frames above this size run VIF's work first: its stream (and the VIF kernels of overlapping
/// graphs) has the greatest priority, so the GPU starts VIF's blocks before ADM's and motion's
/// whenever both wait. Measured on an H200 (BENCHMARKS.md, 2026-11-28, stop 47), seven
/// alternated rounds: 3840x2160 device frames 3,275-3,330 fps against 3,217-3,276 with equal
/// priorities (+1.7% on the means, every round faster); at 1920x1080 VIF first (11,646 / 11,685
/// against 11,736 / 11,747) and ADM first (11,460-11,490) were slower, motion first no
/// different then (stop 52's kernels measured it faster: [`MOTION_FIRST_PIXELS`]), so frames up
/// to 2560x1440 (not measured) keep VIF at ADM's priority.
/// Engines that found no place among the [`OVERLAPPING_ENGINES`] (many scorers at once) run VIF
/// first from [`GRAPH_DEVICE_PIXELS`] up: measured on an H200 (BENCHMARKS.md, 2026-11-29, stop
/// 51), 16 concurrent 1920x1080 scorers, seven alternated rounds, 11,906-12,154 fps aggregate
/// (median 12,093) against 11,861-12,071 (median 11,951) with equal priorities; faster in six
/// rounds, equal in one. (Every engine VIF first, the overlapping four included: 12,031-12,274
/// in five runs, but a single 1080p 10-bit engine was 2.5% slower that way at stop 49.)
/// `VMAFCUDA_PRIORITY` overrides the choice (see [`first_features`]).
const VIF_FIRST_PIXELS: usize = 2560 * 1440;
/// Frames above this size also run motion first (with VIF where VIF goes first): the motion
/// kernel waits on memory more than it computes, and started early its waits overlap the other
/// features' work instead of ending the frame. Measured on an H200 (BENCHMARKS.md, 2026-11-29,
/// stop 52; the kernels of stop 51), against the rules before it, alternated in four device
/// calls: 1920x1080 10-bit device frames faster in nine rounds of nine (median 11,622 fps
/// against 11,496), 8-bit in five of nine (median 12,805 against 12,675), 2560x1440 in three of
/// three (7,449-7,530 against 7,418-7,478), 3840x2160 (VIF and motion first against VIF alone)
/// in four of five (3,565-3,613 against 3,490-3,580), 16 x 1920x1080 in two of two (12,296 /
/// 12,264 against 12,222 / 12,197). Smaller frames were slower with it: 1280x720 21,563-24,023
/// against 23,649-24,489, 576x324 21,205 / 24,846 against 24,885 / 32,160; they keep equal
/// priorities. (VIF first as well at 1080p was slower at both depths: 10-bit 11,303-11,599
/// against 11,539-11,621, 8-bit 12,177-12,606 against 12,721-13,078.)
const MOTION_FIRST_PIXELS: usize = 1280 * 720;

/// Which features' streams the GPU schedules first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct First {
    adm: bool,
    vif: bool,
    motion: bool,
}

/// The features scheduled first for frames of `pixels` pixels: `setting` (the value of
/// `VMAFCUDA_PRIORITY`: a comma list of `adm`, `vif` and `motion`, or `none`) where given, else
/// VIF above [`VIF_FIRST_PIXELS`], and above [`GRAPH_DEVICE_PIXELS`] for a `crowded` engine (one
/// that could overlap its frames but found no place among the [`OVERLAPPING_ENGINES`]); motion
/// above [`MOTION_FIRST_PIXELS`].
fn first_features(pixels: usize, crowded: bool, setting: Option<&str>) -> First {
    match setting {
        Some(list) => {
            let mut first = First::default();
            for name in list.split(',') {
                match name.trim() {
                    "adm" => first.adm = true,
                    "vif" => first.vif = true,
                    "motion" => first.motion = true,
                    _ => {}
                }
            }
            first
        }
        None => First {
            vif: pixels > VIF_FIRST_PIXELS || (crowded && pixels > GRAPH_DEVICE_PIXELS),
            motion: pixels > MOTION_FIRST_PIXELS,
            ..First::default()
        },
    }
}

impl First {
    /// Whether any feature goes first (else every stream and graph is made as without
    /// priorities).
    fn any(self) -> bool {
        self != First::default()
    }
}

impl GpuFeatures {
    pub fn new(kernels: &GpuKernels, plan: &FeaturePlan) -> CudaResult<GpuFeatures> {
        let ctx = kernels.context();
        let (w, h, bpc) = (plan.width, plan.height, plan.bpc);
        let adm_copy = || {
            plan.adm
                .iter()
                .map(|(egl, _)| GpuAdm::new(ctx, kernels.adm.clone(), w, h, bpc, *egl, SLOTS))
                .collect::<CudaResult<Vec<_>>>()
        };
        let vif_copy = || {
            plan.vif
                .iter()
                .map(|(egl, _)| GpuVif::new(ctx, kernels.vif.clone(), w, h, bpc, *egl, SLOTS))
                .collect::<CudaResult<Vec<_>>>()
        };
        let graph_use = graph_use();
        let graphs = graph_use != GraphUse::Never;
        let mut adm = vec![adm_copy()?];
        let mut vif = vec![vif_copy()?];
        let small = w * h <= GRAPH_DEVICE_PIXELS;
        let could_overlap =
            graphs && overlap_allowed() && !adm[0].iter().any(GpuAdm::carries_state);
        let ticket = could_overlap.then(OverlapTicket::take).flatten();
        // (Streams are made after the ticket: a crowded engine's priorities depend on it.)
        let crowded = could_overlap && ticket.is_none();
        let first = first_features(
            w * h,
            crowded,
            std::env::var("VMAFCUDA_PRIORITY").ok().as_deref(),
        );
        // Stream priorities: the context's greatest for the features that go first, else 0
        // (the default).
        let top = if first.any() {
            Stream::greatest_priority(ctx)?
        } else {
            0
        };
        let level = |on: bool| if on { top } else { 0 };
        let stream = Stream::with_priority(ctx, level(first.adm))?;
        let side = Stream::with_priority(ctx, level(first.vif))?;
        let aux = Stream::with_priority(ctx, level(first.motion))?;
        let copy = Stream::new(ctx)?;
        let events =
            || -> CudaResult<Vec<Event>> { (0..SLOTS).map(|_| Event::new(ctx, false)).collect() };
        let (done, side_done, aux_done, staged) = (events()?, events()?, events()?, events()?);
        // With the places taken, many scorers fill the GPU by themselves, and their threads'
        // captures and graph updates only contend in the driver: such an engine queues its
        // small frames as plain launches (see OVERLAPPING_ENGINES). Above GRAPH_DEVICE_PIXELS
        // it keeps graphs for uploaded frames (one after another) and plain launches for
        // frames in device memory, as before overlapping reached those sizes.
        let graphs = graphs && !(small && crowded && graph_use == GraphUse::Auto);
        let pairs = pairs_wanted(
            ticket.is_some() && graphs,
            w * h,
            std::env::var("VMAFCUDA_PAIRS").ok().as_deref(),
        ) && adm[0].iter().all(GpuAdm::pairable)
            && vif[0].iter().all(GpuVif::pairable);
        // Pairs take two slots each: four, two pairs in flight (VMAFCUDA_LANES does not apply).
        let lane_slots = if pairs {
            SLOTS
        } else {
            lane_slots(w * h, std::env::var("VMAFCUDA_LANES").ok().as_deref())
        };
        let lanes = match ticket {
            Some(ticket) => {
                for _ in 1..lane_slots {
                    adm.push(adm_copy()?);
                    vif.push(vif_copy()?);
                }
                Some(Lanes {
                    streams: (1..lane_slots)
                        .map(|_| Stream::with_priority(ctx, level(first.adm)))
                        .collect::<CudaResult<_>>()?,
                    joined: Event::new(ctx, false)?,
                    _ticket: ticket,
                })
            }
            None => None,
        };
        let path = MotionPath::for_size(w, h);
        let motion = GpuMotion::new(ctx, kernels.motion.clone(), w, h, bpc, SLOTS, path, pairs)?;
        let psnr = if plan.psnr {
            let blocks = super::psnr::MAX_BLOCKS.min(h as u32).max(1);
            Some(PsnrState {
                partial: DeviceBuffer::new(ctx, 8 * blocks as usize * 3 * SLOTS)?,
                sse: DeviceBuffer::new(ctx, 8 * 3 * SLOTS)?,
                sse_host: PinnedBuffer::new(ctx, 8 * 3 * SLOTS)?,
                blocks,
            })
        } else {
            None
        };
        // The driver sets a stream or an event up for real the first time work is queued on
        // it; do that here, where the engine is built (on the rebuild thread with a full
        // rebuild), not at the first frame of the shot.
        for (events, s) in [
            (&done, &stream),
            (&side_done, &side),
            (&aux_done, &aux),
            (&staged, &copy),
        ] {
            for e in events {
                e.record(s)?;
            }
            s.synchronize()?;
        }
        if let Some(l) = &lanes {
            for s in &l.streams {
                l.joined.record(s)?;
                s.synchronize()?;
            }
        }
        for a in adm.iter_mut().flatten() {
            a.set_captured(graphs);
        }
        for v in vif.iter_mut().flatten() {
            v.set_captured(graphs);
        }
        let streams = 3 + lanes.as_ref().map_or(0, |l| l.streams.len());
        let slots = if lanes.is_some() {
            lane_slots
        } else {
            SERIAL_SLOTS
        };
        Ok(GpuFeatures {
            stream,
            side,
            aux,
            copy,
            lanes,
            done,
            side_done,
            aux_done,
            staged,
            adm,
            vif,
            motion,
            psnr,
            kernels: kernels.clone(),
            plan: plan.clone(),
            in_flight: std::collections::VecDeque::with_capacity(SLOTS),
            busy: None,
            slots,
            next_slot: 0,
            node_priority: first.any(),
            pairs,
            pending: None,
            graphs: if graphs {
                Some(Graphs {
                    device_frames: graph_use == GraphUse::Always || small,
                    replay: super::module::launches_recordable()
                        && replay_wanted(std::env::var("VMAFCUDA_GRAPH_REPLAY").ok().as_deref()),
                    execs: (0..SLOTS).map(|_| None).collect(),
                    fork: Event::new(ctx, false)?,
                    side_joined: Event::new(ctx, false)?,
                    aux_joined: Event::new(ctx, false)?,
                    last_launch: None,
                    handover: (0..streams)
                        .map(|_| Event::new(ctx, false))
                        .collect::<CudaResult<_>>()?,
                })
            } else {
                None
            },
        })
    }

    /// Starts a new libvmaf session on the same buffers (a new shot): the next frame has no
    /// motion predecessor and ADM's carried scratch words are back to zero. Queued on the
    /// streams, so it is ordered after the last frame's work and before the next frame's.
    pub fn reset_session(&mut self) -> CudaResult<()> {
        // A held frame belongs to the session that ends.
        self.flush_pending()?;
        self.motion.reset();
        for adm in self.adm.iter_mut().flatten() {
            adm.reset(&self.stream)?;
        }
        if let Some(l) = &self.lanes {
            // The copies' next frames may be graphs on the lanes.
            l.joined.record(&self.stream)?;
            for s in &l.streams {
                l.joined.wait_in(s)?;
            }
        }
        Ok(())
    }

    /// ADM's stream: [`GpuFeatures::join`] makes it wait for the others, so events recorded on
    /// it time the engine's GPU work ([`super::stage_timing`]).
    pub(super) fn main_stream(&self) -> &Stream {
        &self.stream
    }

    /// Makes the main stream wait for everything queued so far on the other streams (the last
    /// frame's VIF, motion and PSNR): work queued on it afterwards comes after all of it.
    pub(super) fn join(&mut self) -> CudaResult<()> {
        self.flush_pending()?;
        let slot = (self.next_slot + self.slots - 1) % self.slots;
        for (e, s) in [
            (&self.side_done[slot], &self.side),
            (&self.aux_done[slot], &self.aux),
        ] {
            e.record(s)?;
            e.wait_in(&self.stream)?;
        }
        if let Some(l) = &self.lanes {
            for s in &l.streams {
                l.joined.record(s)?;
                l.joined.wait_in(&self.stream)?;
            }
        }
        Ok(())
    }

    /// Every stream frames run on: main, side, aux and, with overlapping graphs, the lanes.
    fn streams(&self) -> Vec<&Stream> {
        let mut streams = vec![&self.stream, &self.side, &self.aux];
        streams.extend(self.lanes.iter().flat_map(|l| &l.streams));
        streams
    }

    /// Frames in flight at most: [`SLOTS`] with overlapping graphs, else `SERIAL_SLOTS`.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Frames submitted whose results have not been returned yet (a frame held for pairing
    /// included).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len() + usize::from(self.pending.is_some())
    }

    /// Queues a pair of host pictures (copied into pinned staging before this returns, so they
    /// may be reused at once). Returns the frames whose results had to be collected to free a
    /// slot (oldest first).
    pub fn submit_host(
        &mut self,
        staging: &mut HostStaging,
        reference: &PictureRef,
        distorted: &PictureRef,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        // One push of the context for the whole call: the driver calls inside find it current.
        // SAFETY: self.kernels keeps the context alive beyond this call.
        let _bound = unsafe { self.kernels.context().bind_unbounded() }?;
        let with_chroma =
            self.plan.psnr && reference.chroma.is_some() && distorted.chroma.is_some();
        let host_planes = self.host_planes(staging, reference, distorted)?;
        // The copy into pinned memory first, while the GPU still works on the frames in
        // flight; then the slot (which waits for the frame that last held it). The pinned set
        // was last uploaded for the frame KEPT submissions ago, which has been collected:
        // claim_slot of the previous submission retired every frame up to SLOTS before it, and
        // KEPT > SLOTS + 1. The set holds this frame (for a replay on the CPU) only once the
        // frame has a slot: if claiming fails, the caller scores this frame itself.
        let set = staging.next_set;
        staging.next_set = (set + 1) % KEPT;
        staging.held[set] = None;
        let dims: Vec<PlaneDims> = host_planes
            .iter()
            .map(|p| (p.width, p.height, p.bpc))
            .collect();
        staging.ensure_pinned(set, &dims)?;
        stage_planes(&mut staging.pinned[set], &host_planes)?;
        let (slot, mut out) = self.claim_slot()?;
        staging.ensure_planes(slot, &dims)?;
        staging.held[set] = Some(Held {
            tag,
            planes: dims,
            pictures: None,
        });
        let HostStaging { pinned, planes, .. } = staging;
        let sources: Vec<(&PinnedBuffer, usize, usize)> = pinned[set]
            .iter()
            .zip(&host_planes)
            .map(|(b, p)| (b, 0, p.width))
            .collect();
        // SAFETY: the pinned set was last uploaded from KEPT host frames ago, and the slot's
        // device planes were last read by the slot's previous frame: both frames have been
        // collected (claim_slot retired every frame up to the one that held this slot, and
        // frames complete in order) or aborted (streams synchronised). Both are owned by the
        // staging, which outlives the frame (the caller keeps it for the scorer's life and we
        // drain before it could go).
        unsafe { self.upload(&mut planes[slot], &sources) }?;
        self.enqueue_uploaded(staging, slot, tag, reference.luma.bpc, with_chroma)?;
        Ok(std::mem::take(&mut out))
    }

    /// Queues a pair of [`PinnedPicture`]s, uploaded straight from their page-locked memory
    /// (no copy into staging): the pictures are kept (shared) while the frame is in flight and
    /// as the host copy of the last [`KEPT`] frames. Pictures in ordinary memory go through
    /// [`GpuFeatures::submit_host`]. Returns the frames collected to free a slot (oldest
    /// first).
    pub fn submit_pinned(
        &mut self,
        staging: &mut HostStaging,
        reference: &Arc<PinnedPicture>,
        distorted: &Arc<PinnedPicture>,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        let (r, d) = (reference.view(), distorted.view());
        if !(reference.is_pinned() && distorted.is_pinned()) {
            return self.submit_host(staging, &r, &d, tag);
        }
        // One push of the context for the whole call: the driver calls inside find it current.
        // SAFETY: self.kernels keeps the context alive beyond this call.
        let _bound = unsafe { self.kernels.context().bind_unbounded() }?;
        let host_planes = self.host_planes(staging, &r, &d)?;
        let with_chroma = host_planes.len() > 2;
        let which = [PinnedPlane::Luma, PinnedPlane::Cb, PinnedPlane::Cr];
        let mut sources = Vec::with_capacity(host_planes.len());
        for picture in [reference, distorted] {
            for &w in which.iter().take(if with_chroma { 3 } else { 1 }) {
                sources.push(picture.pinned_plane(w).ok_or_else(|| {
                    CudaError::InvalidArgument(format!("pinned picture without a {w:?} plane"))
                })?);
            }
        }
        // Staging order: reference luma, distorted luma, reference cb, cr, distorted cb, cr.
        if with_chroma {
            sources = vec![
                sources[0], sources[3], sources[1], sources[2], sources[4], sources[5],
            ];
        }
        let dims: Vec<PlaneDims> = host_planes
            .iter()
            .map(|p| (p.width, p.height, p.bpc))
            .collect();
        let set = staging.next_set;
        staging.next_set = (set + 1) % KEPT;
        staging.held[set] = None;
        let (slot, out) = self.claim_slot()?;
        staging.ensure_planes(slot, &dims)?;
        staging.held[set] = Some(Held {
            tag,
            planes: dims,
            pictures: Some(PinnedPair {
                reference: Arc::clone(reference),
                distorted: Arc::clone(distorted),
            }),
        });
        // SAFETY: the slot's device planes were last read by the slot's previous frame, which
        // has been collected or aborted (as in submit_host). The pictures are shared and
        // immutable while shared; the staging keeps a reference (held, for KEPT submissions:
        // longer than the frame can be in flight, SLOTS), and we drain before it could go.
        unsafe { self.upload(&mut staging.planes[slot], &sources) }?;
        self.enqueue_uploaded(staging, slot, tag, r.luma.bpc, with_chroma)?;
        Ok(out)
    }

    /// The host planes of a pair in staging order (reference luma, distorted luma, then with
    /// PSNR and chroma in both: reference cb, cr, distorted cb, cr), validated.
    fn host_planes<'p>(
        &self,
        staging: &HostStaging,
        reference: &'p PictureRef<'p>,
        distorted: &'p PictureRef<'p>,
    ) -> CudaResult<Vec<&'p Plane<'p>>> {
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
        Ok(host_planes)
    }

    /// Queues the uploads of a slot's planes from pinned memory (buffer, byte offset, row
    /// length in samples) on the copy stream; on failure, aborts.
    ///
    /// # Safety
    /// Neither side may be dropped or the sources written before the uploads completed; the
    /// device planes are free.
    unsafe fn upload(
        &mut self,
        planes: &mut [DevicePlaneBuf],
        sources: &[(&PinnedBuffer, usize, usize)],
    ) -> CudaResult<()> {
        for (dst, &(src, offset, stride)) in planes.iter_mut().zip(sources) {
            let bps = dst.plane().bytes_per_sample;
            // SAFETY: forwarded from this function's contract.
            let r = unsafe { dst.upload_pinned_at_async(src, offset, stride * bps, &self.copy) };
            if let Err(e) = r {
                self.abort();
                return Err(e);
            }
        }
        Ok(())
    }

    /// After the uploads into `slot`'s staging planes: marks their end and queues the features.
    fn enqueue_uploaded(
        &mut self,
        staging: &HostStaging,
        slot: usize,
        tag: usize,
        bpc: u32,
        with_chroma: bool,
    ) -> CudaResult<()> {
        let planes: Vec<DevicePlane> = staging.planes[slot].iter().map(|p| p.plane()).collect();
        let picture = |luma: usize, chroma: [usize; 2]| DevicePicture {
            luma: planes[luma],
            chroma: with_chroma
                .then(|| DeviceChroma::Planar([planes[chroma[0]], planes[chroma[1]]])),
            bpc,
        };
        let (r, d) = (picture(0, [2, 3]), picture(1, [4, 5]));
        // SAFETY: the staging planes of this slot, not reused before the slot's frame is
        // collected (claim_slot); the feature streams wait for their upload.
        let result = self.staged[slot]
            .record(&self.copy)
            .and_then(|()| unsafe { self.enqueue(slot, tag, &r, &d, true) });
        if let Err(e) = result {
            self.abort();
            return Err(e);
        }
        Ok(())
    }

    /// Queues a pair of device pictures, read in place. Returns the frames whose results had to
    /// be collected to free a slot (oldest first).
    ///
    /// # Safety
    /// Every plane is device memory of this context holding its final samples, valid and
    /// unwritten until this frame's result has been returned (by a later submit or by
    /// [`GpuFeatures::drain`]).
    pub unsafe fn submit_device(
        &mut self,
        reference: &DevicePicture,
        distorted: &DevicePicture,
        tag: usize,
    ) -> CudaResult<Vec<GpuFrame>> {
        // One push of the context for the whole call: the driver calls inside find it current.
        // SAFETY: self.kernels keeps the context alive beyond this call.
        let _bound = unsafe { self.kernels.context().bind_unbounded() }?;
        let (slot, out) = self.claim_slot()?;
        // (Motion reads a pair's first picture as the second's previous one: unshifted only.)
        let pair = self.pairs && self.motion.pairable([&reference.luma; 2]);
        // SAFETY: forwarded from this function's contract (a held frame's planes stay valid
        // until its result is returned, like those of a frame in flight).
        let result = unsafe {
            match (pair, self.pending.take()) {
                (true, None) => {
                    // Checked now, so that a bad frame is this call's error, not the next one's.
                    let checked = self.frame_work(slot, reference, distorted).map(|_| ());
                    checked.map(|()| {
                        self.pending = Some(Pending {
                            slot,
                            tag,
                            reference: *reference,
                            distorted: *distorted,
                        });
                        self.next_slot = (slot + 1) % self.slots;
                    })
                }
                (true, Some(first)) => self.enqueue_pair(first, slot, tag, reference, distorted),
                (false, held) => {
                    self.pending = held;
                    self.enqueue(slot, tag, reference, distorted, false)
                }
            }
        };
        if let Err(e) = result {
            self.abort();
            return Err(e);
        }
        Ok(out)
    }

    /// Queues a frame held for pairing by itself (before a frame that is not paired, a new
    /// session, or the collection of every frame).
    fn flush_pending(&mut self) -> CudaResult<()> {
        if let Some(p) = self.pending.take() {
            // SAFETY: submit_device's contract: the held frame's planes are valid until its
            // result is returned.
            let result = unsafe { self.enqueue(p.slot, p.tag, &p.reference, &p.distorted, false) };
            if let Err(e) = result {
                self.abort();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Waits for every frame in flight and returns their results, oldest first.
    pub fn drain(&mut self) -> CudaResult<Vec<GpuFrame>> {
        // One push of the context for the whole call: the driver calls inside find it current.
        // SAFETY: self.kernels keeps the context alive beyond this call.
        let _bound = unsafe { self.kernels.context().bind_unbounded() }?;
        self.flush_pending()?;
        let mut out = Vec::with_capacity(self.in_flight.len());
        while !self.in_flight.is_empty() {
            out.push(self.retire()?);
        }
        Ok(out)
    }

    /// The slot for the next frame, collecting the frame that held it.
    fn claim_slot(&mut self) -> CudaResult<(usize, Vec<GpuFrame>)> {
        let t = host_timing::start();
        let slot = self.next_slot;
        let mut out = Vec::new();
        while self.in_flight.iter().any(|f| f.slot == slot) {
            out.push(self.retire()?);
        }
        host_timing::add(Stage::Wait, t);
        Ok((slot, out))
    }

    /// After a failed submission: wait until nothing queued can still touch the caller's or
    /// the slots' memory, and forget what was in flight (its results are lost with the error).
    fn abort(&mut self) {
        let mut streams = self.streams();
        streams.push(&self.copy);
        for s in streams {
            if let Err(e) = s.synchronize() {
                eprintln!("vmafcuda: draining a GPU stream after an error failed: {e}");
            }
        }
        self.in_flight.clear();
        self.pending = None;
        self.busy = None;
    }

    /// `uploaded`: the pictures are the slot's staging planes, whose upload `staged[slot]`
    /// marks the end of.
    ///
    /// # Safety
    /// As [`GpuFeatures::submit_device`]; `slot` is free.
    unsafe fn enqueue(
        &mut self,
        slot: usize,
        tag: usize,
        reference: &DevicePicture,
        distorted: &DevicePicture,
        uploaded: bool,
    ) -> CudaResult<()> {
        // A frame held for pairing goes first, by itself.
        self.flush_pending()?;
        let work = self.frame_work(slot, reference, distorted)?;
        let launch = launch_for(
            LaunchCase {
                graph_device_frames: self.graphs.as_ref().map(|g| g.device_frames),
                lanes: self.lanes.is_some(),
                small: self.plan.width * self.plan.height <= GRAPH_DEVICE_PIXELS,
                uploaded,
            },
            || Busy::alone(&self.busy),
        );
        self.handover(launch)?;
        let graphs = if launch == Launch::Streams {
            None
        } else {
            self.graphs.take()
        };
        let chroma_pixels = if let Some(mut graphs) = graphs {
            if uploaded {
                self.staged[slot].wait_in(self.launch_stream_of(slot, launch))?;
                if launch == Launch::Overlapped {
                    // Motion runs beside the graph, on the aux stream.
                    self.staged[slot].wait_in(&self.aux)?;
                }
            }
            // SAFETY: forwarded from this function's contract.
            let launched = unsafe { self.enqueue_graph(&mut graphs, &[work], launch) };
            self.graphs = Some(graphs);
            launched?[0]
        } else {
            // Each stream orders its feature's frames (ADM's and VIF's scratch, motion's
            // previous frame, a session reset of ADM on the main stream); the streams share
            // nothing but the pictures, which host frames have to be uploaded into first.
            if uploaded {
                for s in [&self.stream, &self.side, &self.aux] {
                    self.staged[slot].wait_in(s)?;
                }
            }
            // SAFETY: forwarded from this function's contract.
            let chroma_pixels = unsafe { self.queue_work(&[work], Launch::Streams) }?[0];
            self.side_done[slot].record(&self.side)?;
            self.aux_done[slot].record(&self.aux)?;
            chroma_pixels
        };
        // A graph joins its streams back into the one it was launched on.
        self.done[slot].record(self.launch_stream_of(slot, launch))?;
        self.launched(slot, tag, chroma_pixels, launch);
        Ok(())
    }

    /// Queues a held frame and the next one as a pair: one overlapping graph ([`PAIR_PIXELS`])
    /// on the first's lane, each kernel launched once for both frames, motion beside it.
    ///
    /// # Safety
    /// As [`GpuFeatures::submit_device`], for both frames; `slot` is free.
    unsafe fn enqueue_pair(
        &mut self,
        first: Pending,
        slot: usize,
        tag: usize,
        reference: &DevicePicture,
        distorted: &DevicePicture,
    ) -> CudaResult<()> {
        let work = [
            self.frame_work(first.slot, &first.reference, &first.distorted)?,
            self.frame_work(slot, reference, distorted)?,
        ];
        let launch = Launch::Overlapped;
        self.handover(launch)?;
        let mut graphs = self
            .graphs
            .take()
            .ok_or_else(|| CudaError::InvalidArgument("a pair of frames without graphs".into()))?;
        // SAFETY: forwarded from this function's contract.
        let launched = unsafe { self.enqueue_graph(&mut graphs, &work, launch) };
        self.graphs = Some(graphs);
        let chroma_pixels = launched?;
        let on = self.launch_stream_of(first.slot, launch);
        self.done[first.slot].record(on)?;
        self.done[slot].record(on)?;
        self.launched(first.slot, first.tag, chroma_pixels[0], launch);
        self.launched(slot, tag, chroma_pixels[1], launch);
        Ok(())
    }

    /// A frame's pictures checked against the engine's geometry, with their chroma plane pairs
    /// for PSNR.
    fn frame_work<'p>(
        &self,
        slot: usize,
        reference: &'p DevicePicture,
        distorted: &'p DevicePicture,
    ) -> CudaResult<FrameWork<'p>> {
        let (w, h, bpc) = (self.plan.width, self.plan.height, self.plan.bpc);
        let bps = if bpc == 8 { 1 } else { 2 };
        for (what, p) in [("reference", reference), ("distorted", distorted)] {
            p.validate()
                .map_err(|e| CudaError::InvalidArgument(format!("{what} picture: {e}")))?;
            if (p.luma.width, p.luma.height, p.luma.bytes_per_sample, p.bpc) != (w, h, bps, bpc) {
                return Err(CudaError::InvalidArgument(format!(
                    "{what} luma {}x{} {}-bit ({} bytes/sample), expected {w}x{h} {bpc}-bit",
                    p.luma.width, p.luma.height, p.bpc, p.luma.bytes_per_sample
                )));
            }
        }
        let chroma_pairs = if self.psnr.is_some() {
            chroma_pairs(reference, distorted)?
        } else {
            Vec::new()
        };
        Ok(FrameWork {
            slot,
            reference,
            distorted,
            chroma_pairs,
        })
    }

    /// Before a frame launched as `launch`: each way orders the features' work differently (a
    /// graph runs its VIF and motion/PSNR work in its launch stream's order, separate launches
    /// on the side and aux streams; overlapping graphs run motion beside them): where one way
    /// follows another, the features' scratch and motion's previous frame would be shared
    /// unordered, so a barrier orders the streams.
    fn handover(&mut self, launch: Launch) -> CudaResult<()> {
        if let Some(g) = &self.graphs {
            if g.last_launch.is_some_and(|last| last != launch) {
                barrier(&g.handover, &self.streams())?;
            }
        }
        if let Some(g) = &mut self.graphs {
            g.last_launch = Some(launch);
        }
        Ok(())
    }

    /// Records a queued frame as in flight.
    fn launched(&mut self, slot: usize, tag: usize, chroma_pixels: Option<usize>, launch: Launch) {
        self.in_flight.push_back(InFlight {
            slot,
            tag,
            chroma_pixels,
            launch,
        });
        if self.busy.is_none() {
            self.busy = Some(Busy::take());
        }
        self.next_slot = (slot + 1) % self.slots;
    }

    /// Captures the work of a frame, or of a pair ([`GpuFeatures::enqueue_pair`]: `work` holds
    /// two frames, launched [`Launch::Overlapped`]): fork, [`GpuFeatures::queue_work`], join.
    /// Updates or makes the first frame's slot's executable graph from it and launches that on
    /// the main stream, or for [`Launch::Overlapped`] on the slot's lane after queuing motion
    /// on the aux stream. The caller has made those streams wait for a host frame's upload.
    /// Returns each frame's chroma pixel count as `queue_work` does.
    ///
    /// # Safety
    /// As [`GpuFeatures::enqueue`].
    unsafe fn enqueue_graph(
        &mut self,
        graphs: &mut Graphs,
        work: &[FrameWork],
        launch: Launch,
    ) -> CudaResult<Vec<Option<usize>>> {
        let overlapped = launch == Launch::Overlapped;
        let slot = work[0].slot;
        let t = host_timing::start();
        if overlapped && self.plan.motion {
            // Motion outside the graph, in frame order on the aux stream (see Lanes).
            // SAFETY: as in queue_work.
            unsafe {
                match work {
                    [one] => self
                        .motion
                        .enqueue(&self.aux, &one.reference.luma, one.slot),
                    [a, b] => self.motion.enqueue_pair(
                        &self.aux,
                        [&a.reference.luma, &b.reference.luma],
                        (a.slot, b.slot),
                    ),
                    _ => Err(CudaError::InvalidArgument("one or two frames".into())),
                }
            }?;
            for w in work {
                self.aux_done[w.slot].record(&self.aux)?;
            }
        }
        host_timing::add(Stage::Motion, t);
        // Recorded (not queued) first, where the driver allows: a frame of the shape its
        // slot's graph was built from replays it with the parameters that changed.
        let t = host_timing::start();
        let mut recorded = if graphs.replay {
            // SAFETY: forwarded from this function's contract; the operations are queued
            // below (replayed or captured), or not at all with an error.
            Some(record::record(|| unsafe { self.queue_work(work, launch) })?)
        } else {
            None
        };
        host_timing::add(Stage::Record, t);
        let on = self.launch_stream_of(slot, launch);
        if let (Some((chroma_pixels, ops)), Some(SlotGraph::Replayed(r))) =
            (&mut recorded, &mut graphs.execs[slot])
        {
            let t = host_timing::start();
            let replayed = r.replay(ops)?;
            host_timing::add(Stage::Replay, t);
            if replayed {
                let t = host_timing::start();
                r.exec().launch(on)?;
                host_timing::add(Stage::Launch, t);
                super::graph::count_frame(true);
                return Ok(chroma_pixels.clone());
            }
        }
        let t = host_timing::start();
        let capture = Capture::begin(on)?;
        graphs.fork.record(on)?;
        graphs.fork.wait_in(&self.side)?;
        if !overlapped {
            graphs.fork.wait_in(&self.aux)?;
        }
        let queued = match &recorded {
            Some((chroma_pixels, ops)) => (|| {
                let _bound = self.kernels.context().bind()?;
                for op in ops {
                    // SAFETY: recorded just now from this frame's work, on this engine's live
                    // streams, events, kernels and buffers, and the caller's pictures.
                    unsafe { op.queue() }?;
                }
                Ok(chroma_pixels.clone())
            })(),
            // SAFETY: forwarded from this function's contract.
            None => unsafe { self.queue_work(work, launch) },
        };
        // Joined back even when queuing failed: a capture ends cleanly (and is thrown away
        // with the error) only once every stream that joined it has joined back.
        let on = self.launch_stream_of(slot, launch);
        let joined = (|| {
            graphs.side_joined.record(&self.side)?;
            graphs.side_joined.wait_in(on)?;
            if !overlapped {
                graphs.aux_joined.record(&self.aux)?;
                graphs.aux_joined.wait_in(on)?;
            }
            Ok(())
        })();
        let chroma_pixels = queued?;
        joined?;
        let graph = capture.end()?;
        host_timing::add(Stage::Capture, t);
        let t = host_timing::start();
        let exec = &mut graphs.execs[slot];
        let updated = match exec {
            Some(SlotGraph::Updated(e)) => e.update(&graph)?,
            _ => false,
        };
        if !updated {
            // Drop the old one first: the slot's earlier frame is collected (claim_slot).
            *exec = None;
            let made = GraphExec::instantiate(&graph, self.node_priority)?;
            *exec = Some(match recorded {
                Some((_, ops)) => Recorded::build(graph, made, ops)?,
                None => SlotGraph::Updated(made),
            });
        }
        host_timing::add(Stage::Update, t);
        let t = host_timing::start();
        exec.as_ref()
            .expect("instantiated above")
            .exec()
            .launch(self.launch_stream_of(slot, launch))?;
        host_timing::add(Stage::Launch, t);
        super::graph::count_frame(false);
        Ok(chroma_pixels)
    }

    /// The copy of the ADM and VIF scratch a frame of `slot` uses: its slot's for overlapping
    /// graphs, else the first (those frames are ordered on the features' streams), as in an
    /// engine without lanes, whose frames then run the same way.
    fn copy_of(&self, slot: usize, launch: Launch) -> usize {
        match launch {
            Launch::Overlapped => slot % self.adm.len(),
            Launch::Streams | Launch::Graph => 0,
        }
    }

    /// The stream a frame's work is launched on, or its graph when it is one: the main stream,
    /// or for overlapping graphs the slot's lane.
    fn launch_stream_of(&self, slot: usize, launch: Launch) -> &Stream {
        launch_stream(&self.lanes, &self.stream, slot, launch)
    }

    /// Queues the features of a frame, or of a pair (two frames in `work`, each kernel launched
    /// once for both): ADM on the main stream, VIF on the side stream, motion and PSNR on the
    /// aux stream. For an overlapping graph ([`Launch::Overlapped`]): ADM on the first frame's
    /// lane, VIF and PSNR on the side stream, no motion (the caller queues it). Returns each
    /// frame's chroma pixel count when chroma PSNR is measured.
    ///
    /// # Safety
    /// As [`GpuFeatures::enqueue`].
    unsafe fn queue_work(
        &mut self,
        work: &[FrameWork],
        launch: Launch,
    ) -> CudaResult<Vec<Option<usize>>> {
        let overlapped = launch == Launch::Overlapped;
        // (The fields, not launch_stream_of: self.adm is borrowed mutably below.)
        let adm_stream = launch_stream(&self.lanes, &self.stream, work[0].slot, launch);
        let aux = if overlapped { &self.side } else { &self.aux };
        match work {
            [one] => {
                let (r, d, slot) = (&one.reference.luma, &one.distorted.luma, one.slot);
                let copy = self.copy_of(slot, launch);
                for adm in &mut self.adm[copy] {
                    // SAFETY: the planes stay valid until the slot's frame is collected (the
                    // caller's contract); the feature's slot is free (claim_slot), and so is the
                    // copy: its other slots' frames are ordered on the same stream, or collected
                    // (overlapping graphs).
                    unsafe { adm.enqueue(adm_stream, r, d, slot) }?;
                }
                for vif in &mut self.vif[copy] {
                    // SAFETY: as above.
                    unsafe { vif.enqueue(&self.side, r, d, slot) }?;
                }
                if self.plan.motion && !overlapped {
                    // SAFETY: as above.
                    unsafe { self.motion.enqueue(aux, r, slot) }?;
                }
            }
            [a, b] => {
                let frames = [
                    (&a.reference.luma, &a.distorted.luma),
                    (&b.reference.luma, &b.distorted.luma),
                ];
                let (ca, cb) = (self.copy_of(a.slot, launch), self.copy_of(b.slot, launch));
                let [first_adm, second_adm] = two_of(&mut self.adm, ca, cb)?;
                for (x, y) in first_adm.iter_mut().zip(second_adm.iter_mut()) {
                    // SAFETY: as above, for both frames; each has its own copy of the scratch
                    // (distinct slots of an overlapping engine).
                    unsafe { GpuAdm::enqueue_pair(x, y, adm_stream, frames, (a.slot, b.slot)) }?;
                }
                let [first_vif, second_vif] = two_of(&mut self.vif, ca, cb)?;
                for (x, y) in first_vif.iter_mut().zip(second_vif.iter_mut()) {
                    // SAFETY: as above.
                    unsafe { GpuVif::enqueue_pair(x, y, &self.side, frames, (a.slot, b.slot)) }?;
                }
            }
            _ => return Err(CudaError::InvalidArgument("one or two frames".into())),
        }
        let mut chroma_pixels = Vec::with_capacity(work.len());
        for w in work {
            // SAFETY: as above.
            chroma_pixels.push(unsafe { self.queue_psnr(w, overlapped) }?);
        }
        Ok(chroma_pixels)
    }

    /// Queues a frame's PSNR, if measured (on the side stream in an overlapping graph, else on
    /// the aux stream): luma, then the chroma of both pictures when
    /// both have it (planar chroma is two plane pairs, interleaved chroma one pair read once for
    /// both components). Returns the chroma pixel count when chroma is measured.
    ///
    /// # Safety
    /// As [`GpuFeatures::enqueue`].
    unsafe fn queue_psnr(
        &mut self,
        work: &FrameWork,
        overlapped: bool,
    ) -> CudaResult<Option<usize>> {
        let aux = if overlapped { &self.side } else { &self.aux };
        let Some(psnr) = &mut self.psnr else {
            return Ok(None);
        };
        let (bpc, slot) = (self.plan.bpc, work.slot);
        let mut chroma_pixels = None;
        let mut pairs = vec![(work.reference.luma, work.distorted.luma, false)];
        pairs.extend_from_slice(&work.chroma_pairs);
        if !work.chroma_pairs.is_empty() {
            chroma_pixels = work.reference.chroma.map(|c| c.size().0 * c.size().1);
        }
        let blocks = psnr.blocks as usize;
        let mut component = 0;
        for (pr, pd, interleaved) in &pairs {
            let components = if *interleaved { 2 } else { 1 };
            let partial = psnr
                .partial
                .ptr_at(8 * blocks * (3 * slot + component), 8 * blocks * components)?;
            let out = psnr
                .sse
                .ptr_at(8 * (3 * slot + component), 8 * components)?;
            // SAFETY: planes valid per the caller; partial/out are this slot's slices of
            // `components` sums each.
            unsafe {
                self.kernels.psnr.enqueue_sse(
                    aux,
                    pr,
                    pd,
                    *interleaved,
                    bpc,
                    partial,
                    psnr.blocks,
                    out,
                )
            }?;
            component += components;
        }
        let n = component;
        let src = psnr.sse.ptr_at(8 * 3 * slot, 8 * n)?;
        // SAFETY: this slot's device results into this slot's pinned bytes; both alive until
        // the streams are drained (field order).
        unsafe {
            dtoh_async(
                psnr.sse_host.as_mut_ptr().add(8 * 3 * slot),
                src,
                8 * n,
                aux,
            )
        }?;
        Ok(chroma_pixels)
    }

    /// Waits for the oldest frame in flight and returns its features.
    fn retire(&mut self) -> CudaResult<GpuFrame> {
        let Some(f) = self.in_flight.pop_front() else {
            return Err(CudaError::InvalidArgument("no frame in flight".into()));
        };
        if self.in_flight.is_empty() {
            self.busy = None;
        }
        let slot = f.slot;
        let events: &[&Event] = match f.launch {
            Launch::Streams => &[
                &self.done[slot],
                &self.side_done[slot],
                &self.aux_done[slot],
            ],
            Launch::Graph => &[&self.done[slot]],
            Launch::Overlapped => &[&self.done[slot], &self.aux_done[slot]],
        };
        for e in events {
            e.synchronize()?;
        }
        let copy = self.copy_of(slot, f.launch);
        let adm = self.adm[copy].iter().map(|a| a.scores(slot)).collect();
        let vif = self.vif[copy].iter().map(|v| v.scores(slot)).collect();
        let motion_sum = if self.plan.motion {
            self.motion.sum(slot)?
        } else {
            None
        };
        let psnr = match &self.psnr {
            Some(p) => {
                let sse = &p.sse_host.typed::<u64>(3 * SLOTS)?[3 * slot..3 * slot + 3];
                let bpc = self.plan.bpc;
                let y =
                    features::psnr::psnr_from_sse(sse[0], self.plan.width * self.plan.height, bpc);
                let c = f.chroma_pixels.map(|n| {
                    (
                        features::psnr::psnr_from_sse(sse[1], n, bpc),
                        features::psnr::psnr_from_sse(sse[2], n, bpc),
                    )
                });
                Some((y, c))
            }
            None => None,
        };
        Ok(GpuFrame {
            tag: f.tag,
            spatial: SpatialFeatures { adm, vif, psnr },
            motion_sum,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (graphs' `device_frames` if any, lanes, small, uploaded, alone) -> launch.
    type Row = (Option<bool>, bool, bool, bool, bool, Launch);

    fn check(rows: &[Row]) {
        for &(graph_device_frames, lanes, small, uploaded, alone, want) in rows {
            let case = LaunchCase {
                graph_device_frames,
                lanes,
                small,
                uploaded,
            };
            assert_eq!(launch_for(case, || alone), want, "{case:?}, alone {alone}");
        }
    }

    #[test]
    fn four_lanes_from_above_960x540_to_1440p_unless_set() {
        for (w, h, lanes) in [
            (576, 324, 3),
            (960, 540, 3),
            (1280, 720, 4),
            (1920, 1080, 4),
            (2560, 1440, 4),
            (2560, 1448, 3),
            (3840, 2160, 3),
            (7680, 4320, 3),
        ] {
            assert_eq!(lane_slots(w * h, None), lanes, "{w}x{h}");
        }
        // VMAFCUDA_LANES: 3 or 4, else ignored.
        assert_eq!(lane_slots(3840 * 2160, Some("4")), 4);
        assert_eq!(lane_slots(1920 * 1080, Some("3")), 3);
        assert_eq!(lane_slots(576 * 324, Some(" 4 ")), 4);
        for bad in ["0", "2", "5", "four", ""] {
            assert_eq!(lane_slots(1920 * 1080, Some(bad)), 4, "{bad:?}");
        }
    }

    #[test]
    fn motion_first_above_720p_vif_above_1440p_or_when_crowded_unless_set() {
        let vif = First {
            vif: true,
            ..First::default()
        };
        let motion = First {
            motion: true,
            ..First::default()
        };
        let vif_motion = First {
            vif: true,
            motion: true,
            ..First::default()
        };
        // Per size: an engine with an overlap place, and a crowded one (none left), which also
        // runs VIF first above 960x540.
        let none = First::default();
        for (w, h, placed, crowded) in [
            (576, 324, none, none),
            (960, 540, none, none),
            (1280, 720, none, vif),
            (1920, 1080, motion, vif_motion),
            (2560, 1440, motion, vif_motion),
            (3840, 2160, vif_motion, vif_motion),
        ] {
            assert_eq!(first_features(w * h, false, None), placed, "{w}x{h}");
            assert_eq!(
                first_features(w * h, true, None),
                crowded,
                "crowded {w}x{h}"
            );
        }
        let all = First {
            adm: true,
            vif: true,
            motion: true,
        };
        for (setting, want) in [
            ("none", First::default()),
            ("", First::default()),
            ("vif", vif),
            ("motion, adm,vif", all),
            (
                "adm,unknown",
                First {
                    adm: true,
                    ..First::default()
                },
            ),
        ] {
            for pixels in [576 * 324, 3840 * 2160] {
                for crowded in [false, true] {
                    let got = first_features(pixels, crowded, Some(setting));
                    assert_eq!(got, want, "{setting:?}");
                }
            }
        }
    }

    #[test]
    fn small_frames_overlap_wherever_there_are_lanes() {
        use Launch::*;
        check(&[
            (Some(true), true, true, false, false, Overlapped),
            (Some(true), true, true, false, true, Overlapped),
            (Some(true), true, true, true, false, Overlapped),
            (Some(true), true, true, true, true, Overlapped),
            // Without a place among the overlapping engines: no graphs at all (Auto) ...
            (None, false, true, false, true, Streams),
            // ... or graphs one after another (Always).
            (Some(true), false, true, false, true, Graph),
        ]);
    }

    #[test]
    fn large_device_frames_overlap_only_while_their_engine_is_alone() {
        use Launch::*;
        check(&[
            (Some(false), true, false, false, true, Overlapped),
            (Some(false), true, false, false, false, Streams),
            // Every frame a graph (Always): one after another while other engines are busy.
            (Some(true), true, false, false, false, Graph),
            // No lanes: separate launches, as before large frames could overlap.
            (Some(false), false, false, false, true, Streams),
            (None, false, false, false, true, Streams),
        ]);
    }

    #[test]
    fn large_uploaded_frames_are_graphs_one_after_another() {
        use Launch::*;
        check(&[
            (Some(false), true, false, true, true, Graph),
            (Some(false), true, false, true, false, Graph),
            (Some(false), false, false, true, true, Graph),
            (None, false, false, true, true, Streams),
        ]);
    }

    #[test]
    fn alone_is_asked_only_for_large_device_frames_with_lanes() {
        // (small, uploaded, lanes) -> whether `alone` is asked.
        for (small, uploaded, lanes, asks) in [
            (true, false, true, false),
            (false, true, true, false),
            (false, false, false, false),
            (false, false, true, true),
        ] {
            let case = LaunchCase {
                graph_device_frames: Some(false),
                lanes,
                small,
                uploaded,
            };
            let mut asked = false;
            launch_for(case, || {
                asked = true;
                true
            });
            assert_eq!(asked, asks, "{case:?}");
        }
    }

    #[test]
    fn two_of_gives_distinct_copies_in_the_order_asked() {
        let mut v = [10, 11, 12, 13];
        let [a, b] = two_of(&mut v, 3, 1).expect("distinct");
        assert_eq!((*a, *b), (13, 11));
        *a += 100;
        assert_eq!(v, [10, 11, 12, 113]);
        assert!(two_of(&mut v, 2, 2).is_err());
        assert!(two_of(&mut v, 0, 4).is_err());
    }

    #[test]
    fn graphs_replay_only_when_asked() {
        assert!(!replay_wanted(None));
        assert!(!replay_wanted(Some("0")));
        assert!(!replay_wanted(Some("yes")));
        assert!(replay_wanted(Some("1")));
        assert!(replay_wanted(Some(" 1 ")));
    }

    #[test]
    fn frames_below_300000_pixels_pair_with_lanes_unless_set() {
        for (lanes, pixels, setting, want) in [
            (true, 176 * 144, None, true),
            (true, 576 * 324, None, true),
            (true, 299_999, None, true),
            (true, 300_000, None, false),
            (true, 960 * 540, None, false),
            (false, 576 * 324, None, false),
            (true, 576 * 324, Some("0"), false),
            (true, 576 * 324, Some(" 0 "), false),
            (true, 576 * 324, Some("1"), true),
        ] {
            assert_eq!(
                pairs_wanted(lanes, pixels, setting),
                want,
                "lanes {lanes}, {pixels} pixels, {setting:?}"
            );
        }
    }

    #[test]
    fn busy_engines_are_counted_while_held() {
        // Other tests of this process may hold marks too: only what two marks imply is checked.
        let a = Busy::take();
        let b = Busy::take();
        assert!(!Busy::alone(&Some(a)));
        assert!(!Busy::alone(&None));
        drop(b);
    }
}
