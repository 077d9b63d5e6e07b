#!/usr/bin/env bash
# What sets a small frame's pace. 576x324 device frames run at one of two rates that a run
# keeps for a while and then may leave (on an H200 with pairs about 30,000 or 43,000-45,000 fps,
# and 176x144 runs at the same two: BENCHMARKS.md, stop 53), so the cause is per launch or per
# frame, on the GPU's side or the host's. This runs the device-frame bench with
# VMAFCUDA_BENCH_TRACE under several host placements and prints, per run, the rate of every
# 1,000 frames with the host's median time per submission, and the GPU's clocks, P-state and
# PCIe link sampled meanwhile (every 100 ms), so that a pace can be matched to a condition.
#
#   scripts/gpu-pace.sh [VMAFCUDA_BINARY]     (default .gpu/bin.vmafcuda: scripts/gpu-check.sh
#                                             build makes it; carry it to the device)
#
# Conditions, each run in every round: the default placement; one core (taskset -c 0); the SMT
# threads of cpu 0's core, where it has more than one; the first cpu of the last NUMA node; and
# pairs off (VMAFCUDA_PAIRS=0). Environment: PACE_ROUNDS (default 2), PACE_SIZE (default
# 576x324), PACE_FRAMES (default 8000; one run each).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.gpu/bin.vmafcuda}
[[ -x $bin ]] || { echo "gpu-pace: no executable $bin" >&2; exit 2; }
rounds=${PACE_ROUNDS:-2}
size=${PACE_SIZE:-576x324}
frames=${PACE_FRAMES:-8000}

echo "== host"
lscpu | grep -E '^(Model name|Socket|Core|Thread|NUMA node|CPU\(s\))' || true
siblings=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo 0)
nodes=(/sys/devices/system/node/node*)
far=$(sed 's/[,-].*//' "${nodes[-1]}/cpulist" 2>/dev/null || echo 0)
echo "cpu 0's SMT threads: $siblings; first cpu of the last NUMA node: $far"

# name|command prefix
conditions=("default|" "one core|taskset -c 0")
[[ $siblings != 0 ]] && conditions+=("cpu 0's SMT threads|taskset -c $siblings")
[[ $far != 0 ]] && conditions+=("last NUMA node|taskset -c $far")
conditions+=("pairs off|env VMAFCUDA_PAIRS=0")

samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
for r in $(seq 1 "$rounds"); do
  for c in "${conditions[@]}"; do
    name=${c%%|*}
    read -r -a prefix <<<"${c#*|}"
    sampler=""
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate,pcie.link.gen.current \
        --format=csv,noheader -lms 100 >"$samples" 2>/dev/null &
      sampler=$!
    fi
    out=$(VMAFCUDA_BENCH_TRACE=1000 "${prefix[@]}" "$bin" bench --backend cuda --cpu-frames 1 \
      --stage-frames 0 --runs 1 --size "$size" --frames "$frames" 2>&1 || true)
    [[ -n $sampler ]] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null || true
    # "trace: frames a..=b: R fps, submit median M ms" -> R/M
    chunks=$(awk '/^trace:/ {printf "%s/%s ", $4, $8}' <<<"$out")
    row=$(awk '/cuda device/ {for (i = 1; i < NF; i++) if ($i ~ /\./) { print $(i + 1); exit }}' <<<"$out")
    clocks=$(sort "$samples" | uniq -c | sort -rn | head -3 | awk '{$1 = $1 "x"; print}' | paste -sd';' -)
    echo "round $r, $name: ${row:-no row} fps"
    echo "  per 1,000 frames (fps/submit ms): ${chunks:--}"
    echo "  GPU (sm MHz, mem MHz, P-state, PCIe gen; most frequent): ${clocks:--}"
  done
done
