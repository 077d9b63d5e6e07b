//! One level of libvmaf's integer Daubechies-2 DWT: a vertical 4-tap pass over the source rows
//! feeding a decimating horizontal 4-tap pass, producing the a (lo/lo), v (lo vertical, hi
//! horizontal), h (hi vertical, lo horizontal) and d (hi/hi) bands at half resolution.
//!
//! Output row `i` reads source rows `2i-1, 2i, 2i+1, 2i+2`, output column `j` reads columns
//! `2j-1 .. 2j+2`; out-of-range indices mirror: `-1 -> 1`, `n -> n-1`, `n+1 -> n-2`.

use super::consts::{HI, LO, LO_SUM, S123_HP_ADD, S123_HP_SHIFT, S123_VP_ADD, S123_VP_SHIFT};
use super::{Band, Bands, Coef, Rect};
use crate::features::simd::SimdLevel;

/// Mirrored index as libvmaf's DWT uses it (`k` in `-1 ..= n + 1`).
#[inline]
fn mirror(k: isize, n: usize) -> usize {
    if k < 0 {
        (-k) as usize
    } else if k as usize >= n {
        2 * n - k as usize - 1
    } else {
        k as usize
    }
}

/// Row/column taps of output index `i` over an input of length `n`.
#[inline]
fn taps(i: usize, n: usize) -> [usize; 4] {
    let c = 2 * i as isize;
    [
        mirror(c - 1, n),
        mirror(c, n),
        mirror(c + 1, n),
        mirror(c + 2, n),
    ]
}

/// Splits a row into its even and odd (shifted by one) phases with libvmaf's mirroring so the
/// horizontal pass becomes `out[j] = f0*odd[j] + f1*even[j] + f2*odd[j+1] + f3*even[j+1]`:
/// `even[m] = row[2m]`, `odd[m] = row[2m-1]` (`m` in `0 ..= out_len`). `odd0` replaces
/// `row[-1]` (normally `row[1]`).
#[inline(always)]
fn split_phases<T: Copy>(row: &[T], out_len: usize, odd0: T, even: &mut [T], odd: &mut [T]) {
    let n = row.len();
    let even = &mut even[..=out_len];
    let odd = &mut odd[..=out_len];
    let pairs = n / 2;
    for ((e, o), pair) in even[..pairs]
        .iter_mut()
        .zip(odd[1..=pairs].iter_mut())
        .zip(row.chunks_exact(2))
    {
        *e = pair[0];
        *o = pair[1];
    }
    odd[0] = odd0;
    for (m, e) in even.iter_mut().enumerate().skip(pairs) {
        *e = row[mirror(2 * m as isize, n)];
    }
    for (m, o) in odd.iter_mut().enumerate().skip(pairs + 1) {
        *o = row[mirror(2 * m as isize - 1, n)];
    }
}

/// libvmaf's AVX-512 horizontal DWT loops compute whole vector blocks from column 1 and, when
/// the last output column falls inside a block (`(out_len - 1) % block == 0`), they read that
/// column's taps linearly past the end of the row instead of mirroring. `tail` are the values
/// found there (`row[n]`, `row[n + 1]`); they replace the mirrored taps of the last output.
#[inline(always)]
fn apply_tail<T: Copy>(n: usize, out_len: usize, tail: [T; 2], even: &mut [T], odd: &mut [T]) {
    if n.is_multiple_of(2) {
        even[out_len] = tail[0];
    } else {
        odd[out_len] = tail[0];
        even[out_len] = tail[1];
    }
}

/// Input samples of scale 0.
pub(super) trait Sample: Copy + Send + Sync {
    fn widen(self) -> i32;
    /// The row for the vector kernel.
    #[cfg(target_arch = "x86_64")]
    fn row(row: &[Self]) -> super::dwt_x86::SampleRow<'_>;
}
impl Sample for u8 {
    #[inline(always)]
    fn widen(self) -> i32 {
        self as i32
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn row(row: &[u8]) -> super::dwt_x86::SampleRow<'_> {
        super::dwt_x86::SampleRow::U8(row)
    }
}
impl Sample for u16 {
    #[inline(always)]
    fn widen(self) -> i32 {
        self as i32
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn row(row: &[u16]) -> super::dwt_x86::SampleRow<'_> {
        super::dwt_x86::SampleRow::U16(row)
    }
}

