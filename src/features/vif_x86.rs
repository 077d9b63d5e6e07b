//! x86 vector kernels of VIF's separable filters (AVX2 and AVX-512), bit-exact with the
//! portable loops of `vif.rs`.
//!
//! Both filters multiply 16-bit samples by 16-bit taps with `pmaddwd`, which multiplies
//! *signed* pairs and adds them. Samples of up to 16 bits are biased into `i16` (`x - 32768`,
//! an xor of the top bit); every filter's taps sum to 65536, so the biased sum is the true sum
//! minus `2^31`, modulo `2^32`, and adding `2^31` back gives libvmaf's wrapping `u32` sum. The
//! kernels only take filters whose taps are all below `2^15` (scales 0..2; scale 3's centre
//! tap is 43728 and stays on the portable code).
//!
//! Horizontal outputs come in a fixed permutation per block (`pmaddwd` pairs neighbouring
//! samples, so one register holds the even outputs and another the odd ones): the statistic
//! that consumes them only sums over pixels, so the order is irrelevant, as long as every
//! quantity of a pixel uses the same one (they all go through the same kernel).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use std::sync::OnceLock;

use super::vif::{log2_table, StatParams, StatSums, VerticalOut, WideShifts};

/// The largest tap the `pmaddwd` kernels accept.
pub(super) const MAX_TAP: u16 = i16::MAX as u16;

/// Whether a filter suits the kernels (odd length, every tap below `2^15`).
pub(super) fn taps_fit<const N: usize>(filt: &[u16; N]) -> bool {
    N % 2 == 1 && N <= 17 && filt.iter().all(|&c| c <= MAX_TAP)
}

/// Tap pairs `(lo, hi)` packed as `lo | hi << 16` for `pmaddwd`: even outputs take
/// `(f[2i], f[2i + 1])`, odd outputs `(f[2i - 1], f[2i])` (missing taps 0), both applied to
/// the samples at `2i, 2i + 1` from the block start.
fn tap_pairs<const N: usize>(filt: &[u16; N]) -> ([i32; 9], [i32; 9]) {
    let at = |k: isize| -> u32 {
        if k < 0 || k as usize >= N {
            0
        } else {
            u32::from(filt[k as usize])
        }
    };
    let mut even = [0i32; 9];
    let mut odd = [0i32; 9];
    for i in 0..N.div_ceil(2) {
        let k = 2 * i as isize;
        even[i] = (at(k) | at(k + 1) << 16) as i32;
        odd[i] = (at(k - 1) | at(k) << 16) as i32;
    }
    (even, odd)
}

/// `out[j] = sum_k filt[k] * src[j + k]` (wrapping `u32`) for `j < n`, `n` a multiple of 16,
/// each block of 16 outputs stored as its 8 even outputs, then its 8 odd ones. With `lo`, the
/// output is instead `sum(hi) + ((sum(lo) + 32768) >> 16)` with `src` the high halves (see
/// `filter_row_split`).
///
/// # Safety
/// The CPU must support AVX2; `taps_fit(filt)`; `src` and `lo` (if any) hold at least
/// `n + N - 1` samples and `out` at least `n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn hfilter_avx2<const N: usize>(
    src: &[u16],
    lo: Option<&[u16]>,
    filt: &[u16; N],
    out: &mut [u32],
    n: usize,
) {
    debug_assert!(taps_fit(filt) && n.is_multiple_of(16) && out.len() >= n);
    debug_assert!(src.len() + 1 >= n + N && lo.is_none_or(|l| l.len() + 1 >= n + N));
    let (even, odd) = tap_pairs(filt);
    let pairs = N.div_ceil(2);
    let bias = _mm256_set1_epi16(i16::MIN);
    let unbias = _mm256_set1_epi32(i32::MIN);
    let round = _mm256_set1_epi32(32768);
    // One biased row filtered into (even, odd) outputs of the block at `j0`.
    let filter = |p: *const u16, j0: usize| {
        let mut e = unbias;
        let mut o = unbias;
        for i in 0..pairs {
            // SAFETY: reads samples j0 + 2i ..= j0 + 2i + 15 <= j0 + N + 14 < n + N - 1.
            let x = unsafe { _mm256_loadu_si256(p.add(j0 + 2 * i).cast()) };
            let x = _mm256_xor_si256(x, bias);
            e = _mm256_add_epi32(e, _mm256_madd_epi16(x, _mm256_set1_epi32(even[i])));
            o = _mm256_add_epi32(o, _mm256_madd_epi16(x, _mm256_set1_epi32(odd[i])));
        }
        (e, o)
    };
    let dst = out.as_mut_ptr();
    for j0 in (0..n).step_by(16) {
        let (mut e, mut o) = filter(src.as_ptr(), j0);
        if let Some(lo) = lo {
            let (le, lodd) = filter(lo.as_ptr(), j0);
            e = _mm256_add_epi32(e, _mm256_srli_epi32(_mm256_add_epi32(le, round), 16));
            o = _mm256_add_epi32(o, _mm256_srli_epi32(_mm256_add_epi32(lodd, round), 16));
        }
        // SAFETY: j0 + 16 <= n <= out.len().
        unsafe {
            _mm256_storeu_si256(dst.add(j0).cast(), e);
            _mm256_storeu_si256(dst.add(j0 + 8).cast(), o);
        }
    }
}

/// The 17-tap vertical pass of 8-bit scale 0 (`vertical_moments_8`) over columns `0..n`, `n`
/// a multiple of 16, natural column order. `rows[k]`/`drows[k]`: reference/distorted row of
/// tap `k`. Symmetric taps are paired in one `pmaddwd` (`c * (top + bottom)`); squares and
/// products of 8-bit samples fit `u16` and are biased as in the module docs.
///
/// # Safety
/// The CPU must support AVX2; every row holds at least `n` samples, every output at least `n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn vertical_8_avx2(
    rows: &[&[u8]; 17],
    drows: &[&[u8]; 17],
    filt: &[u16; 17],
    out: VerticalOut<'_>,
    n: usize,
) {
    debug_assert!(n.is_multiple_of(16) && rows.iter().chain(drows).all(|r| r.len() >= n));
    let bias = _mm256_set1_epi16(i16::MIN);
    let unbias = _mm256_set1_epi32(i32::MIN);
    let VerticalOut { mu1, mu2, sq } = out;
    let [(xl, xh), (yl, yh), (zl, zh)] = sq;
    debug_assert!([&*mu1, &*mu2, &*xl, &*xh, &*yl, &*yh, &*zl, &*zh]
        .iter()
        .all(|o| o.len() >= n));
    for j0 in (0..n).step_by(16) {
        // Accumulators, [low 4 + high 4 pixels of each 128-bit half] as `unpack` leaves them.
        let mut acc = [[_mm256_setzero_si256(); 2]; 2];
        let mut sq_acc = [[unbias; 2]; 3];
        for (k, &c) in filt.iter().enumerate().take(9) {
            let (t, b) = (k, 16 - k);
            let c = u32::from(c);
            // The centre row is paired with itself and a zero tap.
            let coef = _mm256_set1_epi32(if t == b { c } else { c | c << 16 } as i32);
            // SAFETY: 16 samples from j0 < n - 15 of rows at least n long.
            let load = |r: &[u8]| unsafe {
                _mm256_cvtepu8_epi16(_mm_loadu_si128(r.as_ptr().add(j0).cast()))
            };
            let (xt, xb, yt, yb) = (load(rows[t]), load(rows[b]), load(drows[t]), load(drows[b]));
            let px = [_mm256_unpacklo_epi16(xt, xb), _mm256_unpackhi_epi16(xt, xb)];
            let py = [_mm256_unpacklo_epi16(yt, yb), _mm256_unpackhi_epi16(yt, yb)];
            for h in 0..2 {
                let (x, y) = (px[h], py[h]);
                acc[0][h] = _mm256_add_epi32(acc[0][h], _mm256_madd_epi16(x, coef));
                acc[1][h] = _mm256_add_epi32(acc[1][h], _mm256_madd_epi16(y, coef));
                let prods = [
                    _mm256_mullo_epi16(x, x),
                    _mm256_mullo_epi16(y, y),
                    _mm256_mullo_epi16(x, y),
                ];
                for (a, p) in sq_acc.iter_mut().zip(prods) {
                    let p = _mm256_xor_si256(p, bias);
                    a[h] = _mm256_add_epi32(a[h], _mm256_madd_epi16(p, coef));
                }
            }
        }
        // `packus` of the (low, high) unpack halves restores the column order.
        let store = |dst: &mut [u16], lo: __m256i, hi: __m256i| {
            let v = _mm256_packus_epi32(lo, hi);
            // SAFETY: j0 + 16 <= n <= dst.len().
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().add(j0).cast(), v) };
        };
        let rnd = _mm256_set1_epi32(128);
        let mu = |a: __m256i| _mm256_srli_epi32(_mm256_add_epi32(a, rnd), 8);
        store(mu1, mu(acc[0][0]), mu(acc[0][1]));
        store(mu2, mu(acc[1][0]), mu(acc[1][1]));
        let low = _mm256_set1_epi32(0xffff);
        for ((lo, hi), a) in [
            (&mut *xl, &mut *xh),
            (&mut *yl, &mut *yh),
            (&mut *zl, &mut *zh),
        ]
        .into_iter()
        .zip(sq_acc)
        {
            // (the accumulators started at 2^31, which undid the bias)
            let v = a;
            store(lo, _mm256_and_si256(v[0], low), _mm256_and_si256(v[1], low));
            store(hi, _mm256_srli_epi32(v[0], 16), _mm256_srli_epi32(v[1], 16));
        }
    }
}

