//! libvmaf's integer VIF (Visual Information Fidelity) feature extractor, bit-exact with libvmaf
//! 3.2.0 (`integer_vif.c`): `integer_vif_scale0..3` for a pair of luma planes.
//!
//! Per scale `s` (0 works on the picture, 1..3 on a 2x-decimated blur of the previous scale):
//!
//! * Local moments: a separable Gaussian (`FILTER_s`, 17/9/5/3 taps summing to 65536) of `x`,
//!   `y`, `x²`, `y²` and `xy`, vertical pass first, rows and columns mirrored about the edge
//!   sample (`-1 -> 1`, `h -> h - 2`). After the vertical pass `mu` is rounded and shifted by the
//!   bit depth (scale 0) or 16; the second moments by `2 * (bpc - 8)` (scale 0; not at all for
//!   8-bit) or 16. After the horizontal pass `mu` is kept unshifted (Q16 of a Q16), `mu²` is
//!   `(mu * mu + 2^31) >> 32` and the second moments `(sum + 2^15) >> 16`.
//! * Per pixel, `sigma1_sq = xx - mu1²` etc. (wrapping `u32` differences read as `i32`,
//!   `sigma2_sq` clamped at 0). Pixels with `sigma1_sq < 2.0` (131072) add `sigma2_sq` to a
//!   "non-log" sum; the others add `log2(1 + sigma1_sq / 2)` to the denominator and, if
//!   `sigma12 > 0` and `sigma2_sq > 0`, `log2(1 + g² sigma1_sq / (sv_sq + 2))` to the numerator,
//!   both as differences of Q11 table logarithms of 16-bit mantissas. `g` and `sv_sq` are
//!   `double` expressions truncated to integers (see `block_stats`).
//! * Per scale `num / den` is computed from the integer sums in `double`, stored in `float`, and
//!   divided in `float`.
//! * Decimation: blur with `FILTER_{s+1}` (same rounding as above) and keep the even rows and
//!   columns.
//!
//! libvmaf's x86 builds (AVX2, AVX-512) compute exactly what its scalar C code computes for VIF:
//! checked by reading them and by scoring synthetic worst cases with all three
//! (`tests/feature_vif.rs`). Everything up to the per-pixel statistic is integer arithmetic that
//! either cannot overflow or wraps in `u32` to a result that fits, so the loops below regroup
//! freely: symmetric taps are added before multiplying, second moments are summed as 16-bit
//! halves in `u32` lanes instead of `u64`, decimation filters only the rows it keeps. The
//! statistic runs branch-free on blocks of pixels, with the exact `f64` arithmetic of libvmaf.
//! These portable loops are the `scalar` level; at the `avx2`, `avx512` and `avx512vnni` levels
//! (`super::simd::SimdLevel`) explicit kernels (`vif_x86`) take the whole vectors of every
//! filter but scale 3's and of the statistic, and the portable loops the leftover columns. At
//! the `neon` level (aarch64) the kernels of `vif_aarch64` take the whole vectors of every
//! filter, scale 3's included, and of the statistic.
//!
//! Frames must be at least 17x17 (libvmaf itself crashes at 16 and below; [`VifExtractor::new`]
//! panics; `tests/small_frames.rs` checks 17-pixel pictures against libvmaf).

use std::sync::OnceLock;

use super::simd::SimdLevel;
#[cfg(target_arch = "aarch64")]
use super::vif_aarch64;
#[cfg(target_arch = "x86_64")]
use super::vif_x86;
use crate::frame::{Plane, Samples};

/// libvmaf's default `vif_enhn_gain_limit` (`vmaf_v0.6.1neg` uses 1.0).
pub const DEFAULT_VIF_ENHN_GAIN_LIMIT: f64 = 100.0;

/// Smallest width and height libvmaf accepts (it crashes at 16 and below).
pub const MIN_DIMENSION: usize = 17;

/// The Gaussian filters of the four scales (libvmaf's `vif_filter1d_table`).
const FILTER_0: [u16; 17] = [
    489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935,
    489,
];
const FILTER_1: [u16; 9] = [1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244];
const FILTER_2: [u16; 5] = [3571, 16004, 26386, 16004, 3571];
const FILTER_3: [u16; 3] = [10904, 43728, 10904];

/// Half width of the widest filter: the padding of every row buffer.
const PAD: usize = FILTER_0.len() / 2;

/// The noise variance 2.0 in Q16.
const SIGMA_NSQ: i32 = 2 << 16;

/// Column block of the row passes: small enough for the accumulators to stay in L1.
const BLOCK: usize = 128;

/// VIF features of one frame, as libvmaf reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VifScores {
    /// `integer_vif_scale0..3`
    pub scale: [f64; 4],
}

/// libvmaf's `log2_table`, indexed by a 16-bit mantissa with its top bit set (32768..65536):
/// `round(log2f(i) * 2048)`. Entries below 32768 are 0 (libvmaf also fills 32767, which no
/// lookup reaches); the vector code points masked-off lanes at entry 0.
pub type Log2Table = [u16; 65536];

/// libvmaf rounds the *single precision* logarithm: 38 entries differ from rounding the exact
/// value. `log2f` is evaluated as the correctly rounded `f32` of the `f64` logarithm, which
/// equals glibc's `log2f` on every entry (see the tests). The GPU and the AVX2 and NEON code read
/// it as [`log2_steps`]; the AVX-512 statistic computes it (a polynomial, corrected where it
/// misses).
pub fn log2_table() -> &'static Log2Table {
    static TABLE: OnceLock<Box<Log2Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u16; 65536]);
        for (i, v) in t.iter_mut().enumerate().skip(32768) {
            let l = (i as f64).log2() as f32;
            *v = (l * 2048.0).round() as u16;
        }
        t
    })
}

/// [`log2_table`] in 16 KiB instead of 128, so that the per-pixel lookups stay in L1: entry
/// `b` describes table entries `16 b .. 16 b + 16` as `base | p1 << 16 | p2 << 24`, entry
/// `16 b + o` being `base + (o >= p1) + (o >= p2)`. The table rises by at most 1 every 11
/// entries (its slope is `2048 / (i ln 2)` with `i >= 32768`), so two steps per 16 suffice;
/// the construction checks that it reproduces every entry.
pub type Log2Steps = [u32; 4096];

/// [`log2_table`]'s entries `i` in `[2^15, 2^16)` as their distance above the table's chord,
/// `28672 + i / 16` (30720 at `2^15`, 32768 at `2^16`; `log2` is concave, so it lies above its
/// chord, here by at most 177): `table[i] = 28672 + (i >> 4) + deltas[i - 32768]`, one byte
/// each. The construction checks that every distance fits a byte. Uploaded by the GPU path,
/// whose `log2_entry` (kernels/vif.cu) reads it so.
pub type Log2Deltas = [u8; 32768];

pub fn log2_deltas() -> &'static Log2Deltas {
    static DELTAS: OnceLock<Box<Log2Deltas>> = OnceLock::new();
    DELTAS.get_or_init(|| {
        let t = log2_table();
        let mut d = Box::new([0u8; 32768]);
        for (j, e) in d.iter_mut().enumerate() {
            let i = 32768 + j;
            let above = u32::from(t[i]) - (28672 + (i as u32 >> 4));
            *e = u8::try_from(above).expect("log2 table within a byte of its chord");
        }
        d
    })
}

pub fn log2_steps() -> &'static Log2Steps {
    static STEPS: OnceLock<Box<Log2Steps>> = OnceLock::new();
    STEPS.get_or_init(|| {
        let t = log2_table();
        let mut s = Box::new([0u32; 4096]);
        for (b, e) in s.iter_mut().enumerate() {
            let block = &t[16 * b..16 * b + 16];
            let base = u32::from(block[0]);
            let mut pos = [16u32; 2];
            let mut n = 0;
            for o in 1..16 {
                let step = u32::from(block[o]) - u32::from(block[o - 1]);
                assert!(
                    step <= 1 && n + step <= 2,
                    "log2 table block {b} is not two steps"
                );
                if step == 1 {
                    pos[n as usize] = o as u32;
                    n += 1;
                }
            }
            *e = base | pos[0] << 16 | pos[1] << 24;
            for (o, &v) in block.iter().enumerate() {
                debug_assert_eq!(log2_step_lookup(*e, o as u32), u32::from(v));
            }
        }
        s
    })
}

/// Table entry `o` of a [`Log2Steps`] block.
#[inline(always)]
pub(super) fn log2_step_lookup(e: u32, o: u32) -> u32 {
    (e & 0xffff) + u32::from(o >= (e >> 16) & 0xff) + u32::from(o >= e >> 24)
}

/// Integer sums of one scale; libvmaf's `accum_*` variables. Integers, so the order in which
/// pixels are summed (CPU blocks, GPU thread blocks) does not change them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VifSums {
    pub num_log: i64,
    pub den_log: i64,
    pub num_non_log: i64,
    pub den_non_log: i64,
}

/// `65536 * 1.0e-10`, libvmaf's guard against a zero `sigma1_sq` in the gain.
const EPS: f64 = 65536.0 * 1.0e-10;

impl VifSums {
    fn merge(&mut self, o: &VifSums) {
        self.num_log += o.num_log;
        self.den_log += o.den_log;
        self.num_non_log += o.num_non_log;
        self.den_non_log += o.den_non_log;
    }

    /// `num / den` of the scale, through libvmaf's `float` num and den.
    pub fn score(&self) -> f64 {
        let num = self.num_log as f64 / 2048.0
            + (self.den_non_log as f64 - (self.num_non_log as f64 / 16384.0) / 65025.0);
        let den = self.den_log as f64 / 2048.0 + self.den_non_log as f64;
        f64::from(num as f32 / den as f32)
    }
}

/// The scores of a frame from the integer sums of its four scales: the one conversion that
/// both the CPU extractor and the GPU path (`cuda::vif`) use, so their doubles are identical.
pub fn scores_from_sums(sums: &[VifSums; 4]) -> VifScores {
    VifScores {
        scale: sums.map(|s| s.score()),
    }
}

/// What the code inlined into an entry point may use; picked at run time by
/// [`VifExtractor::extract`]. Every variant computes identical results.
///
/// The explicit kernels of `vif_x86` are called when `LEVEL` says so: `Avx2` and `Avx512`
/// are only instantiated inside [`VifExtractor::extract_avx2`] / `extract_avx512`, which run
/// only on CPUs that have those instruction sets. `Neon` (those of `vif_aarch64`) is only
/// instantiated on aarch64, whose CPUs all have NEON, and picked only where it is detected.
trait Isa {
    /// `roundpd` (SSE4.1) is available: `floor` is one instruction.
    const ROUND: bool;
    const LEVEL: SimdLevel;
    /// [`Moments`] rows hold their 16-bit values with the top bit flipped (`x ^ 0x8000`, the
    /// `i16` bias of the `pmaddwd` kernels), so that the horizontal kernels, which read each
    /// value N times, need not flip it: the AVX-512 levels.
    const BIASED_MOMENTS: bool = false;
}

