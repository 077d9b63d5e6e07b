//! The `vmafcuda` aggregator: pairs reference and distorted buffers, feeds the engine's
//! [`Scorer`](vmafcuda::Scorer), turns shot boundaries from every source into
//! `Scorer::end_shot`, and posts the results. See the module docs of `super` for pads,
//! properties and messages.
//!
//! This file holds the subclass and its vfuncs, which delegate to the child modules:
//! `settings` (properties), `state`, `caps` (pads and caps), `messages` (bus messages),
//! `memory` (CUDA context, zero-copy and system-memory mapping), `pairing_loop` (the body of
//! `aggregate`) and `scoring` (the engine's `Scorer`, results files).

use std::sync::{LazyLock, Mutex, MutexGuard};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use super::{ShotDetection, SHOT_BOUNDARY_EVENT};
use crate::cuda_ffi::Api;
use messages::Messages;
use settings::Settings;
use state::State;

mod caps;
mod memory;
mod messages;
mod pairing_loop;
mod scoring;
mod settings;
mod state;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "vmafcuda",
        gst::DebugColorFlags::empty(),
        Some("VMAF (bit-exact with libvmaf) on CUDA or CPU"),
    )
});

pub struct VmafCuda {
    ref_pad: gst_base::AggregatorPad,
    dist_pad: gst_base::AggregatorPad,
    settings: Mutex<Settings>,
    state: Mutex<State>,
    /// The shared `GstCudaContext`, found through context sharing or created for us.
    cuda_context: Mutex<Option<gst::Object>>,
    /// `metrics-file` of the current run (fed by `post`).
    metrics: Mutex<Option<messages::MetricsSink>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic never crosses a vfunc (see `catch`), so poisoning only follows a bug; the data
    // is still consistent enough to shut down.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs a vfunc body, turning a panic into an element error (no panic crosses into C).
fn catch<R>(imp: &VmafCuda, fallback: R, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            gst::element_imp_error!(imp, gst::CoreError::Failed, ("internal error (panic)"));
            fallback
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for VmafCuda {
    const NAME: &'static str = "GstVmafCuda";
    type Type = super::VmafCuda;
    type ParentType = gst_base::Aggregator;

    fn with_class(klass: &Self::Class) -> Self {
        let pad = |name: &str| {
            let templ = klass
                .pad_template(name)
                .expect("pad templates are registered in pad_templates()");
            gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ).build()
        };
        VmafCuda {
            ref_pad: pad("ref_sink"),
            dist_pad: pad("dist_sink"),
            settings: Mutex::new(Settings::default()),
            state: Mutex::new(State::default()),
            cuda_context: Mutex::new(None),
            metrics: Mutex::new(None),
        }
    }
}

impl ObjectImpl for VmafCuda {
    fn properties() -> &'static [glib::ParamSpec] {
        settings::properties()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        self.store_property(value, pspec)
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        self.read_property(pspec)
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        // Adding our own always pads cannot fail: the names are unique.
        let _ = obj.add_pad(&self.ref_pad);
        let _ = obj.add_pad(&self.dist_pad);
    }
}

impl GstObjectImpl for VmafCuda {}

impl ElementImpl for VmafCuda {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "VMAF (CUDA, per shot)",
                "Filter/Analyzer/Video",
                "Netflix VMAF of dist_sink against ref_sink, bit-exact with libvmaf 3.2.0, \
                 scored per shot on CUDA (zero-copy from CUDA memory) or the CPU; \
                 results as VMAF element messages and a libvmaf-layout results file. \
                 Bus: element messages named VMAF with type=frame (with frame-message: index, \
                 shot, timestamp, stream-time, running-time, duration, score, psnr-y with psnr, \
                 one field per feature), type=shot (index, first-frame, last-frame, frames, \
                 start, end, score, mean, harmonic-mean, min, max, p5) and type=pooled at EOS \
                 (timestamp, stream-time, running-time, duration, the same statistics, frames, \
                 shots, frames-in-place, frames-system-memory). Properties and message fields \
                 of GStreamer's vmaf element are all supported (ssim, ms-ssim, conf-interval \
                 only warn). Shots start at shot-boundaries, at \
                 vmafcuda-shot-boundary custom downstream events, new segments, stream-start, and \
                 with shot-detection=events|auto at force-key-unit events or detected cuts",
                "vmafcuda developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        caps::pad_templates()
    }

    fn set_context(&self, context: &gst::Context) {
        if let Some(api) = Api::get() {
            self.adopt_context(api, context);
        }
        self.parent_set_context(context)
    }
}

impl AggregatorImpl for VmafCuda {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        catch(
            self,
            Err(gst::error_msg!(gst::CoreError::Failed, ("panic in start"))),
            || self.start_run(),
        )
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        catch(self, Ok(()), || {
            // A run stopped without EOS still reports what it scored (as upstream's vmaf).
            let r = self.finish();
            *lock(&self.state) = State::default();
            r
        })
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        catch(self, Err(gst::FlowError::Error), || {
            self.pair_and_score(timeout)
        })
    }

    fn sink_event(&self, pad: &gst_base::AggregatorPad, event: gst::Event) -> bool {
        let handled = catch(self, Some(false), || {
            use gst::EventView;
            let is_ref = pad == &self.ref_pad;
            let messages = match event.view() {
                EventView::Caps(c) => {
                    if !self.on_caps(pad, c.caps()) {
                        return Some(false);
                    }
                    Messages::new()
                }
                EventView::StreamStart(_) if is_ref => {
                    self.boundary_before_next(is_ref, "stream-start")
                }
                EventView::Segment(s) if is_ref => {
                    self.obj().update_segment(s.segment());
                    self.boundary_before_next(is_ref, "new segment")
                }
                EventView::CustomDownstream(c)
                    if c.structure()
                        .is_some_and(|s| s.name() == SHOT_BOUNDARY_EVENT) =>
                {
                    let m = self.boundary_before_next(is_ref, "vmafcuda-shot-boundary event");
                    self.post(m);
                    // Addressed to us: consumed.
                    return Some(true);
                }
                _ if gst_video::DownstreamForceKeyUnitEvent::parse(&event).is_ok() => {
                    let mode = lock(&self.state).settings.shot_detection;
                    if mode == ShotDetection::None {
                        Messages::new()
                    } else {
                        self.boundary_before_next(is_ref, "force-key-unit event")
                    }
                }
                _ => Messages::new(),
            };
            self.post(messages);
            None
        });
        match handled {
            Some(result) => result,
            None => self.parent_sink_event(pad, event),
        }
    }

    fn flush(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let messages = catch(self, Messages::new(), || {
            let mut state = lock(&self.state);
            if let Some(f) = state.feeds.as_mut() {
                f.clear();
            }
            let mut m = self.close_gap(&mut state);
            m.extend(self.boundary(&mut state, "flush"));
            m
        });
        self.post(messages);
        self.parent_flush()
    }

    fn next_time(&self) -> Option<gst::ClockTime> {
        catch(self, None, || self.live_deadline())
    }

    fn update_src_caps(&self, _caps: &gst::Caps) -> Result<gst::Caps, gst::FlowError> {
        // The reference passes through unchanged.
        self.ref_pad
            .current_caps()
            .ok_or(gst_base::AGGREGATOR_FLOW_NEED_DATA)
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        if catch(self, false, || self.answer_context_query(query)) {
            return true;
        }
        self.parent_src_query(query)
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        if catch(self, false, || self.answer_context_query(query)) {
            return true;
        }
        self.parent_sink_query(pad, query)
    }
}
