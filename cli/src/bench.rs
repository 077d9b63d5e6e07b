//! Throughput measurements behind `vmafcuda bench`: the CPU path, the CUDA path from host
//! frames (upload included) and from frames already in device memory, and the CUDA path's time
//! per stage, all on the same synthetic content (a handful of distinct pairs rotated, so caches
//! do not flatter).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use vmafcuda::cuda;
use vmafcuda::frame::Picture;
use vmafcuda::model::Model;
use vmafcuda::pinned_picture::PinnedPicture;
use vmafcuda::scorer::{BackendRequest, Geometry, Rebuild, Scorer, ScorerConfig};
use vmafcuda::synth::SynthClip;
use vmafcuda::{Error, Result};

/// Distinct frame pairs rotated through in a measurement, unless `VMAFCUDA_BENCH_DISTINCT`
/// says otherwise ([`distinct`]).
const DISTINCT: usize = 8;

/// `VMAFCUDA_BENCH_DISTINCT=N` (N >= 1): rotate through N distinct frame pairs instead of
/// [`DISTINCT`]. Eight 1080p 8-bit pairs (33 MB) fit in a 50 MB L2 cache (an H100's), eight
/// 10-bit ones (66 MB) do not; enough pairs that neither fits measures both depths on frames
/// read from device memory, as a decoder's output is.
fn distinct() -> usize {
    distinct_from(std::env::var("VMAFCUDA_BENCH_DISTINCT").ok().as_deref())
}

/// [`distinct`] from the variable's value (absent, not a number or 0: [`DISTINCT`]).
fn distinct_from(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(DISTINCT)
}

/// The model every measurement scores with.
const MODEL: &str = "vmaf_v0.6.1";
/// Device memory bandwidth the stage table's floors assume (an H100's HBM3: 3.35 TB/s peak,
/// about 3.0 reached by copies).
const DEVICE_BYTES_PER_S: f64 = 3.0e12;
/// Host-to-device bandwidth the upload's floor assumes (PCIe 5.0 x16, one direction).
const PCIE_BYTES_PER_S: f64 = 64.0e9;

/// What to measure.
#[derive(Clone, Copy, Debug)]
pub struct BenchSpec {
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
    pub frames: usize,
}

impl BenchSpec {
    /// The distinct pairs a measurement rotates through: [`distinct`] of them, or one per
    /// frame when there are fewer frames. Made once per size and bit depth and kept for every
    /// row and run (a 4K pair takes a while to synthesise; making them again for each run is
    /// what made the 4K device row come minutes late).
    fn pairs(&self) -> Arc<[(Picture, Picture)]> {
        type Made = ((usize, usize, u32, usize), Arc<[(Picture, Picture)]>);
        static MADE: Mutex<Option<Made>> = Mutex::new(None);
        let count = distinct();
        let key = (self.width, self.height, self.bpc, count);
        let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
        let all = match made.as_ref() {
            Some((k, pairs)) if *k == key => pairs.clone(),
            _ => {
                let clip = SynthClip {
                    width: self.width,
                    height: self.height,
                    bpc: self.bpc,
                    frames: count,
                    cut: count,
                };
                let t = Instant::now();
                let pairs: Arc<[(Picture, Picture)]> = (0..count).map(|t| clip.pair(t)).collect();
                eprintln!(
                    "bench: {count} synthetic {}x{} {}-bit frame pairs made in {:.1} s; CPU \
                     kernels: {} (VMAFCUDA_CPU_SIMD)",
                    self.width,
                    self.height,
                    self.bpc,
                    t.elapsed().as_secs_f64(),
                    vmafcuda::features::simd::SimdLevel::selected()
                );
                *made = Some((key, pairs.clone()));
                pairs
            }
        };
        let n = count.min(self.frames.max(1));
        if n == all.len() {
            all
        } else {
            all[..n].to_vec().into()
        }
    }

    fn scorer(&self, backend: BackendRequest) -> Result<Scorer> {
        self.scorer_with(backend, |c| c)
    }

