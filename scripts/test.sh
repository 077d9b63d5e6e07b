#!/usr/bin/env bash
# The README's test command: scripts/install-deps.sh (installs the Debian packages the build and
# the tests need where any is missing, and says so), then
#   cargo test --workspace --locked [ARGS...]
# Usage: scripts/test.sh [--all-packages] [ARGS for cargo test...]
#   --all-packages  also install the optional test tools (valgrind, chromium), as CI has them
# Needs the reference corpus at ../shared/corpus (or VMAFCUDA_CORPUS=/path).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "scripts/test.sh: $*" >&2; }
die() { say "$*"; exit 1; }

deps=()
case "${1:-}" in
  --all-packages) deps=(--all); shift ;;
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
scripts/install-deps.sh "${deps[@]}"

if ! command -v cargo >/dev/null; then
  # A fresh rustup install puts cargo in ~/.cargo/bin; the login shell adds it to PATH later.
  if [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
    PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
  else
    die "cargo not found: install Rust with rustup (https://rustup.rs), Rust >= 1.92"
  fi
fi

corpus="${VMAFCUDA_CORPUS:-../shared/corpus}"
[ -f "$corpus/manifest.json" ] \
  || die "the libvmaf reference corpus is not at $corpus (put it there or set VMAFCUDA_CORPUS=/path)"

say "cargo test --workspace --locked $*"
exec cargo test --workspace --locked "$@"