/// Whether term `q` of the general vertical pass (`[mu1, mu2, xx lo, xx hi, yy lo, yy hi,
/// xy lo, xy hi]`) is biased into `i16` before `pmaddwd`. With `NARROW` (every sample below
/// `2^15`: scale 0 at up to 15 bits) the samples and the high halves of their products
/// (below `2^14`) are already non-negative `i16`, and only the low halves need the bias.
#[inline(always)]
const fn biased<const NARROW: bool>(q: usize) -> bool {
    !NARROW || matches!(q, 2 | 4 | 6)
}

/// The general vertical pass (`vertical_moments_wide`) over columns `0..n` of 16-bit rows,
/// `n` a multiple of 16, natural column order: `mu` from biased sample pairs, second moments
/// from the biased 16-bit halves of the squares (`pmullw` / `pmulhuw`), each summed with
/// `pmaddwd` and shifted like the portable loop. With `NARROW`, only the terms that need it
/// are biased ([`biased`]), which is right if every sample is below `2^15`: returns whether
/// they all were (always true without `NARROW`); if not, the outputs are wrong and the caller
/// runs the pass again without `NARROW`.
///
/// # Safety
/// The CPU must support AVX2; `taps_fit(filt)`; `1 <= sq <= 16`, `1 <= mu <= 16`; every row
/// holds at least `n` samples, every output at least `n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn vertical_wide_avx2<const N: usize, const NARROW: bool>(
    rows: &[&[u16]; N],
    drows: &[&[u16]; N],
    filt: &[u16; N],
    shifts: WideShifts,
    out: VerticalOut<'_>,
    n: usize,
) -> bool {
    debug_assert!(taps_fit(filt) && n.is_multiple_of(16));
    debug_assert!((1..=16).contains(&shifts.sq) && (1..=16).contains(&shifts.mu));
    debug_assert!(rows.iter().chain(drows).all(|r| r.len() >= n));
    let half = N / 2;
    let bias = _mm256_set1_epi16(i16::MIN);
    // Every sample read, or-ed: whether `NARROW` held.
    let mut seen = _mm256_setzero_si256();
    let unbias = _mm256_set1_epi32(i32::MIN);
    let (sh_mu, sh_sq) = (_mm_cvtsi32_si128(shifts.mu as i32), shifts.sq as i32);
    let up = _mm_cvtsi32_si128(16 - sh_sq);
    let down = _mm_cvtsi32_si128(sh_sq);
    let rnd_mu = _mm256_set1_epi32(1 << (shifts.mu - 1));
    let rnd_sq = _mm256_set1_epi32(1 << (sh_sq - 1));
    let low = _mm256_set1_epi32(0xffff);
    let VerticalOut { mu1, mu2, sq } = out;
    let [(xl, xh), (yl, yh), (zl, zh)] = sq;
    debug_assert!([&*mu1, &*mu2, &*xl, &*xh, &*yl, &*yh, &*zl, &*zh]
        .iter()
        .all(|o| o.len() >= n));
    for j0 in (0..n).step_by(16) {
        // [mu1, mu2, xx lo, xx hi, yy lo, yy hi, xy lo, xy hi] per unpack half; a biased term's
        // accumulator starts at 2^31 (see the module docs), an unbiased one at 0.
        let mut acc: [[_; 8]; 2] = [std::array::from_fn(|q| {
            if biased::<NARROW>(q) {
                unbias
            } else {
                _mm256_setzero_si256()
            }
        }); 2];
        for (k, &c) in filt.iter().enumerate().take(half + 1) {
            let (t, b) = (k, N - 1 - k);
            let c = u32::from(c);
            let coef = _mm256_set1_epi32(if t == b { c } else { c | c << 16 } as i32);
            // SAFETY: 16 samples from j0 < n - 15 of rows at least n long.
            let load = |r: &[u16]| unsafe { _mm256_loadu_si256(r.as_ptr().add(j0).cast()) };
            let (xt, xb, yt, yb) = (load(rows[t]), load(rows[b]), load(drows[t]), load(drows[b]));
            if NARROW {
                let both = _mm256_or_si256(_mm256_or_si256(xt, xb), _mm256_or_si256(yt, yb));
                seen = _mm256_or_si256(seen, both);
            }
            let px = [_mm256_unpacklo_epi16(xt, xb), _mm256_unpackhi_epi16(xt, xb)];
            let py = [_mm256_unpacklo_epi16(yt, yb), _mm256_unpackhi_epi16(yt, yb)];
            for h in 0..2 {
                let (x, y) = (px[h], py[h]);
                let terms = [
                    x,
                    y,
                    _mm256_mullo_epi16(x, x),
                    _mm256_mulhi_epu16(x, x),
                    _mm256_mullo_epi16(y, y),
                    _mm256_mulhi_epu16(y, y),
                    _mm256_mullo_epi16(x, y),
                    _mm256_mulhi_epu16(x, y),
                ];
                for (q, (a, v)) in acc[h].iter_mut().zip(terms).enumerate() {
                    let v = if biased::<NARROW>(q) {
                        _mm256_xor_si256(v, bias)
                    } else {
                        v
                    };
                    *a = _mm256_add_epi32(*a, _mm256_madd_epi16(v, coef));
                }
            }
        }
        let store = |dst: &mut [u16], lo: __m256i, hi: __m256i| {
            let v = _mm256_packus_epi32(lo, hi);
            // SAFETY: j0 + 16 <= n <= dst.len().
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().add(j0).cast(), v) };
        };
        let mu = |a: __m256i| _mm256_srl_epi32(_mm256_add_epi32(a, rnd_mu), sh_mu);
        store(mu1, mu(acc[0][0]), mu(acc[1][0]));
        store(mu2, mu(acc[0][1]), mu(acc[1][1]));
        // (65536 h + l + round) >> sh = (h << (16 - sh)) + ((l + round) >> sh), as u32.
        let moment = |l: __m256i, h: __m256i| {
            _mm256_add_epi32(
                _mm256_sll_epi32(h, up),
                _mm256_srl_epi32(_mm256_add_epi32(l, rnd_sq), down),
            )
        };
        for (q, (lo, hi)) in [
            (&mut *xl, &mut *xh),
            (&mut *yl, &mut *yh),
            (&mut *zl, &mut *zh),
        ]
        .into_iter()
        .enumerate()
        {
            // (Written out: a closure called through `array::map`, which lacks the target
            // features, is not inlined, and the accumulators spill for the call.)
            let v = [
                moment(acc[0][2 + 2 * q], acc[0][3 + 2 * q]),
                moment(acc[1][2 + 2 * q], acc[1][3 + 2 * q]),
            ];
            store(lo, _mm256_and_si256(v[0], low), _mm256_and_si256(v[1], low));
            store(hi, _mm256_srli_epi32(v[0], 16), _mm256_srli_epi32(v[1], 16));
        }
    }
    // (the top bit of every 16-bit lane)
    _mm256_testz_si256(seen, bias) == 1
}

