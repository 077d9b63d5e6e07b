//! GPU VIF (`cuda::vif`) against the CPU engine's `VifExtractor`, which is bit-exact with
//! libvmaf: all four scales must be identical doubles, on corpus frames and synthetic worst
//! cases, for both enhancement-gain limits and device planes with padded pitches.
//!
//! Without a driver every test prints "skipping <name>: <reason>" and passes. On the GPU machine
//! the corpus is found at `$VMAFCUDA_CORPUS` (copy the clips named in [`CORPUS_PAIRS`]).

mod common;

use common::gpu::{assert_no_live_resources, gpu};

use std::io::{BufReader, Write};
use std::path::Path;
use std::time::Instant;

use vmafcuda::cuda::{copy, Context, DeviceBuffer, DevicePlane, GpuVif, Stream, VifKernels};
use vmafcuda::features::vif::{VifExtractor, VifScores, DEFAULT_VIF_ENHN_GAIN_LIMIT};
use vmafcuda::frame::{PlaneBuf, SampleBuf};
use vmafcuda::y4m::Y4mReader;

/// A reference/distorted luma pair.
struct Pair {
    label: String,
    reference: PlaneBuf,
    distorted: PlaneBuf,
}

impl Pair {
    fn new(label: impl Into<String>, reference: PlaneBuf, distorted: PlaneBuf) -> Pair {
        assert_eq!(
            (reference.width, reference.height, reference.bpc),
            (distorted.width, distorted.height, distorted.bpc)
        );
        Pair {
            label: label.into(),
            reference,
            distorted,
        }
    }

    fn geometry(&self) -> (usize, usize, u32) {
        (
            self.reference.width,
            self.reference.height,
            self.reference.bpc,
        )
    }

    fn cpu(&self, gain_limit: f64) -> VifScores {
        let (w, h, bpc) = self.geometry();
        VifExtractor::new(w, h, bpc, gain_limit)
            .extract(&self.reference.view(), &self.distorted.view())
    }
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u32) -> u32 {
        ((self.next() >> 32) % u64::from(n)) as u32
    }
}

fn plane_from(w: usize, h: usize, bpc: u32, f: impl FnMut(usize, usize) -> u32) -> PlaneBuf {
    let mut f = f;
    let max = (1u32 << bpc) - 1;
    let values = (0..h).flat_map(|y| (0..w).map(move |x| (x, y)));
    let mut p = PlaneBuf::new(w, h, bpc);
    match &mut p.data {
        SampleBuf::U8(v) => {
            for (s, (x, y)) in v.iter_mut().zip(values) {
                *s = f(x, y).min(max) as u8;
            }
        }
        SampleBuf::U16(v) => {
            for (s, (x, y)) in v.iter_mut().zip(values) {
                *s = f(x, y).min(max) as u16;
            }
        }
    }
    p
}

/// A smooth picture with texture, and a distortion: noise of +-`noise`, then contrast scaled by
/// `gain` about mid-grey (gain > 1 makes the enhancement-gain limit matter).
fn textured(w: usize, h: usize, bpc: u32, noise: u32, gain: f64, seed: u64) -> Pair {
    let max = (1u32 << bpc) - 1;
    let mid = f64::from(max) / 2.0;
    let mut rng = Rng(seed | 1);
    let reference = plane_from(w, h, bpc, |x, y| {
        let (xf, yf) = (x as f64, y as f64);
        let v = mid
            + mid * 0.6 * ((xf * 0.07).sin() * (yf * 0.05).cos())
            + mid * 0.2 * ((xf * 0.9 + yf * 0.4).sin());
        let jitter = f64::from(rng.below(max / 32 + 1));
        (v + jitter).clamp(0.0, f64::from(max)) as u32
    });
    let r = reference.view();
    let mut rng = Rng(seed.wrapping_mul(3) | 1);
    let distorted = plane_from(w, h, bpc, |x, y| {
        let v = f64::from(r.get(x, y));
        let n = f64::from(rng.below(2 * noise + 1)) - f64::from(noise);
        (mid + (v - mid) * gain + n).clamp(0.0, f64::from(max)) as u32
    });
    Pair::new(
        format!("textured {w}x{h} {bpc}-bit noise {noise} gain {gain}"),
        reference,
        distorted,
    )
}

