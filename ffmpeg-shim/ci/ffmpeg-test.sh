#!/usr/bin/env bash
# Builds a real FFmpeg (Debian's 5.1 source, minimal configure) with the vmafcuda filter against
# libvmafcuda installed by meson, and checks it against the libvmaf corpus:
#   - every corpus pair, whole clip, all frames and pooled, equal to libvmaf's .full.json (1e-9);
#   - shots=0|14|36|46 on the multi-shot pair equal to the per-shot references (3 models), also
#     with rebuild=reset and rebuild=cold (and bit for bit the default rebuild=full's numbers);
#   - shots=scdet (scdet on the reference) and shots=auto (built-in detector) find the cuts and
#     give the same per-shot scores;
#   - other software formats (nv12, gray, p010le, gray10le) give the same numbers;
#   - n_subsample=5 reports every 5th frame with libvmaf's values and pools over them;
#   - per-frame metadata (lavfi.vmafcuda.score) on the passed-through reference frames;
#   - bad input (mismatched sizes, unknown model, bad options) is an error exit with a message.
# Needs: apt packages meson ninja-build dpkg-dev build-essential pkg-config zstd python3 libffmpeg-nvenc-dev
# (the last lets FFmpeg's CUDA hwcontext, and so the filter's CUDA-frames path, compile).
# Work tree: target/ffmpeg-ci (kept between runs: a second run rebuilds only what changed).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
corpus="${VMAFCUDA_CORPUS:-$repo/../shared/corpus}"
work="$repo/target/ffmpeg-ci"
prefix="$work/prefix"
jobs="$(nproc)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
mkdir -p "$work"
t0=$(date +%s)
say() { echo "--- $* (+$(( $(date +%s) - t0 ))s)"; }

[ -f "$corpus/manifest.json" ] || { echo "corpus not found at $corpus" >&2; exit 1; }

say "libvmafcuda: meson setup + install into $prefix"
if [ ! -f "$work/meson/build.ninja" ]; then
  meson setup "$work/meson" "$repo" --prefix "$prefix" --libdir lib -Dcargo_profile=release \
    -Dgst_plugin=disabled -Dcli=false >/dev/null
fi
meson install -C "$work/meson" --quiet
readelf -d "$prefix/lib/libvmafcuda.so.0.1.0" | grep -q 'SONAME.*\[libvmafcuda.so.0\]'
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkg-config --exists vmafcuda

say "FFmpeg source (apt-get source ffmpeg)"
src="$work/ffmpeg"
# shellcheck source=ffmpeg-shim/ci/ffmpeg-source.sh
. "$repo/ffmpeg-shim/ci/ffmpeg-source.sh"
ffmpeg_source "$work/dl" "$src"

say "add the filter (apply.sh) and configure"
"$repo/ffmpeg-shim/ffmpeg/apply.sh" "$src" >/dev/null
cfg=(--disable-doc --disable-debug --disable-programs --enable-ffmpeg --disable-everything
  --disable-autodetect --enable-ffnvcodec --enable-cuda --disable-x86asm
  --enable-libvmafcuda "--extra-ldflags=-Wl,-rpath,$prefix/lib"
  --enable-protocol=file,pipe --enable-demuxer=yuv4mpegpipe,rawvideo
  --enable-decoder=rawvideo,wrapped_avframe --enable-encoder=wrapped_avframe,rawvideo
  --enable-muxer=null,rawvideo
  --enable-filter=vmafcuda,scdet,null,format,scale,crop,extractplanes,metadata,setpts,trim,hwupload_cuda,hwdownload)
stamp="$(printf '%s\n' "${cfg[@]}" | sha256sum | cut -c1-16)"
if [ ! -f "$src/ffbuild/config.mak" ] || [ "$(cat "$src/.vmafcuda-cfg" 2>/dev/null)" != "$stamp" ]; then
  (cd "$src" && ./configure "${cfg[@]}" > "$work/configure.log" 2>&1) \
    || { tail -30 "$src/ffbuild/config.log"; exit 1; }
  echo "$stamp" > "$src/.vmafcuda-cfg"
fi
grep -q 'define CONFIG_VMAFCUDA_FILTER 1' "$src/config_components.h"
grep -q 'define CONFIG_CUDA 1' "$src/config.h" || echo "note: FFmpeg without CUDA: the CUDA-frames path is not compiled"

say "make -j$jobs ffmpeg"
make -C "$src" -j"$jobs" ffmpeg > "$work/make.log" 2>&1 || { tail -40 "$work/make.log"; exit 1; }
if grep -A3 'vf_vmafcuda' "$work/make.log" | grep -q 'warning:'; then
  grep -A3 'vf_vmafcuda' "$work/make.log"; echo "vf_vmafcuda.c: compiler warnings" >&2; exit 1
