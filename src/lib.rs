//! vmafcuda: Netflix VMAF, bit-exact with libvmaf 3.2.0, on the CPU and on CUDA GPUs.
//!
//! The engine takes reference/distorted frame pairs ([`frame::PictureRef`] in host memory, or
//! [`cuda::DevicePicture`] in device memory), computes libvmaf's integer features ([`features`]
//! on the CPU, [`cuda`] on the GPU: identical integers, and the same host code turns them into
//! doubles), predicts VMAF with an SVM model ([`model`]) and pools per shot and per stream
//! ([`pool`]). [`scorer::Scorer`] drives it and rebuilds the per-shot state at every shot
//! boundary, so each shot scores exactly as a separate libvmaf run would.
//!
//! # Lifecycle: what lives how long
//!
//! A shot boundary does what [`ScorerConfig::rebuild`] says: [`Rebuild::Full`] (the default in
//! every front end: element property `rebuild`, filter option `rebuild`, C config field
//! `rebuild`, CLI `--rebuild`) or [`Rebuild::Reset`].
//!
//! | scope | CPU backend | CUDA backend, `full` (default) | CUDA backend, `reset` |
//! |---|---|---|---|
//! | process | log2 and division tables (built once, immutable) | the driver library, loaded once | the same |
//! | scorer (element, filter instance, CLI run) | model, feature plan | the context (primary or borrowed, never destroyed if borrowed), the rebuild thread, the kernel modules ([`cuda::GpuKernels`]) and the scorer's allocators ([`cuda::ScorerPools`]: a stream-ordered device memory pool and a cache of pinned host blocks, both destroyed with the scorer) | the context, the kernel modules, the feature memory pool [`cuda::GpuFeatures`] (streams, events, device scratch of every feature, pinned result slots) and the host staging |
//! | shot | [`session::Session`]: motion state, pending frames, the shot's results; with `full` also the worker scratch (extractor sets), with `reset` ADM's carried word is reset in place | a whole engine of its own: streams, events, every device allocation (device scratch, feature state), pinned result slots and pinned host staging, built on the rebuild thread while the shot before runs and torn down there after the boundary; its memory is allocated from and freed to the scorer's allocators | the GPU features' session state (motion predecessor, ADM's carried words), reset in place by a queued memset |
//! | frame | nothing allocated | nothing allocated | nothing allocated |
//!
//! Why the kernel modules and the allocators live per scorer with `full`: measured on an H100
//! (BENCHMARKS.md, `tests/driver_stalls.rs`), loading a module, `cuMemFree` and
//! `cuMemFreeHost` each wait for the whole device to go idle and block every other thread's
//! launches meanwhile, so a rebuild that reloads modules and returns memory to the driver
//! drains the pipeline at every boundary (about half the throughput at 1080p in shots of 25
//! frames). With the modules loaded once per scorer and the memory recycled through the
//! scorer's own pools, a 1080p boundary costs about what a reset costs (96-98% of its
//! throughput in shots of 25 frames). Where a shot lasts about as long as building and tearing
//! down an engine (576x324 in shots of 25: 0.7 ms each), the rebuild thread's driver calls
//! still hold up the scoring thread's launches (54-76% of the reset's rate on an H200), so a
//! build makes as few as it can: one allocation per feature, one wait for all of them
//! ([`cuda::with_pools`]). [`Rebuild::Cold`] (`cold`; or
//! `VMAFCUDA_COLD_REBUILD=1` on a `full` configuration) is the cold rebuild: the modules are
//! loaded again and every byte goes back to the driver at each boundary (the libvmaf-style
//! init/close cycle, for leak studies; `tests/rebuild.rs` runs it too).
//!
//! At a shot boundary the shot is flushed (its last frame's motion needs no successor), pooled
//! and handed out; its session is dropped and the next frame starts a fresh one. With `full`
//! the next frame goes to the engine built ahead for it (the first shot's engine orders the
//! second's at its first frame; at every boundary the first frame of the new shot, once
//! queued, hands the old engine to the rebuild thread, which drops it and builds the next):
//! the boundary itself swaps two engines and waits for the driver only when shots are shorter
//! than an engine's build. Both give the result of a separate libvmaf run on the shot, bit for
//! bit. Every CUDA handle is owned by an RAII type that counts itself
//! ([`cuda::live_resources`], the pools and the pinned blocks they keep included) and every
//! engine counts itself ([`engine_counts`]), so tests assert one engine per boundary, steady
//! counts across thousands of shots ([`Scorer::settle_rebuild`] waits for the engine being
//! built) and zero when a scorer is dropped.
//!
//! Two exceptions for short-lived programs, both opt-in: [`prepare_cuda`] starts the driver,
//! context and kernels of a device on another thread before any scorer exists (the first scorer
//! for that device takes them; [`discard_prepared_cuda`] drops them if none did), and
//! [`scorer::Scorer::finish_before_exit`] leaves the GPU state to the driver when the process
//! is about to exit. The `vmafcuda` CLI uses both; the element and the C library use neither.
//! Its resident service (`vmafcuda serve`) keeps one reference to the primary context for the
//! service's life (so each run's set-up finds the driver and the context up) and ends each run
//! with [`scorer::Scorer::finish_deferred`]: the run's whole GPU state is torn down as usual,
//! only after the client has its answer.
//!
//! # A stream that never ends
//!
//! Per frame, a scorer keeps only what [`ScorerConfig`] asks for: the report's frames
//! (`keep_frames`, ~1 kB each) and shots (`keep_shots`); the open shot's values (exact
//! percentiles per shot, 8 bytes per frame and metric, dropped at the boundary); and the
//! whole-stream pool, which with [`pool::Pooling::Bounded`] is constant in size (exact
//! min/max/mean/harmonic mean, percentiles within the bound stated in [`pool`]).
//! [`results_file::ResultsWriter`] writes a results file as frames come instead of from a
//! kept report. The GStreamer element uses both on live feeds; the CLI and the C library keep
//! everything (exact percentiles, per-frame results after the run).
//!
//! # When the GPU fails
//!
//! At set-up, `BackendRequest::Auto` takes the CPU if no GPU can be used (no driver, out of
//! memory) and says why ([`scorer::Scorer::backend_note`]); a forced `Cuda` request is an
//! error. Mid-stream, a failed CUDA call with `Auto` (or [`ScorerConfig::cpu_fallback`]) ends
//! the scorer's CUDA scope at once: the whole GPU engine is dropped (every count back to zero)
//! and the run goes on on the CPU, bit-identical to a CPU-only run ([`fallback`]): the shot's
//! session is kept and continued on the host, the frame before the lost ones primes motion and
//! ADM's carried word, and the frames in flight are scored again from the pinned staging's host
//! copies (it keeps the last `SLOTS + 2` host frames, or a reference to them when they came as
//! [`pinned_picture::PinnedPicture`]s, uploaded in place). Lost device frames are asked back from
//! the caller ([`Error::ReplayOnHost`]). [`scorer::Scorer::fallback_reason`] says what failed;
//! `backend()` is then `Cpu`. With forced CUDA, failures stay errors.

pub mod cuda;
pub mod emulated_gpu;
pub mod error;
pub mod extract;
pub mod fallback;
pub mod features;
pub mod frame;
pub(crate) mod gpu_pipeline;
pub mod model;
pub mod pinned_picture;
pub mod pool;
pub mod report;
pub mod results_file;
pub mod scorer;
pub mod session;
pub mod shots;
pub mod synth;
pub mod y4m;

/// The corpus clips' zstd decoding for the unit tests, shared with the integration tests.
#[cfg(test)]
#[path = "../tests/common/zst.rs"]
mod test_zst;

pub use error::{Error, Result};
pub use gpu_pipeline::{discard_prepared_cuda, engine_counts, prepare_cuda, EngineCounts};
pub use scorer::{Geometry, GpuTeardown, Rebuild, Scorer, ScorerConfig};

/// Version string written into outputs.
pub const VERSION_STRING: &str = concat!(
    "vmafcuda ",
    env!("CARGO_PKG_VERSION"),
    " (libvmaf 3.2.0 compatible)"
);
