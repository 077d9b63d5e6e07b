//! Decoupling of the distorted detail bands into a restored part (`r`, the reference scaled by
//! the clamped ratio `k = t / o`) and an additive impairment part (`a = t - r`), with the
//! enhancement-gain limit applied where the reference and distorted (h, v) vectors point the
//! same way (within 1 degree).

#[cfg(target_arch = "aarch64")]
use super::decouple_aarch64;
#[cfg(target_arch = "x86_64")]
use super::decouple_x86;
use super::{Band, Coef, Rect};
use crate::features::simd::SimdLevel;

/// The positive half of libvmaf's reciprocal table: `recip[m] = floor(2^30 / m)`, `m` in
/// `0..=32768`.
pub(super) type RecipTable = [i32; 32769];

/// Per-pixel decoupling constants.
#[derive(Clone, Copy)]
pub(super) struct DecoupleParams<'a> {
    pub lut: &'a [i32],
    pub cos_1deg_sq: f64,
    pub gain_limit: f64,
    /// Which kernels run (every level gives the same results).
    pub simd: SimdLevel,
}

/// `k = clamp(t / o, 0, 1)` in Q15, by reciprocal multiplication. Magnitudes of 2^15 and above
/// are first rounded to their 15 most significant bits (libvmaf's `get_best15_from32`); below
/// that this is exactly libvmaf's scale-0 formula as well.
#[inline(always)]
fn ratio_q15(o: i32, t: i32, lut: &[i32]) -> i64 {
    if o == 0 {
        return 32768;
    }
    let abs_o = o.unsigned_abs();
    let (msb, shift) = if abs_o < 32768 {
        (abs_o, 0)
    } else {
        let k = 17 - abs_o.leading_zeros();
        ((abs_o + (1 << (k - 1))) >> k, k)
    };
    let recip = lut[(msb + 32768) as usize] as i64;
    let prod = recip * t as i64;
    let signed = if o < 0 { -prod } else { prod };
    ((signed + (1i64 << (14 + shift))) >> (15 + shift)).clamp(0, 32768)
}

/// Whether the angle between (oh, ov) and (th, tv) is below 1 degree, evaluated exactly as
/// libvmaf does: dot products in integers, rounded to float, then compared in double.
#[inline(always)]
fn same_direction(dot: f32, o_mag: f32, t_mag: f32, cos_1deg_sq: f64) -> bool {
    let d = dot as f64 / 4096.0;
    d >= 0.0 && d * d >= cos_1deg_sq * (o_mag as f64 / 4096.0) * (t_mag as f64 / 4096.0)
}

#[inline(always)]
fn angle_flag<E: Coef>(oh: i32, ov: i32, th: i32, tv: i32, cos_1deg_sq: f64) -> bool {
    if E::NARROW {
        // 16-bit coefficients: every product and sum is exact in f64, so rounding the f64 sum
        // to f32 equals rounding the exact integer (as libvmaf's int64 -> float does).
        let (oh, ov, th, tv) = (oh as f64, ov as f64, th as f64, tv as f64);
        let dot = (oh * th + ov * tv) as f32;
        let om = (oh * oh + ov * ov) as f32;
        let tm = (th * th + tv * tv) as f32;
        same_direction(dot, om, tm, cos_1deg_sq)
    } else {
        let (oh, ov, th, tv) = (oh as i64, ov as i64, th as i64, tv as i64);
        let dot = oh.wrapping_mul(th).wrapping_add(ov.wrapping_mul(tv)) as f32;
        let om = oh.wrapping_mul(oh).wrapping_add(ov.wrapping_mul(ov)) as f32;
        let tm = th.wrapping_mul(th).wrapping_add(tv.wrapping_mul(tv)) as f32;
        same_direction(dot, om, tm, cos_1deg_sq)
    }
}

/// `v as f32` (round to nearest even, as C's int64 -> float) in a vectorisable form: `v` is
/// rebuilt in f64 from its 32-bit halves (one rounding), then rounded to f32. The two roundings
/// agree unless the f64 value falls exactly on an f32 rounding midpoint; that case is reported
/// (`true`) so the caller can redo it exactly.
#[inline(always)]
fn i64_to_f32_checked(v: i64) -> (f32, bool) {
    let d = ((v >> 32) as i32) as f64 * 4294967296.0 + (v as u32) as f64;
    let midpoint = (d.to_bits() & 0x1fff_ffff) == 0x1000_0000;
    (d as f32, midpoint)
}