/// Scratch rows of the DWT (sized for the widest input).
#[derive(Default)]
pub(super) struct DwtScratch {
    lo16: Vec<i16>,
    hi16: Vec<i16>,
    even16: Vec<i16>,
    odd16: Vec<i16>,
    lo32: [Vec<i32>; 2],
    hi32: [Vec<i32>; 2],
    even32: Vec<i32>,
    odd32: Vec<i32>,
}

impl DwtScratch {
    pub(super) fn new(width: usize) -> Self {
        let half = width.div_ceil(2) + 2;
        DwtScratch {
            lo16: vec![0; width],
            hi16: vec![0; width],
            even16: vec![0; half],
            odd16: vec![0; half],
            lo32: [vec![0; width], vec![0; width]],
            hi32: [vec![0; width], vec![0; width]],
            even32: vec![0; half],
            odd32: vec![0; half],
        }
    }
}

/// Horizontal pass of scale 0: i16 rows, 32-bit accumulation, `(acc + 2^15) >> 16` into i16.
#[inline(always)]
fn hpass16(even: &[i16], odd: &[i16], f: &[i32; 4], out: &mut [i16]) {
    let n = out.len();
    let (e0, e1) = (&even[..n], &even[1..=n]);
    let (o0, o1) = (&odd[..n], &odd[1..=n]);
    for ((((dst, &a), &b), &c), &d) in out.iter_mut().zip(o0).zip(e0).zip(o1).zip(e1) {
        let acc = f[0] * a as i32 + f[1] * b as i32 + f[2] * c as i32 + f[3] * d as i32;
        *dst = ((acc + 32768) >> 16) as i16;
    }
}

