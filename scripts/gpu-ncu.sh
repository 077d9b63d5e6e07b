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
#
#   scripts/gpu-ncu.sh kernels              # every kernel of a frame, one row each (default setting)
#
# profiles NCU_COUNT (default 60) launches of every kernel after NCU_SKIP (default 300) and
# prints one row per kernel: launches seen, median time, warp instructions, issue-slot use,
# occupancy, registers, shared memory and the two largest stall reasons. `scripts/gpu-ncu.sh
# kernels-table DIR` prints it again from DIR/ncu_kernels.csv.
#
#   scripts/gpu-ncu.sh lines KERNEL         # (GPU machine) per-instruction counts of one launch
#   scripts/gpu-ncu.sh lines-table KERNEL DIR   # (here) the same by source line
#
# `lines` profiles one launch of KERNEL (after NCU_SKIP, default 20) with ncu's SourceCounters
# section and writes $out/lines_KERNEL.csv: every SASS instruction with its executed count and
# warp-stall samples. `lines-table` (on the developer machine, where the pinned nvcc is)
# compiles the kernel's source with -lineinfo for NCU_ARCH (default sm_90, the H100), whose SASS
# is the image's, and prints the source lines with the most instructions and stall samples, then
# the opcode mix (how BENCHMARKS.md's stall analyses of 2026-11-28 were made).
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
metrics+=,launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic
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

kernels_table() { # csv
  python3 - "$1" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names = rows[head]
by = {}
for r in rows[head + 2:]:
    if len(r) == len(names):
        m = dict(zip(names, r))
        by.setdefault(m["Kernel Name"], []).append(m)
def num(m, k):
    try:
        return float(m.get(k, "").replace(",", ""))
    except ValueError:
        return float("nan")
def med(ms, k):
    return statistics.median(num(m, k) for m in ms)
stall = [k for k in names if k.startswith("smsp__average_warps_issue_stalled_") and k.endswith(".ratio")]
print(f"{'kernel':28s} {'n':>3s} {'us':>8s} {'Minstr':>8s} {'issue%':>7s} {'warps%':>7s} {'regs':>5s} {'smem':>6s} {'block':>12s} {'grid':>14s}  top stalls (warps per issue)")
total = 0.0
for name, ms in sorted(by.items(), key=lambda kv: -med(kv[1], "gpu__time_duration.sum")):
    t = med(ms, "gpu__time_duration.sum") / 1e3  # ns -> us
    total += t
    smem = med(ms, "launch__shared_mem_per_block_static") + med(ms, "launch__shared_mem_per_block_dynamic")
    top = sorted(((med(ms, k), k) for k in stall), reverse=True)[:2]
    tops = ", ".join(f"{k.split('stalled_')[1].split('_per_issue')[0]} {v:.2f}" for v, k in top)
    print(f"{name[:28]:28s} {len(ms):3d} {t:8.1f} {med(ms, 'smsp__inst_executed.sum') / 1e6:8.2f} "
          f"{med(ms, 'smsp__issue_active.avg.pct_of_peak_sustained_active'):7.1f} "
          f"{med(ms, 'sm__warps_active.avg.pct_of_peak_sustained_active'):7.1f} "
          f"{med(ms, 'launch__registers_per_thread'):5.0f} {smem:6.0f} {ms[0]['Block Size']:>12s} {ms[0]['Grid Size']:>14s}  {tops}")
print(f"{'sum of the medians':28s} {'':3s} {total:8.1f}")
PY
}

if [[ ${1:-} == kernels-table ]]; then
  kernels_table "$2/ncu_kernels.csv"
  exit
fi

