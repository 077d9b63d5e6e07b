//! libvmaf's integer ADM on the GPU: `kernels/adm.cu` computes every integer quantity of one
//! frame (the per-scale, per-band contrast-masking accumulators and denominator sums,
//! [`AdmSums`]); the host turns them into scores with the CPU path's own function
//! ([`AdmGeometry::scores`]), so the doubles are identical to [`AdmExtractor`]'s.
//!
//! One [`GpuAdm`] per frame geometry holds the device scratch (the DWT bands of all four scales,
//! per-row masking accumulators) and pinned result slots. [`GpuAdm::enqueue`] queues the whole ADM of a
//! pair of device planes on a stream; after that work completed, [`GpuAdm::scores`] reads the
//! slot.
//!
//! Like libvmaf's (and [`AdmExtractor`]), the computation keeps one word of state from frame to
//! frame (what some DWT rows read past their end): frames must be enqueued in order, on one
//! stream (or streams ordered by the caller), and a fresh `GpuAdm` started per libvmaf session.
//!
//! [`AdmExtractor`]: crate::features::adm::AdmExtractor

use crate::features::adm::{
    c_decouple_rect, cos_1deg_sq, den_k, AdmGeometry, AdmScores, AdmSums, BandK, ScaleSetup,
    MIN_DIMENSION, S123_HP_ADD, S123_HP_SHIFT, S123_VP_ADD, S123_VP_SHIFT,
};

use super::context::Context;
use super::copy::{dtoh_async, memset_async};
use super::error::{CudaError, CudaResult};
use super::event::Event;
use super::kernels;
use super::memory::{DeviceBuffer, Parts, PinnedBuffer};
use super::module::{arg, Function, LaunchConfig, Module};
use super::plane::DevicePlane;
use super::stream::Stream;

/// Tile of every kernel in adm.cu (`kTx` x `kTy` threads, one output per thread).
const TILE_X: usize = 32;
const TILE_Y: usize = 8;
/// Integer results per scale: num h, v, d, aim h, v, d, den h, v, d (adm.cu's `kSums`).
const SUMS: usize = 9;
/// Band rows are padded to a multiple of this many elements.
const PITCH_ELEMS: usize = 64;
/// Layout of the state buffer: DWT words kept between levels and frames, the out-of-bounds row
/// of tiny pictures, then per scale the masking rows' u64 accumulators and u32 counters (0
/// between frames: each row's last warp clears them).
const STATE_WORDS: usize = 7;
/// Scale 3's count of finished rows (the last one writes the results to the pinned slot).
const ROWS_DONE_OFFSET: usize = 32;
const OOB_OFFSET: usize = 64;

/// Entries of adm.cu's division table (`kRecip`: `floor(2^30 / m)`, `m` in `0..=2^15`).
const RECIP_ENTRIES: u32 = 32769;

/// The ADM kernels of one context (their module's division table filled); cheap to clone.
///
/// The table (128 KiB of module memory) cut `adm_mask0_dwt1` from 13.01 to 11.99 M warp
/// instructions a 1080p frame and made 1080p frames about 1% faster (H200, BENCHMARKS.md, stop
/// 45). Loading it costs about 1 ms more per module load: a cold rebuild (which loads the
/// modules at every shot) went from 3.3-3.5 to 4.5 ms per shot of 1-3 frames at 576x324 on one
/// H200 and from 4.2 to 5.2-5.3 ms on another, the same without the fill kernel's launch (the
/// module's memory, not the fill, costs it); `full` and `reset` load the modules once per
/// scorer.
#[derive(Clone)]
pub struct AdmKernels {
    dwt0_u8: Function,
    dwt0_u16: Function,
    mask0_dwt1: Function,
    mask123_dwt23: Function,
    mask123: Function,
    fill_oob: Function,
    /// The same kernels for two frames in one launch ([`GpuAdm::enqueue_pair`]).
    dwt0_u8_x2: Function,
    dwt0_u16_x2: Function,
    mask0_dwt1_x2: Function,
    mask123_dwt23_x2: Function,
    mask123_x2: Function,
    module: Module,
}

