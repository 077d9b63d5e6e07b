//! The two input feeds as the element holds them: frames waiting to be paired
//! ([`Pairer`]), the fingerprint history for the offset search ([`History`]), whether the
//! offset is locked, and shot boundaries that arrived as events between frames (kept with the
//! frame they precede, so they take effect at the right frame even while frames wait).

use super::align::{Estimate, History};
use super::pairing::{Frame, Mode, Pairer};
use super::signature::LumaSignature;

/// Running time of both feeds the offset search wants beyond `align-window` before it locks.
pub const MATCH_NS: i64 = 1_000_000_000;

/// A waiting buffer and the shot boundaries declared just before it.
#[derive(Debug)]
pub struct Queued {
    pub buffer: gst::Buffer,
    pub boundaries: Vec<&'static str>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeedConfig {
    pub mode: Mode,
    pub tolerance_ns: i64,
    pub auto_align: bool,
    /// `align-offset` (the offset when not searching, and the fallback of the search).
    pub offset_ns: i64,
    pub window_ns: i64,
    pub stall_ns: i64,
    /// Duration of a reference frame.
    pub frame_ns: i64,
}

impl FeedConfig {
    /// Longest a reference frame waits for its partner in normal operation: the element's own
    /// latency.
    pub fn hold_ns(&self) -> i64 {
        match (self.mode, self.auto_align) {
            (Mode::Arrival, _) => 0,
            (Mode::Timestamps, false) => self.offset_ns.max(0) + self.tolerance_ns,
            (Mode::Timestamps, true) => self.window_ns + MATCH_NS + self.tolerance_ns,
        }
    }
}

/// How the offset was settled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AlignNews {
    /// First lock: the search's result (None: not enough matching frames, `align-offset` used)
    /// and why it locked now.
    Locked(Option<Estimate>, &'static str),
    /// A re-check found a different offset.
    Changed(Estimate),
}

#[derive(Debug)]
pub struct Feeds {
    pub config: FeedConfig,
    pub pairer: Pairer<Queued>,
    history: Option<History>,
    locked: bool,
    ref_boundaries: Vec<&'static str>,
    dist_boundaries: Vec<&'static str>,
}

impl Feeds {
    pub fn new(config: FeedConfig) -> Feeds {
        let dist_limit = 2 * config.window_ns + MATCH_NS + config.stall_ns + config.tolerance_ns;
        let mut pairer = Pairer::new(
            config.mode,
            config.tolerance_ns,
            config.stall_ns,
            dist_limit,
        );
        pairer.offset_ns = (!config.auto_align).then_some(config.offset_ns);
        Feeds {
            config,
            pairer,
            history: config
                .auto_align
                .then(|| History::new(2 * config.window_ns + MATCH_NS)),
            locked: !config.auto_align,
            ref_boundaries: Vec::new(),
            dist_boundaries: Vec::new(),
        }
    }

    /// Whether fingerprints of this feed's frames are wanted for the offset search.
    pub fn searching(&self) -> bool {
        self.history.is_some()
    }

    pub fn offset_ns(&self) -> Option<i64> {
        self.pairer.offset_ns
    }

    /// A shot boundary before the next frame of one feed.
    pub fn boundary(&mut self, on_ref: bool, why: &'static str) {
        if on_ref {
            self.ref_boundaries.push(why)
        } else {
            self.dist_boundaries.push(why)
        }
    }

    pub fn push(
        &mut self,
        on_ref: bool,
        buffer: gst::Buffer,
        rt: Option<i64>,
        sig: Option<LumaSignature>,
    ) {
        let boundaries = std::mem::take(if on_ref {
            &mut self.ref_boundaries
        } else {
            &mut self.dist_boundaries
        });
        if let (Some(h), Some(t), Some(s)) = (self.history.as_mut(), rt, sig) {
            if on_ref {
                h.push_ref((t, s))
            } else {
                h.push_dist((t, s))
            }
        }
        let frame = Frame {
            item: Queued { buffer, boundaries },
            rt,
            sig,
        };
        if on_ref {
            self.pairer.push_ref(frame)
        } else {
            self.pairer.push_dist(frame)
        }
    }

