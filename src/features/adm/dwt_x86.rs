//! x86 vector kernel of the scale-0 DWT's vertical pass on 8-bit pictures (AVX-512), bit-exact
//! with `dwt_scale0`'s portable loop.
//!
//! The compiler vectorises that loop with 32-bit multiplies, eight per 16 columns. 8-bit samples
//! and the four taps of each filter fit `i16`, so here two rows are interleaved into 16-bit
//! pairs and `pmaddwd` multiplies and adds two taps at once: four per 16 columns for both
//! bands. No sum wraps for 8-bit input (`|sum| < 2^24`), and both outputs fit `i16`, so the
//! packing (signed saturation) is the portable loop's truncation.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::consts::{HI, LO, LO_SUM};

/// Columns `0..n` (`n` a multiple of 32) of the vertical pass of four 8-bit rows: `lo[j]` (and
/// `hi[j]`, if wanted) as `dwt_scale0` computes them at 8 bits.
///
/// # Safety
/// The CPU must support AVX-512 F and BW; every row holds at least `n` samples, `lo` and `hi`
/// at least `n` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw")]
pub(super) unsafe fn vertical_u8_avx512(
    rows: [&[u8]; 4],
    lo: &mut [i16],
    mut hi: Option<&mut [i16]>,
    n: usize,
) {
    debug_assert!(n.is_multiple_of(32) && rows.iter().all(|r| r.len() >= n) && lo.len() >= n);
    debug_assert!(hi.as_ref().is_none_or(|h| h.len() >= n));
    let pair = |a: i32, b: i32| _mm512_set1_epi32((a & 0xffff) | b << 16);
    let (lo01, lo23) = (pair(LO[0], LO[1]), pair(LO[2], LO[3]));
    let (hi01, hi23) = (pair(HI[0], HI[1]), pair(HI[2], HI[3]));
    // (sum - LO_SUM * 128 + 128) >> 8 and (sum + 128) >> 8, arithmetic.
    let lo_add = _mm512_set1_epi32(128 - LO_SUM * 128);
    let hi_add = _mm512_set1_epi32(128);
    for j0 in (0..n).step_by(32) {
        // SAFETY: 32 samples from j0 <= n - 32 of rows at least n long.
        let load = |r: &[u8]| unsafe {
            _mm512_cvtepu8_epi16(_mm256_loadu_si256(r.as_ptr().add(j0).cast()))
        };
        let [a, b, c, d] = rows.map(load);
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
                _mm512_srai_epi32(_mm512_add_epi32(s, add), 8)
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
