//! GStreamer plugin `vmafcuda`: element `vmafcuda` (see [`vmafcuda::VmafCuda`]), VMAF bit-exact
//! with libvmaf 3.2.0, per shot, on CUDA or the CPU.
//!
//! The plugin's license string is `MIT/X11`: GStreamer 1.22 only accepts licenses from a fixed
//! list, which does not have the workspace's BSD-2-Clause-Patent; MIT/X11 is the closest
//! permissive entry (BSD-2-Clause-Patent is BSD-2-Clause plus a patent grant) and like it
//! places no copyleft obligations on the pipelines that load the plugin.

use gst::glib;

mod cuda_ffi;
pub mod vmafcuda;

pub use vmafcuda::{
    shot_boundary_event, AlertReport, Align, AlignReport, Backend, FrameScore, GapReport, Pairing,
    PoolMethod, PooledScore, Rebuild, ResultsFormat, ShotDetection, ShotScore, StreamScore,
    VmafCuda, VmafMessage, SHOT_BOUNDARY_EVENT,
};

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    vmafcuda::register(plugin)
}

gst::plugin_define!(
    vmafcuda,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    concat!(env!("CARGO_PKG_VERSION"), "-", env!("COMMIT_ID")),
    "MIT/X11",
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_NAME"),
    "vmafcuda (local build)",
    env!("BUILD_REL_DATE")
);
