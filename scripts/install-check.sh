#!/usr/bin/env bash
# Checks that vmafcuda installs and works where it is installed (CI runs it; it reuses the
# release build in CARGO_TARGET_DIR, default target/, so cargo has little or nothing to do):
#   1. `meson install` into a temporary prefix: library, header, .pc, CLI and plugin where
#      meson.build says; the CLI and the plugin (GST_PLUGIN_PATH=PREFIX/LIBDIR/gstreamer-1.0)
#      run from there;
#   2. a staged default-prefix install (DESTDIR, prefix /usr/local) puts the plugin into
#      GStreamer's own plugin directory (pkg-config pluginsdir);
#   3. with --system (root, a throw-away machine: CI): the real `meson setup && meson install`
#      at the default prefix, gst-inspect-1.0 and a pipeline with no GST_PLUGIN_PATH, then
#      `ninja uninstall`; then scripts/make-debs.sh, `dpkg -i` of the four packages, the same
#      checks against the installed packages, `dpkg -r`.
# "Works" means: gst-inspect-1.0 finds element vmafcuda in the installed file, and a gst-launch-1.0
# pipeline and the CLI score a corpus pair with libvmaf's pooled VMAF (1e-9), and the CLI scores
# its built-in clip.
# Usage: scripts/install-check.sh [--system]
# Needs: meson ninja-build dpkg-dev pkg-config zstd python3, GStreamer -dev + tools + plugins-bad,
# the corpus at ../shared/corpus (or VMAFCUDA_CORPUS).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
system=0
[ "${1:-}" = --system ] && system=1
corpus="${VMAFCUDA_CORPUS:-$repo/../shared/corpus}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
work="$CARGO_TARGET_DIR/install-check"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
say() { echo "--- $* (+$(($(date +%s) - t0))s)"; }
fail() { echo "install-check.sh: FAILED: $*" >&2; exit 1; }
unset GST_PLUGIN_PATH GST_PLUGIN_PATH_1_0
pair=s_rocket_176x144__x264_crf32
ref=s_rocket_176x144

zstd -dqf "$corpus/video/$ref.y4m.zst" -o "$tmp/ref.y4m"
zstd -dqf "$corpus/video/$pair.y4m.zst" -o "$tmp/dist.y4m"
expected="$corpus/vmaf/$pair.vmaf_v0.6.1.full.json"

# same_vmaf RESULTS.json: pooled VMAF mean equal to libvmaf's within 1e-9.
same_vmaf() {
  python3 - "$1" "$expected" <<'EOF'
import json, sys
got = json.load(open(sys.argv[1]))["pooled_metrics"]["vmaf"]["mean"]
want = json.load(open(sys.argv[2]))["pooled_metrics"]["vmaf"]["mean"]
print(f"pooled VMAF {got!r}, libvmaf {want!r}")
sys.exit(0 if abs(got - want) <= 1e-9 else 1)
EOF
}

# check_plugin WHERE: gst-inspect-1.0 loads element vmafcuda from the file WHERE (a fresh
# registry, so no cache hides anything), and a pipeline scores the corpus pair.
check_plugin() {
  local where=$1 registry="$tmp/registry-$RANDOM.bin" info loaded
  info=$(GST_REGISTRY=$registry gst-inspect-1.0 vmafcuda) || fail "gst-inspect-1.0 vmafcuda"
  loaded=$(sed -n 's/^ *Filename *//p' <<<"$info")
  # Compared as real paths: with merged /usr GStreamer may name /usr/lib/... as /lib/...
  if [ -z "$loaded" ] || [ "$(readlink -f "$loaded")" != "$(readlink -f "$where")" ]; then
    fail "gst-inspect-1.0 loaded vmafcuda from ${loaded:-nowhere}, not $where"
  fi
  echo "gst-inspect-1.0 vmafcuda: $(grep -E '^ +Long-name' <<<"$info" | sed 's/^ *//'), from $where"
  rm -f "$tmp/gst.json"
  GST_REGISTRY=$registry gst-launch-1.0 -q filesrc location="$tmp/ref.y4m" ! y4mdec ! \
    vmafcuda name=v backend=cpu results-filename="$tmp/gst.json" ! fakesink \
    filesrc location="$tmp/dist.y4m" ! y4mdec ! v.dist_sink >"$tmp/gst.log" 2>&1 \
    || { cat "$tmp/gst.log"; fail "gst-launch-1.0 pipeline"; }
  echo -n "gst-launch-1.0 filesrc ! y4mdec ! vmafcuda: "
  same_vmaf "$tmp/gst.json" || fail "the plugin's VMAF differs from libvmaf's"
}

