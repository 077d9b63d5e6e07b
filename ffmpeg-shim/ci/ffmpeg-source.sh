#!/usr/bin/env bash
# Sourced by ffmpeg-test.sh and scripts/gpu-ffmpeg-check.sh: Debian's FFmpeg 5.1 source.
#
#   ffmpeg_source DL_DIR SRC_DIR
# downloads the Debian source package into DL_DIR (`apt-get source`, adding deb-src entries that
# mirror the existing Debian ones when apt has none) unless it is there already, and unpacks it,
# without Debian's patches, into SRC_DIR unless SRC_DIR/configure exists.
ffmpeg_source() {
  local dl="$1" src="$2" dsc
  [ -f "$src/configure" ] && return 0
  if ! ls "$dl"/ffmpeg_*.dsc >/dev/null 2>&1; then
    if ! apt-get source --print-uris ffmpeg >/dev/null 2>&1; then
      # Mirror the existing Debian entries as deb-src (deb822 or one-line format).
      if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
          > /etc/apt/sources.list.d/vmafcuda-deb-src.sources
      else
        grep -h '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
          > /etc/apt/sources.list.d/vmafcuda-deb-src.list
      fi
      apt-get update -qq
    fi
    rm -rf "$dl" && mkdir -p "$dl"
    (cd "$dl" && apt-get source -qq --download-only ffmpeg 2>&1 | grep -v unsandboxed || true)
  fi
  dsc="$(ls "$dl"/ffmpeg_*.dsc | head -n1)"
  rm -rf "$src.tmp"
  dpkg-source -x --skip-patches "$dsc" "$src.tmp" >/dev/null 2>&1
  mv "$src.tmp" "$src"
}
