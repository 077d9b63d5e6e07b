#!/usr/bin/env bash
# The FFmpeg filter on a GPU machine (which has no FFmpeg, no Rust and no network): NVDEC
# decodes the .mp4 files straight into CUDA frames (-hwaccel cuda -hwaccel_output_format cuda),
# and vmafcuda reads them in place, with no scale_cuda and no hwdownload in between.
#
# Here (developer machine, Debian 12):  scripts/gpu-ffmpeg-check.sh build
#   builds a small FFmpeg (Debian's 5.1 source, as ffmpeg-shim/ci/ffmpeg-test.sh gets it) with
#   NVDEC (h264, hevc) and the vmafcuda filter, libvmafcuda linked in statically, stripped: it
#   needs glibc and, at run time, dlopen()s libcuda/libnvcuvid (the driver). Puts it and the
#   test data in .gpu/ffmpeg (git-ignored; name `.gpu/ffmpeg` in the device tool's `carry`),
#   then checks what can be checked without a GPU (software path vs libvmaf, 8- and 10-bit;
#   the concat demuxer feeds every pair; -hwaccel cuda fails cleanly). Needs: the CI's apt
#   packages (nasm, libffmpeg-nvenc-dev, dpkg-dev, zstd) and `pip install imageio-ffmpeg` (its
#   static FFmpeg has libx264/libx265/libvmaf).
# There (GPU machine):                  scripts/gpu-ffmpeg-check.sh run
#   about two minutes; writes logs and JSONs under $OUT (or target/gpu-ffmpeg-check) and prints a
#   summary table last (also $OUT/ffmpeg-summary.txt). Exit status 0 only if every check passed.
#
# Test pairs (both inputs decoded by NVDEC into CUDA frames, nv12 or p010):
#   ms       576x324, 64 frames, 4 shots: the corpus' x264 mp4 vs the reference as lossless HEVC
#            (x265 lossless=1, decodes bit-identical to the corpus y4m) -> libvmaf .full.json, and
#            shots=0|14|36|46 -> the per-shot libvmaf references
#   collage  1920x1080, 5 frames: the corpus' x264 mp4 vs lossless HEVC reference -> .full.json
#   coffee10 1280x720 10-bit, 8 frames: the corpus' x265 Main10 mp4 vs lossless HEVC Main10
#            reference -> .full.json; NVDEC gives p010 (MSB-aligned, interleaved chroma)
#   hd       1920x1080, 64 frames: the multi-shot reference scaled to 1080p, x264 CRF 16
#            ("reference") and CRF 32 ("distorted") mp4, libvmaf reference made with
#            imageio-ffmpeg's static FFmpeg (libvmaf filter; its JSON has 6 decimals); fed 5 and
#            20 times through the concat demuxer for the fps figures (its timestamps run on
#            across the copies, so framesync pairs every frame; -stream_loop restarts them and
#            framesync stops pairing after the first pass)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dest=.gpu/ffmpeg

# Scores printed by libvmaf's JSON writer carry 6 decimals: this is their rounding.
PRINT_TOL=5.000001e-7

configure_flags() { # prefix of the static libvmafcuda
  local prefix=$1
  echo --disable-doc --disable-debug --disable-programs --enable-ffmpeg --disable-everything \
    --disable-autodetect --enable-ffnvcodec --enable-cuda --enable-nvdec \
    --enable-hwaccel=h264_nvdec,hevc_nvdec \
    --enable-decoder=h264,hevc,rawvideo,wrapped_avframe --enable-parser=h264,hevc \
    --enable-demuxer=mov,yuv4mpegpipe,concat --enable-muxer=null,rawvideo \
    --enable-encoder=wrapped_avframe,rawvideo --enable-protocol=file,pipe \
    --enable-filter=vmafcuda,format,scale,null,hwdownload,hwupload_cuda \
    --enable-libvmafcuda --pkg-config-flags=--static --extra-ldflags=-static-libgcc \
    --extra-ldflags=-Wl,--gc-sections \
    "--extra-cflags=-I$prefix/include"
}

# concat_list FILE COUNT: a concat demuxer list naming FILE (an absolute path) COUNT times.
concat_list() {
  local i
  for ((i = 0; i < $2; i++)); do printf "file '%s'\n" "$1"; done
}
# The concat demuxer's input options: absolute paths, packets passed on as they are (no
# h264_mp4toannexb, which this FFmpeg does not have; the decoder keeps the avcC extradata).
CONCAT_IN=(-f concat -safe 0 -auto_convert 0)

