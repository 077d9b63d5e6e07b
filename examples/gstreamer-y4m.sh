#!/bin/sh
# VMAF of two y4m files with the GStreamer element, per shot, results in libvmaf's JSON layout.
#   examples/gstreamer-y4m.sh REF.y4m DIST.y4m [OUT.json]
# Build the plugin first (cargo build --release -p gst-vmafcuda); -m prints the VMAF messages.
set -eu
ref=$1 dist=$2 out=${3:-vmaf.json}
export GST_PLUGIN_PATH="${GST_PLUGIN_PATH:-$(dirname "$0")/../target/release}"
gst-launch-1.0 -m \
  filesrc location="$ref" ! y4mdec ! \
    vmafcuda name=v psnr=true shot-detection=auto results-filename="$out" ! fakesink \
  filesrc location="$dist" ! y4mdec ! v.dist_sink
# Known shot list instead of the detector:  vmafcuda name=v shot-boundaries=0,14,36,46 ...
