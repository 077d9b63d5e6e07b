//! aarch64 NEON kernels of VIF's separable filters and of the per-pixel statistic, bit-exact
//! with the portable loops of `vif.rs`.
//!
//! NEON multiplies unsigned 16-bit samples by an unsigned 16-bit tap and accumulates into
//! `u32` lanes in one instruction (`umlal`), so unlike the x86 kernels these need no sample
//! bias, take every filter (scale 3's tap 43728 included) and keep the natural column order.
//! Every sum is the portable loop's wrapping `u32` sum, only grouped differently (one tap at a
//! time instead of symmetric pairs), which modulo `2^32` is the same integer. The statistic
//! does libvmaf's `f64` operations one by one (`fmul`, `fadd`, `fdiv`, `frintm`; never a fused
//! multiply-add) on two pixels per register, and looks the logarithms up lane by lane.
//!
//! The kernels are safe functions that check their slice lengths; they are compiled with NEON
//! enabled, which every aarch64 CPU has (callers still say so in an `unsafe` block). Inside,
//! the only `unsafe` is the raw-pointer loads and stores, each within an asserted length.

#[cfg(target_arch = "aarch64")]
use core::arch::aarch64::*;

use super::vif::{log2_step_lookup, StatParams, StatSums, VerticalOut, WideShifts};

/// Columns per kernel step.
const LANES: usize = 8;

/// `u16x8` from `s[at..at + 8]`.
#[inline]
#[target_feature(enable = "neon")]
fn load_u16(s: &[u16], at: usize) -> uint16x8_t {
    assert!(at + LANES <= s.len());
    // SAFETY: 8 samples from `at`, inside `s` (asserted above); unaligned loads are allowed.
    unsafe { vld1q_u16(s.as_ptr().add(at)) }
}

/// `u8x8` from `s[at..at + 8]`.
#[inline]
#[target_feature(enable = "neon")]
fn load_u8(s: &[u8], at: usize) -> uint8x8_t {
    assert!(at + LANES <= s.len());
    // SAFETY: 8 bytes from `at`, inside `s` (asserted above).
    unsafe { vld1_u8(s.as_ptr().add(at)) }
}

/// `u32x4` from `s[at..at + 4]`.
#[inline]
#[target_feature(enable = "neon")]
fn load_u32(s: &[u32], at: usize) -> uint32x4_t {
    assert!(at + 4 <= s.len());
    // SAFETY: 4 values from `at`, inside `s` (asserted above).
    unsafe { vld1q_u32(s.as_ptr().add(at)) }
}

/// Stores `v` to `d[at..at + 8]`.
#[inline]
#[target_feature(enable = "neon")]
fn store_u16(d: &mut [u16], at: usize, v: uint16x8_t) {
    assert!(at + LANES <= d.len());
    // SAFETY: 8 values from `at`, inside `d` (asserted above).
    unsafe { vst1q_u16(d.as_mut_ptr().add(at), v) }
}

/// Stores `lo`, `hi` to `d[at..at + 8]`.
#[inline]
#[target_feature(enable = "neon")]
fn store_u32x8(d: &mut [u32], at: usize, lo: uint32x4_t, hi: uint32x4_t) {
    assert!(at + LANES <= d.len());
    // SAFETY: 8 values from `at`, inside `d` (asserted above).
    unsafe {
        vst1q_u32(d.as_mut_ptr().add(at), lo);
        vst1q_u32(d.as_mut_ptr().add(at + 4), hi);
    }
}

/// `acc + c * x` for 8 lanes (two `u32x4` halves), wrapping.
#[inline]
#[target_feature(enable = "neon")]
fn mac8(acc: [uint32x4_t; 2], x: uint16x8_t, c: u16) -> [uint32x4_t; 2] {
    [
        vmlal_n_u16(acc[0], vget_low_u16(x), c),
        vmlal_high_n_u16(acc[1], x, c),
    ]
}

/// Both halves of `v` shifted right by `sh` (0..=31), logical.
#[inline]
#[target_feature(enable = "neon")]
fn shr(v: uint32x4_t, sh: u32) -> uint32x4_t {
    vshlq_u32(v, vdupq_n_s32(-(sh as i32)))
}

