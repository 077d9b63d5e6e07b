//! Broadcast QC behaviour of the element: pairing by running time, the offset search
//! (`align=auto`), dropped and repeated frames, alerts, and live sources with a stalling feed.
//! Numbers are checked against libvmaf's per-shot output in the corpus and against the engine
//! run on the frame pairs that should have been matched. No GPU needed.

mod common;

use gst::prelude::*;
use gstvmafcuda::VmafMessage;
use vmafcuda::frame::{PictureRef, Plane, Samples};
use vmafcuda::model::Model;
use vmafcuda::{Geometry, Scorer, ScorerConfig};

const TOLERANCE: f64 = 1e-9;
const FRAME_NS: u64 = 40_000_000;

use common::{init, json, y4m};

/// Runs `pipeline` (after `prepare`) until EOS: VMAF messages and every other message.
fn run_with(
    pipeline: &str,
    prepare: impl FnOnce(&gst::Bin),
) -> (Vec<VmafMessage>, Vec<gst::Message>) {
    init();
    let pipeline = gst::parse::launch(pipeline)
        .expect("pipeline")
        .downcast::<gst::Bin>()
        .expect("bin");
    prepare(&pipeline);
    let bus = pipeline.bus().expect("bus");
    pipeline.set_state(gst::State::Playing).expect("playing");
    let (mut vmaf, mut others) = (Vec::new(), Vec::new());
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(120)) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                let _ = pipeline.set_state(gst::State::Null);
                panic!("pipeline error: {} ({:?})", e.error(), e.debug());
            }
            _ => {}
        }
        match VmafMessage::parse(&msg) {
            Some(m) => vmaf.push(m),
            None => others.push(msg),
        }
    }
    pipeline.set_state(gst::State::Null).expect("null");
    (vmaf, others)
}

fn frames(msgs: &[VmafMessage]) -> Vec<&gstvmafcuda::FrameScore> {
    msgs.iter()
        .filter_map(|m| match m {
            VmafMessage::Frame(f) => Some(f),
            _ => None,
        })
        .collect()
}

