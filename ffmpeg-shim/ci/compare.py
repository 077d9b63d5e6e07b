#!/usr/bin/env python3
"""Compares a vmafcuda JSON log with libvmaf JSON references (every metric of every frame and
the pooled min/max/mean/harmonic_mean of every metric within a tolerance).

  compare.py whole OURS.json LIBVMAF.full.json
  compare.py luma OURS.json LIBVMAF.full.json      (as whole, without psnr_cb/psnr_cr)
  compare.py shots OURS.json SHOT_STARTS(0,14,..) LIBVMAF.shot0.full.json LIBVMAF.shot1.full.json ...
  compare.py subsample OURS.json N LIBVMAF.full.json
    (libvmaf's n_subsample: temporal features run on every frame, the others and the pooling on
    every N-th, so the reported frames carry the full run's values and pool over themselves)
  compare.py same A.json B.json      (two vmafcuda logs: the same frames, every value bit for bit)
Options before the mode: --tol=X (default 1e-9; 5.000001e-7 for libvmaf's 6-decimal CLI JSON),
--no-psnr (skip psnr_* in the reference: a run without feature=psnr).
"""
import json
import sys

TOL = 1e-9


def load(path):
    with open(path) as f:
        return json.load(f)


SKIP = ()


def compare_frames(ours, ref, what):
    if len(ours) != len(ref):
        raise SystemExit(f"{what}: {len(ours)} frames, libvmaf has {len(ref)}")
    worst = 0.0
    for o, e in zip(ours, ref):
        for key, ev in e["metrics"].items():
            if key.startswith(SKIP):
                continue
            ov = o["metrics"].get(key)
            if ov is None:
                raise SystemExit(f"{what}: frame {e['frameNum']}: no {key}")
            d = abs(ov - ev)
            worst = max(worst, d)
            if d > TOL:
                raise SystemExit(f"{what}: frame {e['frameNum']} {key}: {ov!r} vs libvmaf {ev!r}")
    return worst


def compare_pooled(ours, ref, what):
    worst = 0.0
    for key, stats in ref.items():
        if key.startswith(SKIP):
            continue
        for m in ("min", "max", "mean", "harmonic_mean"):
            ov = ours[key][m]
            d = abs(ov - stats[m])
            worst = max(worst, d)
            if d > TOL:
                raise SystemExit(f"{what}: pooled {key} {m}: {ov!r} vs libvmaf {stats[m]!r}")
    return worst


def same(a_path, b_path):
    a, b = load(a_path), load(b_path)
    fa = [f["metrics"] for f in a["frames"]]
    fb = [f["metrics"] for f in b["frames"]]
    if len(fa) != len(fb):
        raise SystemExit(f"{a_path}: {len(fa)} frames, {b_path}: {len(fb)}")
    for i, (x, y) in enumerate(zip(fa, fb)):
        if x != y:
            diff = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
            raise SystemExit(f"{a_path} vs {b_path}: frame {i} differs in {diff}")
    if a["pooled_metrics"] != b["pooled_metrics"]:
        raise SystemExit(f"{a_path} vs {b_path}: pooled metrics differ")
    print(f"ok {a_path} == {b_path}: {len(fa)} frames, every value bit for bit")


def main():
    global SKIP, TOL
    args = sys.argv[1:]
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt.startswith("--tol="):
            TOL = float(opt[len("--tol="):])
        elif opt == "--no-psnr":
            SKIP = ("psnr_",)
        else:
            raise SystemExit(f"unknown option {opt}")
    sys.argv[1:] = args
    mode, ours_path = sys.argv[1], sys.argv[2]
    if mode == "same":
        same(ours_path, sys.argv[3])
        return
    ours = load(ours_path)
    if mode == "luma":  # monochrome input: no chroma PSNR to compare
        SKIP, mode = SKIP + ("psnr_cb", "psnr_cr"), "whole"
    if mode == "whole":
        ref = load(sys.argv[3])
        w = max(compare_frames(ours["frames"], ref["frames"], ours_path),
                compare_pooled(ours["pooled_metrics"], ref["pooled_metrics"], ours_path))
        n = len(ref["frames"])
        print(f"ok {ours_path}: {n} frames, pooled vmaf mean {ours['pooled_metrics']['vmaf']['mean']!r}, "
              f"max |diff| {w:.3g}")
    elif mode == "shots":
        starts = [int(s) for s in sys.argv[3].split(",")]
        refs = [load(p) for p in sys.argv[4:]]
        got = [s["first_frame"] for s in ours["shots"]]
        if got != starts:
            raise SystemExit(f"{ours_path}: shots start at {got}, expected {starts}")
        w = 0.0
        for k, (shot, ref) in enumerate(zip(ours["shots"], refs)):
            frames = [f for f in ours["frames"]
                      if shot["first_frame"] <= f["frameNum"] <= shot["last_frame"]]
            w = max(w, compare_frames(frames, ref["frames"], f"{ours_path} shot {k}"),
                    compare_pooled(shot["pooled_metrics"], ref["pooled_metrics"],
                                   f"{ours_path} shot {k}"))
            print(f"ok {ours_path} shot {k}: frames {shot['first_frame']}-{shot['last_frame']}, "
                  f"vmaf mean {shot['pooled_metrics']['vmaf']['mean']!r}")
        print(f"ok {ours_path}: {len(refs)} shots, max |diff| {w:.3g}")
    elif mode == "subsample":
        n = int(sys.argv[3])
        ref = load(sys.argv[4])
        picked = [f for f in ref["frames"] if f["frameNum"] % n == 0]
        w = compare_frames(ours["frames"], picked, ours_path)
        for key in picked[0]["metrics"]:
            values = [f["metrics"][key] for f in picked]
            mean = sum(values) / len(values)  # left to right, as libvmaf sums
            d = abs(ours["pooled_metrics"][key]["mean"] - mean)
            w = max(w, d)
            if d > TOL:
                raise SystemExit(f"{ours_path}: pooled {key} mean over every {n}th frame: "
                                 f"{ours['pooled_metrics'][key]['mean']!r} vs {mean!r}")
        print(f"ok {ours_path}: n_subsample={n}: {len(picked)} frames, max |diff| {w:.3g}")
    else:
        raise SystemExit(f"unknown mode {mode}")


main()
