//! Driving the engine's `Scorer`: a run's start and end, each frame pair (in place from CUDA
//! memory or from system memory), shot boundaries, what the scorer completed (turned into
//! messages) and the results files.

use gst::subclass::prelude::*;
use gst_base::prelude::*;

use vmafcuda::cuda;
use vmafcuda::model::{Model, PredictOptions};
use vmafcuda::pool::{self, MetricPool};
use vmafcuda::results_file::ResultsWriter;
use vmafcuda::scorer::BackendKind;
use vmafcuda::shots::{ShotDetector, ShotDetectorConfig};
use vmafcuda::{Geometry, Scorer, ScorerConfig};

use super::super::alerts::{AlertMonitor, ScoredFrame};
use super::super::feeds::Feeds;
use super::super::picture::HostPicture;
use super::super::report_page::{self, PageInputs};
use super::super::{Backend, LogLevel, Pooling, ResultsFormat, ShotDetection};
use super::caps::PadFormat;
use super::memory::map_readable;
use super::messages::Messages;
use super::settings::{parse_boundaries, DEFAULT_FRAME_NS};
use super::state::{FrameTimes, State};
use super::{lock, VmafCuda, CAT};

impl VmafCuda {
    /// The body of `start`: reads the settings once for the run, loads the model and makes a
    /// fresh state (keeping the caps already negotiated).
    pub(super) fn start_run(&self) -> Result<(), gst::ErrorMessage> {
        let settings = self.settings();
        let boundaries = parse_boundaries(&settings.shot_boundaries)
            .map_err(|e| gst::error_msg!(gst::ResourceError::Settings, ("{e}")))?;
        let name = settings.model_filename.as_str();
        let model = Model::builtin(name)
            .or_else(|builtin_err| {
                if std::path::Path::new(name).exists() {
                    Model::from_json_file(name).map_err(|e| e.to_string())
                } else {
                    Err(builtin_err.to_string())
                }
            })
            .map_err(|e| {
                gst::error_msg!(
                    gst::ResourceError::NotFound,
                    ("cannot load model {name:?}: {e}")
                )
            })?;
        for what in settings.unsupported() {
            // Upstream `vmaf` properties that exist here so that its pipelines run, but whose
            // computation this element does not have: said once per run, never silently.
            gst::element_imp_warning!(
                self,
                gst::LibraryError::Settings,
                ("{what}"),
                ["the property exists for compatibility with GStreamer's vmaf element"]
            );
        }
        if settings.threads != 0 || settings.log_level != LogLevel::None {
            gst::info!(
                CAT,
                imp = self,
                "threads={} and log-level={:?} are accepted for compatibility with the vmaf \
                 element; they change no score (logging: GST_DEBUG=vmafcuda:N)",
                settings.threads,
                settings.log_level
            );
        }
        let metrics_file = settings.metrics_file.clone();
        let mut state = lock(&self.state);
        let (rf, df) = (state.ref_format.take(), state.dist_format.take());
        let frame_ns = rf.as_ref().map_or(DEFAULT_FRAME_NS, Self::frame_ns);
        let feeds = Feeds::new(settings.feed_config(frame_ns));
        let alerts = AlertMonitor::new(settings.alert_config());
        *state = State {
            feeds: Some(feeds),
            alerts: alerts.enabled().then_some(alerts),
            settings,
            boundaries,
            model: Some(model),
            ref_format: rf,
            dist_format: df,
            ..State::default()
        };
        drop(state);
        self.start_metrics(metrics_file.as_deref());
        self.update_latency();
        Ok(())
    }

