//! libvmaf's integer motion feature (`integer_motion.c`, libvmaf 3.2.0), on the CPU.
//!
//! For frame `n >= 1` of a session the score is the mean absolute value of the 5x5-blurred
//! difference between reference luma `n-1` and `n`:
//!
//! * `d = prev - cur` per sample; vertical 5-tap pass over `d` (rows mirrored at the edges),
//!   rounded and shifted right by `bpc`; horizontal 5-tap pass over that (columns mirrored),
//!   rounded and shifted right by 16; absolute values summed (`u32` per row, `u64` per frame).
//! * `sad_score = min(sum / 256 / (w * h), 10000)`, 0 for frame 0.
//!
//! `integer_motion2` / `integer_motion3` are written by libvmaf only at flush, from the list of
//! sad scores; with default options they depend on frames `i` and `i + 1` only, so this
//! extractor hands them out one frame late (see [`MotionUpdate`]).
//!
//! The blur is linear, but libvmaf rounds after each pass of the *difference*: blurring each
//! frame separately and subtracting does not give the same numbers.

use super::simd::SimdLevel;
use crate::frame::{Plane, Samples};

/// The 5-tap filter of libvmaf's integer motion (sums to 65536, symmetric).
pub const FILTER: [i32; 5] = [3571, 16004, 26386, 16004, 3571];

/// libvmaf's default `motion_max_val`: every motion score is clipped to it.
const MOTION_MAX_VAL: f64 = 10000.0;
/// libvmaf's default `motion_blend_factor` and `motion_blend_offset` (used by motion3).
const MOTION_BLEND_FACTOR: f64 = 1.0;
const MOTION_BLEND_OFFSET: f64 = 40.0;

/// What becomes known when frame `n` (session-relative index) is pushed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotionUpdate {
    /// Session-relative index `n` of the frame just pushed.
    pub index: usize,
    /// `VMAF_integer_feature_motion_sad_score` of frame `n` (motion between `n-1` and `n`;
    /// 0 for `n == 0`).
    pub sad: f64,
    /// `(integer_motion2, integer_motion3)` of frame `n - 1`; `None` for `n == 0`.
    pub previous: Option<(f64, f64)>,
}

/// The values still owed at the end of a session: those of its last frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotionFinal {
    /// Session-relative index of the last frame.
    pub index: usize,
    /// `integer_motion2` of the last frame (its own sad score; 0 in a 1-frame session).
    pub motion2: f64,
    /// `integer_motion3` of the last frame (0 in a 1-frame session).
    pub motion3: f64,
}

/// The previous reference luma, tightly packed.
enum PrevLuma {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

/// Five rows of `prev - cur`, row `r` in slot `r % 5`.
enum DiffRows {
    /// Up to 14 bits: a difference, and the sum of two, fits `i16`, which vectorises best.
    Narrow([Vec<i16>; 5]),
    /// 15 and 16 bits.
    Wide([Vec<i32>; 5]),
}

/// Temporal state of one session: the previous reference luma, the last sad score, scratch rows.
pub struct MotionExtractor {
    width: usize,
    height: usize,
    bpc: u32,
    prev: PrevLuma,
    /// Frames pushed so far.
    frames: usize,
    /// sad score of the last frame pushed.
    last_sad: f64,
    diff: DiffRows,
    /// Vertically filtered row, with two mirrored samples on either side.
    y_row: Vec<i32>,
    simd: SimdLevel,
}

impl MotionExtractor {
    /// State for a session of `width` x `height` luma planes of depth `bpc` (8..=16; panics
    /// otherwise, callers validate input geometry first).
    pub fn new(width: usize, height: usize, bpc: u32) -> Self {
        Self::new_with_prev(width, height, bpc, true)
    }

    fn new_with_prev(width: usize, height: usize, bpc: u32, keep_prev: bool) -> Self {
        assert!(
            (8..=16).contains(&bpc),
            "motion: bit depth {bpc} out of range"
        );
        let n = if keep_prev { width * height } else { 0 };
        let prev = if bpc == 8 {
            PrevLuma::U8(vec![0; n])
        } else {
            PrevLuma::U16(vec![0; n])
        };
        let diff = if bpc <= 14 {
            DiffRows::Narrow(std::array::from_fn(|_| vec![0; width]))
        } else {
            DiffRows::Wide(std::array::from_fn(|_| vec![0; width]))
        };
        MotionExtractor {
            width,
            height,
            bpc,
            prev,
            frames: 0,
            last_sad: 0.0,
            diff,
            y_row: vec![0; width + 4],
            simd: SimdLevel::selected(),
        }
    }