fi
ff="$src/ffmpeg"
"$ff" -hide_banner -h filter=vmafcuda | head -n 3

clips="$work/clips"
mkdir -p "$clips" "$work/out"
y4m() {  # corpus-relative .y4m.zst -> decompressed path
  local out="$clips/$(basename "$1" .zst)"
  if [ ! -f "$out" ]; then
    zstd -q -d -c "$corpus/$1" > "$out.tmp" || { echo "cannot decompress $corpus/$1" >&2; exit 1; }
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}
cmp() { python3 "$repo/ffmpeg-shim/ci/compare.py" "$@"; }

say "whole clips vs libvmaf (all pairs, vmaf_v0.6.1 + psnr; 3 models where the corpus has them)"
for model in vmaf_v0.6.1 vmaf_4k_v0.6.1 vmaf_v0.6.1neg; do
  for ref_json in "$corpus"/vmaf/*."$model".full.json; do
    pair="$(basename "$ref_json" ".$model.full.json")"
    case "$pair" in *.shot[0-9]*) continue ;; esac
    reference="$(y4m "video/${pair%%__*}.y4m.zst")"
    if [ "${pair##*__}" = identical ]; then distorted="$reference"; else distorted="$(y4m "video/$pair.y4m.zst")"; fi
    out="$work/out/$pair.$model.json"
    "$ff" -hide_banner -nostats -loglevel error -i "$distorted" -i "$reference" \
      -lavfi "[0:v][1:v]vmafcuda=model=version=$model:feature=psnr:log_fmt=json:log_path=$out" -f null -
    cmp whole "$out" "$ref_json"
  done
done

ms=s_multishot_576x324__x264_crf30
ms_ref="$(y4m video/s_multishot_576x324.y4m.zst)"
ms_dist="$(y4m "video/$ms.y4m.zst")"
say "shots=0|14|36|46 vs the per-shot references"
for model in vmaf_v0.6.1 vmaf_4k_v0.6.1 vmaf_v0.6.1neg; do
  out="$work/out/$ms.shots.$model.json"
  "$ff" -hide_banner -nostats -loglevel error -i "$ms_dist" -i "$ms_ref" \
    -lavfi "[0:v][1:v]vmafcuda=model=$model:feature=psnr:shots=0|14|36|46:log_fmt=json:log_path=$out" -f null -
  cmp shots "$out" 0,14,36,46 "$corpus"/vmaf/"$ms".shot{0,1,2,3}."$model".full.json
done

for mode in reset cold; do
  say "rebuild=$mode with shots=0|14|36|46: the per-shot references, the same as rebuild=full"
  out="$work/out/$ms.shots.$mode.json"
  "$ff" -hide_banner -nostats -loglevel error -i "$ms_dist" -i "$ms_ref" \
    -lavfi "[0:v][1:v]vmafcuda=feature=psnr:shots=0|14|36|46:rebuild=$mode:log_fmt=json:log_path=$out" -f null -
  cmp shots "$out" 0,14,36,46 "$corpus"/vmaf/"$ms".shot{0,1,2,3}.vmaf_v0.6.1.full.json
  cmp same "$out" "$work/out/$ms.shots.vmaf_v0.6.1.json"
done

say "shots=scdet (scdet=threshold=10 on the reference)"
out="$work/out/$ms.scdet.json"
"$ff" -hide_banner -nostats -loglevel info -i "$ms_dist" -i "$ms_ref" \
  -lavfi "[1:v]scdet=threshold=10[ref];[0:v][ref]vmafcuda=shots=scdet:feature=psnr:log_fmt=json:log_path=$out" \
  -f null - 2> "$work/out/scdet.log"
grep 'shot [0-9]*: frames' "$work/out/scdet.log"
# The closing line counts the frame pairs per path (the GPU check needs "N CUDA ... in place").
grep 'frame pairs scored on cpu: 0 CUDA frame pairs read in place, 64 host frame pairs' "$work/out/scdet.log"
cmp shots "$out" 0,14,36,46 "$corpus"/vmaf/"$ms".shot{0,1,2,3}.vmaf_v0.6.1.full.json

say "shots=auto (the engine's built-in detector)"
out="$work/out/$ms.auto.json"
"$ff" -hide_banner -nostats -loglevel error -i "$ms_dist" -i "$ms_ref" \
  -lavfi "[0:v][1:v]vmafcuda=shots=auto:feature=psnr:log_fmt=json:log_path=$out" -f null -
cmp shots "$out" 0,14,36,46 "$corpus"/vmaf/"$ms".shot{0,1,2,3}.vmaf_v0.6.1.full.json

say "per-frame metadata on the reference passed through"
rocket_ref="$(y4m video/s_rocket_176x144.y4m.zst)"
rocket_dist="$(y4m video/s_rocket_176x144__x264_crf32.y4m.zst)"
meta="$work/out/meta.txt"
rm -f "$meta"
"$ff" -hide_banner -nostats -loglevel error -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v][1:v]vmafcuda,metadata=print:file=$meta" -f null -
python3 - "$meta" "$corpus/vmaf/s_rocket_176x144__x264_crf32.vmaf_v0.6.1.full.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
scores = [float(l.split("=", 1)[1]) for l in lines if l.startswith("lavfi.vmafcuda.score=")]
ref = [f["metrics"]["vmaf"] for f in json.load(open(sys.argv[2]))["frames"]]
assert len(scores) == len(ref), (len(scores), len(ref))
assert all(abs(a - b) <= 5e-7 for a, b in zip(scores, ref)), "metadata scores differ"
assert any(l.startswith("lavfi.vmafcuda.integer_adm2=") for l in lines), "no feature keys"
print(f"ok metadata: {len(scores)} frames carry lavfi.vmafcuda.score (and feature keys)")
PY

say "n_subsample=5"
out="$work/out/subsample.json"
"$ff" -hide_banner -nostats -loglevel error -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v][1:v]vmafcuda=n_subsample=5:feature=psnr:log_fmt=json:log_path=$out" -f null -
cmp subsample "$out" 5 "$corpus/vmaf/s_rocket_176x144__x264_crf32.vmaf_v0.6.1.full.json"

say "other software pixel formats (converted losslessly by FFmpeg: same numbers)"
c10="s_coffee_1280x720_10bit__x265_crf28"
c10_ref="$(y4m video/s_coffee_1280x720_10bit.y4m.zst)"
c10_dist="$(y4m "video/$c10.y4m.zst")"
for case in "nv12 whole $rocket_dist $rocket_ref s_rocket_176x144__x264_crf32" \
            "gray luma $rocket_dist $rocket_ref s_rocket_176x144__x264_crf32" \
            "p010le whole $c10_dist $c10_ref $c10" \
            "gray10le luma $c10_dist $c10_ref $c10"; do
  set -- $case
  out="$work/out/fmt-$1.json"
  # gray: the luma plane itself (swscale would treat gray as full range and rescale it)
  case "$1" in gray*) conv=extractplanes=y ;; *) conv="format=$1" ;; esac
  "$ff" -hide_banner -nostats -loglevel error -i "$3" -i "$4" \
    -lavfi "[0:v]$conv[d];[1:v]$conv[r];[d][r]vmafcuda=feature=psnr:log_fmt=json:log_path=$out" -f null -
  cmp "$2" "$out" "$corpus/vmaf/$5.vmaf_v0.6.1.full.json"
done

say "bad input gives an error exit with a message"
expect_fail() {  # expect_fail WHAT PATTERN ffmpeg-args...
  local what="$1" pattern="$2"; shift 2
  local log="$work/out/fail.log"
  if "$ff" -hide_banner -nostats -loglevel error "$@" -f null - > "$log" 2>&1; then
    echo "FAIL: $what: ffmpeg succeeded" >&2; cat "$log" >&2; exit 1
  fi
  grep -q -e "$pattern" "$log" || { echo "FAIL: $what: no '$pattern' in:" >&2; cat "$log" >&2; exit 1; }
  echo "ok $what: $(grep -m1 -e "$pattern" "$log")"
}
expect_fail "mismatched sizes" "input sizes differ" -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v]crop=160:144:0:0[d];[d][1:v]vmafcuda"
expect_fail "unknown model" "unknown built-in model" -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v][1:v]vmafcuda=model=version=vmaf_v9"
expect_fail "bad shot list" "shots" -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v][1:v]vmafcuda=shots=10|5"
expect_fail "bad rebuild" "rebuild" -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v][1:v]vmafcuda=rebuild=sometimes"
expect_fail "bad log format" "log_fmt" -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v][1:v]vmafcuda=log_fmt=sub"
expect_fail "too small frames" "too small" -i "$rocket_dist" -i "$rocket_ref" \
  -lavfi "[0:v]crop=16:16:0:0[d];[1:v]crop=16:16:0:0[r];[d][r]vmafcuda"

say "ffmpeg-test.sh: all checks passed"
