//! libvmaf's integer VIF on the GPU for one luma pair: the four scales' integer accumulators
//! from `kernels/vif.cu`, then the CPU engine's own conversion
//! ([`crate::features::vif::scores_from_sums`]), so the doubles are identical to
//! [`VifExtractor::extract`](crate::features::vif::VifExtractor::extract)'s.
//!
//! Per frame: one fused kernel per scale (moments, statistic, block sums added atomically into
//! the frame's accumulators, and the next scale's decimated planes into scratch buffers of
//! [`GpuVif`]; the last block of scale 3 publishes the 16 sums and zeroes the accumulators for
//! the next frame), and an asynchronous copy of the 16 sums into a pinned result slot. Nothing
//! is allocated per frame.

use std::sync::Arc;

use crate::features::vif::{self as cpu, VifScores, VifSums, MIN_DIMENSION};

use super::context::Context;
use super::copy::{dtoh_async, memset_async};
use super::error::{CudaError, CudaResult};
use super::event::Event;
use super::kernels;
use super::memory::{DeviceBuffer, Parts, PinnedBuffer};
use super::module::{arg, Function, LaunchConfig, Module};
use super::plane::DevicePlane;
use super::stream::Stream;

/// Output tile (width, height) of each scale's throughput kernel, one thread per 4 pixels
/// (vif.cu's `kBig*` for scales 0 and 1, `kSmall*` for 2 and 3).
const TILES: [(usize, usize); 4] = [(64, 16), (64, 16), (32, 8), (32, 8)];
/// Output tile of every scale's latency kernel (`*_fine`), one thread per pixel.
const FINE_TILE: (usize, usize) = (32, 8);
/// Scales of fewer pixels than this use the latency kernels (`*_fine`): with few blocks per
/// SM, a block's serial chain sets the time, and one pixel per thread shortens it. Measured on
/// an H100 (2026-11-23): 1080p's scale 1 (518,400 pixels) is faster with the throughput kernel
/// (20 us against 25), its scales 2 and 3 and every scale of 576x324 with the latency ones.
const FINE_BELOW: usize = 300_000;
/// The sums of one frame: 4 scales x (num_log, den_log, num_non_log, den_non_log), `u64` each.
const SUMS: usize = 16;
const SUMS_BYTES: usize = SUMS * 8;
/// The kernels' per-frame state (vif.cu's `state`): 16 accumulators, the 16 published sums,
/// the block counter of scale 3 (one `u64` word). Accumulators and counter are zero between
/// frames.
const STATE_BYTES: usize = 2 * SUMS_BYTES + 8;
/// Where the published sums start in the state.
const PUBLISHED_OFFSET: usize = SUMS_BYTES;

/// The VIF kernels of one context and the device copy of the CPU's log2 table; cheap to clone.
#[derive(Clone)]
pub struct VifKernels {
    /// Throughput kernels: scale 0 of 8-bit pictures, scale 0 of deeper ones, scales 1..=3.
    big: [Function; 5],
    /// The latency kernels (`*_fine`), in the same order.
    fine: [Function; 5],
    /// Their entries for two frames in one launch (`*_fine_x2`, [`GpuVif::enqueue_pair`]).
    fine_x2: [Function; 5],
    /// Scale 0 with its filters on the tensor cores, where wanted ([`mma_wanted`]):
    /// `vif_scale0_u8_mma` and `vif_scale0_u16_mma` (9 to 12 bits, [`MMA_DEEP_BPC`]).
    mma: Option<[Function; 2]>,
    /// [`cpu::log2_deltas`], 32768 bytes (the log2 table as distances above its chord).
    table: Arc<DeviceBuffer>,
    module: Module,
}

