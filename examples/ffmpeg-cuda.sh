#!/bin/sh
# VMAF on the GPU, frames decoded by NVDEC straight into CUDA memory and read in place by
# vmafcuda (FFmpeg's own CUDA context and stream, no copy to the host). Needs an FFmpeg built
# with CUDA (ffnvcodec) and --enable-libvmafcuda, and a vmafcuda build with its CUDA backend.
#   examples/ffmpeg-cuda.sh dist.mp4 ref.mp4 [out.json]
set -eu
dist=$1 ref=$2 out=${3:-vmaf.json}

ffmpeg -hide_banner \
  -hwaccel cuda -hwaccel_output_format cuda -i "$dist" \
  -hwaccel cuda -hwaccel_output_format cuda -i "$ref" \
  -lavfi "[0:v][1:v]vmafcuda=backend=cuda:log_fmt=json:log_path=$out" -f null -

# 10-bit sources decode to p010 (MSB-aligned): read in place as well, chroma PSNR included.

# Mixed inputs (a reference decoded on the CPU and uploaded with hwupload_cuda, the distorted
# decoded by NVDEC) end up in two CUDA contexts in FFmpeg 5.1 even with -hwaccel_device gpu =
# -filter_hw_device gpu (measured on an H100): the filter refuses such a pair with a clear
# message. Give it two NVDEC inputs as above, or two host inputs:
ffmpeg -hide_banner -i "$dist" -i "$ref" \
  -lavfi "[0:v][1:v]vmafcuda=backend=cuda:shots=0|120:log_fmt=json:log_path=host-$out" -f null -