    /// Panics unless `plane` has this extractor's size and depth (a caller bug: inputs are
    /// validated before they reach the extractors).
    fn assert_fits(&self, plane: &Plane) {
        assert!(
            (plane.width, plane.height, plane.bpc) == (self.width, self.height, self.bpc),
            "motion: plane is {}x{} {}-bit, extractor was made for {}x{} {}-bit",
            plane.width,
            plane.height,
            plane.bpc,
            self.width,
            self.height,
            self.bpc
        );
    }

    /// Feeds the next reference luma (motion uses only the reference). The plane must be
    /// `width` x `height` at the depth given to [`MotionExtractor::new`]; a plane of another
    /// size or depth is a caller bug and panics.
    pub fn push(&mut self, reference: &Plane) -> MotionUpdate {
        self.assert_fits(reference);
        // Either way, the stored previous luma becomes this frame's.
        let sum = if self.frames == 0 {
            self.store_prev(reference);
            None
        } else {
            Some(self.sad_sum(reference))
        };
        self.advance(sum)
    }

    /// Temporal state only, for frames whose sad sum is computed elsewhere (the GPU): no
    /// previous-frame buffers. Feed it with [`MotionExtractor::push_sum`] only.
    pub fn scores_only(width: usize, height: usize, bpc: u32) -> Self {
        MotionExtractor {
            width,
            height,
            bpc,
            prev: PrevLuma::U8(Vec::new()),
            frames: 0,
            last_sad: 0.0,
            diff: DiffRows::Narrow(std::array::from_fn(|_| Vec::new())),
            y_row: Vec::new(),
            simd: SimdLevel::selected(),
        }
    }

    /// Like [`MotionExtractor::push`] for a frame whose integer sum of |blurred difference|
    /// to the previous frame was computed elsewhere (`None` for a session's first frame).
    pub fn push_sum(&mut self, sum: Option<u64>) -> MotionUpdate {
        self.advance(if self.frames == 0 { None } else { sum })
    }

    /// Scratch rows only, for [`MotionExtractor::sad_between`] (frames of a batch on worker
    /// threads): no previous-frame buffer and no session.
    pub fn scratch(width: usize, height: usize, bpc: u32) -> Self {
        MotionExtractor::new_with_prev(width, height, bpc, false)
    }

    /// The integer sum of |blurred(`prev` - `cur`)| (what [`MotionExtractor::push`] computes
    /// against its stored previous frame), from two planes of this extractor's geometry; only
    /// the scratch rows are used, so frames of a batch can each take their own extractor.
    pub fn sad_between(&mut self, prev: &Plane, cur: &Plane) -> u64 {
        self.assert_fits(prev);
        self.assert_fits(cur);
        self.sad_sum_from(cur, Some(prev))
    }

    /// The previous frame's reference luma held for the next push (`None` before the first
    /// push of a session, or without buffers).
    pub fn stored_prev(&self) -> Option<Plane<'_>> {
        let samples = match &self.prev {
            PrevLuma::U8(v) if v.len() == self.width * self.height => Samples::U8(v),
            PrevLuma::U16(v) if v.len() == self.width * self.height => Samples::U16(v),
            _ => return None,
        };
        (self.frames > 0).then_some(Plane {
            samples,
            width: self.width,
            height: self.height,
            stride: self.width,
            bpc: self.bpc,
        })
    }

    /// Like [`MotionExtractor::push`], returning the frame's integer sum (`None` for the
    /// session's first frame): what the GPU hands back, for the emulated GPU.
    pub(crate) fn push_returning_sum(&mut self, reference: &Plane) -> Option<u64> {
        let sum = if self.frames == 0 {
            self.store_prev(reference);
            None
        } else {
            Some(self.sad_sum(reference))
        };
        self.advance(sum);
        sum
    }

    /// A full extractor carrying on the session of this one (made with
    /// [`MotionExtractor::scores_only`] and fed on the GPU): same frame count and last sad
    /// score. If frames were pushed, [`MotionExtractor::prime`] with the last one must come
    /// before the next push.
    pub(crate) fn resume_on_host(self) -> MotionExtractor {
        let mut m = MotionExtractor::new(self.width, self.height, self.bpc);
        m.simd = self.simd;
        m.frames = self.frames;
        m.last_sad = self.last_sad;
        m
    }

