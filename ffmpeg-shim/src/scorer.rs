//! The state behind an opaque `VmafcudaScorer`: the engine's [`engine::Scorer`] (built on the
//! first frame, when the geometry is known) and the results handed out through the C getters.

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::sync::Arc;

use engine::cuda;
use engine::frame::{ChromaFormat, PictureRef, Plane, Samples};
use engine::model::{Model, PredictOptions};
use engine::pinned_picture::PinnedPicture;
use engine::pool::PooledStats;
use engine::report::{Format, FrameResult, Report, ShotResult};
use engine::scorer::{BackendKind, BackendRequest, Progress};
use engine::shots::{ShotDetector, ShotDetectorConfig};
use engine::{Geometry, Scorer, ScorerConfig};

use crate::error::{ShimError, ShimResult};
use crate::types::*;

/// The backend the caller asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Auto,
    Cpu,
    Cuda { device: i32 },
}

impl Backend {
    fn request(self) -> BackendRequest {
        match self {
            Backend::Auto => BackendRequest::Auto,
            Backend::Cpu => BackendRequest::Cpu,
            Backend::Cuda { device } => BackendRequest::Cuda { device },
        }
    }
}

/// Everything `vmafcuda_scorer_new` validated out of a [`VmafcudaConfig`].
pub struct Settings {
    pub config: ScorerConfig,
    pub subsample: usize,
    pub backend: Backend,
    /// Find cuts with the engine's built-in detector on the reference luma.
    pub detect_shots: bool,
}

pub struct ShimScorer {
    settings: Settings,
    /// Built on the first pushed pair; `None` again after `finish`.
    scorer: Option<Scorer>,
    /// The `CUcontext` (as an address) device frames come in, fixed by the first device frame.
    device_context: Option<usize>,
    detector: Option<ShotDetector>,
    /// Reported frames (every `subsample`-th), in frame order.
    frames: Vec<FrameResult>,
    /// Finished shots, pooled over the reported frames.
    shots: Vec<ShotResult>,
    finished: bool,
    /// The engine's report of the finished run (header fields; frames are kept here instead).
    final_report: Option<Report>,
    /// Metric keys as C strings, handed out by `vmafcuda_frame_metric`; live as long as `self`.
    names: HashMap<String, CString>,
}

/// Loads a model from a built-in name, a path, or libvmaf's `version=NAME` / `path=FILE`
/// (optionally followed by `:enable_transform=true` / `:disable_clip=true`, as FFmpeg's
/// `libvmaf` filter spells them).
pub fn load_model(spec: &str, predict: &mut PredictOptions) -> ShimResult<Model> {
    if spec.contains('|') {
        return Err(ShimError::Model(format!(
            "model {spec:?}: only one model per scorer (no '|' lists)"
        )));
    }
    let mut source: Option<(bool, &str)> = None;
    for part in spec.split(':').filter(|p| !p.is_empty()) {
        let (key, value) = match part.split_once('=') {
            Some(kv) => kv,
            None if source.is_none() => {
                let path = Path::new(part);
                source = Some((part.ends_with(".json") || path.exists(), part));
                continue;
            }
            None => {
                return Err(ShimError::Model(format!(
                    "model {spec:?}: unexpected {part:?}"
                )))
            }
        };
        let flag = || match value {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            _ => Err(ShimError::Model(format!(
                "model {spec:?}: {key} must be true or false"
            ))),
        };
        match key {
            "version" => source = Some((false, value)),
            "path" => source = Some((true, value)),
            "name" => {}
            "enable_transform" => predict.enable_transform = flag()?,
            "disable_clip" => predict.disable_clip = flag()?,
            _ => {
                return Err(ShimError::Model(format!(
                    "model {spec:?}: unknown key {key:?} (version, path, name, enable_transform, disable_clip)"
                )))
            }
        }
    }
    let model = match source {
        Some((true, path)) => Model::from_json_file(path),
        Some((false, name)) => Model::builtin(name),
        None => Model::builtin("vmaf_v0.6.1"),
    };
    model.map_err(|e| ShimError::Model(e.to_string()))
}