/// `out[j] = sum_k filt[k] * src[j + k]` (wrapping `u32`) for `j < n`, `n` a multiple of 8,
/// in column order. With `lo`, the output is instead `sum(hi) + ((sum(lo) + 32768) >> 16)`
/// with `src` the high halves (`filter_row_split`).
///
/// Panics unless `src` and `lo` (if any) hold at least `n + N - 1` samples and `out` at
/// least `n`.
#[target_feature(enable = "neon")]
pub(super) fn hfilter_neon<const N: usize>(
    src: &[u16],
    lo: Option<&[u16]>,
    filt: &[u16; N],
    out: &mut [u32],
    n: usize,
) {
    assert!(n.is_multiple_of(LANES) && out.len() >= n);
    assert!(src.len() + 1 >= n + N && lo.is_none_or(|l| l.len() + 1 >= n + N));
    let filter = |s: &[u16], j0: usize| {
        let mut acc = [vdupq_n_u32(0); 2];
        for (k, &c) in filt.iter().enumerate() {
            acc = mac8(acc, load_u16(s, j0 + k), c);
        }
        acc
    };
    let round = vdupq_n_u32(32768);
    for j0 in (0..n).step_by(LANES) {
        let mut acc = filter(src, j0);
        if let Some(lo) = lo {
            let l = filter(lo, j0);
            for h in 0..2 {
                acc[h] = vaddq_u32(acc[h], vshrq_n_u32::<16>(vaddq_u32(l[h], round)));
            }
        }
        store_u32x8(out, j0, acc[0], acc[1]);
    }
}

/// Stores 8 second moments (`u32` halves `v`) split into their low and high 16 bits.
#[inline]
#[target_feature(enable = "neon")]
fn store_split(lo: &mut [u16], hi: &mut [u16], at: usize, v: [uint32x4_t; 2]) {
    store_u16(lo, at, vcombine_u16(vmovn_u32(v[0]), vmovn_u32(v[1])));
    store_u16(
        hi,
        at,
        vcombine_u16(vshrn_n_u32::<16>(v[0]), vshrn_n_u32::<16>(v[1])),
    );
}

/// The 17-tap vertical pass of 8-bit scale 0 (`vertical_moments_8`) over columns `0..n`, `n`
/// a multiple of 8. `rows[k]`/`drows[k]`: reference/distorted row of tap `k`. Squares and
/// products of 8-bit samples fit `u16` (`umull` of bytes), so every moment is one `umlal` per
/// tap; every sum fits `u32` (at most `65536 * 255²`).
///
/// Panics unless every row holds at least `n` samples and every output at least `n`.
#[target_feature(enable = "neon")]
pub(super) fn vertical_8_neon(
    rows: &[&[u8]; 17],
    drows: &[&[u8]; 17],
    filt: &[u16; 17],
    out: VerticalOut<'_>,
    n: usize,
) {
    assert!(n.is_multiple_of(LANES) && rows.iter().chain(drows).all(|r| r.len() >= n));
    let VerticalOut { mu1, mu2, sq } = out;
    let [(xl, xh), (yl, yh), (zl, zh)] = sq;
    let rnd = vdupq_n_u32(128);
    for j0 in (0..n).step_by(LANES) {
        // mu1, mu2, xx, yy, xy
        let mut acc = [[vdupq_n_u32(0); 2]; 5];
        for k in 0..17 {
            let (x, y) = (load_u8(rows[k], j0), load_u8(drows[k], j0));
            let terms = [
                vmovl_u8(x),
                vmovl_u8(y),
                vmull_u8(x, x),
                vmull_u8(y, y),
                vmull_u8(x, y),
            ];
            for (a, t) in acc.iter_mut().zip(terms) {
                *a = mac8(*a, t, filt[k]);
            }
        }
        for (dst, a) in [(&mut *mu1, acc[0]), (&mut *mu2, acc[1])] {
            // `(v + 128) >> 8` of a sum below 2^24: fits u16.
            let mu = a.map(|v| vshrn_n_u32::<8>(vaddq_u32(v, rnd)));
            store_u16(dst, j0, vcombine_u16(mu[0], mu[1]));
        }
        for ((lo, hi), a) in [
            (&mut *xl, &mut *xh),
            (&mut *yl, &mut *yh),
            (&mut *zl, &mut *zh),
        ]
        .into_iter()
        .zip(&acc[2..])
        {
            store_split(lo, hi, j0, *a);
        }
    }
}

