//! Contrast sensitivity weighting, contrast masking (the ADM numerators) and the denominator
//! sums of one scale.
//!
//! libvmaf's masking threshold at a pixel is, summed over the h, v, d bands of the masker,
//! `sum of |csf|/30 over the 8 neighbours + |csf|/15 at the centre` (each term rounded on its
//! own). As every term is an integer, it is computed here as `box3x3(S) - S + C` where
//! `S = sum_bands flt` and `C = sum_bands centre term`: the same integers, added in another
//! order (wrapping, like libvmaf's `int32_t`). Neighbours mirror as `-1 -> 1` and `n -> n-1`.

use super::consts::{
    ONE_BY_15_Q17, ONE_BY_15_Q32, ONE_BY_30_Q17, ONE_BY_30_Q32, Q32_ROUND, S123_DEN_EXP,
    S123_DEN_SQ_SHIFT,
};
use super::{Band, Coef, Rect};

/// Per-band (theta) constants of the masking step at one scale.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BandK {
    /// CSF multiplier (scale 0: Q15/Q17 integer; scales 1..3: Q32).
    pub(crate) mul: i64,
    pub(crate) csf_add: i64,
    pub(crate) csf_shift: u32,
    /// Left shift of the threshold before subtracting it (scale 0 only).
    pub(crate) thr_shift: u32,
    pub(crate) sq_add: i64,
    pub(crate) sq_shift: u32,
    pub(crate) cub_add: i64,
    pub(crate) cub_shift: u32,
}

/// Arithmetic that differs between scale 0 (16-bit bands) and scales 1..3 (32-bit bands).
/// Only magnitudes of CSF values are ever used, so the trait works on `|csf|`.
pub(super) trait Stage {
    type E: Coef;
    /// Whether the centre term can exceed 16 bits (libvmaf's scalar code truncates it to
    /// `int16_t`, its AVX2/AVX-512 code does not).
    const CENTRE_CAN_WRAP: bool;
    /// `|csf|` of a coefficient (csf as libvmaf stores it).
    fn csf_abs(k: &BandK, v: i32) -> i32;
    /// `|csf| / 30` (neighbour term).
    fn flt(a: i32) -> i32;
    /// `|csf| / 15` (centre term) as libvmaf's SIMD code computes it.
    fn centre(a: i32) -> i32;
    /// `|csf| / 15` as libvmaf's scalar code computes it.
    fn centre_scalar(a: i32) -> i32;
    /// Masked coefficient `max(|csf(t)| - thr, 0)` in the numerator's fixed point.
    fn masked(k: &BandK, t: i32, thr: i32) -> i32;
}

pub(super) struct Scale0;
pub(super) struct Scale123;

impl Scale0 {
    /// Scale-0 CSF value as libvmaf stores it (`int16_t`).
    #[inline(always)]
    pub(super) fn csf(k: &BandK, v: i32) -> i32 {
        ((k.mul as i32)
            .wrapping_mul(v)
            .wrapping_add(k.csf_add as i32)
            >> k.csf_shift) as i16 as i32
    }
}

impl Stage for Scale0 {
    type E = i16;
    const CENTRE_CAN_WRAP: bool = true;
    #[inline(always)]
    fn csf_abs(k: &BandK, v: i32) -> i32 {
        Self::csf(k, v).wrapping_abs()
    }
    #[inline(always)]
    fn flt(a: i32) -> i32 {
        ((ONE_BY_30_Q17 * a + 2048) >> 12) as i16 as i32
    }
    #[inline(always)]
    fn centre(a: i32) -> i32 {
        (ONE_BY_15_Q17 * a + 2048) >> 12
    }
    #[inline(always)]
    fn centre_scalar(a: i32) -> i32 {
        Self::centre(a) as i16 as i32
    }
    #[inline(always)]
    fn masked(k: &BandK, t: i32, thr: i32) -> i32 {
        // The numerator uses the unshifted product t * mul (15 or 17 more fractional bits than
        // the stored csf value) and the threshold shifted to match.
        let x = t.wrapping_mul(k.mul as i32).wrapping_abs();
        x.wrapping_sub(thr.wrapping_shl(k.thr_shift)).max(0)
    }
}