    /// Frame and shot messages for what the scorer completed.
    fn handle_progress(&self, state: &mut State, progress: vmafcuda::scorer::Progress) -> Messages {
        let mut out = Messages::new();
        let subsample = state.settings.subsample.max(1) as usize;
        if let Some(w) = state.results.as_mut() {
            // libvmaf writes and pools only every n-th frame.
            if let Err(e) = w.progress(&progress, |f| f.index.is_multiple_of(subsample)) {
                gst::element_imp_error!(
                    self,
                    gst::ResourceError::Write,
                    ("cannot write results file: {e}")
                );
                state.results = None;
            }
        }
        for f in &progress.frames {
            if !f.index.is_multiple_of(subsample) {
                continue;
            }
            state.pending.push((f.index, f.vmaf()));
            if let Some(p) = state.stream_vmaf.as_mut() {
                p.push(f.vmaf());
            }
            if let (Some(pool), Some(p)) = (state.stream_psnr_y.as_mut(), f.get("psnr_y")) {
                pool.push(p);
            }
            if state.settings.frame_message {
                out.push(self.frame_message(state, f));
            }
            if let Some(monitor) = state.alerts.as_mut() {
                let times = state.times.get(&f.index).copied().unwrap_or_default();
                let frame = ScoredFrame {
                    index: f.index as u64,
                    shot: state.shots_posted,
                    pts: times.pts.map(|t| t.nseconds()),
                    duration: times.duration.map(|t| t.nseconds()),
                    score: f.vmaf(),
                };
                state.shot_frames.push(frame);
                if let Some(alert) = monitor.frame(frame) {
                    out.extend(self.alert_messages(&alert));
                }
            }
        }
        for s in &progress.shots {
            gst::debug!(
                CAT,
                imp = self,
                "shot {} ended: frames {}..={}",
                s.index,
                s.first_frame,
                s.last_frame
            );
            out.extend(self.shot_message(state, s));
        }
        if !progress.shots.is_empty() {
            // The offset between the feeds is re-checked at every shot boundary.
            if let Some(news) = state.feeds.as_mut().and_then(|f| f.recheck()) {
                out.push(self.align_message(state, news));
            }
        }
        out
    }

    /// A shot starts at the next frame.
    pub(super) fn boundary(&self, state: &mut State, why: &str) -> Messages {
        if let Some(d) = state.detector.as_mut() {
            d.reset();
        }
        let Some(scorer) = state.scorer.as_mut() else {
            return Messages::new();
        };
        gst::debug!(
            CAT,
            imp = self,
            "shot boundary before frame {} ({why})",
            state.next_frame
        );
        let progress = scorer.end_shot();
        self.handle_progress(state, progress)
    }

    /// A reference buffer's PTS and duration, and (as upstream `vmaf` posts them) its running
    /// and stream time in the reference pad's segment.
    fn frame_times(&self, reference: &gst::Buffer) -> FrameTimes {
        let pts = reference.pts();
        let segment = self.ref_pad.segment();
        let segment = segment.downcast_ref::<gst::ClockTime>();
        FrameTimes {
            pts,
            duration: reference.duration(),
            running_time: pts.and_then(|t| segment?.to_running_time(t)),
            stream_time: pts.and_then(|t| segment?.to_stream_time(t)),
        }
    }

