"""Device-resident PyTorch input against the engine's own device-resident rate, in one run.

    python3 python/benches/torch_fps.py [--size 1920x1080] [--frames 600] [--runs 3] [--cli PATH]

Makes 8 synthetic frame pairs as CUDA tensors (a smooth pattern and a noisier, shifted copy),
pushes `--frames` pairs through `vmafcuda.Scorer(backend="cuda")` cycling over them, and
times push..finish (median of `--runs`). Then runs `vmafcuda bench --backend cuda` (the CLI,
same size and frame count) and prints its `cuda device` row and the ratio. Needs PyTorch
with a CUDA device.
"""

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import time

import torch

import vmafcuda


def pairs(width, height, bpc, count=8):
    dtype = torch.uint16 if bpc > 8 else torch.uint8
    top = (1 << bpc) - 1
    y = torch.arange(height, device="cuda", dtype=torch.float32)[:, None]
    x = torch.arange(width, device="cuda", dtype=torch.float32)[None, :]
    gen = torch.Generator(device="cuda").manual_seed(7)
    out = []
    for i in range(count):
        base = 0.5 + 0.25 * torch.sin(x / (17 + i)) * torch.cos(y / (23 + 2 * i))
        base = base + 0.1 * torch.sin((x + y) / 5.0)
        ref = (base.clamp(0, 1) * top).round()
        noise = torch.randn((height, width), device="cuda", generator=gen) * (0.02 * top)
        dist = (torch.roll(ref, shifts=1, dims=1) * 0.97 + noise).clamp(0, top).round()
        out.append((ref.to(dtype).contiguous(), dist.to(dtype).contiguous()))
    torch.cuda.synchronize()
    return out


def run_once(width, height, bpc, frames, data):
    scorer = vmafcuda.Scorer(width, height, bpc=bpc, backend="cuda")
    assert scorer.backend == "cuda"
    # One frame outside the timing: the first push builds the scorer's GPU state.
    scorer.push(*data[0])
    scorer.sync()
    start = time.perf_counter()
    for i in range(frames):
        ref, dist = data[i % len(data)]
        scorer.push(ref, dist)
    scorer.sync()
    elapsed = time.perf_counter() - start
    report = scorer.finish()
    assert len(report["frames"]) == frames + 1
    return frames / elapsed


def engine_fps(cli, width, height, bpc, frames, runs):
    cmd = [
        cli, "bench", "--backend", "cuda", "--size", f"{width}x{height}", "--bpc", str(bpc),
        "--frames", str(frames), "--runs", str(runs), "--cpu-frames", "4", "--stage-frames", "0",
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "cuda device" in line:
            fields = line.split()
            # size bpc "cuda" "device" frames ms/frame fps [ratio]
            return float(fields[6]), line.strip()
    raise SystemExit(f"no 'cuda device' row in the CLI's output:\n{out}")


def main():
    repo = pathlib.Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--bpc", type=int, default=8)
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cli", default=os.environ.get("VMAFCUDA_CLI", str(repo / "target/release/vmafcuda")))
    args = ap.parse_args()
    width, height = map(int, re.fullmatch(r"(\d+)x(\d+)", args.size).groups())
    data = pairs(width, height, args.bpc)
    rates = [run_once(width, height, args.bpc, args.frames, data) for _ in range(args.runs)]
    torch_fps = statistics.median(rates)
    engine, row = engine_fps(args.cli, width, height, args.bpc, args.frames, args.runs)
    print(f"torch CUDA tensors -> Scorer.push: {args.size} {args.bpc}-bit, {args.frames} frames, "
          f"median of {args.runs}: {torch_fps:,.0f} fps (runs: {', '.join(f'{r:,.0f}' for r in rates)})")
    print(f"engine's own device-resident row: {row}")
    print(f"torch / engine: {torch_fps / engine:.3f} (bar: >= 0.90)")


if __name__ == "__main__":
    main()
