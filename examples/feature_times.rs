//! CPU time of each feature extractor per frame, by bit depth and SIMD level: the figures
//! behind the CPU path's "10-bit within 15% of 8-bit" bar (issue 18), where a whole-run
//! timing cannot tell which extractor a difference comes from.
//!
//! `cargo run --release --example feature_times -- [WxH] [reps] [levels]` (default 1920x1080,
//! 20, every level; `levels` e.g. `avx2,avx512vnni`):
//! for 8-bit and 10-bit synthetic pairs and every SIMD level the CPU supports, the *minimum*
//! over `reps` rounds of each extractor's time on a frame (the minimum is what a busy,
//! shared machine still measures faithfully), one thread.

use std::time::Instant;

use vmafcuda::features::adm::AdmExtractor;
use vmafcuda::features::motion::MotionExtractor;
use vmafcuda::features::simd::SimdLevel;
use vmafcuda::features::vif::VifExtractor;
use vmafcuda::synth::SynthClip;

fn main() {
    let mut args = std::env::args().skip(1);
    let (width, height) = args
        .next()
        .and_then(|s| {
            let (w, h) = s.split_once('x')?;
            Some((w.parse().ok()?, h.parse().ok()?))
        })
        .unwrap_or((1920usize, 1080usize));
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20);
    // Optional: only these levels (comma-separated names, as VMAFCUDA_CPU_SIMD takes them).
    let only: Option<Vec<String>> = args
        .next()
        .map(|s| s.split(',').map(str::to_owned).collect());
    println!("{width}x{height}, minimum of {reps} rounds, ms per frame, one thread");
    println!(
        "{:<11} {:>4} {:>8} {:>8} {:>8} {:>8}",
        "level", "bpc", "adm", "vif", "motion", "sum"
    );
    let wanted = |l: &SimdLevel| {
        only.as_ref()
            .is_none_or(|o| o.iter().any(|n| n == l.name()))
    };
    for level in SimdLevel::ALL
        .into_iter()
        .filter(|l| l.is_supported() && wanted(l))
    {
        let mut sums = Vec::new();
        for bpc in [8, 10] {
            let clip = SynthClip {
                width,
                height,
                bpc,
                frames: 2,
                cut: 2,
            };
            let (r, d) = clip.pair(1);
            let (r, d) = (r.luma.view(), d.luma.view());
            let mut adm = AdmExtractor::new(width, height, bpc, 100.0);
            let mut vif = VifExtractor::new(width, height, bpc, 100.0);
            let mut motion = MotionExtractor::new(width, height, bpc);
            adm.set_simd_level(level);
            vif.set_simd_level(level);
            motion.set_simd_level(level);
            let mut best = [f64::INFINITY; 3];
            for _ in 0..reps {
                let t = Instant::now();
                std::hint::black_box(adm.extract(&r, &d));
                let a = t.elapsed().as_secs_f64();
                let t = Instant::now();
                std::hint::black_box(vif.extract(&r, &d));
                let v = t.elapsed().as_secs_f64();
                let t = Instant::now();
                std::hint::black_box(motion.push(&r));
                let m = t.elapsed().as_secs_f64();
                for (b, x) in best.iter_mut().zip([a, v, m]) {
                    *b = b.min(x * 1e3);
                }
            }
            let sum: f64 = best.iter().sum();
            sums.push(sum);
            println!(
                "{:<11} {:>4} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
                level.name(),
                bpc,
                best[0],
                best[1],
                best[2],
                sum
            );
        }
        println!(
            "{:<11} 10-bit / 8-bit: {:.3}",
            level.name(),
            sums[1] / sums[0]
        );
    }
}
