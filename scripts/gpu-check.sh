#!/usr/bin/env bash
# Runs the CUDA tests on a GPU machine that has no Rust toolchain.
#
# Here (developer machine):  scripts/gpu-check.sh build
#   builds the test executables (cargo test --release --no-run), strips them and copies them
#   into .gpu/bin/ (git-ignored), also packed as .gpu/bin.tar.gz. Carry `.gpu/bin.tar.gz`,
#   `.gpu/bin.vmafcuda` and `.gpu/corpus` to the device (about 55 MB; all of `.gpu`, with the
#   unpacked executables, is over the device tool's 64 MiB limit).
# There (GPU machine):       scripts/gpu-check.sh run
#   unpacks .gpu/bin.tar.gz where .gpu/bin is missing, runs the executables, writes logs under
#   $OUT (or target/gpu-check), checks the kernel image with
#   cuobjdump, compute-sanitizer (memcheck with leak checking, racecheck), the CLI from y4m
#   files and the benchmark (fps rows and each size's table of ms per CUDA stage), then prints a
#   summary table. The whole run takes longer than the device tool's 600 s per call on an H100
#   (2026-11-27, evening: the tests and PTX steps 509 s, the sanitizer step 231 s, the CLI and
#   bench steps 140 s, before the bench step's many-scorer rows): run it in parts,
#   GPU_CHECK_STEPS="tests ptx", then "sanitizer", then "cli bench", and read $OUT/rows.txt
#   (and summary.txt) of each.
#
# Environment: GPU_CHECK_MANIFEST=path/to/Cargo.toml builds another manifest (default: this
# repo); GPU_CHECK_TESTS="cuda_psnr cuda_kernels_fresh" chooses the integration tests (the
# library's own unit tests always come along, filtered to `cuda::`).
set -euo pipefail
cd "$(dirname "$0")/.."

tests=${GPU_CHECK_TESTS:-"cuda_psnr cuda_kernels_fresh cuda_motion cuda_vif cuda_adm cuda_scorer rebuild"}
# Where the executables go (several people building different tests at once use different folders).
bin=${GPU_CHECK_BIN:-.gpu/bin}

build() {
  local manifest=${GPU_CHECK_MANIFEST:-Cargo.toml}
  local args=(--release --no-run --message-format=json --manifest-path "$manifest" -p vmafcuda --lib)
  for t in $tests; do args+=(--test "$t"); done
  rm -rf "$bin" && mkdir -p "$bin"
  cargo test "${args[@]}" >"$bin.build.json"
  # One line per test executable: "<target name> <kind> <path>".
  python3 - "$bin.build.json" >"$bin.executables" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["target"]["kind"][0], m["executable"])
EOF
  while read -r name kind exe; do
    local dst="$bin/${name}"
    [[ $kind == lib ]] && dst="$bin/lib_${name}"
    objcopy --strip-debug "$exe" "$dst"
    echo "$(basename "$dst"): $(du -h "$dst" | cut -f1)"
  done <"$bin.executables"
  # The CLI, for the benchmark (outside $bin: everything in there is run as a test).
  cargo build --release --manifest-path "$manifest" --bin vmafcuda
  objcopy --strip-debug "${CARGO_TARGET_DIR:-target}/release/vmafcuda" "$bin.vmafcuda"
  tar -C "$(dirname "$bin")" -czf "$bin.tar.gz" "$(basename "$bin")"
  du -sh "$bin" "$bin.tar.gz" "$bin.vmafcuda"
  # The corpus, cut down to fit the device tool's transfer limit.
  [[ -d .gpu/corpus ]] || scripts/device-corpus.sh .gpu/corpus
}

