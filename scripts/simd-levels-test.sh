#!/usr/bin/env bash
# The CPU path's libvmaf comparisons once per SIMD level (VMAFCUDA_CPU_SIMD=scalar, avx2,
# avx512, avx512vnni, neon): every corpus pair within 1e-9 of libvmaf at every level. Levels this
# CPU lacks (neon on x86-64, the AVX levels on aarch64) are reported as SKIPPED (the extractors
# would fall back to another level), not run. scripts/neon-check.sh runs the NEON kernels'
# tests on an x86-64 machine (cross-built, under qemu).
#   scripts/simd-levels-test.sh [cargo test args, e.g. --locked]
# Needs the corpus (../shared/corpus or VMAFCUDA_CORPUS), like scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
tests=(--test corpus --test feature_vif --test feature_adm --test feature_motion --test feature_psnr
  --test small_frames --test model --lib)
for level in scalar avx2 avx512 avx512vnni neon; do
  case $level in
    neon) has asimd || { echo "SKIPPED: $level (this CPU lacks it)"; continue; } ;;
    avx2) has avx2 || { echo "SKIPPED: $level (this CPU lacks it)"; continue; } ;;
    avx512*) { has avx512f && has avx512bw && has avx512dq && has avx512vl; } \
      || { echo "SKIPPED: $level (this CPU lacks it)"; continue; }
      [[ $level == avx512 ]] || has avx512_vnni \
        || { echo "SKIPPED: $level (this CPU lacks it)"; continue; } ;;
  esac
  echo "== VMAFCUDA_CPU_SIMD=$level"
  VMAFCUDA_CPU_SIMD=$level cargo test --release -p vmafcuda "$@" "${tests[@]}"
done
echo "SIMD LEVELS OK"
