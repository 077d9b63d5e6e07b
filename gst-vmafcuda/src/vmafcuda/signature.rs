//! A cheap per-frame fingerprint of the luma: the means of a 4x4 grid of regions, read on a
//! sparse lattice (at most 64x36 samples per frame, whatever the frame size).
//!
//! Two uses: finding the offset between two feeds (`align`: the distorted feed's fingerprints
//! follow the reference's, shifted in time) and spotting repeated frames (a picture that is
//! sample-for-sample the previous one has exactly the same sums). Reading ~2,300 samples costs a
//! few microseconds on the CPU; for CUDA memory the frame has to be mapped into system memory
//! first (a download of the whole frame), which is why the element computes fingerprints of
//! CUDA frames only when `align=auto` asks for them.

use vmafcuda::frame::Plane;

/// Regions per side of the grid.
const GRID: usize = 4;
/// Most lattice points per row / per column.
const MAX_COLS: usize = 64;
const MAX_ROWS: usize = 36;

/// Fingerprint of one luma plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LumaSignature {
    /// Sum of the lattice samples in each region (exact: equal pictures, equal sums).
    sums: [u64; GRID * GRID],
    counts: [u32; GRID * GRID],
    /// Largest sample value (2^bpc - 1), to compare feeds of any bit depth on a 0..1 scale.
    peak: u32,
}

impl LumaSignature {
    pub fn of(luma: &Plane) -> LumaSignature {
        let (w, h) = (luma.width.max(1), luma.height.max(1));
        let step_x = w.div_ceil(MAX_COLS).max(1);
        let step_y = h.div_ceil(MAX_ROWS).max(1);
        let mut sums = [0u64; GRID * GRID];
        let mut counts = [0u32; GRID * GRID];
        // Sample in the middle of each lattice cell, so a 1-pixel border does not dominate.
        let mut y = step_y / 2;
        while y < luma.height {
            let gy = y * GRID / h;
            let mut x = step_x / 2;
            while x < luma.width {
                let cell = gy * GRID + x * GRID / w;
                sums[cell] += luma.get(x, y) as u64;
                counts[cell] += 1;
                x += step_x;
            }
            y += step_y;
        }
        LumaSignature {
            sums,
            counts,
            peak: (1u32 << luma.bpc.clamp(1, 16)) - 1,
        }
    }

    /// Region means on a 0..1 scale.
    fn means(&self) -> impl Iterator<Item = f64> + '_ {
        self.sums
            .iter()
            .zip(&self.counts)
            .map(|(&s, &n)| s as f64 / (n.max(1) as f64 * self.peak as f64))
    }

    /// Mean absolute difference of the region means (0 = same fingerprint, 1 = black vs white).
    pub fn distance(&self, other: &LumaSignature) -> f64 {
        let total: f64 = self
            .means()
            .zip(other.means())
            .map(|(a, b)| (a - b).abs())
            .sum();
        total / (GRID * GRID) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmafcuda::frame::Samples;

    fn plane(data: &[u8], w: usize, h: usize) -> Plane<'_> {
        Plane {
            samples: Samples::U8(data),
            width: w,
            height: h,
            stride: w,
            bpc: 8,
        }
    }

    #[test]
    fn equal_pictures_have_equal_signatures_and_different_ones_do_not() {
        let (w, h) = (576, 324);
        let a: Vec<u8> = (0..w * h).map(|i| (i % 251) as u8).collect();
        let mut b = a.clone();
        let sa = LumaSignature::of(&plane(&a, w, h));
        assert_eq!(sa, LumaSignature::of(&plane(&b, w, h)));
        assert_eq!(sa.distance(&sa), 0.0);
        // Brighten the top-left region: only that region's mean moves.
        for y in 0..h / 4 {
            for x in 0..w / 4 {
                b[y * w + x] = b[y * w + x].saturating_add(40);
            }
        }
        let sb = LumaSignature::of(&plane(&b, w, h));
        assert_ne!(sa, sb);
        let d = sa.distance(&sb);
        assert!(d > 0.005 && d < 40.0 / 255.0 / 16.0 + 1e-9, "{d}");
    }

    #[test]
    fn black_against_white_is_distance_one_at_any_bit_depth() {
        let black = vec![0u16; 64 * 48];
        let white = vec![1023u16; 64 * 48];
        let p = |d: &[u16]| {
            LumaSignature::of(&Plane {
                samples: Samples::U16(d),
                width: 64,
                height: 48,
                stride: 64,
                bpc: 10,
            })
        };
        assert_eq!(p(&black).distance(&p(&white)), 1.0);
    }
}