    /// Sets the previous reference luma (the session's last frame) without counting a frame.
    pub(crate) fn prime(&mut self, reference: &Plane) {
        self.assert_fits(reference);
        self.store_prev(reference);
    }

    /// libvmaf's sad score of a frame from its integer sum.
    pub fn sad_from_sum(sum: u64, width: usize, height: usize) -> f64 {
        let pixels = (width * height) as f64;
        min(sum as f64 / 256.0 / pixels, MOTION_MAX_VAL)
    }

    fn advance(&mut self, sum: Option<u64>) -> MotionUpdate {
        let index = self.frames;
        let sad = match sum {
            Some(sum) if index > 0 => Self::sad_from_sum(sum, self.width, self.height),
            _ => 0.0,
        };

        let previous = match index {
            0 => None,
            // Frame 0: motion2 is 0; motion3 is libvmaf's "stamp", the processed sad of frame 1
            // (written only when the session has at least two frames, which it now has).
            1 => Some((0.0, processed(sad))),
            // Frame n-1 >= 1 has a successor: motion2 = min(sad[n-1], sad[n]).
            _ => {
                let m2 = min(self.last_sad, sad);
                Some((m2, processed(m2)))
            }
        };
        self.last_sad = sad;
        self.frames += 1;
        MotionUpdate {
            index,
            sad,
            previous,
        }
    }

    /// Ends the session: motion2/motion3 of the last frame (`None` if nothing was pushed).
    pub fn flush(&mut self) -> Option<MotionFinal> {
        match self.frames {
            0 => None,
            // A lone frame: motion2 = 0 and the stamp value is 0 (no frame 1).
            1 => Some(MotionFinal {
                index: 0,
                motion2: 0.0,
                motion3: 0.0,
            }),
            // The last frame has no successor: motion2 is its own sad score.
            n => Some(MotionFinal {
                index: n - 1,
                motion2: self.last_sad,
                motion3: processed(self.last_sad),
            }),
        }
    }

    fn store_prev(&mut self, plane: &Plane) {
        let w = self.width;
        match (&mut self.prev, plane.samples) {
            (PrevLuma::U8(dst), Samples::U8(_)) => {
                for (y, d) in dst.chunks_exact_mut(w).enumerate() {
                    d.copy_from_slice(plane.row_u8(y));
                }
            }
            (PrevLuma::U16(dst), Samples::U16(_)) => {
                for (y, d) in dst.chunks_exact_mut(w).enumerate() {
                    d.copy_from_slice(plane.row_u16(y));
                }
            }
            _ => panic!(
                "motion: plane storage does not match bit depth {}",
                self.bpc
            ),
        }
    }

    /// The instruction-set level the sad sums run with.
    pub fn simd_level(&self) -> SimdLevel {
        self.simd
    }

    /// Makes the sad sums run with `level`, or the best level below it that the CPU
    /// supports; returns the level now in use. Every level gives identical sums.
    pub fn set_simd_level(&mut self, level: SimdLevel) -> SimdLevel {
        self.simd = level.capped();
        self.simd
    }

    /// Row `r` of `prev - cur` into its ring slot, `prev` the given plane or else the stored
    /// previous frame, whose row `r` then becomes `cur`'s (each row is loaded exactly once
    /// per frame, so this saves a separate copy pass).
    #[inline(always)]
    fn load_diff_row(&mut self, cur: &Plane, prev: Option<&Plane>, r: usize) {
        let w = self.width;
        match (prev, &mut self.prev, cur.samples, &mut self.diff) {
            (Some(p), _, Samples::U8(_), DiffRows::Narrow(rows)) => {
                diff_row_narrow(p.row_u8(r), cur.row_u8(r), &mut rows[r % 5]);
            }
            (Some(p), _, Samples::U16(_), DiffRows::Narrow(rows)) => {
                diff_row_narrow(p.row_u16(r), cur.row_u16(r), &mut rows[r % 5]);
            }
            (Some(p), _, Samples::U16(_), DiffRows::Wide(rows)) => {
                diff_row_wide(p.row_u16(r), cur.row_u16(r), &mut rows[r % 5]);
            }
            (None, PrevLuma::U8(p), Samples::U8(_), DiffRows::Narrow(rows)) => {
                let (p, c) = (&mut p[r * w..][..w], cur.row_u8(r));
                diff_row_narrow(p, c, &mut rows[r % 5]);
                p.copy_from_slice(c);
            }
            (None, PrevLuma::U16(p), Samples::U16(_), DiffRows::Narrow(rows)) => {
                let (p, c) = (&mut p[r * w..][..w], cur.row_u16(r));
                diff_row_narrow(p, c, &mut rows[r % 5]);
                p.copy_from_slice(c);
            }
            (None, PrevLuma::U16(p), Samples::U16(_), DiffRows::Wide(rows)) => {
                let (p, c) = (&mut p[r * w..][..w], cur.row_u16(r));
                diff_row_wide(p, c, &mut rows[r % 5]);
                p.copy_from_slice(c);
            }
            _ => panic!(
                "motion: plane storage does not match bit depth {}",
                self.bpc
            ),
        }
    }

