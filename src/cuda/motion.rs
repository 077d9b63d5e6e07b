//! libvmaf's integer motion on the GPU: per frame, the integer sum of |blurred(prev - cur)| of
//! the reference luma (`kernels/motion.cu`). The temporal logic (sad score, motion2 = min of
//! neighbours, motion3, the first frame's 0) stays on the host in
//! [`crate::features::motion::MotionExtractor`], shared with the CPU path, so the doubles are
//! identical.
//!
//! The previous reference luma lives in one of two device planes; each launch reads it, reads
//! the current frame in place and writes the current frame into the other plane, which becomes
//! the previous one for the next call (ping-pong, no separate copy). A frame is one launch: the
//! kernel's last block writes the sum into the slot's pinned result itself and leaves its
//! accumulator at zero for the next frame (where the driver gives pinned memory no device
//! address, into device memory and a copy follows).

use std::ffi::c_void;

use super::context::Context;
use super::copy::dtoh_async;
use super::error::{CudaError, CudaResult};
use super::kernels;
use super::memory::{DeviceBuffer, PinnedBuffer};
use super::module::{arg, Function, LaunchConfig, Module};
use super::plane::{DevicePlane, DevicePlaneBuf};
use super::stream::Stream;

/// Which of motion.cu's kernels an engine runs (see its header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MotionPath {
    /// 64x32 tiles of 32x8 threads through shared memory: short per block, many warps.
    Tiles,
    /// 120x32 tiles, a warp per strip of rows in registers: about half the instructions, but
    /// fewer warps that each work longer.
    Strips,
}

/// The largest frame that runs [`MotionPath::Tiles`] by default. Measured on an H200
/// (BENCHMARKS.md, 2026-11-28, stop 46), strips against tiles, alternated: 1920x1080 device
/// frames 11,796 / 12,054 against 11,689 / 11,702 fps, 3840x2160 3,255 against 3,218, 1080p
/// 10-bit 10,899 against 10,707, 16 x 1080p 11,970 against 11,611; 1280x720 23,141 against
/// 22,880 (even). At 576x324 the strip kernel alone takes 17.1 us against 11.8 (ncu: 55 blocks
/// of 4 warps for the picture), and motion runs in frame order beside the overlapping graphs;
/// frames of that size showed nothing either way (both builds read the size's two paces).
pub const STRIP_MIN_PIXELS: usize = 960 * 540;

impl MotionPath {
    /// The default for frames of `width` x `height`: strips above [`STRIP_MIN_PIXELS`];
    /// `VMAFCUDA_MOTION=tiles` or `strips` chooses one for every size (for measurements).
    pub fn for_size(width: usize, height: usize) -> MotionPath {
        match std::env::var("VMAFCUDA_MOTION").as_deref() {
            Ok("tiles") => MotionPath::Tiles,
            Ok("strips") => MotionPath::Strips,
            _ if width * height > STRIP_MIN_PIXELS => MotionPath::Strips,
            _ => MotionPath::Tiles,
        }
    }

    /// Output tile of one block (`kTileW` x `kTileH`).
    fn tile(self) -> (usize, usize) {
        match self {
            MotionPath::Tiles => (64, 32),
            MotionPath::Strips => (120, 32),
        }
    }

    /// Threads of a block: tiles 32x8; strips a warp per strip of the tile (`Shape::kRows`
    /// rows: 8 for 8-bit pictures, 4 for deeper ones).
    fn block(self, bpc: u32) -> (u32, u32, u32) {
        match self {
            MotionPath::Tiles => (32, 8, 1),
            MotionPath::Strips => (32, if bpc == 8 { 4 } else { 8 }, 1),
        }
    }
}

/// A frame's own arguments of a motion kernel (see [`GpuMotion::frame_args`]).
struct FrameArgs {
    prev: DevicePlane,
    cur: DevicePlane,
    store: DevicePlane,
    compute: i32,
    state: u64,
    result: u64,
}