/// `((F * a) + Q32_ROUND) >> 32` of libvmaf (arithmetic shift of a signed value) computed in
/// unsigned arithmetic: `floor((X - 2^31) / 2^32) = floor((X + 2^31) / 2^32) - 1`.
#[inline(always)]
fn q32_term(f: i64, a: i32) -> i32 {
    debug_assert_eq!(Q32_ROUND, -(1 << 31));
    (((f as u64) * (a as u32 as u64) + (1 << 31)) >> 32) as i32 - 1
}

impl Stage for Scale123 {
    type E = i32;
    const CENTRE_CAN_WRAP: bool = false;
    /// `|floor((mul * v + 2^27) / 2^28)|` via an unsigned product: for negative `v` that is
    /// `(mul * |v| + 2^27 - 1) >> 28`.
    #[inline(always)]
    fn csf_abs(k: &BandK, v: i32) -> i32 {
        debug_assert!(k.csf_add == 1 << 27 && k.csf_shift == 28);
        let p = (k.mul as u64) * (v.unsigned_abs() as u64);
        let neg = (v < 0) as u64;
        ((p + (1 << 27) - neg) >> 28) as i32
    }
    #[inline(always)]
    fn flt(a: i32) -> i32 {
        q32_term(ONE_BY_30_Q32, a)
    }
    #[inline(always)]
    fn centre(a: i32) -> i32 {
        q32_term(ONE_BY_15_Q32, a)
    }
    #[inline(always)]
    fn centre_scalar(a: i32) -> i32 {
        Self::centre(a)
    }
    #[inline(always)]
    fn masked(k: &BandK, t: i32, thr: i32) -> i32 {
        Self::csf_abs(k, t).wrapping_sub(thr).max(0)
    }
}

/// `((x^2 rounded) * x rounded)` exactly as libvmaf: the square is truncated to `int32_t`.
#[inline(always)]
fn cube_exact(k: &BandK, x: i32) -> i64 {
    let sq = ((x as i64 * x as i64 + k.sq_add) >> k.sq_shift) as i32;
    (sq as i64 * x as i64 + k.cub_add) >> k.cub_shift
}

/// Sum over a row of the cubed masked coefficients, wrapping like libvmaf's `int64_t`.
///
/// Fast path in unsigned 64-bit arithmetic (vectorises with 32x32->64 multiplies): for
/// `0 <= x < 2^30` and a square shift of at least 29 (every scale's) the rounded square fits
/// in 32 bits (so both products are 32x32-bit ones) and every term is positive and below
/// 2^63, so it is bit-identical to [`cube_exact`]; rows with a larger `x` (impossible for
/// valid bands at scale 0, kept for exactness) are redone exactly.
#[inline(always)]
fn cube_row(k: &BandK, xs: impl Iterator<Item = i32> + Clone) -> i64 {
    let mut acc = 0u64;
    let mut max = 0i32;
    let (sq_add, sq_shift) = (k.sq_add as u64, k.sq_shift);
    let (cub_add, cub_shift) = (k.cub_add as u64, k.cub_shift);
    for x in xs.clone() {
        max = max.max(x);
        let xu = x as u32 as u64;
        let sq = ((xu * xu + sq_add) >> sq_shift) as u32 as u64;
        acc = acc.wrapping_add((sq * xu + cub_add) >> cub_shift);
    }
    if max < (1 << 30) && sq_shift >= 29 && sq_add < (1 << 32) {
        acc as i64
    } else {
        xs.fold(0i64, |a, x| a.wrapping_add(cube_exact(k, x)))
    }
}

/// Geometry of the masking step at one scale.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MaskGeom {
    pub(crate) w: usize,
    pub(crate) h: usize,
    /// The region the score covers.
    pub(crate) cm: Rect,
    /// `cm` grown by one pixel (clamped): where the masker is needed.
    pub(crate) grown: Rect,
    /// Rows and columns where libvmaf's SIMD code computes the centre term without the
    /// `int16_t` truncation of its scalar code (scale 0 only; empty otherwise).
    pub(crate) simd: Rect,
    pub(crate) inner_add: i64,
    pub(crate) inner_shift: u32,
}

