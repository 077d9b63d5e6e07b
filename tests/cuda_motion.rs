//! GPU motion sums against the CPU motion extractor: identical sad scores (hence identical
//! integer sums) frame after frame, on corpus clips and synthetic worst cases. Without a driver
//! every test prints "skipping ..." and passes; `scripts/gpu-check.sh` runs them on a GPU.

mod common;

use common::gpu::gpu;

use vmafcuda::cuda::{self, Context, DevicePlaneBuf, GpuMotion, MotionKernels, MotionPath, Stream};
use vmafcuda::features::motion::MotionExtractor;
use vmafcuda::frame::{Plane, Samples};
use vmafcuda::y4m::Y4mReader;

/// Uploads a host plane into a device plane whose pitch is at least `extra_pitch` bytes wider
/// than its rows (exercises pitched reads).
fn upload(ctx: &Context, stream: &Stream, p: &Plane, wide: bool) -> DevicePlaneBuf {
    let bps = if p.bpc == 8 { 1 } else { 2 };
    // A wider allocation viewed with its real width gives a pitch beyond the row.
    let alloc_w = if wide { p.width + 300 } else { p.width };
    let mut buf = DevicePlaneBuf::new(ctx, alloc_w, p.height, bps).expect("device plane");
    match p.samples {
        Samples::U8(s) => {
            let mut rows = vec![0u8; alloc_w * p.height];
            for y in 0..p.height {
                rows[y * alloc_w..][..p.width].copy_from_slice(&s[y * p.stride..][..p.width]);
            }
            buf.upload(&rows, alloc_w, stream).expect("upload");
        }
        Samples::U16(s) => {
            let mut rows = vec![0u16; alloc_w * p.height];
            for y in 0..p.height {
                rows[y * alloc_w..][..p.width].copy_from_slice(&s[y * p.stride..][..p.width]);
            }
            buf.upload(&rows, alloc_w, stream).expect("upload");
        }
    }
    buf
}

/// A sequence's frames as planes (8-bit ones as bytes), with the CPU's motion and the host
/// side of the GPU's (scores from sums) for it.
struct Seq<'a> {
    frames: &'a [(Vec<u16>, usize, usize, u32)],
    bytes8: Vec<Vec<u8>>,
    w: usize,
    h: usize,
    bpc: u32,
}

impl<'a> Seq<'a> {
    fn new(frames: &'a [(Vec<u16>, usize, usize, u32)]) -> Seq<'a> {
        let (w, h, bpc) = (frames[0].1, frames[0].2, frames[0].3);
        let bytes8 = frames
            .iter()
            .map(|f| f.0.iter().map(|&v| v as u8).collect())
            .collect();
        Seq {
            frames,
            bytes8,
            w,
            h,
            bpc,
        }
    }

    fn plane(&self, i: usize) -> Plane<'_> {
        Plane {
            samples: if self.bpc == 8 {
                Samples::U8(&self.bytes8[i])
            } else {
                Samples::U16(&self.frames[i].0)
            },
            width: self.w,
            height: self.h,
            stride: self.w,
            bpc: self.bpc,
        }
    }

    /// A fresh CPU extractor and host-side scorer of GPU sums (a session's start).
    fn extractors(&self) -> (MotionExtractor, MotionExtractor) {
        (
            MotionExtractor::new(self.w, self.h, self.bpc),
            MotionExtractor::scores_only(self.w, self.h, self.bpc),
        )
    }
}

/// Runs `frames` through the CPU and both GPU kernels (with a shot restart after
/// `restart_at`) and asserts the motion updates are identical.
fn compare(label: &str, frames: &[(Vec<u16>, usize, usize, u32)], restart_at: Option<usize>) {
    for path in [MotionPath::Tiles, MotionPath::Strips] {
        compare_path(&format!("{label} {path:?}"), frames, restart_at, path);
    }
    compare_pairs(&format!("{label} pairs"), frames, restart_at);
}