/// Scale 0: DWT of an 8-bit or high-bit-depth luma plane (`rows(y)` gives source row `y`).
/// The detail bands (v, h, d) are only computed inside `detail`.
/// `hi_tail`: see [`apply_tail`]; libvmaf's two scratch rows are contiguous, so the lo row's
/// overrun reads the hi row's first values and the hi row's reads whatever follows (given).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn dwt_scale0<'a, T: Sample + 'a>(
    rows: impl Fn(usize) -> &'a [T],
    w_in: usize,
    h_in: usize,
    bpc: u32,
    hi_tail: Option<[i16; 2]>,
    detail: Rect,
    out: &mut Bands<i16>,
    s: &mut DwtScratch,
    simd: SimdLevel,
) {
    let w_out = w_in.div_ceil(2);
    let h_out = h_in.div_ceil(2);
    let add = 1i32 << (bpc - 1);
    let sub = LO_SUM.wrapping_mul(add);
    let lo = &mut s.lo16[..w_in];
    let hi = &mut s.hi16[..w_in];
    let (x0, x1) = (detail.x0, detail.x1);
    for i in 0..h_out {
        let in_detail = i >= detail.y0 && i < detail.y1;
        let [r0, r1, r2, r3] = taps(i, h_in).map(|r| &rows(r)[..w_in]);
        // Vertical pass. 16-bit input can overflow the 32-bit sum, which libvmaf lets wrap.
        let vlo = |a: i32, b: i32, c: i32, d: i32| {
            let acc = LO[0]
                .wrapping_mul(a)
                .wrapping_add(LO[1].wrapping_mul(b))
                .wrapping_add(LO[2].wrapping_mul(c))
                .wrapping_add(LO[3].wrapping_mul(d))
                .wrapping_sub(sub);
            (acc.wrapping_add(add) >> bpc) as i16
        };
        let want_hi = in_detail || hi_tail.is_some();
        // The vector kernel takes whole blocks of 32 columns of up to 15 bits.
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if bpc <= 15 && matches!(simd, SimdLevel::Avx512 | SimdLevel::Avx512Vnni) {
            done = w_in - w_in % 32;
            let hi = want_hi.then(|| &mut hi[..done]);
            let rows = [r0, r1, r2, r3].map(T::row);
            // SAFETY: AVX-512 levels are only ever ones the running CPU supports (the extractor
            // caps them); every row and output holds w_in >= done values, done a multiple of
            // 32; 8 <= bpc <= 15.
            unsafe { super::dwt_x86::vertical_avx512(rows, lo, hi, done, bpc) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd;
        let (lo_rest, hi_rest) = (&mut lo[done..], &mut hi[done..]);
        let src = r0[done..]
            .iter()
            .zip(&r1[done..])
            .zip(r2[done..].iter().zip(&r3[done..]));
        if want_hi {
            for ((l, h), ((a, b), (c, d))) in lo_rest.iter_mut().zip(hi_rest.iter_mut()).zip(src) {
                let (a, b, c, d) = (a.widen(), b.widen(), c.widen(), d.widen());
                let acc_hi = HI[0]
                    .wrapping_mul(a)
                    .wrapping_add(HI[1].wrapping_mul(b))
                    .wrapping_add(HI[2].wrapping_mul(c))
                    .wrapping_add(HI[3].wrapping_mul(d));
                *l = vlo(a, b, c, d);
                *h = (acc_hi.wrapping_add(add) >> bpc) as i16;
            }
        } else {
            for (l, ((a, b), (c, d))) in lo_rest.iter_mut().zip(src) {
                *l = vlo(a.widen(), b.widen(), c.widen(), d.widen());
            }
        }
        // Horizontal pass: the approximation everywhere (next scale's input), the details only
        // where they are used.
        let (even, odd) = (&mut s.even16, &mut s.odd16);
        split_phases(lo, w_out, lo[1], even, odd);
        if hi_tail.is_some() {
            apply_tail(w_in, w_out, [hi[0], hi[1]], even, odd);
        }
        hpass16(even, odd, &LO, out.a.row_mut(i));
        if !in_detail {
            continue;
        }
        hpass16(&even[x0..], &odd[x0..], &HI, &mut out.v.row_mut(i)[x0..x1]);
        split_phases(hi, w_out, hi[1], even, odd);
        if let Some(t) = hi_tail {
            apply_tail(w_in, w_out, t, even, odd);
        }
        hpass16(&even[x0..], &odd[x0..], &LO, &mut out.h.row_mut(i)[x0..x1]);
        hpass16(&even[x0..], &odd[x0..], &HI, &mut out.d.row_mut(i)[x0..x1]);
    }
}

/// Horizontal pass of scales 1..3: i32 rows, 64-bit accumulation.
#[inline(always)]
fn hpass32(even: &[i32], odd: &[i32], f: &[i32; 4], add: i64, shift: u32, out: &mut [i32]) {
    let n = out.len();
    let (e0, e1) = (&even[..n], &even[1..=n]);
    let (o0, o1) = (&odd[..n], &odd[1..=n]);
    for ((((dst, &a), &b), &c), &d) in out.iter_mut().zip(o0).zip(e0).zip(o1).zip(e1) {
        let acc = f[0] as i64 * a as i64
            + f[1] as i64 * b as i64
            + f[2] as i64 * c as i64
            + f[3] as i64 * d as i64;
        *dst = ((acc + add) >> shift) as i32;
    }
}

/// Source rows that libvmaf reads from outside the band when a DWT input is only 3 or 4 long
/// (its index table then asks for row/column -1 without mirroring). These are the values that
/// memory holds in libvmaf's buffer layout; see `AdmExtractor` for where they come from.
pub(super) struct OutOfBounds<'a> {
    /// Row -1 of the reference input (used when the input height is 3 or 4).
    pub ref_row: &'a [i32],
    /// Row -1 of the distorted input.
    pub dis_row: &'a [i32],
}

/// Scales 1..3: one DWT level of the reference and distorted approximation bands (details only
/// inside `detail`; the last row's vertical pass is always complete, as it stays in libvmaf's
/// scratch memory for later reads).
/// `tail`: see [`apply_tail`]. libvmaf's four scratch rows (ref lo, ref hi, dis lo, dis hi)
/// are contiguous, so each overrun reads the next row's first values; the last one's values
/// are given.
#[inline(always)]
pub(super) fn dwt_s123<E: Coef>(
    scale: usize,
    input: [&Band<E>; 2],
    out: [&mut Bands<i32>; 2],
    oob: &OutOfBounds,
    tail: Option<[i32; 2]>,
    detail: Rect,
    s: &mut DwtScratch,
) {
    let (w_in, h_in) = (input[0].w, input[0].h);
    let w_out = w_in.div_ceil(2);
    let h_out = h_in.div_ceil(2);
    let (vp_add, vp_shift) = (S123_VP_ADD[scale - 1], S123_VP_SHIFT[scale - 1]);
    let (hp_add, hp_shift) = (S123_HP_ADD[scale - 1], S123_HP_SHIFT[scale - 1]);
    let oob_rows = h_out == 2;
    let oob_cols = w_out == 2;
    let [out_ref, out_dis] = out;
    let (x0, x1) = (detail.x0, detail.x1);
    for i in 0..h_out {
        let in_detail = i >= detail.y0 && i < detail.y1;
        let need_hi = in_detail || i + 1 == h_out || tail.is_some();
        for (k, band) in input.iter().enumerate() {
            let lo = &mut s.lo32[k][..w_in];
            let hi = &mut s.hi32[k][..w_in];
            let rows: [&[E]; 4];
            let below: Vec<E>;
            if oob_rows && i == 0 {
                // row -1 is not mirrored: take it from what libvmaf's memory holds
                let src = if k == 0 { oob.ref_row } else { oob.dis_row };
                below = src[..w_in].iter().map(|&v| E::wrap(v)).collect();
                rows = [&below[..], band.row(0), band.row(1), band.row(2)];
            } else {
                rows = taps(i, h_in).map(|r| band.row(r));
            }
            let [r0, r1, r2, r3] = rows.map(|r| &r[..w_in]);
            let src = r0.iter().zip(r1).zip(r2.iter().zip(r3));
            if need_hi {
                for ((l, h), ((a, b), (c, d))) in lo.iter_mut().zip(hi.iter_mut()).zip(src) {
                    let t = [a.get(), b.get(), c.get(), d.get()];
                    let (al, ah) = vtaps64(&t);
                    *l = ((al + vp_add) >> vp_shift) as i32;
                    *h = ((ah + vp_add) >> vp_shift) as i32;
                }
            } else {
                for (l, ((a, b), (c, d))) in lo.iter_mut().zip(src) {
                    let t = [a.get(), b.get(), c.get(), d.get()];
                    *l = ((vtap64_lo(&t) + vp_add) >> vp_shift) as i32;
                }
            }
        }
        // Column -1 (inputs of width 3 or 4 only): libvmaf's four scratch rows are contiguous
        // (ref lo, ref hi, dis lo, dis hi), so each one's element -1 is the previous row's last
        // element; the first one's is the high half of malloc's chunk size field, i.e. 0.
        let odd0 = |k: usize, hi: bool| -> i32 {
            if !oob_cols {
                return if hi { s.hi32[k][1] } else { s.lo32[k][1] };
            }
            match (k, hi) {
                (0, false) => 0,
                (0, true) => s.lo32[0][w_in - 1],
                (_, false) => s.hi32[0][w_in - 1],
                (_, true) => s.lo32[1][w_in - 1],
            }
        };
        let odd0s = [
            [odd0(0, false), odd0(0, true)],
            [odd0(1, false), odd0(1, true)],
        ];
        // Overrun values of the four rows (ref lo, ref hi, dis lo, dis hi).
        let tails = tail.map(|t| {
            [
                [s.hi32[0][0], s.hi32[0][1]],
                [s.lo32[1][0], s.lo32[1][1]],
                [s.hi32[1][0], s.hi32[1][1]],
                t,
            ]
        });
        for (k, dst) in [&mut *out_ref, &mut *out_dis].into_iter().enumerate() {
            let (even, odd) = (&mut s.even32, &mut s.odd32);
            split_phases(&s.lo32[k][..w_in], w_out, odd0s[k][0], even, odd);
            if let Some(t) = tails {
                apply_tail(w_in, w_out, t[2 * k], even, odd);
            }
            hpass32(even, odd, &LO, hp_add, hp_shift, dst.a.row_mut(i));
            if !in_detail {
                continue;
            }
            let (e, o) = (&even[x0..], &odd[x0..]);
            hpass32(e, o, &HI, hp_add, hp_shift, &mut dst.v.row_mut(i)[x0..x1]);
            split_phases(&s.hi32[k][..w_in], w_out, odd0s[k][1], even, odd);
            if let Some(t) = tails {
                apply_tail(w_in, w_out, t[2 * k + 1], even, odd);
            }
            let (e, o) = (&even[x0..], &odd[x0..]);
            hpass32(e, o, &LO, hp_add, hp_shift, &mut dst.h.row_mut(i)[x0..x1]);
            hpass32(e, o, &HI, hp_add, hp_shift, &mut dst.d.row_mut(i)[x0..x1]);
        }
    }
}

/// Word `x` of libvmaf's int32 scratch area after this DWT level: its four rows of `w_in`
/// values (ref lo, ref hi, dis lo, dis hi) as left by the last output row.
pub(super) fn scratch_word(s: &DwtScratch, w_in: usize, x: usize) -> i32 {
    let (k, off) = (x / w_in, x % w_in);
    match k {
        0 => s.lo32[0][off],
        1 => s.hi32[0][off],
        2 => s.lo32[1][off],
        _ => s.hi32[1][off],
    }
}

#[inline(always)]
fn vtap64_lo(t: &[i32; 4]) -> i64 {
    LO[0] as i64 * t[0] as i64
        + LO[1] as i64 * t[1] as i64
        + LO[2] as i64 * t[2] as i64
        + LO[3] as i64 * t[3] as i64
}

#[inline(always)]
fn vtaps64(t: &[i32; 4]) -> (i64, i64) {
    let lo = LO[0] as i64 * t[0] as i64
        + LO[1] as i64 * t[1] as i64
        + LO[2] as i64 * t[2] as i64
        + LO[3] as i64 * t[3] as i64;
    let hi = HI[0] as i64 * t[0] as i64
        + HI[1] as i64 * t[1] as i64
        + HI[2] as i64 * t[2] as i64
        + HI[3] as i64 * t[3] as i64;
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_matches_libvmaf_index_table() {
        // n = 7: output rows 0..4 read 1,0,1,2 / 1,2,3,4 / 3,4,5,6 / 5,6,6,5
        assert_eq!(taps(0, 7), [1, 0, 1, 2]);
        assert_eq!(taps(1, 7), [1, 2, 3, 4]);
        assert_eq!(taps(2, 7), [3, 4, 5, 6]);
        assert_eq!(taps(3, 7), [5, 6, 6, 5]);
        // n = 8: last output row reads 5,6,7,7
        assert_eq!(taps(3, 8), [5, 6, 7, 7]);
    }

    #[test]
    fn phases() {
        let row = [10, 11, 12, 13, 14];
        let mut e = [0; 4];
        let mut o = [0; 4];
        split_phases(&row, 3, row[1], &mut e, &mut o);
        // even[m] = row[2m] with 6 -> mirror(6,5)=3; odd[m] = row[2m-1] with -1 -> 1, 5 -> 4
        assert_eq!(e, [10, 12, 14, 13]);
        assert_eq!(o, [11, 11, 13, 14]);
    }
}
