//! libvmaf's integer ADM (Additive Detail Measure) feature extractor, bit-exact with libvmaf
//! 3.2.0 (`integer_adm.c`): `integer_adm2`, `integer_adm_scale0..3`, `integer_aim` and
//! `integer_adm3` for a pair of luma planes.
//!
//! Pipeline per scale (0 works on the picture, 1..3 on the previous scale's approximation band):
//! integer Daubechies-2 DWT of both pictures (`dwt`), decoupling of the distorted detail bands
//! into a restored part `r` and an additive part `a` (`decouple`), the CSF-weighted,
//! contrast-masked cube sum of `r` masked by `a` (the numerator), the cube sum of the
//! reference's bands (the denominator), and the same masking with the roles of `r` and `a`
//! swapped (AIM) (`masking`).
//!
//! # Which libvmaf
//!
//! The reference scores come from libvmaf's x86 AVX-512 build, and its AVX-512 kernels do not
//! always compute what its scalar C code does. This module reproduces the AVX-512 build; it was
//! checked bit for bit against it (libvmaf's own `integer_adm.c` + `adm_avx512.c` driven on
//! synthetic worst cases, see `tests/feature_adm.rs`). The differences, all emulated here:
//!
//! * Masking threshold centre term `|csf| / 15` (scale 0): the scalar code truncates it to
//!   `int16_t`, the vector code does not. Matters next to strong thin edges (|csf| >= 15360);
//!   which pixels take which path follows the AVX-512 loop structure (`MaskGeom::simd`).
//! * `(uint32_t)pow(2, shift - 1)` with `shift == 0` (scale-0 h/v cubes of bands at most 16
//!   wide, i.e. pictures at most 32 wide) is 2^32 - 1 under AVX-512 (0 in the C build), and for
//!   bands exactly 16 wide the two idle lanes of each 16-lane block add it again.
//! * Horizontal DWT vector blocks that contain a row's last output column read that column's
//!   taps linearly past the row end instead of mirroring (scale 0 when `(w/2 - 1) % 32 == 0`
//!   (8-bit) or `% 64` (deeper), scales 1..3 when `% 8`). What they read is libvmaf's scratch
//!   memory: the next scratch row, or words left by the previous DWT level / previous frame.
//! * Non-integer gain limits: the vector decouple rounds `rst * gain` to nearest-even, the
//!   scalar one truncates.
//!
//! Shared by both builds and reproduced too: the index table of tiny DWT inputs (3..4 long)
//! reads row/column -1 unmirrored (pictures 17..32 pixels in a dimension), which in libvmaf's
//! buffer layout holds the tail of the scale-0 AIM CSF d band (reference) and zeros
//! (distorted); rounding constants stored in `int32_t` that turn into -2^31; `int16_t`
//! truncations; the float/double order of every final conversion.
//!
//! Frames must be at least 17x17 (libvmaf itself crashes at 16 and below): [`AdmExtractor::new`]
//! panics otherwise. An extractor keeps one word of state between frames (the DWT scratch word
//! above), like libvmaf's; use a fresh one per libvmaf session (per shot).

mod consts;
mod decouple;
#[cfg(target_arch = "aarch64")]
mod decouple_aarch64;
#[cfg(target_arch = "x86_64")]
mod decouple_x86;
mod dwt;
#[cfg(target_arch = "x86_64")]
mod dwt_x86;
mod masking;

use super::simd::SimdLevel;
use crate::frame::{Plane, Samples};
pub(crate) use consts::{cos_1deg_sq, S123_HP_ADD, S123_HP_SHIFT, S123_VP_ADD, S123_VP_SHIFT};
use consts::{
    div_lookup, rfactor, rfactor_q32, BORDER_FACTOR, CSF0_ADD, CSF0_MUL, CSF0_SHIFT, DLM_WEIGHT,
    NOISE_WEIGHT, S123_NUM_EXP,
};
use decouple::{decouple, decouple_px, DecoupleParams};
use dwt::{dwt_s123, dwt_scale0, scratch_word, DwtScratch, OutOfBounds};
use masking::{
    ceil_u32, contrast_masking, den_s123, den_s123_float, den_scale0, den_scale0_float, round_add,
    MaskScratch, Scale0, Scale123,
};
pub(crate) use masking::{den_k, BandK, MaskGeom};

/// libvmaf's default `adm_enhn_gain_limit` (`vmaf_v0.6.1neg` uses 1.0).
pub const DEFAULT_ADM_ENHN_GAIN_LIMIT: f64 = 100.0;

