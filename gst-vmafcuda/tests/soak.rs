//! Day-long soak of the element, faster than real time: two live `appsrc` feeds (GRAY8, 32x18
//! on the CPU: the smallest size libvmaf scores; 64x48 where a GPU is present; 25 fps stream
//! time), a shot boundary every 3 s, a dropped
//! distorted frame every 20 s. The process RSS and the live CUDA resources must stay flat and
//! every dropped frame must come back as a gap.
//!
//! Stream time is `VMAFCUDA_SOAK_HOURS` hours (default 0.5 h = 30 min of stream, seconds
//! here). The element pools the whole stream in constant memory (`pooling=auto` is `bounded`
//! on live feeds), so nothing may grow with the frames: a run of 12 hours or more (1.08
//! million frames) must show an RSS slope of at most **1 kB per stream hour** after its first
//! hour (warm-up) in at least one third of the measured run (a leak grows the RSS in every
//! third; the allocator's one-off steps, a few pages touched for the first time late in the
//! run, fall into one), and at most 256 kB of growth in all; shorter runs allow 500 kB of
//! allocator noise over the run on top. CI runs
//! half a day (`.ci/run`: `VMAFCUDA_SOAK_HOURS=12`, the test binary with `--nocapture`, about
//! two minutes); `VMAFCUDA_SOAK_HOURS=24` runs the whole day. `VMAFCUDA_SOAK_BACKEND` sets the element's `backend`
//! (`auto` by default, which is the CPU without a GPU); `VMAFCUDA_SOAK_BACKEND=cuda` on the
//! device runs the same day on CUDA and skips (passes with a note) where no GPU can be used:
//! `VMAFCUDA_SOAK_BACKEND=cuda VMAFCUDA_SOAK_HOURS=24 cargo test --release -p gst-vmafcuda
//! --test soak -- --nocapture`. This file holds a single test so that the process RSS is its
//! own.
//!
//! Faster than real time, still live: the pipeline runs on a [`gst_check::TestClock`] that the
//! feeding thread sets to each frame's time just before it pushes that frame, as a capture card
//! would deliver it. The live sources, the aggregator's latency and timeouts and the element's
//! stall detection all see a live clock, but nothing waits for wall time: a frame is "late" only
//! if the feed really is behind, not because the machine is busy. (With the system clock, the
//! live `appsrc`s wait for each frame's time: 1x real time, hours for an hours-long soak.)

mod common;

use common::rss;

use std::sync::OnceLock;

use gst::prelude::*;
use gstvmafcuda::VmafMessage;

/// Frame size: the smallest libvmaf scores (the CPU's cost per frame is what limits the rate),
/// and where a GPU is present 64x48, the size the device runs of this soak were measured at.
fn frame_size() -> (usize, usize) {
    if vmafcuda::cuda::probe().is_ok() {
        (64, 48)
    } else {
        (32, 18)
    }
}
const FRAME_NS: u64 = 40_000_000;
const SHOT_FRAMES: u64 = 75;
const DROP_EVERY: u64 = 500;

fn init() {
    static INIT: OnceLock<tempfile::TempDir> = OnceLock::new();
    INIT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        std::env::set_var("GST_REGISTRY", dir.path().join("registry.bin"));
        std::env::set_var("GST_REGISTRY_FORK", "no");
        gst::init().expect("gst init");
        gstvmafcuda::plugin_register_static().expect("register vmafcuda");
        dir
    });
}

/// An empty vector with room for `n` values, its memory written once (resident), so that
/// pushing up to `n` values allocates nothing.
fn filled<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.resize(n, value);
    v.clear();
    v
}

/// Least-squares slope of `ys` against `xs`.
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        num += (x - mx) * (y - my);
        den += (x - mx) * (x - mx);
    }
    num / den
}