    /// The scorer for the negotiated formats, built on the first frame pair.
    fn ensure_scorer(&self, state: &mut State) -> Result<(), gst::ErrorMessage> {
        if state.scorer.is_some() {
            return Ok(());
        }
        let (Some(r), Some(_)) = (&state.ref_format, &state.dist_format) else {
            return Err(gst::error_msg!(
                gst::CoreError::Negotiation,
                ("buffers arrived before caps on ref_sink and dist_sink")
            ));
        };
        let any_cuda_caps = r.cuda || state.dist_format.as_ref().is_some_and(|d| d.cuda);
        let geometry = Geometry {
            width: r.info.width() as usize,
            height: r.info.height() as usize,
            bpc: r.layout.bpc,
        };
        let settings = state.settings.clone();
        let model = state
            .model
            .clone()
            .ok_or_else(|| gst::error_msg!(gst::LibraryError::Init, ("no model loaded")))?;
        let mut config = ScorerConfig::new(model);
        config.predict = PredictOptions {
            enable_transform: settings.transform(),
            disable_clip: settings.disable_clip,
        };
        config.psnr = settings.psnr;
        config.shot_starts = state.boundaries.clone();
        // The HTML report draws every frame and shot at EOS; the results file is streamed.
        let keep = settings.report_filename.is_some();
        config.keep_frames = keep;
        config.keep_shots = keep;
        // The aggregator reports a latency only when a live source is connected.
        let live = self.obj().latency().is_some();
        let pooling = match settings.pooling {
            Pooling::Exact => pool::Pooling::Exact,
            Pooling::Bounded => pool::Pooling::Bounded,
            Pooling::Auto if live => pool::Pooling::Bounded,
            Pooling::Auto => pool::Pooling::Exact,
        };
        config.pooling = pooling;
        let results = match settings.results_filename.as_deref() {
            Some(path) => {
                let format = match settings.results_format {
                    ResultsFormat::Csv => vmafcuda::report::Format::Csv,
                    ResultsFormat::Xml => vmafcuda::report::Format::Xml,
                    ResultsFormat::Json | ResultsFormat::None => vmafcuda::report::Format::Json,
                };
                // Upstream's element formats the name with the stream index (one stream here).
                let path = path.replace("%d", "0");
                Some(ResultsWriter::create(&path, format, pooling).map_err(|e| {
                    gst::error_msg!(
                        gst::ResourceError::OpenWrite,
                        ("cannot write results file {path}: {e}")
                    )
                })?)
            }
            None => None,
        };
        // A GPU failure mid-stream moves the run to the CPU unless backend=cuda is forced.
        config.cpu_fallback = settings.backend != Backend::Cuda;
        config.rebuild = settings.rebuild.into();

        let request = self.backend_request(&settings, any_cuda_caps);
        let forced = settings.backend == Backend::Cuda;
        let scorer = match Scorer::with_backend(config.clone(), geometry, request) {
            Ok(s) => s,
            Err(e) if !forced && settings.backend != Backend::Cpu => {
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Init,
                    ("CUDA unavailable, scoring on the CPU"),
                    ["{}", e]
                );
                Scorer::new(config, geometry)
                    .map_err(|e| gst::error_msg!(gst::LibraryError::Init, ("cannot score: {e}")))?
            }
            Err(e) => {
                return Err(gst::error_msg!(
                    gst::LibraryError::Init,
                    ("cannot score with backend {:?}: {e}", settings.backend)
                ))
            }
        };
        if settings.backend == Backend::Auto
            && scorer.backend() == BackendKind::Cpu
            && cuda::probe().is_ok()
        {
            // A GPU is there but could not be used (out of memory, say): say so.
            gst::element_imp_warning!(
                self,
                gst::LibraryError::Init,
                ("CUDA unavailable, scoring on the CPU"),
                ["{}", scorer.backend_note().unwrap_or("no reason given")]
            );
        }
        gst::info!(
            CAT,
            imp = self,
            "scoring {}x{} {}-bit on {}{}",
            geometry.width,
            geometry.height,
            geometry.bpc,
            scorer.backend().name(),
            scorer
                .backend_note()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
        if settings.shot_detection == ShotDetection::Auto {
            state.detector = Some(ShotDetector::new(ShotDetectorConfig {
                threshold: settings.shot_threshold,
                min_shot_length: settings.min_shot_length as usize,
            }));
        }
        gst::info!(
            CAT,
            imp = self,
            "whole-stream pooling {} ({}live)",
            pooling.name(),
            if live { "" } else { "not " }
        );
        state.scorer = Some(scorer);
        state.stream_vmaf = Some(MetricPool::new(pooling));
        state.stream_psnr_y = Some(MetricPool::new(pooling));
        state.results = results;
        Ok(())
    }