/// Bytes per sample of a `bpc`-bit plane.
fn sample_bytes(bpc: u32) -> usize {
    if bpc > 8 {
        2
    } else {
        1
    }
}

/// A borrowed engine plane over a caller's host plane.
///
/// # Safety
/// `p.data` must point to `(height - 1) * stride + width * bytes_per_sample` readable bytes that
/// stay valid and unmodified for `'a`.
unsafe fn host_plane<'a>(p: &VmafcudaPlane, bpc: u32, what: &str) -> ShimResult<Plane<'a>> {
    let bad = |why: String| Err(ShimError::InvalidArgument(format!("{what}: {why}")));
    if p.data.is_null() {
        return bad("data is NULL".into());
    }
    if p.width == 0 || p.height == 0 {
        return bad(format!("empty plane {}x{}", p.width, p.height));
    }
    let (width, height) = (p.width as usize, p.height as usize);
    let bps = sample_bytes(bpc);
    let row = width * bps;
    if p.stride < row {
        return bad(format!("stride {} < {} bytes of a row", p.stride, row));
    }
    let Some(len) = (height - 1)
        .checked_mul(p.stride)
        .and_then(|n| n.checked_add(row))
        .filter(|&n| n <= isize::MAX as usize)
    else {
        return bad(format!(
            "{}x{} with stride {} too large",
            width, height, p.stride
        ));
    };
    let samples = if bps == 1 {
        // SAFETY: the caller guarantees `len` readable bytes at `data` for 'a (see above).
        Samples::U8(unsafe { std::slice::from_raw_parts(p.data.cast::<u8>(), len) })
    } else {
        if !(p.data as usize).is_multiple_of(2) || !p.stride.is_multiple_of(2) {
            return bad(format!(
                "{bpc}-bit samples need a 2-byte aligned pointer and an even stride"
            ));
        }
        // SAFETY: as above; the pointer is 2-byte aligned (checked) and len is even whenever
        // the rows are complete (row bytes and stride are even).
        Samples::U16(unsafe { std::slice::from_raw_parts(p.data.cast::<u16>(), len / 2) })
    };
    Ok(Plane {
        samples,
        width,
        height,
        stride: p.stride / bps,
        bpc,
    })
}

/// A borrowed engine picture over a caller's host picture (chroma only when PSNR needs it).
///
/// # Safety
/// Every plane with non-NULL data must satisfy [`host_plane`]'s contract for `'a`.
unsafe fn host_picture<'a>(
    pic: &VmafcudaPicture,
    with_chroma: bool,
    what: &str,
) -> ShimResult<PictureRef<'a>> {
    if !(8..=16).contains(&pic.bpc) {
        return Err(ShimError::InvalidArgument(format!(
            "{what}: bit depth {} out of range 8..16",
            pic.bpc
        )));
    }
    // SAFETY: forwarded caller contract.
    let luma = unsafe { host_plane(&pic.luma, pic.bpc, &format!("{what} luma"))? };
    let chroma = match (pic.chroma[0].data.is_null(), pic.chroma[1].data.is_null()) {
        (true, true) => None,
        (false, false) if with_chroma => {
            // SAFETY: forwarded caller contract.
            let cb = unsafe { host_plane(&pic.chroma[0], pic.bpc, &format!("{what} Cb"))? };
            // SAFETY: forwarded caller contract.
            let cr = unsafe { host_plane(&pic.chroma[1], pic.bpc, &format!("{what} Cr"))? };
            Some([cb, cr])
        }
        (false, false) => None,
        _ => {
            return Err(ShimError::InvalidArgument(format!(
                "{what}: give both chroma planes or neither"
            )))
        }
    };
    Ok(PictureRef { luma, chroma })
}