/// Scratch of the masking step (sized for the widest band).
#[derive(Default)]
pub(super) struct MaskScratch {
    /// Three rows of S and C (ring indexed by row % 3), over the grown columns.
    s: Vec<i32>,
    c: Vec<i32>,
    held: [usize; 3],
    vsum: Vec<i32>,
    pad: Vec<i32>,
    thr: Vec<i32>,
}

impl MaskScratch {
    pub(super) fn new(w: usize) -> Self {
        MaskScratch {
            s: vec![0; 3 * w],
            c: vec![0; 3 * w],
            held: [usize::MAX; 3],
            vsum: vec![0; w],
            pad: vec![0; w + 2],
            thr: vec![0; w],
        }
    }
}

/// S and C of masker row `i` over the columns of `gr`.
#[inline(always)]
fn mask_row<St: Stage>(
    masker: &[&Band<St::E>; 3],
    k: &[BandK; 3],
    i: usize,
    gr: Rect,
    s: &mut [i32],
    c: &mut [i32],
) {
    let n = gr.x1 - gr.x0;
    let (s, c) = (&mut s[..n], &mut c[..n]);
    let [m0, m1, m2] = masker.map(|m| &m.row(i)[gr.x0..gr.x1]);
    for j in 0..n {
        let c0 = St::csf_abs(&k[0], m0[j].get());
        let c1 = St::csf_abs(&k[1], m1[j].get());
        let c2 = St::csf_abs(&k[2], m2[j].get());
        s[j] = St::flt(c0)
            .wrapping_add(St::flt(c1))
            .wrapping_add(St::flt(c2));
        c[j] = St::centre(c0)
            .wrapping_add(St::centre(c1))
            .wrapping_add(St::centre(c2));
    }
}

/// Contrast masking of `target` by `masker` (both decoupled h, v, d bands): returns the three
/// per-band accumulators (before the final float conversion).
#[inline(always)]
pub(super) fn contrast_masking<St: Stage>(
    target: [&Band<St::E>; 3],
    masker: [&Band<St::E>; 3],
    g: &MaskGeom,
    k: &[BandK; 3],
    sc: &mut MaskScratch,
) -> [i64; 3] {
    let (w, h) = (g.w, g.h);
    let gr = g.grown;
    let gw = gr.x1 - gr.x0;
    let cm = g.cm;
    let n = cm.x1 - cm.x0;
    // Offsets of the cm columns inside the grown ones, and the padded neighbour row layout:
    // pad[q] is the vertical sum of column cm.x0 - 1 + q, mirrored (-1 -> 1, w -> w - 1).
    let off = cm.x0 - gr.x0;
    sc.held = [usize::MAX; 3];
    let mut acc = [0i64; 3];
    for i in cm.y0..cm.y1 {
        let up = if i == 0 { 1 } else { i - 1 };
        let dn = if i + 1 == h { h - 1 } else { i + 1 };
        for r in [up, i, dn] {
            let slot = r % 3;
            if sc.held[slot] != r {
                let (s, c) = (&mut sc.s[slot * w..], &mut sc.c[slot * w..]);
                mask_row::<St>(&masker, k, r, gr, s, c);
                sc.held[slot] = r;
            }
        }
        let s_up = &sc.s[(up % 3) * w..][..gw];
        let s_mid = &sc.s[(i % 3) * w..][..gw];
        let s_dn = &sc.s[(dn % 3) * w..][..gw];
        let c_mid = &sc.c[(i % 3) * w..][..gw];
        let vs = &mut sc.vsum[..gw];
        for (((v, &a), &b), &c) in vs.iter_mut().zip(s_up).zip(s_mid).zip(s_dn) {
            *v = a.wrapping_add(b).wrapping_add(c);
        }
        let pad = &mut sc.pad[..n + 2];
        let first = usize::from(cm.x0 == 0);
        let last = if cm.x1 == w { n + 1 } else { n + 2 };
        let base = cm.x0 - gr.x0; // vs index of column cm.x0
        pad[first..last].copy_from_slice(&vs[base + first - 1..base + last - 1]);
        if cm.x0 == 0 {
            pad[0] = vs[1 - gr.x0];
        }
        if cm.x1 == w {
            pad[n + 1] = vs[w - 1 - gr.x0];
        }
        let thr = &mut sc.thr[..n];
        let (s_c, c_c) = (&s_mid[off..off + n], &c_mid[off..off + n]);
        for j in 0..n {
            thr[j] = pad[j]
                .wrapping_add(pad[j + 1])
                .wrapping_add(pad[j + 2])
                .wrapping_sub(s_c[j])
                .wrapping_add(c_c[j]);
        }
        let simd_row = St::CENTRE_CAN_WRAP && i >= g.simd.y0 && i < g.simd.y1;
        if St::CENTRE_CAN_WRAP {
            // Pixels libvmaf handles with scalar code see the centre terms truncated to 16 bits.
            let (v0, v1) = if simd_row {
                (
                    g.simd.x0.clamp(cm.x0, cm.x1) - cm.x0,
                    g.simd.x1.clamp(cm.x0, cm.x1) - cm.x0,
                )
            } else {
                (n, n)
            };
            for j in (0..v0).chain(v1..n) {
                let x = cm.x0 + j;
                let mut wrapped = 0i32;
                for (m, kb) in masker.iter().zip(k) {
                    let a = St::csf_abs(kb, m.row(i)[x].get());
                    wrapped = wrapped.wrapping_add(St::centre_scalar(a));
                }
                thr[j] = thr[j].wrapping_sub(c_c[j]).wrapping_add(wrapped);
            }
        }
        let thr = &sc.thr[..n];
        for ((a, tb), kb) in acc.iter_mut().zip(target).zip(k) {
            let t_row = &tb.row(i)[cm.x0..cm.x1];
            let xs = t_row
                .iter()
                .zip(thr)
                .map(|(&t, &th)| St::masked(kb, t.get(), th));
            let mut inner = cube_row(kb, xs);
            if simd_row {
                // libvmaf's AVX-512 loop runs 16 lanes per 14 pixels; the 2 idle lanes still
                // add the cube of 0, which is non-zero when the cube rounding constant
                // exceeds 2^shift (the shift-0 case of `round_add`).
                let idle = 2 * ((g.simd.x1 - g.simd.x0) / 14) as i64;
                inner = inner.wrapping_add(idle.wrapping_mul(cube_exact(kb, 0)));
            }
            *a = a.wrapping_add(inner.wrapping_add(g.inner_add) >> g.inner_shift);
        }
    }
    acc
}

