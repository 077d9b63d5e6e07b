#!/usr/bin/env bash
# Nsight Compute figures for one kernel under two settings of an environment variable, side by
# side: time, warp instructions, issue-slot use, occupancy, stall reasons per issue and
# shared-memory bank conflicts (how BENCHMARKS.md's VIF tensor-core table was measured).
#
# On the GPU machine, after `scripts/gpu-check.sh build` here (carry .gpu/bin.vmafcuda):
#   scripts/gpu-ncu.sh                      # vif_scale0_u8*, VMAFCUDA_VIF_MMA=0 against =1, 1080p 8-bit
#   NCU_KERNEL=regex:adm_ NCU_ENV=VMAFCUDA_CUDA_GRAPHS NCU_VALUES="0 0" scripts/gpu-ncu.sh
#
# Each setting profiles NCU_COUNT launches after skipping NCU_SKIP (graphs off, so every kernel
# is its own launch) of `vmafcuda bench` on device frames; the table shows the first launch
# of each. CSVs go to $OUT (or target/gpu-ncu). `scripts/gpu-ncu.sh table DIR` prints the
# table again from DIR's CSVs.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-target/gpu-ncu}
env_name=${NCU_ENV:-VMAFCUDA_VIF_MMA}
read -r -a values <<<"${NCU_VALUES:-0 1}"
kernel=${NCU_KERNEL:-regex:vif_scale0_u8}
size=${NCU_SIZE:-1920x1080}
bpc=${NCU_BPC:-8}
skip=${NCU_SKIP:-30}
count=${NCU_COUNT:-3}
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
for s in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait not_selected dispatch_stall; do
  metrics+=",smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done

table() { # dir value...
  python3 - "$@" <<'PY'
import csv, sys
d, values = sys.argv[1], sys.argv[2:]
cols = []
for v in values:
    rows = list(csv.reader(open(f"{d}/ncu_{v}.csv")))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    names, first = rows[head], rows[head + 2]
    cols.append(dict(zip(names, first)))
print(f"{'metric':72s}" + "".join(f"{v:>16s}" for v in values))
keep = ("gpu__time_duration.sum", "inst_executed.sum", "issue_active.avg", "warps_active.avg",
        "bank_conflicts_pipe_lsu_mem_shared.sum", "stalled")
for k in cols[0]:
    if k.endswith((".max", ".min")) or not any(s in k for s in keep):
        continue
    print(f"{k[:72]:72s}" + "".join(f"{c.get(k, ''):>16s}" for c in cols))
PY
}

if [[ ${1:-} == table ]]; then
  shift
  dir=$1
  shift
  table "$dir" "${@:-${values[@]}}"
  exit
fi

ncu=/usr/local/cuda/bin/ncu
[[ -x $ncu ]] || ncu=$(command -v ncu) || { echo "no ncu on this machine" >&2; exit 1; }
[[ -x .gpu/bin.vmafcuda ]] || { echo ".gpu/bin.vmafcuda missing: run 'scripts/gpu-check.sh build' and carry it" >&2; exit 1; }
mkdir -p "$out"
for v in "${values[@]}"; do
  echo "== $env_name=$v: ncu $kernel, $size $bpc-bit" >&2
  env "$env_name=$v" VMAFCUDA_CUDA_GRAPHS=0 timeout 300 "$ncu" --kernel-name "$kernel" --launch-skip "$skip" \
    --launch-count "$count" --metrics "$metrics" --csv --page raw \
    .gpu/bin.vmafcuda bench --backend cuda --bpc "$bpc" --size "$size" --frames 60 --cpu-frames 1 \
    --stage-frames 0 --runs 1 >"$out/ncu_$v.csv" 2>"$out/ncu_$v.err"
done
table "$out" "${values[@]}" | tee "$out/table.txt"
