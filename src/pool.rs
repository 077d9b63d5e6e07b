//! Pooling of per-frame values over a run or a shot, as libvmaf 3.2.0 pools
//! (`vmaf_feature_score_pooled`), plus percentiles (which libvmaf does not report).
//!
//! libvmaf's definitions, over the values `s_1..s_n` in frame order, all in `f64`:
//!
//! * mean: `(((s_1 + s_2) + s_3) + ... + s_n) / n` — a plain left-to-right sum;
//! * harmonic mean: `n / sum(1 / (s_i + 1)) - 1` — shifted by one so that zeros (motion of the
//!   first frame, for one) are allowed; the reciprocal sum is also left to right;
//! * min / max: start from the first value and replace it by a later value that compares
//!   strictly smaller / larger (so a NaN first value sticks, later NaNs are skipped).
//!
//! Every function returns `None` for an empty slice (libvmaf would divide 0 by 0).

/// Arithmetic mean, summed in slice order as libvmaf does. `None` if empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    for &v in values {
        sum += v;
    }
    Some(sum / values.len() as f64)
}

/// libvmaf's shifted harmonic mean, `n / sum(1 / (v + 1)) - 1`. `None` if empty.
pub fn harmonic_mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut inv_sum = 0.0;
    for &v in values {
        inv_sum += 1.0 / (v + 1.0);
    }
    Some(values.len() as f64 / inv_sum - 1.0)
}

/// Minimum, libvmaf's way (first value, then strictly smaller ones). `None` if empty.
pub fn min(values: &[f64]) -> Option<f64> {
    let (&first, rest) = values.split_first()?;
    let mut m = first;
    for &v in rest {
        if v < m {
            m = v;
        }
    }
    Some(m)
}

/// Maximum, libvmaf's way (first value, then strictly larger ones). `None` if empty.
pub fn max(values: &[f64]) -> Option<f64> {
    let (&first, rest) = values.split_first()?;
    let mut m = first;
    for &v in rest {
        if v > m {
            m = v;
        }
    }
    Some(m)
}

/// The `p`-th percentile (`p` in 0..=100) by linear interpolation between closest ranks
/// (NumPy's default `linear` method; libvmaf reports no percentiles): with the values sorted
/// ascending (`v_0..v_{n-1}`) and `r = p * (n - 1) / 100`, the result is
/// `v_lo + (v_hi - v_lo) * (r - lo)` with `lo = floor(r)`, `hi = ceil(r)`, or `v_r` when `r` is
/// a whole number. Written this way (rather than `v_lo * (hi - r) + v_hi * (r - lo)`) equal
/// neighbours give exactly their value, and the result is kept within `[v_lo, v_hi]`, so
/// `min <= p5 <= p10 <= max` always holds. p = 0 gives the minimum, p = 100 the maximum.
///
/// NaNs sort above every number (IEEE total order). `None` if `values` is empty or `p` is not
/// within 0..=100.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile_sorted(&sorted, p)
}

/// [`percentile`] of values already sorted ascending.
fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let r = p * (sorted.len() - 1) as f64 / 100.0;
    let lo = r.floor();
    let (l, h) = (lo as usize, r.ceil() as usize);
    let (a, b) = (sorted[l], sorted[h]);
    if l == h || a == b {
        return Some(a);
    }
    let v = a + (b - a) * (r - lo);
    Some(if v < a {
        a
    } else if v > b {
        b
    } else {
        v
    })
}

/// The pooled statistics reported for each metric: libvmaf's four plus the 5th and 10th
/// percentiles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PooledStats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub harmonic_mean: f64,
    /// 5th percentile ([`percentile`]).
    pub p5: f64,
    /// 10th percentile ([`percentile`]).
    pub p10: f64,
}

impl PooledStats {
    /// Pools `values` (in frame order). `None` if empty.
    pub fn from_values(values: &[f64]) -> Option<PooledStats> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(PooledStats {
            min: min(values)?,
            max: max(values)?,
            mean: mean(values)?,
            harmonic_mean: harmonic_mean(values)?,
            p5: percentile_sorted(&sorted, 5.0)?,
            p10: percentile_sorted(&sorted, 10.0)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty() {
        assert_eq!(mean(&[]), None);
        assert_eq!(harmonic_mean(&[]), None);
        assert_eq!(min(&[]), None);
        assert_eq!(max(&[]), None);
        assert_eq!(percentile(&[], 5.0), None);
        assert_eq!(PooledStats::from_values(&[]), None);
    }

    #[test]
    fn percentiles() {
        let v = [4.0, 1.0, 3.0, 2.0, 5.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(5.0));
        assert_eq!(percentile(&v, 50.0), Some(3.0));
        assert_eq!(percentile(&v, 10.0), Some(1.4));
        assert_eq!(percentile(&[7.0], 5.0), Some(7.0));
        assert_eq!(percentile(&v, 101.0), None);
        assert_eq!(percentile(&v, f64::NAN), None);
    }

    #[test]
    fn harmonic_shift() {
        // n / sum(1/(v+1)) - 1
        assert_eq!(harmonic_mean(&[0.0, 0.0]), Some(0.0));
        assert_eq!(harmonic_mean(&[1.0, 3.0]), Some(2.0 / (0.5 + 0.25) - 1.0));
    }
}