impl AdmKernels {
    /// Loads the image and fills its division table (`adm_fill_recip`, on a stream of its own,
    /// waited for).
    pub fn load(ctx: &Context) -> CudaResult<AdmKernels> {
        let module = kernels::ADM.load(ctx)?;
        let fill = module.function("adm_fill_recip")?;
        let stream = Stream::new(ctx)?;
        let threads = (TILE_X * TILE_Y) as u32;
        // SAFETY: adm_fill_recip takes no arguments and writes only its module's table.
        unsafe {
            fill.launch(
                &stream,
                LaunchConfig::linear(RECIP_ENTRIES.div_ceil(threads), threads),
                &[],
            )
        }?;
        stream.synchronize()?;
        Ok(AdmKernels {
            dwt0_u8: module.function("adm_dwt0_u8")?,
            dwt0_u16: module.function("adm_dwt0_u16")?,
            mask0_dwt1: module.function("adm_mask0_dwt1")?,
            mask123_dwt23: module.function("adm_mask123_dwt23")?,
            mask123: module.function("adm_mask123")?,
            fill_oob: module.function("adm_fill_oob")?,
            dwt0_u8_x2: module.function("adm_dwt0_u8_x2")?,
            dwt0_u16_x2: module.function("adm_dwt0_u16_x2")?,
            mask0_dwt1_x2: module.function("adm_mask0_dwt1_x2")?,
            mask123_dwt23_x2: module.function("adm_mask123_dwt23_x2")?,
            mask123_x2: module.function("adm_mask123_x2")?,
            module,
        })
    }

    pub fn module(&self) -> &Module {
        &self.module
    }
}

/// adm.cu's `DwtArgs` (same field order and types).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct DwtArgs {
    reference: u64,
    distorted: u64,
    ref_pitch: u64,
    dis_pitch: u64,
    out: u64,
    out_pitch: u64,
    band_stride: u64,
    state: u64,
    oob_ref: u64,
    zero_out: u64,
    w_in: i32,
    h_in: i32,
    w_out: i32,
    h_out: i32,
    scale: i32,
    bpc: i32,
    vp_add: i32,
    vp_shift: i32,
    hp_add: i32,
    hp_shift: i32,
    tail: i32,
    oob_rows: i32,
    oob_cols: i32,
    next_tail_x: i32,
    frame_word_x: i32,
    ref_shift: i32,
    dis_shift: i32,
    pad: i32,
}

/// adm.cu's `MaskArgs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct MaskArgs {
    bands: u64,
    pitch: u64,
    band_stride: u64,
    rows: u64,
    row_count: u64,
    out: u64,
    result: u64,
    all_out: u64,
    rows_done: u64,
    gain_limit: f64,
    cos_1deg_sq: f64,
    mul: [i64; 3],
    csf_add: [i64; 3],
    sq_add: [i64; 3],
    cub_add: [i64; 3],
    den_sq_add: u64,
    den_cub_add: u64,
    idle: [i64; 3],
    inner_add: i64,
    den_row_add: u64,
    csf_shift: [i32; 3],
    thr_shift: [i32; 3],
    sq_shift: [i32; 3],
    cub_shift: [i32; 3],
    den_sq_shift: i32,
    den_cub_shift: i32,
    w: i32,
    h: i32,
    cm_x0: i32,
    cm_x1: i32,
    cm_y0: i32,
    cm_y1: i32,
    simd_x0: i32,
    simd_x1: i32,
    simd_y0: i32,
    simd_y1: i32,
    dec_s0: i32,
    dec_s1: i32,
    tiles_x: i32,
    inner_shift: i32,
    den_row_shift: i32,
    pad: i32,
}

/// What one scale's launches need.
struct ScalePlan {
    dwt: DwtArgs,
    dwt_grid: (u32, u32, u32),
    mask: MaskArgs,
    mask_grid: (u32, u32, u32),
}

/// The out-of-bounds row launch of pictures 17..32 rows tall (see `adm_fill_oob`).
struct OobPlan {
    row: i32,
    csf_x0: i32,
    csf_x1: i32,
    n: i32,
    out: u64,
}

