#!/usr/bin/env bash
# Instructions per warp role of VIF scale 0's tensor-core vertical pass (vif_scale0_u16_mma and
# vif_scale0_u8_mma), counted in the sm_90 SASS between the tile's first and second barriers:
# each role's branch region plus the instructions every warp of that role runs before it (how
# the counts in kernels/vif.cu's vertical-pass comments and BENCHMARKS.md were made). The five
# blocks of a warp are unrolled, so these are the instructions one warp executes per tile.
#
#   scripts/vif-roles.sh [kernels/vif.cu] [extra nvcc flags...]
#
# Needs the pinned nvcc that scripts/build-kernels.sh installs under target/cuda-toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-kernels/vif.cu}
shift || true
cu13=$(target/cuda-toolchain/bin/python -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cu13/bin/nvcc" -cubin -arch=sm_90 -O3 -std=c++17 -I kernels "$@" -o "$tmp/v.cubin" "$src"
"$cu13/bin/nvdisasm" -c "$tmp/v.cubin" > "$tmp/v.sass"
python3 - "$tmp/v.sass" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
ins = lambda l: re.match(r"\s+/\*[0-9a-f]+\*/\s+\S", l) and " NOP" not in l
for k in ("u16_mma", "u8_mma"):
    st = next(i for i, l in enumerate(lines) if re.match(r"\s*\.text\.vif_scale0_%s:" % k, l))
    en = next(i for i in range(st + 1, len(lines)) if ".section" in lines[i] and ".text." in lines[i])
    L = lines[st:en]
    b0, b1 = [i for i, l in enumerate(L) if "BAR.SYNC" in l][:2]
    lab = {l.strip().rstrip(":"): i for i, l in enumerate(L) if l.startswith(".L_x")}
    cond = [i for i in range(b0, b1) if "BRA" in L[i] and "@" in L[i]][:2]
    uncond = [i for i in range(b0, b1) if "BRA" in L[i] and "@" not in L[i]][:2]
    target = lambda i: lab[re.search(r"\((\.L_x_\d+)\)", L[i]).group(1)]
    n = lambda a, b: sum(1 for l in L[a:b] if ins(l))
    # b0 .. first branch: every warp; -> the decimation (m == 0) or on: the x², y² and xy warps'
    # common part, then the squares' region and xy's.
    pre, mid = n(b0, cond[0] + 1), n(cond[0] + 1, cond[1] + 1)
    sq, xy = n(cond[1] + 1, uncond[0] + 1), n(uncond[0] + 1, uncond[1] + 1)
    dec = n(target(cond[0]), target(uncond[0]))
    roles = {"decimation": pre + dec, "x² or y²": pre + mid + sq, "xy": pre + mid + xy}
    tile = 2 * (roles["decimation"] + 2 * roles["x² or y²"] + roles["xy"])
    print(f"vif_scale0_{k}: " + ", ".join(f"{r} {c}" for r, c in roles.items()) + f"; per tile {tile}")
PY