/// As [`compare_path`] on the tile kernels, the frames two at a time through
/// `GpuMotion::enqueue_pair` (one at a time where a restart or the end leaves one alone), the
/// pair's two planes of different pitches.
fn compare_pairs(label: &str, frames: &[(Vec<u16>, usize, usize, u32)], restart_at: Option<usize>) {
    let seq = Seq::new(frames);
    let (w, h, bpc) = (seq.w, seq.h, seq.bpc);
    let ctx = Context::primary(0).expect("context");
    let stream = Stream::new(&ctx).expect("stream");
    let kernels = MotionKernels::load(&ctx).expect("kernels");
    let mut gpu =
        GpuMotion::new(&ctx, kernels, w, h, bpc, 4, MotionPath::Tiles, true).expect("gpu motion");
    let (mut cpu, mut host) = seq.extractors();
    let mut i = 0;
    while i < frames.len() {
        if restart_at == Some(i) {
            gpu.reset();
            (cpu, host) = seq.extractors();
        }
        let n = if i + 1 < frames.len() && restart_at != Some(i + 1) {
            2
        } else {
            1
        };
        let devs: Vec<DevicePlaneBuf> = (i..i + n)
            .map(|k| upload(&ctx, &stream, &seq.plane(k), k % 2 == 1))
            .collect();
        let views: Vec<cuda::DevicePlane> = devs
            .iter()
            .map(|d| cuda::DevicePlane {
                width: w,
                ..d.plane()
            })
            .collect();
        // SAFETY: our own planes, alive until the stream is synchronised below.
        if n == 2 {
            assert!(gpu.pairable([&views[0], &views[1]]), "{label}");
            unsafe { gpu.enqueue_pair(&stream, [&views[0], &views[1]], (0, 1)) }.expect("pair");
        } else {
            unsafe { gpu.enqueue(&stream, &views[0], 0) }.expect("enqueue");
        }
        stream.synchronize().expect("sync");
        for k in 0..n {
            let expected = cpu.push(&seq.plane(i + k));
            let got = host.push_sum(gpu.sum(k).expect("sum"));
            assert_eq!(got, expected, "{label} frame {}", i + k);
        }
        i += n;
    }
    assert_eq!(host.flush(), cpu.flush(), "{label} flush");
}

fn compare_path(
    label: &str,
    frames: &[(Vec<u16>, usize, usize, u32)],
    restart_at: Option<usize>,
    path: MotionPath,
) {
    let seq = Seq::new(frames);
    let (w, h, bpc) = (seq.w, seq.h, seq.bpc);
    let ctx = Context::primary(0).expect("context");
    let stream = Stream::new(&ctx).expect("stream");
    let kernels = MotionKernels::load(&ctx).expect("kernels");
    let mut gpu = GpuMotion::new(&ctx, kernels, w, h, bpc, 2, path, false).expect("gpu motion");
    let (mut cpu, mut host) = seq.extractors();
    for i in 0..frames.len() {
        if restart_at == Some(i) {
            gpu.reset();
            (cpu, host) = seq.extractors();
        }
        let plane = seq.plane(i);
        let dev = upload(&ctx, &stream, &plane, i % 2 == 1);
        let slot = i % 2;
        // SAFETY: our own plane, alive until the stream is synchronised below.
        let view = cuda::DevicePlane {
            width: w,
            ..dev.plane()
        };
        unsafe { gpu.enqueue(&stream, &view, slot) }.expect("enqueue");
        stream.synchronize().expect("sync");
        let expected = cpu.push(&plane);
        let got = host.push_sum(gpu.sum(slot).expect("sum"));
        assert_eq!(got, expected, "{label} frame {i}");
    }
    assert_eq!(host.flush(), cpu.flush(), "{label} flush");
}

fn clip(rel_pair: &str, max_frames: usize) -> Vec<(Vec<u16>, usize, usize, u32)> {
    let path = common::pair_reference(rel_pair);
    let mut r = Y4mReader::open(&path).expect("open");
    let mut out = Vec::new();
    while let Some(p) = r.read_picture().expect("read") {
        let v = p.view();
        let l = v.luma;
        let mut s = Vec::with_capacity(l.width * l.height);
        for y in 0..l.height {
            for x in 0..l.width {
                s.push(l.get(x, y) as u16);
            }
        }
        out.push((s, l.width, l.height, l.bpc));
        if out.len() == max_frames {
            break;
        }
    }
    out
}

