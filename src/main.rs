//! `vmafcuda`: score a distorted video against its reference with Netflix VMAF.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};

use vmafcuda::bench::{self, BenchSpec};
use vmafcuda::frame::Picture;
use vmafcuda::model::{Model, PredictOptions};
use vmafcuda::report::{Format, Report};
use vmafcuda::scorer::BackendRequest;
use vmafcuda::synth::SynthClip;
use vmafcuda::y4m::Y4mReader;
use vmafcuda::{Error, Geometry, Scorer, ScorerConfig};

#[derive(Parser)]
#[command(
    name = "vmafcuda",
    version,
    about = "Netflix VMAF, bit-exact with libvmaf 3.2.0",
    after_help = "Examples:\n  vmafcuda score                                   # built-in demo clip\n  vmafcuda score -r ref.y4m -d dist.y4m -o out.json\n  vmafcuda score -r ref.y4m -d dist.y4m --model vmaf_4k_v0.6.1 --feature psnr --shots 0,120,300\n  vmafcuda bench --size 1920x1080 --frames 48"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score DIST against REF (without both: a built-in synthetic demo clip).
    Score(ScoreArgs),
    /// Measure scoring speed on synthetic frames.
    Bench(BenchArgs),
}

#[derive(clap::Args)]
struct ScoreArgs {
    /// Reference video (y4m).
    #[arg(short, long, value_name = "REF")]
    reference: Option<PathBuf>,
    /// Distorted video (y4m), same size and bit depth as the reference.
    #[arg(short, long, value_name = "DIST")]
    distorted: Option<PathBuf>,
    /// Built-in model name (vmaf_v0.6.1, vmaf_4k_v0.6.1, vmaf_v0.6.1neg) or a libvmaf JSON model file.
    #[arg(short, long, default_value = "vmaf_v0.6.1", value_name = "NAME|PATH")]
    model: String,
    /// Extra feature to report (psnr).
    #[arg(long, value_name = "NAME")]
    feature: Vec<String>,
    /// Shot boundaries: `none`, or the first frame of each shot (0-based), e.g. 0,120,300.
    #[arg(long, value_name = "none|N,N,...")]
    shots: Option<String>,
    /// Where to compute: auto (CUDA if available, else CPU), cpu or cuda.
    #[arg(long, default_value = "auto", value_name = "auto|cpu|cuda")]
    backend: String,
    /// Write per-frame, per-shot and pooled results to FILE.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Output file format.
    #[arg(long, default_value = "json", value_name = "json|csv|xml")]
    format: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Disable clipping of the score to the model's range.
    #[arg(long)]
    disable_clip: bool,
    /// Apply the model's score transform.
    #[arg(long)]
    enable_transform: bool,
    /// No progress on stderr.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Frame size WIDTHxHEIGHT (repeatable).
    #[arg(long, default_value = "576x324")]
    size: Vec<String>,
    /// Frames per measurement.
    #[arg(long, default_value_t = 48)]
    frames: usize,
    /// Bit depth of the synthetic frames.
    #[arg(long, default_value_t = 8)]
    bpc: u32,
    /// What to measure: cpu, or cuda (the CPU, then CUDA from host frames and from frames
    /// already in device memory, with ratios to the CPU).
    #[arg(long, default_value = "cpu", value_name = "cpu|cuda")]
    backend: String,
    /// Measurements per figure (the median is printed).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Frames per CPU measurement (default: --frames).
    #[arg(long)]
    cpu_frames: Option<usize>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// A failure the CLI reports: a message and an exit code (1 = bad input, 3 = output error).
struct Failure {
    code: u8,
    message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure {
            code: 1,
            message: e.to_string(),
        }
    }
}