/// Independent uniform noise in both pictures (every pixel in the log branch, extreme sigmas).
fn noise(w: usize, h: usize, bpc: u32, seed: u64) -> Pair {
    let max = 1u32 << bpc;
    let mut rng = Rng(seed | 1);
    let reference = plane_from(w, h, bpc, |_, _| rng.below(max));
    let distorted = plane_from(w, h, bpc, |_, _| rng.below(max));
    Pair::new(format!("noise {w}x{h} {bpc}-bit"), reference, distorted)
}

/// The synthetic cases: sizes from libvmaf's minimum to odd ones, every depth, flat pictures,
/// maximum values and full-range checkerboards.
fn synthetic_pairs() -> Vec<Pair> {
    let mut pairs = Vec::new();
    for (i, &(w, h)) in [
        (17, 17),
        (18, 18),
        (19, 23),
        (37, 18),
        (40, 17),
        (130, 67),
        (577, 323),
    ]
    .iter()
    .enumerate()
    {
        for bpc in [8, 10, 12, 16] {
            let seed = 100 * i as u64 + u64::from(bpc);
            pairs.push(noise(w, h, bpc, seed));
            pairs.push(textured(w, h, bpc, 3 << (bpc - 8), 1.0, seed));
            pairs.push(textured(w, h, bpc, 1 << (bpc - 8), 1.6, seed + 7));
        }
    }
    for bpc in [8, 10, 12, 16] {
        let max = (1u32 << bpc) - 1;
        let (w, h) = (41, 29);
        let flat = |v: u32| plane_from(w, h, bpc, move |_, _| v);
        let checker = plane_from(w, h, bpc, |x, y| if (x + y) % 2 == 0 { max } else { 0 });
        let stripes = plane_from(w, h, bpc, |x, _| if x % 3 == 0 { max } else { 0 });
        pairs.push(Pair::new(format!("flat equal {bpc}-bit"), flat(7), flat(7)));
        pairs.push(Pair::new(
            format!("flat apart {bpc}-bit"),
            flat(0),
            flat(max),
        ));
        pairs.push(Pair::new(
            format!("max vs max {bpc}-bit"),
            flat(max),
            flat(max),
        ));
        pairs.push(Pair::new(
            format!("checker vs max {bpc}-bit"),
            checker.clone(),
            flat(max),
        ));
        pairs.push(Pair::new(
            format!("checker vs itself {bpc}-bit"),
            checker.clone(),
            checker.clone(),
        ));
        pairs.push(Pair::new(
            format!("checker vs stripes {bpc}-bit"),
            checker,
            stripes,
        ));
    }
    pairs
}

/// Corpus pairs (reference clip, distorted clip, frames to compare).
const CORPUS_PAIRS: &[(&str, &str, usize)] = &[
    ("s_astronaut_576x324", "s_astronaut_576x324__x264_crf28", 3),
    (
        "s_chelsea_641x359",
        "s_chelsea_641x359__x264_crf27_padcrop",
        2,
    ),
    ("s_rocket_176x144", "s_rocket_176x144__noise10", 3),
    (
        "s_coffee_1280x720_10bit",
        "s_coffee_1280x720_10bit__x265_crf28",
        2,
    ),
    ("s_collage_1920x1080", "s_collage_1920x1080__x264_crf23", 1),
];