    /// The integer sum of |blurred(prev - cur)| over the frame, at the extractor's level.
    fn sad_sum(&mut self, cur: &Plane) -> u64 {
        self.sad_sum_from(cur, None)
    }

    /// [`MotionExtractor::sad_sum`] against `prev`, or the stored previous frame (which then
    /// becomes `cur`).
    fn sad_sum_from(&mut self, cur: &Plane, prev: Option<&Plane>) -> u64 {
        match self.simd {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `simd` is only ever a level the running CPU supports (`capped`,
            // `selected`), and `sad_sum_avx2` needs nothing beyond AVX2.
            SimdLevel::Avx2 => unsafe { self.sad_sum_avx2(cur, prev) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX-512 F/BW/DQ/VL.
            SimdLevel::Avx512 | SimdLevel::Avx512Vnni => unsafe { self.sad_sum_avx512(cur, prev) },
            _ => self.sad_sum_impl(cur, prev),
        }
    }

    /// [`sad_sum_impl`](Self::sad_sum_impl) compiled with AVX2 (everything is inlined into it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn sad_sum_avx2(&mut self, cur: &Plane, prev: Option<&Plane>) -> u64 {
        self.sad_sum_impl(cur, prev)
    }

    /// [`sad_sum_impl`](Self::sad_sum_impl) compiled with AVX-512.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    fn sad_sum_avx512(&mut self, cur: &Plane, prev: Option<&Plane>) -> u64 {
        self.sad_sum_impl(cur, prev)
    }

    #[inline(always)]
    fn sad_sum_impl(&mut self, cur: &Plane, prev: Option<&Plane>) -> u64 {
        let (w, h, bpc) = (self.width, self.height, self.bpc);
        let mut next_row = 0; // next difference row to compute
        let mut sad = 0u64;
        for i in 0..h {
            while next_row <= (i + 2).min(h - 1) {
                self.load_diff_row(cur, prev, next_row);
                next_row += 1;
            }
            // Mirrored rows i-2..=i+2 all lie in the window i-2..=i+2 clipped to the plane.
            let slots = [-2, -1, 0, 1, 2].map(|k| mirror(i as isize + k, h) % 5);
            let out = &mut self.y_row[2..w + 2];
            let any = match &self.diff {
                DiffRows::Narrow(rows) => vertical_narrow(slots.map(|s| &rows[s][..]), out, bpc),
                DiffRows::Wide(rows) => vertical_wide(slots.map(|s| &rows[s][..]), out, bpc),
            };
            // An all-zero row contributes nothing (libvmaf skips it too).
            if any {
                pad_mirrored(&mut self.y_row, w);
                sad += horizontal_abs_sum(&self.y_row) as u64;
            }
        }
        sad
    }
}

/// libvmaf's `MIN` macro.
#[inline]
fn min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// motion3 of a frame from its motion2 (libvmaf's `motion_blend`, then the clip).
fn processed(motion2: f64) -> f64 {
    let blended = motion2 * MOTION_BLEND_FACTOR
        + (1.0 - MOTION_BLEND_FACTOR) * min(MOTION_BLEND_OFFSET, motion2);
    min(blended, MOTION_MAX_VAL)
}

/// libvmaf's edge mirror (`-i` before the start, `2 * size - i - 2` past the end). For planes
/// smaller than 3 samples that still falls outside (libvmaf then reads out of bounds; it never
/// gets there: frames below 17x17 are refused): reflect again, so nothing panics.
#[inline]
fn mirror(idx: isize, size: usize) -> usize {
    let n = size as isize;
    if n <= 1 {
        return 0;
    }
    let mut i = idx;
    loop {
        if i < 0 {
            i = -i;
        } else if i >= n {
            i = 2 * n - i - 2;
        } else {
            return i as usize;
        }
    }
}

#[inline(always)]
fn diff_row_narrow<T: Copy + Into<i32>>(prev: &[T], cur: &[T], out: &mut [i16]) {
    for ((o, &p), &c) in out.iter_mut().zip(prev).zip(cur) {
        *o = (p.into() - c.into()) as i16;
    }
}