/// The engine's view of a caller's device picture.
fn device_picture(
    pic: &VmafcudaDevicePicture,
    with_chroma: bool,
    what: &str,
) -> ShimResult<cuda::DevicePicture> {
    if !(8..=16).contains(&pic.bpc) {
        return Err(ShimError::InvalidArgument(format!(
            "{what}: bit depth {} out of range 8..16",
            pic.bpc
        )));
    }
    let bytes_per_sample = sample_bytes(pic.bpc);
    // MSB-aligned samples (p010, p016) hold their value in the top `bpc` bits of each u16:
    // the kernels shift them down as they load them.
    let shift = if pic.msb_aligned != 0 && bytes_per_sample == 2 {
        16 - pic.bpc
    } else {
        0
    };
    let plane = |p: &VmafcudaDevicePlane,
                 which: &str,
                 components: usize|
     -> ShimResult<cuda::DevicePlane> {
        let dp = cuda::DevicePlane {
            ptr: p.ptr,
            pitch: p.pitch,
            width: p.width as usize,
            height: p.height as usize,
            bytes_per_sample,
            shift,
        };
        dp.validate_components(components)
            .map_err(|e| ShimError::InvalidArgument(format!("{what} {which}: {e}")))?;
        Ok(dp)
    };
    let luma = plane(&pic.luma, "luma", 1)?;
    let chroma = match (with_chroma, pic.chroma[0].ptr, pic.interleaved_chroma != 0) {
        (false, _, _) | (true, 0, _) => None,
        // chroma[0]: one plane of CbCr pairs (nv12, p010), `width` pairs per row.
        (true, _, true) => Some(cuda::DeviceChroma::Interleaved(plane(
            &pic.chroma[0],
            "CbCr",
            2,
        )?)),
        (true, _, false) => Some(cuda::DeviceChroma::Planar([
            plane(&pic.chroma[0], "Cb", 1)?,
            plane(&pic.chroma[1], "Cr", 1)?,
        ])),
    };
    Ok(cuda::DevicePicture {
        luma,
        chroma,
        bpc: pic.bpc,
    })
}

impl ShimScorer {
    pub fn new(settings: Settings) -> ShimScorer {
        let detector = settings
            .detect_shots
            .then(|| ShotDetector::new(ShotDetectorConfig::default()));
        ShimScorer {
            device_context: None,
            detector,
            settings,
            scorer: None,
            frames: Vec::new(),
            shots: Vec::new(),
            finished: false,
            final_report: None,
            names: HashMap::new(),
        }
    }

    /// The scorer, built on the first frame with `request` (later calls ignore it).
    fn scorer_for(
        &mut self,
        geometry: Geometry,
        request: impl FnOnce() -> ShimResult<BackendRequest>,
    ) -> ShimResult<&mut Scorer> {
        if self.finished {
            return Err(ShimError::State(
                "the run is finished (vmafcuda_finish was called): no more frames".into(),
            ));
        }
        if self.scorer.is_none() {
            let scorer = Scorer::with_backend(self.settings.config.clone(), geometry, request()?)?;
            self.scorer = Some(scorer);
        }
        self.scorer
            .as_mut()
            .ok_or_else(|| ShimError::Internal("scorer missing".into()))
    }

    /// # Safety
    /// The planes of both pictures must satisfy [`host_plane`]'s contract during the call.
    pub unsafe fn push_host(
        &mut self,
        reference: &VmafcudaPicture,
        distorted: &VmafcudaPicture,
    ) -> ShimResult<usize> {
        let psnr = self.settings.config.psnr;
        // SAFETY: forwarded caller contract; the views do not outlive this call.
        let r = unsafe { host_picture(reference, psnr, "reference")? };
        // SAFETY: as above.
        let d = unsafe { host_picture(distorted, psnr, "distorted")? };
        self.push_views(&r, &d, |scorer| scorer.push(&r, &d))
    }

