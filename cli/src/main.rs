//! `vmafcuda`: score a distorted video against its reference with Netflix VMAF.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use vmafcuda::model::{Model, PredictOptions};
use vmafcuda::report::{Format, Report};
use vmafcuda::scorer::{BackendKind, BackendRequest};
use vmafcuda::synth::SynthClip;
use vmafcuda::{Error, Geometry, GpuTeardown, Rebuild, Scorer, ScorerConfig};
use vmafcuda_cli::args::{
    backend_request, parse_shots, parse_size, BenchArgs, Cli, Command, ScoreArgs, ServeArgs,
};
use vmafcuda_cli::bench::{self, BenchSpec};
use vmafcuda_cli::failure::{fail, Failure};
use vmafcuda_cli::input::{warn_stream_differences, VideoReader};
use vmafcuda_cli::ladder::{output_paths, Rendition, Source};
use vmafcuda_cli::prefetch::Frame;
use vmafcuda_cli::progress::ProgressBar;
use vmafcuda_cli::scale::BicubicScaler;
use vmafcuda_cli::service::{self, Remote};
use vmafcuda_html as html;
use vmafcuda_html::timing::Timing;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Score(args) => {
            // A resident service (`vmafcuda serve`) has the GPU up already: hand it the run.
            if let Some((socket, explicit)) = service::client_socket() {
                match service::run_remote(&socket, explicit, std::env::args_os().collect()) {
                    Remote::Done(code) => return ExitCode::from(code),
                    Remote::Local(Some(why)) => eprintln!("vmafcuda: warning: {why}"),
                    Remote::Local(None) => {}
                    Remote::Busy if !args.quiet => eprintln!(
                        "vmafcuda: the vmafcuda service is busy with another run: scoring in this process"
                    ),
                    Remote::Busy => {}
                }
            }
            init_threads(args.threads);
            score(args, &mut Run::here())
        }
        Command::Bench(args) => bench(args),
        Command::Serve(args) => serve(args),
    };
    match result {
        Ok(()) if GPU_STATE_LEFT.load(std::sync::atomic::Ordering::SeqCst) => exit_at_once(),
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => ExitCode::from(report_failure(f)),
    }
}

/// Says what went wrong on stderr and returns the exit code.
fn report_failure(f: Failure) -> u8 {
    eprintln!("vmafcuda: error: {}", f.message);
    f.code
}

/// Set once a scorer left its GPU state to the driver ([`Scorer::finish_before_exit`]).
static GPU_STATE_LEFT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ends the process without the C library's exit handlers (the CUDA driver's among them), once
/// the GPU state was left to the driver: the kernel reclaims a process's GPU memory when its
/// device files close. On the H100 (1080p, 240 frames) tearing the state down took 70-75 ms of a
/// 485-503 ms run; leaving it, 442-511 ms without this and 445-483 ms with it (not a clear
/// difference of its own). Everything this program writes is written and closed by now; stdout
/// is flushed here.
fn exit_at_once() -> ExitCode {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    extern "C" {
        fn _exit(status: std::ffi::c_int) -> !;
    }
    // SAFETY: _exit(2) takes any status and never returns; nothing of ours is left to run
    // (outputs are closed, stdout flushed), and the other threads only read inputs.
    unsafe { _exit(0) }
}

fn init_threads(threads: Option<usize>) {
    if let Some(n) = threads {
        // Only fails if the pool was already built, which cannot happen before this point.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global();
    }
}

fn load_model(spec: &str) -> Result<Model, Failure> {
    let path = std::path::Path::new(spec);
    let model = if spec.ends_with(".json") || path.exists() {
        Model::from_json_file(path)
    } else {
        Model::builtin(spec)
    };
    model.map_err(|e| fail(1, e.to_string()))
}

/// The reference and the renditions, opened and checked against each other.
struct Inputs {
    reference: Source,
    geometry: Geometry,
    renditions: Vec<(Source, Option<BicubicScaler>)>,
    default_shots: Vec<usize>,
}