/// Smallest width and height libvmaf's ADM survives.
pub const MIN_DIMENSION: usize = 17;

/// ADM features of one frame, as libvmaf reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AdmScores {
    /// `integer_adm2`
    pub adm2: f64,
    /// `integer_adm_scale0..3`
    pub scale: [f64; 4],
    /// `integer_aim`
    pub aim: f64,
    /// `integer_adm3`
    pub adm3: f64,
}

/// The integer results of one frame's ADM, before libvmaf converts anything to floating point.
/// Both the CPU path and the GPU kernels compute exactly these; [`AdmGeometry::scores`] turns
/// them into [`AdmScores`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmSums {
    /// Contrast-masking accumulators (restored part masked by the additive part), per scale
    /// and band (h, v, d), wrapping like libvmaf's `int64_t`.
    pub num: [[i64; 3]; 4],
    /// The same with the roles of the two parts swapped (AIM).
    pub aim: [[i64; 3]; 4],
    /// Denominator sums of the reference bands' cubes (rows shifted on the way).
    pub den: [[u64; 3]; 4],
}

/// The per-scale constants of one frame size: what the integer stages need, and the final
/// float conversions shared by the CPU and GPU paths.
#[derive(Clone, Debug)]
pub struct AdmGeometry {
    width: usize,
    height: usize,
    scales: Vec<ScaleSetup>,
}

impl AdmGeometry {
    /// Constants for `width` x `height` pictures of `bpc` bits (at least 17x17, 8..=16 bits).
    pub fn new(width: usize, height: usize, bpc: u32) -> AdmGeometry {
        let mut scales = Vec::with_capacity(4);
        let (mut in_w, mut in_h) = (width, height);
        for s in 0..4 {
            let (w, h) = (in_w.div_ceil(2), in_h.div_ceil(2));
            scales.push(ScaleSetup::new(s, w, h, in_w, in_h, bpc));
            (in_w, in_h) = (w, h);
        }
        AdmGeometry {
            width,
            height,
            scales,
        }
    }

    /// The four scales' constants.
    pub(crate) fn scales(&self) -> &[ScaleSetup] {
        &self.scales
    }

    /// libvmaf's float conversions of one frame's integer sums: the numerators' and
    /// denominators' cube roots per scale, then adm2, the per-scale ratios, aim and adm3.
    pub fn scores(&self, sums: &AdmSums) -> AdmScores {
        let mut nums = [0f32; 4];
        let mut dens = [0f32; 4];
        let mut aims = [0f32; 4];
        for (scale, s) in self.scales.iter().enumerate() {
            nums[scale] = s.numerator(scale, sums.num[scale], true);
            aims[scale] = s.numerator(scale, sums.aim[scale], false);
            dens[scale] = if scale == 0 {
                den_scale0_float(sums.den[0], s.geom.cm, s.rf)
            } else {
                den_s123_float(scale, sums.den[scale], s.geom.cm, s.rf)
            };
        }

        let mut num = 0f64;
        let mut den = 0f64;
        let mut aim_num = 0f64;
        for s in 0..4 {
            num += nums[s] as f64;
            den += dens[s] as f64;
            aim_num += aims[s] as f64;
        }
        let limit = 1e-10 * (self.width * self.height) as f64 / (1920.0 * 1080.0);
        if num < limit {
            num = 0.0;
        }
        if den < limit {
            den = 0.0;
        }
        // den is at least the noise floor terms, so it is never 0 for supported sizes; libvmaf
        // would leave aim uninitialised there.
        let (adm2, aim) = if den == 0.0 {
            (1.0, 0.0)
        } else {
            (num / den, aim_num / den)
        };
        let adm3 = adm2 * DLM_WEIGHT + (1.0 - aim) * (1.0 - DLM_WEIGHT);
        AdmScores {
            adm2,
            scale: std::array::from_fn(|s| nums[s] as f64 / dens[s] as f64),
            aim,
            adm3: if adm3 > 0.0 { adm3 } else { 0.0 },
        }
    }
}

