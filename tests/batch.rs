//! `Scorer::push_batch` (frames spread over the worker threads, motion included) gives the very
//! report of pushing the frames one by one: every batch size, shot starts at the first, a
//! middle and the last frame of a batch, boundaries declared at run time between batches, 8
//! and 10 bits.

mod common;

use common::report::assert_identical;

use vmafcuda::frame::{Picture, SampleBuf};
use vmafcuda::model::Model;
use vmafcuda::report::Report;
use vmafcuda::synth::SynthClip;
use vmafcuda::{Geometry, Scorer, ScorerConfig};

fn scorer(pairs: &[(Picture, Picture)], starts: &[usize]) -> Scorer {
    let config = ScorerConfig {
        psnr: true,
        shot_starts: starts.to_vec(),
        ..ScorerConfig::new(Model::builtin("vmaf_v0.6.1").expect("model"))
    };
    let r = &pairs[0].0;
    let geometry = Geometry {
        width: r.width(),
        height: r.height(),
        bpc: r.bpc(),
    };
    Scorer::new(config, geometry).expect("scorer")
}

/// Pushes the frames in batches of `size` (the last one shorter), calling `end_shot` before
/// the frames in `cuts` (each at a batch start).
fn batched(pairs: &[(Picture, Picture)], starts: &[usize], size: usize, cuts: &[usize]) -> Report {
    let mut s = scorer(pairs, starts);
    for (k, chunk) in pairs.chunks(size).enumerate() {
        if cuts.contains(&(k * size)) {
            s.end_shot();
        }
        let views: Vec<_> = chunk.iter().map(|(r, d)| (r.view(), d.view())).collect();
        s.push_batch(&views).expect("batch");
    }
    s.finish()
}

fn one_by_one(pairs: &[(Picture, Picture)], starts: &[usize], cuts: &[usize]) -> Report {
    let mut s = scorer(pairs, starts);
    for (i, (r, d)) in pairs.iter().enumerate() {
        if cuts.contains(&i) {
            s.end_shot();
        }
        s.push(&r.view(), &d.view()).expect("push");
    }
    s.finish()
}

#[test]
fn batches_score_like_single_frames() {
    for bpc in [8, 10] {
        let clip = SynthClip {
            width: 72,
            height: 40,
            bpc,
            frames: 13,
            cut: 7,
        };
        let pairs: Vec<_> = (0..clip.frames).map(|t| clip.pair(t)).collect();
        // Shots starting at frame 0 of the scorer, inside batches, at a batch's last frame
        // and as the only frame of a shot.
        for starts in [vec![], vec![0, 3, 4, 9], vec![5, 11, 12]] {
            let want = one_by_one(&pairs, &starts, &[]);
            assert!(want
                .frames
                .iter()
                .any(|f| f.get("integer_motion2") != Some(0.0)));
            for size in [1, 2, 3, 4, 5, 13] {
                let got = batched(&pairs, &starts, size, &[]);
                assert_identical(
                    &format!("{bpc}-bit starts {starts:?} batch {size}"),
                    &got,
                    &want,
                );
            }
        }
        // A boundary declared between batches (as the CLI's scene cuts and the element's
        // events do).
        let want = one_by_one(&pairs, &[], &[6]);
        let got = batched(&pairs, &[], 3, &[6]);
        assert_identical(&format!("{bpc}-bit end_shot before frame 6"), &got, &want);
        assert_eq!(got.shots.len(), 2, "{bpc}-bit");
    }
}