impl VifKernels {
    /// Loads the image and uploads the log2 table (synchronously, on a stream of its own).
    pub fn load(ctx: &Context) -> CudaResult<VifKernels> {
        let module = kernels::VIF.load(ctx)?;
        let table_host: &[u8] = &cpu::log2_deltas()[..];
        let mut table = DeviceBuffer::new(ctx, std::mem::size_of_val(table_host))?;
        let stream = Stream::new(ctx)?;
        table.upload(table_host, &stream)?;
        let f = |name: &str| module.function(name);
        Ok(VifKernels {
            big: [
                f("vif_scale0_u8")?,
                f("vif_scale0_u16")?,
                f("vif_scale1")?,
                f("vif_scale2")?,
                f("vif_scale3")?,
            ],
            fine: [
                f("vif_scale0_u8_fine")?,
                f("vif_scale0_u16_fine")?,
                f("vif_scale1_fine")?,
                f("vif_scale2_fine")?,
                f("vif_scale3_fine")?,
            ],
            fine_x2: [
                f("vif_scale0_u8_fine_x2")?,
                f("vif_scale0_u16_fine_x2")?,
                f("vif_scale1_fine_x2")?,
                f("vif_scale2_fine_x2")?,
                f("vif_scale3_fine_x2")?,
            ],
            mma: if mma_wanted(ctx) {
                Some([f("vif_scale0_u8_mma")?, f("vif_scale0_u16_mma")?])
            } else {
                None
            },
            table: Arc::new(table),
            module,
        })
    }

    pub fn module(&self) -> &Module {
        &self.module
    }
}

/// Depths whose scale 0 has a tensor-core kernel beside 8 bits (`vif_scale0_u16_mma`: its
/// sample products must fit 24 bits).
const MMA_DEEP_BPC: std::ops::RangeInclusive<u32> = 9..=12;

/// The kernel of scale `s` of `bpc`-bit pictures: its index among the throughput or latency
/// kernels (scale 0: 0 for 8 bits, 1 deeper; scale `s`: `s + 1`), and whether the tensor-core
/// kernel of that index ([`VifKernels::mma`]) runs instead: scale 0 of 8 and [`MMA_DEEP_BPC`]
/// bits, in place of a throughput kernel, where the tensor-core kernels are loaded.
fn kernel_choice(s: usize, bpc: u32, fine: bool, mma_loaded: bool) -> (usize, bool) {
    let index = if s == 0 { usize::from(bpc != 8) } else { s + 1 };
    let tensor = mma_loaded && s == 0 && !fine && (bpc == 8 || MMA_DEEP_BPC.contains(&bpc));
    (index, tensor)
}

/// On a device of compute capability 8.0 or more, scale 0 (throughput kernel) of pictures of 8
/// and [`MMA_DEEP_BPC`] bits runs its filters on the tensor cores (`vif_scale0_u8_mma`,
/// `vif_scale0_u16_mma`: the same sums, bit for bit; see BENCHMARKS.md). `VMAFCUDA_VIF_MMA=0`
/// turns them off.
fn mma_wanted(ctx: &Context) -> bool {
    std::env::var("VMAFCUDA_VIF_MMA").as_deref() != Ok("0")
        && super::driver::guarded("VIF tensor-core check", || {
            super::driver::device_info(ctx.device_ordinal())
        })
        .is_ok_and(|d| d.compute_capability.0 >= 8)
}

/// The decimated pictures of one scale above 0, `w` x `h` packed `u16` samples each: their
/// addresses in [`GpuVif`]'s scratch.
struct Level {
    w: usize,
    h: usize,
    reference: u64,
    distorted: u64,
}

/// VIF of plane pairs of one geometry: device scratch (scales 1..3, per-block partial sums)
/// and `slots` pinned result slots.
pub struct GpuVif {
    /// Recorded after every enqueue; dropping waits for it, so no kernel or copy still uses the
    /// buffers below when they are freed.
    done: Event,
    enqueued: bool,
    /// Enqueued inside stream captures, or beside them ([`GpuVif::set_captured`]): `done` is
    /// not used.
    captured: bool,
    levels: [Level; 3],
    /// One allocation ([`Parts`]): first [`STATE_BYTES`] of state (accumulators, published
    /// sums and block counter, shared by the scale kernels; zeroed in `new`, left zero by every
    /// completed frame), then the levels' pictures.
    scratch: DeviceBuffer,
    /// Set while a frame's launches are only partly enqueued (a launch failed): its
    /// accumulators may be non-zero, so the next enqueue clears the state first.
    state_dirty: bool,
    /// `slots` x 16 `u64`.
    results: PinnedBuffer,
    kernels: VifKernels,
    ctx: Context,
    width: usize,
    height: usize,
    bpc: u32,
    gain_limit: f64,
    slots: usize,
    /// Launch of each scale: latency kernel (`*_fine`) or not, grid (tiles across, tiles
    /// down), threads per block.
    plan: [(bool, (u32, u32), u32); 4],
}