fn open_inputs(args: &ScoreArgs) -> Result<Inputs, Failure> {
    match (&args.reference, args.distorted.as_slice()) {
        (Some(r), [_, ..]) => {
            let reference = VideoReader::open(r, args.feature.is_empty())?;
            let ri = reference.info();
            let mut renditions = Vec::new();
            for d in &args.distorted {
                let distorted = VideoReader::open(d, args.feature.is_empty())?;
                let di = distorted.info();
                if ri.bpc != di.bpc {
                    return Err(Error::Mismatch {
                        what: "bit depth",
                        reference: format!("{} ({})", ri.bpc, r.display()),
                        distorted: format!("{} ({})", di.bpc, d.display()),
                    }
                    .into());
                }
                if ri.format != di.format {
                    return Err(Error::Mismatch {
                        what: "chroma format",
                        reference: format!("{:?} ({})", ri.format, r.display()),
                        distorted: format!("{:?} ({})", di.format, d.display()),
                    }
                    .into());
                }
                let scaler = if (ri.width, ri.height) == (di.width, di.height) {
                    None
                } else if !same_aspect((ri.width, ri.height), (di.width, di.height)) {
                    // Another picture shape is another picture, not a rendition of this one.
                    return Err(Error::Mismatch {
                        what: "frame size (and aspect ratio, so it is not resized)",
                        reference: format!("{}x{} ({})", ri.width, ri.height, r.display()),
                        distorted: format!("{}x{} ({})", di.width, di.height, d.display()),
                    }
                    .into());
                } else {
                    if !args.quiet {
                        eprintln!(
                            "vmafcuda: {}: {}x{} is resized to the reference's {}x{} (bicubic, B=0 C=0.6)",
                            d.display(),
                            di.width,
                            di.height,
                            ri.width,
                            ri.height
                        );
                    }
                    Some(BicubicScaler::new(ri.width, ri.height))
                };
                warn_stream_differences((r, &ri), (d, &di));
                renditions.push((Source::Video(Box::new(distorted)), scaler));
            }
            Ok(Inputs {
                geometry: Geometry {
                    width: ri.width,
                    height: ri.height,
                    bpc: ri.bpc,
                },
                reference: Source::Video(Box::new(reference)),
                renditions,
                default_shots: Vec::new(),
            })
        }
        (None, []) => {
            let clip = SynthClip::DEFAULT;
            if !args.quiet {
                eprintln!(
                    "vmafcuda: no --reference/--distorted given: scoring the built-in synthetic clip ({}x{}, {} frames, a cut at frame {})",
                    clip.width, clip.height, clip.frames, clip.cut
                );
            }
            let side = |distorted| Source::Synthetic {
                clip,
                next: 0,
                distorted,
            };
            Ok(Inputs {
                reference: side(false),
                geometry: Geometry {
                    width: clip.width,
                    height: clip.height,
                    bpc: clip.bpc,
                },
                renditions: vec![(side(true), None)],
                default_shots: vec![0, clip.cut],
            })
        }
        _ => Err(fail(
            2,
            "give both --reference and --distorted (or neither for the built-in demo)",
        )),
    }
}

/// Aspect ratios within 1% of each other: a rendition of the same picture at another size.
fn same_aspect(a: (usize, usize), b: (usize, usize)) -> bool {
    let ra = a.0 as f64 / a.1 as f64;
    let rb = b.0 as f64 / b.1 as f64;
    (ra / rb - 1.0).abs() <= 0.01
}

/// libvmaf scores the common frames of inputs of unequal length and warns; so do we.
fn warn_shorter(short: &Source, long: &Source, scored: usize) {
    eprintln!(
        "vmafcuda: warning: {} ended before {}; scored the first {} frames",
        short.name(),
        long.name(),
        scored
    );
}

/// How a `score` run ends and reports: in its own process, or in the resident service.
struct Run {
    /// In the service: the GPU state is handed back in `teardown` (released after the client
    /// has its answer), never left to the driver.
    in_service: bool,
    /// VMAFCUDA_TIMING: print where the time went.
    timing: bool,
    teardown: Vec<GpuTeardown>,
}