/// Band coefficient type: i16 at scale 0, i32 at scales 1..3.
trait Coef: Copy + Default + Send + Sync + 'static {
    /// Whether the type is 16-bit.
    const NARROW: bool;
    fn get(self) -> i32;
    /// Store with C's truncating conversion.
    fn wrap(v: i32) -> Self;
    /// The slice as 16-bit coefficients, if that is what they are.
    fn as_i16(s: &[Self]) -> Option<&[i16]>;
    /// The same for an output slice.
    fn as_i16_mut(s: &mut [Self]) -> Option<&mut [i16]>;
}
impl Coef for i16 {
    const NARROW: bool = true;
    #[inline(always)]
    fn get(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn wrap(v: i32) -> Self {
        v as i16
    }
    fn as_i16(s: &[Self]) -> Option<&[i16]> {
        Some(s)
    }
    fn as_i16_mut(s: &mut [Self]) -> Option<&mut [i16]> {
        Some(s)
    }
}
impl Coef for i32 {
    const NARROW: bool = false;
    #[inline(always)]
    fn get(self) -> i32 {
        self
    }
    #[inline(always)]
    fn wrap(v: i32) -> Self {
        v
    }
    fn as_i16(_: &[Self]) -> Option<&[i16]> {
        None
    }
    fn as_i16_mut(_: &mut [Self]) -> Option<&mut [i16]> {
        None
    }
}

/// A row-major plane of band coefficients (stride = width); capacity is kept across reshapes.
#[derive(Clone, Debug, Default)]
struct Band<T> {
    data: Vec<T>,
    w: usize,
    h: usize,
}

impl<T: Copy + Default> Band<T> {
    fn new(w: usize, h: usize) -> Self {
        Band {
            data: vec![T::default(); w * h],
            w,
            h,
        }
    }
    /// Sets the dimensions (never shrinks the allocation).
    fn reshape(&mut self, w: usize, h: usize) {
        if self.data.len() < w * h {
            self.data.resize(w * h, T::default());
        }
        self.w = w;
        self.h = h;
    }
    #[inline]
    fn row(&self, i: usize) -> &[T] {
        &self.data[i * self.w..(i + 1) * self.w]
    }
    #[inline]
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        &mut self.data[i * self.w..(i + 1) * self.w]
    }
}

/// The four DWT bands of one picture at one scale.
#[derive(Clone, Debug, Default)]
struct Bands<T> {
    /// lo/lo (approximation)
    a: Band<T>,
    /// lo vertical, hi horizontal
    v: Band<T>,
    /// hi vertical, lo horizontal
    h: Band<T>,
    /// hi/hi
    d: Band<T>,
}

impl<T: Copy + Default> Bands<T> {
    fn new(w: usize, h: usize) -> Self {
        Bands {
            a: Band::new(w, h),
            v: Band::new(w, h),
            h: Band::new(w, h),
            d: Band::new(w, h),
        }
    }
    /// h, v, d in libvmaf's theta order.
    fn hvd(&self) -> [&Band<T>; 3] {
        [&self.h, &self.v, &self.d]
    }
}

/// Half-open rectangle of band coordinates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rect {
    pub(crate) x0: usize,
    pub(crate) x1: usize,
    pub(crate) y0: usize,
    pub(crate) y1: usize,
}

/// libvmaf's `(int)(n * ADM_BORDER_FACTOR - 0.5 - extra)`.
fn border(n: usize, extra: f64) -> i64 {
    (n as f64 * BORDER_FACTOR - 0.5 - extra) as i64
}

/// The region the score covers (and the denominator sums): 10% off every side.
fn score_rect(w: usize, h: usize) -> Rect {
    let (l, t) = (
        border(w, 0.0).max(0) as usize,
        border(h, 0.0).max(0) as usize,
    );
    Rect {
        x0: l,
        x1: w - l,
        y0: t,
        y1: h - t,
    }
}

/// The region libvmaf's decouple and CSF steps write (`score_rect` plus filter margins).
pub(crate) fn c_decouple_rect(w: usize, h: usize) -> Rect {
    let side = |n: usize| {
        let lo = border(n, 1.0);
        let hi = n as i64 - lo + 2;
        (lo.max(0) as usize, hi.min(n as i64) as usize)
    };
    let (x0, x1) = side(w);
    let (y0, y1) = side(h);
    Rect { x0, x1, y0, y1 }
}

