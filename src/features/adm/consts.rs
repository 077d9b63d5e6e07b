//! Numeric constants of libvmaf's integer ADM, and the few values libvmaf derives at run time
//! from floating-point formulas (they are recomputed here with the same libm calls, in the same
//! precision and order, so they come out bit-identical).

use std::sync::OnceLock;

/// Daubechies-2 analysis filters in Q15 (low-pass and high-pass).
pub const LO: [i32; 4] = [15826, 27411, 7345, -4240];
pub const HI: [i32; 4] = [-4240, -7345, 27411, -15826];
/// Sum of the low-pass taps; scale 0 subtracts `LO_SUM * 2^(bpc-1)` to centre the samples.
pub const LO_SUM: i32 = 46342;

/// Fraction of the band (per side) that the score ignores.
pub const BORDER_FACTOR: f64 = 0.1;
/// Noise floor weight added to every numerator / denominator term.
pub const NOISE_WEIGHT: f64 = 0.03125;
/// Weight of the detail-loss term in adm3 (`adm_dlm_weight`).
pub const DLM_WEIGHT: f64 = 0.5;

/// Scale-0 CSF multipliers for the h, v, d bands (libvmaf hard-codes these for the default
/// viewing distance 3.0 x 1080 and the Watson CSF; they are NOT the rounded formula values).
pub const CSF0_MUL: [i32; 3] = [36453, 36453, 49417];
pub const CSF0_ADD: [i32; 3] = [16384, 16384, 65535];
pub const CSF0_SHIFT: [u32; 3] = [15, 15, 17];
/// 1/30 in Q17 (applied with a 12-bit shift: the result carries 5 fractional bits).
pub const ONE_BY_30_Q17: i32 = 4369;
/// 1/15 in Q17.
pub const ONE_BY_15_Q17: i32 = 8738;
/// 1/30 and 1/15 in Q32, for scales 1..3.
pub const ONE_BY_30_Q32: i64 = 143_165_577;
pub const ONE_BY_15_Q32: i64 = 286_331_153;
/// libvmaf stores its rounding constant `1u << 31` in an `int32_t`: it becomes -2^31, so the
/// "rounding" of the 1/30 and 1/15 products at scales 1..3 actually subtracts half a unit.
pub const Q32_ROUND: i64 = -(1i64 << 31);

/// Vertical / horizontal DWT rounding for scales 1, 2, 3.
pub const S123_VP_ADD: [i64; 3] = [0, 32768, 32768];
pub const S123_VP_SHIFT: [u32; 3] = [0, 16, 16];
pub const S123_HP_ADD: [i64; 3] = [16384, 32768, 16384];
pub const S123_HP_SHIFT: [u32; 3] = [15, 16, 15];
/// Denominator squaring shift for scales 1, 2, 3 (the rounding constant is a full `1 << shift`).
pub const S123_DEN_SQ_SHIFT: [u32; 3] = [31, 30, 31];
/// Denominator fixed-point exponent for scales 1, 2, 3.
pub const S123_DEN_EXP: [u32; 3] = [32, 27, 23];
/// Numerator fixed-point exponent for scales 1, 2, 3.
pub const S123_NUM_EXP: [u32; 3] = [45, 39, 36];

/// Table of `2^30 / i` (signed, indexed by `i + 32768`, entry 32768 is 0).
pub fn div_lookup() -> &'static [i32] {
    static TABLE: OnceLock<Vec<i32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = vec![0i32; 65537];
        for i in 1..=32768i32 {
            let recip = (1i32 << 30) / i;
            t[(32768 + i) as usize] = recip;
            t[(32768 - i) as usize] = -recip;
        }
        t
    })
}

/// `cos(1 deg)^2` rounded to `float`, as libvmaf's decouple step uses it.
pub fn cos_1deg_sq() -> f32 {
    let c = (std::f64::consts::PI / 180.0).cos();
    (c * c) as f32
}

// Watson et al. 1997 noise model for Y (a, k, f0, g[theta]) and the 7/9 wavelet basis function
// amplitudes. libvmaf writes them as double literals stored in `float`, hence `f64 as f32`.
const WATSON_A: f64 = 0.495;
const WATSON_K: f64 = 0.466;
const WATSON_F0: f64 = 0.401;
const WATSON_G: [f64; 4] = [1.501, 1.0, 0.534, 1.0];
const BASIS_AMP: [[f64; 4]; 4] = [
    [0.62171, 0.67234, 0.72709, 0.67234],
    [0.34537, 0.41317, 0.49428, 0.41317],
    [0.18004, 0.22727, 0.28688, 0.22727],
    [0.091401, 0.11792, 0.15214, 0.11792],
];

/// libvmaf's `dwt_quant_step` for the default viewing distance (3.0) and display height (1080).
fn dwt_quant_step(lambda: usize, theta: usize) -> f32 {
    let r = (3.0f64 * 1080.0 * std::f64::consts::PI / 180.0) as f32;
    let base = 2.0f64.powf((lambda + 1) as f64)
        * (WATSON_F0 as f32) as f64
        * (WATSON_G[theta] as f32) as f64
        / r as f64;
    let temp = base.log10() as f32;
    let k = WATSON_K as f32;
    let expo = k * temp * temp;
    let q = 2.0 * (WATSON_A as f32) as f64 * 10.0f64.powf(expo as f64)
        / (BASIS_AMP[lambda][theta] as f32) as f64;
    q as f32
}

/// `1 / Q` for (h and v, d) at a scale: libvmaf's `rfactor` (float).
pub fn rfactor(scale: usize) -> [f32; 3] {
    let f1 = 1.0f32 / dwt_quant_step(scale, 1);
    let f2 = 1.0f32 / dwt_quant_step(scale, 2);
    [f1, f1, f2]
}

/// The Q32 CSF multipliers of scales 1..3: `(uint32_t)(rfactor * 2^32)`.
pub fn rfactor_q32(scale: usize) -> [u32; 3] {
    let rf = rfactor(scale);
    rf.map(|f| (f as f64 * 4294967296.0) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfactors_match_libvmaf() {
        // Values printed by libvmaf's own expressions compiled with gcc/glibc.
        assert_eq!(rfactor(0)[0].to_bits(), 0x3c8e63ba);
        assert_eq!(rfactor(0)[2].to_bits(), 0x3bc106aa);
        assert_eq!(rfactor_q32(1), [137373792, 137373792, 61414028]);
        assert_eq!(rfactor_q32(2), [186284160, 186284160, 104783920]);
        assert_eq!(rfactor_q32(3), [196165808, 196165808, 134487184]);
        assert_eq!(cos_1deg_sq().to_bits(), 0x3f7fec0a);
    }

    #[test]
    fn div_table() {
        let t = div_lookup();
        assert_eq!(t[32768], 0);
        assert_eq!(t[32769], 1 << 30);
        assert_eq!(t[0], -32768);
        assert_eq!(t[65536], 32768);
        assert_eq!(t[32768 + 3], 357913941);
    }
}
