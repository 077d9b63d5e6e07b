#!/usr/bin/env bash
# Builds the Python wheel (python/, maturin, release), installs it into a fresh venv with numpy
# and pytest, and runs python/tests. The CLI comparison test uses $VMAFCUDA_CLI or
# <target>/release/vmafcuda when built (skipped otherwise); the corpus is ../shared/corpus (or
# $VMAFCUDA_CORPUS).
# Usage: scripts/python-check.sh [--with-ray] [pytest args...]
#   --with-ray  also install Ray (about a minute) so that tests/test_ray.py runs (skipped without)
# Makes <target>/py-venv (maturin, kept) and <target>/py-test-venv (made anew every run), where
# <target> is $CARGO_TARGET_DIR or target/.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()
if [ "${1:-}" = --with-ray ]; then
  extra=(ray)
  shift
fi
root=$(pwd)
target=$(realpath -m "${CARGO_TARGET_DIR:-$root/target}")
tools=$target/py-venv
if [ ! -x "$tools/bin/maturin" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q 'maturin>=1.5,<2'
fi
rm -rf "$target/wheels"
(cd python && "$tools/bin/maturin" build --locked --release --out "$target/wheels")
test_venv=$target/py-test-venv
rm -rf "$test_venv"
python3 -m venv "$test_venv"
"$test_venv/bin/pip" install -q "$target"/wheels/vmafcuda-*.whl numpy pytest "${extra[@]}"
# From the repository root: the source folder python/vmafcuda (no extension in it) must not
# shadow the installed package.
"$test_venv/bin/pytest" -q python/tests "$@"