/// Per-scale constants.
#[derive(Clone, Debug)]
pub(crate) struct ScaleSetup {
    pub(crate) w: usize,
    pub(crate) h: usize,
    pub(crate) geom: MaskGeom,
    pub(crate) k: [BandK; 3],
    /// Exponents turning the numerator accumulators into floats.
    pub(crate) num_exp: [u32; 3],
    /// rfactor (float 1/Q) for the denominator.
    pub(crate) rf: [f32; 3],
    /// Whether this scale's DWT reads row / column -1 of its input (inputs 3..4 long).
    pub(crate) oob_rows: bool,
    /// Columns of libvmaf's AVX-512 decouple loop.
    pub(crate) decouple_simd: (usize, usize),
    /// Width of this scale's DWT input.
    pub(crate) in_w: usize,
    /// Whether libvmaf's AVX-512 horizontal DWT computes this scale's last output column
    /// without mirroring (see `dwt::apply_tail`).
    pub(crate) dwt_tail: bool,
}

impl ScaleSetup {
    fn new(scale: usize, w: usize, h: usize, in_w: usize, in_h: usize, bpc: u32) -> Self {
        let cm = score_rect(w, h);
        let grown = Rect {
            x0: cm.x0.saturating_sub(1),
            x1: (cm.x1 + 1).min(w),
            y0: cm.y0.saturating_sub(1),
            y1: (cm.y1 + 1).min(h),
        };
        let inner_shift = ceil_u32((h as f64).log2());
        let mut simd = Rect::default();
        let mut k = [BandK::default(); 3];
        let mut num_exp = [0u32; 3];
        if scale == 0 {
            // libvmaf's AVX-512 masking loop covers whole 14-column groups of the interior
            // (only when the score region leaves both band edges out), rows 1..h-1.
            if cm.x0 > 0 && cm.x1 < w {
                let (c0, c1) = (cm.x0.max(1), cm.x1.min(w - 1));
                let c1 = c1 - (c1 - c0) % 14;
                simd = Rect {
                    x0: c0,
                    x1: c1,
                    y0: cm.y0.max(1),
                    y1: cm.y1.min(h - 1),
                };
            }
            let lw = (w as f64).log2();
            let cub = [ceil_u32(lw - 4.0), ceil_u32(lw - 4.0), ceil_u32(lw - 3.0)];
            for b in 0..3 {
                k[b] = BandK {
                    mul: CSF0_MUL[b] as i64,
                    csf_add: CSF0_ADD[b] as i64,
                    csf_shift: CSF0_SHIFT[b],
                    thr_shift: if b == 2 { 12 } else { 10 },
                    sq_add: if b == 2 { 1 << 29 } else { 1 << 28 },
                    sq_shift: if b == 2 { 30 } else { 29 },
                    cub_add: round_add(cub[b]),
                    cub_shift: cub[b],
                };
                let base = if b == 2 { 57u32 } else { 52 };
                num_exp[b] = base.wrapping_sub(cub[b]).wrapping_sub(inner_shift);
            }
        } else {
            let rf = rfactor_q32(scale);
            let cub = ceil_u32((w as f64).log2());
            for b in 0..3 {
                k[b] = BandK {
                    mul: rf[b] as i64,
                    csf_add: 1 << 27,
                    csf_shift: 28,
                    thr_shift: 0,
                    sq_add: 1 << 29,
                    sq_shift: 30,
                    cub_add: round_add(cub),
                    cub_shift: cub,
                };
                num_exp[b] = S123_NUM_EXP[scale - 1]
                    .wrapping_sub(cub)
                    .wrapping_sub(inner_shift);
            }
        }
        ScaleSetup {
            w,
            h,
            geom: MaskGeom {
                w,
                h,
                cm,
                grown,
                simd,
                inner_add: round_add(inner_shift),
                inner_shift,
            },
            k,
            num_exp,
            rf: rfactor(scale),
            oob_rows: scale > 0 && in_h.div_ceil(2) == 2,
            decouple_simd: {
                let c = c_decouple_rect(w, h);
                (c.x0, c.x1 - (c.x1 - c.x0) % 16)
            },
            in_w,
            dwt_tail: {
                // vector block of the horizontal pass: 32 (8-bit) / 64 (deeper) at scale 0,
                // 8 at scales 1..3
                let block = match (scale, bpc) {
                    (0, 8) => 32,
                    (0, _) => 64,
                    _ => 8,
                };
                w >= 2 && (w - 1).is_multiple_of(block)
            },
        }
    }

