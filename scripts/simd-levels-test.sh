#!/usr/bin/env bash
# The CPU path's libvmaf comparisons once per SIMD level (VMAFCUDA_CPU_SIMD=scalar, avx2,
# avx512, avx512vnni): every corpus pair within 1e-9 of libvmaf at every level. Levels this CPU lacks are
# reported as SKIPPED (the extractors would fall back to a lower level), not run.
#   scripts/simd-levels-test.sh [cargo test args, e.g. --locked]
# Needs the corpus (../shared/corpus or VMAFCUDA_CORPUS), like scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }
tests=(--test corpus --test feature_vif --test feature_adm --test feature_motion --test feature_psnr
  --test small_frames --test model --lib)
for level in scalar avx2 avx512 avx512vnni; do
  case $level in
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
