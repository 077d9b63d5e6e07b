//! GPU ADM (`cuda::GpuAdm`) against the CPU engine's `AdmExtractor`: the integer sums and every
//! f64 score must be identical, frame after frame (the DWT carries one word between frames),
//! on corpus clips, synthetic worst cases and padded device planes. Without a driver every test
//! prints "skipping <name>: <reason>" and passes; on a GPU machine they run for real.
//!
//! The tests share process-wide state (resource counters), so each holds one lock.

mod common;

use common::gpu::{assert_no_live_resources, gpu};
use common::synth::{synth_distort, synth_lines, SplitMix};

use std::fs::File;
use std::io::{BufReader, Write};
use std::time::Instant;

use vmafcuda::cuda::{self, AdmKernels, Context, DeviceBuffer, DevicePlane, GpuAdm, Stream};
use vmafcuda::features::adm::{AdmExtractor, AdmScores, DEFAULT_ADM_ENHN_GAIN_LIMIT};
use vmafcuda::frame::{Plane, SampleBuf, Samples};
use vmafcuda::y4m::Y4mReader;

/// One reference/distorted luma pair, samples tightly packed (8-bit values held in u16).
#[derive(Clone)]
struct Pair {
    w: usize,
    h: usize,
    bpc: u32,
    r: Vec<u16>,
    d: Vec<u16>,
}

/// Samples of one plane in the storage of its depth.
enum Store {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

impl Store {
    fn new(v: &[u16], bpc: u32) -> Store {
        if bpc == 8 {
            Store::U8(v.iter().map(|&x| x as u8).collect())
        } else {
            Store::U16(v.to_vec())
        }
    }

    fn plane(&self, w: usize, h: usize, bpc: u32) -> Plane<'_> {
        Plane {
            samples: match self {
                Store::U8(v) => Samples::U8(v),
                Store::U16(v) => Samples::U16(v),
            },
            width: w,
            height: h,
            stride: w,
            bpc,
        }
    }
}

/// A plane in device memory with rows `pitch` bytes apart; the padding holds junk.
struct DevPlane {
    /// Owns the memory `plane` points to.
    _buf: DeviceBuffer,
    plane: DevicePlane,
}

impl DevPlane {
    fn upload(
        ctx: &Context,
        stream: &Stream,
        v: &[u16],
        w: usize,
        h: usize,
        bpc: u32,
        pitch: usize,
    ) -> DevPlane {
        let bps = if bpc == 8 { 1 } else { 2 };
        assert!(pitch >= w * bps);
        let mut bytes = vec![0xa5u8; pitch * h];
        for y in 0..h {
            let row = &mut bytes[y * pitch..];
            for x in 0..w {
                let s = v[y * w + x];
                if bps == 1 {
                    row[x] = s as u8;
                } else {
                    row[2 * x..2 * x + 2].copy_from_slice(&s.to_le_bytes());
                }
            }
        }
        let mut buf = DeviceBuffer::new(ctx, bytes.len()).expect("device plane");
        buf.upload(&bytes, stream).expect("upload plane");
        let plane = DevicePlane {
            ptr: buf.ptr(),
            pitch,
            width: w,
            height: h,
            bytes_per_sample: bps,
            shift: 0,
        };
        DevPlane { _buf: buf, plane }
    }
}

/// How device planes are laid out.
#[derive(Clone, Copy, Debug)]
enum Pitch {
    /// Rows padded to 256 bytes (as `DevicePlaneBuf` does).
    Aligned,
    /// Rows `n` bytes longer than the samples (an unaligned pitch).
    Extra(usize),
}

impl Pitch {
    fn bytes(self, w: usize, bpc: u32) -> usize {
        let row = if bpc == 8 { w } else { 2 * w };
        match self {
            Pitch::Aligned => row.div_ceil(256) * 256,
            Pitch::Extra(n) => row + n,
        }
    }
}

struct Gpu {
    ctx: Context,
    kernels: AdmKernels,
    stream: Stream,
}

impl Gpu {
    fn new() -> Gpu {
        let ctx = Context::primary(0).expect("primary context");
        let kernels = AdmKernels::load(&ctx).expect("ADM kernels");
        let stream = Stream::new(&ctx).expect("stream");
        Gpu {
            ctx,
            kernels,
            stream,
        }
    }
}