if [[ ${1:-} == lines-table ]]; then
  name=$2 dir=$3
  # (the name may start a line of its own: `extern "C" __global__ void __launch_bounds__(..)`
  # on the line before)
  src=$(grep -lE "(void.*\b|^)${name}\(" kernels/*.cu | head -1)
  [[ -n $src ]] || { echo "no kernel named $name in kernels/*.cu" >&2; exit 1; }
  cu13=${CARGO_TARGET_DIR:-target}/cuda-toolchain/lib/python3.11/site-packages/nvidia/cu13/bin
  [[ -x $cu13/nvcc ]] || { echo "no pinned nvcc: run scripts/build-kernels.sh first" >&2; exit 1; }
  sass=$(mktemp)
  trap 'rm -f "$sass" "$sass.cubin"' EXIT
  "$cu13/nvcc" -cubin -arch="${NCU_ARCH:-sm_90}" -O3 -std=c++17 -Xptxas=-O3 -lineinfo -o "$sass.cubin" "$src"
  "$cu13/nvdisasm" -g -c "$sass.cubin" >"$sass"
  python3 - "$sass" "$name" "$dir/lines_$name.csv" "$src" <<'PY'
import collections, csv, re, sys
sass, kern, csv_path, src = sys.argv[1:5]
mine, cur, line = [], None, None
for l in open(sass):
    m = re.search(r"\.section\s+\.text\.(\w+)", l)
    if m:
        cur = m.group(1)
    # (lines of CUDA's headers count for the kernel source's line that called them)
    m = re.search(r'## File "(.*?)", line (\d+)', l)
    if m and m.group(1).endswith("/" + src.split("/")[-1]):
        line = int(m.group(2))
    m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(\S.*?);", l)
    if m and cur == kern:
        mine.append((line, m.group(1)))
rows = list(csv.reader(open(csv_path)))
head = next(i for i, r in enumerate(rows) if "Instructions Executed" in r)
names = rows[head]
ie, ss = names.index("Instructions Executed"), names.index("Warp Stall Sampling (All Samples)")
dev = [r for r in rows[head + 1:] if r and r[0].startswith("0x")]
if len(dev) != len(mine):
    sys.exit(f"{len(dev)} instructions profiled, {len(mine)} in this build: not the image's SASS")
num = lambda v: int(v.replace(",", "") or 0)
per, smp, ops = collections.Counter(), collections.Counter(), collections.Counter()
for r, (ln, ins) in zip(dev, mine):
    per[ln] += num(r[ie])
    smp[ln] += num(r[ss])
    t = ins.split()
    ops[(t[1] if t[0].startswith("@") else t[0]).split(".")[0]] += num(r[ie])
tot, stot = sum(per.values()), max(sum(smp.values()), 1)
text = open(src).read().split("\n")
print(f"{kern}: {tot / 1e6:.2f} M warp instructions, {stot} stall samples")
print(f"{'line':>5s} {'instr':>7s} {'share':>6s} {'stalls':>7s}  source")
for ln in sorted(set(per) | set(smp), key=lambda k: -(per[k] / tot + smp[k] / stot))[:40]:
    code = text[ln - 1].strip()[:80] if ln else ""
    print(f"{ln or 0:5d} {per[ln] / 1e6:6.3f}M {100 * per[ln] / tot:5.1f}% {100 * smp[ln] / stot:6.1f}%  {code}")
print(" ".join(f"{o}:{n / 1e6:.2f}M" for o, n in ops.most_common(20)))
PY
  exit
fi

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
# What every mode profiles: `vmafcuda bench` on device frames (run with graphs off, so every
# kernel is its own launch).
bench=(.gpu/bin.vmafcuda bench --backend cuda --bpc "$bpc" --size "$size" --frames 60 --cpu-frames 1
  --stage-frames 0 --runs 1)
# ncu over the bench: profile NAME KERNEL SKIP COUNT SECONDS [VAR=VALUE ...] writes
# $out/ncu_NAME.csv (and .err).
profile() {
  local name=$1 kern=$2 from=$3 launches=$4 limit=$5
  shift 5
  env "$@" VMAFCUDA_CUDA_GRAPHS=0 timeout "$limit" "$ncu" --kernel-name "$kern" --launch-skip "$from" \
    --launch-count "$launches" --metrics "$metrics" --csv --page raw \
    "${bench[@]}" >"$out/ncu_$name.csv" 2>"$out/ncu_$name.err"
}
if [[ ${1:-} == lines ]]; then
  name=$2
  echo "== $name: $size $bpc-bit, SourceCounters of launch ${NCU_SKIP:-20}" >&2
  env VMAFCUDA_CUDA_GRAPHS=0 timeout 300 "$ncu" --kernel-name "$name" --launch-skip "${NCU_SKIP:-20}" \
    --launch-count 1 --section SourceCounters -f -o "$out/lines_$name" \
    "${bench[@]}" >"$out/lines_$name.log" 2>&1
  "$ncu" -i "$out/lines_$name.ncu-rep" --page source --print-source sass --csv >"$out/lines_$name.csv"
  rm -f "$out/lines_$name.ncu-rep"
  echo "$out/lines_$name.csv: $(wc -l <"$out/lines_$name.csv") rows (scripts/gpu-ncu.sh lines-table $name DIR, here)" >&2
  exit
fi
if [[ ${1:-} == kernels ]]; then
  echo "== every kernel: $size $bpc-bit, launches ${NCU_SKIP:-300}.. (+${NCU_COUNT:-60})" >&2
  profile kernels regex:. "${NCU_SKIP:-300}" "${NCU_COUNT:-60}" 500
  kernels_table "$out/ncu_kernels.csv" | tee "$out/kernels.txt"
  exit
fi
for v in "${values[@]}"; do
  echo "== $env_name=$v: ncu $kernel, $size $bpc-bit" >&2
  profile "$v" "$kernel" "$skip" "$count" 300 "$env_name=$v"
done
table "$out" "${values[@]}" | tee "$out/table.txt"