fn shots(msgs: &[VmafMessage]) -> Vec<&gstvmafcuda::ShotScore> {
    msgs.iter()
        .filter_map(|m| match m {
            VmafMessage::Shot(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn gaps(msgs: &[VmafMessage]) -> Vec<&gstvmafcuda::GapReport> {
    msgs.iter()
        .filter_map(|m| match m {
            VmafMessage::Gap(g) => Some(g),
            _ => None,
        })
        .collect()
}

fn alerts(msgs: &[VmafMessage]) -> Vec<&gstvmafcuda::AlertReport> {
    msgs.iter()
        .filter_map(|m| match m {
            VmafMessage::Alert(a) => Some(a),
            _ => None,
        })
        .collect()
}

fn aligns(msgs: &[VmafMessage]) -> Vec<&gstvmafcuda::AlignReport> {
    msgs.iter()
        .filter_map(|m| match m {
            VmafMessage::Align(a) => Some(a),
            _ => None,
        })
        .collect()
}

fn pooled(msgs: &[VmafMessage]) -> &gstvmafcuda::StreamScore {
    msgs.iter()
        .find_map(|m| match m {
            VmafMessage::Pooled(p) => Some(p),
            _ => None,
        })
        .expect("pooled message")
}

fn warnings(others: &[gst::Message]) -> Vec<String> {
    others
        .iter()
        .filter_map(|m| match m.view() {
            gst::MessageView::Warning(w) => Some(w.error().to_string()),
            _ => None,
        })
        .collect()
}

// ---- delayed feeds: the offset search -------------------------------------------------------

const MULTI: &str = "s_multishot_576x324";
const MULTI_PAIR: &str = "s_multishot_576x324__x264_crf30";

/// The multi-shot pair with one feed's timestamps moved `delay` frames later (positive: the
/// distorted feed is late; negative: the reference is), scored with `props`.
fn delayed_multishot(delay: i64, props: &str) -> Vec<VmafMessage> {
    let pipeline = format!(
        "filesrc location={} ! y4mdec ! identity name=rshift ! vmafcuda name=v frame-message=true \
         shot-detection=none shot-boundaries=0,14,36,46 {props} ! fakesink \
         filesrc location={} ! y4mdec ! identity name=dshift ! v.dist_sink",
        y4m(MULTI).display(),
        y4m(MULTI_PAIR).display()
    );
    let (msgs, _) = run_with(&pipeline, |bin| {
        let (name, frames) = if delay >= 0 {
            ("dshift", delay as u64)
        } else {
            ("rshift", (-delay) as u64)
        };
        let shift = frames * FRAME_NS;
        let pad = bin
            .by_name(name)
            .and_then(|e| e.static_pad("src"))
            .expect("identity src pad");
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(gst::PadProbeData::Buffer(buffer)) = info.data.as_mut() {
                let b = buffer.make_mut();
                if let Some(pts) = b.pts() {
                    b.set_pts(pts + gst::ClockTime::from_nseconds(shift));
                }
            }
            gst::PadProbeReturn::Ok
        });
    });
    msgs
}

/// Every shot's frames and pooled mean equal libvmaf's fresh per-shot runs of the aligned pair.
fn assert_aligned_pair_scores(msgs: &[VmafMessage], what: &str) {
    let all = frames(msgs);
    assert_eq!(all.len(), 64, "{what}: every frame paired");
    let shot_list = shots(msgs);
    assert_eq!(
        shot_list.iter().map(|s| s.first_frame).collect::<Vec<_>>(),
        vec![0, 14, 36, 46],
        "{what}"
    );
    for (k, s) in shot_list.iter().enumerate() {
        let expected = json(&format!("{MULTI_PAIR}.shot{k}.vmaf_v0.6.1.full.json"));
        let want = expected["frames"].as_array().expect("frames");
        let got: Vec<_> = all
            .iter()
            .filter(|f| (s.first_frame..=s.last_frame).contains(&f.index))
            .collect();
        assert_eq!(got.len(), want.len(), "{what}: shot {k} frames");
        for (g, w) in got.iter().zip(want) {
            let w = w["metrics"]["vmaf"].as_f64().expect("vmaf");
            assert!(
                (g.score - w).abs() <= TOLERANCE,
                "{what}: frame {} VMAF {} vs libvmaf {w}",
                g.index,
                g.score
            );
        }
        let mean = expected["pooled_metrics"]["vmaf"]["mean"]
            .as_f64()
            .expect("mean");
        assert!(
            (s.pooled.mean - mean).abs() <= TOLERANCE,
            "{what}: shot {k} mean {} vs libvmaf {mean}",
            s.pooled.mean
        );
        assert_eq!((s.frames_missing, s.frames_repeated), (0, 0), "{what}");
    }
    let p = pooled(msgs);
    assert_eq!((p.frames, p.frames_missing, p.gaps), (64, 0, 0), "{what}");
}

#[test]
fn align_auto_finds_delays_up_to_50_frames_both_ways_and_scores_like_the_aligned_pair() {
    for delay in [50i64, -50, 13, -4] {
        let msgs = delayed_multishot(delay, "align=auto");
        let locks = aligns(&msgs);
        assert_eq!(
            locks.len(),
            1,
            "delay {delay}: one lock, no change at the shots"
        );
        let a = locks[0];
        assert_eq!(a.reason, "locked");
        assert!(a.found && a.distinct, "delay {delay}: {a:?}");
        assert_eq!(a.offset_frames, delay, "delay {delay}: {a:?}");
        assert_eq!(a.offset, delay * FRAME_NS as i64);
        assert_eq!(pooled(&msgs).frames_extra, 0);
        assert_aligned_pair_scores(&msgs, &format!("align=auto, delay {delay}"));
    }
}

#[test]
fn align_offset_set_by_hand_pairs_a_delayed_feed() {
    let delay = -20i64;
    let msgs = delayed_multishot(delay, &format!("align-offset={}", delay * FRAME_NS as i64));
    assert!(aligns(&msgs).is_empty());
    assert_aligned_pair_scores(&msgs, "align-offset=-20 frames");
}

#[test]
fn a_delayed_feed_without_alignment_is_never_paired_with_the_wrong_frames() {
    // 5 frames late and not aligned: the first 5 reference frames have no partner (reported
    // as a leading gap), the rest pair by time with distorted frames of other content.
    let msgs = delayed_multishot(5, "");
    let g = gaps(&msgs);
    assert_eq!(g.len(), 1);
    assert_eq!((g[0].reason.as_str(), g[0].frames), ("leading", 5));
    assert_eq!(g[0].start, Some(gst::ClockTime::ZERO));
    assert_eq!(g[0].end, Some(gst::ClockTime::from_nseconds(5 * FRAME_NS)));
    assert_eq!(pooled(&msgs).frames, 59);
}

// ---- dropped and repeated frames ------------------------------------------------------------

const W: usize = 64;
const H: usize = 48;

/// Synthetic frame content (the same generator as the element's Harness tests).
fn gray(seed: usize, noise: usize) -> Vec<u8> {
    (0..W * H)
        .map(|i| {
            let (x, y) = (i % W, i / W);
            let v = (x * 3 + y * 5 + seed * 7) % 200 + ((x * y + seed * 13 + noise) % 9);
            v as u8
        })
        .collect()
}

fn gray_caps() -> gst::Caps {
    gst_video::VideoCapsBuilder::new()
        .format(gst_video::VideoFormat::Gray8)
        .width(W as i32)
        .height(H as i32)
        .framerate(gst::Fraction::new(25, 1))
        .build()
}

fn timed(data: Vec<u8>, slot: u64) -> gst::Buffer {
    let mut b = gst::Buffer::from_mut_slice(data);
    {
        let b = b.get_mut().expect("writable");
        b.set_pts(gst::ClockTime::from_nseconds(slot * FRAME_NS));
        b.set_duration(gst::ClockTime::from_nseconds(FRAME_NS));
    }
    b
}

/// Two appsrcs into the element: every buffer queued up front, then EOS.
fn run_appsrc(
    reference: Vec<gst::Buffer>,
    distorted: Vec<gst::Buffer>,
    props: &str,
) -> (Vec<VmafMessage>, Vec<gst::Message>) {
    let pipeline = format!(
        "appsrc name=r format=time ! vmafcuda name=v frame-message=true {props} ! fakesink \
         appsrc name=d format=time ! v.dist_sink"
    );
    run_with(&pipeline, move |bin| {
        for (name, buffers) in [("r", reference), ("d", distorted)] {
            let src = bin
                .by_name(name)
                .and_downcast::<gst_app::AppSrc>()
                .expect("appsrc");
            src.set_caps(Some(&gray_caps()));
            src.set_max_bytes(0);
            for b in buffers {
                src.push_buffer(b).expect("push");
            }
            src.end_of_stream().expect("eos");
        }
    })
}

/// What the engine gives for these (reference seed, distorted seed, noise) pairs in order.
fn engine_vmaf(pairs: &[(usize, usize, usize)]) -> Vec<f64> {
    let mut scorer = Scorer::new(
        ScorerConfig::new(Model::builtin("vmaf_v0.6.1").expect("model")),
        Geometry {
            width: W,
            height: H,
            bpc: 8,
        },
    )
    .expect("scorer");
    fn picture(s: &[u8]) -> PictureRef<'_> {
        PictureRef {
            luma: Plane {
                samples: Samples::U8(s),
                width: W,
                height: H,
                stride: W,
                bpc: 8,
            },
            chroma: None,
        }
    }
    for &(r, d, noise) in pairs {
        let (r, d) = (gray(r, 0), gray(d, noise));
        scorer.push(&picture(&r), &picture(&d)).expect("push");
    }
    scorer.finish().frames.iter().map(|f| f.vmaf()).collect()
}

#[test]
fn dropped_and_repeated_distorted_frames_are_counted_and_reported_as_gaps() {
    let n = 40usize;
    let noise = |i: usize| 3 + i % 4;
    let dropped = [5usize, 17, 18];
    let pushed_twice = [9usize, 30];
    let frozen = 25usize; // shows frame 24's picture again
    let reference: Vec<gst::Buffer> = (0..n).map(|i| timed(gray(i, 0), i as u64)).collect();
    let mut distorted = Vec::new();
    let mut expected_pairs = Vec::new();
    for i in 0..n {
        if dropped.contains(&i) {
            continue;
        }
        let seed = if i == frozen { i - 1 } else { i };
        let nz = if i == frozen { noise(i - 1) } else { noise(i) };
        distorted.push(timed(gray(seed, nz), i as u64));
        if pushed_twice.contains(&i) {
            distorted.push(timed(gray(seed, nz), i as u64));
        }
        expected_pairs.push((i, seed, nz));
    }
    let (msgs, _) = run_appsrc(reference, distorted, "");
    let p = pooled(&msgs);
    assert_eq!(p.frames, (n - dropped.len()) as u64);
    assert_eq!(p.frames_missing, dropped.len() as u64);
    assert_eq!(p.frames_repeated, (pushed_twice.len() + 1) as u64);
    assert_eq!(p.frames_extra, pushed_twice.len() as u64);
    let g = gaps(&msgs);
    assert_eq!(p.gaps, 2);
    assert_eq!(
        g.iter()
            .map(|g| (g.reason.as_str(), g.frames, g.start, g.end))
            .collect::<Vec<_>>(),
        vec![
            (
                "dropped",
                1,
                Some(gst::ClockTime::from_nseconds(5 * FRAME_NS)),
                Some(gst::ClockTime::from_nseconds(6 * FRAME_NS))
            ),
            (
                "dropped",
                2,
                Some(gst::ClockTime::from_nseconds(17 * FRAME_NS)),
                Some(gst::ClockTime::from_nseconds(19 * FRAME_NS))
            ),
        ]
    );
    // Frame indices count scored frames: the gap at reference frame 5 comes before index 5.
    assert_eq!(
        g.iter().map(|g| g.before_frame).collect::<Vec<_>>(),
        vec![5, 16]
    );
    let s = shots(&msgs);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].frames_missing, s[0].frames_repeated), (3, 3));
    // Scores: exactly the engine's on the pairs that should have been matched.
    let got: Vec<f64> = frames(&msgs).iter().map(|f| f.score).collect();
    assert_eq!(got, engine_vmaf(&expected_pairs));

    // Arrival order would have paired them wrongly (what the element did before).
    let reference: Vec<gst::Buffer> = (0..n).map(|i| timed(gray(i, 0), i as u64)).collect();
    let distorted: Vec<gst::Buffer> = (0..n)
        .filter(|i| !dropped.contains(i))
        .map(|i| timed(gray(i, noise(i)), i as u64))
        .collect();
    let (msgs, _) = run_appsrc(reference, distorted, "pairing=arrival");
    assert_eq!(pooled(&msgs).frames, (n - dropped.len()) as u64);
    assert_eq!(pooled(&msgs).frames_missing, 0);
    assert_ne!(
        frames(&msgs).iter().map(|f| f.score).collect::<Vec<_>>(),
        engine_vmaf(
            &(0..n)
                .filter(|i| !dropped.contains(i))
                .map(|i| (i, i, noise(i)))
                .collect::<Vec<_>>()
        )
    );
}

