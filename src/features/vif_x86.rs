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
    debug_assert!(taps_fit(filt) && n % 16 == 0 && out.len() >= n);
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

/// [`hfilter_avx2`] with 32 outputs per block (16 even, then 16 odd); `n` a multiple of 32.
///
/// # Safety
/// As [`hfilter_avx2`], with AVX-512 F and BW instead of AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn hfilter_avx512<const N: usize>(
    src: &[u16],
    lo: Option<&[u16]>,
    filt: &[u16; N],
    out: &mut [u32],
    n: usize,
) {
    debug_assert!(taps_fit(filt) && n % 32 == 0 && out.len() >= n);
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
            let x = _mm512_xor_si512(x, bias);
            e = _mm512_add_epi32(e, _mm512_madd_epi16(x, _mm512_set1_epi32(even[i])));
            o = _mm512_add_epi32(o, _mm512_madd_epi16(x, _mm512_set1_epi32(odd[i])));
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

/// Outputs of the 8-bit scale-0 vertical pass for columns `0..n`: `mu` rounded and shifted
/// by 8, second moments split into 16-bit halves.
pub(super) struct VerticalOut<'a> {
    pub mu1: &'a mut [u16],
    pub mu2: &'a mut [u16],
    /// `xx`, `yy`, `xy`: (low halves, high halves).
    pub sq: [(&'a mut [u16], &'a mut [u16]); 3],
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
    debug_assert!(n % 16 == 0 && rows.iter().chain(drows).all(|r| r.len() >= n));
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
        for k in 0..9 {
            let (t, b) = (k, 16 - k);
            let c = u32::from(filt[k]);
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

/// [`vertical_8_avx2`] on 32 columns at a time; `n` a multiple of 32.
///
/// # Safety
/// As [`vertical_8_avx2`], with AVX-512 F and BW instead of AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn vertical_8_avx512(
    rows: &[&[u8]; 17],
    drows: &[&[u8]; 17],
    filt: &[u16; 17],
    out: VerticalOut<'_>,
    n: usize,
) {
    debug_assert!(n % 32 == 0 && rows.iter().chain(drows).all(|r| r.len() >= n));
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
        for k in 0..9 {
            let (t, b) = (k, 16 - k);
            let c = u32::from(filt[k]);
            let coef = _mm512_set1_epi32(if t == b { c } else { c | c << 16 } as i32);
            // SAFETY: 32 samples from j0 < n - 31 of rows at least n long.
            let load = |r: &[u8]| unsafe {
                _mm512_cvtepu8_epi16(_mm256_loadu_si256(r.as_ptr().add(j0).cast()))
            };
            let (xt, xb, yt, yb) = (load(rows[t]), load(rows[b]), load(drows[t]), load(drows[b]));
            let px = [_mm512_unpacklo_epi16(xt, xb), _mm512_unpackhi_epi16(xt, xb)];
            let py = [_mm512_unpacklo_epi16(yt, yb), _mm512_unpackhi_epi16(yt, yb)];
            for h in 0..2 {
                let (x, y) = (px[h], py[h]);
                acc[0][h] = _mm512_add_epi32(acc[0][h], _mm512_madd_epi16(x, coef));
                acc[1][h] = _mm512_add_epi32(acc[1][h], _mm512_madd_epi16(y, coef));
                let prods = [
                    _mm512_mullo_epi16(x, x),
                    _mm512_mullo_epi16(y, y),
                    _mm512_mullo_epi16(x, y),
                ];
                for (a, p) in sq_acc.iter_mut().zip(prods) {
                    let p = _mm512_xor_si512(p, bias);
                    a[h] = _mm512_add_epi32(a[h], _mm512_madd_epi16(p, coef));
                }
            }
        }
        let store = |dst: &mut [u16], lo: __m512i, hi: __m512i| {
            let v = _mm512_packus_epi32(lo, hi);
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

/// Outputs and shifts of the general vertical pass (`vertical_moments_wide`).
pub(super) struct WideShifts {
    /// Shift of `mu` (the bit depth at scale 0, 16 above), with rounding.
    pub mu: u32,
    /// Shift of the second moments (1..=16), with rounding.
    pub sq: u32,
}

/// The general vertical pass (`vertical_moments_wide`) over columns `0..n` of 16-bit rows,
/// `n` a multiple of 16, natural column order: `mu` from biased sample pairs, second moments
/// from the biased 16-bit halves of the squares (`pmullw` / `pmulhuw`), each summed with
/// `pmaddwd` and shifted like the portable loop.
///
/// # Safety
/// The CPU must support AVX2; `taps_fit(filt)`; `1 <= sq <= 16`, `1 <= mu <= 16`; every row
/// holds at least `n` samples, every output at least `n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn vertical_wide_avx2<const N: usize>(
    rows: &[&[u16]; N],
    drows: &[&[u16]; N],
    filt: &[u16; N],
    shifts: WideShifts,
    out: VerticalOut<'_>,
    n: usize,
) {
    debug_assert!(taps_fit(filt) && n % 16 == 0);
    debug_assert!((1..=16).contains(&shifts.sq) && (1..=16).contains(&shifts.mu));
    debug_assert!(rows.iter().chain(drows).all(|r| r.len() >= n));
    let half = N / 2;
    let bias = _mm256_set1_epi16(i16::MIN);
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
        // [mu1, mu2, xx lo, xx hi, yy lo, yy hi, xy lo, xy hi] per unpack half.
        let mut acc = [[unbias; 8]; 2];
        for k in 0..=half {
            let (t, b) = (k, N - 1 - k);
            let c = u32::from(filt[k]);
            let coef = _mm256_set1_epi32(if t == b { c } else { c | c << 16 } as i32);
            // SAFETY: 16 samples from j0 < n - 15 of rows at least n long.
            let load = |r: &[u16]| unsafe { _mm256_loadu_si256(r.as_ptr().add(j0).cast()) };
            let (xt, xb, yt, yb) = (load(rows[t]), load(rows[b]), load(drows[t]), load(drows[b]));
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
                for (a, v) in acc[h].iter_mut().zip(terms) {
                    let v = _mm256_xor_si256(v, bias);
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
            let v = [0, 1].map(|h| moment(acc[h][2 + 2 * q], acc[h][3 + 2 * q]));
            store(lo, _mm256_and_si256(v[0], low), _mm256_and_si256(v[1], low));
            store(hi, _mm256_srli_epi32(v[0], 16), _mm256_srli_epi32(v[1], 16));
        }
    }
}

/// [`vertical_wide_avx2`] on 32 columns at a time; `n` a multiple of 32.
///
/// # Safety
/// As [`vertical_wide_avx2`], with AVX-512 F and BW instead of AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn vertical_wide_avx512<const N: usize>(
    rows: &[&[u16]; N],
    drows: &[&[u16]; N],
    filt: &[u16; N],
    shifts: WideShifts,
    out: VerticalOut<'_>,
    n: usize,
) {
    debug_assert!(taps_fit(filt) && n % 32 == 0);
    debug_assert!((1..=16).contains(&shifts.sq) && (1..=16).contains(&shifts.mu));
    debug_assert!(rows.iter().chain(drows).all(|r| r.len() >= n));
    let half = N / 2;
    let bias = _mm512_set1_epi16(i16::MIN);
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
    for j0 in (0..n).step_by(32) {
        let mut acc = [[unbias; 8]; 2];
        for k in 0..=half {
            let (t, b) = (k, N - 1 - k);
            let c = u32::from(filt[k]);
            let coef = _mm512_set1_epi32(if t == b { c } else { c | c << 16 } as i32);
            // SAFETY: 32 samples from j0 < n - 31 of rows at least n long.
            let load = |r: &[u16]| unsafe { _mm512_loadu_si512(r.as_ptr().add(j0).cast()) };
            let (xt, xb, yt, yb) = (load(rows[t]), load(rows[b]), load(drows[t]), load(drows[b]));
            let px = [_mm512_unpacklo_epi16(xt, xb), _mm512_unpackhi_epi16(xt, xb)];
            let py = [_mm512_unpacklo_epi16(yt, yb), _mm512_unpackhi_epi16(yt, yb)];
            for h in 0..2 {
                let (x, y) = (px[h], py[h]);
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
                for (a, v) in acc[h].iter_mut().zip(terms) {
                    let v = _mm512_xor_si512(v, bias);
                    *a = _mm512_add_epi32(*a, _mm512_madd_epi16(v, coef));
                }
            }
        }
        let store = |dst: &mut [u16], lo: __m512i, hi: __m512i| {
            let v = _mm512_packus_epi32(lo, hi);
            // SAFETY: j0 + 32 <= n <= dst.len().
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(j0).cast(), v) };
        };
        let mu = |a: __m512i| _mm512_srl_epi32(_mm512_add_epi32(a, rnd_mu), sh_mu);
        store(mu1, mu(acc[0][0]), mu(acc[1][0]));
        store(mu2, mu(acc[0][1]), mu(acc[1][1]));
        let moment = |l: __m512i, h: __m512i| {
            _mm512_add_epi32(
                _mm512_sll_epi32(h, up),
                _mm512_srl_epi32(_mm512_add_epi32(l, rnd_sq), down),
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
            let v = [0, 1].map(|h| moment(acc[h][2 + 2 * q], acc[h][3 + 2 * q]));
            store(lo, _mm512_and_si512(v[0], low), _mm512_and_si512(v[1], low));
            store(hi, _mm512_srli_epi32(v[0], 16), _mm512_srli_epi32(v[1], 16));
        }
    }
}