/// ADM of one frame geometry on one context: device scratch and pinned result slots.
pub struct GpuAdm {
    // Completion of each slot's last frame (Drop waits for them before freeing anything); made
    // in `new` (an event never recorded counts as complete).
    done: Vec<Event>,
    /// Enqueued inside stream captures, or beside them ([`GpuAdm::set_captured`]): `done` is
    /// not used.
    captured: bool,
    slots: Vec<PinnedBuffer>,
    /// Each slot's address in device code (pinned memory under unified addressing), where the
    /// last masking kernel writes the results itself; None: a copy after it does.
    slot_device: Vec<Option<u64>>,
    plans: [ScalePlan; 4],
    oob: Option<OobPlan>,
    /// Per fused launch s (mask s with DWT s + 1): grid, mask blocks, DWT tiles per row.
    fused: [((u32, u32, u32), i32, i32); 3],
    geometry: AdmGeometry,
    width: usize,
    height: usize,
    bpc: u32,
    kernels: AdmKernels,
    ctx: Context,
    /// Device memory of every part (bands, state, results), kept alive for the kernels' raw
    /// pointers above.
    _scratch: DeviceBuffer,
    /// The state part: its address and bytes (`reset` zeroes it).
    state: (u64, usize),
    /// The results part (u64 [4][SUMS]).
    out: u64,
}

fn to_i32(v: usize, what: &str) -> CudaResult<i32> {
    i32::try_from(v).map_err(|_| CudaError::InvalidArgument(format!("ADM {what} {v} too large")))
}

fn blocks(n: usize, per: usize) -> CudaResult<u32> {
    u32::try_from(n.div_ceil(per))
        .map_err(|_| CudaError::InvalidArgument(format!("ADM launch of {n} too large")))
}

/// libvmaf's cube of a masked value 0: non-zero only when the cube's rounding constant
/// exceeds 2^shift (the shift-0 case), which idle AVX-512 lanes add.
fn cube_of_zero(k: &BandK) -> i64 {
    // ((0 * 0 + sq_add) >> sq_shift) * 0 vanishes: only the rounding constant remains
    k.cub_add >> k.cub_shift
}

