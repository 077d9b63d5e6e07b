//! A GPU failure in the middle of a stream moves the run to the CPU, and the report is
//! bit-identical to a CPU-only run of the same frames. Runs without a GPU: the scorers here use
//! the emulated GPU (`vmafcuda::emulated_gpu`, a test hook that computes on the CPU and fails
//! where `cuda::fault` says), so every failure point of the fall-back is exercised in CI.
//! `tests/cuda_scorer.rs` does the same on a real GPU.
//!
//! The emulation and the fault switch are process-wide: this binary holds only these tests, and
//! they take one lock.

mod common;

use common::report::assert_identical;
use std::sync::{Arc, Mutex, MutexGuard};

use vmafcuda::cuda::{fault, FaultKind};
use vmafcuda::emulated_gpu;
use vmafcuda::frame::Picture;
use vmafcuda::model::Model;
use vmafcuda::pinned_picture::PinnedPicture;
use vmafcuda::report::Report;
use vmafcuda::scorer::{BackendKind, BackendRequest};
use vmafcuda::synth::SynthClip;
use vmafcuda::{Error, Geometry, Scorer, ScorerConfig};

static SERIAL: Mutex<()> = Mutex::new(());

fn emulation() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    fault::clear();
    emulated_gpu::enable();
    g
}

/// How a scenario hands frames to the scorer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// `push`, one host frame at a time.
    Host,
    /// `push_batch` of three.
    Batch,
    /// Stand-ins for device frames (no host copy kept), drained every third frame.
    Device,
    /// `push_pinned` of pictures from `Scorer::pinned_picture`, each pushed once and then
    /// rewritten as soon as the scorer lets go of it (three pictures a side at most).
    Pinned,
}

struct Scenario {
    pairs: Vec<(Picture, Picture)>,
    /// Configured shot starts.
    starts: Vec<usize>,
    /// A boundary declared at run time (`end_shot`) before this frame.
    runtime_cut: Option<usize>,
    psnr: bool,
}

impl Scenario {
    fn new(
        width: usize,
        height: usize,
        frames: usize,
        starts: &[usize],
        cut: Option<usize>,
    ) -> Self {
        let clip = SynthClip {
            width,
            height,
            bpc: 8,
            frames,
            cut: frames / 2,
        };
        Scenario {
            pairs: (0..frames).map(|t| clip.pair(t)).collect(),
            starts: starts.to_vec(),
            runtime_cut: cut,
            psnr: true,
        }
    }

    fn scorer(&self, request: BackendRequest) -> Result<Scorer, Error> {
        let config = ScorerConfig {
            psnr: self.psnr,
            shot_starts: self.starts.clone(),
            ..ScorerConfig::new(Model::builtin("vmaf_v0.6.1").expect("model"))
        };
        let r = &self.pairs[0].0;
        let geometry = Geometry {
            width: r.width(),
            height: r.height(),
            bpc: r.bpc(),
        };
        Scorer::with_backend(config, geometry, request)
    }

