#!/usr/bin/env bash
# The GStreamer element on a GPU machine (which has no GStreamer and no Rust): CUDA memory from
# nvh264dec and cudaupload scored in place, compared with the CPU path and libvmaf.
#
# Here (developer machine):  scripts/gpu-gst-check.sh build
#   builds libgstvmafcuda.so (release), bundles this machine's GStreamer runtime with
#   ../shared/device/bundle-gst.sh into .gpu/gst, and copies the corpus files the run needs
#   (the multi-shot pair: distorted mp4, libvmaf JSONs; the reference y4m with GST_CHECK_REF=copy)
#   into .gpu/gstdata.
# There (GPU machine):       scripts/gpu-gst-check.sh run
#   runs the pipelines, writes results under $OUT, prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
  cargo build --release -p gst-vmafcuda
  local so="${CARGO_TARGET_DIR:-target}/release/libgstvmafcuda.so"
  rm -rf .gpu/gstplugin .gpu/gstdata && mkdir -p .gpu/gstplugin .gpu/gstdata
  objcopy --strip-debug "$so" .gpu/gstplugin/libgstvmafcuda.so
  # The element's Harness tests, for the device runs (1,000 rebuilds on CUDA, real OOM).
  local tests
  tests=$(cargo test --release -p gst-vmafcuda --test vmafcuda --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "vmafcuda" and "test" in m["target"]["kind"]:
        print(m["executable"])' | tail -1)
  objcopy --strip-debug "$tests" .gpu/gstplugin/element-tests
  # The soak test (live feeds, a shot every 3 s, dropped frames), run for GST_CHECK_SOAK_HOURS.
  tests=$(cargo test --release -p gst-vmafcuda --test soak --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "soak":
        print(m["executable"])' | tail -1)
  objcopy --strip-debug "$tests" .gpu/gstplugin/soak-test
  rm -rf .gpu/gst
  "${BUNDLE_GST:-../shared/device/bundle-gst.sh}" .gpu/gst .gpu/gstplugin/libgstvmafcuda.so .gpu/gstplugin/element-tests .gpu/gstplugin/soak-test
  local corpus=${VMAFCUDA_CORPUS:-../shared/corpus}
  # The reference y4m (18 MB) is not copied when the CUDA tests run first in the same call:
  # they decompress it into target/corpus-cache (GST_CHECK_REF=copy copies it anyway).
  if [[ ${GST_CHECK_REF:-cache} == copy ]]; then
    zstd -q -dc "$corpus/video/s_multishot_576x324.y4m.zst" >.gpu/gstdata/ref.y4m
  fi
  cp "$corpus/video/s_multishot_576x324__x264_crf30.mp4" .gpu/gstdata/dist.mp4
  cp "$corpus/vmaf/s_multishot_576x324__x264_crf30.vmaf_v0.6.1.full.json" .gpu/gstdata/whole.json
  for k in 0 1 2 3; do
    cp "$corpus/vmaf/s_multishot_576x324__x264_crf30.shot$k.vmaf_v0.6.1.full.json" .gpu/gstdata/shot$k.json
  done
  # A 1080p H.264 pair for the NVDEC pipeline rate (made by scripts/gpu-ffmpeg-check.sh build).
  if [[ -f .gpu/ffmpeg/data/hd_ref.mp4 ]]; then
    cp .gpu/ffmpeg/data/hd_ref.mp4 .gpu/ffmpeg/data/hd_dist.mp4 .gpu/gstdata/
  fi
  du -sh .gpu/gst .gpu/gstplugin .gpu/gstdata
}

run() {
  local out=${OUT:-target/gpu-gst-check}
  mkdir -p "$out"
  # shellcheck disable=SC1091
  . .gpu/gst/env.sh
  export GST_PLUGIN_PATH=$PWD/.gpu/gstplugin
  local d=.gpu/gstdata rows=()
  if [[ ! -f $d/ref.y4m ]]; then
    ln -sf "$PWD/target/corpus-cache/s_multishot_576x324.y4m" "$d/ref.y4m"
  fi
  [[ -s $d/ref.y4m ]] || { echo "no reference y4m: run the CUDA tests first or GST_CHECK_REF=copy" >&2; exit 1; }
  gst-inspect-1.0 vmafcuda >"$out/inspect.txt" 2>&1 || true
  gst-inspect-1.0 nvh264dec >/dev/null 2>&1 || echo "nvh264dec missing" >&2

  pipeline() { # name, extra element properties, reference branch tail[, distorted branch tail]
    local name=$1 props=$2 refconv=$3 distconv=${4:-}
    local t0 t1 rc=0
    t0=$(date +%s%N)
    GST_DEBUG=vmafcuda:5 gst-launch-1.0 -m -v vmafcuda name=v $props results-filename="$out/$name.json" ! fakesink \
      filesrc location=$d/ref.y4m ! y4mdec ! $refconv ! v.ref_sink \
      filesrc location=$d/dist.mp4 ! qtdemux ! h264parse ! nvh264dec ${distconv:+! $distconv} ! v.dist_sink \
      >"$out/$name.log" 2>&1 || rc=$?
    t1=$(date +%s%N)
    local inplace
    inplace=$(grep -aoE "frames-in-place=\(guint64\)[0-9]+" "$out/$name.log" | grep -oE "[0-9]+$" | tail -1 || true)
    echo "${inplace:-0}" >"$out/$name.inplace"
    rows+=("$(printf '%-28s rc=%s %6sms frames in place: %s' "$name" "$rc" "$(((t1 - t0) / 1000000))" "${inplace:-?}")")
  }
  # Reference uploaded by cudaupload, distorted decoded by NVDEC: both in CUDA memory.
  pipeline cuda_whole "backend=cuda" "cudaupload ! video/x-raw(memory:CUDAMemory)"
  pipeline cuda_shots "backend=cuda shot-boundaries=0,14,36,46" "cudaupload ! video/x-raw(memory:CUDAMemory)"
  # Same frames, scored on the CPU (CUDA memory mapped to system memory).
  pipeline cpu_whole "backend=cpu" "cudaupload ! video/x-raw(memory:CUDAMemory)"
  # psnr on NV12 CUDA memory (interleaved chroma, both pads), and P010 (MSB-aligned 10-bit,
  # uploaded as P010): read in place, equal to the CPU path on the same frames.
  local nv12="videoconvert ! video/x-raw,format=NV12 ! cudaupload ! video/x-raw(memory:CUDAMemory)"
  local p010="videoconvert ! video/x-raw,format=P010_10LE ! cudaupload ! video/x-raw(memory:CUDAMemory),format=P010_10LE"
  # (GStreamer 1.22 has no cudaconvert: the decoded NV12 goes to host memory, P010 and back.)
  local p010_dist="cudadownload ! videoconvert ! video/x-raw,format=P010_10LE ! cudaupload ! video/x-raw(memory:CUDAMemory),format=P010_10LE"
  pipeline cuda_nv12_psnr "backend=cuda psnr=true" "$nv12"
  pipeline cpu_nv12_psnr "backend=cpu psnr=true" "$nv12"
  pipeline cuda_p010_psnr "backend=cuda psnr=true" "$p010" "$p010_dist"
  pipeline cpu_p010_psnr "backend=cpu psnr=true" "$p010" "$p010_dist"

  # Eight elements in one pipeline on one GstCudaContext, fed by tees of the same two streams.
  local multi=() rc=0
  for i in 0 1 2 3 4 5 6 7; do
    multi+=(vmafcuda name=m$i backend=cuda results-filename="$out/multi$i.json" ! fakesink
      rt. ! queue ! m$i.ref_sink dt. ! queue ! m$i.dist_sink)
  done
  GST_DEBUG=vmafcuda:4 gst-launch-1.0 -m \
    filesrc location=$d/ref.y4m ! y4mdec ! cudaupload ! "video/x-raw(memory:CUDAMemory)" ! tee name=rt \
    filesrc location=$d/dist.mp4 ! qtdemux ! h264parse ! nvh264dec ! tee name=dt \
    "${multi[@]}" >"$out/multi.log" 2>&1 || rc=$?
  rows+=("$(printf '8 elements, one context: rc=%s, frames in place per element: %s' "$rc" \
    "$(grep -aoE "frames-in-place=\(guint64\)[0-9]+" "$out/multi.log" | grep -oE "[0-9]+$" | tr '\n' ' ')")")

  python3 - "$out" "$d" <<'EOF' | tee "$out/compare.txt"
import json, sys
out, d = sys.argv[1], sys.argv[2]
def frames(path):
    return json.load(open(path))["frames"]
def compare(label, ours, ref, offset=0):
    worst, n = 0.0, 0
    for f in ref:
        g = ours[f["frameNum"] + offset]["metrics"]
        for k, v in f["metrics"].items():
            if k.startswith("psnr") and k not in g:
                continue  # the element runs without psnr here
            worst = max(worst, abs(g[k] - v)); n += 1
    print(f"{label}: {len(ref)} frames, {n} values, worst |diff| vs reference {worst:.3g}")
    return worst
ok = True
cuda, cpu = frames(f"{out}/cuda_whole.json"), frames(f"{out}/cpu_whole.json")
same = all(a["metrics"] == b["metrics"] for a, b in zip(cuda, cpu)) and len(cuda) == len(cpu)
print(f"element CUDA == element CPU, bit for bit: {same} ({len(cuda)} frames)")
ok &= same
ok &= compare("element CUDA whole clip vs libvmaf", cuda, frames(f"{d}/whole.json")) <= 1e-9
shots = frames(f"{out}/cuda_shots.json")
for k, start in enumerate([0, 14, 36, 46]):
    ok &= compare(f"element CUDA shot {k} vs fresh libvmaf run", shots, frames(f"{d}/shot{k}.json"), start) <= 1e-9
for fmt in ["nv12_psnr", "p010_psnr"]:
    g, c = frames(f"{out}/cuda_{fmt}.json"), frames(f"{out}/cpu_{fmt}.json")
    same = len(g) == len(c) == 64 and all(a["metrics"] == b["metrics"] for a, b in zip(g, c))
    same &= all("psnr_cb" in f["metrics"] for f in g)
    inplace = int(open(f"{out}/cuda_{fmt}.inplace").read())
    print(f"{fmt}: element CUDA == element CPU, bit for bit, chroma PSNR included: {same}; "
          f"{inplace} of {len(g)} frame pairs read in place")
    ok &= same and inplace == len(g)
ok &= compare("element CUDA NV12 + psnr vs libvmaf", frames(f"{out}/cuda_nv12_psnr.json"),
              frames(f"{d}/whole.json")) <= 1e-9
for i in range(8):
    m = frames(f"{out}/multi{i}.json")
    same = len(m) == len(cuda) and all(a["metrics"] == b["metrics"] for a, b in zip(m, cuda))
    ok &= same
    if not same:
        print(f"element {i} of 8 differs from the single element")
print("8 elements on one context identical to the single element:", ok)
print("GST CHECK", "OK" if ok else "FAILED")
EOF

  # Throughput at 1080p: two synthetic streams uploaded to CUDA memory, scored in place.
  local n=1200 t0 t1 rc=0
  t0=$(date +%s%N)
  gst-launch-1.0 -m vmafcuda name=v backend=cuda ! fakesink \
    videotestsrc num-buffers=$n pattern=solid-color foreground-color=0xff808080 ! video/x-raw,format=NV12,width=1920,height=1080 ! cudaupload ! "video/x-raw(memory:CUDAMemory)" ! v.ref_sink \
    videotestsrc num-buffers=$n pattern=solid-color foreground-color=0xff606060 ! video/x-raw,format=NV12,width=1920,height=1080 ! cudaupload ! "video/x-raw(memory:CUDAMemory)" ! v.dist_sink \
    >"$out/fps1080.log" 2>&1 || rc=$?
  t1=$(date +%s%N)
  rows+=("$(printf '1080p videotestsrc!cudaupload x2: rc=%s %s frames in %sms = %s fps (frames in place: %s)' "$rc" "$n" "$(((t1 - t0) / 1000000))" \
    "$(python3 -c "print(round($n / (($t1 - $t0) / 1e9), 1))")" \
    "$(grep -aoE "frames-in-place=\(guint64\)[0-9]+" "$out/fps1080.log" | grep -oE "[0-9]+$" | tail -1)")")
  # The same sources without the element: what the sources themselves cost.
  t0=$(date +%s%N)
  gst-launch-1.0 -q videotestsrc num-buffers=$n pattern=solid-color foreground-color=0xff808080 ! video/x-raw,format=NV12,width=1920,height=1080 ! cudaupload ! fakesink \
    >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  rows+=("$(printf '1080p videotestsrc!cudaupload alone (one stream): %sms' "$(((t1 - t0) / 1000000))")")

  # 1080p H.264, both streams decoded by NVDEC into CUDA memory and scored in place, against
  # the two decoders alone (the same pipeline with fakesinks): does the element keep up?
  if [[ -f $d/hd_ref.mp4 ]]; then
    local loops=${GST_CHECK_HD_LOOPS:-8} hd
    hd() { # source branch: decode file $1 (64 frames) $loops times back to back
      local f=$1
      printf 'concat name=c%s ' "$2"
      for _ in $(seq "$loops"); do printf 'filesrc location=%s ! qtdemux ! h264parse ! c%s. ' "$f" "$2"; done
    }
    t0=$(date +%s%N); rc=0
    # shellcheck disable=SC2046
    gst-launch-1.0 -m vmafcuda name=v backend=cuda ! fakesink \
      $(hd $d/hd_ref.mp4 r) cr. ! nvh264dec ! "video/x-raw(memory:CUDAMemory)" ! v.ref_sink \
      $(hd $d/hd_dist.mp4 d) cd. ! nvh264dec ! "video/x-raw(memory:CUDAMemory)" ! v.dist_sink \
      >"$out/hd-element.log" 2>&1 || rc=$?
    t1=$(date +%s%N)
    local frames=$((64 * loops))
    rows+=("$(printf '1080p nvh264dec x2 -> vmafcuda: rc=%s %s frames in %sms = %s fps (frames in place: %s)' "$rc" "$frames" "$(((t1 - t0) / 1000000))" \
      "$(python3 -c "print(round($frames / (($t1 - $t0) / 1e9), 1))")" \
      "$(grep -aoE "frames-in-place=\(guint64\)[0-9]+" "$out/hd-element.log" | grep -oE "[0-9]+$" | tail -1)")")
    t0=$(date +%s%N); rc=0
    # shellcheck disable=SC2046
    gst-launch-1.0 -q \
      $(hd $d/hd_ref.mp4 r) cr. ! nvh264dec ! "video/x-raw(memory:CUDAMemory)" ! fakesink sync=false \
      $(hd $d/hd_dist.mp4 d) cd. ! nvh264dec ! "video/x-raw(memory:CUDAMemory)" ! fakesink sync=false \
      >"$out/hd-decoders.log" 2>&1 || rc=$?
    t1=$(date +%s%N)
    rows+=("$(printf '1080p nvh264dec x2 alone (fakesinks): rc=%s %s frame pairs in %sms = %s fps' "$rc" "$frames" "$(((t1 - t0) / 1000000))" \
      "$(python3 -c "print(round($frames / (($t1 - $t0) / 1e9), 1))")")")
  fi

  if [[ -n ${GST_CHECK_SOAK_HOURS:-} && -x .gpu/gstplugin/soak-test ]]; then
    rc=0
    # backend=cuda: the soak's day on the GPU (constant memory: RSS slope <= 1 kB per stream
    # hour from 24 h up).
    VMAFCUDA_SOAK_BACKEND=cuda VMAFCUDA_SOAK_HOURS=$GST_CHECK_SOAK_HOURS env -u GST_PLUGIN_PATH .gpu/gstplugin/soak-test --nocapture --test-threads=1 \
      >"$out/soak.log" 2>&1 || rc=$?
    rows+=("$(printf 'soak %s h: rc=%s %s' "$GST_CHECK_SOAK_HOURS" "$rc" "$(grep -a "soak:" "$out/soak.log" | tail -1)")")
  fi

  # The element's Harness tests on the GPU: 1,000 shot rebuilds with backend=cuda (no error,
  # no RSS growth), and real out-of-memory (backend=auto warns and scores on the CPU,
  # backend=cuda errors out).
  if [[ -x .gpu/gstplugin/element-tests ]]; then
    local t rc
    for t in a_thousand_shot_rebuilds real_out_of_memory state_cycles_share; do
      rc=0
      t0=$(date +%s%N)
      VMAFCUDA_TEST_BACKEND=cuda VMAFCUDA_CORPUS=${VMAFCUDA_CORPUS:-$PWD/.gpu/corpus} \
        env -u GST_PLUGIN_PATH .gpu/gstplugin/element-tests --ignored --test-threads=1 --nocapture "$t" \
        >"$out/element-test-$t.log" 2>&1 || rc=$?
      t1=$(date +%s%N)
      rows+=("$(printf 'element test %-26s rc=%s %6sms %s' "$t" "$rc" "$(((t1 - t0) / 1000000))" \
        "$(grep -aoE "(1000 rebuilds.*|real OOM.*|[0-9]+ state cycles.*|skipping.*)" "$out/element-test-$t.log" | head -1)")")
    done
  fi

  {
    echo "== GStreamer GPU check"
    printf '%s\n' "${rows[@]}"
    cat "$out/compare.txt"
  } | tee "$out/summary.txt"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 build|run" >&2; exit 2 ;;
esac
