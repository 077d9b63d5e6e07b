#!/usr/bin/env bash
# Builds a reduced copy of ../shared/corpus for the GPU machine (which has no corpus and takes at
# most 64 MiB of files per call): manifest, libvmaf JSONs and shot lists as they are; clips cut
# to their first N frames (default 4), except those named in KEEP_WHOLE, which stay whole so
# their libvmaf references apply. The GPU tests compare CUDA with the CPU path on every clip
# (bit for bit) and with libvmaf's JSON wherever the clip is whole.
#
#   scripts/device-corpus.sh [OUT_DIR]      default: .gpu/corpus
set -euo pipefail
cd "$(dirname "$0")/.."
src=${VMAFCUDA_CORPUS:-../shared/corpus}
out=${1:-.gpu/corpus}
frames=${FRAMES:-4}
keep_whole=${KEEP_WHOLE:-"s_multishot_576x324 s_multishot_576x324__x264_crf30 s_rocket_176x144 s_rocket_176x144__x264_crf32"}

rm -rf "$out"
mkdir -p "$out/video" "$out/vmaf"
cp "$src/manifest.json" "$out/"
cp "$src"/vmaf/*.full.json "$out/vmaf/"
cp "$src"/video/*.shots.json "$out/video/"
for f in "$src"/video/*.y4m.zst; do
  name=$(basename "$f" .y4m.zst)
  if [[ " $keep_whole " == *" $name "* ]]; then
    cp "$f" "$out/video/"
    continue
  fi
  # y4m: one header line, then per frame a "FRAME" line and the planes.
  zstd -dc "$f" | python3 -c '
import sys
n = int(sys.argv[1])
data = sys.stdin.buffer.read()
head, rest = data.split(b"\n", 1)
tags = dict((chr(t[0]), t[1:].decode()) for t in head.split()[1:])
w, h = int(tags["W"]), int(tags["H"])
c = tags.get("C", "420jpeg")
bps = 2 if c.startswith("420p1") or c.startswith("444p1") or c.startswith("422p1") else 1
cw, ch = (w + 1) // 2, (h + 1) // 2
frame = (w * h + 2 * cw * ch) * bps
chunks, pos = [], 0
while pos < len(rest) and len(chunks) < n:
    nl = rest.index(b"\n", pos)
    chunks.append(rest[pos:nl + 1 + frame])
    pos = nl + 1 + frame
sys.stdout.buffer.write(head + b"\n" + b"".join(chunks))
' "$frames" | zstd -q -9 -T0 -o "$out/video/$name.y4m.zst"
done
du -sh "$out"