    /// Locks the offset when the search has seen enough (or can wait no longer: a feed ended,
    /// frames without timestamps, the reference queue at its bound).
    pub fn try_lock(&mut self, ended: bool) -> Option<AlignNews> {
        if self.locked {
            return None;
        }
        let window = self.config.window_ns;
        let why = if self.pairer.head_ref_timed() == Some(false) {
            "frames without timestamps"
        } else if ended {
            "end of a feed"
        } else if self
            .history
            .as_ref()
            .is_some_and(|h| h.covered_ns() >= window + MATCH_NS)
        {
            "enough frames"
        } else if self.pairer.stall_enabled
            && self.pairer.ref_span_ns() > window + MATCH_NS + self.config.stall_ns
        {
            "distorted feed silent"
        } else {
            return None;
        };
        let estimate = self
            .history
            .as_ref()
            .and_then(|h| h.estimate(self.config.frame_ns, window));
        self.pairer.offset_ns = Some(estimate.map_or(self.config.offset_ns, |e| e.offset_ns));
        self.locked = true;
        Some(AlignNews::Locked(estimate, why))
    }

    /// Re-measures the offset (at a shot boundary); a clearly different one replaces it.
    pub fn recheck(&mut self) -> Option<AlignNews> {
        if !self.locked {
            return None;
        }
        let e = self
            .history
            .as_ref()?
            .estimate(self.config.frame_ns, self.config.window_ns)?;
        if !e.distinct || Some(e.offset_ns) == self.pairer.offset_ns {
            return None;
        }
        self.pairer.offset_ns = Some(e.offset_ns);
        Some(AlignNews::Changed(e))
    }

    /// Flush: drops every waiting frame and pending boundary. A locked offset stays (it is a
    /// property of the processing chain, not of the position in the stream).
    pub fn clear(&mut self) {
        drop(self.pairer.clear());
        self.ref_boundaries.clear();
        self.dist_boundaries.clear();
        if let Some(h) = self.history.as_mut() {
            h.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmafcuda::frame::{Plane, Samples};

    const F: i64 = 40_000_000;

    fn sig(i: i64) -> LumaSignature {
        let data: Vec<u8> = (0..32 * 32)
            .map(|p| ((p as i64 * 7 + i * i * 13 + i * 29).rem_euclid(251)) as u8)
            .collect();
        LumaSignature::of(&Plane {
            samples: Samples::U8(&data),
            width: 32,
            height: 32,
            stride: 32,
            bpc: 8,
        })
    }

    fn config() -> FeedConfig {
        FeedConfig {
            mode: Mode::Timestamps,
            tolerance_ns: F / 2 - 1,
            auto_align: true,
            offset_ns: 0,
            window_ns: 10 * F,
            stall_ns: 25 * F,
            frame_ns: F,
        }
    }

    /// Feeds frames `from..to` of both feeds, the distorted one `delay` frames late.
    fn feed(f: &mut Feeds, from: i64, to: i64, delay: i64) {
        for i in from..to {
            f.push(true, gst::Buffer::new(), Some(i * F), Some(sig(i)));
            f.push(
                false,
                gst::Buffer::new(),
                Some((i + delay) * F),
                Some(sig(i)),
            );
        }
    }

    #[test]
    fn locks_once_enough_is_seen_and_a_recheck_follows_a_changed_delay() {
        gst::init().expect("gst");
        let mut f = Feeds::new(config());
        assert_eq!(f.offset_ns(), None, "searching");
        feed(&mut f, 0, 20, 3);
        assert_eq!(f.try_lock(false), None, "not enough running time yet");
        feed(&mut f, 20, 40, 3);
        match f.try_lock(false) {
            Some(AlignNews::Locked(Some(e), "enough frames")) => assert_eq!(e.offset_frames, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(f.offset_ns(), Some(3 * F));
        assert_eq!(f.recheck(), None, "same delay: no change");
        // The processing chain now delays by 6 frames; the history forgets the old frames.
        feed(&mut f, 1000, 1060, 6);
        match f.recheck() {
            Some(AlignNews::Changed(e)) => assert_eq!(e.offset_frames, 6),
            other => panic!("{other:?}"),
        }
        assert_eq!(f.offset_ns(), Some(6 * F));
        assert_eq!(
            FeedConfig {
                auto_align: false,
                offset_ns: 2 * F,
                ..config()
            }
            .hold_ns(),
            2 * F + F / 2 - 1
        );
    }
}
