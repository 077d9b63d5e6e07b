//! The CUDA backend's plumbing, on the driver API through `cudarc` (loaded at run time, so the
//! binary runs where no driver is installed), and the GPU versions of the features.
//!
//! * [`probe`] says whether a driver and a device exist; nothing touches the driver before it
//!   has been found, and every entry point turns a panic inside the bindings into an error.
//! * [`Context`]: owned (a device's primary context, or a dedicated one) or borrowed (a raw
//!   `CUcontext` from GStreamer or FFmpeg: pushed/popped around our work, never destroyed).
//! * RAII owners, each counted in [`live_resources`]: [`DeviceBuffer`], [`PinnedBuffer`],
//!   [`Stream`] (non-blocking; we synchronise only our own streams), [`Event`], [`Module`]
//!   (with its [`Function`]s). Dropping releases; a failed release is reported, never a panic.
//! * [`copy`]: host/device copies, 2D pitched copies; [`Function::launch`] launches kernels.
//! * [`foreign`]: device memory of other libraries (PyTorch, CuPy): its device, its producer's
//!   stream, a copy back to the host.
//! * [`fault`]: test hook making the n-th allocation, module load, launch or copy fail.
//! * Kernels are compiled ahead of time ([`kernels`]); [`psnr`] is the first feature on them.
//! * [`stage_timing`]: the time of each stage of a frame (staging, upload, each feature, the
//!   whole frame), for `vmafcuda bench`.

pub mod adm;
pub mod context;
pub mod copy;
pub mod counters;
pub mod driver;
pub mod engine;
pub mod error;
pub mod event;
pub mod fault;
pub mod foreign;
pub mod graph;
pub mod host_timing;
pub mod kernels;
pub mod memory;
pub mod module;
pub mod motion;
pub mod plane;
pub mod pool;
pub mod psnr;
pub mod record;
pub mod stage_timing;
pub mod stream;
pub mod vif;

pub use adm::{AdmKernels, GpuAdm};
pub use context::{Bound, Context, ContextKind};
pub use counters::{live_resources, LiveResources};
pub use driver::{probe, DeviceInfo, DriverInfo};
pub use engine::{DeviceChroma, DevicePicture, GpuFeatures, GpuFrame, GpuKernels, HostStaging};
pub use error::{CudaError, CudaResult};
pub use event::Event;
pub use fault::FaultKind;
pub use memory::{DeviceBuffer, DeviceRepr, PinnedBuffer};
pub use module::{arg, Function, LaunchConfig, Module};
pub use motion::{GpuMotion, MotionKernels, MotionPath};
pub use plane::{DevicePlane, DevicePlaneBuf};
pub use pool::{with_pools, ScorerPools};
pub use psnr::{GpuPsnr, PsnrFrame, PsnrKernels};
pub use stage_timing::{time_stages, StageTimes};
pub use stream::Stream;
pub use vif::{GpuVif, VifKernels};

/// Raw driver types, for adapters that hand us handles (`CUcontext`, `CUdeviceptr`, ...).
pub use cudarc::driver::sys;
