//! The command line: subcommands, their options, and parsing of option values.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use vmafcuda::scorer::BackendRequest;
use vmafcuda::Rebuild;

use crate::failure::{fail, Failure};

const EXAMPLES: &str = "\
Examples:
  vmafcuda score                                     # built-in demo clip, no files needed
  vmafcuda score -r ref.y4m -d dist.y4m -o vmaf.json
  vmafcuda score -r ref.mkv -d dist.mp4              # FFmpeg input (build with --features ffmpeg)
  vmafcuda score -r ref.y4m -d dist.y4m --model vmaf_4k_v0.6.1 --feature psnr --shots 0,120,300
  vmafcuda score -r ref.y4m -d 1080p.mp4 -d 720p.mp4 -d 480p.mp4 -o results/
                                                     # a ladder: one pass over the reference,
                                                     # smaller renditions upscaled (bicubic)
  vmafcuda score -r ref.y4m -d dist.y4m --format csv -o vmaf.csv --backend cpu
  vmafcuda bench --size 1920x1080 --frames 48

  vmafcuda serve &                                   # keep the GPU initialised: later
                                                     # `vmafcuda score` runs start at once

Environment: VMAFCUDA_SERVICE=PATH|off (which service `score` hands its run to; default: the
default socket, if a service listens there), VMAFCUDA_TIMING=1 (where a run's time goes).

Exit codes: 0 ok, 1 bad input, 2 bad command line, 3 cannot write the output, 130 interrupted.";

#[derive(Parser)]
#[command(
    name = "vmafcuda",
    version,
    about = "Netflix VMAF, bit-exact with libvmaf 3.2.0",
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Score DIST (one or several renditions) against REF (without both: a built-in demo clip).
    Score(ScoreArgs),
    /// Measure scoring speed on synthetic frames.
    Bench(BenchArgs),
    /// Stay resident with the GPU initialised and score the runs `vmafcuda score` hands over
    /// (it saves each run the CUDA driver's start-up, ~0.2 s). Stop with Ctrl-C or SIGTERM.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Socket to listen on (default: $XDG_RUNTIME_DIR/vmafcuda.sock, else
    /// /tmp/vmafcuda-UID.sock; `vmafcuda score` finds the default by itself, another path
    /// through VMAFCUDA_SERVICE=PATH).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// CUDA device kept initialised.
    #[arg(long, default_value_t = 0)]
    pub device: i32,
}

#[derive(clap::Args)]
pub struct ScoreArgs {
    /// Reference video: y4m (read natively), or anything FFmpeg decodes in a build with the
    /// `ffmpeg` feature (mp4, mkv, ...).
    #[arg(short, long, value_name = "REF")]
    pub reference: Option<PathBuf>,
    /// Distorted video, same bit depth and chroma format as the reference. Repeat to score a
    /// ladder of renditions in one pass over the reference; a rendition of another size is
    /// resized to the reference size (bicubic, B=0 C=0.6, as swscale's default bicubic).
    #[arg(short, long, value_name = "DIST")]
    pub distorted: Vec<PathBuf>,
    /// Built-in model name (vmaf_v0.6.1, vmaf_4k_v0.6.1, vmaf_v0.6.1neg) or a libvmaf JSON model file.
    #[arg(short, long, default_value = "vmaf_v0.6.1", value_name = "NAME|PATH")]
    pub model: String,
    /// Extra feature to report (psnr).
    #[arg(long, value_name = "NAME")]
    pub feature: Vec<String>,
    /// Shot boundaries: `none`, or the first frame of each shot (0-based), e.g. 0,120,300.
    #[arg(long, value_name = "none|N,N,...")]
    pub shots: Option<String>,
    /// Where to compute: auto (CUDA if available, else CPU), cpu or cuda.
    #[arg(long, default_value = "auto", value_name = "auto|cpu|cuda")]
    pub backend: String,
    /// What a shot boundary does: full (tear the whole engine down and build a new one, built
    /// ahead so the run does not wait), reset (reset its state in place) or cold (full, and the
    /// kernels are reloaded and all memory returned to the driver: slower, for leak checks).
    /// Same scores.
    #[arg(long, default_value = "full", value_name = "full|reset|cold", value_parser = parse_rebuild)]
    pub rebuild: Rebuild,
    /// Write per-frame, per-shot and pooled results to FILE. With several --distorted: one file
    /// per rendition, FILE with the rendition's name before the extension (out.json ->
    /// out.NAME.json), or DIR/NAME.json when FILE is a directory (or ends in /).
    #[arg(short, long, value_name = "FILE|DIR")]
    pub output: Option<PathBuf>,
    /// Output file format.
    #[arg(long, default_value = "json", value_name = "json|csv|xml")]
    pub format: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Disable clipping of the score to the model's range.
    #[arg(long)]
    pub disable_clip: bool,
    /// Apply the model's score transform.
    #[arg(long)]
    pub enable_transform: bool,
    /// Write a self-contained HTML report (chart with shot bands, worst frames, pooled tables,
    /// run facts; opens offline in any browser). With several renditions, one per rendition
    /// (named like --output).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Write the per-frame VMAF chart alone as an SVG file (per rendition, like --report).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// No progress bar or notes on stderr (the bar is drawn only when stderr is a terminal).
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Frame size WIDTHxHEIGHT (repeatable).
    #[arg(long, default_value = "576x324")]
    pub size: Vec<String>,
    /// Frames per measurement.
    #[arg(long, default_value_t = 48)]
    pub frames: usize,
    /// Bit depth of the synthetic frames.
    #[arg(long, default_value_t = 8)]
    pub bpc: u32,
    /// What to measure: cpu, or cuda (the CPU, then CUDA from host frames and from frames
    /// already in device memory, with ratios to the CPU, then the CUDA path's ms per stage).
    #[arg(long, default_value = "cpu", value_name = "cpu|cuda")]
    pub backend: String,
    /// Measurements per figure (the median is printed).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Frames per CPU measurement (default: --frames).
    #[arg(long)]
    pub cpu_frames: Option<usize>,
    /// Frames per stage in the CUDA stage table (at most --frames; 0: no table).
    #[arg(long, default_value_t = 120)]
    pub stage_frames: usize,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// With --backend cuda: also score the device-resident frames in shots of N frames, once
    /// with a full rebuild and once with an in-place reset at every boundary, and print both
    /// throughputs and the first frame's latency after a boundary.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub shot_length: Option<u32>,
    /// With --backend cuda: also run N CUDA scorers at once in this process, each on its own
    /// thread with its own device-resident frames to score, and print their aggregate fps
    /// (comma-separated counts, e.g. 1,4,16,64).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub scorers: Vec<u32>,
}

/// Parses `--rebuild`.
fn parse_rebuild(s: &str) -> Result<Rebuild, String> {
    Rebuild::parse(s).ok_or_else(|| format!("unknown mode {s:?} (full, reset or cold)"))
}

/// Parses `--shots`.
pub fn parse_shots(s: &str) -> Result<Vec<usize>, Failure> {
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

pub fn parse_size(s: &str) -> Result<(usize, usize), Failure> {
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

/// Parses `--backend`.
pub fn backend_request(name: &str) -> Result<BackendRequest, Failure> {
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