impl GpuVif {
    /// VIF of `width` x `height` pictures of `bpc` bits (8..=16; 8-bit planes hold `u8`, deeper
    /// ones `u16`) with libvmaf's enhancement-gain limit (1.0..=100.0), with `slots` (>= 1)
    /// result slots. The same limits as [`cpu::VifExtractor::new`], as errors.
    pub fn new(
        ctx: &Context,
        kernels: VifKernels,
        width: usize,
        height: usize,
        bpc: u32,
        enhn_gain_limit: f64,
        slots: usize,
    ) -> CudaResult<GpuVif> {
        let invalid = |why: String| Err(CudaError::InvalidArgument(format!("VIF: {why}")));
        if !kernels.module.context().same_as(ctx) {
            return invalid("kernels loaded in another context".into());
        }
        if width < MIN_DIMENSION || height < MIN_DIMENSION {
            return invalid(format!(
                "{width}x{height} below libvmaf's {MIN_DIMENSION}x{MIN_DIMENSION}"
            ));
        }
        // The kernels index with `int`; grids are at most 65535 tiles high.
        if width > i32::MAX as usize / 2 || height.div_ceil(TILES[0].1) > 65535 {
            return invalid(format!("{width}x{height} too large"));
        }
        if !(8..=16).contains(&bpc) {
            return invalid(format!("bit depth {bpc}"));
        }
        if !(1.0..=cpu::DEFAULT_VIF_ENHN_GAIN_LIMIT).contains(&enhn_gain_limit) {
            return invalid(format!(
                "enhancement gain limit {enhn_gain_limit} outside libvmaf's 1.0..=100.0"
            ));
        }
        if slots == 0 {
            return invalid("no result slots".into());
        }
        let mut parts = Parts::default();
        // (the state first, at offset 0: enqueue finds it at the scratch's start)
        let state_at = parts.add(STATE_BYTES);
        let pictures = [1, 2, 3].map(|k| {
            let bytes = (width >> k) * (height >> k) * 2;
            (k, parts.add(bytes), parts.add(bytes))
        });
        let mut scratch = DeviceBuffer::new(ctx, parts.bytes())?;
        scratch.zero(state_at..state_at + STATE_BYTES)?;
        let levels = pictures.map(|(k, reference, distorted)| Level {
            w: width >> k,
            h: height >> k,
            reference: scratch.ptr() + reference as u64,
            distorted: scratch.ptr() + distorted as u64,
        });
        let plan = plan(width, height, FINE_BELOW);
        let results_bytes = slots
            .checked_mul(SUMS_BYTES)
            .ok_or_else(|| CudaError::InvalidArgument(format!("VIF: {slots} slots")))?;
        Ok(GpuVif {
            done: Event::new(ctx, false)?,
            enqueued: false,
            captured: false,
            levels,
            scratch,
            state_dirty: false,
            results: PinnedBuffer::new(ctx, results_bytes)?,
            kernels,
            ctx: ctx.clone(),
            width,
            height,
            bpc,
            gain_limit: enhn_gain_limit,
            slots,
            plan,
        })
    }

