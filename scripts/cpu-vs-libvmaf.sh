#!/usr/bin/env bash
# Our CPU path against libvmaf's own (the static FFmpeg of PyPI's imageio-ffmpeg, its libvmaf
# filter), side by side on the same y4m files, timed alternately (ours, libvmaf, ours, ...) and
# the median of RUNS taken, whole process each time, each run after reading its files into the
# page cache (untimed). Prints size x bit depth x threads: our fps,
# libvmaf's fps, the ratio and both pooled VMAF scores; under each deeper row, our fps on that
# size's 8-bit files timed in the same alternation, how far behind it the deeper run is (of the
# medians), and the same alternation by alternation (each deeper run against the 8-bit run a
# few seconds after it: median and range; on a VM whose pace drifts, the steadier figure).
#
#   scripts/cpu-vs-libvmaf.sh            # 576x324, 1080p, 4K 8-bit and 1080p 10-bit; 1 and all threads
#   FRAMES=24 RUNS=3 SIZES="1920x1080:8" THREADS="1 2" scripts/cpu-vs-libvmaf.sh
#
# Needs python3 (venv) and network access to PyPI the first time (the venv is kept in
# target/cpu-vs-libvmaf/venv); the inputs are our synthetic clip written as y4m by this script.
set -euo pipefail
cd "$(dirname "$0")/.."
work=target/cpu-vs-libvmaf
mkdir -p "$work"
runs=${RUNS:-3}
frames=${FRAMES:-24}
sizes=${SIZES:-"576x324:8 1920x1080:8 3840x2160:8 1920x1080:10"}
threads=${THREADS:-"1 $(nproc)"}

if [[ ! -x $work/venv/bin/python ]]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q imageio-ffmpeg numpy
fi
ffmpeg=$("$work/venv/bin/python" -c "import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())")
cargo build -q --release -p vmafcuda-cli --bin vmafcuda
ours=${CARGO_TARGET_DIR:-target}/release/vmafcuda