/// Angle flags of a row of 32-bit bands: exact int64 dot products (libvmaf's), rounded to f32
/// through [`i64_to_f32_checked`]; a row with an ambiguous rounding is redone in scalar code.
#[inline(always)]
fn angle_flags_wide<E: Coef>(
    oh: &[E],
    ov: &[E],
    th: &[E],
    tv: &[E],
    cos_1deg_sq: f64,
    flags: &mut [bool],
) {
    let n = flags.len();
    let (oh, ov, th, tv) = (&oh[..n], &ov[..n], &th[..n], &tv[..n]);
    let mut ambiguous = false;
    for j in 0..n {
        let (a, b) = (oh[j].get() as i64, ov[j].get() as i64);
        let (c, d) = (th[j].get() as i64, tv[j].get() as i64);
        let (dot, m1) = i64_to_f32_checked((a * c).wrapping_add(b * d));
        let (om, m2) = i64_to_f32_checked((a * a).wrapping_add(b * b));
        let (tm, m3) = i64_to_f32_checked((c * c).wrapping_add(d * d));
        ambiguous |= m1 | m2 | m3;
        flags[j] = same_direction(dot, om, tm, cos_1deg_sq);
    }
    if ambiguous {
        for j in 0..n {
            let (a, b, c, d) = (oh[j].get(), ov[j].get(), th[j].get(), tv[j].get());
            flags[j] = angle_flag::<E>(a, b, c, d, cos_1deg_sq);
        }
    }
}

/// Restored value of one band at one pixel (before the `E` store). `simd`: whether libvmaf's
/// AVX-512 code handles this pixel; it converts the gain-limited value with round-to-nearest-
/// even instead of C's truncation (only matters for a non-integer gain limit).
#[inline(always)]
fn restore<E: Coef>(o: i32, t: i32, flag: bool, simd: bool, p: &DecoupleParams) -> i32 {
    let k = ratio_q15(o, t, p.lut);
    let rst = E::wrap(((k * o as i64 + 16384) >> 15) as i32).get();
    // libvmaf tests the sign of (k / 32768) * (o / 64) in float: that is sign(o) when k > 0.
    if flag && k > 0 && o != 0 {
        let g = rst as f64 * p.gain_limit;
        let t = t as f64;
        let lim = if o > 0 {
            if g < t {
                g
            } else {
                t
            }
        } else if g > t {
            g
        } else {
            t
        };
        if simd {
            lim.round_ties_even() as i32
        } else {
            lim as i32
        }
    } else {
        rst
    }
}

/// Decouples one pixel: returns (r, a) for the h, v, d bands.
#[inline(always)]
pub(super) fn decouple_px<E: Coef>(
    o: [i32; 3],
    t: [i32; 3],
    simd: bool,
    p: &DecoupleParams,
) -> ([E; 3], [E; 3]) {
    let flag = angle_flag::<E>(o[0], o[1], t[0], t[1], p.cos_1deg_sq);
    let mut r = [E::default(); 3];
    let mut a = [E::default(); 3];
    for b in 0..3 {
        let rst = E::wrap(restore::<E>(o[b], t[b], flag, simd, p));
        r[b] = rst;
        a[b] = E::wrap(t[b].wrapping_sub(rst.get()));
    }
    (r, a)
}

/// `1.5 * 2^52`: adding and subtracting it rounds an f64 below 2^51 in magnitude to an integer
/// (ties to even), and the low 32 bits of the sum are that integer in two's complement.
const MAGIC: f64 = 6755399441055744.0;

/// Round to nearest, ties to even (|x| < 2^51).
#[inline(always)]
fn rne(x: f64) -> f64 {
    (x + MAGIC) - MAGIC
}

/// `floor(x)` (|x| < 2^51), branch-free.
#[inline(always)]
fn floor_f(x: f64) -> f64 {
    let r = rne(x);
    if r > x {
        r - 1.0
    } else {
        r
    }
}

/// Truncation toward zero (|x| < 2^51).
#[inline(always)]
fn trunc_f(x: f64) -> f64 {
    let f = floor_f(x.abs());
    if x < 0.0 {
        -f
    } else {
        f
    }
}

/// An integral f64 (|v| < 2^51) as i32 with C's wrapping conversion of the integer.
#[inline(always)]
fn wrap_i32(v: f64) -> i32 {
    (v + MAGIC).to_bits() as u32 as i32
}