/// `(uint32_t)ceil(x)` for the small positive shift amounts libvmaf derives from `log2`.
#[inline]
pub(super) fn ceil_u32(x: f64) -> u32 {
    x.ceil() as i64 as u32
}

/// libvmaf's `(uint32_t)pow(2, shift - 1)` rounding constant. For `shift == 0` (scale-0 h/v
/// cubes of bands at most 16 wide, i.e. pictures at most 32 wide) the unsigned exponent wraps
/// to 2^32 - 1, pow gives infinity, and the AVX-512 build's conversion (`vcvttsd2usi`)
/// saturates it to 2^32 - 1, which the reference scores carry. (libvmaf's plain C build,
/// converting through `cvttsd2si`, gets 0 instead.)
#[inline]
pub(super) fn round_add(shift: u32) -> i64 {
    if shift == 0 {
        u32::MAX as i64
    } else {
        2f64.powf((shift - 1) as f64) as u32 as i64
    }
}

/// Rounding of the denominator's per-pixel cube and per-row sum at one scale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DenK {
    /// Scales 1..3: `(a * a + sq_add) >> sq_shift`, then `(sq * a + cub_add) >> cub_shift`
    /// (scale 0 cubes exactly and leaves these at 0).
    pub(crate) sq_add: u64,
    pub(crate) sq_shift: u32,
    pub(crate) cub_add: u64,
    pub(crate) cub_shift: u32,
    /// Each row's sum becomes `(row + row_add) >> row_shift` before rows are added.
    pub(crate) row_add: u64,
    pub(crate) row_shift: u32,
}