fn fail(code: u8, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Score(args) => score(args),
        Command::Bench(args) => bench(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("vmafcuda: error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn init_threads(threads: Option<usize>) {
    if let Some(n) = threads {
        // Only fails if the pool was already built, which cannot happen before this point.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global();
    }
}

fn parse_shots(s: &str) -> Result<Vec<usize>, Failure> {
    if s.eq_ignore_ascii_case("none") || s.is_empty() {
        return Ok(Vec::new());
    }
    let mut starts = Vec::new();
    for part in s.split(',') {
        let n: usize = part.trim().parse().map_err(|_| {
            fail(
                2,
                format!("--shots: {part:?} is not a frame number (expected none or N,N,...)"),
            )
        })?;
        starts.push(n);
    }
    if starts.windows(2).any(|w| w[0] >= w[1]) {
        return Err(fail(
            2,
            format!("--shots: frame numbers must be strictly ascending, got {s}"),
        ));
    }
    Ok(starts)
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

/// Parses `--backend`.
fn backend_request(name: &str) -> Result<BackendRequest, Failure> {
    match name {
        "cpu" => Ok(BackendRequest::Cpu),
        "auto" => Ok(BackendRequest::Auto),
        "cuda" => Ok(BackendRequest::Cuda { device: 0 }),
        other => Err(fail(
            2,
            format!("--backend: unknown backend {other:?} (auto, cpu or cuda)"),
        )),
    }
}

/// Source of frame pairs: two y4m files or the built-in clip.
enum Input {
    Files {
        reference: Box<Y4mReader<std::io::BufReader<std::fs::File>>>,
        distorted: Box<Y4mReader<std::io::BufReader<std::fs::File>>>,
    },
    Synthetic {
        clip: SynthClip,
        next: usize,
    },
}

impl Input {
    fn geometry(&self) -> Geometry {
        match self {
            Input::Files { reference, .. } => {
                let h = reference.header();
                Geometry {
                    width: h.width,
                    height: h.height,
                    bpc: h.bpc,
                }
            }
            Input::Synthetic { clip, .. } => Geometry {
                width: clip.width,
                height: clip.height,
                bpc: clip.bpc,
            },
        }
    }

    fn next_pair(&mut self) -> Result<Option<(Picture, Picture)>, Failure> {
        match self {
            Input::Files {
                reference,
                distorted,
            } => {
                let r = reference.read_picture().map_err(Error::from)?;
                let d = distorted.read_picture().map_err(Error::from)?;
                match (r, d) {
                    (Some(r), Some(d)) => Ok(Some((r, d))),
                    (None, None) => Ok(None),
                    (r, _) => {
                        let (short, long) = if r.is_some() {
                            (distorted.path(), reference.path())
                        } else {
                            (reference.path(), distorted.path())
                        };
                        // libvmaf scores the common frames and warns; so do we.
                        eprintln!(
                            "vmafcuda: warning: {:?} ended before {:?}; scored the first {} frames",
                            short,
                            long,
                            reference.frames_read().min(distorted.frames_read())
                        );
                        Ok(None)
                    }
                }
            }
            Input::Synthetic { clip, next } => {
                if *next >= clip.frames {
                    return Ok(None);
                }
                *next += 1;
                Ok(Some(clip.pair(*next - 1)))
            }
        }
    }
}

fn open_input(args: &ScoreArgs) -> Result<(Input, Vec<usize>), Failure> {
    match (&args.reference, &args.distorted) {
        (Some(r), Some(d)) => {
            let reference = Y4mReader::open(r).map_err(Error::from)?;
            let distorted = Y4mReader::open(d).map_err(Error::from)?;
            let (rh, dh) = (reference.header(), distorted.header());
            if (rh.width, rh.height) != (dh.width, dh.height) {
                return Err(Error::Mismatch {
                    what: "frame size",
                    reference: format!("{}x{} ({})", rh.width, rh.height, r.display()),
                    distorted: format!("{}x{} ({})", dh.width, dh.height, d.display()),
                }
                .into());
            }
            if rh.bpc != dh.bpc {
                return Err(Error::Mismatch {
                    what: "bit depth",
                    reference: format!("{} ({})", rh.bpc, r.display()),
                    distorted: format!("{} ({})", dh.bpc, d.display()),
                }
                .into());
            }
            if rh.format != dh.format {
                return Err(Error::Mismatch {
                    what: "chroma format",
                    reference: format!("{:?} ({})", rh.format, r.display()),
                    distorted: format!("{:?} ({})", dh.format, d.display()),
                }
                .into());
            }
            Ok((
                Input::Files {
                    reference: Box::new(reference),
                    distorted: Box::new(distorted),
                },
                Vec::new(),
            ))
        }
        (None, None) => {
            let clip = SynthClip::DEFAULT;
            if !args.quiet {
                eprintln!(
                    "vmafcuda: no --reference/--distorted given: scoring the built-in synthetic clip ({}x{}, {} frames, a cut at frame {})",
                    clip.width, clip.height, clip.frames, clip.cut
                );
            }
            Ok((Input::Synthetic { clip, next: 0 }, vec![0, clip.cut]))
        }
        _ => Err(fail(
            2,
            "give both --reference and --distorted (or neither for the built-in demo)",
        )),
    }
}

fn score(args: ScoreArgs) -> Result<(), Failure> {
    init_threads(args.threads);
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
    let backend = backend_request(&args.backend)?;
    let (mut input, default_shots) = open_input(&args)?;
    let shots = match &args.shots {
        Some(s) => parse_shots(s)?,
        None => default_shots,
    };
    let config = ScorerConfig {
        psnr: !args.feature.is_empty(),
        shot_starts: shots,
        predict: PredictOptions {
            disable_clip: args.disable_clip,
            enable_transform: args.enable_transform,
        },
        ..ScorerConfig::new(model)
    };
    let mut scorer = Scorer::with_backend(config, input.geometry(), backend)?;
    if !args.quiet {
        if let Some(note) = scorer.backend_note() {
            eprintln!("vmafcuda: backend auto: {note}");
        }
    }
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let batch_size = 2 * rayon::current_num_threads();
    let started = Instant::now();
    let mut last_progress = Instant::now();
    loop {
        let mut batch = Vec::with_capacity(batch_size);
        while batch.len() < batch_size {
            match input.next_pair()? {
                Some(pair) => batch.push(pair),
                None => break,
            }
        }
        if batch.is_empty() {
            break;
        }
        let views: Vec<_> = batch.iter().map(|(r, d)| (r.view(), d.view())).collect();
        scorer.push_batch(&views)?;
        if show_progress && last_progress.elapsed().as_millis() > 250 {
            last_progress = Instant::now();
            let n = scorer.frames_pushed();
            eprint!(
                "\r{n} frames, {:.1} fps",
                n as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    if show_progress {
        eprintln!();
    }
    if scorer.frames_pushed() == 0 {
        return Err(fail(1, "no frames to score (an input is empty)"));
    }
    if let Some(reason) = scorer.fallback_reason() {
        eprintln!("vmafcuda: warning: CUDA failed mid-run ({reason}); finished on the CPU");
    }
    let report = scorer.finish();
    print_summary(&report);
    if let Some(path) = &args.output {
        std::fs::write(path, report.render(format))
            .map_err(|e| fail(3, format!("{}: cannot write output: {e}", path.display())))?;
    }
    Ok(())
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

fn parse_size(s: &str) -> Result<(usize, usize), Failure> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| fail(2, format!("--size: expected WIDTHxHEIGHT, got {s:?}")))?;
    let w = w
        .parse()
        .map_err(|_| fail(2, format!("--size: bad width in {s:?}")))?;
    let h = h
        .parse()
        .map_err(|_| fail(2, format!("--size: bad height in {s:?}")))?;
    Ok((w, h))
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
                bench::cuda_device_fps(&spec).map_err(Failure::from)
            })?;
            row("cuda device", spec.frames, fps, cpu_fps);
        }
    }
    Ok(())
}

/// Median of `runs` measurements.
fn median(runs: usize, mut f: impl FnMut() -> Result<f64, Failure>) -> Result<f64, Failure> {
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        v.push(f()?);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}