# A reference/distorted pair of the given size and depth: a moving pattern, the distorted one
# blurred, quantised and noisy (numpy; deterministic).
make_pair() { # w h bpc frames out-prefix
  "$work/venv/bin/python" - "$@" <<'PY'
import sys, numpy as np
w, h, bpc, n, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
maxv = (1 << bpc) - 1
dt = np.uint8 if bpc == 8 else np.dtype('<u2')
tag = 'C420jpeg' if bpc == 8 else 'C420p10'
rng = np.random.default_rng(1)
yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
cw, ch = (w + 1) // 2, (h + 1) // 2
chroma = np.full(2 * cw * ch, maxv // 2, dt).tobytes()
with open(out + '_ref.y4m', 'wb') as r, open(out + '_dist.y4m', 'wb') as d:
    for f in (r, d):
        f.write(f'YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 {tag}\n'.encode())
    for t in range(n):
        y = 0.5 + 0.3 * np.sin((xx + 3 * t) / 9.0) * np.cos((yy - 2 * t) / 13.0)
        ref = np.clip(y * maxv, 0, maxv)
        blur = (ref + np.roll(ref, 1, 1) + np.roll(ref, -1, 1) + np.roll(ref, 1, 0) + np.roll(ref, -1, 0)) / 5
        dist = np.clip(np.round(blur / (maxv / 48)) * (maxv / 48) + rng.normal(0, maxv * 0.01, ref.shape), 0, maxv)
        for f, p in ((r, ref), (d, dist)):
            f.write(b'FRAME\n'); f.write(np.rint(p).astype(dt).tobytes()); f.write(chroma)
PY
}

now() { date +%s%N; }
# The pair's files read into the page cache just before each timed run (not timed): on a VM
# whose host pages out idle memory (DAMON reclaim drops page-cache pages after about a minute,
# even of files read every few seconds), a run would otherwise time the disk at random.
warm() { cat "$@" >/dev/null; }
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

printf '%-10s %4s %7s %10s %12s %7s %12s %12s\n' size bpc threads "ours fps" "libvmaf fps" ratio "ours VMAF" "libvmaf VMAF"
for spec in $sizes; do
  size=${spec%:*} bpc=${spec#*:}
  w=${size%x*} h=${size#*x}
  n=$frames
  [[ $w -ge 3840 ]] && n=$((frames / 3 > 4 ? frames / 3 : 4))
  pair=$work/${size}_${bpc}bit_$n
  [[ -s ${pair}_dist.y4m ]] || make_pair "$w" "$h" "$bpc" "$n" "$pair"
  # Deeper pictures are also compared with our own 8-bit run of the same size, timed in the
  # same alternation (the bar "10-bit within 15% of 8-bit" compares rows that a separate loop
  # would time minutes apart, on a machine whose pace moves).
  pair8=$work/${size}_8bit_$n
  if [[ $bpc != 8 ]]; then
    [[ -s ${pair8}_dist.y4m ]] || make_pair "$w" "$h" 8 "$n" "$pair8"
  fi
  for t in $threads; do
    ours_t=() lib_t=() ours8_t=()
    for _ in $(seq "$runs"); do
      warm "${pair}_ref.y4m" "${pair}_dist.y4m"
      a=$(now)
      "$ours" score -r "${pair}_ref.y4m" -d "${pair}_dist.y4m" --backend cpu --threads "$t" -q -o "$work/ours.json" >/dev/null 2>&1
      ours_t+=($(($(now) - a)))
      warm "${pair}_ref.y4m" "${pair}_dist.y4m"
      b=$(now)
      "$ffmpeg" -v error -i "${pair}_dist.y4m" -i "${pair}_ref.y4m" \
        -lavfi "[0:v][1:v]libvmaf=n_threads=$t:log_fmt=json:log_path=$work/libvmaf.json" -f null -
      lib_t+=($(($(now) - b)))
      if [[ $bpc != 8 ]]; then
        warm "${pair8}_ref.y4m" "${pair8}_dist.y4m"
        c=$(now)
        "$ours" score -r "${pair8}_ref.y4m" -d "${pair8}_dist.y4m" --backend cpu --threads "$t" -q -o "$work/ours8.json" >/dev/null 2>&1
        ours8_t+=($(($(now) - c)))
      fi
    done
    o=$(printf '%s\n' "${ours_t[@]}" | median) l=$(printf '%s\n' "${lib_t[@]}" | median)
    read -r ov lv < <("$work/venv/bin/python" -c "
import json
a = json.load(open('$work/ours.json'))['pooled_metrics']['vmaf']['mean']
b = json.load(open('$work/libvmaf.json'))['pooled_metrics']['vmaf']['mean']
print(a, b)")
    awk -v s="$size" -v bpc="$bpc" -v t="$t" -v n="$n" -v o="$o" -v l="$l" -v ov="$ov" -v lv="$lv" 'BEGIN {
      fo = n / (o / 1e9); fl = n / (l / 1e9)
      printf "%-10s %4s %7s %10.1f %12.1f %6.2fx %12.6f %12.6f\n", s, bpc, t, fo, fl, fo / fl, ov, lv }'
    if [[ $bpc != 8 ]]; then
      o8=$(printf '%s\n' "${ours8_t[@]}" | median)
      # Also per alternation: the deeper run against the 8-bit run a few seconds after it (the
      # machine's pace drifts between alternations more than within one), their median and range.
      pairs=$(for i in "${!ours_t[@]}"; do
        awk -v o="${ours_t[$i]}" -v o8="${ours8_t[$i]}" 'BEGIN { printf "%.4f\n", 100 * (1 - o8 / o) }'
      done | sort -n)
      pm=$(median <<<"$pairs")
      awk -v bpc="$bpc" -v n="$n" -v o="$o" -v o8="$o8" -v pm="$pm" -v k="${#ours_t[@]}" \
        -v lo="$(head -1 <<<"$pairs")" -v hi="$(tail -1 <<<"$pairs")" 'BEGIN {
        f = n / (o / 1e9); f8 = n / (o8 / 1e9)
        printf "%22s ours %s-bit vs ours 8-bit in the same alternation: %.1f / %.1f fps, %.1f%% behind;", "", bpc, f, f8, 100 * (1 - f / f8)
        printf " alternation by alternation %.1f%% (median of %d, %.1f..%.1f%%)\n", pm, k, lo, hi }'
    fi
  done
done