/// The xor that [`Isa::BIASED_MOMENTS`] asks of every value stored into or read from a
/// [`Moments`] row (0 or 0x8000).
#[inline(always)]
const fn moment_bias<I: Isa>() -> u16 {
    if I::BIASED_MOMENTS {
        0x8000
    } else {
        0
    }
}

/// The baseline of the target (x86-64, aarch64 or any other architecture).
struct Portable;
impl Isa for Portable {
    const ROUND: bool = false;
    const LEVEL: SimdLevel = SimdLevel::Scalar;
}

/// AVX2.
#[cfg(target_arch = "x86_64")]
struct Avx2;
#[cfg(target_arch = "x86_64")]
impl Isa for Avx2 {
    const ROUND: bool = true;
    const LEVEL: SimdLevel = SimdLevel::Avx2;
}

/// AVX-512 (F, BW, DQ, VL).
#[cfg(target_arch = "x86_64")]
struct Avx512;
#[cfg(target_arch = "x86_64")]
impl Isa for Avx512 {
    const ROUND: bool = true;
    const LEVEL: SimdLevel = SimdLevel::Avx512;
    const BIASED_MOMENTS: bool = true;
}

/// AVX-512 with VNNI.
#[cfg(target_arch = "x86_64")]
struct Avx512Vnni;
#[cfg(target_arch = "x86_64")]
impl Isa for Avx512Vnni {
    const ROUND: bool = true;
    const LEVEL: SimdLevel = SimdLevel::Avx512Vnni;
    const BIASED_MOMENTS: bool = true;
}

/// NEON (aarch64): `frintm` is always there, so `ROUND`.
#[cfg(target_arch = "aarch64")]
struct Neon;
#[cfg(target_arch = "aarch64")]
impl Isa for Neon {
    const ROUND: bool = true;
    const LEVEL: SimdLevel = SimdLevel::Neon;
}

/// Outputs of the vertical passes for columns `0..n` (the explicit kernels' view of
/// [`Moments`], see `Moments::vertical_out`): `mu` rounded and shifted, second moments split into 16-bit halves.
pub(super) struct VerticalOut<'a> {
    pub mu1: &'a mut [u16],
    pub mu2: &'a mut [u16],
    /// `xx`, `yy`, `xy`: (low halves, high halves).
    pub sq: [(&'a mut [u16], &'a mut [u16]); 3],
}

/// Outputs and shifts of the general vertical pass (`vertical_moments_wide`).
#[derive(Clone, Copy)]
pub(super) struct WideShifts {
    /// Shift of `mu` (the bit depth at scale 0, 16 above), with rounding.
    pub mu: u32,
    /// Shift of the second moments (1..=16), with rounding.
    pub sq: u32,
}

/// Integer sums of the per-pixel statistic over a run of pixels: `[num_log, den_log,
/// num_non_log, den_non_log]` (libvmaf's accumulators, see `VifSums`).
pub(super) type StatSums = [i64; 4];

/// Constants of the statistic that the explicit kernels share with [`block_stats`].
pub(super) struct StatParams<'a> {
    /// `log2_steps()`: 4096 entries.
    pub steps: &'a [u32; 4096],
    pub gain_limit: f64,
    /// `65536e-10`, the guard added to `sigma1_sq` in the gain.
    pub eps: f64,
    /// The noise variance 2.0 in Q16 (131072).
    pub nsq: i32,
}

/// Whether the explicit x86 filter kernels take `filt` (always false off x86-64; the NEON
/// kernels take every filter and keep the column order, so decimation needs no reordering).
#[inline(always)]
fn vif_x86_taps_fit<const N: usize>(filt: &[u16; N]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        vif_x86::taps_fit(filt)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = filt;
        false
    }
}

/// Columns per block of the explicit kernels at level `I` (0: none, portable loops only).
#[inline(always)]
fn vector_chunk<I: Isa>() -> usize {
    match I::LEVEL {
        SimdLevel::Scalar => 0,
        SimdLevel::Avx2 => 16,
        SimdLevel::Avx512 | SimdLevel::Avx512Vnni => 32,
        SimdLevel::Neon => 8,
    }
}

/// `out[j] = sum_k filt[k] * src[j + k]` (wrapping `u32`) for every `j < out.len()`, or with
/// `lo`, [`filter_row_split`] of (`lo`, `src`). The explicit kernels take the whole blocks
/// they can (in their output order, see `vif_x86`), the portable loops the rest. `biased`:
/// the samples are stored flipped (`x ^ 0x8000`, see [`Isa::BIASED_MOMENTS`]; AVX-512 levels
/// only, and then at most `BLOCK + 2 PAD` samples per call).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(unused_mut, unused_variables)
)]
#[inline(always)]
fn filter_row<I: Isa, const N: usize>(
    src: &[u16],
    lo: Option<&[u16]>,
    filt: &[u16; N],
    out: &mut [u32],
    biased: bool,
) {
    debug_assert!(!biased || I::BIASED_MOMENTS);
    let n = out.len();
    let chunk = vector_chunk::<I>();
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if chunk > 0 && vif_x86::taps_fit(filt) {
        done = n - n % chunk;
        assert!(src.len() + 1 >= n + N && lo.is_none_or(|l| l.len() == src.len()));
        match (I::LEVEL, biased) {
            // SAFETY: LEVEL is Avx2 only inside `extract_avx2` (see `Isa`); lengths asserted
            // above, `done` is a multiple of 16 and the taps fit.
            (SimdLevel::Avx2, _) => unsafe { vif_x86::hfilter_avx2(src, lo, filt, out, done) },
            // SAFETY: as above, inside `extract_avx512`; `done` is a multiple of 32.
            (SimdLevel::Avx512, false) => unsafe {
                vif_x86::hfilter_avx512::<N, false>(src, lo, filt, out, done)
            },
            // SAFETY: as above.
            (SimdLevel::Avx512, true) => unsafe {
                vif_x86::hfilter_avx512::<N, true>(src, lo, filt, out, done)
            },
            // SAFETY: as above, inside `extract_avx512vnni`.
            (SimdLevel::Avx512Vnni, false) => unsafe {
                vif_x86::hfilter_avx512vnni::<N, false>(src, lo, filt, out, done)
            },
            // SAFETY: as above.
            (SimdLevel::Avx512Vnni, true) => unsafe {
                vif_x86::hfilter_avx512vnni::<N, true>(src, lo, filt, out, done)
            },
            _ => unreachable!(),
        }
    }
    #[cfg(target_arch = "aarch64")]
    if chunk > 0 {
        done = n - n % chunk;
        // SAFETY: LEVEL is Neon only where the CPU has NEON (every aarch64 CPU, see `Isa`).
        unsafe { vif_aarch64::hfilter_neon(src, lo, filt, out, done) };
    }
    let (src, out) = (&src[done..], &mut out[done..]);
    if biased {
        // The rest (a partial block, or every column of a filter the kernels do not take)
        // flipped back on the stack.
        let mut flat = [[0u16; BLOCK + 2 * PAD]; 2];
        let len = src.len();
        for (dst, s) in flat.iter_mut().zip([Some(src), lo.map(|l| &l[done..])]) {
            if let Some(s) = s {
                for (d, &v) in dst[..len].iter_mut().zip(s) {
                    *d = v ^ 0x8000;
                }
            }
        }
        let [hi, lo_flat] = &flat;
        match lo {
            None => filter_row_u32(&hi[..len], filt, out),
            Some(_) => filter_row_split(&lo_flat[..len], &hi[..len], filt, out),
        }
        return;
    }
    match lo {
        None => filter_row_u32(src, filt, out),
        Some(lo) => filter_row_split(&lo[done..], src, filt, out),
    }
}

/// `floor(x)` for `|x| < 2^51` (garbage beyond, never NaN for finite `x`).
#[inline(always)]
fn floor<I: Isa>(x: f64) -> f64 {
    if I::ROUND {
        x.floor()
    } else {
        // Adding 1.5 * 2^52 rounds to an integer; step down where that rounded up.
        const M: f64 = 6_755_399_441_055_744.0;
        let r = (x + M) - M;
        if r > x {
            r - 1.0
        } else {
            r
        }
    }
}

/// The per-pixel statistic of a block of pixels (libvmaf's `vif_statistic` inner body),
/// branch-free so that it vectorises: every lane computes both branches and masks pick.
///
/// The gain is libvmaf's `double` arithmetic, operation for operation (Rust never fuses a
/// multiply-add): `g = sigma12 / (sigma1_sq + 65536e-10)`, `sv_sq = max(trunc(sigma2_sq -
/// g * sigma12), 0)`, then `g = min(g, gain_limit)` and `trunc(g * g * sigma1_sq)`. Truncation
/// is `floor` here: the second value is never negative, and the first only matters when
/// positive.
///
/// Logarithms of the integers `sigma1_sq + 2`, `sv_sq + 2` and `g² sigma1_sq + sv_sq + 2` (all
/// below 2^53, so exact as `f64`) come from their `f64` bits: the exponent is libvmaf's shift
/// count plus 15 and the top 15 mantissa bits, with the leading one, are the 16-bit index that
/// libvmaf's `log2_32`/`log2_64` take from the integer. Table lookups (which do not vectorise)
/// run in a second, scalar pass; masked-off lanes look up entry 0.
#[inline(always)]
fn block_stats<I: Isa>(
    [s1, s2, s12]: [&[i32]; 3],
    index: &mut [[u64; BLOCK]; 3],
    table: &Log2Steps,
    gain_limit: f64,
) -> VifSums {
    let n = s1.len().min(BLOCK);
    let (s1, s2, s12) = (&s1[..n], &s2[..n], &s12[..n]);
    let [idx_d, idx_1, idx_2] = index;
    let (idx_d, idx_1, idx_2) = (&mut idx_d[..n], &mut idx_1[..n], &mut idx_2[..n]);
    let mut exp_den = 0i64;
    let mut exp_num = 0i64;
    let mut non_log_sum = 0i64;
    let mut non_log_count = 0i64;
    const NSQ: f64 = SIGMA_NSQ as f64;
    // The table index of d = 2^e * 1.m: the leading one and the top 15 bits of m; all-zero
    // `mask` (a masked-off lane) gives entry 0.
    let index = |bits: u64, mask: u64| ((bits >> 37) | 0x8000) & 0xffff & mask;
    let exponent = |bits: u64| (bits >> 52) as i64;
    for j in 0..n {
        let (a, b, c) = (s1[j], s2[j], s12[j]);
        let is_log = a >= SIGMA_NSQ;
        let is_num = is_log & (c > 0) & (b > 0);
        let (log_mask, num_mask) = (
            u64::from(is_log).wrapping_neg(),
            u64::from(is_num).wrapping_neg(),
        );
        let (af, bf, cf) = (f64::from(a), f64::from(b), f64::from(c));
        let g = cf / (af + EPS);
        let t = floor::<I>(bf - g * cf);
        let sv = if t > 0.0 { t } else { 0.0 };
        let gl = if g < gain_limit { g } else { gain_limit };
        let n1 = sv + NSQ;
        let n2 = floor::<I>(gl * gl * af) + n1;
        let d = af + NSQ;
        let (bd, b1, b2) = (d.to_bits(), n1.to_bits(), n2.to_bits());
        idx_d[j] = index(bd, log_mask);
        idx_1[j] = index(b1, num_mask);
        idx_2[j] = index(b2, num_mask);
        // log2_32(d) - 17 * 2048 = table + 2048 * (e - 15 - 17), e the unbiased exponent.
        exp_den += ((exponent(bd) - 1023 - 32) << 11) & log_mask as i64;
        exp_num += ((exponent(b2) - exponent(b1)) << 11) & num_mask as i64;
        non_log_sum += i64::from(b) & !log_mask as i64;
        non_log_count += 1 + (log_mask as i64);
    }
    let mut den_log = exp_den;
    let mut num_log = exp_num;
    let look = |i: u64| {
        let i = (i & 0xffff) as usize;
        i64::from(log2_step_lookup(table[i >> 4], (i & 15) as u32))
    };
    for j in 0..n {
        den_log += look(idx_d[j]);
        num_log += look(idx_2[j]) - look(idx_1[j]);
    }
    VifSums {
        num_log,
        den_log,
        num_non_log: non_log_sum,
        den_non_log: non_log_count,
    }
}

