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
#   then checks what can be checked without a GPU (software path vs libvmaf, -hwaccel cuda
#   fails cleanly). Needs: the CI's apt packages (nasm, libffmpeg-nvenc-dev, dpkg-dev, zstd)
#   and `pip install imageio-ffmpeg` (its static FFmpeg has libx264/libx265/libvmaf).
# There (GPU machine):                  scripts/gpu-ffmpeg-check.sh run
#   about a minute; writes logs and JSONs under $OUT (or target/gpu-ffmpeg-check) and prints a
#   summary table last (also $OUT/ffmpeg-summary.txt). Exit status 0 only if every check passed.
#
# Test pairs (both inputs decoded by NVDEC into CUDA frames, nv12):
#   ms      576x324, 64 frames, 4 shots: the corpus' x264 mp4 vs the reference as lossless HEVC
#           (x265 lossless=1, decodes bit-identical to the corpus y4m) -> libvmaf .full.json, and
#           shots=0|14|36|46 -> the per-shot libvmaf references
#   collage 1920x1080, 5 frames: the corpus' x264 mp4 vs lossless HEVC reference -> .full.json
#   hd      1920x1080, 64 frames: the multi-shot reference scaled to 1080p, x264 CRF 16
#           ("reference") and CRF 32 ("distorted") mp4, libvmaf reference made with
#           imageio-ffmpeg's static FFmpeg (libvmaf filter; its JSON has 6 decimals); looped
#           (-stream_loop) for the fps figures
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
    --enable-demuxer=mov,yuv4mpegpipe --enable-muxer=null,rawvideo \
    --enable-encoder=wrapped_avframe,rawvideo --enable-protocol=file,pipe \
    --enable-filter=vmafcuda,format,scale,null,hwdownload,hwupload_cuda \
    --enable-libvmafcuda --pkg-config-flags=--static --extra-ldflags=-static-libgcc \
    --extra-ldflags=-Wl,--gc-sections \
    "--extra-cflags=-I$prefix/include"
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
  local ms=s_multishot_576x324 col=s_collage_1920x1080
  cp "$corpus/video/${ms}__x264_crf30.mp4" "$d/ms_dist.mp4"
  cp "$corpus/video/${col}__x264_crf23.mp4" "$d/collage_dist.mp4"
  cp "$corpus/vmaf/${ms}__x264_crf30.vmaf_v0.6.1.full.json" "$d/ms.libvmaf.json"
  for k in 0 1 2 3; do
    cp "$corpus/vmaf/${ms}__x264_crf30.shot$k.vmaf_v0.6.1.full.json" "$d/ms.shot$k.libvmaf.json"
  done
  cp "$corpus/vmaf/${col}__x264_crf23.vmaf_v0.6.1.full.json" "$d/collage.libvmaf.json"
  for name in $ms $col; do
    [[ -f $tmp/$name.y4m ]] || zstd -q -dc "$corpus/video/$name.y4m.zst" >"$tmp/$name.y4m"
  done
  # References NVDEC can decode: lossless HEVC (4:2:0 8-bit, Main profile, transquant bypass).
  for pair in "ms $ms" "collage $col"; do
    set -- $pair
    if [[ ! -f $tmp/$1_ref.mp4 ]]; then
      "$sf" -nostdin -hide_banner -loglevel error -y -i "$tmp/$2.y4m" -c:v libx265 -preset medium \
        -x265-params lossless=1:log-level=error:pools=2 -tag:v hvc1 -an "$tmp/$1_ref.tmp.mp4"
      mv "$tmp/$1_ref.tmp.mp4" "$tmp/$1_ref.mp4"
    fi
    cp "$tmp/$1_ref.mp4" "$d/$1_ref.mp4"
  done
  # 1080p pair for fps: the multi-shot reference scaled up, two x264 encodes of it.
  if [[ ! -f $tmp/hd.libvmaf.json ]]; then
    for q in "ref 16" "dist 32"; do
      set -- $q
      "$sf" -nostdin -hide_banner -loglevel error -y -i "$tmp/$ms.y4m" -vf scale=1920:1080:flags=lanczos \
        -c:v libx264 -preset medium -crf "$2" -threads 2 -pix_fmt yuv420p -an "$tmp/hd_$1.mp4"
    done
    "$sf" -nostdin -hide_banner -loglevel error -nostats -i "$tmp/hd_dist.mp4" -i "$tmp/hd_ref.mp4" \
      -lavfi "[0:v][1:v]libvmaf=log_fmt=json:log_path=$tmp/hd.libvmaf.json:n_threads=2" -f null -
  fi
  cp "$tmp/hd_ref.mp4" "$tmp/hd_dist.mp4" "$tmp/hd.libvmaf.json" "$d/"
  chmod -R u+w "$d" # the corpus files are read-only: let the next build replace the copies
  # What each mp4 must decode to (NVDEC is checked against it): the corpus manifest's md5s,
  # and for the lossless references also a decode here.
  python3 - "$corpus/manifest.json" >"$d/md5.txt" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(m["pairs"]["s_multishot_576x324__x264_crf30"]["mp4_decoded_rawvideo_md5"], "ms_dist.mp4")