    /// Uses the latency kernels for the scales of fewer than `pixels` pixels from the next
    /// enqueue on (0: none, `usize::MAX`: all) instead of the measured default; for tests and
    /// tuning. Both kinds give identical sums.
    pub fn set_fine_below(&mut self, pixels: usize) {
        self.plan = plan(self.width, self.height, pixels);
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn bpc(&self) -> u32 {
        self.bpc
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Enqueues the whole VIF of one pair on `stream` (which belongs to our context), reading
    /// both planes in place, ending with an async copy of the integer sums into pinned slot
    /// `slot`. Enqueues of one `GpuVif` share its scratch buffers: they must all go to one
    /// stream (or be otherwise ordered).
    ///
    /// # Safety
    /// The planes are device memory of our context, hold their final samples when the stream
    /// reaches this work, and stay valid until it has completed.
    pub unsafe fn enqueue(
        &mut self,
        stream: &Stream,
        reference: &DevicePlane,
        distorted: &DevicePlane,
        slot: usize,
    ) -> CudaResult<()> {
        self.check(stream, reference, distorted, slot)?;
        self.clear_dirty_state(stream)?;
        // Until scale 3 is enqueued, a failed launch leaves a partial frame in the state.
        self.state_dirty = true;
        for s in 0..4 {
            let a = self.scale_args(s, reference, distorted);
            let function = self.scale_function(s, false);
            let (_, (gx, gy), threads) = self.plan[s];
            // SAFETY: the arguments match VIF_SCALE_PARAMS (ScaleArgs::args); scale 0 reads the
            // caller's planes (valid: this function's contract, geometry checked), scales 1..3
            // the level buffers the previous launch on this stream wrote, all of it alive until
            // the stream work completed (`done`, waited for on drop).
            unsafe { function.launch(stream, config((gx, gy, 1), threads), &a.args()) }?;
        }
        self.state_dirty = false;
        self.finish(stream, slot)
    }

    /// [`GpuVif::enqueue`] of two frames of one geometry in one set of launches (each kernel's
    /// grid two deep: the latency kernels' `_x2` entries, [`GpuVif::pairable`]): `first`'s
    /// planes through `first` into its `slots.0`, `second`'s through `second` into its
    /// `slots.1`.
    ///
    /// # Safety
    /// As [`GpuVif::enqueue`], for both frames; `first` and `second` are distinct instances.
    pub unsafe fn enqueue_pair(
        first: &mut GpuVif,
        second: &mut GpuVif,
        stream: &Stream,
        frames: [(&DevicePlane, &DevicePlane); 2],
        slots: (usize, usize),
    ) -> CudaResult<()> {
        if !(first.pairable()
            && second.pairable()
            && (first.width, first.height, first.bpc) == (second.width, second.height, second.bpc))
        {
            return Err(CudaError::InvalidArgument(
                "VIF: a pair needs two instances of one geometry on the latency kernels".into(),
            ));
        }
        first.check(stream, frames[0].0, frames[0].1, slots.0)?;
        second.check(stream, frames[1].0, frames[1].1, slots.1)?;
        for v in [&mut *first, &mut *second] {
            v.clear_dirty_state(stream)?;
            v.state_dirty = true;
        }
        for s in 0..4 {
            let a = first.scale_args(s, frames[0].0, frames[0].1);
            let b = second.scale_args(s, frames[1].0, frames[1].1);
            let mut args = a.args().to_vec();
            args.extend_from_slice(&b.second_args());
            let (_, (gx, gy), threads) = first.plan[s];
            // SAFETY: VIF_SCALE_PARAMS then VIF_PARAMS_B (ScaleArgs), each frame's planes as in
            // enqueue; the second frame's scratch and state are `second`'s own.
            unsafe {
                first
                    .scale_function(s, true)
                    .launch(stream, config((gx, gy, 2), threads), &args)
            }?;
        }
        first.state_dirty = false;
        second.state_dirty = false;
        first.finish(stream, slots.0)?;
        second.finish(stream, slots.1)
    }

    /// Whether two frames can go through [`GpuVif::enqueue_pair`]: every scale runs a latency
    /// kernel (pictures of fewer than 300,000 pixels by default).
    pub fn pairable(&self) -> bool {
        self.plan.iter().all(|&(fine, _, _)| fine)
    }

    /// A state left partly written by a failed enqueue back to zero (queued on `stream`).
    fn clear_dirty_state(&mut self, stream: &Stream) -> CudaResult<()> {
        if self.state_dirty {
            // SAFETY: our scratch's state part, STATE_BYTES long, alive until the stream work
            // completed (`done`, waited for on drop); stream order puts it before the kernels.
            unsafe { memset_async(self.scratch.ptr(), 0, STATE_BYTES, stream) }?;
            self.state_dirty = false;
        }
        Ok(())
    }

    /// The arguments of scale `s` of one frame.
    fn scale_args(&self, s: usize, reference: &DevicePlane, distorted: &DevicePlane) -> ScaleArgs {
        // Only scale 0 reads the caller's (possibly MSB-aligned) planes; the others read the
        // level the previous scale wrote.
        let (src_ref, ref_pitch, src_dis, dis_pitch, w, h, ref_shift, dis_shift) = if s == 0 {
            (
                reference.ptr,
                reference.pitch,
                distorted.ptr,
                distorted.pitch,
                self.width,
                self.height,
                reference.shift,
                distorted.shift,
            )
        } else {
            let l = &self.levels[s - 1];
            (l.reference, l.w * 2, l.distorted, l.w * 2, l.w, l.h, 0, 0)
        };
        let (next_ref, next_dis) = match self.levels.get(s) {
            Some(next) => (next.reference, next.distorted),
            None => (0, 0),
        };
        ScaleArgs {
            src_ref,
            ref_pitch,
            src_dis,
            dis_pitch,
            w: w as u32,
            h: h as u32,
            bpc: self.bpc,
            ref_shift,
            dis_shift,
            gain: self.gain_limit,
            table: self.kernels.table.ptr(),
            next_ref,
            next_dis,
            state: self.scratch.ptr(),
        }
    }

    /// The kernel of scale `s` (its `_x2` entry for a pair).
    fn scale_function(&self, s: usize, pair: bool) -> &Function {
        let (fine, _, _) = self.plan[s];
        let (index, tensor) = kernel_choice(s, self.bpc, fine, self.kernels.mma.is_some());
        match &self.kernels.mma {
            Some(mma) if tensor => &mma[index],
            _ if pair => &self.kernels.fine_x2[index],
            _ if fine => &self.kernels.fine[index],
            _ => &self.kernels.big[index],
        }
    }

    /// After the last scale: the copy of the published sums into the slot, and `done`.
    fn finish(&mut self, stream: &Stream, slot: usize) -> CudaResult<()> {
        let sums = self.scratch.ptr_at(PUBLISHED_OFFSET, SUMS_BYTES)?;
        let dst = self.results.as_mut_ptr().wrapping_add(slot * SUMS_BYTES);
        // SAFETY: 128 bytes from our state's published sums (in bounds: ptr_at) into slot
        // `slot` of our pinned buffer (in bounds: slot < slots, checked); both live until the
        // copy completed (`done`, waited for on drop). The caller reads the slot only after the
        // stream work completed.
        unsafe { dtoh_async(dst, sums, SUMS_BYTES, stream) }?;
        if !self.captured {
            self.done.record(stream)?;
            self.enqueued = true;
        }
        Ok(())
    }

    /// As [`super::GpuAdm::set_captured`]: when enqueued frames may run inside a stream
    /// capture, `done` is neither recorded nor waited for; the caller waits for the stream
    /// before dropping this.
    pub fn set_captured(&mut self, captured: bool) {
        self.captured = captured;
    }

    /// After the stream work of `slot` completed: the scores, identical to
    /// [`cpu::VifExtractor::extract`]'s. Panics if `slot` is not below [`GpuVif::slots`].
    pub fn scores(&self, slot: usize) -> VifScores {
        assert!(
            slot < self.slots,
            "VIF result slot {slot} of {}",
            self.slots
        );
        let bytes = &self.results.as_slice()[slot * SUMS_BYTES..(slot + 1) * SUMS_BYTES];
        let mut v = [0i64; SUMS];
        for (out, b) in v.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(b);
            // Every sum is non-negative and far below 2^63.
            *out = u64::from_ne_bytes(word) as i64;
        }
        let sums: [VifSums; 4] = std::array::from_fn(|s| VifSums {
            num_log: v[4 * s],
            den_log: v[4 * s + 1],
            num_non_log: v[4 * s + 2],
            den_non_log: v[4 * s + 3],
        });
        cpu::scores_from_sums(&sums)
    }

    fn check(
        &self,
        stream: &Stream,
        reference: &DevicePlane,
        distorted: &DevicePlane,
        slot: usize,
    ) -> CudaResult<()> {
        if !stream.context().same_as(&self.ctx) {
            return Err(CudaError::InvalidArgument(
                "VIF: stream of another context".into(),
            ));
        }
        if slot >= self.slots {
            return Err(CudaError::InvalidArgument(format!(
                "VIF: result slot {slot} of {}",
                self.slots
            )));
        }
        let bps = if self.bpc == 8 { 1 } else { 2 };
        for (what, p) in [("reference", reference), ("distorted", distorted)] {
            p.validate()?;
            if (p.width, p.height, p.bytes_per_sample) != (self.width, self.height, bps)
                || self.bpc + p.shift > 16
            {
                return Err(CudaError::InvalidArgument(format!(
                    "VIF: {what} device plane {}x{} with {}-byte samples shifted by {}, \
                     expected {}x{} {}-bit",
                    p.width,
                    p.height,
                    p.bytes_per_sample,
                    p.shift,
                    self.width,
                    self.height,
                    self.bpc
                )));
            }
        }
        Ok(())
    }
}

/// The launch of each scale of `width` x `height` pictures (see [`GpuVif`]'s `plan`).
fn plan(width: usize, height: usize, fine_below: usize) -> [(bool, (u32, u32), u32); 4] {
    std::array::from_fn(|s| {
        let (w, h) = (width >> s, height >> s);
        // The fine grid is at most 65535 tiles high too (h / 8); `new` only checks 16-row
        // tiles, so taller pictures keep the throughput kernels.
        let fine = w * h < fine_below && h.div_ceil(FINE_TILE.1) <= 65535;
        let (tw, th) = if fine { FINE_TILE } else { TILES[s] };
        let threads = if fine { tw * th } else { tw * th / 4 };
        let grid = (w.div_ceil(tw) as u32, h.div_ceil(th) as u32);
        (fine, grid, threads as u32)
    })
}

/// One frame's arguments of a scale kernel, as vif.cu's `VIF_SCALE_PARAMS`: (const uint8_t*
/// ref, size_t ref_pitch, const uint8_t* dis, size_t dis_pitch, unsigned width, unsigned
/// height, unsigned bpc, unsigned ref_shift, unsigned dis_shift, double gain_limit, const
/// uint8_t* table, uint16_t* next_ref, uint16_t* next_dis, unsigned long long* state): u64 for
/// pointers, usize for size_t, u32 for unsigned, f64 for double. Scales 1..3 read the level
/// buffers (w x h packed u16) the previous scale wrote; the next level's hold (w / 2) x (h / 2)
/// samples, as the kernel writes (scale 3: none, null). `state` is the scratch's STATE_BYTES
/// state part (33 u64, zero between frames); the table holds 32768 bytes.
struct ScaleArgs {
    src_ref: u64,
    ref_pitch: usize,
    src_dis: u64,
    dis_pitch: usize,
    w: u32,
    h: u32,
    bpc: u32,
    ref_shift: u32,
    dis_shift: u32,
    gain: f64,
    table: u64,
    next_ref: u64,
    next_dis: u64,
    state: u64,
}

impl ScaleArgs {
    /// `VIF_SCALE_PARAMS`, in order.
    fn args(&self) -> [*mut std::ffi::c_void; 14] {
        [
            arg(&self.src_ref),
            arg(&self.ref_pitch),
            arg(&self.src_dis),
            arg(&self.dis_pitch),
            arg(&self.w),
            arg(&self.h),
            arg(&self.bpc),
            arg(&self.ref_shift),
            arg(&self.dis_shift),
            arg(&self.gain),
            arg(&self.table),
            arg(&self.next_ref),
            arg(&self.next_dis),
            arg(&self.state),
        ]
    }

