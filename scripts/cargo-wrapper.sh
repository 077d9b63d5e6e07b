#!/bin/sh
# Builds libvmafcuda (the ffmpeg-shim crate) with cargo for meson and copies the outputs where
# meson expects them.
#   cargo-wrapper.sh SOURCE_ROOT BUILD_DIR PROFILE OUT_SO OUT_A
# PROFILE: release or debug. CARGO_TARGET_DIR, when set, is honoured (shared build cache).
set -eu
src=$1
build=$2
profile=$3
out_so=$4
out_a=$5
: "${CARGO_TARGET_DIR:=$build/cargo-target}"
export CARGO_TARGET_DIR
case "$profile" in
  release) flag=--release dir=release ;;
  debug) flag= dir=debug ;;
  *) echo "cargo-wrapper.sh: profile must be release or debug, not $profile" >&2; exit 2 ;;
esac
cargo build --locked $flag -p vmafcuda-ffi --manifest-path "$src/Cargo.toml"
cp "$CARGO_TARGET_DIR/$dir/libvmafcuda.so" "$out_so"
cp "$CARGO_TARGET_DIR/$dir/libvmafcuda.a" "$out_a"
