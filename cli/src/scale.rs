//! Picture resizing for scoring renditions of other sizes against one reference (an ABR ladder).
//!
//! VMAF compares frames of the same size, so a 384x216 rendition is scored against a 576x324
//! reference after upscaling it to 576x324, as libvmaf users do with FFmpeg's
//! `scale=576:324:flags=bicubic` before `libvmaf`. [`BicubicScaler`] is exactly this, and
//! nothing else:
//!
//! - **Kernel**: separable cubic convolution with B = 0, C = 0.6 (Keys' kernel with
//!   a = -0.6, the parameters swscale's `bicubic` uses by default):
//!   `k(x) = (a+2)|x|³ - (a+3)|x|² + 1` for `|x| ≤ 1`, `a|x|³ - 5a|x|² + 8a|x| - 4a` for
//!   `1 < |x| < 2`, else 0.
//! - **Positions**: pixel centres aligned: output sample `i` of an axis of `n_out` samples reads
//!   the input axis of `n_in` samples at `(i + 0.5) · n_in / n_out - 0.5`. Every plane is
//!   scaled on its own from its stored size to the stored size of the target's plane (chroma
//!   therefore keeps centred siting).
//! - **Downscaling** (a rendition larger than the reference) widens the kernel by
//!   `n_in / n_out` (area-correct anti-aliasing), so it spans `4 · n_in / n_out` taps.
//! - **Edges**: samples outside the plane repeat the nearest edge sample.
//! - **Arithmetic**: per output sample the weights are normalised to sum to 1 (f64); a
//!   horizontal pass into f64, then a vertical pass; the result is rounded to the nearest
//!   integer (halves away from zero) and clamped to `0..=2^bpc - 1`. Bit depth and chroma
//!   format are kept.
//!
//! The arithmetic is plain IEEE f64 in a fixed order, so results are identical on every
//! machine. They are close to, not bit-identical with, swscale's fixed-point bicubic (which
//! also differs between its C and SIMD paths); scores of an upscaled rendition therefore differ
//! slightly from those of a rendition upscaled by FFmpeg. Same-size pictures are never touched.

use vmafcuda::frame::{Picture, PlaneBuf, SampleBuf};

/// Keys' cubic convolution parameter of swscale's default `bicubic` (B = 0, C = 0.6).
pub const BICUBIC_A: f64 = -0.6;

fn cubic(x: f64) -> f64 {
    let a = BICUBIC_A;
    let x = x.abs();
    if x <= 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    } else {
        0.0
    }
}

/// The taps of one output sample: the first input index (before clamping) and the weights.
#[derive(Clone, Debug)]
struct Taps {
    first: isize,
    weights: Vec<f64>,
}

/// Weight tables for resizing one axis from `n_in` to `n_out` samples.
fn axis_taps(n_in: usize, n_out: usize) -> Vec<Taps> {
    let ratio = n_in as f64 / n_out as f64;
    // Downscaling stretches the kernel over `ratio` input samples per output sample.
    let stretch = ratio.max(1.0);
    let support = 2.0 * stretch;
    (0..n_out)
        .map(|i| {
            let centre = (i as f64 + 0.5) * ratio - 0.5;
            let first = (centre - support).floor() as isize + 1;
            let last = (centre + support).ceil() as isize - 1;
            let mut weights: Vec<f64> = (first..=last)
                .map(|j| cubic((j as f64 - centre) / stretch))
                .collect();
            let sum: f64 = weights.iter().sum();
            for w in &mut weights {
                *w /= sum;
            }
            Taps { first, weights }
        })
        .collect()
}

fn clamp_index(j: isize, n: usize) -> usize {
    j.clamp(0, n as isize - 1) as usize
}

/// Resizes one plane to `width` x `height` (same depth).
pub fn resize_plane(plane: &PlaneBuf, width: usize, height: usize) -> PlaneBuf {
    if (plane.width, plane.height) == (width, height) {
        return plane.clone();
    }
    let get: Box<dyn Fn(usize) -> f64 + '_> = match &plane.data {
        SampleBuf::U8(v) => Box::new(move |i| v[i] as f64),
        SampleBuf::U16(v) => Box::new(move |i| v[i] as f64),
    };
    let (w_in, h_in) = (plane.width, plane.height);
    let xs = axis_taps(w_in, width);
    let ys = axis_taps(h_in, height);
    // Horizontal pass: h_in rows of `width` samples.
    let mut rows = vec![0.0f64; h_in * width];
    for y in 0..h_in {
        let src = y * w_in;
        let dst = &mut rows[y * width..(y + 1) * width];
        for (out, t) in dst.iter_mut().zip(&xs) {
            let mut acc = 0.0;
            for (k, w) in t.weights.iter().enumerate() {
                acc += w * get(src + clamp_index(t.first + k as isize, w_in));
            }
            *out = acc;
        }
    }
    // Vertical pass, rounding and clamping to the depth's range.
    let max = ((1u32 << plane.bpc) - 1) as f64;
    let mut out = PlaneBuf::new(width, height, plane.bpc);
    let mut put = |i: usize, v: f64| {
        let v = v.round().clamp(0.0, max);
        match &mut out.data {
            SampleBuf::U8(o) => o[i] = v as u8,
            SampleBuf::U16(o) => o[i] = v as u16,
        }
    };
    for (y, t) in ys.iter().enumerate() {
        for x in 0..width {
            let mut acc = 0.0;
            for (k, w) in t.weights.iter().enumerate() {
                acc += w * rows[clamp_index(t.first + k as isize, h_in) * width + x];
            }
            put(y * width + x, acc);
        }
    }
    out
}

