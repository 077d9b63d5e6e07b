#!/bin/sh
# Builds what meson installs with one cargo call and copies each output where meson expects it.
#   cargo-wrapper.sh SOURCE_ROOT BUILD_DIR PROFILE FEATURES OUT...
# PROFILE: release or debug. FEATURES: cargo's --features list ('' for none), e.g.
# vmafcuda-cli/ffmpeg. Each OUT is named after the artifact it receives, which also picks the
# package cargo builds:
#   libvmafcuda.so.*, libvmafcuda.a   vmafcuda-ffi (the C library)
#   libgstvmafcuda.so                 gst-vmafcuda (the GStreamer plugin)
#   vmafcuda                          vmafcuda-cli (the command line)
# CARGO_TARGET_DIR, when set, is honoured (shared build cache: a tree cargo has already built
# makes this a copy).
set -eu
src=$1
build=$2
profile=$3
features=$4
shift 4
: "${CARGO_TARGET_DIR:=$build/cargo-target}"
export CARGO_TARGET_DIR
case "$profile" in
  release) cargo_profile=release dir=release ;;
  debug) cargo_profile=dev dir=debug ;;
  *) echo "cargo-wrapper.sh: profile must be release or debug, not $profile" >&2; exit 2 ;;
esac
if ! command -v cargo >/dev/null; then
  echo "cargo-wrapper.sh: cargo not found on PATH. Under sudo (whose PATH has no ~/.cargo/bin)," \
    "build as yourself first: meson compile -C BUILD, then sudo meson install -C BUILD --no-rebuild" >&2
  exit 1
fi
packages=
for out in "$@"; do
  case "$(basename "$out")" in
    libvmafcuda.so.*|libvmafcuda.a) p=vmafcuda-ffi ;;
    libgstvmafcuda.so) p=gst-vmafcuda ;;
    vmafcuda) p=vmafcuda-cli ;;
    *) echo "cargo-wrapper.sh: no cargo artifact for output $out" >&2; exit 2 ;;
  esac
  case " $packages " in *" -p $p "*) ;; *) packages="$packages -p $p" ;; esac
done
# shellcheck disable=SC2086 # $packages is a list of words
cargo build --locked --profile "$cargo_profile" ${features:+--features "$features"} $packages \
  --manifest-path "$src/Cargo.toml"
for out in "$@"; do
  case "$(basename "$out")" in
    libvmafcuda.so.*) from=libvmafcuda.so ;;
    *) from=$(basename "$out") ;;
  esac
  cp "$CARGO_TARGET_DIR/$dir/$from" "$out"
done