    /// Runs the frames through a scorer, replaying frames on the host when it asks. Returns the
    /// report, the backend at the end, the fall-back reason and the replays asked for.
    fn run(
        &self,
        request: BackendRequest,
        mode: Mode,
    ) -> Result<(Report, BackendKind, Option<String>, usize), Error> {
        let mut s = self.scorer(request)?;
        let mut cut_done = false;
        let mut replays = 0;
        // Mode::Pinned: the pictures handed out so far; one is written again once the scorer
        // no longer holds it.
        let mut pinned: Vec<Arc<PinnedPicture>> = Vec::new();
        let mut i = 0;
        while i < self.pairs.len() {
            if self.runtime_cut == Some(i) && !cut_done {
                s.end_shot();
                cut_done = true;
            }
            let (r, d) = (&self.pairs[i].0, &self.pairs[i].1);
            let step = match mode {
                Mode::Device if s.backend() == BackendKind::Cuda => {
                    let mut res = s.submit_emulated_device(&r.view(), &d.view());
                    if res.is_ok() && i % 3 == 2 {
                        res = s.drain_device();
                    }
                    res.map(|_| 1)
                }
                Mode::Batch if i + 3 <= self.pairs.len() && self.runtime_cut.is_none() => {
                    let views: Vec<_> = self.pairs[i..i + 3]
                        .iter()
                        .map(|(r, d)| (r.view(), d.view()))
                        .collect();
                    s.push_batch(&views).map(|_| 3)
                }
                Mode::Pinned => {
                    let mut fill =
                        |src: &Picture, s: &Scorer| -> Result<Arc<PinnedPicture>, Error> {
                            let mut p =
                                match pinned.iter_mut().position(|p| Arc::get_mut(p).is_some()) {
                                    Some(k) => pinned.swap_remove(k),
                                    None => Arc::new(s.pinned_picture(src.format)?),
                                };
                            Arc::get_mut(&mut p)
                                .expect("unshared")
                                .copy_from(&src.view())
                                .map_err(Error::InvalidPlane)?;
                            Ok(p)
                        };
                    let (pr, pd) = (fill(r, &s)?, fill(d, &s)?);
                    let res = s.push_pinned(&pr, &pd).map(|_| 1);
                    pinned.extend([pr, pd]);
                    res
                }
                _ => s.push(&r.view(), &d.view()).map(|_| 1),
            };
            match step {
                Ok(n) => i += n,
                Err(Error::ReplayOnHost { from, to, .. }) => {
                    replays += 1;
                    assert_eq!(s.frames_pushed(), from, "replay starts where the scorer is");
                    assert_eq!(s.backend(), BackendKind::Cpu, "a replay means the CPU");
                    for (r, d) in &self.pairs[from..to] {
                        s.push(&r.view(), &d.view())?;
                    }
                    i = to;
                }
                Err(e) => return Err(e),
            }
        }
        match s.drain_device() {
            Ok(_) => {}
            Err(Error::ReplayOnHost { from, to, .. }) => {
                replays += 1;
                assert_eq!((s.frames_pushed(), to), (from, self.pairs.len()));
                for (r, d) in &self.pairs[from..to] {
                    s.push(&r.view(), &d.view())?;
                }
            }
            Err(e) => return Err(e),
        }
        let backend = s.backend();
        let reason = s.fallback_reason().map(str::to_owned);
        let report = s.finish();
        // The scorer let go of every picture.
        assert!(pinned.iter().all(|p| Arc::strong_count(p) == 1));
        // Each side needs at most the pictures the scorer keeps (a few frames) plus one.
        assert!(pinned.len() <= 2 * 8, "{} pinned pictures", pinned.len());
        Ok((report, backend, reason, replays))
    }
}

/// Every fault of every kind, at every position in the stream: the run finishes on the CPU
/// with exactly the CPU-only report. Returns how many faults fired.
fn sweep(sc: &Scenario, mode: Mode) -> usize {
    emulated_gpu::disable();
    let (cpu, backend, _, _) = sc.run(BackendRequest::Cpu, Mode::Host).expect("cpu run");
    assert_eq!(backend, BackendKind::Cpu);
    emulated_gpu::enable();
    fault::clear();
    let (clean, backend, reason, _) = sc.run(BackendRequest::Auto, mode).expect("clean run");
    assert_eq!(
        backend,
        BackendKind::Cuda,
        "the emulated GPU stands in for CUDA"
    );
    assert_eq!(reason, None);
    assert_identical(&format!("{mode:?}, no fault"), &clean, &cpu);
    let (mut fired, mut unused_spare) = (0, 0);
    for kind in FaultKind::ALL {
        fault::clear();
        sc.run(BackendRequest::Auto, mode).expect("clean run");
        let ops = fault::operations(kind);
        for nth in 1..=ops {
            fault::clear();
            fault::inject(kind, nth);
            let result = sc.run(BackendRequest::Auto, mode);
            let reached = !fault::pending(kind);
            fault::clear();
            let label = format!("{mode:?}, {kind:?} #{nth} of {ops}");
            let (report, backend, reason, _) =
                result.unwrap_or_else(|e| panic!("{label}: Auto must not fail: {e}"));
            assert!(reached, "{label}: fault not reached");
            if backend == BackendKind::Cuda && kind != FaultKind::Launch && kind != FaultKind::Copy
            {
                // A full rebuild's last build makes the spare engine for a shot that never
                // comes: a fault there (building, so module load or allocation) is reached
                // but harms nothing, and the run stays on the GPU with the right numbers.
                assert_eq!(reason, None, "{label}: a reason without a fall-back");
                assert_identical(&label, &report, &cpu);
                unused_spare += 1;
                continue;
            }
            assert_eq!(backend, BackendKind::Cpu, "{label}: still on the GPU");
            if let Some(r) = &reason {
                assert!(r.contains("injected"), "{label}: reason {r}");
            }
            assert_identical(&label, &report, &cpu);
            fired += 1;
        }
    }
    assert!(fired > 20, "only {fired} faults fired");
    // At most the last module load, allocation and stream creation of each run's final spare.
    assert!(unused_spare <= 3, "{unused_spare} faults changed nothing");
    fired
}