    /// A host pair's checks, the scorer built on the first frame, the built-in detector, then
    /// `push` on the scorer; returns the frames whose scores became available.
    fn push_views(
        &mut self,
        r: &PictureRef,
        d: &PictureRef,
        push: impl FnOnce(&mut Scorer) -> engine::Result<Progress>,
    ) -> ShimResult<usize> {
        let (rl, dl) = (&r.luma, &d.luma);
        if (rl.width, rl.height, rl.bpc) != (dl.width, dl.height, dl.bpc) {
            return Err(ShimError::Geometry(format!(
                "reference and distorted differ: reference {}x{} {}-bit, distorted {}x{} {}-bit",
                rl.width, rl.height, rl.bpc, dl.width, dl.height, dl.bpc
            )));
        }
        let geometry = Geometry {
            width: rl.width,
            height: rl.height,
            bpc: rl.bpc,
        };
        // Validates the frame against the run (and builds the scorer on the first one) before
        // the detector sees it.
        let backend = self.settings.backend;
        self.scorer_for(geometry, || Ok(backend.request()))?;
        let cut = match self.detector.as_mut() {
            Some(detector) => detector.push(&r.luma),
            None => false,
        };
        let scorer = self.scorer_for(geometry, || Ok(backend.request()))?;
        let flushed = cut.then(|| scorer.end_shot());
        let progress = push(scorer)?;
        let completed = flushed.map_or(0, |p| self.record(p));
        Ok(completed + self.record(progress))
    }

    /// A page-locked picture for [`ShimScorer::push_pinned`]: in the scorer's CUDA context
    /// once it runs, before the first frame in the configured device's primary context (the
    /// memory is portable: any context uploads from it); ordinary memory on the CPU or where
    /// no page-locked memory can be had.
    pub fn pinned_picture(
        &self,
        width: usize,
        height: usize,
        bpc: u32,
        format: ChromaFormat,
    ) -> ShimResult<PinnedPicture> {
        let ctx = match (&self.scorer, self.settings.backend) {
            (Some(s), _) => s.host_context(),
            (None, Backend::Cpu) => None,
            (None, Backend::Auto) => cuda::Context::primary(0).ok(),
            (None, Backend::Cuda { device }) => cuda::Context::primary(device).ok(),
        };
        if let Some(ctx) = ctx {
            if let Ok(p) = PinnedPicture::pinned(&ctx, width, height, bpc, format) {
                return Ok(p);
            }
        }
        PinnedPicture::heap(width, height, bpc, format).map_err(ShimError::InvalidArgument)
    }

    /// Scores a pair of [`PinnedPicture`]s (uploaded in place on the GPU).
    pub fn push_pinned(
        &mut self,
        reference: &Arc<PinnedPicture>,
        distorted: &Arc<PinnedPicture>,
    ) -> ShimResult<usize> {
        self.push_views(&reference.view(), &distorted.view(), |scorer| {
            scorer.push_pinned(reference, distorted)
        })
    }