/// A plane of samples with libvmaf's mirrored rows outside `0..h`.
#[derive(Clone, Copy)]
struct Img<'a, T> {
    data: &'a [T],
    w: usize,
    h: usize,
    stride: usize,
}

impl<'a, T> Img<'a, T> {
    /// Row `r` (`-h < r < 2h - 1`), mirrored about the first/last row, exactly `w` long.
    #[inline(always)]
    fn row(&self, r: isize) -> &'a [T] {
        let last = self.h as isize - 1;
        let r = if r < 0 {
            -r
        } else if r > last {
            2 * last - r
        } else {
            r
        } as usize;
        let start = r * self.stride;
        &self.data[start..start + self.w]
    }

    /// The `N` rows a vertical filter centred on row `i` reads.
    #[inline(always)]
    fn taps<const N: usize>(&self, i: usize) -> [&'a [T]; N] {
        let top = i as isize - (N / 2) as isize;
        std::array::from_fn(|k| &self.row(top + k as isize)[..self.w])
    }
}

/// Mirrors `half` samples at each end of a padded row holding `w` samples at `PAD..PAD + w`
/// (libvmaf's `PADDING_SQ_DATA`).
#[inline(always)]
fn mirror_pad<T: Copy>(buf: &mut [T], w: usize, half: usize) {
    for f in 1..=half {
        buf[PAD - f] = buf[PAD + f];
        buf[PAD + w - 1 + f] = buf[PAD + w - 1 - f];
    }
}

/// Per-block working arrays, allocated once (zeroing fresh stack arrays for every block costs
/// more than some of the passes).
struct Scratch {
    acc32: [[u32; BLOCK]; 8],
    filtered: [[u32; BLOCK]; 5],
    sigma: [[i32; BLOCK]; 3],
    index: [[u64; BLOCK]; 3],
}

/// Vertically filtered moments of one row (libvmaf's `buf.tmp`), padded by `PAD` each side.
/// The second moments (`u32`) are split into their low and high 16 bits, so that the
/// horizontal pass can sum each half in `u32` (see [`filter_row_split`]).
struct Moments {
    /// `mu` after the vertical shift always fits 16 bits.
    mu1: Vec<u16>,
    mu2: Vec<u16>,
    /// `xx`, `yy`, `xy`: low halves, then high halves.
    sq: [[Vec<u16>; 2]; 3],
    scratch: Box<Scratch>,
}

impl Moments {
    fn new(w: usize) -> Self {
        let n = w + 2 * PAD;
        Moments {
            mu1: vec![0; n],
            mu2: vec![0; n],
            sq: std::array::from_fn(|_| [vec![0; n], vec![0; n]]),
            scratch: Box::new(Scratch {
                acc32: [[0; BLOCK]; 8],
                filtered: [[0; BLOCK]; 5],
                sigma: [[0; BLOCK]; 3],
                index: [[0; BLOCK]; 3],
            }),
        }
    }

    #[inline(always)]
    fn pad(&mut self, w: usize, half: usize) {
        mirror_pad(&mut self.mu1, w, half);
        mirror_pad(&mut self.mu2, w, half);
        for half_word in self.sq.iter_mut().flatten() {
            mirror_pad(half_word, w, half);
        }
    }

    /// The explicit kernels' view of columns `0..n` (from `PAD` on).
    fn vertical_out(&mut self, n: usize) -> VerticalOut<'_> {
        let o = PAD..PAD + n;
        let [[xl, xh], [yl, yh], [zl, zh]] = &mut self.sq;
        VerticalOut {
            mu1: &mut self.mu1[o.clone()],
            mu2: &mut self.mu2[o.clone()],
            sq: [
                (&mut xl[o.clone()], &mut xh[o.clone()]),
                (&mut yl[o.clone()], &mut yh[o.clone()]),
                (&mut zl[o.clone()], &mut zh[o.clone()]),
            ],
        }
    }
}

/// Vertical pass of scale 0 for 8-bit pictures: every sum fits `u32` and libvmaf keeps the
/// second moments unshifted. Taps outermost over blocks of columns, so that every loop streams
/// a few rows and vectorises.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(unused_mut, unused_variables)
)]
#[inline(always)]
fn vertical_moments_8<I: Isa>(r: Img<u8>, d: Img<u8>, i: usize, m: &mut Moments) {
    let w = r.w;
    let rr = r.taps::<17>(i);
    let dr = d.taps::<17>(i);
    let f = FILTER_0.map(u32::from);
    // Everything below fits u32 (sums of at most 65536 * 255^2); wrapping operations keep
    // overflow checks out of the loops in debug builds.
    let mac = |acc: u32, c: u32, v: u32| acc.wrapping_add(c.wrapping_mul(v));
    let chunk = vector_chunk::<I>();
    let mut c0 = 0;
    #[cfg(target_arch = "x86_64")]
    if chunk > 0 {
        c0 = w - w % chunk;
        let out = m.vertical_out(c0);
        match I::LEVEL {
            // SAFETY: LEVEL is Avx2 only inside `extract_avx2` (see `Isa`); every row and
            // output holds `c0` samples, a multiple of 16.
            SimdLevel::Avx2 => unsafe { vif_x86::vertical_8_avx2(&rr, &dr, &FILTER_0, out, c0) },
            // SAFETY: as above, inside `extract_avx512`; `c0` is a multiple of 32.
            SimdLevel::Avx512 => unsafe {
                vif_x86::vertical_8_avx512(&rr, &dr, &FILTER_0, out, c0)
            },
            // SAFETY: as above, inside `extract_avx512vnni`.
            SimdLevel::Avx512Vnni => unsafe {
                vif_x86::vertical_8_avx512vnni(&rr, &dr, &FILTER_0, out, c0)
            },
            _ => unreachable!(),
        }
    }
    #[cfg(target_arch = "aarch64")]
    if chunk > 0 {
        c0 = w - w % chunk;
        // SAFETY: LEVEL is Neon only where the CPU has NEON (every aarch64 CPU, see `Isa`).
        unsafe { vif_aarch64::vertical_8_neon(&rr, &dr, &FILTER_0, m.vertical_out(c0), c0) };
    }
    while c0 < w {
        let n = BLOCK.min(w - c0);
        let cols = c0..c0 + n;
        let [a1, a2, axx, ayy, axy, ..] = &mut m.scratch.acc32;
        let (a1, a2) = (&mut a1[..n], &mut a2[..n]);
        let (axx, ayy, axy) = (&mut axx[..n], &mut ayy[..n], &mut axy[..n]);
        {
            let (x, y) = (&rr[8][cols.clone()], &dr[8][cols.clone()]);
            for j in 0..n {
                let (x, y) = (u32::from(x[j]), u32::from(y[j]));
                let (cx, cy) = (f[8] * x, f[8] * y);
                a1[j] = cx;
                a2[j] = cy;
                axx[j] = cx.wrapping_mul(x);
                ayy[j] = cy.wrapping_mul(y);
                axy[j] = cx.wrapping_mul(y);
            }
        }
        for k in 0..8 {
            let c = f[k];
            let (xt, xb) = (&rr[k][cols.clone()], &rr[16 - k][cols.clone()]);
            let (yt, yb) = (&dr[k][cols.clone()], &dr[16 - k][cols.clone()]);
            for j in 0..n {
                let (xt, xb) = (u32::from(xt[j]), u32::from(xb[j]));
                let (yt, yb) = (u32::from(yt[j]), u32::from(yb[j]));
                a1[j] = mac(a1[j], c, xt + xb);
                a2[j] = mac(a2[j], c, yt + yb);
                axx[j] = mac(axx[j], c, xt * xt + xb * xb);
                ayy[j] = mac(ayy[j], c, yt * yt + yb * yb);
                axy[j] = mac(axy[j], c, xt * yt + xb * yb);
            }
        }
        let o = PAD + c0..PAD + c0 + n;
        let bias = moment_bias::<I>();
        for (dst, src) in [(&mut m.mu1, &*a1), (&mut m.mu2, &*a2)] {
            for (d, &v) in dst[o.clone()].iter_mut().zip(src) {
                *d = ((v + 128) >> 8) as u16 ^ bias;
            }
        }
        for ([lo, hi], src) in m.sq.iter_mut().zip([&*axx, &*ayy, &*axy]) {
            store_split(src, &mut lo[o.clone()], &mut hi[o.clone()], bias);
        }
        c0 += n;
    }
}