#[inline(always)]
fn diff_row_wide(prev: &[u16], cur: &[u16], out: &mut [i32]) {
    for ((o, &p), &c) in out.iter_mut().zip(prev).zip(cur) {
        *o = p as i32 - c as i32;
    }
}

/// Vertical pass for up to 14 bits: `out = (sum f[k] * rows[k] + 2^(bpc-1)) >> bpc`, the sum
/// fitting `i32`; returns whether any output is non-zero.
#[inline(always)]
fn vertical_narrow(rows: [&[i16]; 5], out: &mut [i32], bpc: u32) -> bool {
    let round = 1i32 << (bpc - 1);
    let n = out.len();
    let [r0, r1, r2, r3, r4] = rows.map(|r| &r[..n]);
    let mut any = 0i32;
    for j in 0..n {
        // Symmetric taps; i16 products let the compiler use 16-bit multiplies.
        let a = r0[j] + r4[j];
        let b = r1[j] + r3[j];
        let acc = FILTER[0] * a as i32 + FILTER[1] * b as i32 + FILTER[2] * r2[j] as i32;
        let v = (acc + round) >> bpc;
        out[j] = v;
        any |= v;
    }
    any != 0
}

/// Vertical pass for 15 and 16 bits, same result as [`vertical_narrow`].
///
/// With |d| < 2^16 the 5-tap sum can reach 2^32, which overflows `i32` (libvmaf uses `i64`).
/// Since `f[0]` is odd and the other taps are even, half of the sum is exactly
/// `1785 a + (a >> 1) + 8002 b + 13193 c` (`a = d0 + d4`, `b = d1 + d3`, `c = d2`), which fits,
/// and `(s + 2^(n-1)) >> n == (floor(s/2) + 2^(n-2)) >> (n-1)`.
#[inline(always)]
fn vertical_wide(rows: [&[i32]; 5], out: &mut [i32], bpc: u32) -> bool {
    let round = 1i32 << (bpc - 2);
    let shift = bpc - 1;
    let n = out.len();
    let [r0, r1, r2, r3, r4] = rows.map(|r| &r[..n]);
    let mut any = 0i32;
    for j in 0..n {
        let v = (half_tap_sum(r0[j], r1[j], r2[j], r3[j], r4[j]) + round) >> shift;
        out[j] = v;
        any |= v;
    }
    any != 0
}

/// `floor(sum f[k] * x[k] / 2)`, exact and within `i32` for |x| <= 65535.
#[inline(always)]
fn half_tap_sum(x0: i32, x1: i32, x2: i32, x3: i32, x4: i32) -> i32 {
    let a = x0 + x4;
    let b = x1 + x3;
    (FILTER[0] / 2) * a + (a >> 1) + (FILTER[1] / 2) * b + (FILTER[2] / 2) * x2
}

/// Writes libvmaf's mirrored columns -2, -1, w, w+1 around `y[2..w+2]`.
#[inline(always)]
fn pad_mirrored(y: &mut [i32], w: usize) {
    y[0] = y[2 + mirror(-2, w)];
    y[1] = y[2 + mirror(-1, w)];
    y[w + 2] = y[2 + mirror(w as isize, w)];
    y[w + 3] = y[2 + mirror(w as isize + 1, w)];
}