/// `2^e` for a small integral `e` given as f64 (exact), built from the exponent bits.
#[inline(always)]
fn pow2(e: f64) -> f64 {
    f64::from_bits(((e + 1023.0 + MAGIC).to_bits() & 0x7ff) << 52)
}

/// How the gain-limited value is converted back to an integer.
const GAIN_EXACT: u8 = 0; // integral gain limit: the value is already an integer
const GAIN_TRUNC: u8 = 1; // C's truncating conversion
const GAIN_ROUND: u8 = 2; // AVX-512's round-to-nearest-even conversion
const GAIN_INT: u8 = 3; // 16-bit bands, gain limit an integer in 0..=65535 (32-bit integer path)

/// [`restore`] for 16-bit bands in 32-bit integer arithmetic (8 lanes with AVX2), for an
/// integral gain limit `gain` in 0..=65535. Same results: with `R = floor(2^30 / |o|)` split as
/// `Rh * 2^15 + Rl`, `floor((R * u + 2^14) / 2^15) = Rh * u + ((Rl * u + 2^14) >> 15)` exactly,
/// and every product stays below 2^31 for 16-bit `o`, `t`. (The compiler vectorises the
/// division; a table lookup instead would keep it from vectorising the loop at all.)
#[inline(always)]
fn restore_narrow_int(o: i32, t: i32, flag: bool, gain: i32) -> i32 {
    let m = if o == 0 { 1 } else { o.abs() };
    let r = (1073741824.0 / m as f64) as i32;
    let u = if o < 0 { -t } else { t };
    let q = (r >> 15) * u + (((r & 0x7fff) * u + 16384) >> 15);
    let k = q.clamp(0, 32768);
    let k = if o == 0 { 32768 } else { k };
    let rst = (k * o + 16384) >> 15;
    let g = rst * gain;
    let lim = if o > 0 { g.min(t) } else { g.max(t) };
    if flag && k > 0 && o != 0 {
        lim
    } else {
        rst
    }
}

/// The leading whole vector blocks of a 16-bit, `GAIN_INT` row with the explicit kernel of
/// the level (AVX-512 on x86-64, NEON on aarch64) when it has one; returns how many columns it
/// did (0 otherwise).
#[inline(always)]
fn decouple_row_narrow_kernel<E: Coef>(
    o: [&[E]; 3],
    t: [&[E]; 3],
    r: [&mut [E]; 3],
    a: [&mut [E]; 3],
    p: &DecoupleParams,
) -> usize {
    let has_kernel = match p.simd {
        SimdLevel::Avx512 | SimdLevel::Avx512Vnni => cfg!(target_arch = "x86_64"),
        SimdLevel::Neon => cfg!(target_arch = "aarch64"),
        SimdLevel::Scalar | SimdLevel::Avx2 => false,
    };
    if !has_kernel {
        return 0;
    }
    let [o0, o1, o2] = o;
    let [t0, t1, t2] = t;
    let [r0, r1, r2] = r;
    let [a0, a1, a2] = a;
    let narrow = (
        [E::as_i16(o0), E::as_i16(o1), E::as_i16(o2)],
        [E::as_i16(t0), E::as_i16(t1), E::as_i16(t2)],
        [E::as_i16_mut(r0), E::as_i16_mut(r1), E::as_i16_mut(r2)],
        [E::as_i16_mut(a0), E::as_i16_mut(a1), E::as_i16_mut(a2)],
    );
    let (
        [Some(o0), Some(o1), Some(o2)],
        [Some(t0), Some(t1), Some(t2)],
        [Some(r0), Some(r1), Some(r2)],
        [Some(a0), Some(a1), Some(a2)],
    ) = narrow
    else {
        return 0;
    };
    let recip: &RecipTable = p.lut[32768..]
        .try_into()
        .expect("libvmaf's reciprocal table has 65537 entries");
    let (o, t, r, a) = ([o0, o1, o2], [t0, t1, t2], [r0, r1, r2], [a0, a1, a2]);
    narrow_kernel(o, t, r, a, recip, p.cos_1deg_sq, p.gain_limit as i32)
}