/// The filtered moments of `n` pixels (`n` a multiple of 4) turned into `sigma` values and
/// libvmaf's statistic, exactly as `horizontal_stats` + `block_stats` compute them: `mu²`
/// from 64-bit products, the gain in `f64` operation by operation (separate multiplies and
/// adds, `floor` by `roundpd`), logarithms from the exponent bits and the step table
/// (gathered).
///
/// # Safety
/// The CPU must support AVX2; every slice of `f` holds at least `n` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn stats_avx2(f: [&[u32]; 5], n: usize, p: &StatParams) -> StatSums {
    debug_assert!(n.is_multiple_of(4) && f.iter().all(|s| s.len() >= n));
    let [mu1, mu2, xx, yy, xy] = f;
    let zero = _mm256_setzero_si256();
    let half = _mm256_set1_epi64x(1 << 31);
    // Gathers the low dwords of four qwords into one xmm.
    let low_dwords = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    let narrow = |v: __m256i| _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, low_dwords));
    let eps = _mm256_set1_pd(p.eps);
    let nsq = _mm256_set1_pd(f64::from(p.nsq));
    let gain = _mm256_set1_pd(p.gain_limit);
    let zero_pd = _mm256_setzero_pd();
    let (m8000, mffff) = (_mm256_set1_epi64x(0x8000), _mm256_set1_epi64x(0xffff));
    let one64 = _mm256_set1_epi64x(1);
    let bias = _mm256_set1_epi64x(1023 + 32);
    let steps = p.steps.as_ptr().cast::<i32>();
    let (m15, mff, mffff32) = (
        _mm256_set1_epi64x(15),
        _mm_set1_epi32(0xff),
        _mm_set1_epi32(0xffff),
    );
    let two = _mm_set1_epi32(2);
    // Table value of masked 16-bit indices (64-bit lanes): base + (o >= p1) + (o >= p2).
    let look = |idx: __m256i| {
        // SAFETY: idx <= 0xffff, so idx >> 4 < 4096 entries of `steps`.
        let e = unsafe { _mm256_i64gather_epi32::<4>(steps, _mm256_srli_epi64(idx, 4)) };
        let o = narrow(_mm256_and_si256(idx, m15));
        let base = _mm_and_si128(e, mffff32);
        let p1 = _mm_and_si128(_mm_srli_epi32(e, 16), mff);
        let p2 = _mm_srli_epi32(e, 24);
        let v = _mm_add_epi32(_mm_add_epi32(base, two), _mm_cmpgt_epi32(p1, o));
        _mm256_cvtepi32_epi64(_mm_add_epi32(v, _mm_cmpgt_epi32(p2, o)))
    };
    let index = |bits: __m256i, mask: __m256i| {
        let i = _mm256_or_si256(_mm256_srli_epi64(bits, 37), m8000);
        _mm256_and_si256(_mm256_and_si256(i, mffff), mask)
    };
    let mut acc = [zero; 4];
    for j in (0..n).step_by(4) {
        // SAFETY: j + 4 <= n <= every slice's length.
        let load =
            |s: &[u32]| unsafe { _mm256_cvtepu32_epi64(_mm_loadu_si128(s.as_ptr().add(j).cast())) };
        let (m1, m2) = (load(mu1), load(mu2));
        let sq = |a: __m256i, b: __m256i| {
            narrow(_mm256_srli_epi64(
                _mm256_add_epi64(_mm256_mul_epu32(a, b), half),
                32,
            ))
        };
        let (m11, m22, m12) = (sq(m1, m1), sq(m2, m2), sq(m1, m2));
        // SAFETY: as above.
        let load32 = |s: &[u32]| unsafe { _mm_loadu_si128(s.as_ptr().add(j).cast()) };
        let s1 = _mm_sub_epi32(load32(xx), m11);
        let s2 = _mm_max_epi32(_mm_sub_epi32(load32(yy), m22), _mm_setzero_si128());
        let s12 = _mm_sub_epi32(load32(xy), m12);
        let is_log = _mm_cmpgt_epi32(s1, _mm_set1_epi32(p.nsq - 1));
        let is_num = _mm_and_si128(
            is_log,
            _mm_and_si128(
                _mm_cmpgt_epi32(s12, _mm_setzero_si128()),
                _mm_cmpgt_epi32(s2, _mm_setzero_si128()),
            ),
        );
        let (log_mask, num_mask) = (_mm256_cvtepi32_epi64(is_log), _mm256_cvtepi32_epi64(is_num));
        let (a, b, c) = (
            _mm256_cvtepi32_pd(s1),
            _mm256_cvtepi32_pd(s2),
            _mm256_cvtepi32_pd(s12),
        );
        let g = _mm256_div_pd(c, _mm256_add_pd(a, eps));
        let t = _mm256_floor_pd(_mm256_sub_pd(b, _mm256_mul_pd(g, c)));
        let sv = _mm256_max_pd(t, zero_pd);
        let gl = _mm256_min_pd(g, gain);
        let n1 = _mm256_add_pd(sv, nsq);
        let n2 = _mm256_add_pd(_mm256_floor_pd(_mm256_mul_pd(_mm256_mul_pd(gl, gl), a)), n1);
        let d = _mm256_add_pd(a, nsq);
        let (bd, b1, b2) = (
            _mm256_castpd_si256(d),
            _mm256_castpd_si256(n1),
            _mm256_castpd_si256(n2),
        );
        let exp = |bits: __m256i| _mm256_srli_epi64(bits, 52);
        let exp_den = _mm256_slli_epi64(_mm256_sub_epi64(exp(bd), bias), 11);
        let exp_num = _mm256_slli_epi64(_mm256_sub_epi64(exp(b2), exp(b1)), 11);
        let den = _mm256_add_epi64(exp_den, look(index(bd, log_mask)));
        let num = _mm256_sub_epi64(
            _mm256_add_epi64(exp_num, look(index(b2, num_mask))),
            look(index(b1, num_mask)),
        );
        acc[0] = _mm256_add_epi64(acc[0], _mm256_and_si256(num, num_mask));
        acc[1] = _mm256_add_epi64(acc[1], _mm256_and_si256(den, log_mask));
        acc[2] = _mm256_add_epi64(
            acc[2],
            _mm256_andnot_si256(log_mask, _mm256_cvtepi32_epi64(s2)),
        );
        acc[3] = _mm256_add_epi64(acc[3], _mm256_andnot_si256(log_mask, one64));
    }
    acc.map(|v| {
        let mut lanes = [0i64; 4];
        // SAFETY: 32 bytes into a 32-byte array.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), v) };
        lanes.iter().sum()
    })
}

