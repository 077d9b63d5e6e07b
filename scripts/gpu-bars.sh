#!/usr/bin/env bash
# Issue 19's throughput bars on a GPU machine, in alternated rounds, with a summary: each case's
# median and range of rounds, its bar, and 1080p 10-bit against 8-bit per round and on the
# medians (the 8-bit row sits at one of two levels, about 4% apart on an H200, so one round says
# little). Every figure is `vmafcuda bench --backend cuda --cpu-frames 1 --stage-frames 0 --runs
# 3` (each a median of 3 runs); the rows read are `cuda device`, `cuda pinned`, `cuda x16` and
# `cuda x64`.
#
#   scripts/gpu-bars.sh [VMAFCUDA_BINARY]     (default .gpu/bin.vmafcuda: scripts/gpu-check.sh
#                                             build makes it; carry it to the device)
#
# Environment: BARS_ROUNDS (default 3; a round should take about a minute on an H200, estimated
# from stop 52's device calls, not yet timed); BARS_CASES (a space list from: 1080p 1080p10 4k
# 576 16x1080p 64x576; default all); BARS_DRY=1 runs the script's own logic on the CPU path
# with tiny frame counts (no bar is meaningful then: a check of the script on a machine
# without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.gpu/bin.vmafcuda}
rounds=${BARS_ROUNDS:-3}
cases=${BARS_CASES:-"1080p 1080p10 4k 576 16x1080p 64x576"}
[[ -x $bin ]] || { echo "gpu-bars: no executable $bin" >&2; exit 2; }

backend=cuda dev="cuda device" pin="cuda pinned" xs="cuda x" div=1
if [[ ${BARS_DRY:-} == 1 ]]; then
  backend=cpu dev=" cpu " pin=" cpu " xs=" cpu " div=300
fi
n() { echo $(($1 / div > 1 ? $1 / div : 2)); }
bench() { "$bin" bench --backend "$backend" --cpu-frames 1 --stage-frames 0 --runs 3 "$@" 2>&1; }
# The fps of the first row matching $1 (the field after ms/frame, the first with a point);
# nothing where no row matches.
fps() {
  awk -v pat="$1" 'index($0, pat) {for (i = 1; i < NF; i++) if ($i ~ /\./) { print $(i + 1); exit }}'
}

values=$(mktemp)
trap 'rm -f "$values"' EXIT
for r in $(seq 1 "$rounds"); do
  line="round $r:"
  for c in $cases; do
    case $c in
      1080p)
        out=$(bench --bpc 8 --size 1920x1080 --frames "$(n 3000)")
        v=$(fps "$dev" <<<"$out")
        p=$(fps "$pin" <<<"$out")
        echo "pinned $r ${p:--}" >>"$values"
        ;;
      1080p10) v=$(bench --bpc 10 --size 1920x1080 --frames "$(n 3000)" | fps "$dev") ;;
      4k) v=$(bench --bpc 8 --size 3840x2160 --frames "$(n 600)" | fps "$dev") ;;
      576) v=$(bench --bpc 8 --size 576x324 --frames "$(n 6000)" | fps "$dev") ;;
      16x1080p) v=$(bench --bpc 8 --size 1920x1080 --frames "$(n 1000)" --scorers 16 | fps "${xs}16") ;;
      64x576) v=$(bench --bpc 8 --size 576x324 --frames "$(n 500)" --scorers 64 | fps "${xs}64") ;;
      *) echo "gpu-bars: unknown case $c" >&2; exit 2 ;;
    esac
    echo "$c $r ${v:--}" >>"$values"
    line+=" $c ${v:--}"
  done
  echo "$line"
done

echo
echo "case        median    range (rounds)          bar      verdict"
# Case $1's measured values, ascending.
sorted() { awk -v c="$1" '$1 == c && $3 != "-" {print $3}' "$values" | sort -g; }
median() { sorted "$1" | awk '{a[NR] = $1} END {if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
range() { sorted "$1" | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "%s-%s (%d)", lo, hi, NR}'; }
for c in 1080p 1080p10 4k 576 pinned 16x1080p 64x576; do
  grep -q "^$c " "$values" || continue
  case $c in
    1080p | 16x1080p) bar=12000 ;;
    4k) bar=3500 ;;
    576 | 64x576) bar=30000 ;;
    pinned) bar=5000 ;;
    1080p10) bar="" ;;
  esac
  m=$(median "$c")
  if [[ -z $m ]]; then
    printf '%-10s %8s\n' "$c" "no row"
  elif [[ -n $bar ]]; then
    verdict=$(awk -v m="$m" -v b="$bar" 'BEGIN {print (m >= b ? "met" : "NOT met")}')
    printf '%-10s %8.0f    %-22s  >= %-6s %s\n' "$c" "$m" "$(range "$c")" "$bar" "$verdict"
  else
    printf '%-10s %8.0f    %-22s  (ratio below)\n' "$c" "$m" "$(range "$c")"
  fi
done
if grep -q "^1080p10 " "$values" && grep -q "^1080p " "$values"; then
  echo
  echo "1080p 10-bit against 8-bit (bar: within 10%, i.e. a ratio of at least 0.900):"
  # (An awk function: the ratio as a percentage behind, or ahead.)
  gap='function gap(x) { return x <= 1 ? sprintf("%.1f%% behind", 100 * (1 - x)) : sprintf("%.1f%% ahead", 100 * (x - 1)) }'
  for r in $(seq 1 "$rounds"); do
    a=$(awk -v r="$r" '$1 == "1080p10" && $2 == r {print $3}' "$values")
    b=$(awk -v r="$r" '$1 == "1080p" && $2 == r {print $3}' "$values")
    awk -v r="$r" -v a="$a" -v b="$b" 'BEGIN {if (a != "-" && b != "-" && b > 0) printf "  round %d: %.3f (%s)\n", r, a / b, gap(a / b)} '"$gap"''
  done
  awk -v a="$(median 1080p10)" -v b="$(median 1080p)" 'BEGIN {if (b > 0) printf "  medians: %.3f (%s): %s\n", a / b, gap(a / b), (a / b >= 0.9 ? "met" : "NOT met")} '"$gap"''
fi