/// The general vertical pass (`vertical_moments_wide`) over columns `0..n` of 16-bit rows,
/// `n` a multiple of 8: `mu` summed in `u32` and shifted with rounding; each second moment
/// from the 16-bit halves of the `u32` squares (`umull`, then `uzp1`/`uzp2` to separate the
/// halves), each half summed in `u32` and recombined as the portable loop does.
///
/// Panics unless `1 <= sq, mu <= 16`, every row holds at least `n` samples and every output
/// at least `n`.
#[target_feature(enable = "neon")]
pub(super) fn vertical_wide_neon<const N: usize>(
    rows: &[&[u16]; N],
    drows: &[&[u16]; N],
    filt: &[u16; N],
    shifts: WideShifts,
    out: VerticalOut<'_>,
    n: usize,
) {
    assert!(n.is_multiple_of(LANES) && rows.iter().chain(drows).all(|r| r.len() >= n));
    assert!((1..=16).contains(&shifts.sq) && (1..=16).contains(&shifts.mu));
    let VerticalOut { mu1, mu2, sq } = out;
    let [(xl, xh), (yl, yh), (zl, zh)] = sq;
    let rnd_mu = vdupq_n_u32(1 << (shifts.mu - 1));
    let rnd_sq = vdupq_n_u32(1 << (shifts.sq - 1));
    // (low 16 bits, high 16 bits) of the eight u32 products of `a` and `b`.
    let halves = |a: uint16x8_t, b: uint16x8_t| {
        let p0 = vreinterpretq_u16_u32(vmull_u16(vget_low_u16(a), vget_low_u16(b)));
        let p1 = vreinterpretq_u16_u32(vmull_high_u16(a, b));
        (vuzp1q_u16(p0, p1), vuzp2q_u16(p0, p1))
    };
    for j0 in (0..n).step_by(LANES) {
        // mu1, mu2, xx lo, xx hi, yy lo, yy hi, xy lo, xy hi
        let mut acc = [[vdupq_n_u32(0); 2]; 8];
        for k in 0..N {
            let (x, y) = (load_u16(rows[k], j0), load_u16(drows[k], j0));
            let (xxl, xxh) = halves(x, x);
            let (yyl, yyh) = halves(y, y);
            let (xyl, xyh) = halves(x, y);
            let terms = [x, y, xxl, xxh, yyl, yyh, xyl, xyh];
            for (a, t) in acc.iter_mut().zip(terms) {
                *a = mac8(*a, t, filt[k]);
            }
        }
        for (dst, a) in [(&mut *mu1, acc[0]), (&mut *mu2, acc[1])] {
            // The portable loop's `u16` cut of the wrapping `(v + round) >> sh`.
            let mu = a.map(|v| vmovn_u32(shr(vaddq_u32(v, rnd_mu), shifts.mu)));
            store_u16(dst, j0, vcombine_u16(mu[0], mu[1]));
        }
        // (65536 h + l + round) >> sh = (h << (16 - sh)) + ((l + round) >> sh), as u32.
        let moment = |l: uint32x4_t, h: uint32x4_t| {
            let up = vshlq_u32(h, vdupq_n_s32(16 - shifts.sq as i32));
            vaddq_u32(up, shr(vaddq_u32(l, rnd_sq), shifts.sq))
        };
        for (q, (lo, hi)) in [
            (&mut *xl, &mut *xh),
            (&mut *yl, &mut *yh),
            (&mut *zl, &mut *zh),
        ]
        .into_iter()
        .enumerate()
        {
            let (l, h) = (acc[2 + 2 * q], acc[3 + 2 * q]);
            store_split(lo, hi, j0, [moment(l[0], h[0]), moment(l[1], h[1])]);
        }
    }
}

