//! x86 vector kernel of the scale-0 decouple step (16-bit bands, integral gain limit), bit-exact
//! with `decouple_row`'s portable `GAIN_INT` loop.
//!
//! The compiler vectorises that loop too, but with a vector division per band for libvmaf's
//! reciprocal `floor(2^30 / |o|)`. Here the reciprocal is gathered from libvmaf's own table
//! (`consts::div_lookup`, whose entries are exactly that quotient), 16 lanes at a time; the
//! rest is the same 32-bit integer arithmetic (wrapping like the portable code) and the same
//! f32 -> f64 angle test, in the same operation order (no fused multiply-adds).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::decouple::RecipTable;

/// The angle test (`same_direction`) of 8 lanes whose dot product and squared magnitudes are
/// already rounded to f32 (as libvmaf's int64 -> float).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
fn same_direction8(dot: __m256, om: __m256, tm: __m256, cos: __m512d) -> __mmask8 {
    // x / 4096 and x * 2^-12 are the same double for these (normal or zero) values.
    let s = _mm512_set1_pd(1.0 / 4096.0);
    let d = _mm512_mul_pd(_mm512_cvtps_pd(dot), s);
    let om = _mm512_mul_pd(_mm512_cvtps_pd(om), s);
    let tm = _mm512_mul_pd(_mm512_cvtps_pd(tm), s);
    let rhs = _mm512_mul_pd(_mm512_mul_pd(cos, om), tm);
    let nonneg = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(d, _mm512_setzero_pd());
    let wide = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(_mm512_mul_pd(d, d), rhs);
    nonneg & wide
}

/// `restore_narrow_int` of 16 lanes: `o`, `t` sign-extended 16-bit values.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
fn restore16(
    o: __m512i,
    t: __m512i,
    flag: __mmask16,
    gain: __m512i,
    recip: &RecipTable,
) -> __m512i {
    let zero = _mm512_setzero_si512();
    let round = _mm512_set1_epi32(16384);
    let k_max = _mm512_set1_epi32(32768);
    let o_zero = _mm512_cmpeq_epi32_mask(o, zero);
    let m = _mm512_mask_mov_epi32(_mm512_abs_epi32(o), o_zero, _mm512_set1_epi32(1));
    // SAFETY: `o` holds sign-extended 16-bit values, so `m` is in 1..=32768, inside `recip`
    // (32769 entries); the target features are those of this function.
    let r = unsafe { _mm512_i32gather_epi32::<4>(m, recip.as_ptr()) };
    let o_neg = _mm512_cmplt_epi32_mask(o, zero);
    let u = _mm512_mask_sub_epi32(t, o_neg, zero, t);
    let hi = _mm512_mullo_epi32(_mm512_srai_epi32::<15>(r), u);
    let lo = _mm512_mullo_epi32(_mm512_and_si512(r, _mm512_set1_epi32(0x7fff)), u);
    let q = _mm512_add_epi32(hi, _mm512_srai_epi32::<15>(_mm512_add_epi32(lo, round)));
    let k = _mm512_min_epi32(_mm512_max_epi32(q, zero), k_max);
    let k = _mm512_mask_mov_epi32(k, o_zero, k_max);
    let rst = _mm512_srai_epi32::<15>(_mm512_add_epi32(_mm512_mullo_epi32(k, o), round));
    let g = _mm512_mullo_epi32(rst, gain);
    let o_pos = _mm512_cmpgt_epi32_mask(o, zero);
    let lim = _mm512_mask_min_epi32(_mm512_max_epi32(g, t), o_pos, g, t);
    let take = flag & _mm512_cmpgt_epi32_mask(k, zero) & !o_zero;
    _mm512_mask_mov_epi32(rst, take, lim)
}

/// Decouples whole 16-column blocks of one row segment (all slices at least `n` long) and
/// returns how many columns it did (`n` rounded down to a multiple of 16); the caller does the
/// rest with the portable loop. `gain` is the integral gain limit (0..=65535).
///
/// # Safety
/// The CPU must support AVX-512 F/BW/DQ/VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
pub(super) fn decouple_row_i16_avx512(
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
    let cos = _mm512_set1_pd(cos_1deg_sq);
    let gain = _mm512_set1_epi32(gain);
    let [rh, rv, rd] = r;
    let [ah, av, ad] = a;
    let mut outs = [rh, rv, rd, ah, av, ad];
    let done = n - n % 16;
    let mut j = 0;
    while j < done {
        let load = |s: &[i16]| {
            // SAFETY: `j + 16 <= done <= n <= s.len()` (asserted above); unaligned load.
            let v = unsafe { _mm256_loadu_si256(s.as_ptr().add(j).cast()) };
            (v, _mm512_cvtepi16_epi32(v))
        };
        let ((_, oh), (_, ov), (_, od)) = (load(o[0]), load(o[1]), load(o[2]));
        let ((th16, th), (tv16, tv), (td16, td)) = (load(t[0]), load(t[1]), load(t[2]));
        // The portable loop's i32 sums (wrapping the same way), rounded once to f32.
        let dot = _mm512_add_epi32(_mm512_mullo_epi32(oh, th), _mm512_mullo_epi32(ov, tv));
        let om = _mm512_add_epi32(_mm512_mullo_epi32(oh, oh), _mm512_mullo_epi32(ov, ov));
        let tm = _mm512_add_epi32(_mm512_mullo_epi32(th, th), _mm512_mullo_epi32(tv, tv));
        let (dot, om, tm) = (
            _mm512_cvtepi32_ps(dot),
            _mm512_cvtepi32_ps(om),
            _mm512_cvtepi32_ps(tm),
        );
        let half = |v: __m512, hi: bool| {
            if hi {
                _mm512_extractf32x8_ps::<1>(v)
            } else {
                _mm512_castps512_ps256(v)
            }
        };
        let f_lo = same_direction8(half(dot, false), half(om, false), half(tm, false), cos);
        let f_hi = same_direction8(half(dot, true), half(om, true), half(tm, true), cos);
        let flag = (f_lo as u16) | ((f_hi as u16) << 8);
        let res = [
            (restore16(oh, th, flag, gain, recip), th16),
            (restore16(ov, tv, flag, gain, recip), tv16),
            (restore16(od, td, flag, gain, recip), td16),
        ];
        for (b, (v, t16)) in res.into_iter().enumerate() {
            // C's truncating stores; `t - r` truncated is `t16 - r16` in 16-bit arithmetic.
            let r16 = _mm512_cvtepi32_epi16(v);
            let a16 = _mm256_sub_epi16(t16, r16);
            let [ro, ao] = [b, b + 3].map(|i| outs[i].as_mut_ptr());
            // SAFETY: `j + 16 <= n <= len` of every output (asserted above).
            unsafe {
                _mm256_storeu_si256(ro.add(j).cast(), r16);
                _mm256_storeu_si256(ao.add(j).cast(), a16);
            }
        }
        j += 16;
    }
    done
}