    /// A pair's second frame, as vif.cu's `VIF_PARAMS_B` (its own planes, shifts, next level
    /// and state; the geometry and the rest are the first frame's).
    fn second_args(&self) -> [*mut std::ffi::c_void; 9] {
        [
            arg(&self.src_ref),
            arg(&self.ref_pitch),
            arg(&self.src_dis),
            arg(&self.dis_pitch),
            arg(&self.ref_shift),
            arg(&self.dis_shift),
            arg(&self.next_ref),
            arg(&self.next_dis),
            arg(&self.state),
        ]
    }
}

/// A scale kernel's launch: `grid` tiles, `threads` per block.
fn config(grid: (u32, u32, u32), threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid,
        block: (threads, 1, 1),
        shared_bytes: 0,
    }
}

impl Drop for GpuVif {
    fn drop(&mut self) {
        if self.enqueued {
            if let Err(e) = self.done.synchronize() {
                eprintln!("vmafcuda: waiting for VIF work before freeing its buffers failed: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::kernel_choice;

    /// Every scale, depth, kernel kind and tensor-core availability: scale 0 of 8 and 9..12 bits
    /// takes its tensor-core kernel where loaded (throughput kernels only), every other case
    /// its plain kernel.
    #[test]
    fn kernel_choice_takes_the_tensor_cores_for_scale_0_of_8_to_12_bits() {
        for s in 0..4 {
            for bpc in 8..=16 {
                for fine in [false, true] {
                    for loaded in [false, true] {
                        let index = match s {
                            0 if bpc == 8 => 0,
                            0 => 1,
                            _ => s + 1,
                        };
                        let tensor = s == 0 && bpc <= 12 && !fine && loaded;
                        assert_eq!(
                            kernel_choice(s, bpc, fine, loaded),
                            (index, tensor),
                            "scale {s}, {bpc} bits, fine {fine}, loaded {loaded}"
                        );
                    }
                }
            }
        }
    }
}
