//! Deterministic synthetic worst cases for ADM (shared by the CPU tests against libvmaf's
//! AVX-512 build and the GPU tests against the CPU): thin strong lines, edges and noise.

pub struct SplitMix(pub u64);
impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Smooth gradient with thin high-contrast lines, diagonals and checker patches.
pub fn synth_lines(rng: &mut SplitMix, w: usize, h: usize, maxv: u32, n: usize) -> Vec<u16> {
    let mut img: Vec<u16> = (0..w * h)
        .map(|i| {
            let (x, y) = ((i % w) as f64 / w as f64, (i / w) as f64 / h as f64);
            (maxv as f64 * (0.3 + 0.4 * x * y)) as u16
        })
        .collect();
    for _ in 0..n {
        let val = if rng.below(2) == 0 { maxv as u16 } else { 0 };
        let thick = [1, 1, 1, 2, 3][rng.below(5) as usize];
        let (x0, y0) = (rng.below(w as u64) as usize, rng.below(h as u64) as usize);
        let len = 1 + rng.below(w.max(h) as u64) as usize;
        match rng.below(4) {
            0 => (y0..(y0 + thick).min(h))
                .for_each(|y| (x0..(x0 + len).min(w)).for_each(|x| img[y * w + x] = val)),
            1 => (x0..(x0 + thick).min(w))
                .for_each(|x| (y0..(y0 + len).min(h)).for_each(|y| img[y * w + x] = val)),
            2 => (0..len)
                .filter(|t| x0 + t < w && y0 + t < h)
                .for_each(|t| img[(y0 + t) * w + x0 + t] = val),
            _ => {
                let s = 2 + rng.below(10) as usize;
                for y in y0..(y0 + s).min(h) {
                    for x in x0..(x0 + s).min(w) {
                        img[y * w + x] = if (x + y) % 2 == 1 { maxv as u16 } else { 0 };
                    }
                }
            }
        }
    }
    img
}

/// A distorted version: noise, 3x3 blur, sharpening or a one-pixel shift.
pub fn synth_distort(rng: &mut SplitMix, img: &[u16], w: usize, h: usize, maxv: u32) -> Vec<u16> {
    let mean3 = |x: usize, y: usize| {
        let (mut s, mut n) = (0i64, 0i64);
        for yy in y.saturating_sub(1)..(y + 2).min(h) {
            for xx in x.saturating_sub(1)..(x + 2).min(w) {
                s += img[yy * w + xx] as i64;
                n += 1;
            }
        }
        (s, n)
    };
    let clamp = |v: i64| v.clamp(0, maxv as i64) as u16;
    match rng.below(4) {
        0 => {
            let amp = (maxv / 12) as i64;
            img.iter()
                .map(|&v| clamp(v as i64 + rng.below(2 * amp as u64 + 1) as i64 - amp))
                .collect()
        }
        1 => (0..w * h)
            .map(|i| {
                let (s, n) = mean3(i % w, i / w);
                (s / n) as u16
            })
            .collect(),
        2 => (0..w * h)
            .map(|i| {
                let (s, n) = mean3(i % w, i / w);
                let v = img[i] as f64;
                clamp((v + 1.5 * (v - s as f64 / n as f64)) as i64)
            })
            .collect(),
        _ => (0..w * h)
            .map(|i| img[(i / w) * w + (i % w).saturating_sub(1)])
            .collect(),
    }
}
