//! Matching reference and distorted frames by running time.
//!
//! Frames of both pads wait in two queues. The reference frame at the head, at running time
//! `t`, is matched with the distorted frame at `t + offset` (within `tolerance`); distorted
//! frames before that time match no reference frame (extra frames, or a repeated timestamp);
//! when the next distorted frame is already past it, the reference frame has no partner (a
//! dropped frame) and goes out unscored. Nothing is ever paired with the wrong frame just
//! because it arrived next. Frames without a timestamp are paired in arrival order, which is
//! also what `pairing=arrival` always does.
//!
//! A distorted frame that is sample-for-sample the previous one (equal [`LumaSignature`]s)
//! while the reference moved on is a repeated frame: it is scored (a viewer saw it) and counted.
//!
//! Queues are bounded: while the distorted feed is silent, reference frames wait at most
//! `stall` past the time their partner was due, then leave unscored (the element ends the shot
//! and reports the gap); distorted frames are kept at most `dist_limit` of running time.

use std::collections::VecDeque;

use super::signature::LumaSignature;

/// One frame waiting to be matched, with whatever the element attaches to it.
#[derive(Debug)]
pub struct Frame<T> {
    pub item: T,
    /// Running time in ns (None: no timestamp).
    pub rt: Option<i64>,
    pub sig: Option<LumaSignature>,
}

/// How frames are matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The n-th reference frame with the n-th distorted frame.
    Arrival,
    /// By running time, with an offset and a tolerance.
    Timestamps,
}

/// Why a reference frame has no partner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// Before the first matched pair: the distorted feed had not started yet.
    Leading,
    /// The distorted frame for this time never came (the next one is later).
    Dropped,
    /// The distorted feed went silent for longer than the stall timeout.
    Stalled,
    /// The distorted stream has ended.
    DistEnded,
}

/// One decision of the pairer.
// A step is moved once from the pairer to the element and never stored: the size difference
// between a pair and a single frame costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Step<T> {
    Pair {
        reference: Frame<T>,
        distorted: Frame<T>,
        /// The distorted picture repeats the previous distorted picture.
        repeated: bool,
    },
    RefOnly {
        reference: Frame<T>,
        why: Missing,
    },
    DistOnly {
        distorted: Frame<T>,
        /// Same picture as the last matched distorted frame (a repeated timestamp).
        repeated: bool,
        /// Before the first matched pair (the distorted feed started earlier).
        leading: bool,
    },
}

#[derive(Debug)]
pub struct Pairer<T> {
    pub mode: Mode,
    /// Largest |distorted - (reference + offset)| that still matches, ns.
    pub tolerance_ns: i64,
    /// Distorted minus reference running time; None while the offset is being searched
    /// (then nothing is matched in timestamp mode).
    pub offset_ns: Option<i64>,
    /// How long past its partner's due time a reference frame may wait, ns ...
    pub stall_ns: i64,
    /// ... if stalls are detected at all (live feeds).
    pub stall_enabled: bool,
    /// Most running time of distorted frames kept, ns.
    pub dist_limit_ns: i64,
    refs: VecDeque<Frame<T>>,
    dist: VecDeque<Frame<T>>,
    dist_ended: bool,
    last_ref_sig: Option<LumaSignature>,
    last_dist_sig: Option<LumaSignature>,
    paired_any: bool,
}

impl<T> Pairer<T> {
    pub fn new(mode: Mode, tolerance_ns: i64, stall_ns: i64, dist_limit_ns: i64) -> Pairer<T> {
        Pairer {
            mode,
            tolerance_ns,
            offset_ns: Some(0),
            stall_ns,
            stall_enabled: true,
            dist_limit_ns,
            refs: VecDeque::new(),
            dist: VecDeque::new(),
            dist_ended: false,
            last_ref_sig: None,
            last_dist_sig: None,
            paired_any: false,
        }
    }

    pub fn push_ref(&mut self, f: Frame<T>) {
        self.refs.push_back(f);
    }

    pub fn push_dist(&mut self, f: Frame<T>) {
        self.dist.push_back(f);
    }

    pub fn set_dist_ended(&mut self, ended: bool) {
        self.dist_ended = ended;
    }

    pub fn refs_len(&self) -> usize {
        self.refs.len()
    }

    pub fn dist_len(&self) -> usize {
        self.dist.len()
    }

