//! Comparing two reports bit for bit (a CUDA or fallen-back run against the CPU engine's).

use vmafcuda::report::Report;

/// Every metric of every frame, every shot's range and pool and the stream's pool identical,
/// bit for bit.
pub fn assert_identical(label: &str, got: &Report, cpu: &Report) {
    assert_eq!(got.frames.len(), cpu.frames.len(), "{label}: frame count");
    for (g, c) in got.frames.iter().zip(&cpu.frames) {
        assert_eq!(g.index, c.index, "{label}");
        assert_eq!(
            g.metrics.len(),
            c.metrics.len(),
            "{label} frame {}",
            g.index
        );
        for ((gk, gv), (ck, cv)) in g.metrics.iter().zip(&c.metrics) {
            assert_eq!(gk, ck, "{label} frame {}", g.index);
            assert!(
                gv.to_bits() == cv.to_bits(),
                "{label} frame {} {gk}: {gv:?}, CPU {cv:?}",
                g.index
            );
        }
    }
    assert_eq!(got.shots.len(), cpu.shots.len(), "{label}: shots");
    for (g, c) in got.shots.iter().zip(&cpu.shots) {
        assert_eq!(
            (g.index, g.first_frame, g.last_frame),
            (c.index, c.first_frame, c.last_frame),
            "{label}: shot"
        );
        assert_eq!(
            format!("{:?}", g.pooled),
            format!("{:?}", c.pooled),
            "{label}: shot {} pool",
            g.index
        );
    }
    assert_eq!(
        format!("{:?}", got.pooled),
        format!("{:?}", cpu.pooled),
        "{label}: stream pool"
    );
}