/// Coefficients (`u^0..u^7`) of a polynomial `q(u)` within 6e-4 of `2048 log2(1 + u)` on
/// `[0, 1)` (a least-squares fit weighted towards the largest errors), evaluated in `f32` by
/// Horner's rule with fused multiply-adds.
const LOG2_POLY: [f32; 8] = [
    5.713_166e-4,
    2_954.559_8,
    -1_475.486_6,
    968.490_1,
    -664.063,
    393.391_5,
    -159.868_85,
    30.976_889,
];

/// `q(k / 32768)` as the vector code computes it (a fused multiply-add is one rounding in
/// both), for [`log2_misses`].
fn log2_poly(k: u32) -> f32 {
    let u = f32::from_bits(0x3f80_0000 | k << 8) - 1.0;
    LOG2_POLY[..7]
        .iter()
        .rev()
        .fold(LOG2_POLY[7], |q, &c| q.mul_add(u, c))
}

/// Multiplier of the hash `(k * M mod 2^32) >> 26` that puts each `k` of [`log2_misses`] in a
/// slot of its own (found by search; `log2_misses` checks it).
const LOG2_MISS_HASH: u32 = 0xf0a3_5c59;

/// The `k` whose table entry is one more than `round(q(k / 32768))`, each in slot
/// `(k * LOG2_MISS_HASH) >> 26` of 64 (0xffff in the empty ones). libvmaf rounds the logarithm
/// twice (to `f32`, then to Q11), and `q`, however close, does not reproduce the first rounding
/// where the value lies near a half step: 39 entries, each one below the table (never above).
fn log2_misses() -> &'static [u16; 64] {
    static MISSES: OnceLock<[u16; 64]> = OnceLock::new();
    MISSES.get_or_init(|| {
        let t = log2_table();
        let mut slots = [0xffffu16; 64];
        for k in 0..32768u32 {
            let r = log2_poly(k).round_ties_even() as i32;
            match i32::from(t[32768 + k as usize]) - 30720 - r {
                0 => {}
                1 => {
                    let h = (k.wrapping_mul(LOG2_MISS_HASH) >> 26) as usize;
                    assert_eq!(
                        slots[h], 0xffff,
                        "log2 misses {k} and {} share a slot",
                        slots[h]
                    );
                    slots[h] = k as u16;
                }
                d => panic!("log2 polynomial off by {d} at {k}"),
            }
        }
        slots
    })
}

/// [`log2_misses`] as the two vectors `vpermt2w` indexes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
#[inline]
pub(super) fn log2_miss_table() -> [__m512i; 2] {
    let m = log2_misses();
    // SAFETY: two 64-byte loads from a 128-byte array.
    unsafe {
        [
            _mm512_loadu_si512(m.as_ptr().cast()),
            _mm512_loadu_si512(m.as_ptr().add(32).cast()),
        ]
    }
}

/// `log2_table()[i] - 15 * 2048` for 16 lanes, `i = 32768 + k` with `k` (15 bits) in bits
/// 8..23 of every lane (the top mantissa bits of an `f32`, or of an `f64` shifted right by 29),
/// anything in the other bits. Computed as `q(k / 32768)` rounded, plus one where `k` is one of
/// the [`log2_misses`] (`misses`: [`log2_miss_table`]), found by a hash and one 64-entry
/// permute: exact for every `k`, without a branch or a gather.
///
/// # Safety
/// The CPU must support AVX-512 F, BW, DQ and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
#[inline]
pub(super) unsafe fn log2_q11(m: __m512i, misses: &[__m512i; 2]) -> __m512i {
    // 1 + k / 32768 exactly: the 15 bits under the exponent of 1.
    let x = _mm512_or_si512(
        _mm512_and_si512(m, _mm512_set1_epi32(0x7f_ff00)),
        _mm512_set1_epi32(0x3f80_0000),
    );
    let u = _mm512_sub_ps(_mm512_castsi512_ps(x), _mm512_set1_ps(1.0));
    let mut q = _mm512_set1_ps(LOG2_POLY[7]);
    for &c in LOG2_POLY[..7].iter().rev() {
        q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(c));
    }
    let r = _mm512_cvtps_epi32(q);
    // k's slot (bits 0..6 of each dword; the high words index slot 0, and are ignored).
    let k = _mm512_and_si512(_mm512_srli_epi32(x, 8), _mm512_set1_epi32(0x7fff));
    let slot = _mm512_srli_epi32(
        _mm512_mullo_epi32(k, _mm512_set1_epi32(LOG2_MISS_HASH as i32)),
        26,
    );
    let held = _mm512_permutex2var_epi16(misses[0], slot, misses[1]);
    let miss = _mm512_cmpeq_epi32_mask(_mm512_and_si512(held, _mm512_set1_epi32(0xffff)), k);
    _mm512_mask_sub_epi32(r, miss, r, _mm512_set1_epi32(-1))
}