    /// Numerator of one masking pass (`noise` = false for AIM, whose noise weight is 0).
    fn numerator(&self, scale: usize, acc: [i64; 3], noise: bool) -> f32 {
        let cm = self.geom.cm;
        let area = ((cm.y1 - cm.y0) * (cm.x1 - cm.x0)) as f64;
        let nw = if noise { NOISE_WEIGHT } else { 0.0 };
        let floor = ((area * nw) as f32).powf(1.0 / 3.0);
        let mut out = 0f32;
        for (b, (&acc, &exp)) in acc.iter().zip(&self.num_exp).enumerate() {
            let f = if scale == 0 {
                let div = 2f64.powf(exp as f64);
                if b == 0 {
                    // libvmaf's AVX-512 code rounds this one to float before dividing.
                    ((acc as f32) as f64 / div) as f32
                } else {
                    (acc as f64 / div) as f32
                }
            } else {
                let div = 2f64.powf(exp as f64) as f32;
                acc as f32 / div
            };
            out += f.powf(1.0 / 3.0) + floor;
        }
        out
    }
}

/// Integer ADM extractor for one frame size and bit depth; owns all scratch buffers.
pub struct AdmExtractor {
    width: usize,
    height: usize,
    bpc: u32,
    gain_limit: f64,
    geometry: AdmGeometry,
    cos_1deg_sq: f64,
    ref0: Bands<i16>,
    dis0: Bands<i16>,
    ref123: Vec<Bands<i32>>,
    dis123: Vec<Bands<i32>>,
    r16: [Band<i16>; 3],
    a16: [Band<i16>; 3],
    r32: [Band<i32>; 3],
    a32: [Band<i32>; 3],
    dwt: DwtScratch,
    mask: MaskScratch,
    /// Row -1 of the reference / distorted input of a DWT level whose input is 3..4 rows tall
    /// (see `fill_oob_rows`).
    oob_ref: Vec<i32>,
    oob_dis: Vec<i32>,
    /// Word `width` of libvmaf's int32 DWT scratch area as the previous frame left it (read by
    /// the scale-0 DWT when `dwt_tail`); 0 before the first frame (fresh memory).
    prev_word: i32,
    simd: SimdLevel,
}

impl AdmExtractor {
    /// Whether a frame's scores depend on the previous frame of the session (libvmaf's DWT
    /// scratch word, see the module docs): then frames of one session must go through one
    /// extractor in order, and a new session needs [`AdmExtractor::new_session`].
    pub fn carries_state(&self) -> bool {
        self.geometry.scales[0].dwt_tail
    }

    /// Starts a new libvmaf session: forgets the previous frame's scratch word.
    pub fn new_session(&mut self) {
        self.prev_word = 0;
    }

    /// An extractor for `width` x `height` pictures of `bpc` bits (8..=16).
    ///
    /// Panics if the size is below 17x17 (libvmaf crashes at 16; callers reject such input
    /// first) or `bpc` is outside 8..=16.
    pub fn new(width: usize, height: usize, bpc: u32, enhn_gain_limit: f64) -> Self {
        assert!(
            width >= MIN_DIMENSION && height >= MIN_DIMENSION,
            "ADM needs at least {MIN_DIMENSION}x{MIN_DIMENSION} pixels, got {width}x{height}"
        );
        assert!((8..=16).contains(&bpc), "unsupported bit depth {bpc}");
        let geometry = AdmGeometry::new(width, height, bpc);
        let scales = &geometry.scales;
        let (w0, h0) = (scales[0].w, scales[0].h);
        let (w1, h1) = (scales[1].w, scales[1].h);
        let mk16 = || Band::<i16>::new(w0, h0);
        let mk32 = || Band::<i32>::new(w1, h1);
        AdmExtractor {
            width,
            height,
            bpc,
            gain_limit: enhn_gain_limit,
            cos_1deg_sq: cos_1deg_sq() as f64,
            ref0: Bands::new(w0, h0),
            dis0: Bands::new(w0, h0),
            ref123: scales[1..].iter().map(|s| Bands::new(s.w, s.h)).collect(),
            dis123: scales[1..].iter().map(|s| Bands::new(s.w, s.h)).collect(),
            r16: [mk16(), mk16(), mk16()],
            a16: [mk16(), mk16(), mk16()],
            r32: [mk32(), mk32(), mk32()],
            a32: [mk32(), mk32(), mk32()],
            dwt: DwtScratch::new(width),
            mask: MaskScratch::new(w0),
            oob_ref: vec![0; w0],
            oob_dis: vec![0; w0],
            prev_word: 0,
            geometry,
            simd: SimdLevel::selected(),
        }
    }

    /// The instruction-set level [`extract`](Self::extract) runs with.
    pub fn simd_level(&self) -> SimdLevel {
        self.simd
    }

