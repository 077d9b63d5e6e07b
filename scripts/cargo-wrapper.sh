#!/bin/sh
# Builds what meson installs with cargo and copies each output where meson expects it.
#   cargo-wrapper.sh SOURCE_ROOT BUILD_DIR PROFILE FEATURES OUT...
# PROFILE: release or debug. FEATURES: cargo features of the CLI build ('' for none), e.g.
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
# One cargo call per artifact, selecting the packages the README's and CI's own commands select
# (`cargo build --release -p gst-vmafcuda`, `cargo run --release` = the default members), so
# their builds are reused: cargo unifies dependency features over the packages of one call, so a
# call that selected all three would resolve them differently and build everything again.
built=
for out in "$@"; do
  case "$(basename "$out")" in
    libvmafcuda.so.*|libvmafcuda.a) sel="-p vmafcuda-ffi" ;;
    libgstvmafcuda.so) sel="-p gst-vmafcuda" ;;
    vmafcuda) sel="-p vmafcuda -p vmafcuda-cli" ;;
    *) echo "cargo-wrapper.sh: no cargo artifact for output $out" >&2; exit 2 ;;
  esac
  case "$built" in *"[$sel]"*) continue ;; esac
  built="${built}[$sel]"
  extra=
  case "$sel" in *vmafcuda-cli*) extra=$features ;; esac
  # shellcheck disable=SC2086 # $sel is a list of words
  cargo build --locked --profile "$cargo_profile" --manifest-path "$src/Cargo.toml" $sel \
    ${extra:+--features "$extra"}
done
for out in "$@"; do
  case "$(basename "$out")" in
    libvmafcuda.so.*) from=libvmafcuda.so ;;
    *) from=$(basename "$out") ;;
  esac
  cp "$CARGO_TARGET_DIR/$dir/$from" "$out"
done