/// The denominator's rounding constants of `scale` over the score region `rect`.
pub(crate) fn den_k(scale: usize, rect: Rect) -> DenK {
    if scale == 0 {
        let area = ((rect.y1 - rect.y0) * (rect.x1 - rect.x0)) as i64;
        let shift = ((area as f64).log2() - 20.0).ceil() as i32;
        let shift = shift.max(0) as u32;
        DenK {
            row_add: if shift > 0 { 1 << (shift - 1) } else { 0 },
            row_shift: shift,
            ..DenK::default()
        }
    } else {
        let sq_shift = S123_DEN_SQ_SHIFT[scale - 1];
        let cub_shift = ceil_u32(((rect.x1 - rect.x0) as f64).log2());
        let row_shift = ceil_u32(((rect.y1 - rect.y0) as f64).log2());
        DenK {
            sq_add: 1u64 << sq_shift,
            sq_shift,
            cub_add: round_add(cub_shift) as u64,
            cub_shift,
            row_add: round_add(row_shift) as u64,
            row_shift,
        }
    }
}

/// Scale-0 denominator sums: over the region, |ref|^3 per band, rows shifted on the way.
#[inline(always)]
pub(super) fn den_scale0(bands: [&Band<i16>; 3], rect: Rect) -> [u64; 3] {
    let dk = den_k(0, rect);
    // A loop rather than `bands.map(closure)`: the closure would be compiled on its own,
    // without the caller's target features.
    let mut sums = [0u64; 3];
    for (sum, b) in sums.iter_mut().zip(bands) {
        let mut acc = 0u64;
        for i in rect.y0..rect.y1 {
            let mut inner = 0u64;
            for &v in &b.row(i)[rect.x0..rect.x1] {
                let a = (v as i32).unsigned_abs() as u64;
                inner = inner.wrapping_add(a * a * a);
            }
            acc = acc.wrapping_add(inner.wrapping_add(dk.row_add) >> dk.row_shift);
        }
        *sum = acc;
    }
    sums
}

/// Scale-0 denominator from its sums (libvmaf's float conversions).
pub(super) fn den_scale0_float(sums: [u64; 3], rect: Rect, rf: [f32; 3]) -> f32 {
    let area = ((rect.y1 - rect.y0) * (rect.x1 - rect.x0)) as i64;
    let shift = den_k(0, rect).row_shift;
    let scale = 2f64.powf((18 - shift as i32) as f64);
    let noise = ((area as f64 * super::consts::NOISE_WEIGHT) as f32).powf(1.0 / 3.0);
    let mut out = 0f32;
    for (acc, f) in sums.iter().zip(rf) {
        let csf = (*acc as f64 / scale) * (f as f64).powf(3.0);
        out += (csf as f32).powf(1.0 / 3.0) + noise;
    }
    out
}

/// Scales 1..3 denominator sums.
#[inline(always)]
pub(super) fn den_s123(scale: usize, bands: [&Band<i32>; 3], rect: Rect) -> [u64; 3] {
    let dk = den_k(scale, rect);
    let mut sums = [0u64; 3];
    for (sum, b) in sums.iter_mut().zip(bands) {
        let mut acc = 0u64;
        for i in rect.y0..rect.y1 {
            let mut inner = 0u64;
            for &v in &b.row(i)[rect.x0..rect.x1] {
                let a = v.unsigned_abs() as u64;
                let sq = a.wrapping_mul(a).wrapping_add(dk.sq_add) >> dk.sq_shift;
                inner =
                    inner.wrapping_add(sq.wrapping_mul(a).wrapping_add(dk.cub_add) >> dk.cub_shift);
            }
            acc = acc.wrapping_add(inner.wrapping_add(dk.row_add) >> dk.row_shift);
        }
        *sum = acc;
    }
    sums
}

/// Scales 1..3 denominator from its sums.
pub(super) fn den_s123_float(scale: usize, sums: [u64; 3], rect: Rect, rf: [f32; 3]) -> f32 {
    let dk = den_k(scale, rect);
    let exp = S123_DEN_EXP[scale - 1]
        .wrapping_sub(dk.row_shift)
        .wrapping_sub(dk.cub_shift);
    let scale_f = 2f64.powf(exp as f64);
    let area = ((rect.y1 - rect.y0) * (rect.x1 - rect.x0)) as f64;
    let noise = ((area * super::consts::NOISE_WEIGHT) as f32).powf(1.0 / 3.0);
    let mut out = 0f32;
    for (acc, f) in sums.iter().zip(rf) {
        let csf = (*acc as f64 / scale_f) * (f as f64).powf(3.0);
        out += (csf as f32).powf(1.0 / 3.0) + noise;
    }
    out
}