impl FrameArgs {
    /// motion.cu's `MOTION_ARGS` with `shape` ([`GpuMotion::shape`]) in their places.
    fn args<'a>(&'a self, shape: &'a [i32; 4]) -> [*mut c_void; 13] {
        [
            arg(&self.prev.ptr),
            arg(&self.prev.pitch),
            arg(&self.cur.ptr),
            arg(&self.cur.pitch),
            arg(&self.store.ptr),
            arg(&self.store.pitch),
            arg(&shape[0]),
            arg(&shape[1]),
            arg(&shape[2]),
            arg(&shape[3]),
            arg(&self.compute),
            arg(&self.state),
            arg(&self.result),
        ]
    }

    /// A pair's second frame: `MOTION_ARGS_B` (the shape is the first frame's).
    fn second_args(&self) -> [*mut c_void; 9] {
        [
            arg(&self.prev.ptr),
            arg(&self.prev.pitch),
            arg(&self.cur.ptr),
            arg(&self.cur.pitch),
            arg(&self.store.ptr),
            arg(&self.store.pitch),
            arg(&self.compute),
            arg(&self.state),
            arg(&self.result),
        ]
    }
}

/// libvmaf sums a row of absolute values (each at most 65535) in a `uint32_t`; rows wider than
/// this could wrap it, which the kernel does not reproduce.
pub const MAX_WIDTH: usize = (u32::MAX / 65535) as usize;

/// The motion kernels of one context; cheap to clone.
#[derive(Clone)]
pub struct MotionKernels {
    tiles_u8: Function,
    tiles_u16: Function,
    strips_u8: Function,
    strips_u16: Function,
    /// The tile kernels for two frames in one launch ([`GpuMotion::enqueue_pair`]).
    tiles_u8_x2: Function,
    tiles_u16_x2: Function,
    module: Module,
}

impl MotionKernels {
    pub fn load(ctx: &Context) -> CudaResult<MotionKernels> {
        let module = kernels::MOTION.load(ctx)?;
        Ok(MotionKernels {
            tiles_u8: module.function("motion_tiles_u8")?,
            tiles_u16: module.function("motion_tiles_u16")?,
            strips_u8: module.function("motion_strips_u8")?,
            strips_u16: module.function("motion_strips_u16")?,
            tiles_u8_x2: module.function("motion_tiles_u8_x2")?,
            tiles_u16_x2: module.function("motion_tiles_u16_x2")?,
            module,
        })
    }

    pub fn module(&self) -> &Module {
        &self.module
    }
}

/// Motion of one session (shot): the previous reference luma on the device and per-slot sums.
pub struct GpuMotion {
    kernels: MotionKernels,
    prev: [DevicePlaneBuf; 2],
    /// Which of `prev` holds the previous frame.
    current: usize,
    /// Where the first frame of a pair writes its samples, which nothing reads (the second
    /// frame reads the first's picture itself): made with `pairs`.
    spare: Option<DevicePlaneBuf>,
    /// Frames enqueued in this session.
    frames: usize,
    /// The kernel's accumulator and block counter (two `u64`, zero between frames), and a second
    /// pair of them for a pair's second frame.
    state: DeviceBuffer,
    /// One `u64` sum per slot, written by the kernel through `host_device` (or into `results`
    /// and copied).
    host: PinnedBuffer,
    host_device: Option<u64>,
    results: DeviceBuffer,
    /// Whether the slot's frame had a predecessor (a sum to read).
    has_sum: Vec<bool>,
    width: usize,
    height: usize,
    bpc: u32,
    path: MotionPath,
}

