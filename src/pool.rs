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
//!
//! # Pooling a stream that never ends
//!
//! The slice functions need every value. [`MetricPool`] and [`FramePool`] pool values as they
//! come, in one of two [`Pooling`] modes:
//!
//! * [`Pooling::Exact`] keeps every value (8 bytes per frame and metric) so the percentiles
//!   are exact: the CLI, the C library and files played through the element use it, and shots
//!   (bounded by definition) always do.
//! * [`Pooling::Bounded`] keeps no values: min, max, mean and harmonic mean are running sums
//!   and comparisons in frame order, so they are **bit-identical** to the exact ones (the same
//!   additions in the same order), and the percentiles come from a [`PercentileSketch`], a
//!   histogram of fixed relative resolution. Its memory depends on the range the values
//!   cover, never on how many there are: a live element can run for months in constant
//!   memory.
//!
//! **Percentile error bound (bounded mode).** The sketch puts each value in a bin of relative
//! width `2^-11` (the value's float with its mantissa cut to 11 bits) and remembers the
//! smallest and largest value of each bin. An order statistic `v` is estimated by the middle
//! of its bin's smallest and largest value, so the estimate is off by at most half a bin:
//! `|estimate - v| <= 2^-12 * |v|` (0.0244 %), and exact when the bin's values are all equal
//! (a clipped VMAF of 100, motion's zeros). A percentile interpolates between two neighbouring
//! order statistics `v_lo <= v_hi` as [`percentile`] does, so its error is at most
//! `2^-12 * max(|v_lo|, |v_hi|)` (plus the rounding of the interpolation itself, a few ulps):
//! for VMAF (0..100) at most **0.0245 VMAF points**, and `min <= p5 <= p10 <= max` still holds.
//! Memory: at most 2048 bins per power of two that the values span (VMAF from 1 to 100: 7
//! powers of two, at most 14,336 bins of 32 bytes each); subnormal values (below `2^-1022`)
//! fall in bins of absolute width `2^-1033`.

use std::collections::BTreeMap;

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
    percentile_of(sorted.len() as u64, p, |l, h| {
        (sorted[l as usize], sorted[h as usize])
    })
}

/// The `p`-th percentile of `n` values, given a function that returns the order statistics
/// (0-based ranks) `lo` and `hi = lo or lo + 1`: [`percentile`]'s interpolation, shared by the
/// exact values and the [`PercentileSketch`].
fn percentile_of(n: u64, p: f64, ranks: impl FnOnce(u64, u64) -> (f64, f64)) -> Option<f64> {
    if n == 0 || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let r = p * (n - 1) as f64 / 100.0;
    let lo = r.floor();
    let (l, h) = (lo as u64, r.ceil() as u64);
    let (a, b) = ranks(l, h);
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

/// How a stream's values are pooled: see the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pooling {
    /// Keep every value: exact percentiles, memory grows with the stream (8 bytes per frame
    /// and metric).
    #[default]
    Exact,
    /// Keep no values: min/max/mean/harmonic mean still exact, percentiles from a
    /// [`PercentileSketch`] (error bound in the module docs), memory bounded.
    Bounded,
}

impl Pooling {
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Exact => "exact",
            Pooling::Bounded => "bounded",
        }
    }

    /// `exact` or `bounded`.
    pub fn parse(text: &str) -> Option<Pooling> {
        match text {
            "exact" => Some(Pooling::Exact),
            "bounded" => Some(Pooling::Bounded),
            _ => None,
        }
    }
}

/// libvmaf's min, max, mean and harmonic mean, computed as values come: the same operations
/// in the same order as [`min`], [`max`], [`mean`] and [`harmonic_mean`], so the same bits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunningStats {
    n: u64,
    sum: f64,
    inv_sum: f64,
    min: f64,
    max: f64,
}

impl RunningStats {
    pub fn push(&mut self, v: f64) {
        if self.n == 0 {
            (self.min, self.max) = (v, v);
        } else {
            if v < self.min {
                self.min = v;
            }
            if v > self.max {
                self.max = v;
            }
        }
        self.n += 1;
        self.sum += v;
        self.inv_sum += 1.0 / (v + 1.0);
    }