/// [`stats_avx2`] on 16 pixels at a time, with mask registers; `n` a multiple of 16.
///
/// The integer work runs on 16 lanes of 32 bits: `mu²` as the high halves of the even and
/// odd lanes' 64-bit products, and the denominator's logarithm from `d = sigma1_sq + 2`
/// converted to `f32` *towards zero* (which keeps the top 24 bits of `d < 2^32` exact, so its
/// exponent and top 15 mantissa bits are libvmaf's shift and 16-bit index). Only the gain
/// (`f64` division, as libvmaf) runs on two halves of 8 lanes; the numerator's two logarithms
/// come from those `f64` bits, their indices packed back to 16 lanes. Every table entry comes
/// from [`log2_q11`] (a polynomial, corrected at 39 entries), not a gather per entry.
/// Per-lane sums stay in 32 bits for at most `CHUNK` blocks, then move to 64-bit totals;
/// exponents are summed unscaled and multiplied by 2048 once.
///
/// # Safety
/// The CPU must support AVX-512 F, BW, DQ and VL; every slice of `f` holds at least `n`
/// values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
pub(super) unsafe fn stats_avx512(f: [&[u32]; 5], n: usize, p: &StatParams) -> StatSums {
    debug_assert!(n.is_multiple_of(16) && f.iter().all(|s| s.len() >= n));
    // Blocks of 16 pixels per 32-bit partial sum: a lane adds at most 2^16 per block (the
    // low half of sigma2_sq, or a table entry below 2^15 plus 2 steps).
    const CHUNK: usize = 1 << 14;
    let [mu1, mu2, xx, yy, xy] = f;
    let half = _mm512_set1_epi64(1 << 31);
    let eps = _mm512_set1_pd(p.eps);
    let nsq_pd = _mm512_set1_pd(f64::from(p.nsq));
    let nsq = _mm512_set1_epi32(p.nsq);
    let gain = _mm512_set1_pd(p.gain_limit);
    let zero = _mm512_setzero_si512();
    let one = _mm512_set1_epi32(1);
    let mffff = _mm512_set1_epi32(0xffff);
    // The low dwords of 16 qwords (two registers) in order.
    let low_dwords = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let misses = log2_miss_table();
    // Adds (or subtracts) the table entries of 16 lanes, less 15 * 2048 each ([`log2_q11`]):
    // `m` holds the entry's 15 index bits in bits 8..23 of every lane, garbage elsewhere;
    // lanes outside `k` add nothing.
    let entries = |acc: __m512i, k: __mmask16, m: __m512i, sub: bool| {
        // SAFETY: the caller's features are log2_q11's.
        let e = unsafe { log2_q11(m, &misses) };
        if sub {
            _mm512_mask_sub_epi32(acc, k, acc, e)
        } else {
            _mm512_mask_add_epi32(acc, k, acc, e)
        }
    };
    // High half of `a * b + 2^31` for 16 u32 lanes (`a_odd`, `b_odd`: the inputs >> 32).
    let sq = |a: __m512i, b: __m512i, a_odd: __m512i, b_odd: __m512i| {
        let even = _mm512_add_epi64(_mm512_mul_epu32(a, b), half);
        let odd = _mm512_add_epi64(_mm512_mul_epu32(a_odd, b_odd), half);
        _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(even, 32), odd)
    };
    const FLOOR: i32 = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
    const TRUNC: i32 = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
    // Exponent sums (f32 exponent of d minus its bias, 64-bit lanes of e2 - e1), partial
    // table sums, the non-log sigma2_sq in two 16-bit halves, and the totals.
    let mut totals = [0i64; 4];
    let mut exp_num = [_mm512_setzero_si512(); 2];
    let mut j = 0;
    while j < n {
        let (chunk_start, end) = (j, n.min(j + 16 * CHUNK));
        let (mut den, mut num, mut den_exp) = (zero, zero, zero);
        let (mut nl_lo, mut nl_hi) = (zero, zero);
        let mut nl_count = zero;
        while j < end {
            // SAFETY: j + 16 <= n <= every slice's length.
            let load = |s: &[u32]| unsafe { _mm512_loadu_si512(s.as_ptr().add(j).cast()) };
            let (m1, m2) = (load(mu1), load(mu2));
            let (m1o, m2o) = (_mm512_srli_epi64(m1, 32), _mm512_srli_epi64(m2, 32));
            let s1 = _mm512_sub_epi32(load(xx), sq(m1, m1, m1o, m1o));
            let s2 = _mm512_max_epi32(_mm512_sub_epi32(load(yy), sq(m2, m2, m2o, m2o)), zero);
            let s12 = _mm512_sub_epi32(load(xy), sq(m1, m2, m1o, m2o));
            let is_log = _mm512_cmpge_epi32_mask(s1, nsq);
            let is_num = _mm512_mask_cmpgt_epi32_mask(
                _mm512_mask_cmpgt_epi32_mask(is_log, s12, zero),
                s2,
                zero,
            );
            // Non-log pixels: sigma2_sq and their count.
            let nl = !is_log;
            nl_count = _mm512_mask_add_epi32(nl_count, nl, nl_count, one);
            nl_lo = _mm512_mask_add_epi32(nl_lo, nl, nl_lo, _mm512_and_si512(s2, mffff));
            nl_hi = _mm512_mask_add_epi32(nl_hi, nl, nl_hi, _mm512_srli_epi32(s2, 16));
            // Flat pixels (no log lane: sigma1_sq below the noise) skip the logarithms,
            // and pixels without a numerator the gain: whole blocks of them are common in
            // real pictures (flat areas, anticorrelated texture).
            if is_log != 0 {
                // The denominator: d = sigma1_sq + 2 < 2^32 as f32, truncated.
                let d = _mm512_castps_si512(_mm512_cvt_roundepu32_ps::<TRUNC>(_mm512_add_epi32(
                    s1, nsq,
                )));
                den_exp = _mm512_mask_add_epi32(den_exp, is_log, den_exp, _mm512_srli_epi32(d, 23));
                den = entries(den, is_log, d, false);
            }
            if is_num != 0 {
                // The numerator on two halves of 8 lanes in f64.
                let mut bits = [[zero; 2]; 2];
                for h in 0..2 {
                    let part = |v: __m512i| {
                        if h == 0 {
                            _mm512_castsi512_si256(v)
                        } else {
                            _mm512_extracti64x4_epi64::<1>(v)
                        }
                    };
                    let (a, b, c) = (
                        _mm512_cvtepi32_pd(part(s1)),
                        _mm512_cvtepi32_pd(part(s2)),
                        _mm512_cvtepi32_pd(part(s12)),
                    );
                    let g = _mm512_div_pd(c, _mm512_add_pd(a, eps));
                    let t = _mm512_roundscale_pd::<FLOOR>(_mm512_sub_pd(b, _mm512_mul_pd(g, c)));
                    let sv = _mm512_max_pd(t, _mm512_setzero_pd());
                    let gl = _mm512_min_pd(g, gain);
                    let n1 = _mm512_add_pd(sv, nsq_pd);
                    let n2 = _mm512_add_pd(
                        _mm512_roundscale_pd::<FLOOR>(_mm512_mul_pd(_mm512_mul_pd(gl, gl), a)),
                        n1,
                    );
                    let (b1, b2) = (_mm512_castpd_si512(n1), _mm512_castpd_si512(n2));
                    let k = (is_num >> (8 * h)) as __mmask8;
                    let e = _mm512_sub_epi64(_mm512_srli_epi64(b2, 52), _mm512_srli_epi64(b1, 52));
                    exp_num[h] = _mm512_mask_add_epi64(exp_num[h], k, exp_num[h], e);
                    // Bits 29.. of each: the top 15 mantissa bits in bits 8..23 of the low
                    // dword.
                    bits[h] = [_mm512_srli_epi64(b1, 29), _mm512_srli_epi64(b2, 29)];
                }
                let v1 = _mm512_permutex2var_epi32(bits[0][0], low_dwords, bits[1][0]);
                let v2 = _mm512_permutex2var_epi32(bits[0][1], low_dwords, bits[1][1]);
                num = entries(num, is_num, v2, false);
                num = entries(num, is_num, v1, true);
            }
            j += 16;
        }
        // Partial sums of 16 lanes, each below 2^30 in magnitude: widened before adding.
        let wide = |v: __m512i| {
            let lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v));
            let hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(v));
            _mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi))
        };
        let non_log_count = wide(nl_count);
        let log_count = (end - chunk_start) as i64 - non_log_count;
        totals[0] += wide(num);
        // den per log pixel: entry + 2048 * (E - 127 - 32), E the f32 exponent field of d,
        // the sums holding entry - 15 * 2048.
        totals[1] += wide(den) + 2048 * (wide(den_exp) - 144 * log_count);
        totals[2] += wide(nl_lo) + (wide(nl_hi) << 16);
        totals[3] += non_log_count;
    }
    // num per pixel: entry(n2) - entry(n1) + 2048 * (e2 - e1).
    totals[0] += 2048 * _mm512_reduce_add_epi64(_mm512_add_epi64(exp_num[0], exp_num[1]));
    totals
}