run() {
  local out=${OUT:-target/gpu-check}
  if [[ ! -d $bin && -f $bin.tar.gz ]]; then
    tar -C "$(dirname "$bin")" -xzf "$bin.tar.gz"
  fi
  # The reduced corpus travels in .gpu/corpus (scripts/device-corpus.sh).
  [[ -d .gpu/corpus ]] && export VMAFCUDA_CORPUS=$PWD/.gpu/corpus
  mkdir -p "$out"
  local log="$out/tests.log" summary="$out/summary.txt"
  : >"$log"
  {
    echo "== $(date -u +%FT%TZ) $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,persistence_mode --format=csv 2>&1 || true
  } | tee -a "$log"

  local rows=()
  # Rows also go to $out/rows.txt as they are made, so a run cut off by the time limit still
  # brings back what it measured.
  : >"$out/rows.txt"
  row() { rows+=("$1"); printf '%s\n' "$1" >>"$out/rows.txt"; }
  # GPU_CHECK_STEPS picks parts of the run (default: all of them).
  local steps=" ${GPU_CHECK_STEPS:-tests ptx sanitizer cli bench} "
  has() { [[ $steps == *" $1 "* ]]; }
  for exe in "$bin"/*; do
    has tests || break
    local name filter=()
    name=$(basename "$exe")
    [[ $name == lib_* ]] && filter=(cuda::)
    echo "== $name ${filter[*]}" >>"$log"
    local t0 t1 rc=0 part="$out/.part"
    t0=$(date +%s%N)
    # Tests that read kernels/ or scripts/ look for CARGO_MANIFEST_DIR at run time: this tree.
    CARGO_MANIFEST_DIR=$PWD timeout 300 "$exe" "${filter[@]}" --test-threads=1 --nocapture >"$part" 2>&1 || rc=$?
    t1=$(date +%s%N)
    cat "$part" >>"$log"
    local result skipped
    result=$(grep -a "^test result:" "$part" | tail -1 | sed 's/^test result: //; s/ 0 measured;//; s/; finished.*//')
    skipped=$(grep -ac "skipping " "$part" || true)
    rm -f "$part"
    row "$(printf '%-20s rc=%-3s %7sms  %s; %s skipped (no GPU)' "$name" "$rc" "$(((t1 - t0) / 1000000))" "${result:-no result line}" "$skipped")"
  done

  # Suites again under settings the default does not take for every frame: the engine's two
  # ways of launching a frame (CUDA graphs, separate launches: the default mixes them by frame
  # size and source, src/cuda/engine.rs), each forced; VIF's scale 0 without its tensor-core
  # kernels (the default on compute capability 8.0 and up; the plain kernels are what older
  # GPUs run): the VIF kernels against the CPU, and the whole engine on the corpus.
  # Each spec: variable=value, test executable, row label.
  if has tests; then
    local spec setting exe label
    for spec in "VMAFCUDA_CUDA_GRAPHS=0 cuda_scorer graphs=0" \
      "VMAFCUDA_CUDA_GRAPHS=1 cuda_scorer graphs=1" \
      "VMAFCUDA_VIF_MMA=0 cuda_vif vif_mma=0" \
      "VMAFCUDA_VIF_MMA=0 cuda_scorer vif_mma=0"; do
      read -r setting exe label <<<"$spec"
      [[ -x $bin/$exe ]] || continue
      echo "== $exe with $setting" >>"$log"
      local rc=0 part="$out/.part"
      env "$setting" CARGO_MANIFEST_DIR="$PWD" timeout 300 "$bin/$exe" --test-threads=4 >"$part" 2>&1 || rc=$?
      cat "$part" >>"$log"
      row "$(printf '%-20s rc=%-3s %s' "$exe $label" "$rc" "$(grep -a "^test result:" "$part" | tail -1 | sed 's/; finished.*//')")"
      rm -f "$part"
    done
  fi

  # The PTX in the image (for GPUs newer than its cubins) must load and give the same numbers:
  # CUDA_FORCE_PTX_JIT makes the driver ignore the cubins. VIF too: its tensor-core kernels'
  # inline PTX (mma.sync) is compiled by the driver then. And ADM.
  if has ptx; then
    local spec exe filter
    for spec in "cuda_psnr gpu_psnr_equals" "cuda_vif gpu_vif_equals" "cuda_adm gpu_adm_equals"; do
      read -r exe filter <<<"$spec"
      [[ -x $bin/$exe ]] || continue
      echo "== $exe with CUDA_FORCE_PTX_JIT=1" >>"$log"
      local rc=0
      CUDA_FORCE_PTX_JIT=1 CARGO_MANIFEST_DIR="$PWD" timeout 300 "$bin/$exe" --test-threads=1 "$filter" >>"$log" 2>&1 || rc=$?
      row "$(printf '%-20s rc=%-3s %s' "PTX JIT only: $exe" "$rc" "$(grep -a "^test result:" "$log" | tail -1 | sed 's/; finished.*//')")"
    done
  fi

  local cuobjdump=/usr/local/cuda/bin/cuobjdump
  if [[ -x $cuobjdump ]]; then
    echo "== cuobjdump kernels/*.fatbin" >>"$log"
    for f in kernels/*.fatbin; do
      "$cuobjdump" --list-elf --list-ptx "$f" >>"$log" 2>&1 || true
      row "$(printf '%-20s %s' "$(basename "$f")" "$("$cuobjdump" --list-elf --list-ptx "$f" 2>/dev/null | grep -oE 'sm_[0-9]+\.(cubin|ptx)' | sort -u | tr '\n' ' ')")"
    done
  fi

  local sanitizer=/usr/local/cuda/bin/compute-sanitizer
  if has sanitizer && [[ -x $sanitizer ]]; then
    # memcheck with leak checking on the whole engine (device frames, pipelined submissions
    # across shots, the stateful-ADM width, pinned pictures with failures injected mid-capture),
    # on a shot-rebuild run and on the VIF, ADM and motion kernels' own equality tests (every
    # depth, size and pitch, tensor-core kernels and aligned loads included); racecheck on
    # short runs of the whole engine (the stateful width in frame order, device frames as
    # overlapping graphs) and on the VIF, ADM and motion equality tests.
    # One sanitizer run per spec ("executable test-filters..."): $1 the tool and its options
    # (the row's label too), $2 the pattern of the summary line the row shows.
    # (VMAFCUDA_REBUILDS only shortens the rebuild test, which only memcheck runs.)
    sanitize() {
      local tool=$1 pattern=$2 spec exe filters rc
      local -a args
      read -r -a args <<<"$tool"
      shift 2
      for spec in "$@"; do
        read -r exe filters <<<"$spec"
        [[ -x $bin/$exe ]] || continue
        echo "== compute-sanitizer ${args[0]} $exe $filters" >>"$log"
        rc=0
        # shellcheck disable=SC2086 # filters are separate words
        VMAFCUDA_UNDER_SANITIZER=1 VMAFCUDA_REBUILDS=100 CARGO_MANIFEST_DIR=$PWD timeout 240 "$sanitizer" --tool "${args[@]}" --error-exitcode 9 \
          "$bin/$exe" --test-threads=1 $filters >"$out/.san" 2>&1 || rc=$?
        cat "$out/.san" >>"$log"
        row "$(printf '%-40s rc=%-3s %s' "$tool: $exe" "$rc" "$(grep -a "$pattern" "$out/.san" | tail -1)")"
      done
    }
    sanitize "memcheck --leak-check full" 'ERROR SUMMARY' \
      "cuda_scorer device_frames pipelined stateful pinned" "rebuild cuda_rebuilds_do_not_grow_memory" \
      "cuda_vif gpu_vif_equals gpu_vif_reads" "cuda_adm gpu_adm_equals gpu_adm_reads" \
      "cuda_motion gpu_motion_equals"
    sanitize racecheck 'RACECHECK SUMMARY\|ERROR SUMMARY' \
      "cuda_scorer stateful device_frames" "cuda_vif gpu_vif_equals gpu_vif_reads" \
      "cuda_adm gpu_adm_equals gpu_adm_reads" "cuda_motion gpu_motion_equals"
    rm -f "$out/.san"
  fi

  # Whole process from y4m files, as libvmaf's CLI was timed (ANCHORS.md: 1080p, 240 frames,
  # libvmaf CUDA 0.75-0.84 s): a synthetic pair written here, then the CLI on CUDA.
  if has cli && [[ -x $bin.vmafcuda && -z ${GPU_CHECK_NO_BENCH:-} ]] && command -v python3 >/dev/null; then
    local clip=/tmp/vmafcuda-1080p
    python3 - "$clip" <<'PY'
import sys
import numpy as np
base = sys.argv[1]
w, h, n = 1920, 1080, 240
rng = np.random.default_rng(7)
yy, xx = np.mgrid[0:h, 0:w]
for name, noise in (("ref", 0), ("dist", 6)):
    with open(f"{base}-{name}.y4m", "wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C420jpeg\n".encode())
        for t in range(n):
            y = (128 + 60 * np.sin((xx + 3 * t) / 23.0) * np.cos((yy - 2 * t) / 17.0)).astype(np.int16)
            if noise:
                y = y + rng.integers(-noise, noise + 1, size=y.shape, dtype=np.int16)
            f.write(b"FRAME\n")
            f.write(np.clip(y, 0, 255).astype(np.uint8).tobytes())
            f.write(np.full((h // 2) * (w // 2) * 2, 128, np.uint8).tobytes())
PY
    echo "== CLI whole process, 1080p 240 frames from y4m" >>"$log"
    # Five CUDA runs (the files are in the page cache: they were just written), two that tear
    # the GPU state down before exiting (VMAFCUDA_FULL_TEARDOWN=1), then one CPU. Each row: the
    # whole process (wall, from the shell), then the CLI's own split (VMAFCUDA_TIMING).
    for backend in cuda cuda cuda cuda cuda cuda-teardown cuda-teardown cpu; do
      local t0 t1 teardown=0 err=$out/cli-run.err
      [[ $backend == cuda-teardown ]] && teardown=1
      t0=$(date +%s%N)
      VMAFCUDA_FULL_TEARDOWN=$teardown VMAFCUDA_TIMING=1 "$bin.vmafcuda" score -r "$clip-ref.y4m" -d "$clip-dist.y4m" \
        --backend "${backend%-teardown}" -q -o "$out/cli-${backend%-teardown}.json" >>"$log" 2>"$err" || true
      t1=$(date +%s%N)
      cat "$err" >>"$log"
      row "$(printf 'CLI 1080p 240 frames y4m, --backend %-13s whole process %6sms | %s' "$backend" "$(((t1 - t0) / 1000000))" \
        "$(grep -a 'timing:' "$err" | sed 's/vmafcuda: timing: //' | tr '\n' ' ')")"
    done
    if cmp -s <(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pooled_metrics']['vmaf'])" "$out/cli-cuda.json") \
              <(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pooled_metrics']['vmaf'])" "$out/cli-cpu.json"); then
      row "CLI cuda and cpu pooled vmaf identical"
    else
      row "CLI cuda and cpu pooled vmaf DIFFER"
    fi
    # Two processes at once on one GPU, forced CUDA, same clip: both must finish and equal the
    # CPU output.
    echo "== two CLI processes at once on one GPU" >>"$log"
    local rc1=0 rc2=0
    "$bin.vmafcuda" score -r "$clip-ref.y4m" -d "$clip-dist.y4m" --backend cuda -q -o "$out/cli-two-1.json" >>"$log" 2>&1 &
    local p1=$!
    "$bin.vmafcuda" score -r "$clip-ref.y4m" -d "$clip-dist.y4m" --backend cuda -q -o "$out/cli-two-2.json" >>"$log" 2>&1 &
    local p2=$!
    wait "$p1" || rc1=$?
    wait "$p2" || rc2=$?
    if python3 - "$out/cli-cpu.json" "$out/cli-two-1.json" "$out/cli-two-2.json" <<'PY'; then
import json, sys
cpu, *two = (json.load(open(p)) for p in sys.argv[1:])
key = lambda r: ([f["metrics"] for f in r["frames"]], r["pooled_metrics"])
sys.exit(0 if all(key(r) == key(cpu) for r in two) else 1)
PY
      rows+=("two CLI processes at once on one GPU (--backend cuda): rc=$rc1,$rc2, both identical to the CPU")
    else
      rows+=("two CLI processes at once on one GPU (--backend cuda): rc=$rc1,$rc2, outputs DIFFER from the CPU or missing")
    fi
    # The resident service (`vmafcuda serve`): the GPU stays initialised between runs, so a
    # client process pays no CUDA start-up. Five timed client runs (whole process, as above),
    # then GPU_CHECK_SERVICE_RUNS more (default 100) to see whether the service's GPU memory
    # or RSS grows run after run (sampled a moment after a run, once its teardown is done).
    echo "== vmafcuda serve" >>"$log"
    local sock=/tmp/vmafcuda-gpu-check.sock spid
    rm -f "$sock"
    "$bin.vmafcuda" serve --socket "$sock" >"$out/serve.out" 2>"$out/serve.log" &
    spid=$!
    for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
    row "service: $(head -1 "$out/serve.out")"
    service_mem() {
      local gpu rss
      gpu=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | awk -F', ' -v p="$spid" '$1 == p {print $2}')
      rss=$(awk '/VmRSS/ {print $2}' "/proc/$spid/status" 2>/dev/null)
      echo "GPU ${gpu:-?} MiB, RSS ${rss:-?} kB"
    }
    local mem0 mems=() n=${GPU_CHECK_SERVICE_RUNS:-100}
    for i in 1 2 3 4 5; do
      local t0 t1 err=$out/cli-run.err
      t0=$(date +%s%N)
      VMAFCUDA_SERVICE=$sock VMAFCUDA_TIMING=1 "$bin.vmafcuda" score -r "$clip-ref.y4m" -d "$clip-dist.y4m" \
        --backend cuda -q -o "$out/cli-service.json" >>"$log" 2>"$err" || true
      t1=$(date +%s%N)
      cat "$err" >>"$log"
      row "$(printf 'CLI 1080p 240 frames y4m, via vmafcuda serve        whole process %6sms | %s' "$(((t1 - t0) / 1000000))" \
        "$(grep -a 'timing:' "$err" | sed 's/vmafcuda: timing: //' | tr '\n' ' ')")"
      [[ $i == 1 ]] && sleep 0.3 && mem0=$(service_mem)
    done
    for i in $(seq "$n"); do
      VMAFCUDA_SERVICE=$sock "$bin.vmafcuda" score -r "$clip-ref.y4m" -d "$clip-dist.y4m" --backend cuda -q >/dev/null 2>>"$log" || true
      if ((i % 25 == 0)); then sleep 0.3; mems+=("after run $((i + 5)): $(service_mem)"); fi
    done
    row "service memory after run 1: $mem0; $(IFS=';'; echo "${mems[*]}")"
    if python3 - "$out/cli-cpu.json" "$out/cli-service.json" <<'PY'; then
import json, sys
cpu, svc = (json.load(open(p)) for p in sys.argv[1:])
key = lambda r: ([f["metrics"] for f in r["frames"]], r["pooled_metrics"])
sys.exit(0 if key(cpu) == key(svc) and svc["backend"] == "cuda" else 1)
PY
      row "CLI via the service: cuda output identical to the CPU run"
    else
      row "CLI via the service: output DIFFERS from the CPU run (or not cuda)"
    fi
    # Four clients at once: one is served, the others are sent back and score in their own
    # processes beside it; all four outputs must equal the CPU run.
    local pids=() rcs=() t0 t1
    t0=$(date +%s%N)
    for k in 1 2 3 4; do
      VMAFCUDA_SERVICE=$sock "$bin.vmafcuda" score -r "$clip-ref.y4m" -d "$clip-dist.y4m" --backend cuda \
        -o "$out/cli-par-$k.json" >/dev/null 2>"$out/cli-par-$k.err" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do
      local prc=0
      wait "$p" || prc=$?
      rcs+=("$prc")
    done
    t1=$(date +%s%N)
    local sent_back
    sent_back=$(cat "$out"/cli-par-*.err | grep -c "busy with another run" || true)
    if python3 - "$out/cli-cpu.json" "$out"/cli-par-*.json <<'PY'; then
import json, sys
cpu, *par = (json.load(open(p)) for p in sys.argv[1:])
key = lambda r: ([f["metrics"] for f in r["frames"]], r["pooled_metrics"])
sys.exit(0 if len(par) == 4 and all(key(r) == key(cpu) and r["backend"] == "cuda" for r in par) else 1)
PY
      row "four clients at once with the service: rc=${rcs[*]}, $sent_back sent back to score beside it, all four identical to the CPU, $(((t1 - t0) / 1000000)) ms for all"
    else
      row "four clients at once with the service: rc=${rcs[*]}, $sent_back sent back, outputs DIFFER from the CPU or missing"
    fi
    rm -f "$out"/cli-par-*
    kill -TERM "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    row "service log: $(grep -c -- '-> exit 0 in' "$out/serve.log") runs exit 0, $(grep -c -- '-> exit' "$out/serve.log") runs in all; socket removed: $([[ -e $sock ]] && echo no || echo yes)"
    cat "$out/serve.log" >>"$log"
    rm -f "$clip"-*.y4m
  fi

  if has bench && [[ -x $bin.vmafcuda && -z ${GPU_CHECK_NO_BENCH:-} ]]; then
    echo "== bench" >>"$log"
    for bpc in 8 10; do
      # 8-bit also measures the shot-boundary modes: device-resident shots of 25 frames with a
      # full rebuild and with an in-place reset at every boundary.
      local shots=()
      [[ $bpc == 8 ]] && shots=(--shot-length 25)
      local rc=0
      timeout 400 "$bin.vmafcuda" bench --backend cuda --bpc "$bpc" --size 576x324 --size 1920x1080 --size 3840x2160 \
        --frames 600 --cpu-frames 16 --stage-frames 120 --runs 3 "${shots[@]}" >"$out/bench.part" 2>&1 || rc=$?
      cat "$out/bench.part" | tee -a "$out/bench.txt" >>"$log"
      # Every requested row must be there, or the run says why (exit code, signal, timeout).
      row "$(printf 'bench %2s-bit rc=%s, %s of 3 sizes with a cuda device row' "$bpc" "$rc" "$(grep -c ' cuda device ' "$out/bench.part" || true)")"
    done
    # VIF's scale 0 without and with the tensor-core pass, alternately (8-bit 1080p).
    local m
    for m in 0 1 0 1; do
      echo "== bench 1080p 8-bit VMAFCUDA_VIF_MMA=$m" | tee -a "$out/bench.txt" >>"$log"
      VMAFCUDA_VIF_MMA=$m timeout 120 "$bin.vmafcuda" bench --backend cuda --bpc 8 --size 1920x1080 \
        --frames 1000 --cpu-frames 2 --stage-frames 300 --runs 3 2>&1 | tee -a "$out/bench.txt" >>"$log" || true
    done
    # Many scorers in one process, aggregate fps (issue 19's rows; which engines overlap their
    # frames depends on the size and on how many scorers are busy: src/cuda/engine.rs).
    local size_scorers
    for size_scorers in 1920x1080:1,2,4,16 576x324:4,16,64; do
      echo "== bench scorers ${size_scorers}" | tee -a "$out/bench.txt" >>"$log"
      timeout 200 "$bin.vmafcuda" bench --backend cuda --bpc 8 --size "${size_scorers%%:*}" \
        --frames 1000 --cpu-frames 1 --stage-frames 0 --runs 2 --scorers "${size_scorers#*:}" 2>&1 |
        grep -E 'cuda (x|device)' | tee -a "$out/bench.txt" >>"$log" || true
    done
  fi

  {
    echo
    echo "== GPU check summary"
    printf '%s\n' "${rows[@]}"
    echo "== highlights"
    grep -aoE "(CUDA driver [0-9].*|VIF .*fps.*|ADM .*fps.*|8 threads .*|CUDA pipelined .*|shot rebuild .*|full GPU state .*|CUDA == CPU on .*|CUDA shots == .*|CUDA device frames == .*|[0-9]+ rebuilds.*|[0-9]+ injected.*|real OOM.*|as expected.*|held [0-9].*)" "$log" || true
    if [[ -f $out/bench.txt ]]; then
      echo "== bench (fps; vs cpu = ratio to the CPU path measured in the same run; then ms per CUDA stage)"
      cat "$out/bench.txt"
    fi
  } | tee "$summary"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 build|run" >&2; exit 2 ;;
esac
