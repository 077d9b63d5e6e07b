//! What `aggregate` does: takes every buffer the pads hold into the [`Feeds`] queues, locks the
//! offset when the search is ready, then acts on each pairing decision (score a pair, pass an
//! unmatched reference frame through as part of a gap, count an unmatched distorted frame),
//! pushing reference frames out in order.

use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use super::super::feeds::{Feeds, Queued};
use super::super::pairing::{Missing, Step};
use super::super::picture::HostPicture;
use super::super::signature::LumaSignature;
use super::caps::PadFormat;
use super::messages::Messages;
use super::settings::DEFAULT_FRAME_NS;
use super::state::{OpenGap, State};
use super::{lock, VmafCuda, CAT};

impl VmafCuda {
    /// Duration of a frame of this format (from the frame rate; 25 fps when unknown).
    pub(super) fn frame_ns(format: &PadFormat) -> i64 {
        let fps = format.info.fps();
        if fps.numer() > 0 && fps.denom() > 0 {
            (1_000_000_000i64 * fps.denom() as i64) / fps.numer() as i64
        } else {
            DEFAULT_FRAME_NS
        }
    }

    /// Tells the aggregator how long reference frames wait here (pairing and alignment).
    pub(super) fn update_latency(&self) {
        let hold = lock(&self.state)
            .feeds
            .as_ref()
            .map_or(0, |f| f.config.hold_ns().max(0));
        let latency = gst::ClockTime::from_nseconds(hold as u64);
        gst::debug!(CAT, imp = self, "own latency {latency}");
        self.obj().set_latency(latency, Some(latency));
    }

    /// New reference caps: the frame duration (and the default tolerance) may have changed.
    pub(super) fn on_reference_format(&self, format: &PadFormat) {
        let frame_ns = Self::frame_ns(format);
        {
            let mut state = lock(&self.state);
            let config = state.settings.feed_config(frame_ns);
            match state.feeds.as_mut() {
                Some(f) if f.config == config => return,
                Some(f) if f.pairer.refs_len() + f.pairer.dist_len() == 0 => {
                    *f = Feeds::new(config)
                }
                Some(f) => {
                    f.config.frame_ns = frame_ns;
                    f.config.tolerance_ns = config.tolerance_ns;
                    f.pairer.tolerance_ns = config.tolerance_ns;
                }
                None => return,
            }
        }
        self.update_latency();
    }

    /// A shot boundary declared by an event on one pad: it takes effect before that pad's next
    /// frame, wherever that frame waits.
    pub(super) fn boundary_before_next(&self, on_ref: bool, why: &'static str) -> Messages {
        let mut state = lock(&self.state);
        match state.feeds.as_mut() {
            Some(f) => {
                f.boundary(on_ref, why);
                Messages::new()
            }
            None => self.boundary(&mut state, why),
        }
    }

    fn running_time(pad: &gst_base::AggregatorPad, buffer: &gst::Buffer) -> Option<i64> {
        let pts = buffer.pts().or(buffer.dts())?;
        let segment = pad.segment();
        let segment = segment.downcast_ref::<gst::ClockTime>()?;
        segment
            .to_running_time(pts)
            .map(|t| t.nseconds().min(i64::MAX as u64) as i64)
    }

