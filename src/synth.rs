//! Deterministic synthetic clips: the built-in default input of `vmafcuda score` and the frames
//! of `vmafcuda bench`. A textured, moving test pattern as reference; a distorted version with
//! coarse quantisation, a box blur on parts of the frame and deterministic noise, so every
//! feature has something to measure. A hard cut at `cut` changes the content (a second shot).

use crate::frame::{ChromaFormat, Picture, PlaneBuf, SampleBuf};

/// xorshift-style hash of a pixel position and frame, deterministic across platforms.
fn hash(x: u32, y: u32, t: u32, salt: u32) -> u32 {
    let mut h = x
        .wrapping_mul(0x9E37_79B1)
        .wrapping_add(y.wrapping_mul(0x85EB_CA77))
        .wrapping_add(t.wrapping_mul(0xC2B2_AE3D))
        .wrapping_add(salt.wrapping_mul(0x27D4_EB2F));
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^= h >> 12;
    h
}

/// Reference sample at (x, y) of frame `t` in [0, 1).
fn pattern(x: usize, y: usize, t: usize, shot: usize) -> f64 {
    let (xf, yf, tf) = (x as f64, y as f64, t as f64);
    let base = if shot.is_multiple_of(2) {
        // Drifting rings plus a diagonal grating.
        let (cx, cy) = (160.0 + 3.0 * tf, 120.0 + 1.5 * tf);
        let r = ((xf - cx).powi(2) + (yf - cy).powi(2)).sqrt();
        0.5 + 0.25 * (r / 6.0).sin() + 0.15 * ((xf + yf + 4.0 * tf) / 11.0).sin()
    } else {
        // Checkerboard blocks sliding left, with a soft vertical gradient.
        let bx = ((xf + 5.0 * tf) / 24.0).floor() as i64;
        let by = (yf / 24.0).floor() as i64;
        let check = if (bx + by) % 2 == 0 { 0.7 } else { 0.3 };
        check * 0.8 + 0.2 * (yf / 400.0).min(1.0)
    };
    let grain = (hash(x as u32, y as u32, t as u32, 7) % 1000) as f64 / 1000.0 - 0.5;
    (base + 0.04 * grain).clamp(0.0, 0.999)
}

/// Parameters of a synthetic clip.
#[derive(Clone, Copy, Debug)]
pub struct SynthClip {
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
    pub frames: usize,
    /// First frame of the second shot (a hard cut), or `frames` for none.
    pub cut: usize,
}

impl SynthClip {
    /// The default input of `vmafcuda score`: 576x324, 8-bit, 48 frames, a cut at frame 24.
    pub const DEFAULT: SynthClip = SynthClip {
        width: 576,
        height: 324,
        bpc: 8,
        frames: 48,
        cut: 24,
    };

    /// A plane whose row `y` is made by `row(y, samples)`, `samples` values in [0, 1), rows
    /// made in parallel (the bench makes 4K frames: one thread would take seconds a frame).
    fn plane(&self, w: usize, h: usize, row: impl Fn(usize, &mut [f64]) + Sync) -> PlaneBuf {
        use rayon::prelude::*;
        let max = ((1u32 << self.bpc) - 1) as f64;
        let mut p = PlaneBuf::new(w, h, self.bpc);
        let to_sample = |v: f64| (v * (max + 1.0)).min(max);
        match &mut p.data {
            SampleBuf::U8(v) => v.par_chunks_mut(w).enumerate().for_each(|(y, out)| {
                let mut values = vec![0.0; w];
                row(y, &mut values);
                for (s, &v) in out.iter_mut().zip(&values) {
                    *s = to_sample(v) as u8;
                }
            }),
            SampleBuf::U16(v) => v.par_chunks_mut(w).enumerate().for_each(|(y, out)| {
                let mut values = vec![0.0; w];
                row(y, &mut values);
                for (s, &v) in out.iter_mut().zip(&values) {
                    *s = to_sample(v) as u16;
                }
            }),
        }
        p
    }

    fn picture(&self, t: usize, distorted: bool) -> Picture {
        let shot = usize::from(t >= self.cut);
        let (w, h) = (self.width, self.height);
        let luma = self.plane(w, h, |y, out| {
            let base: Vec<f64> = (0..w).map(|x| pattern(x, y, t, shot)).collect();
            for (x, o) in out.iter_mut().enumerate() {
                let v = base[x];
                if !distorted {
                    *o = v;
                    continue;
                }
                // A 9-tap horizontal box blur on the left half (strong detail loss), coarse
                // quantisation everywhere, a little noise: detail loss, banding and noise,
                // varying by position.
                let v = if x < w / 2 {
                    (0..9)
                        .map(|k| base[(x + k).saturating_sub(4).min(w - 1)])
                        .sum::<f64>()
                        / 9.0
                } else {
                    v
                };
                let q = (v * 12.0).round() / 12.0;
                let noise = (hash(x as u32, y as u32, t as u32, 99) % 1000) as f64 / 1000.0 - 0.5;
                *o = (q + 0.08 * noise).clamp(0.0, 0.999);
            }
        });
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let chroma = vec![
            self.plane(cw, ch, |y, out| {
                for (x, o) in out.iter_mut().enumerate() {
                    *o = 0.5 + 0.1 * ((x + t) as f64 / 17.0).sin() + 0.02 * (y as f64 / ch as f64);
                }
            }),
            self.plane(cw, ch, |y, out| {
                for (x, o) in out.iter_mut().enumerate() {
                    *o = 0.5 - 0.1 * ((y + t) as f64 / 13.0).cos() + 0.02 * (x as f64 / cw as f64);
                }
            }),
        ];
        Picture {
            luma,
            chroma,
            format: ChromaFormat::Yuv420,
        }
    }

    /// Reference and distorted pictures of frame `t`.
    pub fn pair(&self, t: usize) -> (Picture, Picture) {
        (self.picture(t, false), self.picture(t, true))
    }
}