/// The AVX-512 filter kernels, once with `pmaddwd` + `paddd` and once with AVX512-VNNI's
/// `vpdpwssd` (the same multiply-add in one instruction, no saturation: identical sums).
macro_rules! avx512_filter_kernels {
    (
        $features:literal,
        $mac:ident,
        $hfilter:ident,
        $vertical_8:ident,
        $vertical_wide:ident,
        $vertical_decimate:ident
    ) => {
        /// [`hfilter_avx2`] with 32 outputs per block (16 even, then 16 odd); `n` a multiple of 32.
        /// `BIASED`: `src` and `lo` hold their samples flipped (`x ^ 0x8000`), as the AVX-512
        /// vertical kernels store moments.
        ///
        /// # Safety
        /// As [`hfilter_avx2`], with AVX-512 F and BW instead of AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $hfilter<const N: usize, const BIASED: bool>(
            src: &[u16],
            lo: Option<&[u16]>,
            filt: &[u16; N],
            out: &mut [u32],
            n: usize,
        ) {
            debug_assert!(taps_fit(filt) && n.is_multiple_of(32) && out.len() >= n);
            debug_assert!(src.len() + 1 >= n + N && lo.is_none_or(|l| l.len() + 1 >= n + N));
            let (even, odd) = tap_pairs(filt);
            let pairs = N.div_ceil(2);
            let bias = _mm512_set1_epi16(i16::MIN);
            let unbias = _mm512_set1_epi32(i32::MIN);
            let round = _mm512_set1_epi32(32768);
            let filter = |p: *const u16, j0: usize| {
                let mut e = unbias;
                let mut o = unbias;
                for i in 0..pairs {
                    // SAFETY: reads samples j0 + 2i ..= j0 + 2i + 31 <= j0 + N + 30 < n + N - 1.
                    let x = unsafe { _mm512_loadu_si512(p.add(j0 + 2 * i).cast()) };
                    // (stored flipped already when BIASED)
                    let x = if BIASED { x } else { _mm512_xor_si512(x, bias) };
                    e = $mac!(e, x, _mm512_set1_epi32(even[i]));
                    o = $mac!(o, x, _mm512_set1_epi32(odd[i]));
                }
                (e, o)
            };
            let dst = out.as_mut_ptr();
            for j0 in (0..n).step_by(32) {
                let (mut e, mut o) = filter(src.as_ptr(), j0);
                if let Some(lo) = lo {
                    let (le, lodd) = filter(lo.as_ptr(), j0);
                    e = _mm512_add_epi32(e, _mm512_srli_epi32(_mm512_add_epi32(le, round), 16));
                    o = _mm512_add_epi32(o, _mm512_srli_epi32(_mm512_add_epi32(lodd, round), 16));
                }
                // SAFETY: j0 + 32 <= n <= out.len().
                unsafe {
                    _mm512_storeu_si512(dst.add(j0).cast(), e);
                    _mm512_storeu_si512(dst.add(j0 + 16).cast(), o);
                }
            }
        }

        /// [`vertical_8_avx2`] on 32 columns at a time; `n` a multiple of 32.
        ///
        /// # Safety
        /// As [`vertical_8_avx2`], with AVX-512 F and BW instead of AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $vertical_8(
            rows: &[&[u8]; 17],
            drows: &[&[u8]; 17],
            filt: &[u16; 17],
            out: VerticalOut<'_>,
            n: usize,
        ) {
            debug_assert!(n.is_multiple_of(32) && rows.iter().chain(drows).all(|r| r.len() >= n));
            let bias = _mm512_set1_epi16(i16::MIN);
            let unbias = _mm512_set1_epi32(i32::MIN);
            let VerticalOut { mu1, mu2, sq } = out;
            let [(xl, xh), (yl, yh), (zl, zh)] = sq;
            debug_assert!([&*mu1, &*mu2, &*xl, &*xh, &*yl, &*yh, &*zl, &*zh]
                .iter()
                .all(|o| o.len() >= n));
            for j0 in (0..n).step_by(32) {
                let mut acc = [[_mm512_setzero_si512(); 2]; 2];
                let mut sq_acc = [[unbias; 2]; 3];
                for (k, &c) in filt.iter().enumerate().take(9) {
                    let (t, b) = (k, 16 - k);
                    let c = u32::from(c);
                    let coef = _mm512_set1_epi32(if t == b { c } else { c | c << 16 } as i32);
                    // SAFETY: 32 samples from j0 < n - 31 of rows at least n long.
                    let load = |r: &[u8]| unsafe {
                        _mm512_cvtepu8_epi16(_mm256_loadu_si256(r.as_ptr().add(j0).cast()))
                    };
                    let (xt, xb, yt, yb) =
                        (load(rows[t]), load(rows[b]), load(drows[t]), load(drows[b]));
                    let px = [_mm512_unpacklo_epi16(xt, xb), _mm512_unpackhi_epi16(xt, xb)];
                    let py = [_mm512_unpacklo_epi16(yt, yb), _mm512_unpackhi_epi16(yt, yb)];
                    for h in 0..2 {
                        let (x, y) = (px[h], py[h]);
                        acc[0][h] = $mac!(acc[0][h], x, coef);
                        acc[1][h] = $mac!(acc[1][h], y, coef);
                        let prods = [
                            _mm512_mullo_epi16(x, x),
                            _mm512_mullo_epi16(y, y),
                            _mm512_mullo_epi16(x, y),
                        ];
                        for (a, p) in sq_acc.iter_mut().zip(prods) {
                            let p = _mm512_xor_si512(p, bias);
                            a[h] = $mac!(a[h], p, coef);
                        }
                    }
                }
                // Moments are stored flipped (`Isa::BIASED_MOMENTS` of the AVX-512 levels).
                let store = |dst: &mut [u16], lo: __m512i, hi: __m512i| {
                    let v = _mm512_xor_si512(_mm512_packus_epi32(lo, hi), bias);
                    // SAFETY: j0 + 32 <= n <= dst.len().
                    unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(j0).cast(), v) };
                };
                let rnd = _mm512_set1_epi32(128);
                let mu = |a: __m512i| _mm512_srli_epi32(_mm512_add_epi32(a, rnd), 8);
                store(mu1, mu(acc[0][0]), mu(acc[0][1]));
                store(mu2, mu(acc[1][0]), mu(acc[1][1]));
                let low = _mm512_set1_epi32(0xffff);
                for ((lo, hi), a) in [
                    (&mut *xl, &mut *xh),
                    (&mut *yl, &mut *yh),
                    (&mut *zl, &mut *zh),
                ]
                .into_iter()
                .zip(sq_acc)
                {
                    // (the accumulators started at 2^31, which undid the bias)
                    let v = a;
                    store(lo, _mm512_and_si512(v[0], low), _mm512_and_si512(v[1], low));
                    store(hi, _mm512_srli_epi32(v[0], 16), _mm512_srli_epi32(v[1], 16));
                }
            }
        }

        /// [`vertical_wide_avx2`] on 32 columns at a time; `n` a multiple of 32. With `NARROW`
        /// the second moments are summed differently (below), with fewer multiplies: this
        /// pass is bound by the one port that multiplies 512-bit vectors, 11 multiplies per
        /// row pair and unpack half here against 14 (the 8-bit pass needs 8). The sums, and so
        /// the outputs, are the same.
        ///
        /// # Safety
        /// As [`vertical_wide_avx2`], with AVX-512 F and BW instead of AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $vertical_wide<const N: usize, const NARROW: bool>(
            rows: &[&[u16]; N],
            drows: &[&[u16]; N],
            filt: &[u16; N],
            shifts: WideShifts,
            out: VerticalOut<'_>,
            n: usize,
        ) -> bool {
            debug_assert!(taps_fit(filt) && n.is_multiple_of(32));
            debug_assert!((1..=16).contains(&shifts.sq) && (1..=16).contains(&shifts.mu));
            debug_assert!(rows.iter().chain(drows).all(|r| r.len() >= n));
            let half = N / 2;
            let bias = _mm512_set1_epi16(i16::MIN);
            let zero = _mm512_setzero_si512();
            let mut seen = zero;
            let unbias = _mm512_set1_epi32(i32::MIN);
            let (sh_mu, sh_sq) = (_mm_cvtsi32_si128(shifts.mu as i32), shifts.sq as i32);
            let up = _mm_cvtsi32_si128(16 - sh_sq);
            let down = _mm_cvtsi32_si128(sh_sq);
            let rnd_mu = _mm512_set1_epi32(1 << (shifts.mu - 1));
            let rnd_sq = _mm512_set1_epi32(1 << (sh_sq - 1));
            let low = _mm512_set1_epi32(0xffff);
            let VerticalOut { mu1, mu2, sq } = out;
            let [(xl, xh), (yl, yh), (zl, zh)] = sq;
            debug_assert!([&*mu1, &*mu2, &*xl, &*xh, &*yl, &*yh, &*zl, &*zh]
                .iter()
                .all(|o| o.len() >= n));
            // SAFETY: 32 samples from j0 < n - 31 of rows at least n long.
            let load =
                |r: &[u16], j0: usize| unsafe { _mm512_loadu_si512(r.as_ptr().add(j0).cast()) };
            // Moments are stored flipped (`Isa::BIASED_MOMENTS` of the AVX-512 levels).
            let store = |dst: &mut [u16], j0: usize, lo: __m512i, hi: __m512i| {
                let v = _mm512_xor_si512(_mm512_packus_epi32(lo, hi), bias);
                // SAFETY: j0 + 32 <= n <= dst.len().
                unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(j0).cast(), v) };
            };
            let mu = |a: __m512i| _mm512_srl_epi32(_mm512_add_epi32(a, rnd_mu), sh_mu);
            // (65536 h + l + round) >> sh = (h << (16 - sh)) + ((l + round) >> sh), as u32.
            let moment = |l: __m512i, h: __m512i| {
                _mm512_add_epi32(
                    _mm512_sll_epi32(h, up),
                    _mm512_srl_epi32(_mm512_add_epi32(l, rnd_sq), down),
                )
            };
            // The second moments of a 32-column block from the sums of the low and high
            // halves, `[q][h]` (q: xx, yy, xy; h: unpack half), stored as 16-bit halves.
            let mut store_moments = |j0: usize, l: [[__m512i; 2]; 3], h: [[__m512i; 2]; 3]| {
                for (q, (lo, hi)) in [
                    (&mut *xl, &mut *xh),
                    (&mut *yl, &mut *yh),
                    (&mut *zl, &mut *zh),
                ]
                .into_iter()
                .enumerate()
                {
                    let v0 = moment(l[q][0], h[q][0]);
                    let v1 = moment(l[q][1], h[q][1]);
                    store(lo, j0, _mm512_and_si512(v0, low), _mm512_and_si512(v1, low));
                    store(hi, j0, _mm512_srli_epi32(v0, 16), _mm512_srli_epi32(v1, 16));
                }
            };
            if NARROW {
                // Samples below 2^15 are non-negative i16, so `pmaddwd` of a row pair with
                // itself gives `s = xt² + xb²` (below 2^31) in one instruction (likewise
                // `xt yt + xb yb`); the centre row pairs with zeros. The 16-bit halves of two
                // row pairs' `s` are then interleaved (`punpck*wd`), so that one multiply-add
                // takes both pairs' low halves by their taps and the next both high halves:
                // lanes alternate low-half and high-half sums, two pixels per 128-bit lane from
                // each unpack. The low halves are biased (their lanes start at 2^15 times the
                // taps used, which undoes it); the high halves (below 2^15) are used as they
                // are. Per row pair and unpack half: 2 + 3 + 3 multiplies, as the 8-bit pass.
                let lo_start = filt[..=half]
                    .iter()
                    .fold(0u32, |a, &c| a.wrapping_add(u32::from(c) << 15));
                // low-half lanes (even) start at lo_start, high-half lanes (odd) at 0
                let start = _mm512_set1_epi64(i64::from(lo_start));
                let lo_bias = _mm512_set1_epi32(0x8000);
                let pairs = half + 1;
                for j0 in (0..n).step_by(32) {
                    let mut m = [[zero; 2]; 2];
                    // [term][unpack half][pixels 0, 1 / 2, 3 of each 128-bit lane]
                    let mut acc = [[[start; 2]; 2]; 3];
                    for g in (0..pairs).step_by(2) {
                        // Row pairs g and g + 1 (none past the centre): samples unpacked,
                        // mu summed, and the biased `s` of each term.
                        let mut s = [[[zero; 3]; 2]; 2]; // [pair][unpack half][term]
                        let mut coef = 0u32;
                        for (e, k) in (g..pairs.min(g + 2)).enumerate() {
                            let (t, b) = (k, N - 1 - k);
                            let c = u32::from(filt[k]);
                            coef |= c << (16 * e);
                            let both = _mm512_set1_epi32((c | c << 16) as i32);
                            let (xt, yt) = (load(rows[t], j0), load(drows[t], j0));
                            let (xb, yb) = if t == b {
                                (zero, zero)
                            } else {
                                (load(rows[b], j0), load(drows[b], j0))
                            };
                            let both_rows =
                                _mm512_or_si512(_mm512_or_si512(xt, xb), _mm512_or_si512(yt, yb));
                            seen = _mm512_or_si512(seen, both_rows);
                            let px = [_mm512_unpacklo_epi16(xt, xb), _mm512_unpackhi_epi16(xt, xb)];
                            let py = [_mm512_unpacklo_epi16(yt, yb), _mm512_unpackhi_epi16(yt, yb)];
                            for u in 0..2 {
                                let (x, y) = (px[u], py[u]);
                                m[0][u] = $mac!(m[0][u], x, both);
                                m[1][u] = $mac!(m[1][u], y, both);
                                let sums = [
                                    _mm512_madd_epi16(x, x),
                                    _mm512_madd_epi16(y, y),
                                    _mm512_madd_epi16(x, y),
                                ];
                                for (q, v) in sums.into_iter().enumerate() {
                                    s[e][u][q] = _mm512_xor_si512(v, lo_bias);
                                }
                            }
                        }
                        // (a lone last pair leaves the other's `s` and tap at 0)
                        let coef = _mm512_set1_epi32(coef as i32);
                        for u in 0..2 {
                            for q in 0..3 {
                                let (a, b) = (s[0][u][q], s[1][u][q]);
                                let a_q = &mut acc[q][u];
                                a_q[0] = $mac!(a_q[0], _mm512_unpacklo_epi16(a, b), coef);
                                a_q[1] = $mac!(a_q[1], _mm512_unpackhi_epi16(a, b), coef);
                            }
                        }
                    }
                    store(mu1, j0, mu(m[0][0]), mu(m[0][1]));
                    store(mu2, j0, mu(m[1][0]), mu(m[1][1]));
                    // Back to one lane per pixel, in the unpack halves' order: the low-half
                    // sums are lanes 0 and 2 of each 128-bit lane of both vectors, the high
                    // halves lanes 1 and 3.
                    let pick = |v: [__m512i; 2], imm: bool| {
                        let (a, b) = (_mm512_castsi512_ps(v[0]), _mm512_castsi512_ps(v[1]));
                        _mm512_castps_si512(if imm {
                            _mm512_shuffle_ps::<0xdd>(a, b)
                        } else {
                            _mm512_shuffle_ps::<0x88>(a, b)
                        })
                    };
                    let mut l = [[zero; 2]; 3];
                    let mut h = [[zero; 2]; 3];
                    for q in 0..3 {
                        for u in 0..2 {
                            l[q][u] = pick(acc[q][u], false);
                            h[q][u] = pick(acc[q][u], true);
                        }
                    }
                    store_moments(j0, l, h);
                }
                return _mm512_movepi16_mask(seen) == 0;
            }
            for j0 in (0..n).step_by(32) {
                // [mu1, mu2, xx lo, xx hi, yy lo, yy hi, xy lo, xy hi] per unpack half, every
                // term biased into i16, its accumulator starting at 2^31 (see the module docs).
                let mut acc = [[unbias; 8]; 2];
                for (k, &c) in filt.iter().enumerate().take(half + 1) {
                    let (t, b) = (k, N - 1 - k);
                    let c = u32::from(c);
                    let coef = _mm512_set1_epi32(if t == b { c } else { c | c << 16 } as i32);
                    let (xt, xb) = (load(rows[t], j0), load(rows[b], j0));
                    let (yt, yb) = (load(drows[t], j0), load(drows[b], j0));
                    let px = [_mm512_unpacklo_epi16(xt, xb), _mm512_unpackhi_epi16(xt, xb)];
                    let py = [_mm512_unpacklo_epi16(yt, yb), _mm512_unpackhi_epi16(yt, yb)];
                    for u in 0..2 {
                        let (x, y) = (px[u], py[u]);
                        let terms = [
                            x,
                            y,
                            _mm512_mullo_epi16(x, x),
                            _mm512_mulhi_epu16(x, x),
                            _mm512_mullo_epi16(y, y),
                            _mm512_mulhi_epu16(y, y),
                            _mm512_mullo_epi16(x, y),
                            _mm512_mulhi_epu16(x, y),
                        ];
                        for (a, v) in acc[u].iter_mut().zip(terms) {
                            *a = $mac!(*a, _mm512_xor_si512(v, bias), coef);
                        }
                    }
                }
                store(mu1, j0, mu(acc[0][0]), mu(acc[1][0]));
                store(mu2, j0, mu(acc[0][1]), mu(acc[1][1]));
                let pick = |q: usize| [acc[0][q], acc[1][q]];
                store_moments(j0, [pick(2), pick(4), pick(6)], [pick(3), pick(5), pick(7)]);
            }
            true
        }

        /// The vertical pass of decimation (`decimate` in `vif.rs`) on 32 columns at a time:
        /// `out[j] = (sum_k filt[k] * rows[k][j] + 2^(sh - 1)) >> sh` with libvmaf's wrapping
        /// `u32` sum, for samples `T` of 8 bits (`u8`) or 16 (`u16`); `n` a multiple of 32.
        /// Symmetric taps pair the rows `k` and `N - 1 - k` for `pmaddwd` (the centre row with
        /// a zero tap); samples are biased into `i16` and the accumulators start at `2^31`,
        /// as in the other kernels. Results must fit 16 bits (they do: the filter sums to
        /// 2^16 and `sh` is the sample depth or more).
        ///
        /// # Safety
        /// The CPU must support the target features; `T` is `u8` or `u16`; `taps_fit(filt)`;
        /// `1 <= sh <= 16`; every row holds at least `n` samples and `out` at least `n`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $vertical_decimate<T: Copy, const N: usize>(
            rows: &[&[T]; N],
            filt: &[u16; N],
            sh: u32,
            out: &mut [u16],
            n: usize,
        ) {
            let wide = std::mem::size_of::<T>() == 2;
            debug_assert!(wide || std::mem::size_of::<T>() == 1);
            debug_assert!(taps_fit(filt) && n.is_multiple_of(32) && (1..=16).contains(&sh));
            debug_assert!(out.len() >= n && rows.iter().all(|r| r.len() >= n));
            let half = N / 2;
            let bias = _mm512_set1_epi16(i16::MIN);
            let unbias = _mm512_set1_epi32(i32::MIN);
            let rnd = _mm512_set1_epi32((1u32 << (sh - 1)) as i32);
            let shift = _mm_cvtsi32_si128(sh as i32);
            let coefs: [__m512i; 9] = std::array::from_fn(|k| {
                if k > half {
                    return _mm512_setzero_si512();
                }
                let c = u32::from(filt[k]);
                _mm512_set1_epi32(if k == half { c } else { c | c << 16 } as i32)
            });
            for j0 in (0..n).step_by(32) {
                // SAFETY: 32 samples from j0 <= n - 32 of rows at least n long; `T` is u8
                // (32 bytes read) or u16 (64 bytes).
                let load = |r: &[T]| unsafe {
                    let p = r.as_ptr().add(j0);
                    let x = if wide {
                        _mm512_loadu_si512(p.cast())
                    } else {
                        _mm512_cvtepu8_epi16(_mm256_loadu_si256(p.cast()))
                    };
                    _mm512_xor_si512(x, bias)
                };
                let mut acc = [unbias; 2];
                for (k, &coef) in coefs.iter().enumerate().take(half + 1) {
                    let xt = load(rows[k]);
                    let xb = if k == half { xt } else { load(rows[N - 1 - k]) };
                    acc[0] = $mac!(acc[0], _mm512_unpacklo_epi16(xt, xb), coef);
                    acc[1] = $mac!(acc[1], _mm512_unpackhi_epi16(xt, xb), coef);
                }
                let round = |a: __m512i| _mm512_srl_epi32(_mm512_add_epi32(a, rnd), shift);
                let v = [round(acc[0]), round(acc[1])];
                // SAFETY: j0 + 32 <= n <= out.len().
                unsafe {
                    let dst = out.as_mut_ptr().add(j0);
                    _mm512_storeu_si512(dst.cast(), _mm512_packus_epi32(v[0], v[1]));
                }
            }
        }
    };
}