    /// Values pushed so far.
    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    pub fn harmonic_mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.n as f64 / self.inv_sum - 1.0)
    }

    pub fn min(&self) -> Option<f64> {
        (self.n > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<f64> {
        (self.n > 0).then_some(self.max)
    }
}

/// Kept bits of a value's mantissa: bins of relative width `2^-SKETCH_BITS`.
const SKETCH_BITS: u32 = 11;
const SKETCH_SHIFT: u32 = 52 - SKETCH_BITS;

/// One bin of a [`PercentileSketch`]: how many values fell in it, and their extremes.
#[derive(Clone, Copy, Debug)]
struct SketchBin {
    count: u64,
    min: f64,
    max: f64,
}

/// Percentiles of a stream in bounded memory: a histogram whose bins have a fixed relative
/// width (`2^-11`), each remembering its smallest and largest value. Error bound and memory
/// in the module docs. Memory grows only when a value lands in a bin no earlier value did.
#[derive(Clone, Debug, Default)]
pub struct PercentileSketch {
    /// Keyed so that key order is the IEEE total order of the values (as [`percentile`]
    /// sorts): positive values by their truncated bits, negative ones mirrored below zero,
    /// NaNs at the two ends.
    bins: BTreeMap<i64, SketchBin>,
    n: u64,
}

impl PercentileSketch {
    fn key(v: f64) -> i64 {
        if v.is_nan() {
            return if v.is_sign_negative() {
                i64::MIN
            } else {
                i64::MAX
            };
        }
        // |v|'s bits with the mantissa cut: ordered like |v| (at most 2^23 keys).
        let k = (v.abs().to_bits() >> SKETCH_SHIFT) as i64;
        if v.is_sign_negative() {
            -k - 1
        } else {
            k
        }
    }

    pub fn push(&mut self, v: f64) {
        self.n += 1;
        self.bins
            .entry(Self::key(v))
            .and_modify(|b| {
                b.count += 1;
                if v.total_cmp(&b.min).is_lt() {
                    b.min = v;
                }
                if v.total_cmp(&b.max).is_gt() {
                    b.max = v;
                }
            })
            .or_insert(SketchBin {
                count: 1,
                min: v,
                max: v,
            });
    }

    /// Values pushed so far.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Bins in use (what the memory is proportional to).
    pub fn bins(&self) -> usize {
        self.bins.len()
    }

    /// The `p`-th percentile ([`percentile`]'s definition), within the module docs' bound.
    /// `None` if empty or `p` is not within 0..=100.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        percentile_of(self.n, p, |lo, hi| {
            let (mut a, mut b) = (f64::NAN, f64::NAN);
            let mut below = 0u64;
            for bin in self.bins.values() {
                let end = below + bin.count;
                if (below..end).contains(&lo) {
                    a = Self::estimate(bin);
                }
                if (below..end).contains(&hi) {
                    b = Self::estimate(bin);
                    break;
                }
                below = end;
            }
            (a, b)
        })
    }

    /// Any value of the bin, its middle: within half the bin's spread of every value in it.
    fn estimate(bin: &SketchBin) -> f64 {
        if bin.min.is_nan() || bin.min == bin.max || bin.max.is_infinite() {
            // NaNs, equal values, an infinity (alone in its bin): exact.
            return bin.max;
        }
        let mid = bin.min + (bin.max - bin.min) / 2.0;
        if mid < bin.min {
            bin.min
        } else if mid > bin.max {
            bin.max
        } else {
            mid
        }
    }
}

/// Pools one metric's values as they come, in a [`Pooling`] mode.
#[derive(Clone, Debug)]
pub struct MetricPool {
    stats: RunningStats,
    values: Kept,
}

#[derive(Clone, Debug)]
enum Kept {
    All(Vec<f64>),
    Sketch(PercentileSketch),
}

impl MetricPool {
    pub fn new(mode: Pooling) -> Self {
        MetricPool {
            stats: RunningStats::default(),
            values: match mode {
                Pooling::Exact => Kept::All(Vec::new()),
                Pooling::Bounded => Kept::Sketch(PercentileSketch::default()),
            },
        }
    }

    pub fn push(&mut self, v: f64) {
        self.stats.push(v);
        match &mut self.values {
            Kept::All(all) => all.push(v),
            Kept::Sketch(s) => s.push(v),
        }
    }

    pub fn count(&self) -> u64 {
        self.stats.count()
    }

