#!/usr/bin/env bash
# Leak checks of the CPU path under valgrind (CI): the CLI, and a GStreamer pipeline with a
# shot boundary at every frame (the session is torn down and rebuilt each time). Fails on any
# definite or indirect leak not in tests/valgrind/glib-gst.supp (one-off GLib start-up memory,
# each entry with its reason).
#
#   scripts/valgrind-check.sh        (after cargo build --release and cargo build --release -p gst-vmafcuda)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}/release
corpus=${VMAFCUDA_CORPUS:-../shared/corpus}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zstd -q -dc "$corpus/edge_cases/count_64x36_ref.y4m.zst" >"$work/ref.y4m"
zstd -q -dc "$corpus/edge_cases/count_64x36_dist6.y4m.zst" >"$work/dist.y4m"
vg=(valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=9
  --suppressions=tests/valgrind/glib-gst.supp --num-callers=30)

echo "valgrind: vmafcuda score, a shot at every frame, psnr"
"${vg[@]}" "$target/vmafcuda" score -r "$work/ref.y4m" -d "$work/dist.y4m" --backend cpu \
  --shots 0,1,2,3,4,5 --feature psnr -o "$work/cli.json" -q
test -s "$work/cli.json"

echo "valgrind: gst-launch-1.0 ... vmafcuda shot-boundaries at every frame"
export GST_PLUGIN_PATH=$target GST_REGISTRY=$work/registry.bin G_SLICE=always-malloc
gst-inspect-1.0 vmafcuda >/dev/null
"${vg[@]}" gst-launch-1.0 -q vmafcuda name=v shot-boundaries=0,1,2,3,4,5,6,7 backend=cpu \
  psnr=true results-filename="$work/gst.json" ! fakesink \
  filesrc location="$work/ref.y4m" ! y4mdec ! v.ref_sink \
  filesrc location="$work/ref.y4m" ! y4mdec ! v.dist_sink
test -s "$work/gst.json"
echo "valgrind: no definite or indirect leaks"