/// The first `n` luma planes of `<corpus>/video/<clip>.y4m.zst`, decompressed as a stream.
fn clip_frames(clip: &str, n: usize) -> Vec<PlaneBuf> {
    let path = common::corpus_dir().join(format!("video/{clip}.y4m.zst"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| {
        panic!(
            "corpus clip {} ({e}): set VMAFCUDA_CORPUS to a folder holding video/{clip}.y4m.zst",
            path.display()
        )
    });
    let decoder = common::zst::reader(BufReader::new(file)).expect("zstd stream");
    let mut reader =
        Y4mReader::new(BufReader::with_capacity(1 << 20, decoder), &path).expect("y4m header");
    (0..n)
        .map_while(|_| reader.read_picture().expect("read frame"))
        .map(|p| p.luma)
        .collect()
}

fn corpus_pairs() -> Vec<Pair> {
    let mut pairs = Vec::new();
    for &(reference, distorted, n) in CORPUS_PAIRS {
        let r = clip_frames(reference, n);
        let d = clip_frames(distorted, n);
        // A cut-down corpus (scripts/device-corpus.sh) may hold fewer frames: use what is there.
        assert!(
            !r.is_empty() && r.len() <= n,
            "{reference}: {} frames",
            r.len()
        );
        assert!(
            !d.is_empty() && d.len() <= n,
            "{distorted}: {} frames",
            d.len()
        );
        for (i, (r, d)) in r.into_iter().zip(d).enumerate() {
            pairs.push(Pair::new(format!("{distorted} frame {i}"), r, d));
        }
    }
    pairs
}

/// Device copies of a pair with rows `extra` bytes longer than the samples, starting `offset`
/// bytes into their buffers (odd for 8-bit: unaligned rows).
struct DevicePair {
    reference: DevicePlane,
    distorted: DevicePlane,
    _buffers: [DeviceBuffer; 2],
}

fn upload(ctx: &Context, stream: &Stream, pair: &Pair, extra: usize, offset: usize) -> DevicePair {
    let (w, h, bpc) = pair.geometry();
    let bps = if bpc == 8 { 1 } else { 2 };
    let pitch = w * bps + extra * bps;
    let offset = offset * bps;
    let mut planes = Vec::new();
    let mut buffers = Vec::new();
    for p in [&pair.reference, &pair.distorted] {
        let dev = DeviceBuffer::new(ctx, pitch * h + offset).expect("device buffer");
        let src = match &p.data {
            SampleBuf::U8(v) => v.as_ptr(),
            SampleBuf::U16(v) => v.as_ptr().cast::<u8>(),
        };
        let dst = copy::Memory2D::Device {
            ptr: dev.ptr() + offset as u64,
            pitch,
        };
        let src = copy::Memory2D::Host {
            ptr: src.cast_mut(),
            pitch: w * bps,
        };
        // SAFETY: both sides hold h rows of their pitch; synchronised right after, while the
        // host plane and the buffer are alive.
        unsafe { copy::copy_2d_async(dst, src, w * bps, h, stream) }.expect("2D copy");
        stream.synchronize().expect("sync");
        planes.push(DevicePlane {
            ptr: dev.ptr() + offset as u64,
            pitch,
            width: w,
            height: h,
            bytes_per_sample: bps,
            shift: 0,
        });
        buffers.push(dev);
    }
    let [b0, b1]: [DeviceBuffer; 2] = buffers.try_into().ok().expect("two buffers");
    DevicePair {
        reference: planes[0],
        distorted: planes[1],
        _buffers: [b0, b1],
    }
}

/// Scores every pair on the GPU (pairs of one geometry in consecutive slots, synchronising once
/// per geometry) and asserts identical doubles to the CPU for both gain limits.
fn check_pairs(pairs: &[Pair], extra: usize, offset: usize) {
    let ctx = Context::primary(0).expect("primary context");
    let kernels = VifKernels::load(&ctx).expect("VIF kernels");
    let stream = Stream::new(&ctx).expect("stream");
    let mut i = 0;
    while i < pairs.len() {
        let geometry = pairs[i].geometry();
        let group: Vec<&Pair> = pairs[i..]
            .iter()
            .take_while(|p| p.geometry() == geometry)
            .collect();
        i += group.len();
        let (w, h, bpc) = geometry;
        let device: Vec<DevicePair> = group
            .iter()
            .map(|p| upload(&ctx, &stream, p, extra, offset))
            .collect();
        // The measured default, then every scale on the throughput kernels, then every scale
        // on the latency kernels: all must give the CPU's sums.
        let configs = [None, Some(0), Some(usize::MAX)];
        for (gain, fine_below) in [DEFAULT_VIF_ENHN_GAIN_LIMIT, 1.0]
            .into_iter()
            .flat_map(|g| configs.map(|f| (g, f)))
        {
            let slots = group.len();
            let mut vif =
                GpuVif::new(&ctx, kernels.clone(), w, h, bpc, gain, slots).expect("GpuVif::new");
            if let Some(pixels) = fine_below {
                vif.set_fine_below(pixels);
            }
            for (slot, d) in device.iter().enumerate() {
                // SAFETY: our own planes, uploaded (synchronised), alive past the sync below.
                unsafe { vif.enqueue(&stream, &d.reference, &d.distorted, slot) }.expect("enqueue");
            }
            stream.synchronize().expect("sync");
            for (slot, p) in group.iter().enumerate() {
                let (got, want) = (vif.scores(slot), p.cpu(gain));
                assert!(
                    got.scale == want.scale
                        && got
                            .scale
                            .iter()
                            .zip(&want.scale)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{} (gain limit {gain}, latency kernels below {fine_below:?} pixels, \
                     pitch +{extra}, offset {offset}): GPU {:?} CPU {:?}",
                    p.label,
                    got.scale,
                    want.scale
                );
            }
            if fine_below == Some(usize::MAX) {
                check_in_pairs(&ctx, &kernels, &stream, &group, &device, gain);
            }
        }
    }
    drop((stream, kernels, ctx));
}

/// The group's frames two at a time through two instances on the latency kernels
/// (`GpuVif::enqueue_pair`): the CPU's doubles, as frame by frame.
fn check_in_pairs(
    ctx: &Context,
    kernels: &VifKernels,
    stream: &Stream,
    group: &[&Pair],
    device: &[DevicePair],
    gain: f64,
) {
    let (w, h, bpc) = group[0].geometry();
    let slots = group.len();
    let new = || {
        let mut vif = GpuVif::new(ctx, kernels.clone(), w, h, bpc, gain, slots).expect("GpuVif");
        vif.set_fine_below(usize::MAX);
        vif
    };
    let (mut first, mut second) = (new(), new());
    assert!(
        first.pairable(),
        "{w}x{h}: every scale on the latency kernels"
    );
    for (k, d) in device.chunks_exact(2).enumerate() {
        let frames = [0, 1].map(|j| (&d[j].reference, &d[j].distorted));
        // SAFETY: our own planes, uploaded (synchronised), alive past the sync below.
        unsafe {
            GpuVif::enqueue_pair(&mut first, &mut second, stream, frames, (2 * k, 2 * k + 1))
        }
        .expect("enqueue_pair");
    }
    stream.synchronize().expect("sync");
    for (slot, p) in group.iter().enumerate().take(2 * (group.len() / 2)) {
        let vif = if slot % 2 == 0 { &first } else { &second };
        let (got, want) = (vif.scores(slot), p.cpu(gain));
        assert!(
            got.scale
                .iter()
                .zip(&want.scale)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{} in a pair (gain limit {gain}): GPU {:?} CPU {:?}",
            p.label,
            got.scale,
            want.scale
        );
    }
}

#[test]
fn gpu_vif_equals_cpu_on_corpus_frames() {
    let Some(_gpu) = gpu() else { return };
    let pairs = corpus_pairs();
    check_pairs(&pairs, 0, 0);
    eprintln!(
        "VIF: {} corpus frame pairs identical to the CPU engine",
        pairs.len()
    );
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_vif_equals_cpu_on_synthetic_worst_cases() {
    let Some(_gpu) = gpu() else { return };
    let pairs = synthetic_pairs();
    check_pairs(&pairs, 0, 0);
    eprintln!(
        "VIF: {} synthetic pairs identical to the CPU engine",
        pairs.len()
    );
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_vif_reads_planes_with_padded_pitch() {
    let Some(_gpu) = gpu() else { return };
    let pairs: Vec<Pair> = [(8, 577, 323), (10, 130, 67), (16, 18, 18), (8, 1921, 37)]
        .iter()
        .map(|&(bpc, w, h)| textured(w, h, bpc, 2 << (bpc - 8), 1.3, w as u64))
        .collect();
    // Pitch 37 samples longer than the row, rows starting one sample into the buffer.
    check_pairs(&pairs, 37, 1);
    // Pitch-aligned rows, much longer than the picture.
    check_pairs(&pairs, 1000, 0);
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_vif_rejects_bad_requests() {
    let Some(_gpu) = gpu() else { return };
    let ctx = Context::primary(0).expect("context");
    let kernels = VifKernels::load(&ctx).expect("kernels");
    let new = |w, h, bpc, gain, slots| GpuVif::new(&ctx, kernels.clone(), w, h, bpc, gain, slots);
    assert!(new(16, 18, 8, 100.0, 1).is_err());
    assert!(new(18, 16, 8, 100.0, 1).is_err());
    assert!(new(18, 18, 7, 100.0, 1).is_err());
    assert!(new(18, 18, 17, 100.0, 1).is_err());
    assert!(new(18, 18, 8, 0.5, 1).is_err());
    assert!(new(18, 18, 8, 100.5, 1).is_err());
    assert!(new(18, 18, 8, 100.0, 0).is_err());
    let mut vif = new(64, 32, 10, 100.0, 2).expect("GpuVif");
    let stream = Stream::new(&ctx).expect("stream");
    let pair = textured(64, 32, 10, 4, 1.0, 5);
    let d = upload(&ctx, &stream, &pair, 0, 0);
    let wrong_size = DevicePlane {
        width: 63,
        ..d.reference
    };
    let wrong_depth = DevicePlane {
        bytes_per_sample: 1,
        ..d.reference
    };
    // SAFETY: every call below fails its checks before queueing anything.
    unsafe {
        assert!(vif.enqueue(&stream, &d.reference, &d.distorted, 2).is_err());
        assert!(vif.enqueue(&stream, &wrong_size, &d.distorted, 0).is_err());
        assert!(vif.enqueue(&stream, &d.reference, &wrong_depth, 0).is_err());
    }
    // And a good one still works afterwards.
    // SAFETY: our planes, alive past the sync.
    unsafe { vif.enqueue(&stream, &d.reference, &d.distorted, 1) }.expect("enqueue");
    stream.synchronize().expect("sync");
    assert_eq!(vif.scores(1), pair.cpu(100.0));
    drop((vif, d, stream, kernels, ctx));
    assert_no_live_resources("after teardown");
}

/// Frames per second of VIF alone on device-resident frames (median of several runs, rotating
/// among four frames, two result slots).
fn vif_fps(ctx: &Context, kernels: &VifKernels, w: usize, h: usize, bpc: u32) -> f64 {
    let stream = Stream::new(ctx).expect("stream");
    let device: Vec<DevicePair> = (0..4)
        .map(|k| {
            let pair = textured(w, h, bpc, 2 << (bpc - 8), 1.0 + 0.1 * k as f64, k);
            upload(ctx, &stream, &pair, 0, 0)
        })
        .collect();
    let mut vif = GpuVif::new(
        ctx,
        kernels.clone(),
        w,
        h,
        bpc,
        DEFAULT_VIF_ENHN_GAIN_LIMIT,
        2,
    )
    .expect("GpuVif");
    let n = 200;
    let mut run = || {
        let t = Instant::now();
        for i in 0..n {
            let d = &device[i % device.len()];
            // SAFETY: our planes, alive past the sync.
            unsafe { vif.enqueue(&stream, &d.reference, &d.distorted, i % 2) }.expect("enqueue");
        }
        stream.synchronize().expect("sync");
        n as f64 / t.elapsed().as_secs_f64()
    };
    run();
    let mut fps: Vec<f64> = (0..5).map(|_| run()).collect();
    fps.sort_by(f64::total_cmp);
    fps[fps.len() / 2]
}

#[test]
fn throughput_report() {
    let Some(_gpu) = gpu() else { return };
    if common::gpu::under_sanitizer() {
        return;
    }
    let ctx = Context::primary(0).expect("context");
    let kernels = VifKernels::load(&ctx).expect("kernels");
    for (w, h, bpc) in [
        (1920, 1080, 8),
        (576, 324, 8),
        (1920, 1080, 10),
        (3840, 2160, 8),
    ] {
        let fps = vif_fps(&ctx, &kernels, w, h, bpc);
        let _ = writeln!(std::io::stderr(), "VIF {w}x{h} {bpc}-bit: {fps:.0} fps");
    }
    drop((kernels, ctx));
    assert_no_live_resources("after throughput");
}

#[test]
fn corpus_is_found_where_tests_look() {
    // The corpus tests above only run on a GPU; here just say where the clips are looked for.
    let dir = common::corpus_dir();
    let first = CORPUS_PAIRS[0].0;
    let present = Path::new(&dir)
        .join(format!("video/{first}.y4m.zst"))
        .exists();
    eprintln!("VIF corpus at {} (present: {present})", dir.display());
}