impl Run {
    fn here() -> Run {
        Run {
            in_service: false,
            timing: std::env::var_os("VMAFCUDA_TIMING").is_some(),
            teardown: Vec::new(),
        }
    }
}

/// Runs of at least this many frames read y4m files into page-locked pictures on the GPU.
const PINNED_READ_FRAMES: usize = 500;

fn score(args: ScoreArgs, run: &mut Run) -> Result<(), Failure> {
    // The CUDA driver and context take hundreds of milliseconds to come up: start them now, on
    // another thread, while the model is loaded and the inputs are opened and read ahead.
    let backend = backend_request(&args.backend)?;
    let prepare = match backend {
        BackendRequest::Cuda { device } => Some(device),
        BackendRequest::Auto => Some(0),
        _ => None,
    }
    .filter(|_| !vmafcuda::emulated_gpu::is_enabled());
    let clock = PhaseClock::new();
    if let Some(device) = prepare {
        vmafcuda::prepare_cuda(device);
    }
    let result = score_prepared(args, backend, clock, run);
    // An error before the scorer took the set-up: let it finish before the process exits.
    vmafcuda::discard_prepared_cuda();
    result
}

fn score_prepared(
    args: ScoreArgs,
    backend: BackendRequest,
    mut clock: PhaseClock,
    run: &mut Run,
) -> Result<(), Failure> {
    let format: Format = args.format.parse().map_err(|e: String| fail(2, e))?;
    for f in &args.feature {
        if !f.eq_ignore_ascii_case("psnr") {
            return Err(fail(
                2,
                format!("--feature: unknown feature {f:?} (supported: psnr)"),
            ));
        }
    }
    let model = load_model(&args.model)?;
    let Inputs {
        mut reference,
        geometry,
        renditions,
        default_shots,
    } = open_inputs(&args)?;
    let shots = match &args.shots {
        Some(s) => parse_shots(s)?,
        None => default_shots,
    };
    let config = ScorerConfig {
        psnr: !args.feature.is_empty(),
        shot_starts: shots,
        rebuild: args.rebuild,
        predict: PredictOptions {
            disable_clip: args.disable_clip,
            enable_transform: args.enable_transform,
        },
        ..ScorerConfig::new(model)
    };
    let mut ladder = Vec::with_capacity(renditions.len());
    for (source, scaler) in renditions {
        let scorer = Scorer::with_backend(config.clone(), geometry, backend.clone())?;
        if ladder.is_empty() && !args.quiet {
            if let Some(note) = scorer.backend_note() {
                eprintln!("vmafcuda: backend auto: {note}");
            }
        }
        ladder.push(Rendition {
            source,
            scaler,
            scorer,
            ended: false,
        });
    }
    clock.lap(Phase::Setup);
    let total = reference
        .info()
        .and_then(|i| i.frames)
        .or(match &reference {
            Source::Synthetic { clip, .. } => Some(clip.frames),
            Source::Video(_) => None,
        });
    // On the GPU, a long run's readers read frames straight into page-locked pictures of the
    // scorers' context from here on (every scorer of the ladder is in the same one), which are
    // uploaded in place (`Scorer::push_pinned`): no copy into staging. Page-locking a picture
    // costs 1-2 ms once, and a run keeps a few dozen: worth it from a few hundred frames (H100,
    // 1080p 8-bit: 1,200 frames 1,415-1,606 -> 2,312-2,377 fps; 240 frames even).
    if total.is_some_and(|n| n >= PINNED_READ_FRAMES) {
        if let Some(ctx) = ladder.first().and_then(|r| r.scorer.host_context()) {
            reference.read_into_pinned(ctx.clone());
            for r in ladder.iter().filter(|r| r.scaler.is_none()) {
                r.source.read_into_pinned(ctx.clone());
            }
        }
    }
    let mut progress = ProgressBar::new(total, args.quiet);
    // The CPU path scores a batch of frames in parallel; the CUDA path takes them one at a
    // time (two in flight on the GPU), so a batch would only stall the reading threads.
    let batch_size = match ladder.first().map(|r| r.scorer.backend()) {
        Some(BackendKind::Cuda) => 1,
        _ => 2 * rayon::current_num_threads(),
    };
    loop {
        if service::cancelled() {
            return Err(fail(130, "interrupted: the client of this run went away"));
        }
        let mut batch = Vec::with_capacity(batch_size);
        while batch.len() < batch_size {
            match reference.read_picture()? {
                Some(p) => batch.push(p),
                None => break,
            }
        }
        clock.lap(Phase::Read);
        for r in ladder.iter_mut().filter(|r| !r.ended) {
            let distorted = r.read(batch.len())?;
            clock.lap(Phase::Read);
            if distorted.len() < batch.len() {
                r.ended = true;
                progress.finish();
                let scored = r.scorer.frames_pushed() + distorted.len();
                warn_shorter(&r.source, &reference, scored);
            }
            if let ([Frame::Pinned(rp)], [Frame::Pinned(dp)]) = (&batch[..], &distorted[..]) {
                r.scorer.push_pinned(rp, dp)?;
            } else {
                let views: Vec<_> = batch
                    .iter()
                    .zip(&distorted)
                    .map(|(r, d)| (r.view(), d.view()))
                    .collect();
                // Pictures that the y4m readers have checked against the depth as they
                // read them are not scanned a second time.
                if reference.checks_depth() && r.source.checks_depth() && r.scaler.is_none() {
                    r.scorer.push_batch_depth_checked(&views)?;
                } else {
                    r.scorer.push_batch(&views)?;
                }
            }
            clock.lap(Phase::Score);
            if r.scaler.is_none() {
                for d in distorted {
                    r.source.recycle(d);
                }
            }
        }
        progress.update(reference.frames_read());
        let last = batch.len() < batch_size || ladder.iter().all(|r| r.ended);
        for p in batch {
            reference.recycle(p);
        }
        if last {
            break;
        }
    }
    progress.finish();
    // The reference ended: renditions with frames left are longer than it.
    for r in ladder.iter_mut().filter(|r| !r.ended) {
        if r.source.read_picture()?.is_some() {
            warn_shorter(&reference, &r.source, r.scorer.frames_pushed());
        }
    }
    let names = if args.distorted.is_empty() {
        vec![PathBuf::from("demo")]
    } else {
        args.distorted.clone()
    };
    let frame_rate = reference
        .info()
        .and_then(|i| i.rate)
        .map(|r| (r.num, r.den));
    let outputs = match &args.output {
        Some(out) => {
            let ext = match format {
                Format::Json => "json",
                Format::Csv => "csv",
                Format::Xml => "xml",
            };
            let paths = output_paths(out, &names, ext);
            let into_dir = out.is_dir() || out.to_string_lossy().ends_with('/');
            if paths.len() > 1 || into_dir {
                if let Some(dir) = paths.first().and_then(|p| p.parent()) {
                    if !dir.as_os_str().is_empty() {
                        std::fs::create_dir_all(dir).map_err(|e| {
                            fail(3, format!("{}: cannot create: {e}", dir.display()))
                        })?;
                    }
                }
            }
            paths.into_iter().map(Some).collect()
        }
        None => vec![None; ladder.len()],
    };
    let several = ladder.len() > 1;
    let mut setup_steps = Vec::new();
    for (i, (r, out)) in ladder.into_iter().zip(outputs).enumerate() {
        if r.scorer.frames_pushed() == 0 {
            return Err(fail(
                1,
                format!(
                    "{}: no frames to score (an input is empty)",
                    r.source.name()
                ),
            ));
        }
        let name = format!(
            "{} ({}{})",
            r.source.name(),
            r.source.how(),
            r.scaler.map_or(String::new(), |s| format!(
                ", resized to {}x{}",
                s.width, s.height
            ))
        );
        if let Some(reason) = r.scorer.fallback_reason() {
            eprintln!(
                "vmafcuda: warning: {}: CUDA failed mid-run ({reason}); finished on the CPU",
                r.source.name()
            );
        }
        if r.scorer.backend() == BackendKind::Cuda {
            setup_steps = r.scorer.setup_timing();
        }
        // In the service the GPU state is released once the client has its answer. Otherwise
        // the process ends after this: leave the GPU state to the driver rather than tear it
        // down allocation by allocation (tens of milliseconds at 1080p).
        let report = if run.in_service {
            let (report, teardown) = r.scorer.finish_deferred();
            run.teardown.push(teardown);
            report
        } else if r.scorer.backend() == BackendKind::Cuda && !full_teardown() {
            GPU_STATE_LEFT.store(true, std::sync::atomic::Ordering::SeqCst);
            r.scorer.finish_before_exit()
        } else {
            r.scorer.finish()
        };
        clock.lap(Phase::Finish);
        if several {
            println!("rendition {}: {name}", i + 1);
        }
        print_summary(&report);
        if let Some(path) = out {
            std::fs::write(&path, report.render(format))
                .map_err(|e| fail(3, format!("{}: cannot write output: {e}", path.display())))?;
        }
        if args.report.is_some() || args.plot.is_some() {
            let per_rendition = |p: &Option<PathBuf>, ext| {
                p.as_ref()
                    .map(|p| output_paths(p, &names, ext).swap_remove(i))
            };
            let facts = html::InputFacts {
                timing: Timing::from_frame_rate(frame_rate),
                device: html::describe_device(&report.backend, 0),
                ..html::InputFacts::new(reference.display_name(), r.source.display_name())
            };
            html::write_files(
                std::slice::from_ref(&report),
                &facts,
                per_rendition(&args.report, "html").as_deref(),
                per_rendition(&args.plot, "svg").as_deref(),
            )
            .map_err(|e| fail(3, e))?;
        }
    }
    if run.timing {
        clock.report(&setup_steps);
    }
    Ok(())
}