    /// Makes [`extract`](Self::extract) run with `level`, or the best level below it that the
    /// CPU supports; returns the level now in use. Every level gives identical scores.
    pub fn set_simd_level(&mut self, level: SimdLevel) -> SimdLevel {
        self.simd = level.capped();
        self.simd
    }

    /// Scores one reference/distorted pair (same size and depth as given to `new`).
    pub fn extract(&mut self, reference: &Plane, distorted: &Plane) -> AdmScores {
        match self.simd {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `simd` is only ever a level the running CPU supports (`capped`,
            // `selected`), and `extract_avx2` needs nothing beyond AVX2.
            SimdLevel::Avx2 => unsafe { self.extract_avx2(reference, distorted) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX-512 F/BW/DQ/VL.
            SimdLevel::Avx512 | SimdLevel::Avx512Vnni => unsafe {
                self.extract_avx512(reference, distorted)
            },
            _ => self.extract_impl(reference, distorted),
        }
    }

    /// Same as [`extract`](Self::extract) but always with the baseline code path (no runtime
    /// CPU dispatch); both paths give bit-identical results. For tests and benchmarks.
    #[doc(hidden)]
    pub fn extract_portable(&mut self, reference: &Plane, distorted: &Plane) -> AdmScores {
        self.extract_impl(reference, distorted)
    }

    /// The whole pipeline compiled with AVX2 enabled (every stage is inlined into it). Integer
    /// and IEEE arithmetic give the same results whatever the instruction set; Rust never
    /// fuses multiply-adds on its own.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn extract_avx2(&mut self, reference: &Plane, distorted: &Plane) -> AdmScores {
        self.extract_impl(reference, distorted)
    }

    /// The same pipeline compiled with AVX-512 enabled (512-bit vectors for the compiler).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    fn extract_avx512(&mut self, reference: &Plane, distorted: &Plane) -> AdmScores {
        self.extract_impl(reference, distorted)
    }

    /// The integer sums of one pair (before the float conversions), advancing the extractor's
    /// state like [`extract`](Self::extract). For checking other implementations of the stages.
    #[doc(hidden)]
    pub fn extract_sums(&mut self, reference: &Plane, distorted: &Plane) -> AdmSums {
        self.check_planes(reference, distorted);
        self.integer_sums(reference, distorted)
    }

    /// The frame size constants of this extractor.
    pub fn geometry(&self) -> &AdmGeometry {
        &self.geometry
    }

    fn check_planes(&self, reference: &Plane, distorted: &Plane) {
        for p in [reference, distorted] {
            assert!(
                p.width == self.width && p.height == self.height && p.bpc == self.bpc,
                "ADM extractor built for {}x{} {}-bit, got {}x{} {}-bit",
                self.width,
                self.height,
                self.bpc,
                p.width,
                p.height,
                p.bpc
            );
        }
    }

    #[inline(always)]
    fn extract_impl(&mut self, reference: &Plane, distorted: &Plane) -> AdmScores {
        self.check_planes(reference, distorted);
        let sums = self.integer_sums(reference, distorted);
        self.geometry.scores(&sums)
    }

