//! libvmaf's `psnr` feature extractor (`integer_psnr.c`, libvmaf 3.2.0, default options), on
//! the CPU: one plane at a time.
//!
//! * Sum of squared errors: 8-bit accumulates each row in a `u32` (as libvmaf does), deeper
//!   samples in a `u64`; both are exact for any real frame width.
//! * `mse = sse / (w * h)`; `psnr = min(10 * log10(peak^2 / max(mse, 1e-16)), 6 * bpc + 12)` with
//!   `peak = 2^bpc - 1` (255 for 8-bit).
//!
//! libvmaf itself only accepts 8, 10, 12 and 16 bits here (other depths make its extractor fail);
//! for 9, 11 and 13..=15 bits this applies the same formula.

use super::simd::SimdLevel;
use crate::frame::{Plane, Samples};

/// PSNR of one plane of `distorted` against `reference`, in dB, as libvmaf writes `psnr_y`,
/// `psnr_cb` and `psnr_cr`. Both planes should have the same size and depth (the top-left
/// common part is measured otherwise); the depth is the reference's.
pub fn psnr(reference: &Plane, distorted: &Plane) -> f64 {
    psnr_at(SimdLevel::selected(), reference, distorted)
}

/// [`psnr`] with the sum of squared errors computed at `level` (or the best level below it
/// that the CPU supports); every level gives the same result.
pub fn psnr_at(level: SimdLevel, reference: &Plane, distorted: &Plane) -> f64 {
    match level.capped() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `capped` returns only levels the running CPU supports; `psnr_avx2` needs
        // nothing beyond AVX2.
        SimdLevel::Avx2 => unsafe { psnr_avx2(reference, distorted) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX-512 F/BW/DQ/VL.
        SimdLevel::Avx512 | SimdLevel::Avx512Vnni => unsafe { psnr_avx512(reference, distorted) },
        _ => psnr_impl(reference, distorted),
    }
}

/// [`psnr_impl`] compiled with AVX2 (everything is inlined into it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn psnr_avx2(reference: &Plane, distorted: &Plane) -> f64 {
    psnr_impl(reference, distorted)
}

/// [`psnr_impl`] compiled with AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
fn psnr_avx512(reference: &Plane, distorted: &Plane) -> f64 {
    psnr_impl(reference, distorted)
}

#[inline(always)]
fn psnr_impl(reference: &Plane, distorted: &Plane) -> f64 {
    let w = reference.width.min(distorted.width);
    let h = reference.height.min(distorted.height);
    let bpc = reference.bpc;
    let sse: u64 = match (reference.samples, distorted.samples) {
        (Samples::U8(_), Samples::U8(_)) => (0..h)
            .map(|y| sq_err_sum(&reference.row_u8(y)[..w], &distorted.row_u8(y)[..w]) as u64)
            .sum(),
        (Samples::U16(_), Samples::U16(_)) if bpc <= 15 => {
            // Squares of up to 15-bit differences are below 2^30: sum runs of them in 32 bits,
            // short enough never to wrap.
            let run = 1usize << (32 - 2 * bpc.max(9)).min(20);
            (0..h)
                .map(|y| {
                    let (r, d) = (&reference.row_u16(y)[..w], &distorted.row_u16(y)[..w]);
                    r.chunks(run)
                        .zip(d.chunks(run))
                        .map(|(r, d)| sq_err_sum(r, d) as u64)
                        .sum::<u64>()
                })
                .sum()
        }
        (Samples::U16(_), Samples::U16(_)) => (0..h)
            .map(|y| sq_err_sum_wide(&reference.row_u16(y)[..w], &distorted.row_u16(y)[..w]))
            .sum(),
        _ => panic!("psnr: reference and distorted planes differ in sample storage"),
    };
    psnr_from_sse(sse, w * h, bpc)
}

/// libvmaf's PSNR from a sum of squared errors over `pixels` samples of depth `bpc`.
pub fn psnr_from_sse(sse: u64, pixels: usize, bpc: u32) -> f64 {
    let peak = ((1u32 << bpc) - 1) as f64;
    let psnr_max = (6 * bpc + 12) as f64;
    let mse = sse as f64 / pixels as f64;
    let mse = if mse > 1e-16 { mse } else { 1e-16 };
    let db = 10.0 * (peak * peak / mse).log10();
    if db < psnr_max {
        db
    } else {
        psnr_max
    }
}

/// Sum of squared differences of samples of at most 15 bits, modulo 2^32 (libvmaf's 8-bit path
/// sums each row in a `u32` too). Differences fit `i16`, which vectorises to 16-bit
/// multiply-adds.
#[inline(always)]
fn sq_err_sum<T: Copy + Into<i32>>(r: &[T], d: &[T]) -> u32 {
    let mut sum = 0i32;
    for (&a, &b) in r.iter().zip(d) {
        let e = (a.into() - b.into()) as i16 as i32;
        sum = sum.wrapping_add(e * e);
    }
    sum as u32
}

/// Sum of squared differences of 16-bit samples.
#[inline(always)]
fn sq_err_sum_wide(r: &[u16], d: &[u16]) -> u64 {
    r.iter()
        .zip(d)
        .map(|(&a, &b)| {
            let e = a.abs_diff(b) as u32;
            (e * e) as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::PlaneBuf;

    #[test]
    fn identical_planes_hit_the_cap() {
        for bpc in [8, 10, 12, 16] {
            let p = PlaneBuf::new(3, 1, bpc);
            assert_eq!(psnr(&p.view(), &p.view()), (6 * bpc + 12) as f64);
        }
    }

    #[test]
    fn one_by_one_extremes() {
        let a = PlaneBuf::new(1, 1, 8);
        let mut b = PlaneBuf::new(1, 1, 8);
        b.data = crate::frame::SampleBuf::U8(vec![255]);
        assert_eq!(psnr(&a.view(), &b.view()), 0.0);
        let a = PlaneBuf::new(1, 1, 16);
        let mut b = PlaneBuf::new(1, 1, 16);
        b.data = crate::frame::SampleBuf::U16(vec![65535]);
        assert_eq!(psnr(&a.view(), &b.view()), 0.0);
    }

    #[test]
    fn deep_sse_matches_64bit_sum_at_extremes() {
        for bpc in [9u32, 10, 12, 14, 15, 16] {
            let max = (1u32 << bpc) - 1;
            let (w, h) = (5000, 2);
            let mut a = PlaneBuf::new(w, h, bpc);
            let b = PlaneBuf::new(w, h, bpc);
            if let crate::frame::SampleBuf::U16(v) = &mut a.data {
                v.iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x = if i % 7 == 0 { 1 } else { max as u16 });
            }
            let sse: u64 = (0..w * h)
                .map(|i| if i % 7 == 0 { 1 } else { (max as u64).pow(2) })
                .sum();
            assert_eq!(
                psnr(&a.view(), &b.view()),
                psnr_from_sse(sse, w * h, bpc),
                "{bpc}-bit"
            );
        }
    }
}
