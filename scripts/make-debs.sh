#!/usr/bin/env bash
# Builds Debian packages of vmafcuda with dpkg-deb (no debian/ directory, no cargo-deb):
#   vmafcuda                 the command line, /usr/bin/vmafcuda
#   gstreamer1.0-vmafcuda    the GStreamer plugin, in GStreamer's plugin directory
#   libvmafcuda0             the C library, /usr/lib/<triplet>/libvmafcuda.so.0
#   libvmafcuda-dev          its header, pkg-config file, .so link and static library
# Usage: scripts/make-debs.sh OUTDIR
# The files are what `meson install` puts under --prefix=/usr (one cargo release build through
# scripts/cargo-wrapper.sh; CARGO_TARGET_DIR, default target/, is reused), staged with DESTDIR,
# split per package and stripped of debug info; Depends come from dpkg-shlibdeps.
# Needs: meson ninja-build dpkg-dev pkg-config, GStreamer's -dev packages (for the plugin).
# Maintainer: $DEBFULLNAME <$DEBEMAIL> when set.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: scripts/make-debs.sh OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
work="$CARGO_TARGET_DIR/debs"
version=$(sed -n "s/^  version: '\([^']*\)'.*/\1/p" "$repo/meson.build")
arch=$(dpkg --print-architecture)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
maintainer="${DEBFULLNAME:-vmafcuda developers} <${DEBEMAIL:-vmafcuda@invalid}>"
[ -n "$version" ] || { echo "make-debs.sh: no version in meson.build" >&2; exit 1; }

say() { echo "make-debs.sh: $*" >&2; }

say "meson install --prefix=/usr into a staging directory"
rm -rf "$work/stage" "$work/pkg"
if [ ! -f "$work/meson/build.ninja" ]; then
  meson setup "$work/meson" "$repo" --prefix=/usr --libdir="lib/$triplet" \
    -Dgst_plugin=enabled -Dcli=true >/dev/null
fi
DESTDIR="$work/stage" meson install -C "$work/meson" --quiet
stage="$work/stage"
plugins_dir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
libdir=/usr/lib/$triplet

# package NAME SECTION DESCRIPTION_LINE DESCRIPTION_BODY EXTRA_CONTROL FILE...
# FILE: a path under the stage (installed at the same path).
package() {
  local name=$1 section=$2 short=$3 long=$4 extra=$5
  shift 5
  local root="$work/pkg/$name" f
  mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$name"
  for f in "$@"; do
    mkdir -p "$root$(dirname "$f")"
    cp -a "$stage$f" "$root$f"
    case "$f" in
      *.a) strip --strip-debug "$root$f" ;;
      *.h|*.pc) ;;
      *) [ -L "$root$f" ] || strip --strip-debug --remove-section=.comment "$root$f" ;;
    esac
  done
  cat >"$root/usr/share/doc/$name/copyright" <<EOF
vmafcuda $version: Netflix VMAF, bit-exact with libvmaf 3.2.0, on the CPU and CUDA GPUs.
License: BSD-2-Clause-Patent (see the workspace Cargo.toml; the GStreamer plugin registers
itself as MIT/X11, a licence string GStreamer 1.22 knows).
EOF
  # Depends of the ELF files, as dpkg-shlibdeps finds them (it wants a debian/control beside it).
  local elves=() deps=''
  for f in "$@"; do
    if [ ! -L "$root$f" ] && readelf -h "$root$f" >/dev/null 2>&1; then elves+=("$root$f"); fi
  done
  if [ "${#elves[@]}" -gt 0 ]; then
    mkdir -p "$work/shlibdeps/debian"
    printf 'Source: vmafcuda\n\nPackage: %s\nArchitecture: any\n' "$name" \
      >"$work/shlibdeps/debian/control"
    deps=$(cd "$work/shlibdeps" && dpkg-shlibdeps -O "${elves[@]/#/-e}" 2>"$work/shlibdeps.log" \
      | sed -n 's/^shlibs:Depends=//p') || { cat "$work/shlibdeps.log" >&2; exit 1; }
  fi
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Section: $section"
    echo "Priority: optional"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    [ -n "$deps$extra" ] && echo "Depends: ${deps}${deps:+${extra:+, }}${extra}"
    echo "Homepage: https://github.com/Netflix/vmaf (the reference this reproduces)"
    echo "Description: $short"
    printf '%s\n' "$long" | sed 's/^/ /'
  } >"$root/DEBIAN/control"
  if [ "$name" = "libvmafcuda0" ]; then
    echo "libvmafcuda 0 libvmafcuda0 (>= $version)" >"$root/DEBIAN/shlibs"
    echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
  fi
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$out/${name}_${version}_${arch}.deb" >/dev/null
  say "$out/${name}_${version}_${arch}.deb"
}

package vmafcuda video "VMAF video quality scores, bit-exact with Netflix libvmaf" \
"The vmafcuda command line: full-reference VMAF (vmaf_v0.6.1, 4k, neg models), PSNR,
per-shot scores, JSON/CSV/XML logs, an HTML report, and a resident service. Runs on a
CUDA GPU when the NVIDIA driver is there, else on the CPU, with identical numbers.
Reads YUV4MPEG2 (.y4m) input." "" /usr/bin/vmafcuda

package gstreamer1.0-vmafcuda video "GStreamer element vmafcuda: VMAF per shot, bit-exact with libvmaf" \
"Element vmafcuda (aggregator: ref_sink, dist_sink, src), a drop-in for the vmaf element
that scores per shot on a CUDA GPU (frames in CUDA memory read in place) or the CPU and
posts VMAF element messages." "" "$plugins_dir/libgstvmafcuda.so"

package libvmafcuda0 libs "VMAF scoring library, bit-exact with Netflix libvmaf (C API)" \
"libvmafcuda: the vmafcuda engine behind a C API (vmafcuda.h), on a CUDA GPU or the CPU." \
"" "$libdir/libvmafcuda.so.$version" "$libdir/libvmafcuda.so.0"

package libvmafcuda-dev libdevel "VMAF scoring library (development files)" \
"Header, pkg-config file (vmafcuda), .so link and static library of libvmafcuda." \
"libvmafcuda0 (= $version)" /usr/include/vmafcuda.h "$libdir/pkgconfig/vmafcuda.pc" \
"$libdir/libvmafcuda.so" "$libdir/libvmafcuda.a"