/// The kernel of the running architecture: AVX-512 on x86-64, NEON on aarch64, none
/// elsewhere (0 columns done).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(unused_variables)
)]
#[inline(always)]
fn narrow_kernel(
    o: [&[i16]; 3],
    t: [&[i16]; 3],
    r: [&mut [i16]; 3],
    a: [&mut [i16]; 3],
    recip: &RecipTable,
    cos_1deg_sq: f64,
    gain: i32,
) -> usize {
    // SAFETY: only called for an AVX-512 level (`decouple_row_narrow_kernel`), and levels are
    // only ever ones the running CPU supports (the extractor caps them): AVX-512 F/BW/DQ/VL.
    #[cfg(target_arch = "x86_64")]
    return unsafe { decouple_x86::decouple_row_i16_avx512(o, t, r, a, recip, cos_1deg_sq, gain) };
    // SAFETY: only called for the Neon level (`decouple_row_narrow_kernel`), which the running
    // CPU supports (levels are capped), so it has NEON.
    #[cfg(target_arch = "aarch64")]
    return unsafe {
        decouple_aarch64::decouple_row_i16_neon(o, t, r, a, recip, cos_1deg_sq, gain)
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    0
}

/// Restored value of one band in double precision (exact integer values), branch-free so rows
/// vectorise. Same results as [`ratio_q15`] + [`restore`]: the reciprocal `floor(2^30 / m)` is
/// exact in f64 (the quotient is at least 1/m away from an integer); `recip * t` is exact
/// whenever the clamped `k` depends on it (beyond 2^53 the quotient is far outside 0..=32768);
/// every other intermediate is an integer below 2^53.
#[inline(always)]
fn restore_f64<const NARROW: bool, const GAIN: u8>(o: f64, t: f64, flag: bool, gain: f64) -> f64 {
    let abs_o = o.abs();
    let (m, shift) = if NARROW {
        (abs_o, 0.0)
    } else {
        // libvmaf's get_best15_from32: keep the 15 most significant bits, rounded.
        let e = ((abs_o.to_bits() >> 52) & 0x7ff) as i32 as f64 - 1023.0;
        let big = abs_o >= 32768.0;
        let sh = if big { e - 14.0 } else { 0.0 };
        let half = if big { pow2(sh - 1.0) } else { 0.0 };
        (floor_f((abs_o + half) * pow2(-sh)), sh)
    };
    let m = if m < 1.0 { 1.0 } else { m };
    let recip = floor_f(1073741824.0 / m);
    let p = recip * t;
    let p = if o < 0.0 { -p } else { p };
    let q = (p + pow2(14.0 + shift)) * pow2(-15.0 - shift);
    let q = if q > 0.0 { q } else { 0.0 };
    let q = if q < 32768.0 { q } else { 32768.0 };
    let k = floor_f(q);
    let k = if o == 0.0 { 32768.0 } else { k };
    let rst = floor_f((k * o + 16384.0) * (1.0 / 32768.0));
    let g = rst * gain;
    let lo = if g < t { g } else { t };
    let hi = if g > t { g } else { t };
    let lim = if o > 0.0 { lo } else { hi };
    let lim = match GAIN {
        GAIN_TRUNC => trunc_f(lim),
        GAIN_ROUND => rne(lim),
        _ => lim,
    };
    if flag && k > 0.0 && o != 0.0 {
        lim
    } else {
        rst
    }
}

/// Decouples one row segment (all slices have the same length). `flags` carries the angle
/// test of 32-bit bands (computed exactly beforehand); 16-bit bands compute it inline.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn decouple_row<E: Coef, const GAIN: u8>(
    o: [&[E]; 3],
    t: [&[E]; 3],
    r: [&mut [E]; 3],
    a: [&mut [E]; 3],
    flags: &[bool],
    p: &DecoupleParams,
) {
    let (cos_1deg_sq, gain) = (p.cos_1deg_sq, p.gain_limit);
    let n = o[0].len();
    let [oh, ov, od] = o.map(|s| &s[..n]);
    let [th, tv, td] = t.map(|s| &s[..n]);
    let [rh, rv, rd] = r;
    let [ah, av, ad] = a;
    let (rh, rv, rd) = (&mut rh[..n], &mut rv[..n], &mut rd[..n]);
    let (ah, av, ad) = (&mut ah[..n], &mut av[..n], &mut ad[..n]);
    let flags = if E::NARROW { &flags[..0] } else { &flags[..n] };
    if E::NARROW && GAIN == GAIN_INT {
        let g = gain as i32;
        let done = decouple_row_narrow_kernel(
            [oh, ov, od],
            [th, tv, td],
            [&mut *rh, &mut *rv, &mut *rd],
            [&mut *ah, &mut *av, &mut *ad],
            p,
        );
        for j in done..n {
            let (ohi, ovi, odi) = (oh[j].get(), ov[j].get(), od[j].get());
            let (thi, tvi, tdi) = (th[j].get(), tv[j].get(), td[j].get());
            // DWT bands are below 27412 in magnitude: these sums fit in i32 and convert to f32
            // with the single rounding of libvmaf's int64 -> float.
            let dot = (ohi * thi + ovi * tvi) as f32;
            let om = (ohi * ohi + ovi * ovi) as f32;
            let tm = (thi * thi + tvi * tvi) as f32;
            let flag = same_direction(dot, om, tm, cos_1deg_sq);
            let h = restore_narrow_int(ohi, thi, flag, g);
            let v = restore_narrow_int(ovi, tvi, flag, g);
            let d = restore_narrow_int(odi, tdi, flag, g);
            rh[j] = E::wrap(h);
            rv[j] = E::wrap(v);
            rd[j] = E::wrap(d);
            ah[j] = E::wrap(thi.wrapping_sub(E::wrap(h).get()));
            av[j] = E::wrap(tvi.wrapping_sub(E::wrap(v).get()));
            ad[j] = E::wrap(tdi.wrapping_sub(E::wrap(d).get()));
        }
        return;
    }
    for j in 0..n {
        let (ohi, ovi, odi) = (oh[j].get(), ov[j].get(), od[j].get());
        let (thi, tvi, tdi) = (th[j].get(), tv[j].get(), td[j].get());
        let (ohf, ovf, odf) = (ohi as f64, ovi as f64, odi as f64);
        let (thf, tvf, tdf) = (thi as f64, tvi as f64, tdi as f64);
        let flag = if E::NARROW {
            // every product and sum is exact in f64, so one rounding to f32 as in libvmaf
            let dot = (ohf * thf + ovf * tvf) as f32;
            let om = (ohf * ohf + ovf * ovf) as f32;
            let tm = (thf * thf + tvf * tvf) as f32;
            same_direction(dot, om, tm, cos_1deg_sq)
        } else {
            flags[j]
        };
        let restore = if E::NARROW {
            restore_f64::<true, GAIN>
        } else {
            restore_f64::<false, GAIN>
        };
        let h = restore(ohf, thf, flag, gain);
        let v = restore(ovf, tvf, flag, gain);
        let d = restore(odf, tdf, flag, gain);
        rh[j] = E::wrap(wrap_i32(h));
        rv[j] = E::wrap(wrap_i32(v));
        rd[j] = E::wrap(wrap_i32(d));
        ah[j] = E::wrap(wrap_i32(thf - h));
        av[j] = E::wrap(wrap_i32(tvf - v));
        ad[j] = E::wrap(wrap_i32(tdf - d));
    }
}

