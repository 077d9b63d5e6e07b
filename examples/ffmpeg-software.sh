#!/bin/sh
# VMAF of DIST against REF with FFmpeg's vmafcuda filter on software frames (any decoder; the
# filter takes yuv420p/422p/444p 8/10/12-bit, nv12, p010, gray, gray10; others are converted).
# Inputs in libvmaf-filter order: distorted first, reference second. The reference comes out,
# each frame with lavfi.vmafcuda.* metadata; the log has per-frame, per-shot and pooled scores.
#   examples/ffmpeg-software.sh dist.mp4 ref.y4m [out.json]
set -eu
dist=$1 ref=$2 out=${3:-vmaf.json}

# Whole clip, libvmaf-compatible JSON (plus psnr_y/cb/cr).
ffmpeg -hide_banner -i "$dist" -i "$ref" \
  -lavfi "[0:v][1:v]vmafcuda=model=version=vmaf_v0.6.1:feature=psnr:log_fmt=json:log_path=$out" \
  -f null -

# Per shot, from a known shot list (first frame of each shot): motion restarts at every cut,
# each shot equals a fresh libvmaf run on it.
ffmpeg -hide_banner -i "$dist" -i "$ref" \
  -lavfi "[0:v][1:v]vmafcuda=shots=0|14|36|46:log_fmt=json:log_path=shots-$out" -f null -

# Per shot, cuts found by FFmpeg's scdet on the reference; per-frame scores printed.
ffmpeg -hide_banner -i "$dist" -i "$ref" \
  -lavfi "[1:v]scdet=threshold=10[ref];[0:v][ref]vmafcuda=shots=scdet,metadata=print:key=lavfi.vmafcuda.score" \
  -f null -