    /// The pooled statistics so far; with [`Pooling::Exact`] equal to
    /// [`PooledStats::from_values`] of the values pushed, bit for bit. `None` if empty.
    pub fn stats(&self) -> Option<PooledStats> {
        let (p5, p10) = match &self.values {
            Kept::All(all) => {
                let mut sorted = all.clone();
                sorted.sort_by(f64::total_cmp);
                (
                    percentile_sorted(&sorted, 5.0)?,
                    percentile_sorted(&sorted, 10.0)?,
                )
            }
            Kept::Sketch(s) => (s.percentile(5.0)?, s.percentile(10.0)?),
        };
        Some(PooledStats {
            min: self.stats.min()?,
            max: self.stats.max()?,
            mean: self.stats.mean()?,
            harmonic_mean: self.stats.harmonic_mean()?,
            p5,
            p10,
        })
    }
}

/// Pools every metric of a stream of frames as they come: the keys of the first frame, in
/// its order, each over the frames that have it, as [`crate::report::Report::pool_frames`]
/// pools a slice (and with [`Pooling::Exact`] with the same bits).
#[derive(Clone, Debug)]
pub struct FramePool {
    mode: Pooling,
    metrics: Vec<(String, MetricPool)>,
}

impl FramePool {
    pub fn new(mode: Pooling) -> Self {
        FramePool {
            mode,
            metrics: Vec::new(),
        }
    }

    pub fn mode(&self) -> Pooling {
        self.mode
    }

    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }

    /// Adds one frame's metrics (`(key, value)` in the frame's order).
    pub fn push(&mut self, metrics: &[(String, f64)]) {
        if self.metrics.is_empty() {
            self.metrics = metrics
                .iter()
                .map(|(k, _)| (k.clone(), MetricPool::new(self.mode)))
                .collect();
        }
        for (i, (key, pool)) in self.metrics.iter_mut().enumerate() {
            // Frames of one run share their keys' order: look further only if they do not.
            let value = match metrics.get(i) {
                Some((k, v)) if k == key => Some(*v),
                _ => metrics.iter().find(|(k, _)| k == key).map(|(_, v)| *v),
            };
            if let Some(v) = value {
                pool.push(v);
            }
        }
    }

    /// Each metric's pooled statistics, in the first frame's key order.
    pub fn pooled(&self) -> Vec<(String, PooledStats)> {
        self.metrics
            .iter()
            .filter_map(|(k, p)| p.stats().map(|s| (k.clone(), s)))
            .collect()
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

    #[test]
    fn running_stats_equal_the_slice_functions_bit_for_bit() {
        let v = [3.0, 0.0, 1e16, 1.0, -1e16, 7.25, f64::NAN, 0.1];
        for n in 1..=v.len() {
            let mut r = RunningStats::default();
            for &x in &v[..n] {
                r.push(x);
            }
            let same = |a: Option<f64>, b: Option<f64>| a.map(f64::to_bits) == b.map(f64::to_bits);
            assert!(same(r.mean(), mean(&v[..n])), "{n}");
            assert!(same(r.harmonic_mean(), harmonic_mean(&v[..n])), "{n}");
            assert!(same(r.min(), min(&v[..n])), "{n}");
            assert!(same(r.max(), max(&v[..n])), "{n}");
        }
        assert_eq!(RunningStats::default().mean(), None);
    }

    #[test]
    fn sketch_orders_like_total_cmp_and_keeps_equal_values_exact() {
        let v = [
            -0.0,
            0.0,
            -1.5,
            2.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-300,
            -1e300,
        ];
        let mut keys: Vec<(i64, f64)> = v.iter().map(|&x| (PercentileSketch::key(x), x)).collect();
        keys.sort_by_key(|(k, _)| *k);
        assert!(keys.windows(2).all(|w| w[0].1.total_cmp(&w[1].1).is_lt()));
        let mut s = PercentileSketch::default();
        for _ in 0..1000 {
            s.push(100.0);
        }
        s.push(0.0);
        assert_eq!(s.percentile(0.0), Some(0.0));
        assert_eq!(s.percentile(5.0), Some(100.0));
        assert_eq!(s.percentile(100.0), Some(100.0));
        assert_eq!(s.bins(), 2);
        assert_eq!(PercentileSketch::default().percentile(5.0), None);
    }

    #[test]
    fn exact_metric_pool_equals_from_values() {
        let v: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 / 7.0)
            .collect();
        let mut p = MetricPool::new(Pooling::Exact);
        for &x in &v {
            p.push(x);
        }
        assert_eq!(p.stats(), PooledStats::from_values(&v));
        assert_eq!(MetricPool::new(Pooling::Bounded).stats(), None);
    }
}