/// Vertical pass of the general case (deeper pictures at scale 0, every picture at scales
/// 1..3): `mu` sums in `u32` (wrapping like libvmaf's; the result fits) and is shifted by
/// `sh_mu`; the second moments, `(sum(c x²) + round) >> sh_sq` of a `u64` sum in libvmaf, are
/// summed as 16-bit halves of `x²` in `u32` lanes (as in [`filter_row_split`]), both with
/// rounding. `sample_bits`: the most bits a sample may have (the depth at scale 0, 16 above;
/// the x86 kernels take a narrower pass at up to 15).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(unused_mut, unused_variables)
)]
#[cfg_attr(target_arch = "aarch64", allow(unused_variables))]
#[inline(always)]
fn vertical_moments_wide<I: Isa, const N: usize>(
    r: Img<u16>,
    d: Img<u16>,
    i: usize,
    filt: &[u16; N],
    (sh_mu, sh_sq): (u32, u32),
    sample_bits: u32,
    m: &mut Moments,
) {
    let half = N / 2;
    let w = r.w;
    let rr = r.taps::<N>(i);
    let dr = d.taps::<N>(i);
    let rnd_mu = 1u32 << (sh_mu - 1);
    assert!((1..=16).contains(&sh_sq) && (1..=16).contains(&sh_mu));
    let rnd_sq = 1u32 << (sh_sq - 1);
    let f = filt.map(u32::from);
    let mac = |acc: u32, c: u32, v: u32| acc.wrapping_add(c.wrapping_mul(v));
    let (lo, hi) = (|v: u32| v & 0xffff, |v: u32| v >> 16);
    let chunk = vector_chunk::<I>();
    let mut c0 = 0;
    #[cfg(target_arch = "x86_64")]
    if chunk > 0 && vif_x86::taps_fit(filt) {
        c0 = w - w % chunk;
        let shifts = WideShifts {
            mu: sh_mu,
            sq: sh_sq,
        };
        type Kernel<const N: usize> = unsafe fn(
            &[&[u16]; N],
            &[&[u16]; N],
            &[u16; N],
            WideShifts,
            VerticalOut<'_>,
            usize,
        ) -> bool;
        macro_rules! kernel {
            ($narrow:literal) => {
                match I::LEVEL {
                    SimdLevel::Avx2 => vif_x86::vertical_wide_avx2::<N, $narrow> as Kernel<N>,
                    SimdLevel::Avx512 => vif_x86::vertical_wide_avx512::<N, $narrow>,
                    SimdLevel::Avx512Vnni => vif_x86::vertical_wide_avx512vnni::<N, $narrow>,
                    _ => unreachable!(),
                }
            };
        }
        // SAFETY: LEVEL is Avx2 only inside `extract_avx2`, Avx512 inside `extract_avx512`,
        // Avx512Vnni inside `extract_avx512vnni` (see `Isa`), so the CPU runs the kernel's
        // instructions; shifts asserted above; every row and output holds `c0` samples, a
        // multiple of the kernel's width (16 for AVX2, 32 for AVX-512).
        macro_rules! run {
            ($narrow:literal) => {
                unsafe { kernel!($narrow)(&rr, &dr, filt, shifts, m.vertical_out(c0), c0) }
            };
        }
        // At up to 15 bits the narrow pass (fewer biased terms), checked: a sample that
        // reaches 2^15 (bad input, e.g. MSB-aligned samples sent as LSB-aligned) makes it run
        // again the general way, so the narrow pass never changes a number.
        if !(sample_bits <= 15 && run!(true)) {
            run!(false);
        }
    }
    #[cfg(target_arch = "aarch64")]
    if chunk > 0 {
        c0 = w - w % chunk;
        let shifts = WideShifts {
            mu: sh_mu,
            sq: sh_sq,
        };
        let out = m.vertical_out(c0);
        // SAFETY: LEVEL is Neon only where the CPU has NEON (every aarch64 CPU, see `Isa`).
        unsafe { vif_aarch64::vertical_wide_neon(&rr, &dr, filt, shifts, out, c0) };
    }
    while c0 < w {
        let n = BLOCK.min(w - c0);
        let cols = c0..c0 + n;
        let [a1, a2, xl, xh, yl, yh, zl, zh] = &mut m.scratch.acc32;
        let (a1, a2) = (&mut a1[..n], &mut a2[..n]);
        let (xl, xh, yl, yh) = (&mut xl[..n], &mut xh[..n], &mut yl[..n], &mut yh[..n]);
        let (zl, zh) = (&mut zl[..n], &mut zh[..n]);
        {
            let c = f[half];
            let (x, y) = (&rr[half][cols.clone()], &dr[half][cols.clone()]);
            for j in 0..n {
                let (x, y): (u32, u32) = (x[j].into(), y[j].into());
                let (xx, yy, xy) = (x.wrapping_mul(x), y.wrapping_mul(y), x.wrapping_mul(y));
                a1[j] = c.wrapping_mul(x);
                a2[j] = c.wrapping_mul(y);
                xl[j] = c.wrapping_mul(lo(xx));
                xh[j] = c.wrapping_mul(hi(xx));
                yl[j] = c.wrapping_mul(lo(yy));
                yh[j] = c.wrapping_mul(hi(yy));
                zl[j] = c.wrapping_mul(lo(xy));
                zh[j] = c.wrapping_mul(hi(xy));
            }
        }
        for k in 0..half {
            let c = f[k];
            let (xt, xb) = (&rr[k][cols.clone()], &rr[N - 1 - k][cols.clone()]);
            let (yt, yb) = (&dr[k][cols.clone()], &dr[N - 1 - k][cols.clone()]);
            for j in 0..n {
                let (xt, xb): (u32, u32) = (xt[j].into(), xb[j].into());
                let (yt, yb): (u32, u32) = (yt[j].into(), yb[j].into());
                // x² of a 16-bit sample fits u32; sums of two halves fit too.
                let (xxt, xxb) = (xt.wrapping_mul(xt), xb.wrapping_mul(xb));
                let (yyt, yyb) = (yt.wrapping_mul(yt), yb.wrapping_mul(yb));
                let (xyt, xyb) = (xt.wrapping_mul(yt), xb.wrapping_mul(yb));
                a1[j] = mac(a1[j], c, xt + xb);
                a2[j] = mac(a2[j], c, yt + yb);
                xl[j] = mac(xl[j], c, lo(xxt) + lo(xxb));
                xh[j] = mac(xh[j], c, hi(xxt) + hi(xxb));
                yl[j] = mac(yl[j], c, lo(yyt) + lo(yyb));
                yh[j] = mac(yh[j], c, hi(yyt) + hi(yyb));
                zl[j] = mac(zl[j], c, lo(xyt) + lo(xyb));
                zh[j] = mac(zh[j], c, hi(xyt) + hi(xyb));
            }
        }
        let o = PAD + c0..PAD + c0 + n;
        let bias = moment_bias::<I>();
        for (dst, src) in [(&mut m.mu1, &*a1), (&mut m.mu2, &*a2)] {
            for (d, &v) in dst[o.clone()].iter_mut().zip(src) {
                *d = (v.wrapping_add(rnd_mu) >> sh_mu) as u16 ^ bias;
            }
        }
        // (65536 h + l + round) >> sh = (h << (16 - sh)) + ((l + round) >> sh); libvmaf keeps
        // the result in uint32_t, and it fits.
        for ([lo, hi], (sl, sh)) in
            m.sq.iter_mut()
                .zip([(&*xl, &*xh), (&*yl, &*yh), (&*zl, &*zh)])
        {
            let (lo, hi) = (&mut lo[o.clone()], &mut hi[o.clone()]);
            for (((l, h), &a), &b) in lo.iter_mut().zip(hi.iter_mut()).zip(sl).zip(sh) {
                let v = (b << (16 - sh_sq)).wrapping_add(a.wrapping_add(rnd_sq) >> sh_sq);
                *l = v as u16 ^ bias;
                *h = (v >> 16) as u16 ^ bias;
            }
        }
        c0 += n;
    }
}

/// Horizontal `N`-tap filter of a `u32` row (`src` starts `N / 2` before the first output),
/// symmetric taps added first; wrapping `u32` sums like libvmaf's (the results fit).
#[inline(always)]
fn filter_row_u32<T: Copy + Into<u32>, const N: usize>(
    src: &[T],
    filt: &[u16; N],
    out: &mut [u32],
) {
    let half = N / 2;
    let f = filt.map(u32::from);
    // Exactly one window per output: no bounds checks, no scalar epilogue.
    for (o, win) in out.iter_mut().zip(src.windows(N)) {
        let mut a = f[half].wrapping_mul(win[half].into());
        for k in 0..half {
            let pair = win[k].into().wrapping_add(win[N - 1 - k].into());
            a = a.wrapping_add(f[k].wrapping_mul(pair));
        }
        *o = a;
    }
}

/// Stores second moments split into low and high 16-bit halves, each xor `bias`.
#[inline(always)]
fn store_split(src: &[u32], lo: &mut [u16], hi: &mut [u16], bias: u16) {
    for ((&v, l), h) in src.iter().zip(lo.iter_mut()).zip(hi.iter_mut()) {
        *l = v as u16 ^ bias;
        *h = (v >> 16) as u16 ^ bias;
    }
}

/// Horizontal `N`-tap filter of second moments given as 16-bit halves, then libvmaf's
/// `(sum + 32768) >> 16` of the `u64` sum, cut to `u32`.
///
/// With `v = 65536 hi + lo`, `(sum(c v) + 32768) >> 16 = sum(c hi) + ((sum(c lo) + 32768) >> 16)`
/// exactly, and both sums fit `u32` (the filter sums to 65536): so everything stays in `u32`
/// lanes, twice as wide as `u64` ones. (Symmetric taps are added first; the products may wrap,
/// the sums mod 2^32 are still exact.)
#[inline(always)]
fn filter_row_split<const N: usize>(lo: &[u16], hi: &[u16], filt: &[u16; N], out: &mut [u32]) {
    let half = N / 2;
    let f = filt.map(u32::from);
    let taps = |win: &[u16]| {
        let mut a = f[half].wrapping_mul(u32::from(win[half]));
        for k in 0..half {
            let pair = u32::from(win[k]) + u32::from(win[N - 1 - k]);
            a = a.wrapping_add(f[k].wrapping_mul(pair));
        }
        a
    };
    for ((o, wl), wh) in out.iter_mut().zip(lo.windows(N)).zip(hi.windows(N)) {
        *o = taps(wh).wrapping_add(taps(wl).wrapping_add(32768) >> 16);
    }
}

/// `[sigma1_sq, sigma2_sq, sigma12]` of one pixel from its filtered moments, as libvmaf:
/// `mu²` from the rounded high half of the 64-bit product, wrapping differences, `sigma2_sq`
/// clamped at 0.
#[inline(always)]
fn sigmas(mu1: u32, mu2: u32, xx: u32, yy: u32, xy: u32) -> [i32; 3] {
    let sq = |a: u32, b: u32| ((u64::from(a) * u64::from(b) + (1 << 31)) >> 32) as u32;
    [
        xx.wrapping_sub(sq(mu1, mu1)) as i32,
        (yy.wrapping_sub(sq(mu2, mu2)) as i32).max(0),
        xy.wrapping_sub(sq(mu1, mu2)) as i32,
    ]
}

