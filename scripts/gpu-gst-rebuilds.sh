#!/usr/bin/env bash
# 10,000 full rebuilds through a real gst-launch pipeline on CUDA memory (cudaupload), sampled
# from outside every SAMPLE_S seconds (default 0.25): RSS, open fds, nvidia-smi's per-process
# device memory. N frames (default 20,000), a boundary every 2 frames; N up to about 40,000 (the
# boundary list must fit one command-line argument). PATTERN=smpte (still frames) instead of
# the default moving ball keeps every score the same, so the whole-stream percentile sketch of
# pooling=bounded stops gaining bins after the first frames: see BENCHMARKS.md.
set -u
# Run on the GPU machine after `scripts/gpu-gst-check.sh build` (which makes .gpu/gst and
# .gpu/gstplugin); OUT is the folder results go to.
OUT=${OUT:-target/gpu-gst-rebuilds}; mkdir -p "$OUT"
. .gpu/gst/env.sh
export GST_PLUGIN_PATH=$PWD/.gpu/gstplugin
N=${N:-20000}
B=$(python3 -c "print(','.join(str(i) for i in range(0,$N,2)))")
gst-launch-1.0 -q videotestsrc num-buffers=$N pattern=${PATTERN:-ball} ! video/x-raw,width=176,height=144,format=I420,framerate=25/1 ! tee name=t \
  t. ! queue ! cudaupload ! "video/x-raw(memory:CUDAMemory)" ! v.ref_sink \
  t. ! queue ! cudaupload ! "video/x-raw(memory:CUDAMemory)" ! v.dist_sink \
  vmafcuda name=v backend=cuda rebuild=full pooling=bounded frame-message=false shot-boundaries=$B results-filename=$OUT/gst10k.json ! fakesink > $OUT/gst10k.log 2>&1 &
pid=$!
: > $OUT/gst10k-samples.txt
while kill -0 $pid 2>/dev/null; do
  rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null)
  fds=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
  smi=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', ' -v p=$pid '$1==p{print $2}')
  echo "$(date +%s.%N) $rss $fds ${smi:-?}" >> $OUT/gst10k-samples.txt
  sleep "${SAMPLE_S:-0.25}"
done
wait $pid; echo "gst-launch rc=$?"
tail -3 $OUT/gst10k.log
python3 - $OUT/gst10k-samples.txt $OUT/gst10k.json $N <<'PY'
import sys, json
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 4 and l.split()[1].isdigit()]
n = len(rows)
# The window: after the start-up (the last step of 10 MB or more between two samples: the
# CUDA context, the first engine) and before the exit (its last sample).
steps = [i for i in range(1, n) if int(rows[i][1]) - int(rows[i - 1][1]) >= 10240]
w = rows[(steps[-1] if steps else n // 5):-1] or rows
t = [float(r[0]) for r in w]; rss = [int(r[1]) * 1024 for r in w]; fds = [int(r[2]) for r in w]
smi = [int(r[3]) for r in w if r[3].isdigit()]
dur = float(rows[-1][0]) - float(rows[0][0])
mt = sum(t) / len(t); mr = sum(rss) / len(rss)
slope = sum((a - mt) * (b - mr) for a, b in zip(t, rss)) / max(1e-9, sum((a - mt) ** 2 for a in t))
per_rebuild = slope * dur / (int(sys.argv[3]) // 2)
print(f"{n} samples over {dur:.1f} s; {len(w)} after the start-up: RSS {min(rss)/1e6:.2f}-{max(rss)/1e6:.2f} MB, slope {slope:.1f} B/s = {per_rebuild:.2f} B per rebuild; fds {min(fds)}-{max(fds)}; nvidia-smi {min(smi) if smi else '?'}-{max(smi) if smi else '?'} MiB")
try:
    r = json.load(open(sys.argv[2])); print("results:", len(r["frames"]), "frames, pooled vmaf mean", r["pooled_metrics"]["vmaf"]["mean"])
except Exception as e:
    print("results file:", e)
PY