/// `vmafcuda serve`: the resident service (see [`vmafcuda_cli::service`]).
fn serve(args: ServeArgs) -> Result<(), Failure> {
    let socket = args.socket.unwrap_or_else(service::default_socket);
    // Keep the device's primary context for the service's life: each run's set-up then finds
    // the driver and the context up and only loads the kernels (a few milliseconds).
    let t = std::time::Instant::now();
    let held = vmafcuda::cuda::probe().and_then(|_| vmafcuda::cuda::Context::primary(args.device));
    let ready = match &held {
        Ok(_) => format!(
            "CUDA device {} initialised in {:.0} ms",
            args.device,
            t.elapsed().as_secs_f64() * 1e3
        ),
        Err(e) => format!("no CUDA ({e}): runs use the CPU"),
    };
    service::serve(&socket, &ready, &mut ServiceRunner)
}

struct ServiceRunner;

impl service::Runner for ServiceRunner {
    fn run(&mut self, request: &service::Request) -> (u8, Vec<GpuTeardown>) {
        let args = match Cli::try_parse_from(&request.args) {
            Ok(Cli {
                command: Command::Score(args),
            }) => args,
            Ok(_) => {
                eprintln!("vmafcuda: error: the service runs `vmafcuda score` only");
                return (2, Vec::new());
            }
            Err(e) => {
                let _ = e.print();
                return (e.exit_code().clamp(0, 255) as u8, Vec::new());
            }
        };
        let mut run = Run {
            in_service: true,
            timing: request.env.iter().any(|(k, _)| k == "VMAFCUDA_TIMING"),
            teardown: Vec::new(),
        };
        let result = match args.threads {
            // The service's pool is all cores; a run that asks for fewer gets a pool of its own.
            Some(n) => match rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
            {
                Ok(pool) => pool.install(|| score(args, &mut run)),
                Err(e) => Err(fail(1, format!("--threads {n}: {e}"))),
            },
            None => score(args, &mut run),
        };
        let code = match result {
            Ok(()) => 0,
            // Nobody is left to read it.
            Err(f) if service::cancelled() => f.code,
            Err(f) => report_failure(f),
        };
        (code, run.teardown)
    }
}