/// Horizontal pass over one row of moments and the per-pixel statistic.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(unused_mut, unused_variables)
)]
#[inline(always)]
fn horizontal_stats<I: Isa, const N: usize>(
    m: &mut Moments,
    w: usize,
    filt: &[u16; N],
    table: &Log2Steps,
    gain_limit: f64,
    acc: &mut VifSums,
) {
    let half = N / 2;
    m.pad(w, half);
    let Moments {
        mu1: m_mu1,
        mu2: m_mu2,
        sq: m_sq,
        scratch,
    } = m;
    let Scratch {
        filtered,
        sigma,
        index,
        ..
    } = &mut **scratch;
    let mut c0 = 0;
    while c0 < w {
        let n = BLOCK.min(w - c0);
        let src = PAD + c0 - half..PAD + c0 + n + half;
        let [mu1, mu2, xx, yy, xy] = &mut *filtered;
        let (mu1, mu2) = (&mut mu1[..n], &mut mu2[..n]);
        let (xx, yy, xy) = (&mut xx[..n], &mut yy[..n], &mut xy[..n]);
        let biased = I::BIASED_MOMENTS;
        filter_row::<I, N>(&m_mu1[src.clone()], None, filt, mu1, biased);
        filter_row::<I, N>(&m_mu2[src.clone()], None, filt, mu2, biased);
        for ([lo, hi], out) in m_sq.iter().zip([&mut *xx, &mut *yy, &mut *xy]) {
            filter_row::<I, N>(&hi[src.clone()], Some(&lo[src.clone()]), filt, out, biased);
        }
        // The explicit kernels take whole vectors of pixels, the portable loops the rest.
        let mut start = 0;
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if I::LEVEL != SimdLevel::Scalar {
            let f = [&mu1[..], &mu2[..], &xx[..], &yy[..], &xy[..]];
            let params = StatParams {
                steps: table,
                gain_limit,
                eps: EPS,
                nsq: SIGMA_NSQ,
            };
            let sums = match I::LEVEL {
                #[cfg(target_arch = "x86_64")]
                SimdLevel::Avx2 => {
                    start = n - n % 4;
                    // SAFETY: LEVEL is Avx2 only inside `extract_avx2` (see `Isa`); every
                    // slice holds n >= start values.
                    unsafe { vif_x86::stats_avx2(f, start, &params) }
                }
                #[cfg(target_arch = "x86_64")]
                SimdLevel::Avx512 | SimdLevel::Avx512Vnni => {
                    start = n - n % 16;
                    // SAFETY: as above, inside `extract_avx512` or `extract_avx512vnni`.
                    unsafe { vif_x86::stats_avx512(f, start, &params) }
                }
                #[cfg(target_arch = "aarch64")]
                SimdLevel::Neon => {
                    start = n - n % 4;
                    // SAFETY: LEVEL is Neon only where the CPU has NEON (every aarch64 CPU).
                    unsafe { vif_aarch64::stats_neon(f, start, &params) }
                }
                _ => unreachable!(),
            };
            acc.merge(&VifSums {
                num_log: sums[0],
                den_log: sums[1],
                num_non_log: sums[2],
                den_non_log: sums[3],
            });
        }
        let [s1, s2, s12] = &mut *sigma;
        let (s1, s2, s12) = (
            &mut s1[..n - start],
            &mut s2[..n - start],
            &mut s12[..n - start],
        );
        let (mu1, mu2) = (&mu1[start..], &mu2[start..]);
        let (xx, yy, xy) = (&xx[start..], &yy[start..], &xy[start..]);
        for j in 0..n - start {
            [s1[j], s2[j], s12[j]] = sigmas(mu1[j], mu2[j], xx[j], yy[j], xy[j]);
        }
        acc.merge(&block_stats::<I>([s1, s2, s12], index, table, gain_limit));
        c0 += n;
    }
}

/// Blurs both pictures of one scale with `filt` (the next scale's filter) and keeps the even
/// rows and columns (libvmaf's `subsample_rd_*` + `decimate_and_pad`, which blurs every row and
/// then drops the odd ones; here only the even rows are blurred). `sh_v` is the shift after the
/// vertical pass (the bit depth at scale 0, 16 above).
#[inline(always)]
fn decimate<I: Isa, T: Copy + Into<u32>, const N: usize>(
    src: [Img<T>; 2],
    filt: &[u16; N],
    sh_v: u32,
    conv: &mut [u16],
    acc: &mut [u32; BLOCK],
    out: [&mut [u16]; 2],
) {
    let half = N / 2;
    let (w, h) = (src[0].w, src[0].h);
    let (ow, oh) = (w / 2, h / 2);
    let rnd_v = 1u32 << (sh_v - 1);
    let f = filt.map(u32::from);
    for (img, out) in src.into_iter().zip(out) {
        for oi in 0..oh {
            let rows = img.taps::<N>(2 * oi);
            let mut c0 = 0;
            // The AVX-512 kernels take the leading multiple of 32 columns (8- and 16-bit
            // samples, taps below 2^15), the portable loop the rest.
            #[cfg(target_arch = "x86_64")]
            {
                let fits = vif_x86::taps_fit(filt) && matches!(std::mem::size_of::<T>(), 1 | 2);
                let n = w - w % 32;
                let dst = &mut conv[PAD..PAD + n];
                match I::LEVEL {
                    // SAFETY: LEVEL is Avx512 only inside `extract_avx512` (see `Isa`); T is
                    // u8 or u16 (checked), the taps fit, 1 <= sh_v <= 16 (the sample depth or
                    // 16), every row holds w >= n samples.
                    SimdLevel::Avx512 if fits => unsafe {
                        vif_x86::vertical_decimate_avx512(&rows, filt, sh_v, dst, n);
                        c0 = n;
                    },
                    // SAFETY: as above, inside `extract_avx512vnni`.
                    SimdLevel::Avx512Vnni if fits => unsafe {
                        vif_x86::vertical_decimate_avx512vnni(&rows, filt, sh_v, dst, n);
                        c0 = n;
                    },
                    _ => {}
                }
            }
            while c0 < w {
                let n = BLOCK.min(w - c0);
                let acc = &mut acc[..n];
                acc.fill(0);
                for k in 0..N {
                    let x = &rows[k][c0..c0 + n];
                    for j in 0..n {
                        acc[j] = acc[j].wrapping_add(f[k].wrapping_mul(x[j].into()));
                    }
                }
                // At most 16 bits: the filter sums to 2^16 and the shift is the sample depth
                // (scale 0) or 16.
                for (o, &a) in conv[PAD + c0..PAD + c0 + n].iter_mut().zip(acc.iter()) {
                    *o = (a.wrapping_add(rnd_v) >> sh_v) as u16;
                }
                c0 += n;
            }
            mirror_pad(conv, w, half);
            // Horizontal pass over every column (vectorises), then keep the even ones.
            let out = &mut out[oi * ow..oi * ow + ow];
            // The explicit kernels leave each block of `chunk` outputs as its even outputs,
            // then its odd ones (see `vif_x86`); the portable loops in column order.
            let chunk = if vif_x86_taps_fit(filt) {
                vector_chunk::<I>()
            } else {
                0
            };
            let keep = |a: u32| (a.wrapping_add(32768) >> 16) as u16;
            let mut c0 = 0;
            while c0 < w {
                let n = BLOCK.min(w - c0);
                let acc = &mut acc[..n];
                let conv_src = &conv[PAD + c0 - half..PAD + c0 + n + half];
                filter_row::<I, N>(conv_src, None, filt, acc, false);
                let done = if chunk > 0 { n - n % chunk } else { 0 };
                // BLOCK is a multiple of every chunk, so local and global column parity agree;
                // a last odd column is never kept.
                let out = &mut out[c0 / 2..c0 / 2 + n / 2];
                for q in (0..done).step_by(chunk.max(1)) {
                    for (o, &a) in out[q / 2..q / 2 + chunk / 2].iter_mut().zip(&acc[q..]) {
                        *o = keep(a);
                    }
                }
                for (o, pair) in out[done / 2..].iter_mut().zip(acc[done..].chunks_exact(2)) {
                    *o = keep(pair[0]);
                }
                c0 += n;
            }
        }
    }
}

/// The decimated pictures of one scale above 0.
struct Level {
    w: usize,
    h: usize,
    r: Vec<u16>,
    d: Vec<u16>,
}

impl Level {
    fn imgs(&self) -> [Img<'_, u16>; 2] {
        let (w, h) = (self.w, self.h);
        let img = |data| Img {
            data,
            w,
            h,
            stride: w,
        };
        [img(&self.r[..]), img(&self.d[..])]
    }
}

/// A view of a plane's samples with its geometry.
fn img<'a, T>(p: &Plane, data: &'a [T]) -> Img<'a, T> {
    Img {
        data,
        w: p.width,
        h: p.height,
        stride: p.stride,
    }
}

/// VIF of one scale in the general case (see [`vertical_moments_wide`]).
#[inline(always)]
fn scale_stats_wide<I: Isa, const N: usize>(
    [r, d]: [Img<u16>; 2],
    filt: &[u16; N],
    shifts: (u32, u32),
    sample_bits: u32,
    moments: &mut Moments,
    table: &Log2Steps,
    gain_limit: f64,
) -> VifSums {
    let mut acc = VifSums::default();
    for i in 0..r.h {
        vertical_moments_wide::<I, N>(r, d, i, filt, shifts, sample_bits, moments);
        horizontal_stats::<I, N>(moments, r.w, filt, table, gain_limit, &mut acc);
    }
    acc
}

/// Integer VIF of libvmaf for one picture size and depth; owns its scratch buffers.
pub struct VifExtractor {
    width: usize,
    height: usize,
    bpc: u32,
    gain_limit: f64,
    table: &'static Log2Steps,
    /// Scales 1..=3.
    levels: [Level; 3],
    moments: Moments,
    conv: Vec<u16>,
    simd: SimdLevel,
}