fn noise(w: usize, h: usize, bpc: u32, n: usize, seed: u64) -> Vec<(Vec<u16>, usize, usize, u32)> {
    let mut state = seed;
    let max = (1u32 << bpc) - 1;
    (0..n)
        .map(|k| {
            let s = (0..w * h)
                .map(|i| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let r = (state >> 33) as u32;
                    // Alternate extremes and noise so differences reach +-max.
                    match (k + i) % 5 {
                        0 => 0,
                        1 => max,
                        _ => r % (max + 1),
                    }
                })
                .map(|v| v as u16)
                .collect();
            (s, w, h, bpc)
        })
        .collect()
}

#[test]
fn gpu_motion_equals_cpu_on_corpus_clips() {
    let Some(_g) = gpu() else { return };
    compare(
        "astronaut 576x324",
        &clip("s_astronaut_576x324__x264_crf28", 12),
        Some(7),
    );
    compare(
        "chelsea 641x359",
        &clip("s_chelsea_641x359__x264_crf27_padcrop", 8),
        None,
    );
    compare(
        "rocket 176x144",
        &clip("s_rocket_176x144__x264_crf32", 8),
        None,
    );
    compare(
        "coffee 1280x720 10-bit",
        &clip("s_coffee_1280x720_10bit__x265_crf28", 6),
        Some(3),
    );
    compare(
        "collage 1920x1080",
        &clip("s_collage_1920x1080__x264_crf23", 4),
        None,
    );
}

#[test]
fn gpu_motion_equals_cpu_on_worst_cases() {
    let Some(_g) = gpu() else { return };
    // (200x70 has tiles whose apron lies inside the picture: the aligned word loads of the
    // tile kernels; 250x100 and 371x45 have strips whose lanes and rows all lie inside the
    // picture, beside edge strips in the same frame.)
    for (w, h) in [
        (18, 18),
        (19, 23),
        (65, 17 + 2),
        (130, 33),
        (200, 70),
        (250, 100),
        (371, 45),
    ] {
        for bpc in [8, 10, 12, 16] {
            compare(
                &format!("noise {w}x{h} {bpc}-bit"),
                &noise(w, h, bpc, 5, (w * h) as u64 + bpc as u64),
                Some(2),
            );
        }
    }
    // A lone frame and a two-frame shot.
    compare("single frame", &noise(64, 36, 8, 1, 1), None);
    compare("two frames", &noise(64, 36, 8, 2, 2), None);
}

#[test]
fn gpu_motion_rejects_bad_planes() {
    let Some(_g) = gpu() else { return };
    let ctx = Context::primary(0).expect("context");
    let kernels = MotionKernels::load(&ctx).expect("kernels");
    assert!(GpuMotion::new(
        &ctx,
        kernels.clone(),
        64,
        36,
        7,
        1,
        MotionPath::Tiles,
        false
    )
    .is_err());
    assert!(GpuMotion::new(&ctx, kernels.clone(), 0, 36, 8, 1, MotionPath::Tiles, false).is_err());
    let stream = Stream::new(&ctx).expect("stream");
    let mut m =
        GpuMotion::new(&ctx, kernels, 64, 36, 8, 1, MotionPath::Tiles, false).expect("motion");
    let other = DevicePlaneBuf::new(&ctx, 32, 36, 1).expect("plane");
    // SAFETY: a valid plane of this context; the call must refuse it before enqueuing.
    assert!(unsafe { m.enqueue(&stream, &other.plane(), 0) }.is_err());
    // SAFETY: as above.
    assert!(unsafe {
        m.enqueue(
            &stream,
            &DevicePlaneBuf::new(&ctx, 64, 36, 1).expect("p").plane(),
            5,
        )
    }
    .is_err());
    drop((m, stream, other));
    let live = cuda::live_resources();
    eprintln!("live after motion tests: {live:?}");
}