    /// A scorer of the measured model and geometry, keeping no frames, its configuration
    /// adjusted by `adjust`.
    fn scorer_with(
        &self,
        backend: BackendRequest,
        adjust: impl FnOnce(ScorerConfig) -> ScorerConfig,
    ) -> Result<Scorer> {
        let model = Model::builtin(MODEL)?;
        Scorer::with_backend(
            adjust(ScorerConfig {
                keep_frames: false,
                ..ScorerConfig::new(model)
            }),
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

/// Frames per second of the CUDA path from host frames already in page-locked pictures of the
/// scorer ([`Scorer::pinned_picture`], where a reader or decoder writes them): uploaded in
/// place, without the copy into staging (upload included).
pub fn cuda_pinned_fps(spec: &BenchSpec) -> Result<f64> {
    let pairs = spec.pairs();
    let mut scorer = spec.scorer(BackendRequest::Cuda { device: 0 })?;
    let mut pinned = Vec::with_capacity(pairs.len());
    for (r, d) in pairs.iter() {
        let side = |p: &Picture| -> Result<Arc<PinnedPicture>> {
            let mut pic = scorer.pinned_picture(p.format)?;
            pic.copy_from(&p.view()).map_err(Error::InvalidPlane)?;
            Ok(Arc::new(pic))
        };
        pinned.push((side(r)?, side(d)?));
    }
    // Warm-up: the first frame builds the staging planes.
    scorer.push_pinned(&pinned[0].0, &pinned[0].1)?;
    let started = Instant::now();
    for i in 0..spec.frames {
        let (r, d) = &pinned[(i + 1) % pinned.len()];
        scorer.push_pinned(r, d)?;
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
    Ok(device_run(spec, msb_aligned, None)?.fps)
}

/// A device-resident run in shots ([`cuda_device_shots`]).
#[derive(Clone, Copy, Debug)]
pub struct ShotRun {
    pub fps: f64,
    /// Median host time of submitting a shot's first frame (the boundary's work included).
    pub first_frame_ms: f64,
    /// Median host time of submitting any other frame.
    pub other_frame_ms: f64,
}

/// As [`cuda_device_fps`] (LSB-aligned), in shots of `shot_length` frames with `rebuild` at
/// every boundary.
pub fn cuda_device_shots(
    spec: &BenchSpec,
    shot_length: usize,
    rebuild: Rebuild,
) -> Result<ShotRun> {
    device_run(spec, false, Some((shot_length.max(1), rebuild)))
}

fn device_run(
    spec: &BenchSpec,
    msb_aligned: bool,
    shots: Option<(usize, Rebuild)>,
) -> Result<ShotRun> {
    let backend = |e: cuda::CudaError| Error::Backend(format!("CUDA: {e}"));
    cuda::probe().map_err(backend)?;
    let ctx = cuda::Context::primary(0).map_err(backend)?;
    let (_planes, pictures) = device_pictures(spec, &ctx, msb_aligned)?;
    // Frame 0 is the warm-up; the timed frames are 1..=frames, and with shots a new one starts
    // at every multiple of the shot length.
    let (shot_length, rebuild) = shots.unwrap_or((usize::MAX, Rebuild::default()));
    let mut scorer =
        spec.scorer_with(BackendRequest::CudaContext(ctx.clone()), |c| ScorerConfig {
            keep_shots: false,
            rebuild,
            shot_starts: (1..=spec.frames).filter(|i| i % shot_length == 0).collect(),
            ..c
        })?;
    let (r, d) = &pictures[0];
    // SAFETY: our own planes, alive until the end of this function, after the scorer has
    // finished with them (push_device returns when the GPU is done reading).
    unsafe { scorer.push_device(r, d) }?;
    let (mut first, mut other) = (Vec::new(), Vec::with_capacity(spec.frames));
    // VMAFCUDA_BENCH_TRACE=N: the rate of every N frames and the median host time of their
    // submissions, on stderr (does a run keep one pace throughout?).
    let trace = std::env::var("VMAFCUDA_BENCH_TRACE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0);
    let mut trace_from = (Instant::now(), 0);
    cuda::host_timing::take_on_this_thread();
    let started = Instant::now();
    for i in 1..=spec.frames {
        let (r, d) = &pictures[i % pictures.len()];
        let t = Instant::now();
        // SAFETY: our planes outlive every frame in flight: they live until the end of this
        // function, and the scorer is drained before that.
        unsafe { scorer.submit_device(r, d) }?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if i % shot_length == 0 {
            first.push(ms);
        } else {
            other.push(ms);
        }
        if let Some(n) = trace.filter(|n| i % n == 0) {
            let mut last: Vec<f64> = other[other.len().saturating_sub(n)..].to_vec();
            let (replayed, captured) = cuda::graph::frames_on_this_thread();
            // With VMAFCUDA_HOST_TIMING=1: the engine's host time per frame of these frames.
            let stages = cuda::host_timing::take_on_this_thread();
            let host = if cuda::host_timing::enabled() {
                let frames = (i - trace_from.1) as f64;
                let parts: Vec<String> = cuda::host_timing::Stage::ALL
                    .iter()
                    .zip(stages)
                    .map(|(s, ns)| format!("{} {:.2}", s.name(), ns as f64 / 1e3 / frames))
                    .collect();
                format!("; host us per frame: {}", parts.join(", "))
            } else {
                String::new()
            };
            eprintln!(
                "trace: frames {}..={i}: {:.0} fps, submit median {:.4} ms, graphs so far: \
                 {replayed} replayed, {captured} captured{host}",
                trace_from.1 + 1,
                (i - trace_from.1) as f64 / trace_from.0.elapsed().as_secs_f64(),
                median_of(&mut last)
            );
            trace_from = (Instant::now(), i);
        }
    }
    scorer.drain_device()?;
    let fps = spec.frames as f64 / started.elapsed().as_secs_f64();
    let _ = scorer.finish();
    Ok(ShotRun {
        fps,
        first_frame_ms: median_of(&mut first),
        other_frame_ms: median_of(&mut other),
    })
}

/// Aggregate frames per second of `scorers` CUDA scorers in this process, each on its own
/// thread scoring `spec.frames` device-resident frames (read in place, submitted without
/// waiting) on the shared primary context: the rate a process scoring many channels or
/// renditions at once gets from one GPU. Timed from the moment every scorer is built and
/// warmed up (a barrier) to the last one drained.
pub fn cuda_device_fps_many(spec: &BenchSpec, scorers: usize) -> Result<f64> {
    let backend = |e: cuda::CudaError| Error::Backend(format!("CUDA: {e}"));
    cuda::probe().map_err(backend)?;
    let ctx = cuda::Context::primary(0).map_err(backend)?;
    let (_planes, pictures) = device_pictures(spec, &ctx, false)?;
    let pictures = Arc::new(pictures);
    let scorers = scorers.max(1);
    let ready = Arc::new(std::sync::Barrier::new(scorers + 1));
    let workers: Vec<_> = (0..scorers)
        .map(|k| {
            let (ctx, pictures, ready, spec) =
                (ctx.clone(), pictures.clone(), ready.clone(), *spec);
            std::thread::spawn(move || -> Result<()> {
                let built = spec
                    .scorer_with(BackendRequest::CudaContext(ctx), |c| c)
                    .and_then(|mut scorer| {
                        let (r, d) = &pictures[k % pictures.len()];
                        // SAFETY: the planes outlive every scorer (joined below, before the
                        // planes are dropped); push_device returns when the GPU is done.
                        unsafe { scorer.push_device(r, d) }?;
                        Ok(scorer)
                    });
                ready.wait();
                let mut scorer = built?;
                for i in 1..=spec.frames {
                    let (r, d) = &pictures[(i + k) % pictures.len()];
                    // SAFETY: as above; drained before the thread ends.
                    unsafe { scorer.submit_device(r, d) }?;
                }
                scorer.drain_device()?;
                let _ = scorer.finish();
                Ok(())
            })
        })
        .collect();
    ready.wait();
    let started = Instant::now();
    let mut result = Ok(());
    for w in workers {
        let r = w
            .join()
            .unwrap_or_else(|_| Err(Error::Backend("a bench scorer thread panicked".into())));
        if result.is_ok() {
            result = r;
        }
    }
    result?;
    Ok((scorers * spec.frames) as f64 / started.elapsed().as_secs_f64())
}

/// The measurement's distinct pairs uploaded to device memory (luma only), and pictures of
/// them (valid while the returned buffers live). With `msb_aligned` (9..15-bit), stored
/// MSB-aligned as P010 stores them.
type DevicePairs = (
    Vec<(cuda::DevicePlaneBuf, cuda::DevicePlaneBuf)>,
    Vec<(cuda::DevicePicture, cuda::DevicePicture)>,
);

fn device_pictures(
    spec: &BenchSpec,
    ctx: &cuda::Context,
    msb_aligned: bool,
) -> Result<DevicePairs> {
    let backend = |e: cuda::CudaError| Error::Backend(format!("CUDA: {e}"));
    let stream = cuda::Stream::new(ctx).map_err(backend)?;
    let bps = if spec.bpc == 8 { 1 } else { 2 };
    let shift = if msb_aligned && bps == 2 {
        16 - spec.bpc
    } else {
        0
    };
    let mut planes = Vec::new();
    for (r, d) in spec.pairs().iter() {
        let up = |p: &Picture| -> cuda::CudaResult<cuda::DevicePlaneBuf> {
            let mut buf = cuda::DevicePlaneBuf::new(ctx, spec.width, spec.height, bps)?;
            match &p.luma.data {
                vmafcuda::frame::SampleBuf::U8(v) => buf.upload(v, spec.width, &stream)?,
                vmafcuda::frame::SampleBuf::U16(v) => {
                    let stored: Vec<u16> = v.iter().map(|&s| s << shift).collect();
                    buf.upload(&stored, spec.width, &stream)?
                }
            }
            Ok(buf)
        };
        planes.push((up(r).map_err(backend)?, up(d).map_err(backend)?));
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
    stream.synchronize().map_err(backend)?;
    Ok((planes, pictures))
}

/// The median (NaN for none).
fn median_of(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The CUDA path's time per stage ([`cuda::StageTimes`]) on device 0: each stage timed `runs`
/// times on `frames` frames, the median of each. The device-resident frames are LSB-aligned, as
/// [`cuda_device_fps`] stores them without `msb_aligned`.
pub fn cuda_stages(spec: &BenchSpec, frames: usize, runs: usize) -> Result<cuda::StageTimes> {
    let backend = |e: cuda::CudaError| Error::Backend(format!("CUDA stage timing: {e}"));
    cuda::probe().map_err(backend)?;
    let ctx = cuda::Context::primary(0).map_err(backend)?;
    let pairs = spec.pairs();
    let lumas: Vec<_> = pairs
        .iter()
        .map(|(r, d)| (r.luma.view(), d.luma.view()))
        .collect();
    let plan = Model::builtin(MODEL)?.feature_plan(spec.width, spec.height, spec.bpc, false);
    cuda::time_stages(&ctx, &plan, &lumas, frames, runs).map_err(backend)
}

/// The rows of [`stage_table`], in order.
pub const STAGES: [&str; 6] = [
    "host staging",
    "upload H2D",
    "adm",
    "vif",
    "motion",
    "whole frame",
];

/// The stage table printed after a size's fps rows: each stage's milliseconds per frame, its
/// share of the whole frame's GPU time, and its floor (the time the bytes it must move take at
/// the bandwidth they move at).
pub fn stage_table(spec: &BenchSpec, frames: usize, runs: usize, t: &cuda::StageTimes) -> String {
    let bps = if spec.bpc == 8 { 1 } else { 2 };
    let plane = (spec.width * spec.height * bps) as f64;
    let floor = |planes: f64, bytes_per_s: f64| Some(planes * plane / bytes_per_s * 1e3);
    let device = DEVICE_BYTES_PER_S;
    // In the order of STAGES.
    let rows = [
        (
            t.staging,
            None,
            "CPU time: both lumas copied into pinned memory (host frames only)",
        ),
        (
            t.upload,
            floor(2.0, PCIE_BYTES_PER_S),
            "pinned -> device, both lumas (host frames only)",
        ),
        (t.adm, floor(2.0, device), "alone on one stream"),
        (t.vif, floor(2.0, device), "alone on one stream"),
        (t.motion, floor(2.0, device), "alone on one stream"),
        (
            t.whole,
            floor(3.0, device),
            "all features: ADM, VIF and motion on three streams, frames back to back",
        ),
    ];
    let mut s = format!(
        "  stages {}x{} {}-bit (ms per frame, median of {runs} runs of {frames} frames; \
         GPU time from CUDA events unless noted):\n",
        spec.width, spec.height, spec.bpc
    );
    s += &format!(
        "    {:<13} {:>9} {:>6} {:>8}  note\n",
        "stage", "ms/frame", "share", "floor"
    );
    for (stage, (ms, floor, note)) in STAGES.into_iter().zip(rows) {
        let share = if t.whole > 0.0 {
            format!("{:.0}%", 100.0 * ms / t.whole)
        } else {
            "-".into()
        };
        let floor = floor.map_or("-".into(), |f| format!("{f:.4}"));
        s += &format!("    {stage:<13} {ms:>9.4} {share:>6} {floor:>8}  {note}\n");
    }
    s += &format!(
        "    share: of the whole frame; floor: ms to read each luma once (motion and the whole \
         frame also the previous reference) at {:.1} TB/s, to upload both at {:.0} GB/s \
         (PCIe 5.0 x16)\n",
        DEVICE_BYTES_PER_S / 1e12,
        PCIE_BYTES_PER_S / 1e9
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ms/frame, share and floor cells of `stage`'s row.
    fn cells<'a>(table: &'a str, stage: &str) -> Vec<&'a str> {
        let line = table
            .lines()
            .find(|l| l.trim_start().starts_with(stage))
            .unwrap_or_else(|| panic!("no {stage} row in\n{table}"));
        line[4 + 13..].split_whitespace().take(3).collect()
    }

    #[test]
    fn distinct_pairs_default_to_eight_unless_a_count_is_given() {
        assert_eq!(distinct_from(None), DISTINCT);
        assert_eq!(distinct_from(Some("32")), 32);
        assert_eq!(distinct_from(Some(" 1 ")), 1);
        for bad in ["0", "-3", "many", ""] {
            assert_eq!(distinct_from(Some(bad)), DISTINCT, "{bad:?}");
        }
    }

    #[test]
    fn frame_pairs_are_made_once_per_size_for_every_row_and_run() {
        let spec = BenchSpec {
            width: 40,
            height: 30,
            bpc: 8,
            frames: 20,
        };
        let (a, b) = (spec.pairs(), spec.pairs());
        assert_eq!(a.len(), DISTINCT);
        assert!(Arc::ptr_eq(&a, &b), "made twice");
        // Fewer frames than DISTINCT: the first ones, the same pictures.
        let few = BenchSpec { frames: 3, ..spec }.pairs();
        assert_eq!(few.len(), 3);
        assert_eq!(few[2].1.luma, a[2].1.luma);
    }

    #[test]
    fn stage_table_lists_every_stage_with_its_share_of_the_whole_frame_and_floor() {
        let spec = BenchSpec {
            width: 1920,
            height: 1080,
            bpc: 8,
            frames: 600,
        };
        let t = cuda::StageTimes {
            staging: 0.5,
            upload: 0.08,
            adm: 0.1,
            vif: 0.06,
            motion: 0.01,
            whole: 0.2,
        };
        let table = stage_table(&spec, 120, 3, &t);
        assert_eq!(table.lines().count(), 9, "{table}");
        assert!(
            table.starts_with(
                "  stages 1920x1080 8-bit (ms per frame, median of 3 runs of 120 frames"
            ),
            "{table}"
        );
        // 1080p 8-bit: a luma is 2,073,600 bytes; two over PCIe at 64 GB/s take 0.0648 ms, two
        // from device memory at 3.0 TB/s 0.0014 ms, three 0.0021 ms.
        assert_eq!(cells(&table, "host staging"), ["0.5000", "250%", "-"]);
        assert_eq!(cells(&table, "upload H2D"), ["0.0800", "40%", "0.0648"]);
        assert_eq!(cells(&table, "adm"), ["0.1000", "50%", "0.0014"]);
        assert_eq!(cells(&table, "vif"), ["0.0600", "30%", "0.0014"]);
        assert_eq!(cells(&table, "motion"), ["0.0100", "5%", "0.0014"]);
        assert_eq!(cells(&table, "whole frame"), ["0.2000", "100%", "0.0021"]);
        // Deeper samples take two bytes: twice the upload's floor.
        let ten = stage_table(&BenchSpec { bpc: 10, ..spec }, 120, 3, &t);
        assert_eq!(cells(&ten, "upload H2D"), ["0.0800", "40%", "0.1296"]);
    }

    #[test]
    fn stage_table_without_a_whole_frame_time_shows_no_shares() {
        let spec = BenchSpec {
            width: 64,
            height: 48,
            bpc: 8,
            frames: 4,
        };
        let table = stage_table(&spec, 4, 1, &cuda::StageTimes::default());
        for stage in STAGES {
            assert_eq!(cells(&table, stage)[1], "-", "{table}");
        }
        assert!(!table.contains("NaN") && !table.contains("inf"), "{table}");
    }
}