impl GpuMotion {
    /// Motion of `width` x `height` pictures on `path`'s kernels (engines take
    /// [`MotionPath::for_size`]); `pairs`: frames may also come in pairs
    /// ([`GpuMotion::enqueue_pair`], on the tile kernels).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &Context,
        kernels: MotionKernels,
        width: usize,
        height: usize,
        bpc: u32,
        slots: usize,
        path: MotionPath,
        pairs: bool,
    ) -> CudaResult<GpuMotion> {
        if !(8..=16).contains(&bpc) {
            return Err(CudaError::InvalidArgument(format!(
                "motion: bit depth {bpc}"
            )));
        }
        if width == 0 || height == 0 || width > MAX_WIDTH || slots == 0 {
            return Err(CudaError::InvalidArgument(format!(
                "motion: {width}x{height} with {slots} slots"
            )));
        }
        let bps = if bpc == 8 { 1 } else { 2 };
        let mut host = PinnedBuffer::new(ctx, 8 * slots)?;
        let prev = [
            DevicePlaneBuf::new(ctx, width, height, bps)?,
            DevicePlaneBuf::new(ctx, width, height, bps)?,
        ];
        Ok(GpuMotion {
            kernels,
            prev,
            current: 0,
            spare: if pairs && path == MotionPath::Tiles {
                Some(DevicePlaneBuf::new(ctx, width, height, bps)?)
            } else {
                None
            },
            frames: 0,
            state: {
                let mut state = DeviceBuffer::new(ctx, 32)?;
                state.zero(0..32)?;
                state
            },
            host_device: host.device_address(),
            host,
            results: DeviceBuffer::new(ctx, 8 * slots)?,
            has_sum: vec![false; slots],
            width,
            height,
            bpc,
            path,
        })
    }

    /// Starts a new session: the next frame is a first frame (no motion).
    pub fn reset(&mut self) {
        self.frames = 0;
    }

    /// Enqueues the motion sum of the next reference frame into `slot`.
    ///
    /// # Safety
    /// `reference` is device memory of this context with this geometry, valid until the work
    /// enqueued here has completed on `stream`; `slot`'s previous result has been read.
    pub unsafe fn enqueue(
        &mut self,
        stream: &Stream,
        reference: &DevicePlane,
        slot: usize,
    ) -> CudaResult<()> {
        self.check(reference, slot)?;
        let prev = self.prev[self.current].plane();
        let store = self.prev[1 - self.current].plane();
        let a = self.frame_args(prev, reference, store, self.frames > 0, 0, slot)?;
        let k = &self.kernels;
        let f = match (self.path, self.bpc == 8) {
            (MotionPath::Tiles, true) => &k.tiles_u8,
            (MotionPath::Tiles, false) => &k.tiles_u16,
            (MotionPath::Strips, true) => &k.strips_u8,
            (MotionPath::Strips, false) => &k.strips_u16,
        };
        let shape = self.shape(reference.shift);
        let args = a.args(&shape);
        // SAFETY: the signature is (const u8* prev, size_t, const u8* cur, size_t, u8* store,
        // size_t, int w, int h, int bpc, int shift, int compute, unsigned long long* state,
        // unsigned long long* result): CUdeviceptr and usize match pointers and size_t, i32
        // matches int. prev/store are our planes of this geometry, the reference is valid per
        // the caller, state holds 16 bytes (zero between launches, which this stream orders),
        // result 8 bytes of our pinned slot or device results (owned by self, which outlives
        // the stream's work: the engine drains before dropping us).
        unsafe { f.launch(stream, self.config(1), &args) }?;
        self.finish(stream, slot, a.compute != 0)?;
        self.current = 1 - self.current;
        self.frames += 1;
        Ok(())
    }

    /// [`GpuMotion::enqueue`] of the next two reference frames in one launch (the tile kernel's
    /// grid two deep), into `slots.0` and `slots.1`: the second frame's previous picture is
    /// the first's own, read in place, so the two need no order between them. Needs an
    /// instance made with `pairs` on the tile kernels, and unshifted (LSB-aligned) pictures
    /// ([`GpuMotion::pairable`]).
    ///
    /// # Safety
    /// As [`GpuMotion::enqueue`], for both pictures.
    pub unsafe fn enqueue_pair(
        &mut self,
        stream: &Stream,
        references: [&DevicePlane; 2],
        slots: (usize, usize),
    ) -> CudaResult<()> {
        let spare =
            match &self.spare {
                Some(spare) if self.pairable(references) => spare.plane(),
                _ => return Err(CudaError::InvalidArgument(
                    "motion: a pair needs the tile kernels, a spare plane and unshifted pictures"
                        .into(),
                )),
            };
        self.check(references[0], slots.0)?;
        self.check(references[1], slots.1)?;
        let prev = self.prev[self.current].plane();
        let store = self.prev[1 - self.current].plane();
        let a = self.frame_args(prev, references[0], spare, self.frames > 0, 0, slots.0)?;
        let b = self.frame_args(*references[0], references[1], store, true, 16, slots.1)?;
        let f = if self.bpc == 8 {
            &self.kernels.tiles_u8_x2
        } else {
            &self.kernels.tiles_u16_x2
        };
        let shape = self.shape(0);
        let mut args = a.args(&shape).to_vec();
        args.extend_from_slice(&b.second_args());
        // SAFETY: MOTION_ARGS then MOTION_ARGS_B of motion.cu (types as in enqueue). The first
        // frame stores into the spare plane, which nothing reads; the second reads the first
        // frame's picture (valid per the caller, LSB-aligned: pairable) and stores into the
        // plane that becomes the previous one; each has its own half of the state (32 bytes,
        // zero between launches) and its slot's result.
        unsafe { f.launch(stream, self.config(2), &args) }?;
        self.finish(stream, slots.0, a.compute != 0)?;
        self.finish(stream, slots.1, true)?;
        self.current = 1 - self.current;
        self.frames += 2;
        Ok(())
    }

    /// Whether [`GpuMotion::enqueue_pair`] takes these two pictures.
    pub fn pairable(&self, references: [&DevicePlane; 2]) -> bool {
        self.spare.is_some()
            && self.path == MotionPath::Tiles
            && references.iter().all(|r| r.shift == 0)
    }

    /// The launch of one frame (`depth` 1) or of a pair (2, the `_x2` kernels).
    fn config(&self, depth: u32) -> LaunchConfig {
        let (tile_w, tile_h) = self.path.tile();
        LaunchConfig {
            grid: (
                self.width.div_ceil(tile_w) as u32,
                self.height.div_ceil(tile_h) as u32,
                depth,
            ),
            block: self.path.block(self.bpc),
            shared_bytes: 0,
        }
    }

    /// The kernels' shared arguments: width, height, bit depth and the pictures' shift.
    fn shape(&self, shift: u32) -> [i32; 4] {
        [
            self.width as i32,
            self.height as i32,
            self.bpc as i32,
            shift as i32,
        ]
    }

    fn check(&self, reference: &DevicePlane, slot: usize) -> CudaResult<()> {
        let bps = if self.bpc == 8 { 1 } else { 2 };
        reference.validate()?;
        if (
            reference.width,
            reference.height,
            reference.bytes_per_sample,
        ) != (self.width, self.height, bps)
            || self.bpc + reference.shift > 16
        {
            return Err(CudaError::InvalidArgument(format!(
                "motion: plane {}x{} ({} bytes/sample, shift {}), expected {}x{} ({bps}, {}-bit)",
                reference.width,
                reference.height,
                reference.bytes_per_sample,
                reference.shift,
                self.width,
                self.height,
                self.bpc
            )));
        }
        if slot >= self.has_sum.len() {
            return Err(CudaError::InvalidArgument(format!("motion: slot {slot}")));
        }
        Ok(())
    }

    /// One frame's per-frame arguments: its planes, whether it has a predecessor, its half of
    /// the state (byte offset 0 or 16) and its slot's result address.
    fn frame_args(
        &self,
        prev: DevicePlane,
        cur: &DevicePlane,
        store: DevicePlane,
        compute: bool,
        state_offset: u64,
        slot: usize,
    ) -> CudaResult<FrameArgs> {
        let result = match self.host_device {
            Some(host) => host + 8 * slot as u64,
            None => self.results.ptr_at(8 * slot, 8)?,
        };
        Ok(FrameArgs {
            prev,
            cur: *cur,
            store,
            compute: i32::from(compute),
            state: self.state.ptr() + state_offset,
            result,
        })
    }

    /// After a frame's launch: the copy of its sum where the kernel could not write it into the
    /// slot, and whether the slot has one.
    fn finish(&mut self, stream: &Stream, slot: usize, computed: bool) -> CudaResult<()> {
        if computed && self.host_device.is_none() {
            let device_result = self.results.ptr_at(8 * slot, 8)?;
            // SAFETY: 8 bytes from our device result into our pinned slot; both owned by self.
            unsafe {
                dtoh_async(
                    self.host.as_mut_ptr().add(8 * slot),
                    device_result,
                    8,
                    stream,
                )
            }?;
        }
        self.has_sum[slot] = computed;
        Ok(())
    }

    /// After `slot`'s work completed: the frame's sum (`None` for a session's first frame).
    pub fn sum(&self, slot: usize) -> CudaResult<Option<u64>> {
        if !self.has_sum.get(slot).copied().unwrap_or(false) {
            return Ok(None);
        }
        let sums = self.host.typed::<u64>(self.has_sum.len())?;
        Ok(Some(sums[slot]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_above_960x540_tiles_up_to_it() {
        if std::env::var_os("VMAFCUDA_MOTION").is_some() {
            return; // (an override chooses for every size)
        }
        for (w, h, path) in [
            (176, 144, MotionPath::Tiles),
            (576, 324, MotionPath::Tiles),
            (960, 540, MotionPath::Tiles),
            (961, 540, MotionPath::Strips),
            (1280, 720, MotionPath::Strips),
            (3840, 2160, MotionPath::Strips),
        ] {
            assert_eq!(MotionPath::for_size(w, h), path, "{w}x{h}");
        }
        assert_eq!(MotionPath::Strips.block(8), (32, 4, 1));
        assert_eq!(MotionPath::Strips.block(10), (32, 8, 1));
        assert_eq!(MotionPath::Tiles.block(10), (32, 8, 1));
    }
}