/// `VMAFCUDA_FULL_TEARDOWN=1`: tear the GPU state down and exit normally (to measure what that
/// costs, or to run the CLI under a leak checker).
fn full_teardown() -> bool {
    std::env::var_os("VMAFCUDA_FULL_TEARDOWN").is_some_and(|v| v != "0")
}

fn print_summary(report: &Report) {
    println!(
        "vmafcuda: {} frames {}x{} {}-bit, model {}, backend {}, {:.1} fps",
        report.frames.len(),
        report.width,
        report.height,
        report.bpc,
        report.model,
        report.backend,
        report.fps
    );
    if report.shots.len() > 1 {
        for s in &report.shots {
            if let Some(v) = s.pooled("vmaf") {
                println!(
                    "shot {:>3}: frames {:>6}-{:<6} VMAF mean {:.6}  harmonic {:.6}  min {:.6}  p5 {:.6}",
                    s.index, s.first_frame, s.last_frame, v.mean, v.harmonic_mean, v.min, v.p5
                );
            }
        }
    }
    if let Some(v) = report.pooled("vmaf") {
        println!(
            "VMAF mean {:.6}  harmonic_mean {:.6}  min {:.6}  max {:.6}",
            v.mean, v.harmonic_mean, v.min, v.max
        );
    }
}