fn field_bits(s: &AdmScores) -> [(&'static str, f64); 7] {
    [
        ("adm2", s.adm2),
        ("scale0", s.scale[0]),
        ("scale1", s.scale[1]),
        ("scale2", s.scale[2]),
        ("scale3", s.scale[3]),
        ("aim", s.aim),
        ("adm3", s.adm3),
    ]
}

/// Scores a sequence of pairs of one geometry on the GPU (two result slots, two frames in
/// flight at a time) and on the CPU, and asserts identical integer sums and scores; where the
/// geometry allows, also two frames at a time in one launch (returns whether it did).
fn check_sequence(g: &Gpu, label: &str, frames: &[Pair], gain: f64, pitch: Pitch) -> bool {
    let (w, h, bpc) = (frames[0].w, frames[0].h, frames[0].bpc);
    let mut gpu = GpuAdm::new(&g.ctx, g.kernels.clone(), w, h, bpc, gain, 2).expect("GpuAdm");
    let mut cpu = AdmExtractor::new(w, h, bpc, gain);
    let mut cpu_sums = AdmExtractor::new(w, h, bpc, gain);
    let p = pitch.bytes(w, bpc);
    let dev: Vec<(DevPlane, DevPlane)> = frames
        .iter()
        .map(|f| {
            (
                DevPlane::upload(&g.ctx, &g.stream, &f.r, w, h, bpc, p),
                DevPlane::upload(&g.ctx, &g.stream, &f.d, w, h, bpc, p),
            )
        })
        .collect();
    for (chunk, dev_chunk) in frames.chunks(2).zip(dev.chunks(2)) {
        for (slot, (r, d)) in dev_chunk.iter().enumerate() {
            // SAFETY: our own device planes of this context, alive until after the sync below.
            unsafe { gpu.enqueue(&g.stream, &r.plane, &d.plane, slot) }.expect("enqueue");
        }
        g.stream.synchronize().expect("sync");
        for (slot, f) in chunk.iter().enumerate() {
            let (rs, ds) = (Store::new(&f.r, bpc), Store::new(&f.d, bpc));
            let (rp, dp) = (rs.plane(w, h, bpc), ds.plane(w, h, bpc));
            let want_sums = cpu_sums.extract_sums(&rp, &dp);
            let want = cpu.extract(&rp, &dp);
            let frame = cpu.geometry().scores(&want_sums);
            assert_eq!(frame, want, "{label}: shared float conversion");
            assert_eq!(gpu.sums(slot), want_sums, "{label}: integer sums");
            let got = gpu.scores(slot);
            for ((name, a), (_, b)) in field_bits(&got).into_iter().zip(field_bits(&want)) {
                assert!(
                    a == b && a.to_bits() == b.to_bits(),
                    "{label} {w}x{h} {bpc}-bit gain {gain}: {name} GPU {a:?} CPU {b:?}"
                );
            }
        }
    }
    // The same frames two at a time through two instances (GpuAdm::enqueue_pair), where the
    // geometry allows pairs: the same sums as frame by frame.
    let pairable = gpu.pairable();
    drop(gpu);
    if pairable {
        let mut first = GpuAdm::new(&g.ctx, g.kernels.clone(), w, h, bpc, gain, 1).expect("GpuAdm");
        let mut second =
            GpuAdm::new(&g.ctx, g.kernels.clone(), w, h, bpc, gain, 1).expect("GpuAdm");
        let mut cpu_sums = AdmExtractor::new(w, h, bpc, gain);
        for (chunk, dev_chunk) in frames.chunks_exact(2).zip(dev.chunks_exact(2)) {
            let planes = [0, 1].map(|k| (&dev_chunk[k].0.plane, &dev_chunk[k].1.plane));
            // SAFETY: as above.
            unsafe { GpuAdm::enqueue_pair(&mut first, &mut second, &g.stream, planes, (0, 0)) }
                .expect("enqueue_pair");
            g.stream.synchronize().expect("sync");
            for (adm, f) in [&first, &second].into_iter().zip(chunk) {
                let (rs, ds) = (Store::new(&f.r, bpc), Store::new(&f.d, bpc));
                let want = cpu_sums.extract_sums(&rs.plane(w, h, bpc), &ds.plane(w, h, bpc));
                assert_eq!(adm.sums(0), want, "{label}: integer sums of a pair");
            }
        }
    }
    eprintln!(
        "{label}: {} frames {w}x{h} {bpc}-bit gain {gain} identical{}",
        frames.len(),
        if pairable { ", also in pairs" } else { "" }
    );
    pairable && frames.len() >= 2
}

/// The first `n` frames of a corpus pair (`<ref>__<distortion>`).
fn corpus_pair(pair: &str, n: usize) -> Vec<Pair> {
    let dir = common::corpus_dir();
    let reference = pair.split("__").next().expect("pair id");
    let open = |name: &str| {
        let path = dir.join("video").join(format!("{name}.y4m.zst"));
        let file = File::open(&path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        let dec = common::zst::reader(BufReader::new(file)).expect("zstd");
        Y4mReader::new(BufReader::new(dec), &path).expect("y4m header")
    };
    let mut r = open(reference);
    let mut d = open(pair);
    let mut out = Vec::new();
    while out.len() < n {
        let (Some(rp), Some(dp)) = (
            r.read_picture().expect("read reference"),
            d.read_picture().expect("read distorted"),
        ) else {
            break;
        };
        let samples = |b: &vmafcuda::frame::PlaneBuf| match &b.data {
            SampleBuf::U8(v) => v.iter().map(|&x| x as u16).collect(),
            SampleBuf::U16(v) => v.clone(),
        };
        out.push(Pair {
            w: rp.luma.width,
            h: rp.luma.height,
            bpc: rp.luma.bpc,
            r: samples(&rp.luma),
            d: samples(&dp.luma),
        });
    }
    assert!(!out.is_empty(), "{pair}: no frames");
    out
}

#[test]
fn gpu_adm_equals_cpu_on_corpus_clips() {
    let Some(_gpu) = gpu() else { return };
    {
        let g = Gpu::new();
        let mut paired = Vec::new();
        for (pair, n, gains) in [
            ("s_astronaut_576x324__x264_crf28", 3, &[100.0, 1.0][..]),
            // odd size: the scale-0 DWT reads past its rows (state across frames)
            ("s_chelsea_641x359__x264_crf27_padcrop", 5, &[100.0][..]),
            ("s_rocket_176x144__x264_crf32", 4, &[100.0][..]),
            ("s_coffee_1280x720_10bit__x265_crf28", 2, &[100.0, 1.0][..]),
            ("s_collage_1920x1080__x264_crf23", 2, &[100.0][..]),
        ] {
            let frames = corpus_pair(pair, n);
            for &gain in gains {
                if check_sequence(&g, pair, &frames, gain, Pitch::Aligned) {
                    paired.push(pair);
                }
            }
        }
        // The engine pairs the small clips' frames (576x324, 176x144): the pair path ran.
        assert!(
            paired.contains(&"s_astronaut_576x324__x264_crf28")
                && paired.contains(&"s_rocket_176x144__x264_crf32"),
            "paired: {paired:?}"
        );
    }
    assert_no_live_resources("after teardown");
}

// ---- synthetic content (tests/common/synth.rs, shared with tests/feature_adm.rs) ----

fn synth_frames(rng: &mut SplitMix, w: usize, h: usize, bpc: u32, n: usize) -> Vec<Pair> {
    let maxv = (1u32 << bpc) - 1;
    (0..n)
        .map(|_| {
            let r = if rng.below(3) == 0 {
                (0..w * h)
                    .map(|_| rng.below(maxv as u64 + 1) as u16)
                    .collect()
            } else {
                synth_lines(rng, w, h, maxv, (w * h / 150).max(3))
            };
            let d = synth_distort(rng, &r, w, h, maxv);
            Pair { w, h, bpc, r, d }
        })
        .collect()
}

#[test]
fn gpu_adm_equals_cpu_on_synthetic_worst_cases() {
    let Some(_gpu) = gpu() else { return };
    {
        let g = Gpu::new();
        // (width, height, bpc, gain limit): tiny bands with wrapped rounding constants, idle
        // vector lanes, DWT rows read past their end (scale 0: w/2 - 1 a multiple of 32 or 64;
        // scales 1..3: of 8), unmirrored row/column -1 of 3..4-long inputs (17..32 pixels),
        // non-integer gain limits (rounded vs truncated columns), every depth.
        let specs: &[(usize, usize, u32, f64)] = &[
            (17, 17, 8, 100.0),
            (17, 18, 10, 100.0),
            (40, 17, 8, 100.0),
            (18, 18, 8, 100.0),
            (19, 19, 8, 100.0),
            (19, 23, 8, 100.0),
            (31, 31, 8, 100.0),
            (32, 18, 8, 1.0),
            (33, 33, 8, 100.0),
            (34, 34, 12, 100.0),
            (40, 20, 8, 2.5),
            (18, 100, 10, 100.0),
            (100, 18, 8, 100.0),
            (25, 33, 16, 100.0),
            (47, 19, 8, 1.3),
            (65, 33, 8, 100.0),
            (66, 40, 8, 1.0),
            (129, 70, 16, 100.0),
            (129, 129, 10, 2.5),
            (136, 24, 8, 100.0),
            (130, 66, 8, 100.0),
            (97, 61, 8, 100.0),
            (194, 35, 8, 100.0),
            (200, 120, 8, 2.5),
            (258, 66, 12, 100.0),
            (293, 28, 12, 1.0),
            (320, 180, 10, 100.0),
            (128, 72, 16, 2.5),
            (165, 48, 8, 100.0),
            (57, 103, 16, 100.0),
            (71, 18, 12, 100.0),
            (480, 270, 8, 100.0),
            (513, 300, 16, 1.0),
        ];
        let mut rng = SplitMix(0x00ad_0ad0_2025);
        for &(w, h, bpc, gain) in specs {
            let frames = synth_frames(&mut rng, w, h, bpc, 3);
            check_sequence(
                &g,
                &format!("synthetic {w}x{h}"),
                &frames,
                gain,
                Pitch::Aligned,
            );
        }
    }
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_adm_equals_cpu_on_flat_noise_and_extremes() {
    let Some(_gpu) = gpu() else { return };
    {
        let g = Gpu::new();
        let mut rng = SplitMix(77);
        for &(w, h, bpc) in &[(64, 36, 8), (19, 19, 8), (641, 359, 10), (176, 144, 16)] {
            let maxv = (1u32 << bpc) - 1;
            let n = w * h;
            let flat = |v: u32| vec![v as u16; n];
            let noise = |rng: &mut SplitMix| -> Vec<u16> {
                (0..n).map(|_| rng.below(maxv as u64 + 1) as u16).collect()
            };
            // 0 / max checkerboards and random extremes: the largest DWT magnitudes (and the
            // wrapping 32-bit sums of 16-bit input)
            let checker: Vec<u16> = (0..n)
                .map(|i| {
                    if (i % w + i / w) % 2 == 0 {
                        maxv as u16
                    } else {
                        0
                    }
                })
                .collect();
            let extremes: Vec<u16> = (0..n)
                .map(|_| if rng.below(2) == 0 { maxv as u16 } else { 0 })
                .collect();
            let inverted: Vec<u16> = checker.iter().map(|&v| maxv as u16 - v).collect();
            let frames = vec![
                Pair {
                    w,
                    h,
                    bpc,
                    r: flat(0),
                    d: flat(0),
                },
                Pair {
                    w,
                    h,
                    bpc,
                    r: flat(0),
                    d: flat(maxv / 2),
                },
                Pair {
                    w,
                    h,
                    bpc,
                    r: flat(maxv),
                    d: flat(maxv),
                },
                Pair {
                    w,
                    h,
                    bpc,
                    r: noise(&mut rng),
                    d: noise(&mut rng),
                },
                Pair {
                    w,
                    h,
                    bpc,
                    r: checker.clone(),
                    d: inverted,
                },
                Pair {
                    w,
                    h,
                    bpc,
                    r: extremes.clone(),
                    d: checker.clone(),
                },
                Pair {
                    w,
                    h,
                    bpc,
                    r: extremes,
                    d: flat(0),
                },
                Pair {
                    w,
                    h,
                    bpc,
                    r: checker.clone(),
                    d: checker,
                },
            ];
            for gain in [DEFAULT_ADM_ENHN_GAIN_LIMIT, 1.0] {
                check_sequence(
                    &g,
                    &format!("flat/noise/extremes {w}x{h}"),
                    &frames,
                    gain,
                    Pitch::Aligned,
                );
            }
        }
    }
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_adm_reads_device_planes_with_a_wide_pitch() {
    let Some(_gpu) = gpu() else { return };
    {
        let g = Gpu::new();
        let frames = corpus_pair("s_rocket_176x144__x264_crf32", 3);
        check_sequence(&g, "rocket pitch +10", &frames, 100.0, Pitch::Extra(10));
        check_sequence(&g, "rocket pitch +333", &frames, 1.0, Pitch::Extra(333));
        let mut rng = SplitMix(5);
        for &(w, h, bpc) in &[(65, 33, 8), (129, 70, 12), (19, 19, 16)] {
            let frames = synth_frames(&mut rng, w, h, bpc, 3);
            check_sequence(
                &g,
                &format!("synthetic {w}x{h} pitch +6"),
                &frames,
                100.0,
                Pitch::Extra(6),
            );
        }
    }
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_adm_rejects_what_it_cannot_score() {
    let Some(_gpu) = gpu() else { return };
    {
        let g = Gpu::new();
        for (w, h, bpc) in [(16, 18, 8), (18, 16, 8), (64, 64, 7), (64, 64, 17)] {
            assert!(GpuAdm::new(&g.ctx, g.kernels.clone(), w, h, bpc, 100.0, 1).is_err());
        }
        assert!(GpuAdm::new(&g.ctx, g.kernels.clone(), 64, 64, 8, 100.0, 0).is_err());
        let mut adm = GpuAdm::new(&g.ctx, g.kernels.clone(), 64, 36, 8, 100.0, 1).expect("GpuAdm");
        let v = vec![0u16; 64 * 36];
        let good = DevPlane::upload(&g.ctx, &g.stream, &v, 64, 36, 8, 64);
        let wide = DevPlane::upload(&g.ctx, &g.stream, &v, 64, 36, 10, 128);
        // SAFETY (all three): our own planes, alive until after the stream sync.
        let bad_slot = unsafe { adm.enqueue(&g.stream, &good.plane, &good.plane, 1) };
        assert!(bad_slot.is_err());
        let bad_depth = unsafe { adm.enqueue(&g.stream, &good.plane, &wide.plane, 0) };
        assert!(bad_depth.is_err());
        unsafe { adm.enqueue(&g.stream, &good.plane, &good.plane, 0) }.expect("enqueue");
        g.stream.synchronize().expect("sync");
        assert_eq!(adm.scores(0).adm2, 1.0);
    }
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_adm_1080p_throughput() {
    let Some(_gpu) = gpu() else { return };
    {
        let g = Gpu::new();
        let frames = corpus_pair("s_collage_1920x1080__x264_crf23", 4);
        let (w, h) = (1920, 1080);
        let mut adm = GpuAdm::new(&g.ctx, g.kernels.clone(), w, h, 8, 100.0, 2).expect("GpuAdm");
        let p = Pitch::Aligned.bytes(w, 8);
        let dev: Vec<(DevPlane, DevPlane)> = frames
            .iter()
            .map(|f| {
                (
                    DevPlane::upload(&g.ctx, &g.stream, &f.r, w, h, 8, p),
                    DevPlane::upload(&g.ctx, &g.stream, &f.d, w, h, 8, p),
                )
            })
            .collect();
        let mut run = |n: usize| -> f64 {
            let t0 = Instant::now();
            for k in 0..n {
                let (r, d) = &dev[k % dev.len()];
                // SAFETY: our own planes, alive until after the stream sync below.
                unsafe { adm.enqueue(&g.stream, &r.plane, &d.plane, k % 2) }.expect("enqueue");
            }
            g.stream.synchronize().expect("sync");
            n as f64 / t0.elapsed().as_secs_f64()
        };
        run(20);
        let mut fps: Vec<f64> = (0..7).map(|_| run(200)).collect();
        fps.sort_by(f64::total_cmp);
        // GPU time alone (events around a batch) and the host's enqueue cost per frame (with
        // enough slots that enqueue never waits).
        let (start, end) = (
            cuda::Event::new(&g.ctx, true).expect("event"),
            cuda::Event::new(&g.ctx, true).expect("event"),
        );
        let n = 200;
        start.record(&g.stream).expect("record");
        for k in 0..n {
            let (r, d) = &dev[k % dev.len()];
            // SAFETY: as above.
            unsafe { adm.enqueue(&g.stream, &r.plane, &d.plane, k % 2) }.expect("enqueue");
        }
        end.record(&g.stream).expect("record");
        end.synchronize().expect("sync");
        let gpu_fps = n as f64 / (start.elapsed_ms(&end).expect("elapsed") as f64 / 1000.0);
        drop(adm);
        let mut many = GpuAdm::new(&g.ctx, g.kernels.clone(), w, h, 8, 100.0, 32).expect("GpuAdm");
        let t0 = Instant::now();
        for k in 0..32 {
            let (r, d) = &dev[k % dev.len()];
            // SAFETY: as above.
            unsafe { many.enqueue(&g.stream, &r.plane, &d.plane, k) }.expect("enqueue");
        }
        let host_us = t0.elapsed().as_secs_f64() * 1e6 / 32.0;
        g.stream.synchronize().expect("sync");
        let _ = writeln!(
            std::io::stderr(),
            "ADM 1920x1080 8-bit: {:.0} fps (device-resident frames, median of 7 runs of 200 \
             frames; min {:.0}, max {:.0}); GPU time alone {gpu_fps:.0} fps; enqueue {host_us:.1} \
             us of host time per frame",
            fps[3],
            fps[0],
            fps[6]
        );
        drop(many);
    }
    assert_no_live_resources("after teardown");
}