    /// Fingerprint of a frame's luma, read in system memory (None if it cannot be mapped).
    fn signature(buffer: &gst::Buffer, format: &PadFormat) -> Option<LumaSignature> {
        let frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), &format.info)
                .ok()?;
        let picture = HostPicture::new(&frame, false).ok()?;
        Some(LumaSignature::of(&picture.luma()))
    }

    /// Moves buffers from the pads into the queues: live, everything the pads hold (the
    /// aggregator bounds that by the latency); otherwise one buffer per pad per call, so that
    /// neither feed runs ahead of the other just because its upstream is faster.
    fn take_in(&self, live: bool) {
        for (pad, on_ref) in [(&self.ref_pad, true), (&self.dist_pad, false)] {
            let mut taken = 0;
            while live || taken == 0 {
                let Some(buffer) = pad.pop_buffer() else {
                    break;
                };
                taken += 1;
                let rt = Self::running_time(pad, &buffer);
                let mut state = lock(&self.state);
                let format = if on_ref {
                    state.ref_format.clone()
                } else {
                    state.dist_format.clone()
                };
                let Some(feeds) = state.feeds.as_mut() else {
                    return;
                };
                // Fingerprints: always for the offset search; for repeat detection only where
                // they are cheap (system memory: no download of CUDA frames).
                let wanted = feeds.searching()
                    || (feeds.config.mode == super::super::pairing::Mode::Timestamps
                        && format.as_ref().is_some_and(|f| !f.cuda));
                let sig = match (&format, wanted) {
                    (Some(f), true) => Self::signature(&buffer, f),
                    _ => None,
                };
                gst::trace!(
                    CAT,
                    imp = self,
                    "queued {} frame pts {:?} running time {rt:?}",
                    if on_ref { "reference" } else { "distorted" },
                    buffer.pts()
                );
                feeds.push(on_ref, buffer, rt, sig);
            }
        }
    }

    /// Shot boundaries that were declared before a frame.
    fn apply_boundaries(&self, state: &mut State, item: &Queued) -> Messages {
        let mut out = Messages::new();
        for why in &item.boundaries {
            out.extend(self.boundary(state, why));
        }
        out
    }

    /// A reference frame goes out unscored: extends (or opens) a gap.
    fn on_missing(&self, state: &mut State, buffer: &gst::Buffer, why: Missing) -> Messages {
        let mut out = Messages::new();
        let reason = match why {
            Missing::DistEnded => return self.close_gap(state),
            Missing::Leading => "leading",
            Missing::Dropped => "dropped",
            Missing::Stalled => "stalled",
        };
        if state.gap.is_some_and(|g| g.reason != reason) {
            out.extend(self.close_gap(state));
        }
        if state.gap.is_none() {
            let shot = state.shots_posted;
            if why == Missing::Stalled {
                gst::warning!(
                    CAT,
                    imp = self,
                    "the distorted feed stalled: ending the shot"
                );
                out.extend(self.boundary(state, "distorted feed stalled"));
            }
            state.gap = Some(OpenGap {
                reason,
                shot,
                frames: 0,
                start: buffer.pts(),
                end: None,
            });
        }
        if let Some(g) = state.gap.as_mut() {
            g.frames += 1;
            g.end = match (buffer.pts(), buffer.duration()) {
                (Some(p), Some(d)) => Some(p + d),
                (p, _) => p.or(g.end),
            };
        }
        if why != Missing::Leading {
            state.frames_missing += 1;
            state.shot_missing += 1;
        }
        out
    }

    /// Live mode: the running time at which `aggregate` should be called even if a pad has no
    /// data (the aggregator adds its latency and waits for the clock to reach it).
    ///
    /// * A frame waits in either pad: at that frame's time. The aggregator only calls us by
    ///   itself when *both* pads hold data; a distorted frame left in its pad while the
    ///   reference pad is empty could fill that pad, block the distorted feed and, through a
    ///   source feeding both, the reference feed too, until some timeout. Taken in at its time,
    ///   every frame reaches the pairer, which decides by timestamps alone (a missing frame shows
    ///   as the next one being later; a stalled feed as the other feed running `stall` ahead).
    /// * No frame in the pads, reference ended: when the reference frame at the head of the
    ///   queue has waited its longest for a silent distorted feed (nothing else can end it).
    /// * Otherwise nothing can be decided before more data comes: no timeout (a timeout would
    ///   only wake us to find nothing to do, again and again).
    pub(super) fn live_deadline(&self) -> Option<gst::ClockTime> {
        let queued = [&self.ref_pad, &self.dist_pad]
            .into_iter()
            .filter_map(|pad| {
                let buffer = pad.peek_buffer()?;
                Self::running_time(pad, &buffer)
            })
            .min();
        let due = match queued {
            Some(t) => t,
            None if self.ref_pad.is_eos() => {
                let state = lock(&self.state);
                let feeds = state.feeds.as_ref()?;
                let rt = feeds.pairer.head_ref_rt()?;
                let offset = feeds.offset_ns().unwrap_or(feeds.config.window_ns);
                rt + offset.max(0) + feeds.config.tolerance_ns + feeds.config.stall_ns
            }
            None => return None,
        };
        Some(gst::ClockTime::from_nseconds(due.max(0) as u64))
    }

    /// The body of `aggregate`.
    pub(super) fn pair_and_score(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        // EOS read before taking the buffers in: every buffer before the EOS is then taken in
        // below, so an ended feed has nothing left in its pad.
        let ref_eos = self.ref_pad.is_eos();
        let dist_eos = self.dist_pad.is_eos();
        // The aggregator reports no latency unless a live source is connected.
        let live = self.obj().latency().is_some();
        self.take_in(live);
        let ref_eos = ref_eos && !self.ref_pad.has_buffer();
        let dist_eos = dist_eos && !self.dist_pad.has_buffer();
        {
            let mut state = lock(&self.state);
            let news = state.feeds.as_mut().and_then(|f| {
                f.pairer.set_dist_ended(dist_eos);
                // Only a live feed can stall; a non-live one is just slower upstream.
                f.pairer.stall_enabled = live;
                f.try_lock(ref_eos || dist_eos)
            });
            if let Some(news) = news {
                let m = self.align_message(&state, news);
                drop(state);
                self.post(vec![m]);
            }
        }
        let mut pushed = false;
        loop {
            let step = {
                let mut state = lock(&self.state);
                match state.feeds.as_mut() {
                    Some(f) => f.pairer.next(timeout && ref_eos),
                    None => None,
                }
            };
            let Some(step) = step else { break };
            match step {
                Step::Pair {
                    reference,
                    distorted,
                    repeated,
                } => {
                    let messages = {
                        let mut state = lock(&self.state);
                        let mut m = self.apply_boundaries(&mut state, &reference.item);
                        m.extend(self.apply_boundaries(&mut state, &distorted.item));
                        m.extend(self.close_gap(&mut state));
                        m
                    };
                    self.post(messages);
                    match self.score_pair(&reference.item.buffer, &distorted.item.buffer) {
                        Ok(messages) => self.post(messages),
                        Err(e) => {
                            self.post_error_message(e);
                            return Err(gst::FlowError::Error);
                        }
                    }
                    if repeated {
                        let mut state = lock(&self.state);
                        state.frames_repeated += 1;
                        state.shot_repeated += 1;
                    }
                    self.obj().finish_buffer(reference.item.buffer)?;
                    pushed = true;
                }
                Step::RefOnly { reference, why } => {
                    let (messages, warn) = {
                        let mut state = lock(&self.state);
                        let mut m = self.apply_boundaries(&mut state, &reference.item);
                        m.extend(self.on_missing(&mut state, &reference.item.buffer, why));
                        let warn = why == Missing::DistEnded
                            && !std::mem::replace(&mut state.dist_ended_warned, true);
                        (m, warn)
                    };
                    self.post(messages);
                    if warn {
                        gst::element_imp_warning!(
                            self,
                            gst::StreamError::Failed,
                            ("the distorted stream ended before the reference: remaining reference frames pass through unscored")
                        );
                    }
                    self.obj().finish_buffer(reference.item.buffer)?;
                    pushed = true;
                }
                Step::DistOnly {
                    distorted,
                    repeated,
                    leading,
                } => {
                    let messages = {
                        let mut state = lock(&self.state);
                        if !leading {
                            state.frames_extra += 1;
                            if repeated {
                                state.frames_repeated += 1;
                                state.shot_repeated += 1;
                            }
                        }
                        self.apply_boundaries(&mut state, &distorted.item)
                    };
                    self.post(messages);
                }
            }
        }
        let (refs_waiting, dist_waiting) = {
            let state = lock(&self.state);
            state
                .feeds
                .as_ref()
                .map_or((0, 0), |f| (f.pairer.refs_len(), f.pairer.dist_len()))
        };
        if ref_eos && refs_waiting == 0 {
            if dist_waiting > 0 && !dist_eos {
                gst::element_imp_warning!(
                    self,
                    gst::StreamError::Failed,
                    ("the reference ended before the distorted stream: extra distorted frames are not scored")
                );
            }
            {
                let mut state = lock(&self.state);
                let m = self.close_gap(&mut state);
                drop(state);
                self.post(m);
            }
            if let Err(e) = self.finish() {
                self.post_error_message(e);
                return Err(gst::FlowError::Error);
            }
            return Err(gst::FlowError::Eos);
        }
        if pushed {
            Ok(gst::FlowSuccess::Ok)
        } else {
            Err(gst_base::AGGREGATOR_FLOW_NEED_DATA)
        }
    }
}