fn bench(args: BenchArgs) -> Result<(), Failure> {
    init_threads(args.threads);
    let (cpu, cuda) = match args.backend.as_str() {
        "cpu" => (true, false),
        "cuda" | "all" => (true, true),
        other => {
            return Err(fail(
                2,
                format!("bench --backend: unknown backend {other:?} (cpu, cuda or all)"),
            ))
        }
    };
    if cuda {
        // Before any measurement: without a GPU, say so at once rather than after the CPU rows.
        vmafcuda::cuda::probe().map_err(|e| {
            fail(
                1,
                format!(
                    "bench --backend {}: cannot measure the CUDA path: {e}. \
                     Use --backend cpu for the CPU path alone",
                    args.backend
                ),
            )
        })?;
    }
    let runs = args.runs.max(1);
    println!(
        "{:>10} {:>4} {:<12} {:>7} {:>9} {:>10} {:>10}",
        "size", "bpc", "path", "frames", "ms/frame", "fps", "vs cpu"
    );
    for size in &args.size {
        let (width, height) = parse_size(size)?;
        let spec = BenchSpec {
            width,
            height,
            bpc: args.bpc,
            frames: args.frames,
        };
        let row = |path: &str, frames: usize, fps: f64, cpu_fps: Option<f64>| {
            let ratio = cpu_fps.map_or("".into(), |c| format!("{:.1}x", fps / c));
            println!(
                "{:>10} {:>4} {:<12} {:>7} {:>9.3} {:>10.1} {:>10}",
                size,
                args.bpc,
                path,
                frames,
                1000.0 / fps,
                fps,
                ratio
            );
        };
        let mut cpu_fps = None;
        if cpu {
            // The CPU is slow at large sizes: a few frames are enough for a stable figure.
            let frames = args.cpu_frames.unwrap_or(args.frames).min(args.frames);
            let fps = median(runs, || {
                bench::cpu_fps(&BenchSpec { frames, ..spec }).map_err(Failure::from)
            })?;
            row("cpu", frames, fps, None);
            cpu_fps = Some(fps);
        }
        if cuda {
            let fps = median(runs, || bench::cuda_host_fps(&spec).map_err(Failure::from))?;
            row("cuda host", spec.frames, fps, cpu_fps);
            let fps = median(runs, || {
                bench::cuda_pinned_fps(&spec).map_err(Failure::from)
            })?;
            row("cuda pinned", spec.frames, fps, cpu_fps);
            let fps = median(runs, || {
                bench::cuda_device_fps(&spec, false).map_err(Failure::from)
            })?;
            row("cuda device", spec.frames, fps, cpu_fps);
            if let Some(n) = args.shot_length {
                let n = n as usize;
                let measure = |rebuild: Rebuild| -> Result<(f64, f64, f64), Failure> {
                    let mut runs_of = Vec::new();
                    let fps = median(runs, || {
                        let r = bench::cuda_device_shots(&spec, n, rebuild)?;
                        runs_of.push(r);
                        Ok(r.fps)
                    })?;
                    row(
                        &format!("cuda {}/{n}", rebuild.name()),
                        spec.frames,
                        fps,
                        cpu_fps,
                    );
                    let first = middle(runs_of.iter().map(|r| r.first_frame_ms).collect());
                    let other = middle(runs_of.iter().map(|r| r.other_frame_ms).collect());
                    Ok((fps, first, other))
                };
                let (full, full_first, full_other) = measure(Rebuild::Full)?;
                let (reset, reset_first, reset_other) = measure(Rebuild::Reset)?;
                println!(
                    "  shots of {n} frames: full rebuild {:.1}% of the in-place reset's throughput; \
                     first frame after a boundary {full_first:.3} ms (full) vs {reset_first:.3} ms \
                     (reset): {:+.3} ms; other frames {full_other:.3} / {reset_other:.3} ms",
                    100.0 * full / reset,
                    full_first - reset_first
                );
            }
            for &n in &args.scorers {
                let n = n as usize;
                let fps = median(runs, || {
                    bench::cuda_device_fps_many(&spec, n).map_err(Failure::from)
                })?;
                row(&format!("cuda x{n}"), n * spec.frames, fps, cpu_fps);
            }
            if (9..16).contains(&spec.bpc) {
                // MSB-aligned storage (P010-style), shifted by the kernels as they load.
                let fps = median(runs, || {
                    bench::cuda_device_fps(&spec, true).map_err(Failure::from)
                })?;
                row("cuda dev msb", spec.frames, fps, cpu_fps);
            }
            let frames = args.stage_frames.min(spec.frames);
            if frames > 0 {
                let stages = bench::cuda_stages(&spec, frames, runs).map_err(Failure::from)?;
                print!("{}", bench::stage_table(&spec, frames, runs, &stages));
            }
        }
    }
    Ok(())
}

