"""python -m vmafcuda.ray CATALOGUE --out results.csv [--json results.json] ...

Scores a catalogue file on a Ray cluster (a local one by default) and writes the table.
Exit status: 0 every job scored; 1 a job failed (with --keep-going the table is written all
the same, failed jobs as error rows); 2 bad arguments or catalogue; 3 Ray missing or the
cluster could not be started or reached.
"""

import argparse
import sys
from typing import List, Optional

from . import CatalogueError, read_catalogue, score_catalogue

SCORED, JOB_FAILED, BAD_INPUT, NO_RAY = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m vmafcuda.ray",
        description="Score a catalogue of (reference, renditions) on a Ray cluster, one task "
        "per rendition, and write a pooled row per rendition and a row per shot.",
        epilog="Exit status: 0 all scored, 1 a job failed, 2 bad arguments or catalogue, "
        "3 Ray missing or unreachable.",
    )
    parser.add_argument("catalogue", help="catalogue file: .json (list of entries) or .csv")
    parser.add_argument("--out", metavar="FILE.csv", help="write the table as CSV")
    parser.add_argument("--json", metavar="FILE.json", help="write the table as JSON")
    parser.add_argument(
        "--address",
        default="local",
        help="local (start a cluster here, the default), auto (the running cluster), or a "
        "Ray address (ray://host:10001, host:6379)",
    )
    parser.add_argument("--num-cpus", type=float, default=1, help="CPUs per task (default 1)")
    parser.add_argument(
        "--num-gpus",
        type=float,
        default=None,
        help="GPUs per task (default: 1 when the cluster has GPUs, else 0)",
    )
    parser.add_argument("--model", help="model of the jobs that set none (default vmaf_v0.6.1)")
    parser.add_argument(
        "--backend", choices=("auto", "cpu", "cuda"), help="backend of the jobs that set none"
    )
    parser.add_argument("--psnr", action="store_true", help="add PSNR to jobs that do not set it")
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="write the table even if jobs failed (their rows carry the error); exit 1 still",
    )
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.out is None and args.json is None:
        return _fail("give --out FILE.csv and/or --json FILE.json", BAD_INPUT)
    try:
        jobs = read_catalogue(args.catalogue)
    except CatalogueError as e:
        return _fail(str(e), BAD_INPUT)
    defaults = {k: getattr(args, k) for k in ("model", "backend") if getattr(args, k)}
    if args.psnr:
        defaults["psnr"] = True
    try:
        import ray
    except ImportError:
        return _fail("Ray is not installed (pip install ray)", NO_RAY)
    try:
        if args.address == "local":
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=args.address, log_to_driver=False)
    except Exception as e:  # Ray raises several types (ConnectionError, RuntimeError, ...)
        return _fail(f"cannot start or reach the Ray cluster ({args.address}): {e}", NO_RAY)
    try:
        table = score_catalogue(
            jobs,
            num_cpus=args.num_cpus,
            num_gpus=args.num_gpus,
            return_exceptions=True,
            **defaults,
        )
    except ValueError as e:  # num_gpus on a cluster without GPUs
        return _fail(str(e), BAD_INPUT)
    finally:
        ray.shutdown()
    failed = table.errors()
    for row in failed:
        _fail(f"{row['rendition']} ({row['distorted']}): {row['error']}", JOB_FAILED)
    if failed and not args.keep_going:
        count = f"{len(failed)} of {len(table.pooled())} jobs failed"
        return _fail(f"{count}; no table written (--keep-going writes it)", JOB_FAILED)
    try:
        if args.out is not None:
            table.to_csv(args.out)
        if args.json is not None:
            table.to_json(args.json)
    except OSError as e:
        return _fail(f"cannot write the table: {e}", BAD_INPUT)
    print(
        f"vmafcuda.ray: {len(table.pooled()) - len(failed)} of {len(table.pooled())} renditions "
        f"scored, {len(table.shots())} shot rows",
        file=sys.stderr,
    )
    return JOB_FAILED if failed else SCORED


def _fail(message: str, status: int) -> int:
    print(f"vmafcuda.ray: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
