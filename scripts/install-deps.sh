#!/usr/bin/env bash
# Installs the Debian packages that building and testing the workspace need, where any is
# missing: it says which and why, then runs apt-get (as root, else through sudo; a clear message
# when neither is possible). Nothing is installed when everything is there.
# Usage: scripts/install-deps.sh [--all] [--check]
#   --all    also the optional test tools (valgrind, chromium), as CI has them
#   --check  only report what is missing (exit 1 when a needed package is missing)
#   VMAFCUDA_NO_INSTALL=1  never install: list what is missing and stop (exit 1)
# On a system without dpkg/apt-get it checks the tools and pkg-config modules instead and says
# what to install. scripts/test.sh (the README's test command) runs this first.
set -euo pipefail

say() { echo "scripts/install-deps.sh: $*" >&2; }
die() { say "$*"; exit 1; }

all=0 check_only=0
for arg in "$@"; do
  case "$arg" in
    --all) all=1 ;;
    --check) check_only=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $arg (see --help)" ;;
  esac
done

# Debian 12 package: what needs it.
needed=(
  "gcc:the C compiler and linker (rustc links through cc; the C API test compiles C)"
  "libc6-dev:C runtime objects and headers for linking"
  "pkg-config:finds GStreamer for the gstreamer-rs crates"
  "libgstreamer1.0-dev:builds the GStreamer element (gst-vmafcuda)"
  "libgstreamer-plugins-base1.0-dev:builds the GStreamer element (video, app, base)"
  "gstreamer1.0-plugins-base:elements the element's tests use (videotestsrc, appsrc)"
  "gstreamer1.0-plugins-bad:y4mdec in the element's tests, libgstcuda for CUDA memory"
  "gstreamer1.0-tools:gst-launch-1.0 and gst-inspect-1.0 tests of the built plugin"
)
optional=(
  "valgrind:runs the C API test under valgrind (without it the test runs without valgrind)"
  "chromium:renders the HTML report headless (without it that test is skipped)"
)

missing_debian() {
  local entry pkg status
  for entry in "$@"; do
    pkg=${entry%%:*}
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = installed ] || echo "$pkg"
  done
}

# Without dpkg: the same needs, as commands and pkg-config modules.
missing_other() {
  command -v cc >/dev/null || echo "a C compiler and linker (cc)"
  command -v pkg-config >/dev/null || { echo "pkg-config"; return; }
  local m
  for m in gstreamer-1.0 gstreamer-base-1.0 gstreamer-video-1.0 gstreamer-app-1.0 gstreamer-check-1.0; do
    pkg-config --exists "$m" || echo "GStreamer development files ($m.pc)"
  done
  command -v gst-launch-1.0 >/dev/null || echo "GStreamer tools (gst-launch-1.0)"
}

if command -v dpkg-query >/dev/null && command -v apt-get >/dev/null; then
  wanted=("${needed[@]}")
  [ "$all" = 1 ] && wanted+=("${optional[@]}")
  mapfile -t missing < <(missing_debian "${wanted[@]}")
  if [ "${#missing[@]}" -gt 0 ]; then
    say "missing Debian packages: ${missing[*]}"
    for pkg in "${missing[@]}"; do
      for entry in "${needed[@]}" "${optional[@]}"; do
        [ "${entry%%:*}" = "$pkg" ] && say "  $pkg: ${entry#*:}"
      done
    done
    [ "$check_only" = 1 ] && exit 1
    install=(apt-get install -y --no-install-recommends "${missing[@]}")
    if [ "${VMAFCUDA_NO_INSTALL:-0}" = 1 ]; then
      die "VMAFCUDA_NO_INSTALL=1: not installing them; as root: apt-get update && ${install[*]}"
    fi
    if [ "$(id -u)" = 0 ]; then
      sudo=()
    elif command -v sudo >/dev/null; then
      sudo=(sudo)
      say "not root: installing through sudo (it may ask for your password)"
    else
      die "cannot install them: not root and no sudo. As root run: apt-get update && ${install[*]}"
    fi
    say "installing them: ${sudo[*]:+${sudo[*]} }apt-get update && ${sudo[*]:+${sudo[*]} }${install[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
      || die "apt-get update failed (network? apt sources?)"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive "${install[@]}" \
      || die "apt-get install failed: ${install[*]}"
    mapfile -t still < <(missing_debian "${wanted[@]}")
    [ "${#still[@]}" -eq 0 ] || die "still missing after apt-get install: ${still[*]}"
    say "installed: ${missing[*]}"
  else
    say "system packages: all present"
  fi
  if [ "$all" = 0 ]; then
    mapfile -t missing_opt < <(missing_debian "${optional[@]}")
    for pkg in "${missing_opt[@]}"; do
      for entry in "${optional[@]}"; do
        [ "${entry%%:*}" = "$pkg" ] && say "optional package $pkg not installed: ${entry#*:}"
      done
    done
    [ "${#missing_opt[@]}" -gt 0 ] && say "(scripts/install-deps.sh --all installs the optional ones)"
  fi
else
  mapfile -t missing < <(missing_other)
  if [ "${#missing[@]}" -gt 0 ]; then
    say "not a Debian system (no dpkg-query/apt-get), so nothing is installed for you; missing:"
    printf '  %s\n' "${missing[@]}" >&2
    die "install them with your package manager (Debian names: $(printf '%s ' "${needed[@]%%:*}"))"
  fi
  say "system tools and GStreamer development files: present"
fi
exit 0