    /// Scores one frame pair.
    pub(super) fn score_pair(
        &self,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Result<Messages, gst::ErrorMessage> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        self.ensure_scorer(state)?;
        let mut messages = Messages::new();
        let index = state.next_frame;
        let times = self.frame_times(reference);
        state.times.insert(index, times);
        state.last_times = times;
        if state.settings.report_filename.is_some() {
            state.report_pts.push(reference.pts());
        }
        let explicit_start = state.boundaries.binary_search(&index).is_ok();
        let rf = state
            .ref_format
            .clone()
            .ok_or_else(|| gst::error_msg!(gst::CoreError::Negotiation, ("no reference caps")))?;
        let df = state
            .dist_format
            .clone()
            .ok_or_else(|| gst::error_msg!(gst::CoreError::Negotiation, ("no distorted caps")))?;

        // Built-in detector: it reads the reference luma in system memory.
        if let Some(detector) = state.detector.as_mut() {
            if explicit_start {
                detector.reset();
            }
            let frame = map_readable(reference, &rf, "reference", index)?;
            let pic = HostPicture::new(&frame, false).map_err(|e| {
                gst::error_msg!(gst::StreamError::Format, ("frame {index}, reference: {e}"))
            })?;
            if detector.push(&pic.luma()) && !explicit_start {
                if let Some(c) = detector.last_change() {
                    gst::info!(CAT, imp = self, "cut detected at frame {index}: {c:?}");
                }
                let m = self.boundary_keep_detector(state);
                messages.extend(m);
            }
        }

        let in_place_before = state.frames_in_place;
        let progress = match self.push_device(state, reference, distorted) {
            Some(Ok(p)) => {
                state.frames_in_place += 1;
                Some(p)
            }
            Some(Err(vmafcuda::Error::ReplayOnHost { from, .. })) => {
                // The scorer moved to the CPU and lost these frames on the GPU: they come
                // again from system memory (this one just below).
                let again = state.fallback.replay(from, index).map_err(|e| {
                    gst::error_msg!(gst::LibraryError::Failed, ("frame {index}: {e}"))
                })?;
                for (r, d) in again {
                    let p = self.push_host(state, &r, &d, &rf, &df, from)?;
                    messages.extend(self.handle_progress(state, p));
                }
                None
            }
            Some(Err(e)) => {
                if state.settings.backend == Backend::Cuda {
                    return Err(gst::error_msg!(
                        gst::LibraryError::Failed,
                        ("frame {index}: CUDA scoring failed: {e}")
                    ));
                }
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Failed,
                    ("CUDA frames could not be scored in place; reading them in system memory"),
                    ["frame {index}: {e}"]
                );
                state.device_disabled = true;
                None
            }
            None => None,
        };
        let progress = match progress {
            Some(p) => p,
            None => self.push_host(state, reference, distorted, &rf, &df, index)?,
        };
        if let Some(scorer) = state.scorer.as_ref() {
            let in_place = state.frames_in_place > in_place_before;
            state
                .fallback
                .scored(scorer, in_place, index, reference, distorted);
            if let Some(reason) = state.fallback.warning(scorer) {
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Failed,
                    ("CUDA failed mid-stream; scoring continues on the CPU"),
                    ["frame {index}: {reason}"]
                );
            }
        }
        state.next_frame += 1;
        messages.extend(self.handle_progress(state, progress));
        Ok(messages)
    }

    /// Scores frame `index` from system memory (CUDA memory is mapped for reading there).
    fn push_host(
        &self,
        state: &mut State,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
        rf: &PadFormat,
        df: &PadFormat,
        index: usize,
    ) -> Result<vmafcuda::scorer::Progress, gst::ErrorMessage> {
        let psnr = state.settings.psnr;
        let rframe = map_readable(reference, rf, "reference", index)?;
        let dframe = map_readable(distorted, df, "distorted", index)?;
        let rp = HostPicture::new(&rframe, psnr).map_err(|e| {
            gst::error_msg!(gst::StreamError::Format, ("frame {index}, reference: {e}"))
        })?;
        let dp = HostPicture::new(&dframe, psnr).map_err(|e| {
            gst::error_msg!(gst::StreamError::Format, ("frame {index}, distorted: {e}"))
        })?;
        let scorer = state
            .scorer
            .as_mut()
            .ok_or_else(|| gst::error_msg!(gst::LibraryError::Failed, ("scorer missing")))?;
        let p = scorer
            .push(&rp.picture(), &dp.picture())
            .map_err(|e| gst::error_msg!(gst::LibraryError::Failed, ("{e}")))?;
        state.frames_system_memory += 1;
        Ok(p)
    }

    /// A boundary found by the detector itself (which has already started its new shot).
    fn boundary_keep_detector(&self, state: &mut State) -> Messages {
        let Some(scorer) = state.scorer.as_mut() else {
            return Messages::new();
        };
        let progress = scorer.end_shot();
        self.handle_progress(state, progress)
    }

    /// Ends the last shot, posts the pooled result and writes the results file. Once per run.
    pub(super) fn finish(&self) -> Result<(), gst::ErrorMessage> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        if state.finished {
            return Ok(());
        }
        state.finished = true;
        let Some(mut scorer) = state.scorer.take() else {
            return Ok(());
        };
        let progress = scorer.end_shot();
        let mut messages = self.handle_progress(state, progress);
        let report = scorer.finish();
        let stream_vmaf = state.stream_vmaf.take();
        if let Some((stats, frames)) = stream_vmaf
            .as_ref()
            .and_then(|p| Some((p.stats()?, p.count())))
        {
            let b = Self::vmaf_structure("pooled")
                .field("frames", frames)
                .field("shots", state.shots_posted)
                .field("frames-in-place", state.frames_in_place)
                .field("frames-system-memory", state.frames_system_memory)
                .field("frames-missing", state.frames_missing)
                .field("frames-repeated", state.frames_repeated)
                .field("frames-extra", state.frames_extra)
                .field("gaps", state.gaps)
                .field("alerts", state.alerts.as_ref().map_or(0, |a| a.posted))
                .field(
                    "alerts-suppressed",
                    state.alerts.as_ref().map_or(0, |a| a.suppressed_total),
                )
                .field(
                    "align-offset",
                    state
                        .feeds
                        .as_ref()
                        .and_then(|f| f.offset_ns())
                        .unwrap_or(0),
                );
            gst::info!(
                CAT,
                imp = self,
                "{} frame pairs read in place from CUDA memory, {} from system memory",
                state.frames_in_place,
                state.frames_system_memory
            );
            let b = Self::pooled_fields(b, &stats, state.settings.pool_method);
            let b = self.pooled_upstream_fields(b, state);
            messages.push(self.element_message(b.build()));
        }
        let settings = state.settings.clone();
        let results = state.results.take();
        let page_inputs = settings.report_filename.as_ref().map(|_| PageInputs {
            reference: state
                .ref_format
                .as_ref()
                .map_or_else(String::new, |f| f.describe()),
            distorted: state
                .dist_format
                .as_ref()
                .map_or_else(String::new, |f| f.describe()),
            frame_rate: state.ref_format.as_ref().map(|f| f.info.fps()),
            pts: std::mem::take(&mut state.report_pts),
            cuda_device: settings.cuda_device_id,
        });
        drop(guard);
        self.post(messages);
        if let (Some(path), Some(inputs)) = (settings.report_filename.as_deref(), page_inputs) {
            report_page::write(&report, path, &inputs).map_err(|e| {
                gst::error_msg!(gst::ResourceError::OpenWrite, ("report-filename: {e}"))
            })?;
        }
        if let Some(w) = results {
            let path = w.path().display().to_string();
            w.finish(&report).map_err(|e| {
                gst::error_msg!(
                    gst::ResourceError::OpenWrite,
                    ("cannot write results file {path}: {e}")
                )
            })?;
        }
        Ok(())
    }
}