print(m["references"]["s_multishot_576x324"]["rawvideo_md5"], "ms_ref.mp4")
print(m["pairs"]["s_collage_1920x1080__x264_crf23"]["mp4_decoded_rawvideo_md5"], "collage_dist.mp4")
print(m["references"]["s_collage_1920x1080"]["rawvideo_md5"], "collage_ref.mp4")
EOF
  for f in hd_ref.mp4 hd_dist.mp4; do
    echo "$("$sf" -nostdin -loglevel error -i "$d/$f" -f rawvideo -pix_fmt yuv420p - | md5sum | cut -d' ' -f1) $f" >>"$d/md5.txt"
  done
  local md5 f got
  while read -r md5 f; do
    got=$("$dest/ffmpeg" -nostdin -loglevel error -i "$d/$f" -f rawvideo -pix_fmt yuv420p - | md5sum | cut -d' ' -f1)
    [[ $got == "$md5" ]] || { echo "$f decodes (software, our FFmpeg) to $got, expected $md5" >&2; exit 1; }
  done <"$d/md5.txt"
  echo "software decode of every mp4 (our FFmpeg) matches md5.txt"
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
  run_ffmpeg -loglevel info -i "$d/hd_dist.mp4" -i "$d/hd_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cpu:log_fmt=json:log_path=$here/hd.cpu.json" -f null - \
    2>"$here/hd.cpu.log"
  python3 ffmpeg-shim/ci/compare.py --no-psnr --tol=$PRINT_TOL whole "$here/hd.cpu.json" "$d/hd.libvmaf.json"
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

  # ffmpeg NAME ARGS...: one run, stderr in $out/NAME.log; sets rc, wall (s), frames, ffps
  # (ffmpeg's own fps), speed, inplace (the filter's closing line).
  local rc wall frames ffps speed inplace
  ffrun() {
    local name=$1 t0 t1
    shift
    rc=0
    t0=$(date +%s%N)
    "$ff" -nostdin -hide_banner -stats -benchmark -loglevel info "$@" >"$out/$name.log" 2>&1 || rc=$?
    t1=$(date +%s%N)
    wall=$(python3 -c "print(f'{($t1 - $t0) / 1e9:.3f}')")
    local progress
    progress=$(tr '\r' '\n' <"$out/$name.log" | grep -a '^frame=' | tail -n1 || true)
    frames=$(grep -oE 'frame= *[0-9]+' <<<"$progress" | grep -oE '[0-9]+' || echo 0)
    ffps=$(grep -oE 'fps= *[0-9.]+' <<<"$progress" | grep -oE '[0-9.]+$' || echo ?)
    speed=$(grep -oE 'speed= *[0-9.e+]+x' <<<"$progress" | sed 's/speed= *//' || echo ?)
    inplace=$(grep -a -oE '[0-9]+ frame pairs scored on [a-z]+: [0-9]+ CUDA frame pairs read in place, [0-9]+ host frame pairs' \
      "$out/$name.log" | tail -n1 || true)
    if ((rc != 0)); then
      echo "ffmpeg run $name failed (exit status $rc):" >&2
      grep -a -iE 'error|fail|cannot|not supported|invalid' "$out/$name.log" | head -n5 >&2 || tail -n5 "$out/$name.log" >&2
    fi
  }
  # check LABEL COMMAND...: a comparison; its last line goes into the summary.
  check() {
    local label=$1 res st=ok
    shift
    res=$("$@" 2>&1) || { st=FAIL; failed=1; }
    rows+=("$(printf '%-4s %-44s %s' "$st" "$label" "$(tail -n1 <<<"$res")")")
  }
  compare() { python3 ffmpeg-shim/ci/compare.py --no-psnr "$@"; }
  # The run's closing line must say that every pair was read in place from CUDA frames.
  all_in_place() {
    local n
    n=$(grep -oE '^[0-9]+' <<<"$inplace" || true)
    [[ -n $n && $n -gt 0 && $inplace == "$n frame pairs scored on cuda: $n CUDA frame pairs read in place, 0 host frame pairs" ]] \
      || { echo "not all in place: '${inplace:-no closing line}'"; return 1; }
    echo "$inplace"
  }
  ran() { # NAME: fails the check when the run $NAME failed
    ((rc == 0)) || { echo "ffmpeg exit status $rc (see $1.log)"; return 1; }
  }

  md5_is() {
    [[ $1 == "$2" ]] || { echo "md5 ${1:-(nothing decoded)}, expected $2"; return 1; }
    echo "md5 $1 as expected"
  }

  echo "--- NVDEC output vs the expected decode (md5 of every mp4, hwdownload for this check only)"
  local md5 f got
  while read -r md5 f; do
    got=$("$ff" -nostdin -loglevel error "${hw[@]}" -i "$d/$f" -vf hwdownload,format=nv12,format=yuv420p \
      -f rawvideo - 2>"$out/md5-$f.log" | md5sum | cut -d' ' -f1)
    check "NVDEC decode of $f" md5_is "$got" "$md5"
  done <"$d/md5.txt"

  echo "--- pairs: NVDEC -> vmafcuda in place, vs libvmaf and vs software decode + backend=cpu"
  local pair name tol ref
  for pair in "ms 1e-9" "collage 1e-9" "hd $PRINT_TOL"; do
    set -- $pair
    name=$1 tol=$2 ref=$d/$1.libvmaf.json
    ffrun "$name.cuda" "${hw[@]}" -i "$d/${name}_dist.mp4" "${hw[@]}" -i "$d/${name}_ref.mp4" \
      -lavfi "[0:v][1:v]vmafcuda=log_fmt=json:log_path=$out/$name.cuda.json" -f null -
    check "$name: nvdec->vmafcuda ran" ran "$name.cuda"
    check "$name: every pair read in place" all_in_place
    check "$name: nvdec->vmafcuda vs libvmaf (tol $tol)" compare --tol="$tol" whole "$out/$name.cuda.json" "$ref"
    ffrun "$name.cpu" -i "$d/${name}_dist.mp4" -i "$d/${name}_ref.mp4" \
      -lavfi "[0:v][1:v]vmafcuda=backend=cpu:log_fmt=json:log_path=$out/$name.cpu.json" -f null -
    check "$name: software decode, backend=cpu vs libvmaf" compare --tol="$tol" whole "$out/$name.cpu.json" "$ref"
    check "$name: nvdec in place == sw decode + cpu" compare same "$out/$name.cuda.json" "$out/$name.cpu.json"
  done
  ffrun ms.shots "${hw[@]}" -i "$d/ms_dist.mp4" "${hw[@]}" -i "$d/ms_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=shots=0|14|36|46:log_fmt=json:log_path=$out/ms.shots.json" -f null -
  check "ms: shots=0|14|36|46, in place" all_in_place
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
    grep -aq "live in different CUDA contexts" "$out/ms.mixed.log" && ((rc != 0)) \
      || { echo "expected the different-contexts error (rc=$rc)"; return 1; }
    echo "refused with: $(grep -ao 'the distorted and reference CUDA frames live in different CUDA contexts' "$out/ms.mixed.log" | head -n1)"
  }
  check "ms: nvdec + hwupload_cuda: clear refusal" mixed_refused

  echo "--- fps: 1080p, both streams looped (-stream_loop)"
  fps_row() { # MODE-LABEL
    fpsrows+=("$(printf '%-40s %6s %8s %10s %10s %8s  %s' "$1" "$frames" "$wall" \
      "$(python3 -c "print(f'{$frames / $wall:.1f}')")" "$ffps" "$speed" "${inplace:-rc=$rc}")")
  }
  local loops n t_small f_small
  for loops in 4 19; do
    n=$((64 * (loops + 1)))
    ffrun "fps.inplace.$n" -stream_loop "$loops" "${hw[@]}" -i "$d/hd_dist.mp4" -stream_loop "$loops" "${hw[@]}" -i "$d/hd_ref.mp4" \
      -lavfi "[0:v][1:v]vmafcuda=log_fmt=json:log_path=$out/fps.inplace.$n.json" -f null -
    fps_row "nvdec -> vmafcuda in place"
    if ((loops == 4)); then
      t_small=$wall f_small=$frames
    else
      fpsrows+=("$(printf '%-40s %6s %8s %10s' "  in place, steady (1280 - 320 frames)" "$((frames - f_small))" \
        "$(python3 -c "print(f'{$wall - $t_small:.3f}')")" \
        "$(python3 -c "print(f'{($frames - $f_small) / max($wall - $t_small, 1e-9):.1f}')")")")
    fi
  done
  ffrun fps.download.1280 -stream_loop 19 "${hw[@]}" -i "$d/hd_dist.mp4" -stream_loop 19 "${hw[@]}" -i "$d/hd_ref.mp4" \
    -lavfi "[0:v]hwdownload,format=nv12[d];[1:v]hwdownload,format=nv12[r];[d][r]vmafcuda=backend=cuda" -f null -
  fps_row "nvdec -> hwdownload -> vmafcuda (cuda)"
  # (-f null cannot take CUDA frames: the frames are brought to host memory, so this is an
  # upper bound of what decoding alone costs.)
  ffrun fps.decode.1280 -stream_loop 19 "${hw[@]}" -i "$d/hd_dist.mp4" -stream_loop 19 "${hw[@]}" -i "$d/hd_ref.mp4" \
    -map 0:v -vf hwdownload,format=nv12 -f null - -map 1:v -vf hwdownload,format=nv12 -f null -
  fps_row "nvdec + hwdownload, both streams, no scoring"
  ffrun fps.swcuda.320 -stream_loop 4 -i "$d/hd_dist.mp4" -stream_loop 4 -i "$d/hd_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cuda" -f null -
  fps_row "sw decode -> vmafcuda (cuda, upload)"
  ffrun fps.cpu.320 -stream_loop 4 -i "$d/hd_dist.mp4" -stream_loop 4 -i "$d/hd_ref.mp4" \
    -lavfi "[0:v][1:v]vmafcuda=backend=cpu:log_fmt=json:log_path=$out/fps.cpu.320.json" -f null -
  fps_row "sw decode -> vmafcuda (cpu)"
  check "hd x5 loop: nvdec in place == sw decode + cpu" compare same "$out/fps.inplace.320.json" "$out/fps.cpu.320.json"

  {
    echo "== FFmpeg (Debian 5.1 + vmafcuda, $(du -h "$ff" | cut -f1) static) on: ${gpu:-no nvidia-smi}"
    echo "command: ffmpeg ${hw[*]} -i dist.mp4 ${hw[*]} -i ref.mp4 -lavfi '[0:v][1:v]vmafcuda=log_fmt=json:log_path=X.json' -f null -"
    printf '%s\n' "${rows[@]}"
    echo "-- fps at 1920x1080 (frames / wall time incl. start-up; ffmpeg's own fps and speed)"
    printf '%-40s %6s %8s %10s %10s %8s  %s\n' mode frames wall_s fps ffmpeg_fps speed "closing line of the filter"
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