    /// Every integer quantity of one frame (see [`AdmSums`]).
    #[inline(always)]
    fn integer_sums(&mut self, reference: &Plane, distorted: &Plane) -> AdmSums {
        let mut sums = AdmSums::default();

        // Scale 0.
        let tail0 = self.geometry.scales[0].dwt_tail.then(|| {
            let w = self.prev_word as u32;
            [w as u16 as i16, (w >> 16) as u16 as i16]
        });
        self.dwt0(reference, true, tail0);
        self.dwt0(distorted, false, tail0);
        // (the reference's v, h, d rows around row h0 - 2 are read by `fill_oob_rows`; they are
        // inside the detail region whenever that matters)
        let params = DecoupleParams {
            lut: div_lookup(),
            cos_1deg_sq: self.cos_1deg_sq,
            gain_limit: self.gain_limit,
            simd: self.simd,
        };
        {
            let s = &self.geometry.scales[0];
            for b in self.r16.iter_mut().chain(self.a16.iter_mut()) {
                b.reshape(s.w, s.h);
            }
            decouple(
                self.ref0.hvd(),
                self.dis0.hvd(),
                s.geom.grown,
                s.decouple_simd,
                &params,
                &mut self.r16,
                &mut self.a16,
            );
            sums.den[0] = den_scale0(self.ref0.hvd(), s.geom.cm);
            let r = [&self.r16[0], &self.r16[1], &self.r16[2]];
            let a = [&self.a16[0], &self.a16[1], &self.a16[2]];
            sums.num[0] = contrast_masking::<Scale0>(r, a, &s.geom, &s.k, &mut self.mask);
            sums.aim[0] = contrast_masking::<Scale0>(a, r, &s.geom, &s.k, &mut self.mask);
        }
        if self.geometry.scales[1..].iter().any(|s| s.oob_rows) {
            self.fill_oob_rows(&params);
        }

        // Scales 1..3. `tail`: words past libvmaf's int32 DWT scratch rows, left there by the
        // previous level (never written before scale 1: zero).
        let mut tail = [0i32; 2];
        let mut word_w = self.prev_word;
        for scale in 1..4 {
            let oob = OutOfBounds {
                ref_row: &self.oob_ref,
                dis_row: &self.oob_dis,
            };
            let (done, rest) = self.ref123.split_at_mut(scale - 1);
            let (done_d, rest_d) = self.dis123.split_at_mut(scale - 1);
            let out = [&mut rest[0], &mut rest_d[0]];
            let t = self.geometry.scales[scale].dwt_tail.then_some(tail);
            let detail = self.geometry.scales[scale].geom.grown;
            if scale == 1 {
                let inp = [&self.ref0.a, &self.dis0.a];
                dwt_s123(scale, inp, out, &oob, t, detail, &mut self.dwt);
            } else {
                let inp = [&done[scale - 2].a, &done_d[scale - 2].a];
                dwt_s123(scale, inp, out, &oob, t, detail, &mut self.dwt);
            }
            let s = &self.geometry.scales[scale];
            if scale < 3 {
                let x = 4 * self.geometry.scales[scale + 1].in_w;
                tail = [
                    scratch_word(&self.dwt, s.in_w, x),
                    scratch_word(&self.dwt, s.in_w, x + 1),
                ];
            }
            if self.width < 4 * s.in_w {
                word_w = scratch_word(&self.dwt, s.in_w, self.width);
            }
            for b in self.r32.iter_mut().chain(self.a32.iter_mut()) {
                b.reshape(s.w, s.h);
            }
            let (rb, db) = (&self.ref123[scale - 1], &self.dis123[scale - 1]);
            decouple(
                rb.hvd(),
                db.hvd(),
                s.geom.grown,
                s.decouple_simd,
                &params,
                &mut self.r32,
                &mut self.a32,
            );
            sums.den[scale] = den_s123(scale, rb.hvd(), s.geom.cm);
            let r = [&self.r32[0], &self.r32[1], &self.r32[2]];
            let a = [&self.a32[0], &self.a32[1], &self.a32[2]];
            sums.num[scale] = contrast_masking::<Scale123>(r, a, &s.geom, &s.k, &mut self.mask);
            sums.aim[scale] = contrast_masking::<Scale123>(a, r, &s.geom, &s.k, &mut self.mask);
        }

        self.prev_word = word_w;
        sums
    }

    #[inline(always)]
    fn dwt0(&mut self, p: &Plane, is_ref: bool, tail: Option<[i16; 2]>) {
        let out = if is_ref {
            &mut self.ref0
        } else {
            &mut self.dis0
        };
        let (w, h, stride) = (p.width, p.height, p.stride);
        let detail = self.geometry.scales[0].geom.grown;
        match p.samples {
            Samples::U8(s) => dwt_scale0(
                |y| &s[y * stride..y * stride + w],
                w,
                h,
                8,
                tail,
                detail,
                out,
                &mut self.dwt,
                self.simd,
            ),
            Samples::U16(s) => dwt_scale0(
                |y| &s[y * stride..y * stride + w],
                w,
                h,
                p.bpc,
                tail,
                detail,
                out,
                &mut self.dwt,
                self.simd,
            ),
        }
    }