// ---- alerts ---------------------------------------------------------------------------------

const BLOCKY: &str = "s_coffee_576x324__x264_crf30_blockframe20";

fn blocky_run(props: &str) -> (Vec<VmafMessage>, Vec<gst::Message>) {
    run_with(
        &format!(
            "filesrc location={} ! y4mdec ! vmafcuda name=v {props} ! fakesink \
             filesrc location={} ! y4mdec ! v.dist_sink",
            y4m("s_coffee_576x324").display(),
            y4m(BLOCKY).display()
        ),
        |_| {},
    )
}

#[test]
fn alert_fires_exactly_on_the_single_blocky_frame() {
    let expected = json(&format!("{BLOCKY}.vmaf_v0.6.1.full.json"));
    let scores: Vec<f64> = expected["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f["metrics"]["vmaf"].as_f64().expect("vmaf"))
        .collect();
    let blocky = scores[20];
    let others = scores
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 20)
        .map(|(_, &s)| s)
        .fold(f64::INFINITY, f64::min);
    assert!(blocky < others);
    // Between the blocky frame and every other frame.
    let threshold = (blocky + others) / 2.0;
    let (msgs, others_msgs) = blocky_run(&format!("alert-threshold={threshold}"));
    let a = alerts(&msgs);
    assert_eq!(a.len(), 1, "{a:?}");
    let a = a[0];
    assert_eq!(a.reason, "frames");
    assert_eq!((a.first_frame, a.last_frame, a.worst_frame), (20, 20, 20));
    assert!((a.worst_score - blocky).abs() <= TOLERANCE);
    assert_eq!(a.threshold, threshold);
    assert_eq!(a.shot, 0);
    assert_eq!(a.start, Some(gst::ClockTime::from_nseconds(20 * FRAME_NS)));
    assert_eq!(a.end, Some(gst::ClockTime::from_nseconds(21 * FRAME_NS)));
    assert_eq!(pooled(&msgs).alerts, 1);
    let w = warnings(&others_msgs);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("VMAF alert") && w[0].contains("20"), "{w:?}");

    // Just below the blocky frame's own score: nothing.
    let (msgs, others_msgs) = blocky_run(&format!("alert-threshold={}", blocky - 1e-6));
    assert!(alerts(&msgs).is_empty());
    assert!(warnings(&others_msgs).is_empty());

    // Two consecutive frames required: a single blocky frame is not enough.
    let (msgs, _) = blocky_run(&format!("alert-threshold={threshold} alert-frames=2"));
    assert!(alerts(&msgs).is_empty());
}

