#!/usr/bin/env bash
# What recorded frames replaying their slot's graph (VMAFCUDA_GRAPH_REPLAY=1, off by default:
# src/cuda/graph.rs) do on a GPU, in one device call of about 400 s on an H200 (estimated
# from stop 54's parts; not yet run as a whole):
#   1. the CUDA suites with replay on (every score against the CPU engine and libvmaf);
#   2. the device-frame bench at 576x324 and 176x144, replay on and off alternated, then the
#      trace's count of replayed and captured graph frames (is replay taken?) and the engine's
#      host time per frame and stage (VMAFCUDA_HOST_TIMING=1), replay on and off;
#   3. the rebuild suite's bytes in use with replay on, at 3 times its usual counts: does the
#      growth seen at stop 54 (BENCHMARKS.md) level off, and does it stay under the suite's
#      bar (8 B per rebuild in the smaller half of each run)?
#
#   scripts/gpu-check.sh build      (here; GPU_CHECK_TESTS="cuda_scorer cuda_adm cuda_vif
#                                   cuda_motion cuda_psnr rebuild" is enough)
#   scripts/gpu-replay.sh           (there, carrying .gpu/bin.tar.gz, .gpu/bin.vmafcuda and
#                                   .gpu/corpus)
#
# Environment: REPLAY_ROUNDS (default 3) bench rounds; REPLAY_REBUILDS (default 30000) the
# rebuild suite's count (its 1080p run is a tenth of it); REPLAY_STEPS (default "suites bench
# rebuild") the steps to run. Logs go under $OUT (or target/gpu-replay).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-target/gpu-replay}
mkdir -p "$out"
[[ -d .gpu/bin ]] || tar -C .gpu -xzf .gpu/bin.tar.gz
bin=.gpu/bin.vmafcuda
export VMAFCUDA_CORPUS=${VMAFCUDA_CORPUS:-$PWD/.gpu/corpus} CARGO_MANIFEST_DIR=$PWD
steps=${REPLAY_STEPS:-"suites bench rebuild"}

result() { grep -a '^test result' "$1" | tail -1 || echo "no result"; }

if [[ $steps == *suites* ]]; then
  echo "== suites, VMAFCUDA_GRAPH_REPLAY=1"
  for t in cuda_scorer cuda_adm cuda_vif cuda_motion cuda_psnr; do
    [[ -x .gpu/bin/$t ]] || continue
    rc=0
    VMAFCUDA_GRAPH_REPLAY=1 timeout 250 ".gpu/bin/$t" --test-threads=2 >"$out/$t.log" 2>&1 || rc=$?
    echo "$t rc=$rc: $(result "$out/$t.log")"
  done
fi

if [[ $steps == *bench* ]]; then
  echo "== device-frame bench, replay on and off alternated (fps, median of 3)"
  fps() {
    "$@" bench --backend cuda --cpu-frames 1 --stage-frames 0 --runs 3 --frames 8000 2>&1 |
      awk '/cuda device/ {for (i = 1; i < NF; i++) if ($i ~ /\./) { print $(i + 1); exit }}'
  }
  for r in $(seq 1 "${REPLAY_ROUNDS:-3}"); do
    for size in 576x324 176x144; do
      on=$(VMAFCUDA_GRAPH_REPLAY=1 fps "$bin" --size "$size")
      off=$(fps "$bin" --size "$size")
      echo "round $r, $size: replay on ${on:-?}, off ${off:-?}"
    done
  done
  echo "== host time per frame and stage (VMAFCUDA_HOST_TIMING=1), replay on, then off"
  for replay in 1 0; do
    VMAFCUDA_GRAPH_REPLAY=$replay VMAFCUDA_HOST_TIMING=1 VMAFCUDA_BENCH_TRACE=4000 "$bin" bench \
      --backend cuda --cpu-frames 1 --stage-frames 0 --runs 1 --size 576x324 --frames 8000 2>&1 |
      grep -a '^trace:' || true
  done
fi

if [[ $steps == *rebuild* && -x .gpu/bin/rebuild ]]; then
  echo "== rebuild suite, replay on, VMAFCUDA_REBUILDS=${REPLAY_REBUILDS:-30000}"
  rc=0
  VMAFCUDA_GRAPH_REPLAY=1 VMAFCUDA_REBUILDS=${REPLAY_REBUILDS:-30000} timeout 300 \
    .gpu/bin/rebuild --test-threads=1 --nocapture cuda_rebuilds >"$out/rebuild.log" 2>&1 || rc=$?
  echo "rebuild rc=$rc (124: the time limit, after the runs printed below)"
  grep -a "rebuilds cuda\|grow" "$out/rebuild.log" || true
fi