# hw_format PIX_FMT: the sw_format of NVDEC's CUDA frames for a stream decoding to PIX_FMT.
hw_format() {
  case $1 in
    yuv420p10le) echo p010le ;;
    *) echo nv12 ;;
  esac
}

static_ffmpeg() {
  python3 -c 'import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())' 2>/dev/null \
    || { echo "no static FFmpeg: pip install imageio-ffmpeg" >&2; exit 1; }
}

build() {
  local work=${CARGO_TARGET_DIR:-target}/ffmpeg-gpu
  local corpus=${VMAFCUDA_CORPUS:-../shared/corpus}
  local src=$work/ffmpeg prefix=$work/static
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  src=$work/ffmpeg prefix=$work/static

  echo "--- libvmafcuda.a (cargo build --release -p vmafcuda-ffi)"
  cargo build --release --locked -p vmafcuda-ffi
  # Only the static library in this prefix, so that -lvmafcuda cannot pick a shared one. Rust's
  # std needs an unwinder: libgcc_eh (static) instead of libgcc_s.
  rm -rf "$prefix" && mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
  cp "${CARGO_TARGET_DIR:-target}/release/libvmafcuda.a" "$prefix/lib/"
  cp ffmpeg-shim/include/vmafcuda.h "$prefix/include/"
  cat >"$prefix/lib/pkgconfig/vmafcuda.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: vmafcuda
Description: vmafcuda, static, for the GPU-machine FFmpeg
Version: 0.1.0
Libs: -L\${libdir} -lvmafcuda
Libs.private: -lgcc_eh -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
EOF

  echo "--- FFmpeg source (Debian's 5.1, as ffmpeg-shim/ci/ffmpeg-test.sh gets it)"
  # shellcheck source=ffmpeg-shim/ci/ffmpeg-source.sh
  . ffmpeg-shim/ci/ffmpeg-source.sh
  # Shares the download with ffmpeg-test.sh.
  ffmpeg_source "${CARGO_TARGET_DIR:-target}/ffmpeg-ci/dl" "$src"
  ffmpeg-shim/ffmpeg/apply.sh "$src" >/dev/null

  echo "--- configure"
  local cfg stamp
  read -r -a cfg <<<"$(configure_flags "$prefix")"
  stamp=$(printf '%s\n' "${cfg[@]}" | sha256sum | cut -c1-16)
  if [[ ! -f $src/ffbuild/config.mak || "$(cat "$src/.vmafcuda-cfg" 2>/dev/null)" != "$stamp" ]]; then
    (cd "$src" && PKG_CONFIG_PATH="$prefix/lib/pkgconfig" ./configure "${cfg[@]}" >"$work/configure.log" 2>&1) \
      || { tail -30 "$src/ffbuild/config.log"; exit 1; }
    echo "$stamp" >"$src/.vmafcuda-cfg"
  fi
  for want in CONFIG_VMAFCUDA_FILTER CONFIG_H264_NVDEC_HWACCEL CONFIG_HEVC_NVDEC_HWACCEL; do
    grep -q "define $want 1" "$src/config_components.h" || { echo "configure: $want is off" >&2; exit 1; }
  done
  for want in CONFIG_CUDA CONFIG_NVDEC; do
    grep -q "define $want 1" "$src/config.h" || { echo "configure: $want is off" >&2; exit 1; }
  done

  echo "--- make -j$(nproc) ffmpeg"
  # The library changes without FFmpeg's make noticing: relink every time.
  rm -f "$src/ffmpeg" "$src/ffmpeg_g"
  make -C "$src" -j"$(nproc)" ffmpeg >"$work/make.log" 2>&1 || { tail -40 "$work/make.log"; exit 1; }
  if grep -A3 'vf_vmafcuda' "$work/make.log" | grep -q 'warning:'; then
    grep -A3 'vf_vmafcuda' "$work/make.log"; echo "vf_vmafcuda.c: compiler warnings" >&2; exit 1
  fi

  rm -rf "$dest" && mkdir -p "$dest/data"
  strip -o "$dest/ffmpeg" "$src/ffmpeg"
  local needed
  needed=$(readelf -d "$dest/ffmpeg" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  echo "ffmpeg: $(du -h "$dest/ffmpeg" | cut -f1), needs: $needed"
  for lib in $needed; do
    case $lib in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libutil.so.*|ld-linux*) ;;
      *) echo "ffmpeg needs $lib, which the GPU machine may not have" >&2; exit 1 ;;
    esac
  done

  echo "--- test data ($dest/data)"
  local sf d=$dest/data tmp=$work/data
  sf=$(static_ffmpeg)
  mkdir -p "$tmp"
  local ms=s_multishot_576x324 col=s_collage_1920x1080 c10=s_coffee_1280x720_10bit
  cp "$corpus/video/${ms}__x264_crf30.mp4" "$d/ms_dist.mp4"
  cp "$corpus/video/${col}__x264_crf23.mp4" "$d/collage_dist.mp4"
  cp "$corpus/video/${c10}__x265_crf28.mp4" "$d/coffee10_dist.mp4"
  cp "$corpus/vmaf/${ms}__x264_crf30.vmaf_v0.6.1.full.json" "$d/ms.libvmaf.json"
  for k in 0 1 2 3; do
    cp "$corpus/vmaf/${ms}__x264_crf30.shot$k.vmaf_v0.6.1.full.json" "$d/ms.shot$k.libvmaf.json"
  done
  cp "$corpus/vmaf/${col}__x264_crf23.vmaf_v0.6.1.full.json" "$d/collage.libvmaf.json"
  cp "$corpus/vmaf/${c10}__x265_crf28.vmaf_v0.6.1.full.json" "$d/coffee10.libvmaf.json"
  for name in $ms $col $c10; do
    [[ -f $tmp/$name.y4m ]] || zstd -q -dc "$corpus/video/$name.y4m.zst" >"$tmp/$name.y4m"
  done
  # References NVDEC can decode: lossless HEVC (4:2:0, 8-bit Main or 10-bit Main10, transquant
  # bypass). Each must decode to the corpus y4m's pixels: checked below against the manifest.
  local pair name src fmt
  for pair in "ms $ms yuv420p" "collage $col yuv420p" "coffee10 $c10 yuv420p10le"; do
    read -r name src fmt <<<"$pair"
    if [[ ! -f $tmp/${name}_ref.mp4 ]]; then
      "$sf" -nostdin -hide_banner -loglevel error -y -i "$tmp/$src.y4m" -c:v libx265 -preset medium \
        -x265-params lossless=1:log-level=error:pools=2 -tag:v hvc1 -pix_fmt "$fmt" -an \
        "$tmp/${name}_ref.tmp.mp4"
      mv "$tmp/${name}_ref.tmp.mp4" "$tmp/${name}_ref.mp4"
    fi
    cp "$tmp/${name}_ref.mp4" "$d/${name}_ref.mp4"
  done
  # 1080p pair for fps: the multi-shot reference scaled up, two x264 encodes of it.
  if [[ ! -f $tmp/hd.libvmaf.json ]]; then
    local role crf
    for pair in "ref 16" "dist 32"; do
      read -r role crf <<<"$pair"
      "$sf" -nostdin -hide_banner -loglevel error -y -i "$tmp/$ms.y4m" -vf scale=1920:1080:flags=lanczos \
        -c:v libx264 -preset medium -crf "$crf" -threads 2 -pix_fmt yuv420p -an "$tmp/hd_$role.mp4"
    done
    "$sf" -nostdin -hide_banner -loglevel error -nostats -i "$tmp/hd_dist.mp4" -i "$tmp/hd_ref.mp4" \
      -lavfi "[0:v][1:v]libvmaf=log_fmt=json:log_path=$tmp/hd.libvmaf.json:n_threads=2" -f null -
  fi
  cp "$tmp/hd_ref.mp4" "$tmp/hd_dist.mp4" "$tmp/hd.libvmaf.json" "$d/"
  chmod -R u+w "$d" # the corpus files are read-only: let the next build replace the copies
  # What each mp4 must decode to (NVDEC is checked against it): "MD5 FILE PIX_FMT" lines, the
  # corpus manifest's md5s (so the lossless references are checked against the y4m's pixels),
  # for the hd pair a decode here.
  python3 - "$corpus/manifest.json" >"$d/md5.txt" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