/// Decouples the h, v, d bands over `rect`; `simd_cols` are the columns libvmaf's AVX-512 loop
/// covers (whole 16-pixel groups from the left edge of its own, wider, decouple region).
#[inline(always)]
pub(super) fn decouple<E: Coef>(
    reference: [&Band<E>; 3],
    distorted: [&Band<E>; 3],
    rect: Rect,
    simd_cols: (usize, usize),
    p: &DecoupleParams,
    r_out: &mut [Band<E>; 3],
    a_out: &mut [Band<E>; 3],
) {
    let (x0, x1) = (rect.x0, rect.x1);
    // Only a non-integer gain limit can tell truncation from rounding.
    let integral = p.gain_limit.fract() == 0.0 && p.gain_limit.abs() < 1e15;
    let mut flags = vec![false; if E::NARROW { 0 } else { x1 - x0 }];
    // Segments [x0, s0), [s0, s1), [s1, x1): scalar, SIMD, scalar in libvmaf.
    let s0 = simd_cols.0.clamp(x0, x1);
    let s1 = simd_cols.1.clamp(s0, x1);
    for i in rect.y0..rect.y1 {
        if !E::NARROW {
            let oh = &reference[0].row(i)[x0..x1];
            let ov = &reference[1].row(i)[x0..x1];
            let th = &distorted[0].row(i)[x0..x1];
            let tv = &distorted[1].row(i)[x0..x1];
            angle_flags_wide(oh, ov, th, tv, p.cos_1deg_sq, &mut flags);
        }
        let [rh, rv, rd] = r_out;
        let [ah, av, ad] = a_out;
        let mut rows_r = [rh.row_mut(i), rv.row_mut(i), rd.row_mut(i)];
        let mut rows_a = [ah.row_mut(i), av.row_mut(i), ad.row_mut(i)];
        for (lo, hi, round) in [(x0, s0, false), (s0, s1, true), (s1, x1, false)] {
            if lo == hi {
                continue;
            }
            let o = reference.map(|b| &b.row(i)[lo..hi]);
            let t = distorted.map(|b| &b.row(i)[lo..hi]);
            let [r0, r1, r2] = &mut rows_r;
            let [a0, a1, a2] = &mut rows_a;
            let r = [&mut r0[lo..hi], &mut r1[lo..hi], &mut r2[lo..hi]];
            let a = [&mut a0[lo..hi], &mut a1[lo..hi], &mut a2[lo..hi]];
            let f = if E::NARROW {
                &flags[..]
            } else {
                &flags[lo - x0..hi - x0]
            };
            let g = p.gain_limit;
            match (integral, round) {
                (true, _) if E::NARROW && (0.0..=65535.0).contains(&g) => {
                    decouple_row::<E, GAIN_INT>(o, t, r, a, f, p)
                }
                (true, _) => decouple_row::<E, GAIN_EXACT>(o, t, r, a, f, p),
                (false, false) => decouple_row::<E, GAIN_TRUNC>(o, t, r, a, f, p),
                (false, true) => decouple_row::<E, GAIN_ROUND>(o, t, r, a, f, p),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn i64_to_f32_matches_cast_or_flags() {
        let mut seed = 99u64;
        for i in 0..2_000_000u64 {
            let r = xorshift(&mut seed);
            let v = (r as i64) >> (i % 40);
            let (f, ambiguous) = i64_to_f32_checked(v);
            assert!(ambiguous || f == v as f32, "{v}");
        }
        // a value just above an f32 midpoint whose f64 rounding lands on the midpoint
        let v: i64 = (1 << 62) + (1 << 38) + 1;
        let (f, ambiguous) = i64_to_f32_checked(v);
        assert!(ambiguous && f != v as f32);
    }

    /// kernels/adm.cu's scale-0 ratio skips the rounding of magnitudes of 2^15 and more: for
    /// int16 bands only |o| = 2^15, read unrounded from the table's last entry. Both give the
    /// same k for every t of an int16 band.
    #[test]
    fn unrounded_last_table_entry_gives_the_rounded_ratio() {
        let lut = super::super::consts::div_lookup();
        let unrounded = |o: i32, t: i32| {
            let prod = lut[(o.unsigned_abs() + 32768) as usize] as i64 * t as i64;
            let signed = if o < 0 { -prod } else { prod };
            ((signed + (1 << 14)) >> 15).clamp(0, 32768)
        };
        for o in [-32768, 32767, -32767, 16384, -1, 1] {
            for t in -32768..=32767 {
                assert_eq!(ratio_q15(o, t, lut), unrounded(o, t), "o {o}, t {t}");
            }
        }
    }

    /// The branch-free f64 kernel against the direct transcription of libvmaf's integer code.
    #[test]
    fn f64_kernel_matches_integer_formulas() {
        let lut = super::super::consts::div_lookup();
        let base = DecoupleParams {
            lut,
            cos_1deg_sq: super::super::consts::cos_1deg_sq() as f64,
            gain_limit: 1.0,
            simd: SimdLevel::Scalar,
        };
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut cases: Vec<(i32, i32, bool)> = Vec::new();
        for _ in 0..100_000 {
            let r = xorshift(&mut seed);
            let o = (r as u16) as i16 as i32;
            let t = ((r >> 16) as u16) as i16 as i32;
            // small values make k land inside 0..32768 more often
            let o2 = o >> ((r >> 32) % 16);
            let t2 = t >> ((r >> 40) % 16);
            cases.push((o, t, true));
            cases.push((o2, t2, true));
            let s1 = (r >> 48) % 32;
            let o3 = (xorshift(&mut seed) as u32 as i32) >> s1;
            let t3 = (xorshift(&mut seed) as u32 as i32) >> ((r >> 56) % 32);
            cases.push((o3, t3, false));
            cases.push((o3, (o3 as i64 * ((r >> 8) % 3) as i64 / 2) as i32, false));
        }
        for (o, t) in [
            (-32768, 32767),
            (-32768, -32768),
            (1, 32767),
            (-1, -32768),
            (0, 5),
            (7, 0),
        ] {
            cases.push((o, t, true));
        }
        for o in [i32::MAX, i32::MIN + 1, 32768, -32768, 65535, 65536, 1 << 30] {
            for t in [i32::MAX, i32::MIN + 1, 0, 1, -1, 12345678] {
                cases.push((o, t, false));
            }
        }
        for &(o, t, narrow) in &cases {
            for gain in [1.0, 100.0, 2.5] {
                let p = DecoupleParams {
                    gain_limit: gain,
                    ..base
                };
                for flag in [false, true] {
                    for simd in [false, true] {
                        let want = if narrow {
                            restore::<i16>(o, t, flag, simd, &p)
                        } else {
                            restore::<i32>(o, t, flag, simd, &p)
                        };
                        let (of, tf) = (o as f64, t as f64);
                        let got = match (narrow, gain == 2.5, simd) {
                            (true, false, _) => restore_f64::<true, GAIN_EXACT>(of, tf, flag, gain),
                            (true, true, false) => {
                                restore_f64::<true, GAIN_TRUNC>(of, tf, flag, gain)
                            }
                            (true, true, true) => {
                                restore_f64::<true, GAIN_ROUND>(of, tf, flag, gain)
                            }
                            (false, false, _) => {
                                restore_f64::<false, GAIN_EXACT>(of, tf, flag, gain)
                            }
                            (false, true, false) => {
                                restore_f64::<false, GAIN_TRUNC>(of, tf, flag, gain)
                            }
                            (false, true, true) => {
                                restore_f64::<false, GAIN_ROUND>(of, tf, flag, gain)
                            }
                        };
                        assert_eq!(
                            want,
                            wrap_i32(got),
                            "o {o} t {t} gain {gain} flag {flag} simd {simd}"
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod kernel_tests {
    use super::*;

    /// The explicit x86 kernel (and every other level) against the portable `GAIN_INT` loop on
    /// random rows covering the whole valid band range, zeros, equal and opposite pairs, and
    /// `-32768` (the last reciprocal table entry) in the d band.
    #[test]
    fn narrow_row_kernels_match_portable_loop() {
        let lut = super::super::consts::div_lookup();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let n = 16 * 7 + 5;
        for round in 0..200 {
            let mut gen = |band: usize| -> Vec<i16> {
                (0..n)
                    .map(|_| {
                        let r = next();
                        let v = ((r % 54825) as i32 - 27412) >> ((r >> 20) % 15);
                        match (r >> 40) % 16 {
                            0 => 0,
                            1 if band == 2 => -32768,
                            _ => v as i16,
                        }
                    })
                    .collect()
            };
            let o: Vec<Vec<i16>> = (0..3).map(&mut gen).collect();
            let mut t: Vec<Vec<i16>> = (0..3).map(&mut gen).collect();
            // the angle test passes for (near) parallel vectors: make some
            for j in (0..n).step_by(3) {
                for b in 0..3 {
                    let s = [1, 2, -1][(j / 3 + round) % 3];
                    t[b][j] = (o[b][j] as i32 * s).clamp(-27412, 27412) as i16;
                }
            }
            let gain = [100.0, 1.0, 0.0, 65535.0][round % 4];
            let run = |simd: SimdLevel| {
                let p = DecoupleParams {
                    lut,
                    cos_1deg_sq: super::super::consts::cos_1deg_sq() as f64,
                    gain_limit: gain,
                    simd: simd.capped(),
                };
                let mut r = vec![vec![0i16; n]; 3];
                let mut a = vec![vec![0i16; n]; 3];
                {
                    let [r0, r1, r2] = &mut r[..] else {
                        unreachable!()
                    };
                    let [a0, a1, a2] = &mut a[..] else {
                        unreachable!()
                    };
                    decouple_row::<i16, GAIN_INT>(
                        [&o[0], &o[1], &o[2]],
                        [&t[0], &t[1], &t[2]],
                        [r0, r1, r2],
                        [a0, a1, a2],
                        &[],
                        &p,
                    );
                }
                (r, a)
            };
            let want = run(SimdLevel::Scalar);
            for level in SimdLevel::supported() {
                assert_eq!(run(level), want, "{level} round {round}");
            }
        }
    }
}