/// `acc + pmaddwd(x, c)`, two instructions.
macro_rules! madd_add_512 {
    ($acc:expr, $x:expr, $c:expr) => {
        _mm512_add_epi32($acc, _mm512_madd_epi16($x, $c))
    };
}

/// `acc + pmaddwd(x, c)` in one VNNI instruction. Written as `asm!`: LLVM compiled most uses of
/// `_mm512_dpwssd_epi32` here as `vpmaddwd` + `vpaddd` (two instructions, each double-pumped on
/// Zen 4), and VIF ran 8-9% slower per 1080p frame (BENCHMARKS.md, 2026-11-28).
macro_rules! dpwssd_512 {
    ($acc:expr, $x:expr, $c:expr) => {{
        let (mut acc, x, c): (__m512i, __m512i, __m512i) = ($acc, $x, $c);
        // SAFETY: expanded only inside the AVX-512 VNNI kernels below (their target features
        // include avx512vnni); the instruction reads and writes registers only.
        unsafe {
            std::arch::asm!(
                "vpdpwssd {acc}, {x}, {c}",
                acc = inout(zmm_reg) acc,
                x = in(zmm_reg) x,
                c = in(zmm_reg) c,
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        acc
    }};
}

avx512_filter_kernels!(
    "avx512f,avx512bw",
    madd_add_512,
    hfilter_avx512,
    vertical_8_avx512,
    vertical_wide_avx512,
    vertical_decimate_avx512
);
avx512_filter_kernels!(
    "avx512f,avx512bw,avx512vnni",
    dpwssd_512,
    hfilter_avx512vnni,
    vertical_8_avx512vnni,
    vertical_wide_avx512vnni,
    vertical_decimate_avx512vnni
);

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::features::simd::SimdLevel;

    /// Every one of the 32768 entries, with garbage around the index bits and in every lane
    /// position: `log2_q11` is the table, and the misses it corrects exist.
    #[test]
    fn log2_q11_equals_the_table() {
        let t = log2_table();
        let misses = log2_misses().iter().filter(|&&k| k != 0xffff).count();
        assert!((30..=64).contains(&misses), "{misses} misses");
        if !SimdLevel::Avx512.is_supported() {
            return;
        }
        let mut st = 0x1092_u32;
        for k0 in (0..32768u32).step_by(16) {
            let mut lanes = [0u32; 16];
            for (l, v) in lanes.iter_mut().enumerate() {
                st = st.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *v = (k0 + l as u32) << 8 | (st & 0xff80_00ff);
            }
            let mut out = [0i32; 16];
            // SAFETY: AVX-512 checked above; 64-byte loads and stores of 16-lane arrays.
            unsafe {
                let m = _mm512_loadu_si512(lanes.as_ptr().cast());
                let r = log2_q11(m, &log2_miss_table());
                _mm512_storeu_si512(out.as_mut_ptr().cast(), r);
            }
            for (l, &got) in out.iter().enumerate() {
                let i = 32768 + k0 as usize + l;
                assert_eq!(got, i32::from(t[i]) - 30720, "entry {i}");
            }
        }
    }
}