for name, pair, ref, fmt in (
    ("ms", "s_multishot_576x324__x264_crf30", "s_multishot_576x324", "yuv420p"),
    ("collage", "s_collage_1920x1080__x264_crf23", "s_collage_1920x1080", "yuv420p"),
    ("coffee10", "s_coffee_1280x720_10bit__x265_crf28", "s_coffee_1280x720_10bit", "yuv420p10le"),
):
    print(m["pairs"][pair]["mp4_decoded_rawvideo_md5"], f"{name}_dist.mp4", fmt)
    print(m["references"][ref]["rawvideo_md5"], f"{name}_ref.mp4", fmt)
EOF
  for f in hd_ref.mp4 hd_dist.mp4; do
    echo "$("$sf" -nostdin -loglevel error -i "$d/$f" -f rawvideo -pix_fmt yuv420p - | md5sum | cut -d' ' -f1) $f yuv420p" >>"$d/md5.txt"
  done
  # The GPU run downloads NVDEC's frames as nv12/p010 and converts them with swscale: that
  # conversion must be lossless for its md5 to mean anything, so it is checked here too.
  local md5 f hwfmt got
  while read -r md5 f fmt; do
    hwfmt=$(hw_format "$fmt")
    got=$("$dest/ffmpeg" -nostdin -loglevel error -i "$d/$f" -f rawvideo -pix_fmt "$fmt" - | md5sum | cut -d' ' -f1)
    [[ $got == "$md5" ]] || { echo "$f decodes (software, our FFmpeg) to $got, expected $md5" >&2; exit 1; }
    got=$("$dest/ffmpeg" -nostdin -loglevel error -i "$d/$f" -vf "format=$hwfmt,format=$fmt" -f rawvideo - \
      | md5sum | cut -d' ' -f1)
    [[ $got == "$md5" ]] || { echo "$f via $hwfmt (software, our FFmpeg) gives $got, expected $md5" >&2; exit 1; }
  done <"$d/md5.txt"
  echo "software decode of every mp4 (our FFmpeg) matches md5.txt, also through nv12/p010"
  du -sh "$dest" "$dest/ffmpeg" "$dest/data"

  echo "--- checks without a GPU"
  local here=target/gpu-ffmpeg-check-here
  mkdir -p "$here"
  run_ffmpeg() { "$dest/ffmpeg" -nostdin -hide_banner -nostats "$@"; }
  run_ffmpeg -loglevel info -i "$d/ms_dist.mp4" -i "$d/ms_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cpu:log_fmt=json:log_path=$here/ms.cpu.json" -f null - \
    2>"$here/ms.cpu.log"
  grep -a '64 frame pairs scored on cpu: 0 CUDA frame pairs read in place, 64 host frame pairs' "$here/ms.cpu.log"
  python3 ffmpeg-shim/ci/compare.py --no-psnr whole "$here/ms.cpu.json" "$d/ms.libvmaf.json"
  # The 10-bit pair (software decode gives yuv420p10le), with PSNR: the whole .full.json.
  run_ffmpeg -loglevel info -i "$d/coffee10_dist.mp4" -i "$d/coffee10_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cpu:feature=psnr:log_fmt=json:log_path=$here/coffee10.cpu.json" \
    -f null - 2>"$here/coffee10.cpu.log"
  grep -a '8 frame pairs scored on cpu: 0 CUDA frame pairs read in place, 8 host frame pairs' "$here/coffee10.cpu.log"
  python3 ffmpeg-shim/ci/compare.py whole "$here/coffee10.cpu.json" "$d/coffee10.libvmaf.json"
  run_ffmpeg -loglevel info -i "$d/hd_dist.mp4" -i "$d/hd_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cpu:log_fmt=json:log_path=$here/hd.cpu.json" -f null - \
    2>"$here/hd.cpu.log"
  python3 ffmpeg-shim/ci/compare.py --no-psnr --tol=$PRINT_TOL whole "$here/hd.cpu.json" "$d/hd.libvmaf.json"
  # The fps rows' inputs: the hd pair fed twice through the concat demuxer must give every pair
  # (128), which -stream_loop did not (framesync stopped pairing after the first 64).
  concat_list "$repo/$d/hd_dist.mp4" 2 >"$here/hd_dist.x2.txt"
  concat_list "$repo/$d/hd_ref.mp4" 2 >"$here/hd_ref.x2.txt"
  run_ffmpeg -loglevel info "${CONCAT_IN[@]}" -i "$here/hd_dist.x2.txt" "${CONCAT_IN[@]}" -i "$here/hd_ref.x2.txt" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cpu" -f null - 2>"$here/hd.x2.cpu.log"
  grep -a '128 frame pairs scored on cpu: 0 CUDA frame pairs read in place, 128 host frame pairs' "$here/hd.x2.cpu.log" \
    || { echo "the hd pair fed twice (concat): not 128 pairs scored" >&2; tail -n5 "$here/hd.x2.cpu.log" >&2; exit 1; }
  if ! command -v nvidia-smi >/dev/null; then
    local rc=0
    run_ffmpeg -loglevel error -hwaccel cuda -hwaccel_output_format cuda -i "$d/ms_dist.mp4" \
      -hwaccel cuda -hwaccel_output_format cuda -i "$d/ms_ref.mp4" \
      -lavfi "[0:v][1:v]vmafcuda" -f null - >"$here/nogpu.log" 2>&1 || rc=$?
    if ((rc == 0 || rc >= 128)); then
      echo "-hwaccel cuda without a GPU: exit status $rc (expected an error exit, not a crash)" >&2
      cat "$here/nogpu.log" >&2
      exit 1
    fi
    echo "-hwaccel cuda without a GPU: exit status $rc, says: $(grep -a -m2 -i 'cuda\|device' "$here/nogpu.log" | tr '\n' ' ')"
  fi
  echo "--- build OK: carry $dest ($(du -sh "$dest" | cut -f1))"
}

