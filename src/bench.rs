//! Throughput measurements behind `vmafcuda bench`: the CPU path, the CUDA path from host
//! frames (upload included) and from frames already in device memory, all on the same
//! synthetic content (a handful of distinct pairs rotated, so caches do not flatter).

use std::time::Instant;

use crate::cuda;
use crate::error::{Error, Result};
use crate::frame::Picture;
use crate::model::Model;
use crate::scorer::{BackendRequest, Geometry, Scorer, ScorerConfig};
use crate::synth::SynthClip;

/// Distinct frame pairs rotated through in a measurement.
const DISTINCT: usize = 8;

/// What to measure.
#[derive(Clone, Copy, Debug)]
pub struct BenchSpec {
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
    pub frames: usize,
}

impl BenchSpec {
    fn pairs(&self) -> Vec<(Picture, Picture)> {
        let clip = SynthClip {
            width: self.width,
            height: self.height,
            bpc: self.bpc,
            frames: self.frames,
            cut: self.frames,
        };
        (0..DISTINCT.min(self.frames.max(1)))
            .map(|t| clip.pair(t))
            .collect()
    }

    fn scorer(&self, backend: BackendRequest) -> Result<Scorer> {
        let model = Model::builtin("vmaf_v0.6.1")?;
        Scorer::with_backend(
            ScorerConfig {
                keep_frames: false,
                ..ScorerConfig::new(model)
            },
            Geometry {
                width: self.width,
                height: self.height,
                bpc: self.bpc,
            },
            backend,
        )
    }
}

/// Frames per second of the CPU path (all worker threads, batches spread over them).
pub fn cpu_fps(spec: &BenchSpec) -> Result<f64> {
    let pairs = spec.pairs();
    let mut scorer = spec.scorer(BackendRequest::Cpu)?;
    let batch = 2 * rayon::current_num_threads();
    let started = Instant::now();
    let mut done = 0;
    while done < spec.frames {
        let n = batch.min(spec.frames - done);
        let views: Vec<_> = (0..n)
            .map(|i| {
                let (r, d) = &pairs[(done + i) % pairs.len()];
                (r.view(), d.view())
            })
            .collect();
        scorer.push_batch(&views)?;
        done += n;
    }
    let _ = scorer.finish();
    Ok(spec.frames as f64 / started.elapsed().as_secs_f64())
}

/// Frames per second of the CUDA path from host frames (staging and upload included).
pub fn cuda_host_fps(spec: &BenchSpec) -> Result<f64> {
    let pairs = spec.pairs();
    let mut scorer = spec.scorer(BackendRequest::Cuda { device: 0 })?;
    // Warm-up: the first frame builds staging buffers.
    let (r, d) = &pairs[0];
    scorer.push(&r.view(), &d.view())?;
    let started = Instant::now();
    for i in 0..spec.frames {
        let (r, d) = &pairs[(i + 1) % pairs.len()];
        scorer.push(&r.view(), &d.view())?;
    }
    let fps = spec.frames as f64 / started.elapsed().as_secs_f64();
    let _ = scorer.finish();
    Ok(fps)
}

/// Frames per second of the CUDA path on frames already in device memory (read in place),
/// submitted without waiting (the GPU works on one frame while the next is queued). With
/// `msb_aligned` (9..15-bit only), the samples are stored MSB-aligned, as P010 stores them,
/// and the kernels shift them as they load them.
pub fn cuda_device_fps(spec: &BenchSpec, msb_aligned: bool) -> Result<f64> {
    let backend = |e: cuda::CudaError| Error::Backend(format!("CUDA: {e}"));
    cuda::probe().map_err(backend)?;
    let ctx = cuda::Context::primary(0).map_err(backend)?;
    let stream = cuda::Stream::new(&ctx).map_err(backend)?;
    let bps = if spec.bpc == 8 { 1 } else { 2 };
    let shift = if msb_aligned && bps == 2 {
        16 - spec.bpc
    } else {
        0
    };
    let mut planes = Vec::new();
    for (r, d) in spec.pairs() {
        let up = |p: &Picture| -> cuda::CudaResult<cuda::DevicePlaneBuf> {
            let mut buf = cuda::DevicePlaneBuf::new(&ctx, spec.width, spec.height, bps)?;
            match &p.luma.data {
                crate::frame::SampleBuf::U8(v) => buf.upload(v, spec.width, &stream)?,
                crate::frame::SampleBuf::U16(v) => {
                    let stored: Vec<u16> = v.iter().map(|&s| s << shift).collect();
                    buf.upload(&stored, spec.width, &stream)?
                }
            }
            Ok(buf)
        };
        planes.push((up(&r).map_err(backend)?, up(&d).map_err(backend)?));
    }
    let pictures: Vec<_> = planes
        .iter()
        .map(|(r, d)| {
            let pic = |p: &cuda::DevicePlaneBuf| cuda::DevicePicture {
                luma: cuda::DevicePlane { shift, ..p.plane() },
                chroma: None,
                bpc: spec.bpc,
            };
            (pic(r), pic(d))
        })
        .collect();
    let mut scorer = spec.scorer(BackendRequest::CudaContext(ctx.clone()))?;
    let (r, d) = &pictures[0];
    // SAFETY: our own planes, alive until the end of this function, after the scorer has
    // finished with them (push_device returns when the GPU is done reading).
    unsafe { scorer.push_device(r, d) }?;
    let started = Instant::now();
    for i in 0..spec.frames {
        let (r, d) = &pictures[(i + 1) % pictures.len()];
        // SAFETY: our planes outlive every frame in flight: they live until the end of this
        // function, and the scorer is drained before that.
        unsafe { scorer.submit_device(r, d) }?;
    }
    scorer.drain_device()?;
    let fps = spec.frames as f64 / started.elapsed().as_secs_f64();
    let _ = scorer.finish();
    Ok(fps)
}
