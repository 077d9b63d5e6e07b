//! Finding the constant offset between the reference and the distorted feed (`align=auto`).
//!
//! Both feeds' frames carry a [`LumaSignature`] and a running time. For every candidate offset
//! `o` (whole reference frame durations, within `±align-window`) the reference frame at running
//! time `t` is compared with the distorted frame nearest to `t + o`; the candidate whose matched
//! frames differ least on average wins. Coding distortion moves region means very little, a
//! wrong offset moves them as much as the content moves, so the right offset stands out as soon
//! as the content changes at all. On static content every offset looks alike: the estimate then
//! says so (`distinct == false`) and the smallest such offset is taken.

use std::collections::VecDeque;

use super::signature::LumaSignature;

/// Fewest matched frame pairs a candidate offset needs to be considered.
pub const MIN_MATCHED_FRAMES: usize = 8;

/// Running time (ns) of a frame and its fingerprint.
pub type Sample = (i64, LumaSignature);

/// What the search found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Distorted running time minus reference running time, in ns (positive: the distorted
    /// feed is late).
    pub offset_ns: i64,
    /// The same in reference frames.
    pub offset_frames: i64,
    /// Mean fingerprint distance at this offset (0..1).
    pub cost: f64,
    /// The lowest mean distance at any offset at least two frames away (`f64::INFINITY` when
    /// no other offset could be measured).
    pub runner_up: f64,
    /// Frame pairs matched at this offset.
    pub matched: usize,
    /// False when another offset two or more frames away matched as well (static content).
    pub distinct: bool,
}

/// The best offset of `dist` against `refs` (both sorted by running time), searched over
/// `-window_ns..=window_ns` in steps of `frame_ns`.
pub fn estimate(
    refs: &[Sample],
    dist: &[Sample],
    frame_ns: i64,
    window_ns: i64,
) -> Option<Estimate> {
    if frame_ns <= 0 {
        return None;
    }
    let steps = window_ns.max(0) / frame_ns;
    let half = frame_ns / 2;
    let mut costs: Vec<(i64, f64, usize)> = Vec::new();
    for k in -steps..=steps {
        let offset = k * frame_ns;
        let (mut total, mut matched) = (0.0, 0usize);
        for (t, sig) in refs {
            let target = t + offset;
            // Nearest distorted frame to `target`, if within half a frame.
            let i = dist.partition_point(|(d, _)| *d < target);
            let nearest = [i.checked_sub(1), Some(i)]
                .into_iter()
                .flatten()
                .filter_map(|j| dist.get(j))
                .min_by_key(|(d, _)| (d - target).abs());
            if let Some((d, dsig)) = nearest {
                if (d - target).abs() <= half {
                    total += sig.distance(dsig);
                    matched += 1;
                }
            }
        }
        if matched >= MIN_MATCHED_FRAMES {
            costs.push((k, total / matched as f64, matched));
        }
    }
    // Lowest cost; on a tie the smallest |k| (static content: no shift is the best guess).
    let &(best_k, cost, matched) = costs.iter().min_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.abs().cmp(&b.0.abs()))
    })?;
    let runner_up = costs
        .iter()
        .filter(|(k, _, _)| (k - best_k).abs() >= 2)
        .map(|&(_, c, _)| c)
        .fold(f64::INFINITY, f64::min);
    Some(Estimate {
        offset_ns: best_k * frame_ns,
        offset_frames: best_k,
        cost,
        runner_up,
        matched,
        // Distinct when the next best offset is clearly worse (by more than fingerprint noise).
        distinct: runner_up > cost * 1.5 + 1e-4,
    })
}

/// Recent fingerprints of both feeds, kept for the first lock and for re-checks at shot
/// boundaries; bounded in running time.
#[derive(Debug, Default)]
pub struct History {
    refs: VecDeque<Sample>,
    dist: VecDeque<Sample>,
    span_ns: i64,
}

impl History {
    /// Keeps `span_ns` of running time of each feed.
    pub fn new(span_ns: i64) -> History {
        History {
            span_ns,
            ..History::default()
        }
    }

    fn push(q: &mut VecDeque<Sample>, span: i64, sample: Sample) {
        // Feeds are in running-time order; a sample out of order (a new segment) restarts.
        if q.back().is_some_and(|(t, _)| *t > sample.0) {
            q.clear();
        }
        q.push_back(sample);
        while q.front().is_some_and(|(t, _)| sample.0 - t > span) {
            q.pop_front();
        }
    }

