//! Results files written as the frames come ([`vmafcuda::results_file::ResultsWriter`]): the
//! same bytes as rendering the whole run's report at the end, in every format, with shots,
//! with `subsample`, and with the whole-stream pool bounded; and a scorer that keeps no frames
//! (bounded pooling) still pools the stream with libvmaf's numbers.

mod common;

use vmafcuda::model::Model;
use vmafcuda::pool::Pooling;
use vmafcuda::report::{Format, FrameResult, Report};
use vmafcuda::results_file::ResultsWriter;
use vmafcuda::scorer::Progress;
use vmafcuda::y4m::Y4mReader;
use vmafcuda::{Geometry, Scorer, ScorerConfig};

const PAIR: &str = "s_multishot_576x324__x264_crf30";
const FORMATS: [(Format, &str); 3] = [
    (Format::Json, "json"),
    (Format::Csv, "csv"),
    (Format::Xml, "xml"),
];

/// Scores the multishot pair (shots at the corpus cuts, PSNR on), handing every push's
/// progress to `each`, and returns the report.
fn score(pooling: Pooling, keep_frames: bool, mut each: impl FnMut(&Progress)) -> Report {
    let mut r = Y4mReader::open(common::pair_reference(PAIR)).expect("reference");
    let mut d = Y4mReader::open(common::pair_distorted(PAIR)).expect("distorted");
    let h = r.header().clone();
    let config = ScorerConfig {
        psnr: true,
        shot_starts: vec![0, 14, 36, 46],
        pooling,
        keep_frames,
        ..ScorerConfig::new(Model::builtin("vmaf_v0.6.1").expect("model"))
    };
    let geometry = Geometry {
        width: h.width,
        height: h.height,
        bpc: h.bpc,
    };
    let mut scorer = Scorer::new(config, geometry).expect("scorer");
    let mut n = 0;
    while let (Some(rp), Some(dp)) = (r.read_picture().unwrap(), d.read_picture().unwrap()) {
        each(&scorer.push(&rp.view(), &dp.view()).expect("push"));
        n += 1;
        if n == 30 {
            // A run-time cut as well as the listed ones.
            each(&scorer.end_shot());
        }
    }
    each(&scorer.end_shot());
    scorer.finish()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = common::workspace_dir().join("target/results-file-tests");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

/// Runs the scorer with one streaming writer per format; returns the report and the files.
fn streamed(pooling: Pooling, tag: &str, keep: fn(&FrameResult) -> bool) -> (Report, Vec<String>) {
    let mut writers: Vec<ResultsWriter> = FORMATS
        .iter()
        .map(|(f, ext)| {
            ResultsWriter::create(scratch(&format!("{tag}.{ext}")), *f, pooling).expect("create")
        })
        .collect();
    let report = score(pooling, true, |p| {
        for w in &mut writers {
            w.progress(p, keep).expect("write progress");
        }
    });
    let mut files = Vec::new();
    for w in writers {
        let path = w.path().to_owned();
        w.finish(&report).expect("finish");
        files.push(std::fs::read_to_string(&path).expect("read results"));
        for spool in ["frames", "shots"] {
            let mut p = path.clone().into_os_string();
            p.push(format!(".{spool}.part"));
            assert!(!std::path::Path::new(&p).exists(), "spool left: {p:?}");
        }
    }
    (report, files)
}

#[test]
fn streamed_results_equal_the_rendered_report_byte_for_byte() {
    for pooling in [Pooling::Exact, Pooling::Bounded] {
        let (report, files) = streamed(pooling, pooling.name(), |_| true);
        assert_eq!(report.shots.len(), 5);
        assert_eq!(report.frames.len(), 64);
        for ((format, ext), text) in FORMATS.iter().zip(&files) {
            assert!(
                *text == report.render(*format),
                "{ext} ({}): the streamed file differs from the report",
                pooling.name()
            );
        }
    }
}

#[test]
fn streamed_results_with_subsample_equal_the_filtered_report() {
    let (mut report, files) = streamed(Pooling::Exact, "subsample", |f| f.index % 3 == 0);
    // What the element wrote before: keep every 3rd frame, pool the stream and each shot over
    // the frames kept.
    report.frames.retain(|f| f.index % 3 == 0);
    report.pooled = Report::pool_frames(&report.frames);
    for s in &mut report.shots {
        let frames: Vec<FrameResult> = report
            .frames
            .iter()
            .filter(|f| (s.first_frame..=s.last_frame).contains(&f.index))
            .cloned()
            .collect();
        s.pooled = Report::pool_frames(&frames);
    }
    assert_eq!(report.frames.len(), 22);
    for ((format, ext), text) in FORMATS.iter().zip(&files) {
        assert!(*text == report.render(*format), "{ext} differs");
    }
}

#[test]
fn a_scorer_that_keeps_no_frames_still_pools_the_stream_like_libvmaf() {
    let exact = score(Pooling::Exact, true, |_| {});
    let bounded = score(Pooling::Bounded, false, |_| {});
    assert!(bounded.frames.is_empty());
    assert_eq!(exact.pooled.len(), bounded.pooled.len());
    for ((k, e), (kb, b)) in exact.pooled.iter().zip(&bounded.pooled) {
        assert_eq!(k, kb);
        for (x, y) in [
            (e.min, b.min),
            (e.max, b.max),
            (e.mean, b.mean),
            (e.harmonic_mean, b.harmonic_mean),
        ] {
            assert_eq!(x.to_bits(), y.to_bits(), "{k}");
        }
        let bound = 2f64.powi(-12) * e.max.abs().max(e.min.abs()) * 1.000_001;
        assert!((e.p5 - b.p5).abs() <= bound, "{k} p5 {} vs {}", e.p5, b.p5);
        assert!(
            (e.p10 - b.p10).abs() <= bound,
            "{k} p10 {} vs {}",
            e.p10,
            b.p10
        );
    }
    // Shots are exact in both modes.
    assert_eq!(exact.shots, bounded.shots);
    // And the stream pool is libvmaf's (the whole clip has no cuts in libvmaf's run, so compare
    // the shot-free statistics min and max, which do not depend on the cuts).
    let want = common::load_json(&format!("vmaf/{PAIR}.vmaf_v0.6.1.full.json"));
    let frames = want["frames"].as_array().expect("frames");
    let min = frames
        .iter()
        .map(|f| f["metrics"]["integer_adm2"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(bounded.pooled("integer_adm2").unwrap().min, min);
}