/// Horizontal pass with rounding shift by 16, summing absolute values into a `u32` as libvmaf
/// does per row. |y| <= 65535, so the halved sum of [`vertical_wide`] applies.
#[inline(always)]
fn horizontal_abs_sum(y: &[i32]) -> u32 {
    let n = y.len() - 4;
    let (y0, y1, y2, y3, y4) = (&y[..n], &y[1..n + 1], &y[2..n + 2], &y[3..n + 3], &y[4..]);
    let mut sum = 0u32;
    for j in 0..n {
        let v = (half_tap_sum(y0[j], y1[j], y2[j], y3[j], y4[j]) + (1 << 14)) >> 15;
        sum = sum.wrapping_add(v.unsigned_abs());
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::PlaneBuf;

    /// libvmaf's pipeline written out directly with 64-bit sums.
    fn reference_sad(prev: &[u32], cur: &[u32], w: usize, h: usize, bpc: u32) -> u64 {
        let mut sad = 0u64;
        let mut y = vec![0i64; w];
        for i in 0..h {
            for (j, yj) in y.iter_mut().enumerate() {
                let mut acc = 0i64;
                for (k, &f) in FILTER.iter().enumerate() {
                    let r = mirror(i as isize - 2 + k as isize, h);
                    acc += f as i64 * (prev[r * w + j] as i64 - cur[r * w + j] as i64);
                }
                *yj = (acc + (1 << (bpc - 1))) >> bpc;
            }
            let mut row = 0u32;
            for j in 0..w {
                let mut acc = 0i64;
                for (k, &f) in FILTER.iter().enumerate() {
                    acc += f as i64 * y[mirror(j as isize - 2 + k as isize, w)];
                }
                row = row.wrapping_add((((acc + (1 << 15)) >> 16) as i32).unsigned_abs());
            }
            sad += row as u64;
        }
        sad
    }

    fn plane(data: &[u32], w: usize, h: usize, bpc: u32) -> PlaneBuf {
        let mut p = PlaneBuf::new(w, h, bpc);
        match &mut p.data {
            crate::frame::SampleBuf::U8(v) => {
                v.iter_mut().zip(data).for_each(|(o, &x)| *o = x as u8)
            }
            crate::frame::SampleBuf::U16(v) => {
                v.iter_mut().zip(data).for_each(|(o, &x)| *o = x as u16)
            }
        }
        p
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
    }

    #[test]
    fn blurred_difference_matches_64bit_reference_at_every_depth_and_extreme() {
        let mut rng = Lcg(7);
        for &bpc in &[8u32, 9, 10, 12, 14, 15, 16] {
            let max = (1u32 << bpc) - 1;
            for &(w, h) in &[(1, 1), (2, 2), (3, 5), (7, 3), (19, 19), (33, 18), (64, 4)] {
                for mode in 0..4 {
                    // Random, a full-swing cut (all max vs all 0), random extremes, thirds.
                    let gen = |rng: &mut Lcg, hi: bool| -> Vec<u32> {
                        (0..w * h)
                            .map(|_| match mode {
                                0 => rng.next() % (max + 1),
                                1 => max * hi as u32,
                                2 => max * (rng.next() & 1),
                                _ => (rng.next() % 3) * (max / 2),
                            })
                            .collect()
                    };
                    for swap in [false, true] {
                        let a = gen(&mut rng, !swap);
                        let b = gen(&mut rng, swap);
                        let expected = reference_sad(&a, &b, w, h, bpc);
                        let mut m = MotionExtractor::new(w, h, bpc);
                        let pa = plane(&a, w, h, bpc);
                        let pb = plane(&b, w, h, bpc);
                        m.push(&pa.view());
                        let u = m.push(&pb.view());
                        let want = min(expected as f64 / 256.0 / (w * h) as f64, MOTION_MAX_VAL);
                        assert_eq!(u.sad, want, "bpc {bpc} {w}x{h} mode {mode}");
                    }
                }
            }
        }
    }

    #[test]
    fn session_bookkeeping_follows_libvmaf_flush() {
        let (w, h) = (8, 8);
        let frames: Vec<PlaneBuf> = (0..4)
            .map(|k| plane(&vec![k * 40; w * h], w, h, 8))
            .collect();
        // A lone frame: everything is 0.
        let mut m = MotionExtractor::new(w, h, 8);
        let u = m.push(&frames[0].view());
        assert_eq!((u.index, u.sad, u.previous), (0, 0.0, None));
        let f = m.flush().expect("one frame");
        assert_eq!((f.index, f.motion2, f.motion3), (0, 0.0, 0.0));

        // Two frames: motion3 of frame 0 is the sad of frame 1; motion2 of frame 1 is its sad.
        let mut m = MotionExtractor::new(w, h, 8);
        m.push(&frames[0].view());
        let u = m.push(&frames[2].view());
        assert!(u.sad > 0.0);
        assert_eq!(u.previous, Some((0.0, u.sad)));
        let f = m.flush().expect("two frames");
        assert_eq!((f.index, f.motion2, f.motion3), (1, u.sad, u.sad));

        // Longer: motion2 of frame i is min(sad i, sad i+1).
        let mut m = MotionExtractor::new(w, h, 8);
        m.push(&frames[0].view());
        let s1 = m.push(&frames[2].view()).sad; // step 80
        let u2 = m.push(&frames[3].view()); // step 40
        assert_eq!(u2.previous, Some((u2.sad, u2.sad)));
        assert!(u2.sad < s1);
        assert!(m.flush().is_some());
        assert!(MotionExtractor::new(w, h, 8).flush().is_none());
    }
}