    /// Running time between the oldest and newest waiting reference frame.
    pub fn ref_span_ns(&self) -> i64 {
        match (
            self.refs.front().and_then(|f| f.rt),
            self.refs.back().and_then(|f| f.rt),
        ) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        }
    }

    /// Running time of the reference frame at the head of the queue.
    pub fn head_ref_rt(&self) -> Option<i64> {
        self.refs.front().and_then(|f| f.rt)
    }

    /// Whether the head reference frame has a timestamp (alignment needs them).
    pub fn head_ref_timed(&self) -> Option<bool> {
        self.refs.front().map(|f| f.rt.is_some())
    }

    /// Drops everything waiting (flush); the items are returned to be released.
    pub fn clear(&mut self) -> Vec<T> {
        self.last_ref_sig = None;
        self.last_dist_sig = None;
        self.refs
            .drain(..)
            .chain(self.dist.drain(..))
            .map(|f| f.item)
            .collect()
    }

    fn pair_heads(&mut self) -> Option<Step<T>> {
        let reference = self.refs.pop_front()?;
        let distorted = self.dist.pop_front()?;
        let repeated = match (
            distorted.sig,
            self.last_dist_sig,
            reference.sig,
            self.last_ref_sig,
        ) {
            (Some(d), Some(ld), Some(r), Some(lr)) => d == ld && r != lr,
            _ => false,
        };
        self.last_ref_sig = reference.sig;
        self.last_dist_sig = distorted.sig;
        self.paired_any = true;
        Some(Step::Pair {
            reference,
            distorted,
            repeated,
        })
    }

    fn ref_only(&mut self, why: Missing) -> Option<Step<T>> {
        let reference = self.refs.pop_front()?;
        Some(Step::RefOnly { reference, why })
    }

    fn dist_only(&mut self) -> Option<Step<T>> {
        let distorted = self.dist.pop_front()?;
        let repeated = distorted.sig.is_some() && distorted.sig == self.last_dist_sig;
        Some(Step::DistOnly {
            distorted,
            repeated,
            leading: !self.paired_any,
        })
    }

    /// The next decision that can be made now; None means: wait for more frames.
    /// `deadline_passed` says that no more reference frames will come for a while (live
    /// timeout after the reference ended): a waiting reference frame then counts as stalled.
    pub fn next(&mut self, deadline_passed: bool) -> Option<Step<T>> {
        // Bound the distorted queue (the reference feed is silent, or far behind).
        if let (Some(a), Some(b)) = (
            self.dist.front().and_then(|f| f.rt),
            self.dist.back().and_then(|f| f.rt),
        ) {
            if b - a > self.dist_limit_ns {
                return self.dist_only();
            }
        }
        let head = self.refs.front()?;
        let head_rt = head.rt;
        if self.mode == Mode::Arrival || head_rt.is_none() {
            if !self.dist.is_empty() {
                return self.pair_heads();
            }
            return if self.dist_ended {
                self.ref_only(Missing::DistEnded)
            } else {
                None
            };
        }
        let target = head_rt? + self.offset_ns?;
        if let Some(d) = self.dist.front() {
            return match d.rt {
                None => self.pair_heads(),
                Some(t) if t < target - self.tolerance_ns => self.dist_only(),
                Some(t) if t <= target + self.tolerance_ns => self.pair_heads(),
                Some(_) if self.paired_any => self.ref_only(Missing::Dropped),
                Some(_) => self.ref_only(Missing::Leading),
            };
        }
        if self.dist_ended {
            return self.ref_only(Missing::DistEnded);
        }
        let newest = self.refs.back().and_then(|f| f.rt).unwrap_or(target);
        if deadline_passed || (self.stall_enabled && newest - target > self.stall_ns) {
            return self.ref_only(Missing::Stalled);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmafcuda::frame::{Plane, Samples};

    const F: i64 = 40_000_000;

    fn sig(seed: u8) -> Option<LumaSignature> {
        let data: Vec<u8> = (0..32 * 32).map(|i| (i as u8).wrapping_mul(seed)).collect();
        Some(LumaSignature::of(&Plane {
            samples: Samples::U8(&data),
            width: 32,
            height: 32,
            stride: 32,
            bpc: 8,
        }))
    }

    fn frame(id: u32, frame_no: i64, seed: u8) -> Frame<u32> {
        Frame {
            item: id,
            rt: Some(frame_no * F),
            sig: sig(seed),
        }
    }

    /// Runs the pairer to completion: pairs (ref id, dist id, repeated) and counts.
    /// Pairs (ref id, dist id, repeated), unmatched references, extra and repeated extras.
    type Drained = (Vec<(u32, u32, bool)>, Vec<(u32, Missing)>, usize, usize);

    fn drain(p: &mut Pairer<u32>) -> Drained {
        let (mut pairs, mut missing, mut extra, mut repeats) = (vec![], vec![], 0, 0);
        while let Some(s) = p.next(false) {
            match s {
                Step::Pair {
                    reference,
                    distorted,
                    repeated,
                } => pairs.push((reference.item, distorted.item, repeated)),
                Step::RefOnly { reference, why } => missing.push((reference.item, why)),
                Step::DistOnly { repeated, .. } => {
                    extra += 1;
                    repeats += repeated as usize
                }
            }
        }
        (pairs, missing, extra, repeats)
    }

    #[test]
    fn equal_timestamps_pair_like_arrival_order() {
        let mut p = Pairer::new(Mode::Timestamps, F / 2 - 1, 10 * F, 100 * F);
        for i in 0..5 {
            p.push_ref(frame(i, i as i64, i as u8 + 1));
            p.push_dist(frame(100 + i, i as i64, i as u8 + 1));
        }
        let (pairs, missing, extra, _) = drain(&mut p);
        assert_eq!(pairs.len(), 5);
        assert!(pairs.iter().all(|&(r, d, rep)| d == r + 100 && !rep));
        assert!(missing.is_empty() && extra == 0);
        // A reference frame whose partner is not there yet waits.
        p.push_ref(frame(5, 5, 6));
        assert!(p.next(false).is_none());
        p.push_dist(frame(105, 5, 6));
        let (pairs, ..) = drain(&mut p);
        assert_eq!(pairs, vec![(5, 105, false)]);
    }

    #[test]
    fn dropped_distorted_frames_leave_the_reference_unscored() {
        let mut p = Pairer::new(Mode::Timestamps, F / 2 - 1, 10 * F, 100 * F);
        for i in 0..8 {
            p.push_ref(frame(i, i as i64, i as u8 + 1));
            if i != 3 && i != 4 {
                p.push_dist(frame(100 + i, i as i64, i as u8 + 1));
            }
        }
        p.set_dist_ended(true);
        let (pairs, missing, extra, _) = drain(&mut p);
        assert_eq!(missing, vec![(3, Missing::Dropped), (4, Missing::Dropped)]);
        assert_eq!(
            pairs.iter().map(|p| p.0).collect::<Vec<_>>(),
            vec![0, 1, 2, 5, 6, 7]
        );
        assert!(pairs.iter().all(|&(r, d, _)| d == r + 100));
        assert_eq!(extra, 0);
    }

    #[test]
    fn repeated_pictures_and_timestamps_are_counted() {
        let mut p = Pairer::new(Mode::Timestamps, F / 2 - 1, 10 * F, 100 * F);
        for i in 0..6 {
            p.push_ref(frame(i, i as i64, i as u8 + 1));
        }
        // Frame 2 pushed twice (same timestamp and picture); frame 4 shows frame 3's picture.
        for (id, t, seed) in [
            (100, 0, 1),
            (101, 1, 2),
            (102, 2, 3),
            (103, 2, 3),
            (104, 3, 4),
            (105, 4, 4),
            (106, 5, 6),
        ] {
            p.push_dist(frame(id, t, seed));
        }
        p.set_dist_ended(true);
        let (pairs, missing, extra, repeats) = drain(&mut p);
        assert!(missing.is_empty());
        assert_eq!((extra, repeats), (1, 1), "one repeated timestamp");
        let repeated: Vec<u32> = pairs.iter().filter(|p| p.2).map(|p| p.0).collect();
        assert_eq!(repeated, vec![4], "frame 4 repeats frame 3's picture");
        assert_eq!(pairs.len(), 6);
    }

    #[test]
    fn an_offset_matches_delayed_feeds_in_both_directions() {
        for delay in [-7i64, 5] {
            let mut p = Pairer::new(Mode::Timestamps, F / 2 - 1, 100 * F, 100 * F);
            p.offset_ns = Some(delay * F);
            for i in 0..20i64 {
                p.push_ref(frame(i as u32, i + 10, i as u8 + 1));
                p.push_dist(frame(100 + i as u32, i + 10 + delay, i as u8 + 1));
            }
            p.set_dist_ended(true);
            let (pairs, missing, extra, _) = drain(&mut p);
            assert_eq!(pairs.len(), 20, "delay {delay}");
            assert!(pairs.iter().all(|&(r, d, _)| d == r + 100));
            assert!(missing.is_empty() && extra == 0);
        }
    }

    #[test]
    fn a_silent_distorted_feed_releases_reference_frames_after_the_stall_timeout() {
        let mut p = Pairer::new(Mode::Timestamps, F / 2 - 1, 5 * F, 100 * F);
        p.push_ref(frame(0, 0, 1));
        p.push_dist(frame(100, 0, 1));
        for i in 1..20 {
            p.push_ref(frame(i, i as i64, 1));
        }
        let (pairs, missing, ..) = drain(&mut p);
        assert_eq!(pairs.len(), 1);
        // Frames 1..=13 are more than 5 frames older than the newest (19): released.
        assert_eq!(missing.len(), 13);
        assert!(missing.iter().all(|m| m.1 == Missing::Stalled));
        assert!(p.refs_len() <= 6);
        assert!(matches!(
            p.next(true),
            Some(Step::RefOnly {
                why: Missing::Stalled,
                ..
            })
        ));
    }

    #[test]
    fn untimed_frames_and_arrival_mode_pair_in_arrival_order() {
        let mut p: Pairer<u32> = Pairer::new(Mode::Arrival, 0, F, F);
        p.push_ref(frame(0, 0, 1));
        p.push_dist(frame(100, 9, 1));
        assert!(matches!(p.next(false), Some(Step::Pair { .. })));
        let mut p: Pairer<u32> = Pairer::new(Mode::Timestamps, 0, F, F);
        p.push_ref(Frame {
            item: 0,
            rt: None,
            sig: None,
        });
        p.push_dist(Frame {
            item: 1,
            rt: None,
            sig: None,
        });
        assert!(matches!(p.next(false), Some(Step::Pair { .. })));
    }
}
