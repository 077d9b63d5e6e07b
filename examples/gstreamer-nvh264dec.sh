#!/bin/sh
# Two H.264 files decoded by NVDEC straight into the element: frames stay in CUDA memory and are
# read in place in the decoders' shared CUDA context (context sharing, gst.cuda.context).
#   examples/gstreamer-nvh264dec.sh REF.mp4 DIST.mp4 [OUT.json]
# Needs an NVIDIA GPU and driver (nvh264dec exists only there). backend=cuda makes a missing or
# failing GPU path an error instead of a fallback to the CPU.
set -eu
ref=$1 dist=$2 out=${3:-vmaf.json}
export GST_PLUGIN_PATH="${GST_PLUGIN_PATH:-$(dirname "$0")/../target/release}"
gst-launch-1.0 -m \
  filesrc location="$ref" ! qtdemux ! h264parse ! nvh264dec ! "video/x-raw(memory:CUDAMemory)" ! \
    vmafcuda name=v backend=auto results-filename="$out" ! fakesink \
  filesrc location="$dist" ! qtdemux ! h264parse ! nvh264dec ! "video/x-raw(memory:CUDAMemory)" ! \
    v.dist_sink