fn frame((w, h): (usize, usize), i: u64, noise: u64) -> gst::Buffer {
    let shot = i / SHOT_FRAMES;
    let data: Vec<u8> = (0..w * h)
        .map(|p| {
            let (x, y) = ((p % w) as u64, (p / w) as u64);
            ((x * (3 + shot % 5) + y * 5 + i * 7) % 200 + (x * y + i * 13 + noise) % 9) as u8
        })
        .collect();
    let mut b = gst::Buffer::from_mut_slice(data);
    {
        let b = b.get_mut().expect("writable");
        b.set_pts(gst::ClockTime::from_nseconds(i * FRAME_NS));
        b.set_duration(gst::ClockTime::from_nseconds(FRAME_NS));
    }
    b
}

#[test]
fn hours_of_live_stream_time_keep_memory_flat_and_report_every_drop_as_a_gap() {
    // A shot boundary every 3 s rebuilds the scorer on its rebuild thread: with glibc's
    // per-thread malloc arenas uncapped, one CI run (2 cores) saw RSS creep 62 kB over the day
    // as arenas were first touched (1,333 B per stream hour) where this machine and the GPU
    // machine stay flat to the byte. Capped, the allocator's noise goes and a leak still shows.
    if !common::malloc_arenas_capped(
        "hours_of_live_stream_time_keep_memory_flat_and_report_every_drop_as_a_gap",
        &[],
    ) {
        return;
    }
    init();
    let hours: f64 = std::env::var("VMAFCUDA_SOAK_HOURS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.5);
    let total = (hours * 3600.0 * 1e9 / FRAME_NS as f64) as u64;
    let backend = std::env::var("VMAFCUDA_SOAK_BACKEND").unwrap_or_else(|_| "auto".into());
    if backend == "cuda" {
        if let Err(e) = vmafcuda::cuda::probe() {
            eprintln!("skipped: VMAFCUDA_SOAK_BACKEND=cuda but no usable GPU ({e})");
            return;
        }
    }
    let size = frame_size();
    let caps = gst_video::VideoCapsBuilder::new()
        .format(gst_video::VideoFormat::Gray8)
        .width(size.0 as i32)
        .height(size.1 as i32)
        .framerate(gst::Fraction::new(25, 1))
        .build();
    let pipeline = gst::parse::launch(&format!(
        "appsrc name=r is-live=true format=time block=true max-buffers=8 ! \
         vmafcuda name=v shot-detection=none alert-threshold=1 backend={backend} ! \
         fakesink sync=false \
         appsrc name=d is-live=true format=time block=true max-buffers=8 ! v.dist_sink",
    ))
    .expect("pipeline")
    .downcast::<gst::Pipeline>()
    .expect("pipeline");
    let src = |name: &str| {
        let s = pipeline
            .by_name(name)
            .and_downcast::<gst_app::AppSrc>()
            .expect("appsrc");
        s.set_caps(Some(&caps));
        s
    };
    let (r, d) = (src("r"), src("d"));
    let bus = pipeline.bus().expect("bus");
    let clock = gst_check::TestClock::new();
    pipeline.use_clock(Some(&clock));
    pipeline.set_start_time(gst::ClockTime::NONE);
    pipeline.set_base_time(gst::ClockTime::ZERO);
    pipeline.set_state(gst::State::Playing).expect("playing");

    // Clock waits end when live time has reached them (a test clock only ends them on request).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let releaser = {
        let (clock, done) = (clock.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                match clock.peek_next_pending_id() {
                    Some(id) if id.time() <= clock.time() => {
                        // (process_id_list, not process_id: the C function takes the id's
                        // reference, which its binding also drops.)
                        clock.process_id_list(&[&id]);
                    }
                    _ => std::thread::sleep(std::time::Duration::from_micros(100)),
                }
            }
        })
    };

    let feeder = std::thread::spawn(move || {
        let mut drops = 0u64;
        for i in 0..total {
            // Frame i is captured now: live time moves on to it (never back).
            clock.set_time(gst::ClockTime::from_nseconds(i * FRAME_NS));
            if i > 0 && i % SHOT_FRAMES == 0 {
                r.send_event(gstvmafcuda::shot_boundary_event());
            }
            if r.push_buffer(frame(size, i, 0)).is_err() {
                break;
            }
            if i % DROP_EVERY == DROP_EVERY / 2 {
                drops += 1;
            } else if d.push_buffer(frame(size, i, 3 + i % 4)).is_err() {
                break;
            }
        }
        // Live time stops here: the element must finish on the end of both streams, not on
        // a timeout.
        clock.set_time(gst::ClockTime::from_nseconds(total * FRAME_NS));
        let _ = d.end_of_stream();
        let _ = r.end_of_stream();
        drops
    });

    let started = std::time::Instant::now();
    let (mut shots, mut gap_frames, mut gaps) = (0u64, 0u64, 0u64);
    let mut pooled = None;
    // The samples' own memory is taken (and touched) now: vectors that grew as they filled
    // would be the slope measured (a 64-byte sample every 10 shots is 7.7 kB per stream
    // hour, and a doubling vector a step of its whole size).
    let samples = total.div_ceil(SHOT_FRAMES) as usize / 10 + 2;
    let (mut xs, mut mem, mut cuda) = (
        filled(samples, 1.0),
        filled(samples, 1.0),
        filled(samples, vmafcuda::cuda::LiveResources::default()),
    );
    loop {
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_seconds(60)) else {
            panic!("no message for 60 s: {shots} shots so far");
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => panic!("{} {:?}", e.error(), e.debug()),
            _ => {}
        }
        match VmafMessage::parse(&msg) {
            Some(VmafMessage::Shot(s)) => {
                shots += 1;
                // After a warm-up (the first hour, at most a tenth of the run), every 10 shots.
                let warm_up = (3.6e12 / (SHOT_FRAMES * FRAME_NS) as f64).min(total as f64 / 750.0);
                if shots as f64 > warm_up.max(10.0) && shots % 10 == 0 {
                    assert!(xs.len() < samples, "more samples than room for them");
                    xs.push((s.last_frame + 1) as f64 * FRAME_NS as f64 / 3.6e12);
                    mem.push(rss());
                    cuda.push(vmafcuda::cuda::live_resources());
                }
            }
            Some(VmafMessage::Gap(g)) => {
                assert_eq!(g.reason, "dropped", "{g:?}");
                gaps += 1;
                gap_frames += g.frames;
            }
            Some(VmafMessage::Pooled(p)) => pooled = Some(p),
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).expect("null");
    let drops = feeder.join().expect("feeder");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    releaser.join().expect("clock releaser");
    let p = pooled.expect("pooled message");
    let elapsed = started.elapsed().as_secs_f64();
    let stream_s = total as f64 * FRAME_NS as f64 / 1e9;
    assert_eq!((gaps, gap_frames), (drops, drops), "every drop is one gap");
    assert_eq!(p.frames_missing, drops);
    assert_eq!(p.frames, total - drops);
    assert_eq!(shots, total.div_ceil(SHOT_FRAMES));
    assert!(xs.len() >= 9, "too short to measure: {} samples", xs.len());
    let per_hour = slope(&xs, &mem);
    // Nothing may grow with the frames or the shots: the whole-stream pool is bounded on a
    // live feed (before it, 8 bytes per frame: 0.72 MB per stream hour and more as its vector
    // doubled), shots are posted and forgotten. A run of 12 hours or more must be flat to 1 kB
    // per stream hour (a leak of 1 byte per 90 frames); shorter runs may also show 500 kB of allocator
    // noise over the whole run. A leak grows the RSS all along, so it shows in every third of
    // the run; glibc's one-off steps (13-15 pages first touched somewhere in the run, seen in
    // CI: 62 kB and 53 kB over a day, a 1.3-1.6 kB per hour slope over the whole run) fall into
    // one third. So the flattest third must be flat to 1 kB per stream hour, and the whole run
    // may grow 256 kB at most.
    let allowed = if hours >= 12.0 {
        1024.0
    } else {
        1024.0 + 500_000.0 / hours
    };
    let third = xs.len() / 3;
    let thirds: Vec<f64> = (0..3)
        .map(|k| {
            slope(
                &xs[k * third..(k + 1) * third],
                &mem[k * third..(k + 1) * third],
            )
        })
        .collect();
    let flattest = thirds.iter().copied().fold(f64::INFINITY, f64::min);
    let growth = mem.last().copied().unwrap_or(0.0) - mem.first().copied().unwrap_or(0.0);
    eprintln!(
        "soak: {stream_s:.0} s of stream time in {elapsed:.1} s ({:.0}x real time), {} frames, \
         {shots} shots, {drops} drops -> {gaps} gaps, backend {backend}, {}x{} frames; RSS {:.3} -> {:.3} MB \
         (min {:.3}, max {:.3}) over {} samples after warm-up, slope {:.0} bytes per stream hour \
         over the run, {:.0} / {:.0} / {:.0} in its thirds (the flattest allowed {allowed:.0}); \
         CUDA live resources first {:?} last {:?}",
        stream_s / elapsed,
        p.frames,
        size.0,
        size.1,
        mem.first().copied().unwrap_or(0.0) / 1e6,
        mem.last().copied().unwrap_or(0.0) / 1e6,
        mem.iter().copied().fold(f64::INFINITY, f64::min) / 1e6,
        mem.iter().copied().fold(0.0, f64::max) / 1e6,
        mem.len(),
        per_hour,
        thirds[0],
        thirds[1],
        thirds[2],
        cuda.first(),
        cuda.last()
    );
    if std::env::var_os("VMAFCUDA_SOAK_TRACE").is_some() {
        for (x, m) in xs.iter().zip(&mem).step_by((xs.len() / 40).max(1)) {
            eprintln!("soak trace: {x:.2} h  RSS {:.3} MB", m / 1e6);
        }
    }
    assert!(
        flattest <= allowed,
        "RSS grows {flattest:.0} bytes per stream hour in every third of the run (allowed \
         {allowed:.0}; {per_hour:.0} over the whole run)"
    );
    assert!(
        growth <= 256e3 + if hours >= 12.0 { 0.0 } else { 500e3 },
        "RSS grew {growth:.0} bytes over the run"
    );
    // The bus is read behind the stream: the last shots' messages may be read after the end
    // of the stream, when the element has already dropped its GPU state. And with a full
    // rebuild a sample may fall while the rebuild thread is between dropping an engine and
    // building the next (one, two or three engines alive). So: while the GPU state exists, the
    // scorer-wide part (context, modules, pools) never changes and no count ever exceeds
    // what the first half of the run reached; then nothing.
    let running = cuda.iter().take_while(|c| !c.is_zero()).count();
    let scorer_wide = |c: &vmafcuda::cuda::LiveResources| (c.contexts, c.modules, c.pools);
    assert!(
        cuda[..running]
            .windows(2)
            .all(|w| scorer_wide(&w[0]) == scorer_wide(&w[1])),
        "scorer-wide CUDA resources changed between shots: {:?} .. {:?}",
        cuda.first(),
        cuda[..running].last()
    );
    let peak = |c: &[vmafcuda::cuda::LiveResources]| {
        let fields = |r: &vmafcuda::cuda::LiveResources| {
            [
                r.device_buffers,
                r.device_bytes,
                r.pinned_buffers + r.pinned_kept,
                r.pinned_bytes,
                r.streams,
                r.events,
            ]
        };
        c.iter().fold([0; 6], |m, r| {
            let f = fields(r);
            std::array::from_fn(|i| m[i].max(f[i]))
        })
    };
    let (early, late) = cuda[..running].split_at(running / 2);
    let (early, late) = (peak(early), peak(late));
    assert!(
        late.iter().zip(&early).all(|(l, e)| l <= e),
        "live CUDA resources grew: peak of the first half {early:?}, of the second {late:?} \
         (buffers, bytes, pinned buffers kept or in use, pinned bytes, streams, events)"
    );
    assert!(
        cuda[running..].iter().all(|c| c.is_zero()),
        "CUDA resources came back after the element dropped them: {:?}",
        &cuda[running..]
    );
    let after = vmafcuda::cuda::live_resources();
    assert!(
        after.is_zero(),
        "CUDA resources left after the run: {after:?}"
    );
    if vmafcuda::cuda::probe().is_ok() {
        assert!(
            running * 10 >= cuda.len() * 9,
            "the GPU state was gone for more than the last tenth of the run: {running} of {}",
            cuda.len()
        );
    }
}