#[test]
fn host_frames_continue_on_the_cpu_after_a_gpu_failure_anywhere() {
    let _g = emulation();
    // 66 wide: libvmaf's ADM carries a word from frame to frame, so the CPU must be primed
    // with the frame before the lost ones. Configured and run-time boundaries, PSNR on.
    let stateful = Scenario::new(66, 40, 11, &[0, 4], Some(8));
    let mut fired = sweep(&stateful, Mode::Host);
    // A size whose frames are independent (the CPU spreads them over worker threads).
    let independent = Scenario::new(96, 54, 10, &[0, 6], None);
    fired += sweep(&independent, Mode::Host);
    fired += sweep(&independent, Mode::Batch);
    fired += sweep(&stateful, Mode::Pinned);
    eprintln!("{fired} GPU failures mid-stream: every run finished on the CPU, bit-identical");
    emulated_gpu::disable();
}

#[test]
fn device_frames_lost_on_a_gpu_failure_are_replayed_from_the_host() {
    let _g = emulation();
    for sc in [
        Scenario::new(66, 40, 11, &[0, 4], Some(8)),
        Scenario::new(96, 54, 10, &[0, 6], Some(3)),
    ] {
        sweep(&sc, Mode::Device);
        // A failure while device frames are in flight asks the caller for them.
        let mut replays = 0;
        for nth in 1..=30 {
            fault::clear();
            fault::inject(FaultKind::Launch, nth);
            if let Ok((_, _, _, n)) = sc.run(BackendRequest::Auto, Mode::Device) {
                replays += n;
            }
        }
        fault::clear();
        assert!(replays > 0, "no failure asked for a replay");
    }
    emulated_gpu::disable();
}

#[test]
fn forced_cuda_returns_gpu_failures_as_errors() {
    let _g = emulation();
    let sc = Scenario::new(96, 54, 8, &[0, 4], None);
    let mut errors = 0;
    for nth in 1..=12 {
        fault::clear();
        fault::inject(FaultKind::Copy, nth);
        let result = sc.run(BackendRequest::Cuda { device: 0 }, Mode::Host);
        let reached = !fault::pending(FaultKind::Copy);
        match result {
            Err(e) => {
                assert!(reached, "#{nth}: error without a fault: {e}");
                assert!(matches!(e, Error::Backend(_)), "#{nth}: {e:?}");
                assert!(e.to_string().contains("injected"), "#{nth}: {e}");
                errors += 1;
            }
            Ok((_, backend, reason, _)) => {
                assert!(!reached, "#{nth}: forced CUDA swallowed a failure");
                assert_eq!((backend, reason), (BackendKind::Cuda, None));
            }
        }
    }
    fault::clear();
    assert!(errors >= 10, "{errors} errors");
    // With the opt-in, forced CUDA falls back too.
    let cpu = {
        emulated_gpu::disable();
        let r = sc.run(BackendRequest::Cpu, Mode::Host).expect("cpu").0;
        emulated_gpu::enable();
        r
    };
    fault::inject(FaultKind::Launch, 5);
    let mut s = sc
        .scorer(BackendRequest::Cuda { device: 0 })
        .expect("scorer");
    let mut config = s.config().clone();
    drop(s);
    config.cpu_fallback = true;
    let r = &sc.pairs[0].0;
    s = Scorer::with_backend(
        config,
        Geometry {
            width: r.width(),
            height: r.height(),
            bpc: r.bpc(),
        },
        BackendRequest::Cuda { device: 0 },
    )
    .expect("scorer");
    for (r, d) in &sc.pairs {
        s.push(&r.view(), &d.view())
            .expect("push with cpu_fallback");
    }
    assert_eq!(s.backend(), BackendKind::Cpu);
    assert!(s
        .backend_note()
        .is_some_and(|n| n.contains("continuing on the CPU")));
    assert_identical("cpu_fallback", &s.finish(), &cpu);
    fault::clear();
    emulated_gpu::disable();
}

#[test]
fn a_gpu_failing_at_set_up_means_the_cpu_for_auto_and_an_error_when_forced() {
    let _g = emulation();
    let sc = Scenario::new(96, 54, 3, &[], None);
    for kind in [FaultKind::ModuleLoad, FaultKind::Alloc] {
        fault::clear();
        fault::inject(kind, 1);
        let s = sc
            .scorer(BackendRequest::Auto)
            .expect("auto never fails for want of a GPU");
        assert_eq!(s.backend(), BackendKind::Cpu);
        assert!(s.backend_note().is_some_and(|n| n.contains("injected")));
        fault::clear();
        fault::inject(kind, 1);
        let e = sc
            .scorer(BackendRequest::Cuda { device: 0 })
            .err()
            .expect("forced CUDA fails");
        assert!(e.to_string().contains("CUDA device 0"), "{e}");
    }
    fault::clear();
    emulated_gpu::disable();
}
