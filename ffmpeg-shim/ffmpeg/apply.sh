#!/usr/bin/env bash
# Adds the vmafcuda filter to an FFmpeg source tree (checked with FFmpeg 5.1).
#   ffmpeg-shim/ffmpeg/apply.sh <ffmpeg-src-dir>
# then: PKG_CONFIG_PATH=<prefix>/lib/pkgconfig ./configure --enable-libvmafcuda ...
# The library is found through pkg-config (`vmafcuda`, installed by `meson install`).
# Idempotent: running it twice leaves the tree as after one run (the filter source is refreshed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="${1:?usage: apply.sh <ffmpeg-src-dir>}"
cd "$src"
for f in configure libavfilter/Makefile libavfilter/allfilters.c; do
  [ -f "$f" ] || { echo "apply.sh: $src/$f not found: not an FFmpeg source tree" >&2; exit 1; }
done

# Copy only when changed, so that a rebuild recompiles nothing that did not change.
cmp -s "$here/vf_vmafcuda.c" libavfilter/vf_vmafcuda.c 2>/dev/null \
  || cp "$here/vf_vmafcuda.c" libavfilter/vf_vmafcuda.c

# configure: the external library, its help line, the filter's dependency and the check.
if ! grep -q 'libvmafcuda' configure; then
  sed -i \
    -e 's/^\(  --enable-libvmaf  .*\)$/\1\n  --enable-libvmafcuda     enable the vmafcuda filter via libvmafcuda [no]/' \
    -e 's/^\(    libvmaf\)$/\1\n    libvmafcuda/' \
    -e 's/^\(libvmaf_filter_deps="libvmaf"\)$/\1\nvmafcuda_filter_deps="libvmafcuda"/' \
    -e 's/^\(enabled libvmaf  .*\)$/\1\nenabled libvmafcuda       \&\& require_pkg_config libvmafcuda vmafcuda vmafcuda.h vmafcuda_scorer_new/' \
    configure
fi
for want in '--enable-libvmafcuda' '^    libvmafcuda$' 'vmafcuda_filter_deps=' 'require_pkg_config libvmafcuda'; do
  grep -q -e "$want" configure || { echo "apply.sh: could not patch configure ($want)" >&2; exit 1; }
done

if ! grep -q 'CONFIG_VMAFCUDA_FILTER' libavfilter/Makefile; then
  sed -i 's/^\(OBJS-$(CONFIG_LIBVMAF_FILTER) .*\)$/\1\nOBJS-$(CONFIG_VMAFCUDA_FILTER)               += vf_vmafcuda.o framesync.o/' \
    libavfilter/Makefile
fi
grep -q 'CONFIG_VMAFCUDA_FILTER' libavfilter/Makefile || { echo "apply.sh: could not patch libavfilter/Makefile" >&2; exit 1; }

if ! grep -q 'ff_vf_vmafcuda' libavfilter/allfilters.c; then
  sed -i 's/^\(extern const AVFilter ff_vf_libvmaf;\)$/\1\nextern const AVFilter ff_vf_vmafcuda;/' libavfilter/allfilters.c
fi
grep -q 'ff_vf_vmafcuda' libavfilter/allfilters.c || { echo "apply.sh: could not patch libavfilter/allfilters.c" >&2; exit 1; }

echo "apply.sh: vmafcuda filter added to $src (configure with --enable-libvmafcuda)"