    pub fn push_ref(&mut self, sample: Sample) {
        Self::push(&mut self.refs, self.span_ns, sample);
    }

    pub fn push_dist(&mut self, sample: Sample) {
        Self::push(&mut self.dist, self.span_ns, sample);
    }

    pub fn clear(&mut self) {
        self.refs.clear();
        self.dist.clear();
    }

    /// Running time covered by both feeds since the earlier of their first frames.
    pub fn covered_ns(&self) -> i64 {
        let (Some(r0), Some(d0)) = (self.refs.front(), self.dist.front()) else {
            return 0;
        };
        let (Some(r1), Some(d1)) = (self.refs.back(), self.dist.back()) else {
            return 0;
        };
        let start = r0.0.min(d0.0);
        (r1.0 - start).min(d1.0 - start)
    }

    pub fn estimate(&self, frame_ns: i64, window_ns: i64) -> Option<Estimate> {
        let refs: Vec<Sample> = self.refs.iter().copied().collect();
        let dist: Vec<Sample> = self.dist.iter().copied().collect();
        estimate(&refs, &dist, frame_ns, window_ns)
    }

    /// Fingerprints held (both feeds), for tests of the bound.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.refs.len() + self.dist.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmafcuda::frame::{Plane, Samples};

    const FRAME: i64 = 40_000_000;

    /// A moving bright square on a ramp: every frame's fingerprint differs.
    fn content(i: i64, noise: u8) -> LumaSignature {
        let (w, h) = (64usize, 48usize);
        let data: Vec<u8> = (0..w * h)
            .map(|p| {
                let (x, y) = ((p % w) as i64, (p / w) as i64);
                // Position and brightness jump around without a period.
                let cx = (i * i * 7 + i * 13).rem_euclid(w as i64);
                let cy = (i * i * 3 + i * 5).rem_euclid(h as i64);
                let inside = (x - cx).abs() < 8 && (y - cy).abs() < 8;
                let level = (i * i * 11 + i * 37).rem_euclid(41) as u8;
                let base = if inside { 220 } else { (x + y) as u8 + level };
                base.wrapping_add(((p as u8).wrapping_mul(31) ^ noise) % 3)
            })
            .collect();
        LumaSignature::of(&Plane {
            samples: Samples::U8(&data),
            width: w,
            height: h,
            stride: w,
            bpc: 8,
        })
    }

    fn feeds(delay: i64, n: i64) -> (Vec<Sample>, Vec<Sample>) {
        let refs = (0..n).map(|i| (i * FRAME, content(i, 0))).collect();
        // Distorted frame showing reference content i at running time (i + delay) frames.
        let dist = (0..n)
            .map(|i| ((i + delay) * FRAME, content(i, 1)))
            .filter(|(t, _)| *t >= 0)
            .collect();
        (refs, dist)
    }

    #[test]
    fn finds_delays_in_both_directions_up_to_the_window() {
        for delay in [-50, -13, -1, 0, 1, 7, 50] {
            let (r, d) = feeds(delay, 120);
            let e = estimate(&r, &d, FRAME, 50 * FRAME).expect("estimate");
            assert_eq!(e.offset_frames, delay, "{e:?}");
            assert_eq!(e.offset_ns, delay * FRAME);
            assert!(e.distinct, "{e:?}");
        }
    }

    #[test]
    fn static_content_is_not_distinct_and_takes_no_shift() {
        let r: Vec<Sample> = (0..40).map(|i| (i * FRAME, content(0, 0))).collect();
        let d: Vec<Sample> = (0..40).map(|i| ((i + 5) * FRAME, content(0, 0))).collect();
        let e = estimate(&r, &d, FRAME, 10 * FRAME).expect("estimate");
        assert!(!e.distinct);
        assert_eq!(e.offset_frames, 0);
    }

    #[test]
    fn too_little_overlap_gives_no_estimate() {
        let (r, d) = feeds(0, MIN_MATCHED_FRAMES as i64 - 1);
        assert_eq!(estimate(&r, &d, FRAME, 5 * FRAME), None);
    }

    #[test]
    fn history_is_bounded_in_running_time() {
        let mut h = History::new(10 * FRAME);
        for i in 0..1000 {
            h.push_ref((i * FRAME, content(i, 0)));
            h.push_dist((i * FRAME, content(i, 1)));
        }
        assert_eq!(h.held(), 2 * 11);
        assert_eq!(h.covered_ns(), 10 * FRAME);
        assert_eq!(
            h.estimate(FRAME, 2 * FRAME).map(|e| e.offset_frames),
            Some(0)
        );
    }
}
