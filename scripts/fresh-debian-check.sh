#!/usr/bin/env bash
# Runs the README's set-up commands, as written, on a fresh Debian 12 made by debootstrap, with
# nothing added but rustup (and the CA certificates it needs to download the toolchain):
#   scripts/install-deps.sh; cargo run --release -- score; scripts/test.sh
# Usage (as root, on a Debian/Ubuntu host with debootstrap; needs deb.debian.org,
# static.rust-lang.org and crates.io):
#   scripts/fresh-debian-check.sh [--install | --install-only] DIR
#     DIR: where the chroot goes (made when absent, reused when present, with the cargo target
#       directory of the last run: delete DIR for a clean run)
#     --install: afterwards also install meson ninja-build dpkg-dev zstd python3 and run
#       scripts/install-check.sh --system in the chroot (meson installs, the Debian packages)
#     --install-only: that alone, without the README's commands
# The source is the working tree's tracked and unignored files (git ls-files), copied to
# DIR/root/src/vmafcuda; the corpus ($VMAFCUDA_CORPUS or ../shared/corpus) to DIR/root/src/shared.
# The host's locally added CA certificates (/usr/local/share/ca-certificates) are copied in, so
# the chroot can reach the network through the same TLS-intercepting proxy, if any, as the host.
# The whole log goes to DIR/root/fresh-debian-check.log; a summary is printed at the end.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
install=0 readme=1
case "${1:-}" in
  --install) install=1; shift ;;
  --install-only) install=1 readme=0; shift ;;
esac
dir="${1:?usage: scripts/fresh-debian-check.sh [--install | --install-only] DIR}"
corpus="${VMAFCUDA_CORPUS:-$repo/../shared/corpus}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
rustup_url=https://static.rust-lang.org/rustup/dist/x86_64-unknown-linux-gnu/rustup-init
[ "$(id -u)" = 0 ] || { echo "run as root (debootstrap and chroot)" >&2; exit 1; }
[ -f "$corpus/manifest.json" ] || { echo "corpus not found at $corpus" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "apt-get install debootstrap" >&2; exit 1; }

if [ ! -x "$dir/bin/bash" ]; then
  echo "--- debootstrap bookworm into $dir"
  debootstrap bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 \
    || { tail -20 "$dir.debootstrap.log"; exit 1; }
fi

mounted=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" || true; done
}
trap cleanup EXIT
mnt() { mount "$@"; mounted+=("${*: -1}"); }
mnt -t proc proc "$dir/proc"
mnt -t sysfs sys "$dir/sys"
mnt --bind /dev "$dir/dev"
mnt --bind /dev/pts "$dir/dev/pts"
cp /etc/resolv.conf "$dir/etc/resolv.conf"

log=/root/fresh-debian-check.log
in_chroot() { chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"; }

if [ ! -x "$dir/root/.cargo/bin/rustup" ]; then
  echo "--- rustup (rustup-init from static.rust-lang.org, default stable toolchain, minimal profile)"
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$dir/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
  fi
  in_chroot "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends ca-certificates >/dev/null && update-ca-certificates >/dev/null"
  curl -sSf -o "$dir/usr/local/bin/rustup-init" "$rustup_url"
  chmod 755 "$dir/usr/local/bin/rustup-init"
  in_chroot "rustup-init -y --profile minimal >/dev/null 2>&1"
fi

echo "--- source and corpus into $dir/root/src"
# Everything but the cargo target directory goes (a re-run rebuilds only what changed).
mkdir -p "$dir/root/src/vmafcuda"
find "$dir/root/src/vmafcuda" -mindepth 1 -maxdepth 1 ! -name target -exec rm -rf {} +
rm -rf "$dir/root/src/shared"
mkdir -p "$dir/root/src/shared"
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) \
  | tar -xf - -C "$dir/root/src/vmafcuda"
cp -a "$corpus" "$dir/root/src/shared/corpus"

status=0
: >"$dir$log"
if [ "$readme" = 1 ]; then
  echo "--- the README's commands (log: $dir$log)"
  in_chroot "set -o pipefail; . /root/.cargo/env; cd /root/src/vmafcuda
  echo \"\$(. /etc/os-release; echo \$PRETTY_NAME), \$(rustc --version), \$(nproc) cores\"
  for c in 'scripts/install-deps.sh' 'cargo run --release -- score' 'scripts/test.sh'; do
    echo \"=== \$c\"; s=\$(date +%s)
    bash -c \"\$c\" || { echo \"=== FAILED: \$c\"; exit 1; }
    echo \"=== ok: \$c (\$(( \$(date +%s) - s )) s)\"
  done" >>"$dir$log" 2>&1 || status=$?
fi

if [ "$status" = 0 ] && [ "$install" = 1 ]; then
  echo "--- scripts/install-check.sh --system (log: $dir$log)"
  in_chroot "set -o pipefail; . /root/.cargo/env; cd /root/src/vmafcuda
    echo '=== apt-get install meson ninja-build dpkg-dev zstd python3'
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends meson \
      ninja-build dpkg-dev zstd python3 >/dev/null
    echo '=== scripts/install-check.sh --system'; s=\$(date +%s)
    scripts/install-check.sh --system || { echo '=== FAILED: scripts/install-check.sh --system'; exit 1; }
    echo \"=== ok: scripts/install-check.sh --system (\$(( \$(date +%s) - s )) s)\"" \
    >>"$dir$log" 2>&1 || status=$?
fi

echo "--- summary"
grep -E '^(Debian|=== |scripts/install-deps.sh: (missing|installed|system)|VMAF mean|shot +[0-9]|test result:|error|--- |gst-inspect|gst-launch|/.*vmafcuda (score|\(built)|staged|(vmafcuda|gstreamer1.0-vmafcuda|libvmafcuda0|libvmafcuda-dev)\s)' \
  "$dir$log" | awk '/^test result:/ { n++; p += $4; f += $6; i += $8; next } { print }
  END { if (n) printf "cargo test: %d test binaries, %d passed, %d failed, %d ignored\n", n, p, f, i }'
exit "$status"