/// Median of `runs` measurements.
/// The middle value (the upper one of an even count; NaN for none).
fn middle(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn median(runs: usize, mut f: impl FnMut() -> Result<f64, Failure>) -> Result<f64, Failure> {
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        v.push(f()?);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// Where a run's time goes (`VMAFCUDA_TIMING=1` prints it on stderr): setting up the scorers
/// (CUDA context, kernels), waiting for the reading threads, pushing frames to the scorers
/// (staging, upload, waiting for the GPU), finishing (last frames, pooling).
#[derive(Clone, Copy)]
enum Phase {
    Setup,
    Read,
    Score,
    Finish,
}

struct PhaseClock {
    last: std::time::Instant,
    spent: [std::time::Duration; 4],
}

impl PhaseClock {
    fn new() -> Self {
        PhaseClock {
            last: std::time::Instant::now(),
            spent: Default::default(),
        }
    }

    fn lap(&mut self, phase: Phase) {
        let now = std::time::Instant::now();
        self.spent[phase as usize] += now - self.last;
        self.last = now;
    }

    fn report(&self, setup_steps: &[(&'static str, std::time::Duration)]) {
        let ms = |i: usize| self.spent[i].as_secs_f64() * 1e3;
        eprintln!(
            "vmafcuda: timing: setup {:.1} ms, waiting for input {:.1} ms, scoring {:.1} ms, finish {:.1} ms",
            ms(0),
            ms(1),
            ms(2),
            ms(3)
        );
        if !setup_steps.is_empty() {
            let steps: Vec<String> = setup_steps
                .iter()
                .map(|(what, d)| format!("{what} {:.1} ms", d.as_secs_f64() * 1e3))
                .collect();
            eprintln!(
                "vmafcuda: timing: CUDA set-up (from process start, on the set-up thread): {}",
                steps.join(", ")
            );
        }
    }
}