# check_cli BIN: scores the corpus pair (libvmaf's VMAF) and the built-in clip.
check_cli() {
  local bin=$1
  "$bin" score -q -r "$tmp/ref.y4m" -d "$tmp/dist.y4m" --backend cpu -o "$tmp/cli.json" >/dev/null \
    || fail "$bin score"
  echo -n "$bin score -r ref.y4m -d dist.y4m: "
  same_vmaf "$tmp/cli.json" || fail "the CLI's VMAF differs from libvmaf's"
  echo "$bin score (built-in clip): $("$bin" score -q --backend cpu | tail -1)"
}

say "1. meson install into a temporary prefix"
prefix="$tmp/prefix"
rm -rf "$work/prefix-build"
meson setup "$work/prefix-build" "$repo" --prefix "$prefix" --libdir lib -Dgst_plugin=enabled >/dev/null
meson install -C "$work/prefix-build" --quiet >/dev/null
for f in bin/vmafcuda lib/gstreamer-1.0/libgstvmafcuda.so lib/libvmafcuda.so.0 lib/libvmafcuda.a \
  lib/pkgconfig/vmafcuda.pc include/vmafcuda.h; do
  [ -e "$prefix/$f" ] || fail "meson install did not install $prefix/$f"
done
[ "$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --variable=libdir vmafcuda)" = "$prefix/lib" ] \
  || fail "vmafcuda.pc has the wrong libdir"
GST_PLUGIN_PATH="$prefix/lib/gstreamer-1.0" check_plugin "$prefix/lib/gstreamer-1.0/libgstvmafcuda.so"
check_cli "$prefix/bin/vmafcuda"

say "2. staged default-prefix install (DESTDIR): the plugin goes to GStreamer's plugin directory"
plugins_dir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
rm -rf "$work/default-build"
meson setup "$work/default-build" "$repo" -Dgst_plugin=enabled >/dev/null
DESTDIR="$tmp/stage" meson install -C "$work/default-build" --quiet >/dev/null
[ -f "$tmp/stage$plugins_dir/libgstvmafcuda.so" ] || fail "plugin not staged in $plugins_dir"
[ -x "$tmp/stage/usr/local/bin/vmafcuda" ] || fail "CLI not staged in /usr/local/bin"
echo "staged: $plugins_dir/libgstvmafcuda.so, /usr/local/bin/vmafcuda"

if [ "$system" = 1 ]; then
  [ "$(id -u)" = 0 ] || fail "--system needs root (and a throw-away machine)"
  say "3a. system install: meson install -C build at the default prefix"
  [ ! -e "$plugins_dir/libgstvmafcuda.so" ] || fail "$plugins_dir/libgstvmafcuda.so already there"
  meson install -C "$work/default-build" --quiet >/dev/null
  ldconfig
  check_plugin "$plugins_dir/libgstvmafcuda.so"
  check_cli /usr/local/bin/vmafcuda
  ninja -C "$work/default-build" uninstall >/dev/null
  [ ! -e "$plugins_dir/libgstvmafcuda.so" ] || fail "ninja uninstall left the plugin"

  say "3b. Debian packages: scripts/make-debs.sh, dpkg -i"
  "$repo/scripts/make-debs.sh" "$work/debs" 2>&1 | grep '\.deb$'
  dpkg -i "$work"/debs/*_"$(dpkg --print-architecture)".deb >/dev/null
  dpkg-query -W vmafcuda gstreamer1.0-vmafcuda libvmafcuda0 libvmafcuda-dev
  check_plugin "$plugins_dir/libgstvmafcuda.so"
  check_cli /usr/bin/vmafcuda
  [ "$(pkg-config --modversion vmafcuda)" = "$(dpkg-query -W -f='${Version}' libvmafcuda0)" ] \
    || fail "pkg-config vmafcuda does not report the package version"
  dpkg -r libvmafcuda-dev libvmafcuda0 gstreamer1.0-vmafcuda vmafcuda >/dev/null
  [ ! -e "$plugins_dir/libgstvmafcuda.so" ] || fail "dpkg -r left the plugin"
fi
say "install-check.sh: OK"