/// Upscales (or downscales) pictures of one size to another with the bicubic kernel described
/// in the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BicubicScaler {
    pub width: usize,
    pub height: usize,
}

impl BicubicScaler {
    /// A scaler to `width` x `height` luma samples.
    pub fn new(width: usize, height: usize) -> Self {
        BicubicScaler { width, height }
    }

    /// `picture` at the target size; its bit depth and chroma format are kept. A picture that
    /// already has the target size is returned unchanged.
    pub fn scale(&self, picture: &Picture) -> Picture {
        if (picture.width(), picture.height()) == (self.width, self.height) {
            return picture.clone();
        }
        let chroma_size = picture.format.chroma_size(self.width, self.height);
        Picture {
            luma: resize_plane(&picture.luma, self.width, self.height),
            chroma: match chroma_size {
                Some((cw, ch)) => picture
                    .chroma
                    .iter()
                    .map(|p| resize_plane(p, cw, ch))
                    .collect(),
                None => Vec::new(),
            },
            format: picture.format,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane_u8(w: usize, h: usize, f: impl Fn(usize, usize) -> u8) -> PlaneBuf {
        let mut v = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                v.push(f(x, y));
            }
        }
        PlaneBuf {
            data: SampleBuf::U8(v),
            width: w,
            height: h,
            bpc: 8,
        }
    }

    fn samples(p: &PlaneBuf) -> Vec<u32> {
        match &p.data {
            SampleBuf::U8(v) => v.iter().map(|&s| s as u32).collect(),
            SampleBuf::U16(v) => v.iter().map(|&s| s as u32).collect(),
        }
    }

    #[test]
    fn kernel_interpolates_and_sums_to_one() {
        assert_eq!(cubic(0.0), 1.0);
        assert_eq!(cubic(1.0), 0.0);
        assert_eq!(cubic(2.0), 0.0);
        for i in 0..10 {
            let t = i as f64 / 10.0;
            let s = cubic(t + 1.0) + cubic(t) + cubic(1.0 - t) + cubic(2.0 - t);
            assert!((s - 1.0).abs() < 1e-12, "{t}: {s}");
        }
    }

    #[test]
    fn flat_plane_stays_flat_up_and_down() {
        let p = plane_u8(37, 21, |_, _| 117);
        for (w, h) in [(64, 48), (19, 18), (37, 40)] {
            let out = resize_plane(&p, w, h);
            assert!(samples(&out).iter().all(|&s| s == 117), "{w}x{h}");
        }
    }

    #[test]
    fn doubling_a_ramp_lands_between_the_samples() {
        // Away from the edges a ramp stays a ramp (within 0.02 of a step for a = -0.6): an
        // 8-step ramp doubled in width is read at x = -0.25, 0.25, 0.75, ... of the input.
        let p = plane_u8(16, 18, |x, _| (x * 8) as u8);
        let out = resize_plane(&p, 32, 18);
        let s = samples(&out);
        for (x, &got) in s.iter().enumerate().take(28).skip(4) {
            let want = ((x as f64 + 0.5) * 0.5 - 0.5) * 8.0;
            assert_eq!(got as f64, want.round(), "x={x}");
        }
    }

    #[test]
    fn overshoot_is_clamped_to_the_bit_depth() {
        let p = PlaneBuf {
            data: SampleBuf::U16((0..40).map(|i| if i % 2 == 0 { 0 } else { 1023 }).collect()),
            width: 20,
            height: 2,
            bpc: 10,
        };
        let out = resize_plane(&p, 47, 5);
        assert!(samples(&out).iter().all(|&s| s <= 1023));
        assert!(samples(&out).contains(&1023) && samples(&out).contains(&0));
    }

    #[test]
    fn same_size_picture_is_untouched() {
        let p = Picture {
            luma: plane_u8(20, 20, |x, y| (x * 7 + y * 3) as u8),
            chroma: vec![
                plane_u8(10, 10, |x, _| x as u8),
                plane_u8(10, 10, |_, y| y as u8),
            ],
            format: vmafcuda::frame::ChromaFormat::Yuv420,
        };
        assert_eq!(BicubicScaler::new(20, 20).scale(&p), p);
        let up = BicubicScaler::new(41, 30).scale(&p);
        assert_eq!((up.width(), up.height()), (41, 30));
        assert_eq!((up.chroma[0].width, up.chroma[0].height), (21, 15));
    }
}
