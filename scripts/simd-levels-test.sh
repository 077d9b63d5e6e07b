#!/usr/bin/env bash
# The CPU path's libvmaf comparisons once per SIMD level (VMAFCUDA_CPU_SIMD=scalar, avx2,
# avx512, avx512vnni, neon): every corpus pair within 1e-9 of libvmaf at every level. Levels this
# CPU lacks (neon on x86-64, the AVX levels on aarch64) are reported as SKIPPED (the extractors
# would fall back to another level), not run. scripts/neon-check.sh runs the NEON kernels'
# tests on an x86-64 machine (cross-built, under qemu).
#   scripts/simd-levels-test.sh [--skip-default] [cargo test args, e.g. --locked]
#   --skip-default  leave out the CPU's best level, the one every run without the variable
#                   picks, when `cargo test --workspace` (scripts/test.sh) has just run these
#                   tests at it (CI)
# Needs the corpus (../shared/corpus or VMAFCUDA_CORPUS), like scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
skip_default=0
if [[ ${1:-} == --skip-default ]]; then
  skip_default=1
  shift
fi
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
tests=(--test corpus --test feature_vif --test feature_adm --test feature_motion --test feature_psnr
  --test small_frames --test model --lib)
levels=()
for level in scalar avx2 avx512 avx512vnni neon; do
  case $level in
    neon) has asimd || { echo "SKIPPED: $level (this CPU lacks it)"; continue; } ;;
    avx2) has avx2 || { echo "SKIPPED: $level (this CPU lacks it)"; continue; } ;;
    avx512*) { has avx512f && has avx512bw && has avx512dq && has avx512vl; } \
      || { echo "SKIPPED: $level (this CPU lacks it)"; continue; }
      [[ $level == avx512 ]] || has avx512_vnni \
        || { echo "SKIPPED: $level (this CPU lacks it)"; continue; } ;;
  esac
  levels+=("$level")
done
# The levels are listed lowest first: the last one the CPU has is the one it picks by default
# (src/features/simd.rs).
if ((skip_default)); then
  echo "SKIPPED: ${levels[-1]} (the default level: scripts/test.sh ran these tests at it)"
  unset 'levels[-1]'
fi
for level in "${levels[@]}"; do
  echo "== VMAFCUDA_CPU_SIMD=$level"
  VMAFCUDA_CPU_SIMD=$level cargo test --release -p vmafcuda "$@" "${tests[@]}"
done
echo "SIMD LEVELS OK"
