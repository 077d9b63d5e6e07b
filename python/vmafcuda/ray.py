"""Score many pairs on a Ray cluster: one Ray task per job.

    import ray, vmafcuda.ray
    ray.init()
    reports = vmafcuda.ray.score_jobs([
        {"reference": "a.y4m", "distorted": "a_crf28.y4m"},
        {"reference": "b.y4m", "distorted": "b_crf28.y4m", "model": "vmaf_4k_v0.6.1"},
    ])

Each job is a dict of ``vmafcuda.score`` arguments (``reference`` and ``distorted`` required)
or a ``(reference, distorted)`` pair; the paths must be readable where the task runs. The
reports come back in job order. Ray itself is not a dependency of the package: this module
imports it when called.
"""

from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple, Union

from ._native import score

Job = Union[Mapping[str, Any], Tuple[Any, Any]]


def _score_job(job: Dict[str, Any]) -> Dict[str, Any]:
    return score(**job)


def _as_kwargs(job: Job, defaults: Mapping[str, Any]) -> Dict[str, Any]:
    if isinstance(job, Mapping):
        kwargs = {**defaults, **job}
    else:
        reference, distorted = job
        kwargs = {**defaults, "reference": reference, "distorted": distorted}
    missing = {"reference", "distorted"} - kwargs.keys()
    if missing:
        raise ValueError(f"job {job!r} lacks {', '.join(sorted(missing))}")
    # Paths travel as strings (pathlib objects pickle too, but str is what every worker reads).
    kwargs["reference"] = str(kwargs["reference"])
    kwargs["distorted"] = str(kwargs["distorted"])
    return kwargs


def score_jobs(
    jobs: Iterable[Job],
    *,
    num_cpus: float = 1,
    num_gpus: float = 0,
    return_exceptions: bool = False,
    **defaults: Any,
) -> List[Union[Dict[str, Any], BaseException]]:
    """Scores every job in its own Ray task and returns the reports in job order.

    ``num_cpus`` / ``num_gpus`` are each task's Ray resources (``num_gpus=1`` with
    ``backend="cuda"`` puts one job on each GPU). ``defaults`` are ``vmafcuda.score`` arguments
    every job gets unless it says otherwise. A failed job raises its error (a
    ``vmafcuda.VmafError`` stays one) once every task has ended; with ``return_exceptions=True``
    its place in the list holds the exception instead.
    """
    import ray

    if not ray.is_initialized():
        raise RuntimeError("vmafcuda.ray.score_jobs: call ray.init() first")
    kwargs: Sequence[Dict[str, Any]] = [_as_kwargs(job, defaults) for job in jobs]
    task = ray.remote(_score_job).options(num_cpus=num_cpus, num_gpus=num_gpus)
    refs = [task.remote(k) for k in kwargs]
    results: List[Union[Dict[str, Any], BaseException]] = []
    first_error = None
    for ref in refs:
        try:
            results.append(ray.get(ref))
        except Exception as e:  # a task's error, re-raised by Ray as (a subclass of) its type
            cause = e.as_instanceof_cause() if hasattr(e, "as_instanceof_cause") else e
            results.append(cause)
            first_error = first_error or cause
    if first_error is not None and not return_exceptions:
        raise first_error
    return results