    /// # Safety
    /// `context` is a live `CUcontext` and `stream` NULL or a stream of it; the planes are
    /// device memory of that context, valid during the call.
    pub unsafe fn push_device(
        &mut self,
        context: *mut c_void,
        stream: *mut c_void,
        reference: &VmafcudaDevicePicture,
        distorted: &VmafcudaDevicePicture,
    ) -> ShimResult<usize> {
        if self.settings.backend == Backend::Cpu {
            return Err(ShimError::Unsupported(
                "device frames need the CUDA backend, and this scorer was created with backend cpu"
                    .into(),
            ));
        }
        if self.detector.is_some() {
            return Err(ShimError::Unsupported(
                "the built-in shot detector reads host frames: use shot_starts or vmafcuda_end_shot with device frames"
                    .into(),
            ));
        }
        let psnr = self.settings.config.psnr;
        let r = device_picture(reference, psnr, "reference")?;
        let d = device_picture(distorted, psnr, "distorted")?;
        if (r.luma.width, r.luma.height, r.bpc) != (d.luma.width, d.luma.height, d.bpc) {
            return Err(ShimError::Geometry(format!(
                "reference and distorted differ: reference {}x{} {}-bit, distorted {}x{} {}-bit",
                r.luma.width, r.luma.height, r.bpc, d.luma.width, d.luma.height, d.bpc
            )));
        }
        let interleaved =
            |p: &cuda::DevicePicture| matches!(p.chroma, Some(cuda::DeviceChroma::Interleaved(_)));
        if r.chroma.is_some() && d.chroma.is_some() && interleaved(&r) != interleaved(&d) {
            return Err(ShimError::InvalidArgument(
                "reference and distorted chroma differ in layout (interleaved and planar): give both the same sw_format"
                    .into(),
            ));
        }
        let geometry = Geometry {
            width: r.luma.width,
            height: r.luma.height,
            bpc: r.bpc,
        };
        let raw = context as cuda::sys::CUcontext;
        if self.scorer.is_some() && self.device_context != Some(context as usize) {
            return Err(ShimError::InvalidArgument(match self.device_context {
                Some(_) => "device frames in another CUDA context than the first ones".into(),
                None => "device frames after host frames: one scorer takes one kind".into(),
            }));
        }
        if self.scorer.is_none() {
            self.device_context = Some(context as usize);
        }
        let scorer = self.scorer_for(geometry, || {
            // SAFETY: the caller guarantees a live context that outlives the scorer
            // (documented in the header: the scorer borrows it until vmafcuda_scorer_free).
            let ctx = unsafe { cuda::Context::borrow(raw) }
                .map_err(|e| ShimError::Cuda(e.to_string()))?;
            Ok(BackendRequest::CudaContext(ctx))
        })?;
        if scorer.backend() != BackendKind::Cuda {
            return Err(ShimError::Unsupported(
                "device frames need the CUDA backend, but this scorer runs on the CPU (its first frames were host frames and no GPU was used)"
                    .into(),
            ));
        }
        {
            // Order our reads after the caller's queued work (decode, scaling) on its stream;
            // NULL is the context's default stream, which our non-blocking streams do not wait
            // for by themselves.
            // SAFETY: caller contract: a live context and one of its streams (or NULL).
            let ctx = unsafe { cuda::Context::borrow(raw) }
                .map_err(|e| ShimError::Cuda(e.to_string()))?;
            let _bound = ctx.bind().map_err(|e| ShimError::Cuda(e.to_string()))?;
            // SAFETY: the context is current (bound) and `stream` belongs to it.
            let rc = unsafe { cuda::sys::cuStreamSynchronize(stream as cuda::sys::CUstream) };
            if rc != cuda::sys::CUresult::CUDA_SUCCESS {
                return Err(ShimError::Cuda(format!(
                    "cuStreamSynchronize on the caller's stream: {rc:?}"
                )));
            }
        }
        // SAFETY: the planes are device memory of the scorer's (borrowed) context holding
        // their final samples (the caller's stream was synchronised), valid during the call.
        let progress = unsafe { scorer.push_device(&r, &d)? };
        Ok(self.record(progress))
    }