/// A batch with a bad frame fails as frame-by-frame pushing would (the first bad frame in
/// frame order, whatever the check) and keeps nothing of the batch: the depth scans run on
/// the workers, the other checks before them.
#[test]
fn a_bad_frame_fails_the_whole_batch_with_the_first_error() {
    let clip = SynthClip {
        width: 72,
        height: 40,
        bpc: 10,
        frames: 6,
        cut: 3,
    };
    let pairs: Vec<_> = (0..clip.frames).map(|t| clip.pair(t)).collect();
    let above_depth = |p: &Picture, x: usize, y: usize| {
        let mut p = p.clone();
        let SampleBuf::U16(s) = &mut p.luma.data else {
            panic!("10-bit samples are u16");
        };
        s[y * 72 + x] = 1024;
        p
    };
    let small = SynthClip { width: 70, ..clip }.pair(0).1;
    let want = one_by_one(&pairs, &[], &[]);
    // (frame index in the second batch, distorted picture) of the bad frames.
    for bad in [
        vec![(1, above_depth(&pairs[4].1, 5, 9))],
        vec![(0, above_depth(&pairs[3].1, 70, 2)), (2, small.clone())],
        vec![(0, small.clone()), (1, above_depth(&pairs[4].1, 5, 9))],
        vec![
            (1, above_depth(&pairs[4].1, 5, 9)),
            (2, above_depth(&pairs[5].1, 1, 1)),
        ],
    ] {
        let mut s = scorer(&pairs, &[]);
        let views: Vec<_> = pairs[..3]
            .iter()
            .map(|(r, d)| (r.view(), d.view()))
            .collect();
        s.push_batch(&views).expect("first batch");
        let mut second: Vec<_> = pairs[3..].to_vec();
        for (i, d) in &bad {
            second[*i].1 = d.clone();
        }
        let views: Vec<_> = second.iter().map(|(r, d)| (r.view(), d.view())).collect();
        let err = s.push_batch(&views).expect_err("a bad frame").to_string();
        // What frame-by-frame pushing says about the first bad frame.
        let (i, d) = &bad[0];
        let mut single = scorer(&pairs, &[]);
        for (r, d) in &pairs[..3 + i] {
            single.push(&r.view(), &d.view()).expect("good frame");
        }
        let single_err = single
            .push(&pairs[3 + i].0.view(), &d.view())
            .expect_err("the bad frame")
            .to_string();
        assert_eq!(
            err,
            single_err,
            "bad frames {:?}",
            bad.iter().map(|b| b.0).collect::<Vec<_>>()
        );
        assert!(err.contains(&format!("frame {}", 3 + i)), "{err}");
        assert_eq!(s.frames_pushed(), 3, "nothing of the failed batch is kept");
        // The good frames, pushed again, give the clean run's report.
        let views: Vec<_> = pairs[3..]
            .iter()
            .map(|(r, d)| (r.view(), d.view()))
            .collect();
        s.push_batch(&views).expect("the batch again, good");
        assert_identical("after a failed batch", &s.finish(), &want);
    }
}

/// `push_batch_depth_checked`, for callers that checked the samples themselves (the CLI's y4m
/// readers): the very report of `push_batch`, every other check still made, and no scan of
/// the samples against the depth (a sample above it is not refused, which is what the
/// variant is for; `push_batch` refuses the same batch).
#[test]
fn depth_checked_batches_score_alike_and_skip_only_the_depth_scan() {
    for bpc in [8, 10] {
        let clip = SynthClip {
            width: 72,
            height: 40,
            bpc,
            frames: 9,
            cut: 5,
        };
        let pairs: Vec<_> = (0..clip.frames).map(|t| clip.pair(t)).collect();
        let mut s = scorer(&pairs, &[0, 4]);
        for chunk in pairs.chunks(4) {
            let views: Vec<_> = chunk.iter().map(|(r, d)| (r.view(), d.view())).collect();
            s.push_batch_depth_checked(&views).expect("batch");
        }
        let want = batched(&pairs, &[0, 4], 4, &[]);
        assert_identical(&format!("{bpc}-bit depth-checked"), &s.finish(), &want);
    }
    let clip = SynthClip {
        width: 72,
        height: 40,
        bpc: 10,
        frames: 3,
        cut: 3,
    };
    let mut pairs: Vec<_> = (0..clip.frames).map(|t| clip.pair(t)).collect();
    let SampleBuf::U16(s) = &mut pairs[1].1.luma.data else {
        panic!("10-bit samples are u16");
    };
    s[7] = 1024;
    let views: Vec<_> = pairs.iter().map(|(r, d)| (r.view(), d.view())).collect();
    let err = scorer(&pairs, &[])
        .push_batch(&views)
        .expect_err("above depth");
    assert!(err.to_string().contains("does not fit 10 bits"), "{err}");
    scorer(&pairs, &[])
        .push_batch_depth_checked(&views)
        .expect("no depth scan");
    // The other checks are still made: a distorted picture of another size.
    let small = SynthClip { width: 70, ..clip }.pair(0).1;
    let views = [(pairs[0].0.view(), small.view())];
    let err = scorer(&pairs, &[])
        .push_batch_depth_checked(&views)
        .expect_err("size mismatch");
    assert!(err.to_string().contains("size"), "{err}");
}
