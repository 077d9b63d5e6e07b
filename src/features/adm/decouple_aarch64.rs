//! aarch64 NEON kernel of the scale-0 decouple step (16-bit bands, integral gain limit),
//! bit-exact with `decouple_row`'s portable `GAIN_INT` loop.
//!
//! Eight pixels per step, in two `i32x4` halves: the same wrapping 32-bit integer arithmetic
//! as `restore_narrow_int`, the same int32 -> f32 -> f64 angle test in the same operation
//! order (separate `fmul`s, no fused multiply-add). NEON has no gather, so libvmaf's
//! reciprocal `floor(2^30 / |o|)` is read from its table (`consts::div_lookup`, whose entries
//! are exactly that quotient) lane by lane instead of being divided.

#[cfg(target_arch = "aarch64")]
use core::arch::aarch64::*;

use super::decouple::RecipTable;

/// The angle test (`same_direction`) of 4 lanes from the integer dot product and squared
/// magnitudes; all-ones lanes where it passes.
#[inline]
#[target_feature(enable = "neon")]
fn same_direction4(dot: int32x4_t, om: int32x4_t, tm: int32x4_t, cos: float64x2_t) -> uint32x4_t {
    // libvmaf's int64 -> float (one rounding, to nearest even, as `scvtf`), then double.
    let (dot, om, tm) = (vcvtq_f32_s32(dot), vcvtq_f32_s32(om), vcvtq_f32_s32(tm));
    // x / 4096 and x * 2^-12 are the same double for these (normal or zero) values.
    let s = vdupq_n_f64(1.0 / 4096.0);
    let pair = |hi: bool| {
        let wide = |v: float32x4_t| {
            let w = if hi {
                vcvt_high_f64_f32(v)
            } else {
                vcvt_f64_f32(vget_low_f32(v))
            };
            vmulq_f64(w, s)
        };
        let (d, om, tm) = (wide(dot), wide(om), wide(tm));
        let rhs = vmulq_f64(vmulq_f64(cos, om), tm);
        let nonneg = vcgeq_f64(d, vdupq_n_f64(0.0));
        let wide_enough = vcgeq_f64(vmulq_f64(d, d), rhs);
        vmovn_u64(vandq_u64(nonneg, wide_enough))
    };
    vcombine_u32(pair(false), pair(true))
}

/// `restore_narrow_int` of 4 lanes: `o`, `t` sign-extended 16-bit values, `flag` the angle
/// test's mask.
#[inline]
#[target_feature(enable = "neon")]
fn restore4(
    o: int32x4_t,
    t: int32x4_t,
    flag: uint32x4_t,
    gain: int32x4_t,
    recip: &RecipTable,
) -> int32x4_t {
    let zero = vdupq_n_s32(0);
    let round = vdupq_n_s32(16384);
    let k_max = vdupq_n_s32(32768);
    let o_zero = vceqq_s32(o, zero);
    let m = vbslq_s32(o_zero, vdupq_n_s32(1), vabsq_s32(o));
    // `o` is a sign-extended 16-bit value, so `m` is in 1..=32768, inside `recip`.
    let mut lanes = [0i32; 4];
    // SAFETY: 4 lanes into a 4-element array.
    unsafe { vst1q_s32(lanes.as_mut_ptr(), m) };
    let lanes = lanes.map(|m| recip[m as usize]);
    // SAFETY: 4 lanes from a 4-element array.
    let r = unsafe { vld1q_s32(lanes.as_ptr()) };
    let u = vbslq_s32(vcltq_s32(o, zero), vnegq_s32(t), t);
    let hi = vmulq_s32(vshrq_n_s32::<15>(r), u);
    let lo = vmulq_s32(vandq_s32(r, vdupq_n_s32(0x7fff)), u);
    let q = vaddq_s32(hi, vshrq_n_s32::<15>(vaddq_s32(lo, round)));
    let k = vminq_s32(vmaxq_s32(q, zero), k_max);
    let k = vbslq_s32(o_zero, k_max, k);
    let rst = vshrq_n_s32::<15>(vaddq_s32(vmulq_s32(k, o), round));
    let g = vmulq_s32(rst, gain);
    let lim = vbslq_s32(vcgtq_s32(o, zero), vminq_s32(g, t), vmaxq_s32(g, t));
    let take = vandq_u32(vandq_u32(flag, vcgtq_s32(k, zero)), vmvnq_u32(o_zero));
    vbslq_s32(take, lim, rst)
}

/// Decouples whole 8-column blocks of one row segment (all slices at least `n` long) and
/// returns how many columns it did (`n` rounded down to a multiple of 8); the caller does the
/// rest with the portable loop. `gain` is the integral gain limit (0..=65535).
#[target_feature(enable = "neon")]
pub(super) fn decouple_row_i16_neon(
    o: [&[i16]; 3],
    t: [&[i16]; 3],
    r: [&mut [i16]; 3],
    a: [&mut [i16]; 3],
    recip: &RecipTable,
    cos_1deg_sq: f64,
    gain: i32,
) -> usize {
    let n = o[0].len();
    assert!(o.iter().chain(&t).all(|s| s.len() >= n));
    assert!(r.iter().chain(&a).all(|s| s.len() >= n));
    let cos = vdupq_n_f64(cos_1deg_sq);
    let gain = vdupq_n_s32(gain);
    let done = n - n % 8;
    for j in (0..done).step_by(8) {
        // SAFETY: `j + 8 <= done <= n <= s.len()` (asserted above); unaligned load.
        let load = |s: &[i16]| unsafe { vld1q_s16(s.as_ptr().add(j)) };
        let (o16, t16) = (o.map(load), t.map(load));
        let widen = |v: int16x8_t, hi: bool| {
            if hi {
                vmovl_high_s16(v)
            } else {
                vmovl_s16(vget_low_s16(v))
            }
        };
        let mut halves = [[vdupq_n_s32(0); 2]; 3];
        for (h, hi) in [false, true].into_iter().enumerate() {
            let [oh, ov, od] = o16.map(|v| widen(v, hi));
            let [th, tv, td] = t16.map(|v| widen(v, hi));
            // The portable loop's i32 sums (wrapping the same way).
            let dot = vaddq_s32(vmulq_s32(oh, th), vmulq_s32(ov, tv));
            let om = vaddq_s32(vmulq_s32(oh, oh), vmulq_s32(ov, ov));
            let tm = vaddq_s32(vmulq_s32(th, th), vmulq_s32(tv, tv));
            let flag = same_direction4(dot, om, tm, cos);
            halves[0][h] = restore4(oh, th, flag, gain, recip);
            halves[1][h] = restore4(ov, tv, flag, gain, recip);
            halves[2][h] = restore4(od, td, flag, gain, recip);
        }
        for (b, v) in halves.into_iter().enumerate() {
            // C's truncating stores; `t - r` truncated is `t16 - r16` in 16-bit arithmetic.
            let r16 = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
            let a16 = vsubq_s16(t16[b], r16);
            // SAFETY: `j + 8 <= n <= len` of every output (asserted above).
            unsafe {
                vst1q_s16(r[b].as_mut_ptr().add(j), r16);
                vst1q_s16(a[b].as_mut_ptr().add(j), a16);
            }
        }
    }
    done
}