impl VifExtractor {
    /// An extractor for `width` x `height` pictures of `bpc` bits (8..=16) with the given
    /// enhancement-gain limit (libvmaf's `vif_enhn_gain_limit`, 1.0..=100.0).
    ///
    /// Panics if a dimension is below [`MIN_DIMENSION`], or the depth or the gain limit is out
    /// of range.
    pub fn new(width: usize, height: usize, bpc: u32, enhn_gain_limit: f64) -> Self {
        assert!(
            width >= MIN_DIMENSION && height >= MIN_DIMENSION,
            "VIF needs at least {MIN_DIMENSION}x{MIN_DIMENSION} pictures, got {width}x{height}"
        );
        assert!((8..=16).contains(&bpc), "bit depth {bpc} out of range");
        // libvmaf's option bounds; they also keep `g² sigma1_sq` below 2^45 (exact in f64).
        assert!(
            (1.0..=DEFAULT_VIF_ENHN_GAIN_LIMIT).contains(&enhn_gain_limit),
            "VIF enhancement gain limit {enhn_gain_limit} outside libvmaf's 1.0..=100.0"
        );
        let levels = std::array::from_fn(|k| {
            let (w, h) = (width >> (k + 1), height >> (k + 1));
            Level {
                w,
                h,
                r: vec![0; w * h],
                d: vec![0; w * h],
            }
        });
        VifExtractor {
            width,
            height,
            bpc,
            gain_limit: enhn_gain_limit,
            table: log2_steps(),
            levels,
            moments: Moments::new(width),
            conv: vec![0; width + 2 * PAD],
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
    pub fn extract(&mut self, reference: &Plane, distorted: &Plane) -> VifScores {
        match self.simd {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `simd` is only ever a level the running CPU supports (`capped`,
            // `selected`), and `extract_avx2` needs nothing beyond AVX2.
            SimdLevel::Avx2 => unsafe { self.extract_avx2(reference, distorted) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX-512 F/BW/DQ/VL.
            SimdLevel::Avx512 => unsafe { self.extract_avx512(reference, distorted) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX-512 F/BW/DQ/VL and VNNI.
            SimdLevel::Avx512Vnni => unsafe { self.extract_avx512vnni(reference, distorted) },
            #[cfg(target_arch = "aarch64")]
            SimdLevel::Neon => self.extract_impl::<Neon>(reference, distorted),
            _ => self.extract_impl::<Portable>(reference, distorted),
        }
    }

    /// Same as [`extract`](Self::extract) but always with the baseline code path (no runtime
    /// CPU dispatch); both give identical results. For tests and benchmarks.
    #[doc(hidden)]
    pub fn extract_portable(&mut self, reference: &Plane, distorted: &Plane) -> VifScores {
        self.extract_impl::<Portable>(reference, distorted)
    }

    /// The whole pipeline compiled with AVX2 enabled (every stage is inlined into it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn extract_avx2(&mut self, reference: &Plane, distorted: &Plane) -> VifScores {
        self.extract_impl::<Avx2>(reference, distorted)
    }

    /// The whole pipeline compiled with AVX-512 enabled.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    fn extract_avx512(&mut self, reference: &Plane, distorted: &Plane) -> VifScores {
        self.extract_impl::<Avx512>(reference, distorted)
    }

    /// The whole pipeline compiled with AVX-512 and VNNI enabled.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
    fn extract_avx512vnni(&mut self, reference: &Plane, distorted: &Plane) -> VifScores {
        self.extract_impl::<Avx512Vnni>(reference, distorted)
    }

    #[inline(always)]
    fn extract_impl<I: Isa>(&mut self, reference: &Plane, distorted: &Plane) -> VifScores {
        for p in [reference, distorted] {
            assert!(
                p.width == self.width && p.height == self.height && p.bpc == self.bpc,
                "VIF extractor built for {}x{} {}-bit, got {}x{} {}-bit",
                self.width,
                self.height,
                self.bpc,
                p.width,
                p.height,
                p.bpc
            );
        }
        let mut sums = [VifSums::default(); 4];
        match (reference.samples, distorted.samples) {
            (Samples::U8(r), Samples::U8(d)) if self.bpc == 8 => {
                let (r, d) = (img(reference, r), img(distorted, d));
                sums[0] = self.scale0_8::<I>(r, d);
                self.decimate_scale0::<I, _>([r, d]);
            }
            (Samples::U16(r), Samples::U16(d)) if self.bpc > 8 => {
                let src = [img(reference, r), img(distorted, d)];
                let shifts = (self.bpc, 2 * (self.bpc - 8));
                sums[0] = scale_stats_wide::<I, 17>(
                    src,
                    &FILTER_0,
                    shifts,
                    self.bpc,
                    &mut self.moments,
                    self.table,
                    self.gain_limit,
                );
                self.decimate_scale0::<I, _>(src);
            }
            _ => panic!(
                "VIF: sample storage does not match the {}-bit depth",
                self.bpc
            ),
        }
        let (moments, table, gain) = (&mut self.moments, self.table, self.gain_limit);
        let [l1, l2, l3] = &mut self.levels;
        sums[1] =
            scale_stats_wide::<I, 9>(l1.imgs(), &FILTER_1, (16, 16), 16, moments, table, gain);
        let acc = &mut moments.scratch.acc32[0];
        decimate::<I, _, 5>(
            l1.imgs(),
            &FILTER_2,
            16,
            &mut self.conv,
            acc,
            [&mut l2.r, &mut l2.d],
        );
        sums[2] =
            scale_stats_wide::<I, 5>(l2.imgs(), &FILTER_2, (16, 16), 16, moments, table, gain);
        let acc = &mut moments.scratch.acc32[0];
        decimate::<I, _, 3>(
            l2.imgs(),
            &FILTER_3,
            16,
            &mut self.conv,
            acc,
            [&mut l3.r, &mut l3.d],
        );
        sums[3] =
            scale_stats_wide::<I, 3>(l3.imgs(), &FILTER_3, (16, 16), 16, moments, table, gain);
        scores_from_sums(&sums)
    }

    #[inline(always)]
    fn scale0_8<I: Isa>(&mut self, r: Img<u8>, d: Img<u8>) -> VifSums {
        let mut acc = VifSums::default();
        for i in 0..r.h {
            vertical_moments_8::<I>(r, d, i, &mut self.moments);
            horizontal_stats::<I, 17>(
                &mut self.moments,
                r.w,
                &FILTER_0,
                self.table,
                self.gain_limit,
                &mut acc,
            );
        }
        acc
    }

    #[inline(always)]
    fn decimate_scale0<I: Isa, T: Copy + Into<u32>>(&mut self, src: [Img<T>; 2]) {
        let next = &mut self.levels[0];
        decimate::<I, T, 9>(
            src,
            &FILTER_1,
            self.bpc,
            &mut self.conv,
            &mut self.moments.scratch.acc32[0],
            [&mut next.r, &mut next.d],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q11 log2 of a 32-bit value of at least 2^17 (libvmaf's `log2_32`): table entry of the
    /// top 16 bits plus 2048 per bit shifted out.
    fn log2_q11_u32(table: &Log2Table, v: u32) -> i64 {
        let k = 16 - v.leading_zeros() as i32;
        let top = v >> k.clamp(0, 31);
        i64::from(table[(top & 0xffff) as usize]) + 2048 * i64::from(k)
    }

    /// Q11 log2 of a 64-bit value of at least 2^17 (libvmaf's `log2_64`).
    fn log2_q11_u64(table: &Log2Table, v: u64) -> i64 {
        let k = 48 - v.leading_zeros() as i32;
        let top = v >> k.clamp(0, 63);
        i64::from(table[(top & 0xffff) as usize]) + 2048 * i64::from(k)
    }

    /// The per-pixel statistic written as libvmaf's scalar loop: the reference for
    /// [`block_stats`], which computes the same branch-free.
    fn scalar_statistic(
        acc: &mut VifSums,
        table: &Log2Table,
        gain_limit: f64,
        s1: i32,
        s2: i32,
        s12: i32,
    ) {
        if s1 >= SIGMA_NSQ {
            // s1 < 2^31, so the sum fits u32 (libvmaf adds in int32 and reads it as uint32).
            let den = (s1 as u32).wrapping_add(SIGMA_NSQ as u32);
            acc.den_log += log2_q11_u32(table, den) - 2048 * 17;
            if s12 > 0 && s2 > 0 {
                let g = f64::from(s12) / (f64::from(s1) + EPS);
                // C converts to int32 with truncation; out-of-range values only occur far below
                // zero (x86 gives INT_MIN, Rust saturates), and both clamp to 0 next.
                let sv_sq = (f64::from(s2) - g * f64::from(s12)) as i32;
                let sv_sq = sv_sq.max(0) as u32;
                let g = g.min(gain_limit);
                let numer1 = sv_sq + SIGMA_NSQ as u32;
                // g <= 100 and s1 < 2^31: the product is below 2^45.
                let numer1_tmp = (g * g * f64::from(s1)) as i64 + i64::from(numer1);
                acc.num_log +=
                    log2_q11_u64(table, numer1_tmp as u64) - log2_q11_u64(table, u64::from(numer1));
            }
        } else {
            acc.num_non_log += i64::from(s2);
            acc.den_non_log += 1;
        }
    }

    /// xorshift64*
    fn rng(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The narrow scale-0 vertical pass (fewer biased terms, for samples below 2^15) writes
    /// exactly what the general pass writes when every sample is below 2^15, and reports when
    /// one is not (the caller then runs the general pass), at every x86 level the CPU has.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn narrow_vertical_pass_equals_the_general_one_or_says_it_cannot() {
        const N: usize = 17;
        let n = 64;
        let mut st = 0x000a_110f_7e57_u64;
        for round in 0..60 {
            let bits = [10u32, 12, 15, 16][round % 4];
            let mut data: Vec<Vec<u16>> = (0..2 * N)
                .map(|_| {
                    (0..n)
                        .map(|_| (rng(&mut st) % (1 << bits)) as u16)
                        .collect()
                })
                .collect();
            if round % 12 == 3 || round % 12 == 6 {
                // Every sample at the depth's largest value (the largest sums).
                data.iter_mut()
                    .flatten()
                    .for_each(|v| *v = ((1u32 << bits) - 1) as u16);
            }
            if round % 5 == 4 {
                // One sample at or above 2^15 somewhere.
                let k = (rng(&mut st) % (2 * N as u64)) as usize;
                let j = (rng(&mut st) % n as u64) as usize;
                data[k][j] = 0x8000 | (rng(&mut st) as u16 & 0x7fff);
            }
            let all_below = data.iter().flatten().all(|&v| v < 0x8000);
            let rows: [&[u16]; N] = std::array::from_fn(|k| data[k].as_slice());
            let drows: [&[u16]; N] = std::array::from_fn(|k| data[N + k].as_slice());
            let shifts = WideShifts {
                mu: bits.min(16),
                sq: 2 * (bits.min(16) - 8),
            };
            for level in SimdLevel::supported()
                .into_iter()
                .filter(|&l| l != SimdLevel::Scalar)
            {
                let mut outs: [[Vec<u16>; 8]; 2] =
                    std::array::from_fn(|_| std::array::from_fn(|_| vec![0u16; n]));
                let mut said = [true; 2];
                for (narrow, (out, said)) in outs.iter_mut().zip(&mut said).enumerate() {
                    let [m1, m2, xl, xh, yl, yh, zl, zh] = out;
                    let out = VerticalOut {
                        mu1: m1,
                        mu2: m2,
                        sq: [(xl, xh), (yl, yh), (zl, zh)],
                    };
                    let f = &FILTER_0;
                    // SAFETY: `level` is supported by this CPU (SimdLevel::supported); taps fit;
                    // shifts within 1..=16; every row and output holds n = 64 samples.
                    *said = unsafe {
                        match (level, narrow == 1) {
                            (SimdLevel::Avx2, false) => vif_x86::vertical_wide_avx2::<N, false>(
                                &rows, &drows, f, shifts, out, n,
                            ),
                            (SimdLevel::Avx2, true) => vif_x86::vertical_wide_avx2::<N, true>(
                                &rows, &drows, f, shifts, out, n,
                            ),
                            (SimdLevel::Avx512, false) => {
                                vif_x86::vertical_wide_avx512::<N, false>(
                                    &rows, &drows, f, shifts, out, n,
                                )
                            }
                            (SimdLevel::Avx512, true) => vif_x86::vertical_wide_avx512::<N, true>(
                                &rows, &drows, f, shifts, out, n,
                            ),
                            (_, false) => vif_x86::vertical_wide_avx512vnni::<N, false>(
                                &rows, &drows, f, shifts, out, n,
                            ),
                            (_, true) => vif_x86::vertical_wide_avx512vnni::<N, true>(
                                &rows, &drows, f, shifts, out, n,
                            ),
                        }
                    };
                }
                assert!(said[0], "the general pass always holds");
                assert_eq!(
                    said[1], all_below,
                    "round {round} at {level}: narrow pass verdict"
                );
                if all_below {
                    assert_eq!(
                        outs[0], outs[1],
                        "round {round} at {level}: narrow vs general"
                    );
                }
            }
        }
    }

    /// The branch-free block statistic equals libvmaf's scalar per-pixel code, on random and
    /// extreme sigma values, for both instruction-set variants.
    #[test]
    fn block_stats_match_scalar_statistic() {
        let table = log2_table();
        let mut st = 0x1234_5678_9abc_def1u64;
        let specials = [
            i32::MIN,
            -1,
            0,
            1,
            SIGMA_NSQ - 1,
            SIGMA_NSQ,
            SIGMA_NSQ + 1,
            1 << 20,
            1 << 30,
            i32::MAX - SIGMA_NSQ,
            i32::MAX,
        ];
        for round in 0..2000 {
            let mut s = [[0i32; BLOCK]; 3];
            let mut idx = [[0u64; BLOCK]; 3];
            for v in s.iter_mut().flatten() {
                let r = rng(&mut st);
                *v = match r % 4 {
                    0 => specials[(r >> 8) as usize % specials.len()],
                    1 => (r >> 16) as i32,
                    2 => ((r >> 16) % (1 << 22)) as i32 - (1 << 18),
                    _ => ((r >> 16) % (1 << 27)) as i32,
                };
            }
            let [s1, s2, s12] = &mut s;
            for v in s2.iter_mut() {
                *v = (*v).max(0);
            }
            let n = 1 + round % BLOCK;
            for gain in [1.0, 1.3, DEFAULT_VIF_ENHN_GAIN_LIMIT] {
                let mut want = VifSums::default();
                for j in 0..n {
                    scalar_statistic(&mut want, table, gain, s1[j], s2[j], s12[j]);
                }
                let sig = [&s1[..n], &s2[..n], &s12[..n]];
                let got = block_stats::<Portable>(sig, &mut idx, log2_steps(), gain);
                assert_eq!(got, want, "round {round} gain {gain}");
                #[cfg(target_arch = "x86_64")]
                {
                    let got = block_stats::<Avx2>(sig, &mut idx, log2_steps(), gain);
                    assert_eq!(got, want, "round {round} gain {gain} (roundpd)");
                }
            }
        }
    }

    /// Runs `$check::<I>()` for every explicit-kernel level `I` the CPU has (NEON on aarch64,
    /// the AVX levels on x86-64) and returns the names of those that ran.
    macro_rules! at_each_kernel_level {
        ($check:ident) => {{
            #[allow(unused_mut)]
            let mut ran: Vec<SimdLevel> = Vec::new();
            #[cfg(target_arch = "aarch64")]
            if SimdLevel::Neon.is_supported() {
                $check::<Neon>();
                ran.push(SimdLevel::Neon);
            }
            #[cfg(target_arch = "x86_64")]
            {
                if SimdLevel::Avx2.is_supported() {
                    $check::<Avx2>();
                    ran.push(SimdLevel::Avx2);
                }
                if SimdLevel::Avx512.is_supported() {
                    $check::<Avx512>();
                    ran.push(SimdLevel::Avx512);
                }
                if SimdLevel::Avx512Vnni.is_supported() {
                    $check::<Avx512Vnni>();
                    ran.push(SimdLevel::Avx512Vnni);
                }
            }
            eprintln!("kernel levels checked: {ran:?}");
            ran
        }};
    }

    /// Sample values of a depth: random, all maximal, all zero, alternating extremes.
    fn samples(st: &mut u64, len: usize, bits: u32, pattern: u64) -> Vec<u16> {
        let max = ((1u32 << bits) - 1) as u16;
        (0..len)
            .map(|j| match pattern % 4 {
                0 => (rng(st) >> 20) as u16 & max,
                1 => max,
                2 => 0,
                _ => {
                    if (j / 3) % 2 == 0 {
                        max
                    } else {
                        0
                    }
                }
            })
            .collect()
    }

    /// Widths that hit every remainder of the kernels' blocks (8, 16, 32) and `BLOCK`.
    const WIDTHS: [usize; 16] = [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128];

    /// The column order of [`filter_row`] at level `I`: the x86 kernels store each block as its
    /// even outputs, then its odd ones (see `vif_x86`), the NEON kernels and the portable loops
    /// in column order.
    fn in_column_order<I: Isa, const N: usize>(out: &[u32], filt: &[u16; N]) -> Vec<u32> {
        let mut v = out.to_vec();
        let permuted = !matches!(I::LEVEL, SimdLevel::Scalar | SimdLevel::Neon);
        if permuted && vif_x86_taps_fit(filt) {
            let chunk = vector_chunk::<I>();
            let done = out.len() - out.len() % chunk;
            for q in (0..done).step_by(chunk) {
                for i in 0..chunk / 2 {
                    v[q + 2 * i] = out[q + i];
                    v[q + 2 * i + 1] = out[q + chunk / 2 + i];
                }
            }
        }
        v
    }

    fn check_filter_rows<I: Isa>() {
        fn one<I: Isa, const N: usize>(filt: &[u16; N], st: &mut u64) {
            for (round, n) in WIDTHS.into_iter().enumerate() {
                for bits in [8, 10, 12, 16] {
                    let pattern = (round + bits as usize) as u64;
                    let hi = samples(st, n + N - 1, bits, pattern);
                    let lo = samples(st, n + N - 1, 16, pattern + 1);
                    for lo in [None, Some(&lo[..])] {
                        let mut want = vec![0u32; n];
                        let mut got = vec![0u32; n];
                        filter_row::<Portable, N>(&hi, lo, filt, &mut want, false);
                        filter_row::<I, N>(&hi, lo, filt, &mut got, false);
                        let got = in_column_order::<I, N>(&got, filt);
                        assert_eq!(
                            got,
                            want,
                            "{} N={N} n={n} bits={bits} split={}",
                            I::LEVEL,
                            lo.is_some()
                        );
                    }
                }
            }
        }
        let mut st = 0x0bad_cafe_1234_5678u64;
        one::<I, 17>(&FILTER_0, &mut st);
        one::<I, 9>(&FILTER_1, &mut st);
        one::<I, 5>(&FILTER_2, &mut st);
        one::<I, 3>(&FILTER_3, &mut st);
    }

    /// The explicit horizontal filters equal the portable ones on every filter, row length,
    /// depth and extreme sample pattern, with and without the split second moments.
    #[test]
    fn kernel_filter_rows_match_portable() {
        at_each_kernel_level!(check_filter_rows);
    }

    /// Every column of the vertical pass's outputs (columns `0..w`), as level `I` stores
    /// them, flipped back where it stores them flipped.
    fn moments_of<I: Isa>(m: &Moments, w: usize) -> Vec<Vec<u16>> {
        let row = |s: &[u16]| {
            s[PAD..PAD + w]
                .iter()
                .map(|&v| v ^ moment_bias::<I>())
                .collect()
        };
        let mut v: Vec<Vec<u16>> = vec![row(&m.mu1), row(&m.mu2)];
        v.extend(m.sq.iter().flatten().map(|s| row(s)));
        v
    }

    fn check_vertical_passes<I: Isa>() {
        let mut st = 0x005e_ed0f_7e57_u64;
        let h = 19;
        for (round, w) in WIDTHS.into_iter().filter(|&w| w >= 8).enumerate() {
            for pattern in 0..4 {
                let p = (round + pattern) as u64;
                // 8-bit scale 0
                let r8: Vec<u8> = samples(&mut st, w * h, 8, p)
                    .iter()
                    .map(|&v| v as u8)
                    .collect();
                let d8: Vec<u8> = samples(&mut st, w * h, 8, p + 1)
                    .iter()
                    .map(|&v| v as u8)
                    .collect();
                let img8 = |data| Img {
                    data,
                    w,
                    h,
                    stride: w,
                };
                let (mut want, mut got) = (Moments::new(w), Moments::new(w));
                for i in [0, 1, 8, h - 1] {
                    vertical_moments_8::<Portable>(img8(&r8), img8(&d8), i, &mut want);
                    vertical_moments_8::<I>(img8(&r8), img8(&d8), i, &mut got);
                    assert_eq!(
                        moments_of::<I>(&got, w),
                        moments_of::<Portable>(&want, w),
                        "{} 8-bit w={w} row {i}",
                        I::LEVEL
                    );
                }
                // Deeper scale 0, and scales 1..3 of 16-bit samples.
                for bits in [9, 10, 12, 16] {
                    let r = samples(&mut st, w * h, bits, p);
                    let d = samples(&mut st, w * h, bits, p + 2);
                    let img = |data| Img {
                        data,
                        w,
                        h,
                        stride: w,
                    };
                    let (r, d) = (img(&r[..]), img(&d[..]));
                    let shifts = (bits, 2 * (bits - 8));
                    for i in [0, 2, 9, h - 1] {
                        macro_rules! both {
                            ($n:literal, $filt:expr, $sh:expr, $bits:expr) => {
                                vertical_moments_wide::<Portable, $n>(
                                    r, d, i, $filt, $sh, $bits, &mut want,
                                );
                                vertical_moments_wide::<I, $n>(
                                    r, d, i, $filt, $sh, $bits, &mut got,
                                );
                                assert_eq!(
                                    moments_of::<I>(&got, w),
                                    moments_of::<Portable>(&want, w),
                                    "{} {bits}-bit N={} w={w} row {i}",
                                    I::LEVEL,
                                    $n
                                );
                            };
                        }
                        both!(17, &FILTER_0, shifts, bits);
                        both!(9, &FILTER_1, (16, 16), 16);
                        both!(5, &FILTER_2, (16, 16), 16);
                        both!(3, &FILTER_3, (16, 16), 16);
                    }
                }
            }
        }
    }

    /// The explicit vertical passes (8-bit scale 0, deeper scale 0, scales 1..3) equal the
    /// portable ones on odd widths, every depth, extreme values and the mirrored edge rows.
    #[test]
    fn kernel_vertical_passes_match_portable() {
        at_each_kernel_level!(check_vertical_passes);
    }

    fn check_horizontal_stats<I: Isa>() {
        let mut st = 0xfeed_beef_0000_0001u64;
        let table = log2_steps();
        for (round, w) in WIDTHS.into_iter().chain([129, 200, 259]).enumerate() {
            for pattern in 0..6u64 {
                let (mut a, mut b) = (Moments::new(w), Moments::new(w));
                // Random 16-bit moments (any sigma, wrapped or not), or consistent ones: the
                // second moments the squares of mu's scale (sigma near 0, both branches).
                let p = round as u64 + pattern;
                let mu1 = samples(&mut st, w, 16, p);
                let mu2 = samples(&mut st, w, 16, p + 1);
                for (k, buf) in [&mut a.mu1, &mut a.mu2].into_iter().enumerate() {
                    buf[PAD..PAD + w].copy_from_slice(if k == 0 { &mu1 } else { &mu2 });
                }
                for (q, [lo, hi]) in a.sq.iter_mut().enumerate() {
                    let (x, y) = match q {
                        0 => (&mu1, &mu1),
                        1 => (&mu2, &mu2),
                        _ => (&mu1, &mu2),
                    };
                    for j in 0..w {
                        let v = if pattern >= 4 {
                            let sq = (u64::from(x[j]) * u64::from(y[j])) >> 16;
                            (sq as u32).wrapping_add((rng(&mut st) % 300_000) as u32)
                        } else {
                            rng(&mut st) as u32
                        };
                        lo[PAD + j] = v as u16;
                        hi[PAD + j] = (v >> 16) as u16;
                    }
                }
                b.mu1.copy_from_slice(&a.mu1);
                b.mu2.copy_from_slice(&a.mu2);
                for (sb, sa) in b.sq.iter_mut().zip(&a.sq) {
                    sb[0].copy_from_slice(&sa[0]);
                    sb[1].copy_from_slice(&sa[1]);
                }
                // Level I's rows as its vertical passes would store them.
                let flip = |v: &mut Vec<u16>| v.iter_mut().for_each(|x| *x ^= moment_bias::<I>());
                flip(&mut b.mu1);
                flip(&mut b.mu2);
                b.sq.iter_mut().flatten().for_each(flip);
                for gain in [1.0, DEFAULT_VIF_ENHN_GAIN_LIMIT] {
                    macro_rules! both {
                        ($n:literal, $filt:expr) => {
                            let (mut want, mut got) = (VifSums::default(), VifSums::default());
                            horizontal_stats::<Portable, $n>(
                                &mut a, w, $filt, table, gain, &mut want,
                            );
                            horizontal_stats::<I, $n>(&mut b, w, $filt, table, gain, &mut got);
                            assert_eq!(got, want, "{} N={} w={w} pattern {pattern}", I::LEVEL, $n);
                        };
                    }
                    both!(17, &FILTER_0);
                    both!(9, &FILTER_1);
                    both!(5, &FILTER_2);
                    both!(3, &FILTER_3);
                }
            }
        }
    }

    /// The AVX-512 statistic over more pixels than its 32-bit partial sums take at once (it
    /// moves them to 64-bit totals every 2^18 pixels): random moments, wrapped sigmas and
    /// values near every branch, against the portable statistic.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_statistic_matches_portable_past_its_partial_sums() {
        if !SimdLevel::Avx512.is_supported() {
            return;
        }
        let n = (1 << 18) + 48;
        let mut st = 0x5eed_0000_1234_5678u64;
        let mut f: [Vec<u32>; 5] = Default::default();
        for j in 0..n {
            let (m1, m2) = (rng(&mut st) as u32, rng(&mut st) as u32);
            let sq = |a: u32, b: u32| ((u64::from(a) * u64::from(b) + (1 << 31)) >> 32) as u32;
            let near = |m: u32, st: &mut u64| m.wrapping_add((rng(st) % 400_000) as u32);
            // The first 4096 pixels flat (sigma1_sq below the noise: whole blocks without a
            // logarithm), then half the pixels near zero variance (both branches), the rest
            // anything.
            let flat = |m: u32, st: &mut u64| m.wrapping_add((rng(st) % 1000) as u32);
            let (xx, yy, xy) = if j < 4096 {
                (
                    flat(sq(m1, m1), &mut st),
                    rng(&mut st) as u32,
                    flat(sq(m1, m2), &mut st),
                )
            } else if j % 2 == 0 {
                (
                    near(sq(m1, m1), &mut st),
                    near(sq(m2, m2), &mut st),
                    near(sq(m1, m2), &mut st),
                )
            } else {
                (
                    rng(&mut st) as u32,
                    rng(&mut st) as u32,
                    rng(&mut st) as u32,
                )
            };
            for (v, x) in f.iter_mut().zip([m1, m2, xx, yy, xy]) {
                v.push(x);
            }
        }
        let table = log2_steps();
        for gain in [1.0, DEFAULT_VIF_ENHN_GAIN_LIMIT] {
            let mut want = VifSums::default();
            let mut idx = [[0u64; BLOCK]; 3];
            for c0 in (0..n).step_by(BLOCK) {
                let m = BLOCK.min(n - c0);
                let mut s = [[0i32; BLOCK]; 3];
                for j in 0..m {
                    let at = |q: usize| f[q][c0 + j];
                    [s[0][j], s[1][j], s[2][j]] = sigmas(at(0), at(1), at(2), at(3), at(4));
                }
                let sig = [&s[0][..m], &s[1][..m], &s[2][..m]];
                want.merge(&block_stats::<Portable>(sig, &mut idx, table, gain));
            }
            let params = StatParams {
                steps: table,
                gain_limit: gain,
                eps: EPS,
                nsq: SIGMA_NSQ,
            };
            let slices = [&f[0][..], &f[1][..], &f[2][..], &f[3][..], &f[4][..]];
            // SAFETY: AVX-512 checked above; every slice holds n values, n a multiple of 16.
            let got = unsafe { vif_x86::stats_avx512(slices, n, &params) };
            assert_eq!(
                got,
                [
                    want.num_log,
                    want.den_log,
                    want.num_non_log,
                    want.den_non_log
                ]
            );
        }
    }

    /// The explicit horizontal filters plus statistic give the portable sums on random and
    /// near-zero-variance moments, every filter and both ends of the gain limit.
    #[test]
    fn kernel_statistics_match_portable() {
        at_each_kernel_level!(check_horizontal_stats);
    }

    /// A plane over `byte` (8-bit) or `wide` samples, stride = width.
    fn view<'a>(wide: &'a [u16], byte: &'a [u8], w: usize, h: usize, bpc: u32) -> Plane<'a> {
        let samples = if bpc == 8 {
            Samples::U8(byte)
        } else {
            Samples::U16(wide)
        };
        Plane {
            samples,
            width: w,
            height: h,
            stride: w,
            bpc,
        }
    }

    /// Whole frames at every level the CPU supports equal the portable path: sizes from the
    /// 17-pixel minimum past one `BLOCK`, every depth, noise and extreme patterns.
    #[test]
    fn every_supported_level_matches_portable_on_edge_pictures() {
        let mut st = 0x0dd_517e_u64;
        for (w, h) in [(17, 17), (18, 23), (33, 19), (71, 40), (257, 21)] {
            for bpc in [8, 10, 12, 16] {
                for pattern in 0..4u64 {
                    let r = samples(&mut st, w * h, bpc, pattern);
                    let d = samples(&mut st, w * h, bpc, (pattern + 3) % 4);
                    let narrow = |v: &[u16]| v.iter().map(|&x| x as u8).collect::<Vec<u8>>();
                    let (r8, d8) = (narrow(&r), narrow(&d));
                    let plane = |wide, byte| view(wide, byte, w, h, bpc);
                    let (rp, dp) = (plane(&r, &r8), plane(&d, &d8));
                    let mut base = VifExtractor::new(w, h, bpc, 1.7);
                    let want = base.extract_portable(&rp, &dp);
                    for level in SimdLevel::supported() {
                        let mut x = VifExtractor::new(w, h, bpc, 1.7);
                        assert_eq!(x.set_simd_level(level), level);
                        assert_eq!(
                            x.extract(&rp, &dp),
                            want,
                            "{level} {w}x{h} {bpc}-bit pattern {pattern}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn log2_deltas_reproduce_the_table() {
        let (t, d) = (log2_table(), log2_deltas());
        for i in 32768..65536usize {
            assert_eq!(
                28672 + (i >> 4) + usize::from(d[i - 32768]),
                usize::from(t[i]),
                "{i}"
            );
        }
        assert_eq!(d.iter().max(), Some(&177), "the chord's largest distance");
    }

    #[test]
    fn log2_steps_reproduce_the_table() {
        let (t, s) = (log2_table(), log2_steps());
        for (i, &v) in t.iter().enumerate() {
            assert_eq!(
                log2_step_lookup(s[i >> 4], (i & 15) as u32),
                u32::from(v),
                "{i}"
            );
        }
    }

    #[test]
    fn log2_table_matches_single_precision_libm() {
        let t = log2_table();
        for (i, &v) in t.iter().enumerate().skip(32768) {
            let l = (i as f32).log2();
            assert_eq!(v, (l * 2048.0).round() as u16, "entry {i}");
        }
        assert!(t[..32768].iter().all(|&v| v == 0));
        assert_eq!(t[32768], 15 * 2048);
    }

    #[test]
    fn log2_q11_matches_libvmaf_definition() {
        let t = log2_table();
        // 2^17 -> 17 * 2048 exactly
        assert_eq!(log2_q11_u32(t, 1 << 17), 17 * 2048);
        assert_eq!(log2_q11_u64(t, 1 << 17), 17 * 2048);
        assert_eq!(log2_q11_u64(t, 1 << 40), 40 * 2048);
        let v = 0x1234_5678u32;
        assert_eq!(log2_q11_u32(t, v), log2_q11_u64(t, u64::from(v)));
    }

    #[test]
    fn filters_sum_to_one_in_q16() {
        let filters: [&[u16]; 4] = [&FILTER_0, &FILTER_1, &FILTER_2, &FILTER_3];
        for f in filters {
            assert_eq!(f.iter().map(|&c| u32::from(c)).sum::<u32>(), 65536);
            assert!(f.iter().eq(f.iter().rev()));
        }
    }
}