impl GpuAdm {
    /// Sets up ADM of `width` x `height` planes of `bpc` bits (8..=16, at least 17x17) with
    /// `slots` pinned result slots, allocating all scratch.
    pub fn new(
        ctx: &Context,
        kernels: AdmKernels,
        width: usize,
        height: usize,
        bpc: u32,
        enhn_gain_limit: f64,
        slots: usize,
    ) -> CudaResult<GpuAdm> {
        if !kernels.module.context().same_as(ctx) {
            return Err(CudaError::InvalidArgument(
                "ADM kernels loaded in another context".into(),
            ));
        }
        if !(8..=16).contains(&bpc) {
            return Err(CudaError::InvalidArgument(format!("ADM bit depth {bpc}")));
        }
        if width < MIN_DIMENSION || height < MIN_DIMENSION {
            return Err(CudaError::InvalidArgument(format!(
                "ADM needs at least {MIN_DIMENSION}x{MIN_DIMENSION} pixels, got {width}x{height}"
            )));
        }
        if slots == 0 {
            return Err(CudaError::InvalidArgument("ADM with 0 result slots".into()));
        }
        to_i32(4 * width, "width")?;
        to_i32(height, "height")?;
        let geometry = AdmGeometry::new(width, height, bpc);
        let scales = geometry.scales();

        // Scratch, one allocation: per scale the 8 bands, then the state words, then the
        // results.
        let mut parts = Parts::default();
        let mut bands_at = [0usize; 4];
        let mut pitches = [0usize; 4];
        for (s, setup) in scales.iter().enumerate() {
            let elem = if s == 0 { 2 } else { 4 };
            let pitch = setup.w.div_ceil(PITCH_ELEMS) * PITCH_ELEMS;
            pitches[s] = pitch;
            bands_at[s] = parts.add(8 * pitch * setup.h * elem);
        }
        // State part offsets of each scale's row accumulators and row counters.
        let mut rows_at = [0usize; 4];
        let mut count_at = [0usize; 4];
        let mut state_bytes = (OOB_OFFSET + 4 * scales[0].w).div_ceil(8) * 8;
        for (s, setup) in scales.iter().enumerate() {
            rows_at[s] = state_bytes;
            state_bytes += (setup.geom.cm.y1 - setup.geom.cm.y0) * SUMS * 8;
        }
        for (s, setup) in scales.iter().enumerate() {
            count_at[s] = state_bytes;
            state_bytes += (setup.geom.cm.y1 - setup.geom.cm.y0) * 4;
        }
        let state_at = parts.add(state_bytes);
        let out_at = parts.add(4 * SUMS * 8);
        let mut scratch = DeviceBuffer::new(ctx, parts.bytes())?;
        // The state words start at 0 (libvmaf's fresh scratch memory), as do the masking rows'
        // accumulators and counters.
        scratch.zero(state_at..state_at + state_bytes)?;
        let bands = bands_at.map(|b| scratch.ptr() + b as u64);
        let (state, out) = (
            scratch.ptr() + state_at as u64,
            scratch.ptr() + out_at as u64,
        );
        let mut slot_buffers = (0..slots)
            .map(|_| PinnedBuffer::new(ctx, 4 * SUMS * 8))
            .collect::<CudaResult<Vec<_>>>()?;
        let slot_device = slot_buffers
            .iter_mut()
            .map(PinnedBuffer::device_address)
            .collect();
        let done = (0..slots)
            .map(|_| Event::new(ctx, false))
            .collect::<CudaResult<Vec<_>>>()?;

        let cos_1deg_sq = cos_1deg_sq() as f64;
        let mut plans = Vec::with_capacity(4);
        for (s, setup) in scales.iter().enumerate() {
            let pitch = pitches[s];
            let band_stride = (pitch * setup.h) as u64;
            let (in_w, in_h) = if s == 0 {
                (width, height)
            } else {
                (scales[s - 1].w, scales[s - 1].h)
            };
            let mut dwt = DwtArgs {
                out: bands[s],
                out_pitch: pitch as u64,
                band_stride,
                state,
                w_in: to_i32(in_w, "width")?,
                h_in: to_i32(in_h, "height")?,
                w_out: to_i32(setup.w, "width")?,
                h_out: to_i32(setup.h, "height")?,
                scale: s as i32,
                bpc: bpc as i32,
                tail: setup.dwt_tail as i32,
                next_tail_x: -1,
                frame_word_x: -1,
                zero_out: if s == 0 { out } else { 0 },
                ..DwtArgs::default()
            };
            if s > 0 {
                let prev_elem = if s == 1 { 2u64 } else { 4 };
                let prev_stride = (pitches[s - 1] * scales[s - 1].h) as u64;
                // Input: the previous scale's a bands (band 0 of each picture).
                dwt.reference = bands[s - 1];
                dwt.distorted = bands[s - 1] + 4 * prev_stride * prev_elem;
                dwt.ref_pitch = pitches[s - 1] as u64 * prev_elem;
                dwt.dis_pitch = dwt.ref_pitch;
                dwt.vp_add = S123_VP_ADD[s - 1] as i32;
                dwt.vp_shift = S123_VP_SHIFT[s - 1] as i32;
                dwt.hp_add = S123_HP_ADD[s - 1] as i32;
                dwt.hp_shift = S123_HP_SHIFT[s - 1] as i32;
                dwt.oob_rows = setup.oob_rows as i32;
                dwt.oob_cols = (setup.w == 2) as i32;
                dwt.oob_ref = state + OOB_OFFSET as u64;
                if s < 3 {
                    dwt.next_tail_x = to_i32(4 * setup.w, "width")?;
                }
                if width < 4 * in_w {
                    dwt.frame_word_x = to_i32(width, "width")?;
                }
            }
            let g = &setup.geom;
            let (cm, simd) = (g.cm, g.simd);
            let tiles_x = (cm.x1 - cm.x0).div_ceil(TILE_X);
            let dk = den_k(s, cm);
            let k = &setup.k;
            let idle = if simd.x1 > simd.x0 && simd.y1 > simd.y0 {
                2 * ((simd.x1 - simd.x0) / 14) as i64
            } else {
                0
            };
            let mask = MaskArgs {
                bands: bands[s],
                pitch: pitch as u64,
                band_stride,
                rows: state + rows_at[s] as u64,
                row_count: state + count_at[s] as u64,
                out: out + (s * SUMS * 8) as u64,
                result: 0,
                all_out: if s == 3 { out } else { 0 },
                rows_done: if s == 3 {
                    state + ROWS_DONE_OFFSET as u64
                } else {
                    0
                },
                gain_limit: enhn_gain_limit,
                cos_1deg_sq,
                mul: k.map(|k| k.mul),
                csf_add: k.map(|k| k.csf_add),
                sq_add: k.map(|k| k.sq_add),
                cub_add: k.map(|k| k.cub_add),
                den_sq_add: dk.sq_add,
                den_cub_add: dk.cub_add,
                idle: k.map(|k| idle.wrapping_mul(cube_of_zero(&k))),
                inner_add: g.inner_add,
                den_row_add: dk.row_add,
                csf_shift: k.map(|k| k.csf_shift as i32),
                thr_shift: k.map(|k| k.thr_shift as i32),
                sq_shift: k.map(|k| k.sq_shift as i32),
                cub_shift: k.map(|k| k.cub_shift as i32),
                den_sq_shift: dk.sq_shift as i32,
                den_cub_shift: dk.cub_shift as i32,
                w: dwt.w_out,
                h: dwt.h_out,
                cm_x0: cm.x0 as i32,
                cm_x1: cm.x1 as i32,
                cm_y0: cm.y0 as i32,
                cm_y1: cm.y1 as i32,
                simd_x0: simd.x0 as i32,
                simd_x1: simd.x1 as i32,
                simd_y0: simd.y0 as i32,
                simd_y1: simd.y1 as i32,
                dec_s0: setup.decouple_simd.0 as i32,
                dec_s1: setup.decouple_simd.1 as i32,
                tiles_x: to_i32(tiles_x, "width")?,
                inner_shift: g.inner_shift as i32,
                den_row_shift: dk.row_shift as i32,
                pad: 0,
            };
            plans.push(ScalePlan {
                dwt,
                dwt_grid: (blocks(setup.w, TILE_X)?, blocks(setup.h, TILE_Y)?, 1),
                mask,
                mask_grid: (
                    blocks(cm.x1 - cm.x0, TILE_X)?,
                    blocks(cm.y1 - cm.y0, TILE_Y)?,
                    1,
                ),
            });
        }
        let oob = scales[3].oob_rows.then(|| oob_plan(scales, state));
        let plans: [ScalePlan; 4] = plans
            .try_into()
            .map_err(|_| CudaError::InvalidArgument("ADM needs 4 scales".into()))?;
        let fused_plan = |s: usize| {
            let (mask, next) = (&plans[s], &plans[s + 1]);
            let mask_blocks = mask.mask_grid.0 * mask.mask_grid.1;
            let dwt_blocks = next.dwt_grid.0 * next.dwt_grid.1;
            (
                (mask_blocks + dwt_blocks, 1, 1),
                mask_blocks as i32,
                next.dwt_grid.0 as i32,
            )
        };
        let fused = [fused_plan(0), fused_plan(1), fused_plan(2)];
        Ok(GpuAdm {
            done,
            captured: false,
            slots: slot_buffers,
            slot_device,
            plans,
            oob,
            fused,
            geometry,
            width,
            height,
            bpc,
            kernels,
            ctx: ctx.clone(),
            _scratch: scratch,
            state: (state, state_bytes),
            out,
        })
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Whether a frame's sums depend on the previous frame of the session (libvmaf's DWT
    /// scratch word, as [`AdmExtractor::carries_state`]): then every frame of a session must go
    /// through this one `GpuAdm`, in order.
    ///
    /// [`AdmExtractor::carries_state`]: crate::features::adm::AdmExtractor::carries_state
    pub fn carries_state(&self) -> bool {
        self.geometry.scales()[0].dwt_tail
    }

    /// Number of result slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Starts a new libvmaf session on `stream` (the stream the frames go to): the state words
    /// and the counter return to zero, as in a freshly made `GpuAdm`, without reallocating.
    pub fn reset(&mut self, stream: &Stream) -> CudaResult<()> {
        if !stream.context().same_as(&self.ctx) {
            return Err(CudaError::InvalidArgument(
                "ADM: stream of another context".into(),
            ));
        }
        // SAFETY: our own state buffer, alive as long as self (whose drop waits for the slots'
        // last work); ordered after earlier frames by the stream.
        unsafe { memset_async(self.state.0, 0, self.state.1, stream) }
    }

    /// Enqueues the whole ADM of one pair on `stream` (of ctx), reading both planes in place,
    /// ending with an async copy of the integer results into pinned slot `slot`.
    ///
    /// # Safety
    /// Both planes are device memory of ctx, valid (and unwritten) until the stream work
    /// completes. Work of earlier frames must be ordered before this one (same stream).
    pub unsafe fn enqueue(
        &mut self,
        stream: &Stream,
        reference: &DevicePlane,
        distorted: &DevicePlane,
        slot: usize,
    ) -> CudaResult<()> {
        self.prepare(stream, reference, distorted, slot)?;
        // SAFETY: forwarded from this function's contract; prepared above.
        unsafe { launch(&[&*self], stream) }?;
        self.finish(stream, slot)
    }

    /// [`GpuAdm::enqueue`] of two frames of one geometry in one set of launches (each kernel's
    /// grid two deep, [`pairable`](GpuAdm::pairable)): `first`'s planes through `first` into
    /// its `slots.0`, `second`'s through `second` into its `slots.1`.
    ///
    /// # Safety
    /// As [`GpuAdm::enqueue`], for both frames; `first` and `second` are distinct instances
    /// (their scratch and state are the frames' own).
    pub unsafe fn enqueue_pair(
        first: &mut GpuAdm,
        second: &mut GpuAdm,
        stream: &Stream,
        frames: [(&DevicePlane, &DevicePlane); 2],
        slots: (usize, usize),
    ) -> CudaResult<()> {
        if !(first.pairable()
            && second.pairable()
            && (first.width, first.height, first.bpc) == (second.width, second.height, second.bpc))
        {
            return Err(CudaError::InvalidArgument(
                "ADM: a pair needs two instances of one geometry without carried state".into(),
            ));
        }
        first.prepare(stream, frames[0].0, frames[0].1, slots.0)?;
        second.prepare(stream, frames[1].0, frames[1].1, slots.1)?;
        // SAFETY: forwarded from this function's contract; both prepared above.
        unsafe { launch(&[&*first, &*second], stream) }?;
        first.finish(stream, slots.0)?;
        second.finish(stream, slots.1)
    }

    /// Whether this geometry's frames can be paired ([`GpuAdm::enqueue_pair`]): no word of
    /// state carried from frame to frame and no out-of-bounds row launch (pictures of 17..32
    /// rows).
    pub fn pairable(&self) -> bool {
        !self.carries_state() && self.oob.is_none()
    }

    /// Checks a frame's planes and slot and points the plans at them (the first step of an
    /// enqueue).
    fn prepare(
        &mut self,
        stream: &Stream,
        reference: &DevicePlane,
        distorted: &DevicePlane,
        slot: usize,
    ) -> CudaResult<()> {
        if slot >= self.slots.len() {
            return Err(CudaError::InvalidArgument(format!(
                "ADM slot {slot} of {}",
                self.slots.len()
            )));
        }
        if !stream.context().same_as(&self.ctx) {
            return Err(CudaError::InvalidArgument(
                "ADM: stream of another context".into(),
            ));
        }
        let bps = if self.bpc == 8 { 1 } else { 2 };
        for (what, p) in [("reference", reference), ("distorted", distorted)] {
            p.validate()?;
            if (p.width, p.height, p.bytes_per_sample) != (self.width, self.height, bps)
                || self.bpc + p.shift > 16
            {
                return Err(CudaError::InvalidArgument(format!(
                    "ADM {what} device plane {}x{} with {}-byte samples shifted by {}, \
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
        // The previous use of this slot must be over before its pinned memory is rewritten.
        if !self.captured {
            self.done[slot].synchronize()?;
        }
        let plan = &mut self.plans[0];
        plan.dwt.reference = reference.ptr;
        plan.dwt.distorted = distorted.ptr;
        plan.dwt.ref_pitch = reference.pitch as u64;
        plan.dwt.dis_pitch = distorted.pitch as u64;
        plan.dwt.ref_shift = reference.shift as i32;
        plan.dwt.dis_shift = distorted.shift as i32;
        // The last masking kernel completes the frame's results (each row's last warp adds the
        // row to them) and, given the slot's device address, writes them into the slot's 288
        // bytes (pinned, alive until the slot's event completed: Drop waits for it; prepare
        // waited for the slot's previous use).
        self.plans[3].mask.result = self.slot_device[slot].unwrap_or(0);
        Ok(())
    }

    /// After the launches: the results' copy where the kernel could not write them into the
    /// slot, and the slot's event.
    fn finish(&mut self, stream: &Stream, slot: usize) -> CudaResult<()> {
        if self.slot_device[slot].is_none() {
            let bytes = 4 * SUMS * 8;
            let dst = self.slots[slot].as_mut_ptr();
            // SAFETY: our 288-byte result buffer into the slot's 288-byte pinned buffer; both
            // live until the slot's event completed (Drop waits for it).
            unsafe { dtoh_async(dst, self.out, bytes, stream) }?;
        }
        if self.captured {
            return Ok(());
        }
        self.done[slot].record(stream)
    }

    /// Whether [`GpuAdm::enqueue`] may run inside a stream capture (an engine with CUDA
    /// graphs, which also launches some frames without): then it neither waits for nor records
    /// its own per-slot events (an event recorded in a capture is a graph node, not a marker
    /// the host can wait for), and the caller guarantees what they did: a slot's earlier frame
    /// is over before the slot is enqueued again, and the stream's work is over before this is
    /// dropped.
    pub fn set_captured(&mut self, captured: bool) {
        self.captured = captured;
    }

    /// The integer sums of `slot` (after its stream work completed).
    pub fn sums(&self, slot: usize) -> AdmSums {
        let mut v = [0u64; 4 * SUMS];
        if let Some(buf) = self.slots.get(slot) {
            for (dst, src) in v.iter_mut().zip(buf.as_slice().chunks_exact(8)) {
                let mut word = [0u8; 8];
                word.copy_from_slice(src);
                *dst = u64::from_ne_bytes(word);
            }
        }
        let mut sums = AdmSums::default();
        for s in 0..4 {
            for b in 0..3 {
                sums.num[s][b] = v[s * SUMS + b] as i64;
                sums.aim[s][b] = v[s * SUMS + 3 + b] as i64;
                sums.den[s][b] = v[s * SUMS + 6 + b];
            }
        }
        sums
    }

    /// After the stream work of `slot` completed: identical to `AdmExtractor::extract`.
    pub fn scores(&self, slot: usize) -> AdmScores {
        self.geometry.scores(&self.sums(slot))
    }
}

/// `x2` for a pair, else `single`.
fn pick<'f>(pair: bool, single: &'f Function, x2: &'f Function) -> &'f Function {
    if pair {
        x2
    } else {
        single
    }
}

/// The kernels of one frame (`adms` of one element) or of a pair (two, each kernel's grid two
/// deep, the `_x2` kernels: each argument set once per frame), all plans prepared: dwt0, then
/// (scale-3 oob row), then mask s fused with dwt s + 1, mask 3.
///
/// # Safety
/// As [`GpuAdm::enqueue`]; a pair has no oob row ([`GpuAdm::pairable`]).
unsafe fn launch(adms: &[&GpuAdm], stream: &Stream) -> CudaResult<()> {
    // Argument lists hold the first frame's, then the second's (the last frame's; for one frame
    // they are cut to the first's): fixed arrays, no allocation per launch.
    let (a, last) = match adms {
        [a] => (*a, *a),
        [a, b] => (*a, *b),
        _ => return Err(CudaError::InvalidArgument("ADM: one or two frames".into())),
    };
    let n = adms.len();
    let pair = n == 2;
    let k = &a.kernels;
    let depth = n as u32;
    let cfg = |(x, y, _): (u32, u32, u32)| LaunchConfig {
        grid: (x, y, depth),
        block: (TILE_X as u32, TILE_Y as u32, 1),
        shared_bytes: 0,
    };
    let dwt0 = if a.bpc == 8 {
        pick(pair, &k.dwt0_u8, &k.dwt0_u8_x2)
    } else {
        pick(pair, &k.dwt0_u16, &k.dwt0_u16_x2)
    };
    let dwt0_args = [arg(&a.plans[0].dwt), arg(&last.plans[0].dwt)];
    // SAFETY: the argument is adm.cu's DwtArgs (repr(C) mirror, passed by value), once per
    // frame; its pointers are our scratch (alive as long as self, and Drop waits for queued
    // work) and the caller's planes (valid per this function's contract), all accessed within
    // the sizes computed in `new`.
    unsafe { dwt0.launch(stream, cfg(a.plans[0].dwt_grid), &dwt0_args[..n]) }?;
    if let Some(oob) = &a.oob {
        let plan0 = &a.plans[0];
        let args = [
            arg(&plan0.mask),
            arg(&oob.row),
            arg(&oob.csf_x0),
            arg(&oob.csf_x1),
            arg(&oob.n),
            arg(&oob.out),
        ];
        let grid = blocks(oob.n as usize, TILE_X * TILE_Y)?;
        // SAFETY: (MaskArgs, int, int, int, int, unsigned long long) as declared in adm.cu;
        // reads the scale-0 bands written above, `out` holds n <= w0 words of our state.
        unsafe {
            k.fill_oob.launch(
                stream,
                LaunchConfig::linear(grid, (TILE_X * TILE_Y) as u32),
                &args,
            )
        }?;
    }
    for s in 0..3 {
        let (grid, mask_blocks, dwt_tiles_x) = &a.fused[s];
        let args = [
            arg(&a.plans[s].mask),
            arg(&a.plans[s + 1].dwt),
            arg(mask_blocks),
            arg(dwt_tiles_x),
            arg(&last.plans[s].mask),
            arg(&last.plans[s + 1].dwt),
        ];
        let kernel = if s == 0 {
            pick(pair, &k.mask0_dwt1, &k.mask0_dwt1_x2)
        } else {
            pick(pair, &k.mask123_dwt23, &k.mask123_dwt23_x2)
        };
        // SAFETY: (MaskArgs, DwtArgs, int, int), then for a pair the second frame's (MaskArgs,
        // DwtArgs), as declared in adm.cu; as above.
        unsafe { kernel.launch(stream, cfg(*grid), &args[..2 + 2 * n]) }?;
    }
    let args = [arg(&a.plans[3].mask), arg(&last.plans[3].mask)];
    // SAFETY: MaskArgs (per frame) as declared in adm.cu; as above; `result` is the slot's
    // pinned result or 0 (prepare).
    unsafe {
        pick(pair, &k.mask123, &k.mask123_x2).launch(stream, cfg(a.plans[3].mask_grid), &args[..n])
    }
}

impl Drop for GpuAdm {
    fn drop(&mut self) {
        // Queued kernels and copies use our buffers: wait for them before they are freed.
        for event in &self.done {
            if let Err(e) = event.synchronize() {
                eprintln!("vmafcuda: waiting for ADM work before freeing its buffers: {e}");
            }
        }
    }
}

/// Where the scale-3 DWT of a picture 17..32 rows tall finds its reference row -1.
fn oob_plan(scales: &[ScaleSetup], state: u64) -> OobPlan {
    let s0 = &scales[0];
    let (w0, h0) = (s0.w, s0.h);
    let csf = c_decouple_rect(w0, h0);
    let row = h0 - 2;
    let (x0, x1) = if row >= csf.y0 && row < csf.y1 {
        (csf.x0, csf.x1.min(w0))
    } else {
        (0, 0)
    };
    OobPlan {
        row: row as i32,
        csf_x0: x0 as i32,
        csf_x1: x1 as i32,
        n: scales[3].in_w as i32,
        out: state + OOB_OFFSET as u64,
    }
}

const _: () = assert!(STATE_WORDS * 4 <= ROWS_DONE_OFFSET && ROWS_DONE_OFFSET + 4 <= OOB_OFFSET);
const _: () = assert!(std::mem::size_of::<DwtArgs>() == 152);
const _: () = assert!(std::mem::size_of::<MaskArgs>() == 360);
