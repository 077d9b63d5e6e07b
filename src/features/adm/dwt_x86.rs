//! x86 vector kernel of the scale-0 DWT's vertical pass on pictures of up to 15 bits (AVX-512),
//! bit-exact with `dwt_scale0`'s portable loop.
//!
//! The compiler vectorises that loop with 32-bit multiplies, eight per 16 columns. Samples below
//! 2^15 and the four taps of each filter fit `i16`, so here two rows are interleaved into
//! 16-bit pairs and `pmaddwd` multiplies and adds two taps at once: four per 16 columns for
//! both bands. No sum wraps below 16 bits, and both outputs fit `i16` (at most `sum |taps| / 2`
//! in magnitude), so the packing (signed saturation) is the portable loop's truncation.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::consts::{HI, LO, LO_SUM};

/// Rows of 8-bit or 16-bit samples for [`vertical_avx512`].
#[derive(Clone, Copy)]
pub(super) enum SampleRow<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
}

impl SampleRow<'_> {
    fn len(&self) -> usize {
        match self {
            SampleRow::U8(r) => r.len(),
            SampleRow::U16(r) => r.len(),
        }
    }

    /// Samples `j0..j0 + 32` as 16-bit lanes.
    ///
    /// # Safety
    /// AVX-512 F and BW; `j0 + 32 <= self.len()`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw")]
    #[inline]
    unsafe fn load32(&self, j0: usize) -> __m512i {
        debug_assert!(j0 + 32 <= self.len());
        match self {
            // SAFETY: 32 bytes from j0 + 32 <= len.
            SampleRow::U8(r) => unsafe {
                _mm512_cvtepu8_epi16(_mm256_loadu_si256(r.as_ptr().add(j0).cast()))
            },
            // SAFETY: 64 bytes from j0 + 32 <= len.
            SampleRow::U16(r) => unsafe { _mm512_loadu_si512(r.as_ptr().add(j0).cast()) },
        }
    }
}

/// Columns `0..n` (`n` a multiple of 32) of the vertical pass of four rows of `bpc`-bit samples
/// (`bpc <= 15`, all four rows of one width): `lo[j]` (and `hi[j]`, if wanted) as
/// `dwt_scale0` computes them. Below 16 bits the samples are non-negative `i16` and no sum
/// wraps (`sum |taps| * (2^15 - 1) < 2^31`), so the portable loop's wrapping arithmetic gives
/// these same sums.
///
/// # Safety
/// The CPU must support AVX-512 F and BW; every row holds at least `n` samples, `lo` and `hi`
/// at least `n` values; `1 <= bpc <= 15`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw")]
pub(super) unsafe fn vertical_avx512(
    rows: [SampleRow<'_>; 4],
    lo: &mut [i16],
    mut hi: Option<&mut [i16]>,
    n: usize,
    bpc: u32,
) {
    debug_assert!(n.is_multiple_of(32) && rows.iter().all(|r| r.len() >= n) && lo.len() >= n);
    debug_assert!(hi.as_ref().is_none_or(|h| h.len() >= n) && (1..=15).contains(&bpc));
    let pair = |a: i32, b: i32| _mm512_set1_epi32((a & 0xffff) | b << 16);
    let (lo01, lo23) = (pair(LO[0], LO[1]), pair(LO[2], LO[3]));
    let (hi01, hi23) = (pair(HI[0], HI[1]), pair(HI[2], HI[3]));
    // (sum - LO_SUM * half + half) >> bpc and (sum + half) >> bpc, arithmetic.
    let half = 1i32 << (bpc - 1);
    let lo_add = _mm512_set1_epi32(half - LO_SUM * half);
    let hi_add = _mm512_set1_epi32(half);
    let shift = _mm_cvtsi32_si128(bpc as i32);
    for j0 in (0..n).step_by(32) {
        // SAFETY: j0 + 32 <= n <= every row's length.
        let [a, b, c, d] = rows.map(|r| unsafe { r.load32(j0) });
        // Pairs (row 0, row 1) and (row 2, row 3) of columns 0-3, 8-11, .. (lo) and 4-7, ..
        // (hi) of each 128-bit lane; `packs` puts them back in column order.
        let p01 = [_mm512_unpacklo_epi16(a, b), _mm512_unpackhi_epi16(a, b)];
        let p23 = [_mm512_unpacklo_epi16(c, d), _mm512_unpackhi_epi16(c, d)];
        let band = |f01: __m512i, f23: __m512i, add: __m512i| {
            let half = |h: usize| {
                let s = _mm512_add_epi32(
                    _mm512_madd_epi16(p01[h], f01),
                    _mm512_madd_epi16(p23[h], f23),
                );
                _mm512_sra_epi32(_mm512_add_epi32(s, add), shift)
            };
            _mm512_packs_epi32(half(0), half(1))
        };
        // SAFETY: j0 + 32 <= n <= lo.len().
        unsafe { _mm512_storeu_si512(lo.as_mut_ptr().add(j0).cast(), band(lo01, lo23, lo_add)) };
        if let Some(hi) = hi.as_deref_mut() {
            // SAFETY: j0 + 32 <= n <= hi.len().
            unsafe {
                _mm512_storeu_si512(hi.as_mut_ptr().add(j0).cast(), band(hi01, hi23, hi_add))
            };
        }
    }
}