/// The filtered moments of `n` pixels (`n` a multiple of 4) turned into `sigma` values and
/// libvmaf's statistic, exactly as `horizontal_stats` + `block_stats` compute them: `mu²`
/// from 64-bit products, the gain in `f64` operation by operation, `floor` by `frintm`,
/// logarithms from the exponent bits and the step table (looked up lane by lane).
///
/// Panics unless every slice of `f` holds at least `n` values.
#[target_feature(enable = "neon")]
pub(super) fn stats_neon(f: [&[u32]; 5], n: usize, p: &StatParams) -> StatSums {
    assert!(n.is_multiple_of(4) && f.iter().all(|s| s.len() >= n));
    let [mu1, mu2, xx, yy, xy] = f;
    let half = vdupq_n_u64(1 << 31);
    let eps = vdupq_n_f64(p.eps);
    let nsq = vdupq_n_f64(f64::from(p.nsq));
    let gain = vdupq_n_f64(p.gain_limit);
    let zero_pd = vdupq_n_f64(0.0);
    let bias = vdupq_n_s64(1023 + 32);
    // `(a * b + 2^31) >> 32` of four u32 pairs (libvmaf's `mu1_sq` etc.).
    let sq = |a: uint32x4_t, b: uint32x4_t| {
        let l = vaddq_u64(vmull_u32(vget_low_u32(a), vget_low_u32(b)), half);
        let h = vaddq_u64(vmull_high_u32(a, b), half);
        vcombine_u32(vshrn_n_u64::<32>(l), vshrn_n_u64::<32>(h))
    };
    // The table index of d = 2^e * 1.m (`block_stats`); masked-off lanes give entry 0.
    let index = |bits: uint64x2_t, mask: uint64x2_t| {
        let i = vorrq_u64(vshrq_n_u64::<37>(bits), vdupq_n_u64(0x8000));
        vandq_u64(vandq_u64(i, vdupq_n_u64(0xffff)), mask)
    };
    let look = |idx: uint64x2_t| {
        let one = |i: u64| {
            let i = (i & 0xffff) as usize;
            i64::from(log2_step_lookup(p.steps[i >> 4], (i & 15) as u32))
        };
        one(vgetq_lane_u64::<0>(idx)) + one(vgetq_lane_u64::<1>(idx))
    };
    let exponent = |bits: uint64x2_t| vreinterpretq_s64_u64(vshrq_n_u64::<52>(bits));
    let mut acc = [vdupq_n_s64(0); 4];
    // The table parts of num_log and den_log.
    let (mut num_table, mut den_table) = (0i64, 0i64);
    for j in (0..n).step_by(4) {
        let (m1, m2) = (load_u32(mu1, j), load_u32(mu2, j));
        let s1 = vreinterpretq_s32_u32(vsubq_u32(load_u32(xx, j), sq(m1, m1)));
        let s2 = vreinterpretq_s32_u32(vsubq_u32(load_u32(yy, j), sq(m2, m2)));
        let s2 = vmaxq_s32(s2, vdupq_n_s32(0));
        let s12 = vreinterpretq_s32_u32(vsubq_u32(load_u32(xy, j), sq(m1, m2)));
        let is_log = vcgeq_s32(s1, vdupq_n_s32(p.nsq));
        let is_num = vandq_u32(
            is_log,
            vandq_u32(
                vcgtq_s32(s12, vdupq_n_s32(0)),
                vcgtq_s32(s2, vdupq_n_s32(0)),
            ),
        );
        // Two pixels per f64 register: lanes 0..2, then 2..4 (exact conversions).
        let pair_f64 = |v: int32x4_t, hi: bool| vcvtq_f64_s64(widen_pair(v, hi));
        let pair_mask = |m: uint32x4_t, hi: bool| {
            vreinterpretq_u64_s64(widen_pair(vreinterpretq_s32_u32(m), hi))
        };
        for hi in [false, true] {
            let (a, b, c) = (pair_f64(s1, hi), pair_f64(s2, hi), pair_f64(s12, hi));
            let (log_mask, num_mask) = (pair_mask(is_log, hi), pair_mask(is_num, hi));
            let g = vdivq_f64(c, vaddq_f64(a, eps));
            let t = vrndmq_f64(vsubq_f64(b, vmulq_f64(g, c)));
            let sv = vmaxq_f64(t, zero_pd);
            let gl = vminq_f64(g, gain);
            let n1 = vaddq_f64(sv, nsq);
            let n2 = vaddq_f64(vrndmq_f64(vmulq_f64(vmulq_f64(gl, gl), a)), n1);
            let d = vaddq_f64(a, nsq);
            let (bd, b1, b2) = (
                vreinterpretq_u64_f64(d),
                vreinterpretq_u64_f64(n1),
                vreinterpretq_u64_f64(n2),
            );
            let exp_den = vshlq_n_s64::<11>(vsubq_s64(exponent(bd), bias));
            let exp_num = vshlq_n_s64::<11>(vsubq_s64(exponent(b2), exponent(b1)));
            let (lm, nm) = (
                vreinterpretq_s64_u64(log_mask),
                vreinterpretq_s64_u64(num_mask),
            );
            acc[0] = vaddq_s64(acc[0], vandq_s64(exp_num, nm));
            acc[1] = vaddq_s64(acc[1], vandq_s64(exp_den, lm));
            acc[2] = vaddq_s64(acc[2], vbicq_s64(widen_pair(s2, hi), lm));
            acc[3] = vaddq_s64(acc[3], vbicq_s64(vdupq_n_s64(1), lm));
            den_table += look(index(bd, log_mask));
            num_table += look(index(b2, num_mask)) - look(index(b1, num_mask));
        }
    }
    let [num, den, non_log, count] = acc.map(|v| vaddvq_s64(v));
    [num + num_table, den + den_table, non_log, count]
}

/// Lanes 0..2 (or 2..4 with `hi`) of `v` widened to `i64`.
#[inline]
#[target_feature(enable = "neon")]
fn widen_pair(v: int32x4_t, hi: bool) -> int64x2_t {
    if hi {
        vmovl_high_s32(v)
    } else {
        vmovl_s32(vget_low_s32(v))
    }
}