run() {
  local out=${OUT:-target/gpu-ffmpeg-check}
  local ff=$dest/ffmpeg d=$dest/data
  local hw=(-hwaccel cuda -hwaccel_output_format cuda)
  local rows=() fpsrows=() failed=0
  mkdir -p "$out"
  [[ -x $ff ]] || { echo "$ff missing: run '$0 build' on the developer machine and carry $dest" >&2; exit 1; }
  local gpu=""
  if command -v nvidia-smi >/dev/null; then
    gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n1 || true)
  fi
  "$ff" -hide_banner -hwaccels >"$out/hwaccels.txt" 2>&1 || true

  # ffrun NAME ARGS...: one ffmpeg run, stderr in $out/NAME.log; sets run_name, rc, wall (s),
  # frames (written by the first output), ffps (ffmpeg's own fps), speed, inplace (the filter's
  # closing line).
  local run_name="" rc=0 wall=0 frames=0 ffps="?" speed="?" inplace=""
  ffrun() {
    local t0 t1 ns progress
    run_name=$1
    shift
    rc=0
    t0=$(date +%s%N)
    "$ff" -nostdin -hide_banner -stats -benchmark -loglevel info "$@" >"$out/$run_name.log" 2>&1 || rc=$?
    t1=$(date +%s%N)
    ns=$((t1 - t0))
    wall=$(printf '%d.%03d' $((ns / 1000000000)) $((ns / 1000000 % 1000)))
    progress=$(tr '\r' '\n' <"$out/$run_name.log" | grep -a '^frame=' | tail -n1 || true)
    frames=$(grep -oE 'frame= *[0-9]+' <<<"$progress" | grep -oE '[0-9]+' || echo 0)
    ffps=$(grep -oE 'fps= *[0-9.]+' <<<"$progress" | grep -oE '[0-9.]+$' || echo "?")
    speed=$(grep -oE 'speed= *[0-9.e+]+x' <<<"$progress" | sed 's/speed= *//' || echo "?")
    inplace=$(grep -a -oE '[0-9]+ frame pairs scored on [a-z]+: [0-9]+ CUDA frame pairs read in place, [0-9]+ host frame pairs' \
      "$out/$run_name.log" | tail -n1 || true)
    if ((rc != 0)); then
      echo "ffmpeg run $run_name failed (exit status $rc):" >&2
      grep -a -iE 'error|fail|cannot|not supported|invalid' "$out/$run_name.log" | head -n5 >&2 \
        || tail -n5 "$out/$run_name.log" >&2 || true
    fi
  }
  # check LABEL COMMAND...: a comparison; its last line goes into the summary.
  check() {
    local label=$1 res st=ok
    shift
    res=$("$@" 2>&1) || { st=FAIL; failed=1; }
    rows+=("$(printf '%-4s %-52s %s' "$st" "$label" "$(tail -n1 <<<"$res")")")
  }
  compare() { python3 ffmpeg-shim/ci/compare.py --no-psnr "$@"; }
  # The closing line the filter prints when all N pairs were scored on BACKEND: read in place
  # from CUDA frames, or from host frames.
  line_in_place() { echo "$1 frame pairs scored on cuda: $1 CUDA frame pairs read in place, 0 host frame pairs"; }
  line_host() { echo "$1 frame pairs scored on $2: 0 CUDA frame pairs read in place, $1 host frame pairs"; }
  # all_in_place N: the last run's closing line says that all N pairs were read in place.
  all_in_place() {
    [[ $inplace == "$(line_in_place "$1")" ]] \
      || { echo "expected all $1 pairs in place, got '${inplace:-no closing line}'"; return 1; }
    echo "$inplace"
  }
  ran() { # NAME: fails the check when the run $NAME failed
    ((rc == 0)) || { echo "ffmpeg exit status $rc (see $1.log)"; return 1; }
  }
  md5_is() { # GOT EXPECTED LOG
    [[ $1 == "$2" ]] && { echo "md5 $1 as expected"; return 0; }
    if [[ -z $1 || $1 == d41d8cd98f00b204e9800998ecf8427e ]]; then
      echo "nothing decoded (see $3): $(grep -a -m1 -iE 'error|fail|cannot' "$3" || true)"
    else
      echo "md5 $1, expected $2"
    fi
    return 1
  }

  echo "--- NVDEC output vs the expected decode (md5 of every mp4, hwdownload for this check only)"
  local md5 f fmt hwfmt got
  while read -r md5 f fmt; do
    fmt=${fmt:-yuv420p}
    hwfmt=$(hw_format "$fmt")
    got=$("$ff" -nostdin -loglevel error "${hw[@]}" -i "$d/$f" -vf "hwdownload,format=$hwfmt,format=$fmt" \
      -f rawvideo - 2>"$out/md5-$f.log" | md5sum | cut -d' ' -f1) || true
    check "NVDEC decode of $f ($hwfmt)" md5_is "$got" "$md5" "$out/md5-$f.log"
  done <"$d/md5.txt"

  echo "--- pairs: NVDEC -> vmafcuda in place, vs libvmaf and vs software decode + backend=cpu"
  local pair name n tol ref
  for pair in "ms 64 1e-9" "collage 5 1e-9" "coffee10 8 1e-9" "hd 64 $PRINT_TOL"; do
    read -r name n tol <<<"$pair"
    ref=$d/$name.libvmaf.json
    ffrun "$name.cuda" "${hw[@]}" -i "$d/${name}_dist.mp4" "${hw[@]}" -i "$d/${name}_ref.mp4" \
      -lavfi "[0:v][1:v]vmafcuda=log_fmt=json:log_path=$out/$name.cuda.json" -f null -
    check "$name: nvdec->vmafcuda ran" ran "$name.cuda"
    check "$name: every pair read in place" all_in_place "$n"
    check "$name: nvdec->vmafcuda vs libvmaf (tol $tol)" compare --tol="$tol" whole "$out/$name.cuda.json" "$ref"
    ffrun "$name.cpu" -i "$d/${name}_dist.mp4" -i "$d/${name}_ref.mp4" \
      -lavfi "[0:v][1:v]vmafcuda=backend=cpu:log_fmt=json:log_path=$out/$name.cpu.json" -f null -
    check "$name: software decode, backend=cpu vs libvmaf" compare --tol="$tol" whole "$out/$name.cpu.json" "$ref"
    check "$name: nvdec in place == sw decode + cpu" compare same "$out/$name.cuda.json" "$out/$name.cpu.json"
  done
  # 10-bit with PSNR: p010's interleaved, MSB-aligned chroma read in place too.
  ffrun coffee10.psnr "${hw[@]}" -i "$d/coffee10_dist.mp4" "${hw[@]}" -i "$d/coffee10_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=feature=psnr:log_fmt=json:log_path=$out/coffee10.psnr.json" -f null -
  check "coffee10: feature=psnr, every pair read in place" all_in_place 8
  check "coffee10: feature=psnr vs libvmaf, psnr_y/cb/cr too" \
    python3 ffmpeg-shim/ci/compare.py whole "$out/coffee10.psnr.json" "$d/coffee10.libvmaf.json"
  ffrun ms.shots "${hw[@]}" -i "$d/ms_dist.mp4" "${hw[@]}" -i "$d/ms_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=shots=0|14|36|46:log_fmt=json:log_path=$out/ms.shots.json" -f null -
  check "ms: shots=0|14|36|46, in place" all_in_place 64
  check "ms: shots vs fresh per-shot libvmaf runs" compare shots "$out/ms.shots.json" 0,14,36,46 "$d"/ms.shot{0,1,2,3}.libvmaf.json
  # The same decoded frames brought to host memory first (what the filter avoids): same numbers.
  ffrun ms.download "${hw[@]}" -i "$d/ms_dist.mp4" "${hw[@]}" -i "$d/ms_ref.mp4" \
    -lavfi "[0:v]hwdownload,format=nv12[d];[1:v]hwdownload,format=nv12[r];[d][r]vmafcuda=backend=cuda:log_fmt=json:log_path=$out/ms.download.json" -f null -
  check "ms: nvdec+hwdownload (host frames) == in place" compare same "$out/ms.download.json" "$out/ms.cuda.json"
  # examples/ffmpeg-cuda.sh's mixed case: the reference decoded on the CPU and uploaded
  # (hwupload_cuda) while NVDEC decodes the distorted stream. FFmpeg 5.1 gives the two their own
  # CUDA contexts here (measured on the H100, 2026-11-23), which the filter cannot read across:
  # it must refuse with its message, not crash or score garbage.
  ffrun ms.mixed -init_hw_device cuda=gpu -filter_hw_device gpu \
    -hwaccel cuda -hwaccel_device gpu -hwaccel_output_format cuda -i "$d/ms_dist.mp4" -i "$d/ms_ref.mp4" \
    -lavfi "[1:v]format=nv12,hwupload_cuda[r];[0:v][r]vmafcuda=backend=cuda:shots=0|14|36|46:log_fmt=json:log_path=$out/ms.mixed.json" -f null -
  mixed_refused() {
    if ! grep -aq "live in different CUDA contexts" "$out/ms.mixed.log" || ((rc == 0)); then
      echo "expected the different-contexts error (rc=$rc)"
      return 1
    fi
    echo "refused with: $(grep -ao 'the distorted and reference CUDA frames live in different CUDA contexts' "$out/ms.mixed.log" | head -n1)"
  }
  check "ms: nvdec + hwupload_cuda: clear refusal" mixed_refused

  # fps: the hd pair fed REPS times through the concat demuxer, whose timestamps run on across
  # the copies, so that framesync pairs every frame (-stream_loop restarts them: framesync then
  # stops pairing after the first pass). Every row must have handled every frame it was fed.
  echo "--- fps: 1080p, the hd pair fed 5 and 20 times (concat demuxer)"
  local reps
  for reps in 5 20; do
    concat_list "$repo/$d/hd_dist.mp4" "$reps" >"$out/hd_dist.x$reps.txt"
    concat_list "$repo/$d/hd_ref.mp4" "$reps" >"$out/hd_ref.x$reps.txt"
  done
  local hd_args=()
  hd_in() { # REPS [INPUT OPTIONS...]: sets hd_args to the distorted and reference inputs
    local reps=$1
    shift
    hd_args=("$@" "${CONCAT_IN[@]}" -i "$out/hd_dist.x$reps.txt" "$@" "${CONCAT_IN[@]}" -i "$out/hd_ref.x$reps.txt")
  }
  rate() { awk -v f="$1" -v t="$2" 'BEGIN { if (t > 0) printf "%.1f", f / t; else print "?" }'; }
  local row_ok=0
  # fps_row LABEL FED WANT: the last run as a row; ok only if ffmpeg succeeded and WANT holds:
  # WANT is the closing line the filter must print (every fed pair scored, on that path), or
  # "decoded" (no filter: the first output must have written FED frames).
  fps_row() {
    local label=$1 fed=$2 want=$3 st=ok note=${inplace:-no closing line}
    if ((rc != 0)); then
      st=FAIL note="ffmpeg exit status $rc (see $run_name.log)"
    elif [[ $want == decoded ]]; then
      note="$frames of $fed frames decoded"
      ((frames == fed)) || st=FAIL
    elif [[ $inplace != "$want" ]]; then
      st=FAIL note="expected '$want', got '${inplace:-no closing line}'"
    fi
    row_ok=1
    [[ $st == ok ]] || { row_ok=0; failed=1; }
    fpsrows+=("$(printf '%-4s %-44s %6s %8s %8s %10s %8s  %s' "$st" "$label" "$frames" "$wall" \
      "$(rate "$frames" "$wall")" "$ffps" "$speed" "$note")")
  }
  local t_short=0 f_short=0 ok_short=0 st dt
  for reps in 5 20; do
    n=$((64 * reps))
    hd_in "$reps" "${hw[@]}"
    ffrun "fps.inplace.$n" "${hd_args[@]}" \
      -lavfi "[0:v][1:v]vmafcuda=log_fmt=json:log_path=$out/fps.inplace.$n.json" -f null -
    fps_row "nvdec -> vmafcuda in place" "$n" "$(line_in_place "$n")"
    if ((reps == 5)); then
      t_short=$wall f_short=$frames ok_short=$row_ok
    else
      st=FAIL
      ((ok_short && row_ok)) && st=ok
      dt=$(awk -v a="$wall" -v b="$t_short" 'BEGIN { printf "%.3f", a - b }')
      fpsrows+=("$(printf '%-4s %-44s %6s %8s %8s' "$st" "  in place, steady (1280 - 320 frames)" \
        "$((frames - f_short))" "$dt" "$(rate "$((frames - f_short))" "$dt")")")
    fi
  done
  hd_in 20 "${hw[@]}"
  ffrun fps.download.1280 "${hd_args[@]}" \
    -lavfi "[0:v]hwdownload,format=nv12[d];[1:v]hwdownload,format=nv12[r];[d][r]vmafcuda=backend=cuda" -f null -
  fps_row "nvdec -> hwdownload -> vmafcuda (cuda)" 1280 "$(line_host 1280 cuda)"
  # (-f null cannot take CUDA frames: the frames are brought to host memory, so this is an
  # upper bound of what decoding alone costs.)
  ffrun fps.decode.1280 "${hd_args[@]}" \
    -map 0:v -vf hwdownload,format=nv12 -f null - -map 1:v -vf hwdownload,format=nv12 -f null -
  fps_row "nvdec + hwdownload, both streams, no scoring" 1280 decoded
  hd_in 20
  ffrun fps.swcuda.1280 "${hd_args[@]}" -lavfi "[0:v][1:v]vmafcuda=backend=cuda" -f null -
  fps_row "sw decode -> vmafcuda (cuda, upload)" 1280 "$(line_host 1280 cuda)"
  ffrun fps.cpu.1280 "${hd_args[@]}" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cpu:log_fmt=json:log_path=$out/fps.cpu.1280.json" -f null -
  fps_row "sw decode -> vmafcuda (cpu)" 1280 "$(line_host 1280 cpu)"
  check "hd x20 (concat): nvdec in place == sw decode + cpu" \
    compare same "$out/fps.inplace.1280.json" "$out/fps.cpu.1280.json"

  {
    echo "== FFmpeg (Debian 5.1 + vmafcuda, $(du -h "$ff" | cut -f1) static) on: ${gpu:-no nvidia-smi}"
    echo "command: ffmpeg ${hw[*]} -i dist.mp4 ${hw[*]} -i ref.mp4 -lavfi '[0:v][1:v]vmafcuda=log_fmt=json:log_path=X.json' -f null -"
    printf '%s\n' "${rows[@]}"
    echo "-- fps at 1920x1080, the hd pair fed N times (concat demuxer): frames / wall time incl. start-up; ffmpeg's own fps and speed"
    printf '%-4s %-44s %6s %8s %8s %10s %8s  %s\n' "" mode frames wall_s fps ffmpeg_fps speed "closing line of the filter"
    printf '%s\n' "${fpsrows[@]}"
    if ((failed)); then echo "FFMPEG GPU CHECK FAILED"; else echo "FFMPEG GPU CHECK OK"; fi
  } | tee "$out/ffmpeg-summary.txt"
  return "$failed"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 build|run" >&2; exit 2 ;;
esac