    /// "cpu" or "cuda" once frames were scored; before that the requested backend.
    pub fn backend_name(&self) -> &'static CStr {
        match (
            self.scorer.as_ref().map(Scorer::backend),
            self.settings.backend,
        ) {
            (Some(BackendKind::Cuda), _) | (None, Backend::Cuda { .. }) => c"cuda",
            (Some(BackendKind::Cpu), _) | (None, Backend::Cpu) => c"cpu",
            (None, Backend::Auto) => c"auto",
        }
    }

    pub fn end_shot(&mut self) -> ShimResult<usize> {
        if self.finished {
            return Err(ShimError::State("the run is finished".into()));
        }
        if let Some(detector) = self.detector.as_mut() {
            detector.reset();
        }
        match self.scorer.as_mut() {
            Some(s) => {
                let p = s.end_shot();
                Ok(self.record(p))
            }
            None => Ok(0),
        }
    }

    pub fn finish(&mut self) -> usize {
        if self.finished {
            return 0;
        }
        self.finished = true;
        let Some(mut scorer) = self.scorer.take() else {
            return 0;
        };
        let tail = scorer.end_shot();
        let n = self.record(tail);
        self.final_report = Some(scorer.finish());
        n
    }

    fn record(&mut self, progress: Progress) -> usize {
        let n = self.settings.subsample.max(1);
        let before = self.frames.len();
        for f in progress.frames {
            if !f.index.is_multiple_of(n) {
                continue;
            }
            for (k, _) in &f.metrics {
                if !self.names.contains_key(k) {
                    let c = CString::new(k.as_str()).unwrap_or_default();
                    self.names.insert(k.clone(), c);
                }
            }
            self.frames.push(f);
        }
        for mut shot in progress.shots {
            if n > 1 {
                let frames: Vec<FrameResult> = self
                    .frames
                    .iter()
                    .filter(|f| (shot.first_frame..=shot.last_frame).contains(&f.index))
                    .cloned()
                    .collect();
                shot.pooled = Report::pool_frames(&frames);
            }
            self.shots.push(shot);
        }
        self.frames.len() - before
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    pub fn frame(&self, i: usize) -> ShimResult<&FrameResult> {
        self.frames.get(i).ok_or_else(|| {
            ShimError::NotFound(format!(
                "frame result {i}: only {} frames scored so far",
                self.frames.len()
            ))
        })
    }

    pub fn shot_of(&self, index: usize) -> u32 {
        self.shots
            .iter()
            .find(|s| (s.first_frame..=s.last_frame).contains(&index))
            .map_or(self.shots.len(), |s| s.index) as u32
    }

    pub fn frame_score(&self, i: usize) -> ShimResult<VmafcudaFrameScore> {
        let f = self.frame(i)?;
        Ok(VmafcudaFrameScore {
            index: f.index as u64,
            shot: self.shot_of(f.index),
            n_metrics: f.metrics.len() as u32,
            vmaf: f.vmaf(),
        })
    }

    pub fn frame_metric(&self, i: usize, k: usize) -> ShimResult<(*const c_char, f64)> {
        let f = self.frame(i)?;
        let (key, value) = f.metrics.get(k).ok_or_else(|| {
            ShimError::NotFound(format!(
                "frame result {i} has {} metrics, asked for metric {k}",
                f.metrics.len()
            ))
        })?;
        let name = self
            .names
            .get(key)
            .ok_or_else(|| ShimError::Internal(format!("metric name {key:?} not interned")))?;
        Ok((name.as_ptr(), *value))
    }

    pub fn shot(&self, k: usize) -> ShimResult<&ShotResult> {
        self.shots.get(k).ok_or_else(|| {
            ShimError::NotFound(format!(
                "shot {k}: only {} shots finished so far",
                self.shots.len()
            ))
        })
    }

    pub fn shot_score(&self, k: usize) -> ShimResult<VmafcudaShotScore> {
        let s = self.shot(k)?;
        let n_frames = self
            .frames
            .iter()
            .filter(|f| (s.first_frame..=s.last_frame).contains(&f.index))
            .count();
        let nan = f64::NAN;
        let vmaf = s.pooled("vmaf").map_or(
            VmafcudaPooled {
                min: nan,
                max: nan,
                mean: nan,
                harmonic_mean: nan,
                p5: nan,
                p10: nan,
            },
            VmafcudaPooled::from,
        );
        Ok(VmafcudaShotScore {
            index: s.index as u32,
            reserved: 0,
            first_frame: s.first_frame as u64,
            last_frame: s.last_frame as u64,
            n_frames: n_frames as u64,
            vmaf,
        })
    }

    pub fn pooled(&self, metric: &str) -> ShimResult<PooledStats> {
        let values: Vec<f64> = self.frames.iter().filter_map(|f| f.get(metric)).collect();
        if values.is_empty() && !self.frames.is_empty() {
            return Err(ShimError::NotFound(format!(
                "no metric {metric:?} in the results"
            )));
        }
        PooledStats::from_values(&values)
            .ok_or_else(|| ShimError::State("no frames scored yet".into()))
    }

    /// The run's report: the engine's (model, size, backend, fps) with the reported frames,
    /// their pool and the shots.
    pub fn report(&self) -> ShimResult<Report> {
        let mut report = self
            .final_report
            .clone()
            .ok_or_else(|| ShimError::State("no frames were scored: nothing to write".into()))?;
        report.frames = self.frames.clone();
        report.pooled = Report::pool_frames(&self.frames);
        report.shots = self.shots.clone();
        Ok(report)
    }

    pub fn write_log(&mut self, path: &Path, format: Format) -> ShimResult<()> {
        self.finish();
        let text = self.report()?.render(format);
        std::fs::write(path, text)
            .map_err(|e| ShimError::Io(format!("cannot write {}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device picture as vf_vmafcuda.c describes an FFmpeg CUDA frame (`device_picture`
    /// there): chroma at floor(w/2) x floor(h/2), one CbCr plane for semi-planar formats.
    fn frame(bpc: u32, msb_aligned: bool, interleaved: bool) -> VmafcudaDevicePicture {
        let plane = |ptr: u64, width: u32, height: u32| VmafcudaDevicePlane {
            ptr,
            pitch: 4096,
            width,
            height,
        };
        VmafcudaDevicePicture {
            luma: plane(0x1000_0000, 1279, 719),
            chroma: [
                plane(0x2000_0000, 639, 359),
                if interleaved {
                    plane(0, 0, 0)
                } else {
                    plane(0x3000_0000, 639, 359)
                },
            ],
            bpc,
            interleaved_chroma: i32::from(interleaved),
            msb_aligned: i32::from(msb_aligned),
        }
    }

    #[test]
    fn p010_frames_map_to_shifted_samples_and_interleaved_chroma() {
        let pic = device_picture(&frame(10, true, true), true, "reference").expect("p010");
        assert_eq!(
            (pic.luma.shift, pic.luma.bytes_per_sample, pic.bpc),
            (6, 2, 10)
        );
        let Some(cuda::DeviceChroma::Interleaved(cbcr)) = pic.chroma else {
            panic!("p010 chroma: {:?}", pic.chroma)
        };
        assert_eq!((cbcr.width, cbcr.height, cbcr.shift), (639, 359, 6));
        assert_eq!(cbcr.ptr, 0x2000_0000);
        // Without psnr the chroma is not described at all.
        let luma_only = device_picture(&frame(10, true, true), false, "reference").expect("p010");
        assert!(luma_only.chroma.is_none());
    }

    #[test]
    fn nv12_and_planar_frames_keep_lsb_samples() {
        let nv12 = device_picture(&frame(8, false, true), true, "distorted").expect("nv12");
        assert_eq!(nv12.luma.shift, 0);
        assert!(matches!(
            nv12.chroma,
            Some(cuda::DeviceChroma::Interleaved(p)) if (p.width, p.bytes_per_sample) == (639, 1)
        ));
        let yuv420p10 = device_picture(&frame(10, false, false), true, "distorted").expect("10");
        assert_eq!(yuv420p10.luma.shift, 0);
        assert!(matches!(
            yuv420p10.chroma,
            Some(cuda::DeviceChroma::Planar([cb, cr])) if cb.ptr == 0x2000_0000 && cr.ptr == 0x3000_0000
        ));
        // yuv444p16: MSB-aligned 16-bit is LSB-aligned too.
        let full = device_picture(&frame(16, true, false), true, "distorted").expect("16-bit");
        assert_eq!(full.luma.shift, 0);
    }

    #[test]
    fn interleaved_chroma_needs_a_pitch_for_its_pairs() {
        let mut pic = frame(10, true, true);
        // 639 pairs of 2-byte samples need 2556 bytes per row.
        pic.chroma[0].pitch = 1280;
        let err = device_picture(&pic, true, "reference").expect_err("pitch of half a row");
        assert!(
            matches!(&err, ShimError::InvalidArgument(m) if m.contains("CbCr") && m.contains("pitch")),
            "{err}"
        );
        pic.chroma[0].pitch = 2556;
        assert!(device_picture(&pic, true, "reference").is_ok());
    }
}