#[test]
fn shot_alert_carries_the_pooled_score_and_the_worst_frame() {
    let expected = json(&format!("{BLOCKY}.vmaf_v0.6.1.full.json"));
    let mean = expected["pooled_metrics"]["vmaf"]["mean"]
        .as_f64()
        .expect("mean");
    let (msgs, _) = blocky_run(&format!("alert-shot-threshold={}", mean + 0.01));
    let a = alerts(&msgs);
    assert_eq!(a.len(), 1, "{a:?}");
    let a = a[0];
    assert_eq!(a.reason, "shot");
    assert!((a.score - mean).abs() <= TOLERANCE);
    assert_eq!((a.first_frame, a.last_frame, a.worst_frame), (0, 23, 20));
    assert_eq!(a.end, Some(gst::ClockTime::from_nseconds(24 * FRAME_NS)));
    let (msgs, _) = blocky_run(&format!("alert-shot-threshold={}", mean - 0.01));
    assert!(alerts(&msgs).is_empty());
}

// ---- live sources ---------------------------------------------------------------------------

/// Live `videotestsrc` feeds (real time, about 3 s): the latency the element reports, and a
/// distorted feed that stops after about a second: the shot ends, the reference frames after
/// the stall go out unscored as one `stalled` gap, nothing queues without bound, EOS comes.
#[test]
fn live_feeds_report_latency_and_a_stalled_feed_becomes_a_gap() {
    init();
    let caps = "video/x-raw,format=GRAY8,width=64,height=48,framerate=25/1";
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc is-live=true pattern=ball num-buffers=75 ! {caps} ! \
         vmafcuda name=v stall-timeout=300000000 frame-message=true ! fakesink sync=true \
         videotestsrc is-live=true pattern=ball ! {caps} ! valve name=gate ! v.dist_sink"
    ))
    .expect("pipeline")
    .downcast::<gst::Pipeline>()
    .expect("pipeline");
    let bus = pipeline.bus().expect("bus");
    pipeline.set_state(gst::State::Playing).expect("playing");
    let gate = pipeline.by_name("gate").expect("valve");
    let started = std::time::Instant::now();
    let (mut vmaf, mut latency, mut closed) = (Vec::new(), None, false);
    loop {
        let msg = bus.timed_pop(gst::ClockTime::from_mseconds(50));
        if !closed && started.elapsed() > std::time::Duration::from_millis(1200) {
            gate.set_property("drop", true);
            closed = true;
        }
        if latency.is_none() && started.elapsed() > std::time::Duration::from_millis(500) {
            let mut q = gst::query::Latency::new();
            let v = pipeline.by_name("v").expect("v");
            if v.static_pad("src").expect("src").query(&mut q) {
                latency = Some(q.result());
            }
        }
        assert!(started.elapsed().as_secs() < 20, "no EOS: {vmaf:?}");
        let Some(msg) = msg else { continue };
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => panic!("{} {:?}", e.error(), e.debug()),
            _ => {}
        }
        if let Some(m) = VmafMessage::parse(&msg) {
            vmaf.push(m);
        }
    }
    pipeline.set_state(gst::State::Null).expect("null");

    // Own latency: just under half a frame (the pairing tolerance), on top of the source's
    // one frame.
    let (live, min, _) = latency.expect("latency answered");
    assert!(live);
    assert_eq!(
        min,
        gst::ClockTime::from_nseconds(FRAME_NS + FRAME_NS / 2 - 1)
    );

    let p = pooled(&vmaf);
    let g = gaps(&vmaf);
    assert!(!g.is_empty(), "{vmaf:?}");
    let stalled: Vec<_> = g.iter().filter(|g| g.reason == "stalled").collect();
    assert_eq!(stalled.len(), 1, "{g:?}");
    let scored = p.frames;
    // About 1.2 s of the 3 s scored, the rest one stalled gap; every frame accounted for.
    assert!((15..=45).contains(&scored), "{scored} frames scored");
    let missing: u64 = g.iter().map(|g| g.frames).sum();
    assert_eq!(scored + missing, 75, "{g:?}");
    assert_eq!(
        p.frames_missing,
        stalled[0].frames
            + g.iter()
                .filter(|g| g.reason == "dropped")
                .map(|g| g.frames)
                .sum::<u64>()
    );
    // The stall ended the shot: the scored frames are all in shot 0, which was posted.
    assert!(shots(&vmaf)
        .iter()
        .any(|s| s.frames == scored && s.index == 0));
    // Identical live feeds: every scored pair is the same picture.
    assert!(frames(&vmaf).iter().all(|f| f.score > 90.0));
}

#[test]
fn align_auto_reports_its_holding_time_as_latency() {
    init();
    let caps = "video/x-raw,format=GRAY8,width=64,height=48,framerate=25/1";
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc is-live=true ! {caps} ! vmafcuda name=v align=auto align-window=1000000000 \
         ! fakesink videotestsrc is-live=true ! {caps} ! v.dist_sink"
    ))
    .expect("pipeline");
    pipeline.set_state(gst::State::Playing).expect("playing");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let v = pipeline
        .downcast_ref::<gst::Bin>()
        .and_then(|b| b.by_name("v"))
        .expect("v");
    let mut q = gst::query::Latency::new();
    assert!(v.static_pad("src").expect("src").query(&mut q));
    let (live, min, _) = q.result();
    pipeline.set_state(gst::State::Null).expect("null");
    assert!(live);
    // Source frame + window + 1 s of matching + tolerance.
    assert_eq!(
        min,
        gst::ClockTime::from_nseconds(FRAME_NS + 2_000_000_000 + FRAME_NS / 2 - 1)
    );
}