    /// libvmaf's DWT index table points at row -1 (not mirrored) when an input is 3 or 4 rows
    /// tall (only scale 3, for pictures 17..32 rows tall). In its buffer layout the reference's
    /// row -1 is the tail of the scale-0 AIM CSF d band (pairs of int16 read as one int32) and
    /// the distorted's is a band row nothing ever writes (zero-initialised memory).
    fn fill_oob_rows(&mut self, params: &DecoupleParams) {
        let s0 = &self.geometry.scales[0];
        let (w0, h0) = (s0.w, s0.h);
        let csf_rect = c_decouple_rect(w0, h0);
        let row = h0 - 2;
        let csf_d = |col: usize| -> u16 {
            let inside = row >= csf_rect.y0
                && row < csf_rect.y1
                && col >= csf_rect.x0
                && col < csf_rect.x1
                && col < w0;
            if !inside {
                return 0;
            }
            let o = self.ref0.hvd().map(|b| b.row(row)[col] as i32);
            let t = self.dis0.hvd().map(|b| b.row(row)[col] as i32);
            let simd = col >= s0.decouple_simd.0 && col < s0.decouple_simd.1;
            let (r, _) = decouple_px::<i16>(o, t, simd, params);
            Scale0::csf(&s0.k[2], r[2] as i32) as u16
        };
        let n = self.oob_ref.len();
        for j in 0..n {
            let lo = csf_d(2 * j) as u32;
            let hi = csf_d(2 * j + 1) as u32;
            self.oob_ref[j] = ((hi << 16) | lo) as i32;
        }
        self.oob_dis.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions() {
        // 960 wide: left = (int)(96 - 0.5) = 95
        assert_eq!(
            score_rect(960, 540),
            Rect {
                x0: 95,
                x1: 865,
                y0: 53,
                y1: 487
            }
        );
        assert_eq!(score_rect(9, 9).x0, 0);
        assert_eq!(
            c_decouple_rect(960, 540),
            Rect {
                x0: 94,
                x1: 868,
                y0: 52,
                y1: 490
            }
        );
        assert_eq!(
            c_decouple_rect(9, 9),
            Rect {
                x0: 0,
                x1: 9,
                y0: 0,
                y1: 9
            }
        );
    }

    #[test]
    fn send() {
        fn is_send<T: Send>() {}
        is_send::<AdmExtractor>();
    }

    /// Whole frames at every level the CPU supports equal the portable path (the explicit
    /// decouple kernels run at scale 0 with an integral gain limit): sizes from the 17-pixel
    /// minimum past a vector multiple, every depth, noise, extremes, and distorted pictures
    /// that are scaled copies of the reference (the angle test passes).
    #[test]
    fn every_supported_level_matches_portable_on_edge_pictures() {
        let mut st = 0x00ad_3e1e_u64;
        let mut next = move || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        eprintln!("levels: {:?}", SimdLevel::supported());
        for (w, h) in [(17, 17), (33, 19), (71, 40), (259, 21)] {
            for bpc in [8, 10, 12, 16] {
                let max = (1u32 << bpc) - 1;
                for pattern in 0..5u32 {
                    let r: Vec<u16> = (0..w * h)
                        .map(|j| match pattern {
                            0 | 4 => (next() as u32 & max) as u16,
                            1 => max as u16,
                            2 => ((j % w + j / w) % 2) as u16 * max as u16,
                            _ => ((j % 7) as u32 * max / 6) as u16,
                        })
                        .collect();
                    let d: Vec<u16> = r
                        .iter()
                        .map(|&v| match pattern {
                            4 => (next() as u32 & max) as u16,
                            1 => 0,
                            _ => (u32::from(v) * 3 / 4) as u16,
                        })
                        .collect();
                    let narrow = |v: &[u16]| v.iter().map(|&x| x as u8).collect::<Vec<u8>>();
                    let (r8, d8) = (narrow(&r), narrow(&d));
                    let plane = |wide, byte| Plane {
                        samples: if bpc == 8 {
                            Samples::U8(byte)
                        } else {
                            Samples::U16(wide)
                        },
                        width: w,
                        height: h,
                        stride: w,
                        bpc,
                    };
                    let (rp, dp) = (plane(&r[..], &r8[..]), plane(&d[..], &d8[..]));
                    // Bit patterns, so that a NaN compares equal to itself.
                    let bits = |s: AdmScores| {
                        [s.adm2, s.aim, s.adm3]
                            .into_iter()
                            .chain(s.scale)
                            .map(f64::to_bits)
                            .collect::<Vec<_>>()
                    };
                    for gain in [100.0, 1.0, 1.5] {
                        let mut base = AdmExtractor::new(w, h, bpc, gain);
                        let want = bits(base.extract_portable(&rp, &dp));
                        for level in SimdLevel::supported() {
                            let mut x = AdmExtractor::new(w, h, bpc, gain);
                            assert_eq!(x.set_simd_level(level), level);
                            assert_eq!(
                                bits(x.extract(&rp, &dp)),
                                want,
                                "{level} {w}x{h} {bpc}-bit pattern {pattern} gain {gain}"
                            );
                        }
                    }
                }
            }
        }
    }
}
