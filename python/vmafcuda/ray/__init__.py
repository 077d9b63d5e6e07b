"""Score many pairs on a Ray cluster: one Ray task per job.

    import ray, vmafcuda.ray
    ray.init()
    reports = vmafcuda.ray.score_jobs([
        {"reference": "a.y4m", "distorted": "a_crf28.y4m"},
        {"reference": "b.y4m", "distorted": "b_crf28.y4m", "model": "vmaf_4k_v0.6.1"},
    ])
    table = vmafcuda.ray.score_catalogue([
        {"reference": "a.y4m", "shots": [0, 120], "renditions": ["a_crf28.y4m", "a_crf34.y4m"]},
    ])
    table.to_csv("results.csv")

``score_jobs`` takes jobs as dicts of ``vmafcuda.score`` arguments (``reference`` and
``distorted`` required) or ``(reference, distorted)`` pairs and returns the reports in job
order. ``score_catalogue`` takes a catalogue (references, each with its renditions; see
``vmafcuda.ray.catalogue``) and returns a ``ScoreTable``: a pooled row per rendition and a row
per shot, written as JSON or CSV. ``python -m vmafcuda.ray CATALOGUE --out results.csv`` does
the same from the shell. The paths must be readable where the tasks run. Ray itself is not a
dependency of the package: this module imports it when called.
"""

from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple, Union

from .._native import score
from .catalogue import CatalogueError, CatalogueJob, read_catalogue
from .table import ScoreTable

__all__ = [
    "CatalogueError",
    "CatalogueJob",
    "ScoreTable",
    "read_catalogue",
    "score_catalogue",
    "score_jobs",
]

Job = Union[Mapping[str, Any], Tuple[Any, Any]]
Result = Union[Dict[str, Any], BaseException]


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


def _ray():
    import ray

    if not ray.is_initialized():
        raise RuntimeError("vmafcuda.ray: call ray.init() first")
    return ray


def _run(
    ray: Any, tasks: Sequence[Tuple[Dict[str, Any], float, float]], return_exceptions: bool
) -> List[Result]:
    """Submits every (kwargs, num_cpus, num_gpus) task, then gathers the results in order."""
    remote = ray.remote(_score_job)
    refs = [
        remote.options(num_cpus=cpus, num_gpus=gpus).remote(kwargs)
        for kwargs, cpus, gpus in tasks
    ]
    results: List[Result] = []
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


def score_jobs(
    jobs: Iterable[Job],
    *,
    num_cpus: float = 1,
    num_gpus: float = 0,
    return_exceptions: bool = False,
    **defaults: Any,
) -> List[Result]:
    """Scores every job in its own Ray task and returns the reports in job order.

    ``num_cpus`` / ``num_gpus`` are each task's Ray resources (``num_gpus=1`` with
    ``backend="cuda"`` puts one job on each GPU). ``defaults`` are ``vmafcuda.score`` arguments
    every job gets unless it says otherwise. A failed job raises its error (a
    ``vmafcuda.VmafError`` stays one) once every task has ended; with ``return_exceptions=True``
    its place in the list holds the exception instead.
    """
    ray = _ray()
    kwargs = [_as_kwargs(job, defaults) for job in jobs]
    return _run(ray, [(k, num_cpus, num_gpus) for k in kwargs], return_exceptions)


def score_catalogue(
    catalogue: Any,
    *,
    num_cpus: float = 1,
    num_gpus: Union[float, None] = None,
    return_exceptions: bool = False,
    **defaults: Any,
) -> ScoreTable:
    """Scores every (reference, rendition) of a catalogue in its own Ray task; returns the
    results as one ``ScoreTable`` (a pooled row per rendition, a row per shot).

    ``catalogue`` is a list of entries or the path of a JSON / CSV catalogue file (see
    ``vmafcuda.ray.catalogue``). ``defaults`` are the ``vmafcuda.score`` options (``model``,
    ``shots``, ``backend``, ``psnr``) of every job that its entry and rendition do not set.

    ``num_gpus`` is each task's GPUs. ``None`` (the default): one GPU per task when the cluster
    has GPUs, except for jobs with ``backend="cpu"``, and none otherwise. ``backend="auto"``
    becomes ``"cuda"`` in a task with a GPU, so that a GPU that fails is an error rather than a
    silent run on the CPU, and ``"cpu"`` in a task without one, which must not take a card Ray
    gave another task. Ray hands each task its own GPU as device 0 (``CUDA_VISIBLE_DEVICES``),
    so ``"cuda"`` is the right backend there, not ``"cuda:N"``.

    A failed job raises its error once every task has ended; with ``return_exceptions=True``
    it becomes a pooled row with the ``error`` column set (its exception is in
    ``table.reports``).
    """
    unknown = sorted(set(defaults) - {"model", "shots", "backend", "psnr"})
    if unknown:
        raise TypeError(f"score_catalogue: unknown option {', '.join(unknown)}")
    jobs = read_catalogue(catalogue)
    ray = _ray()
    cluster_gpus = ray.cluster_resources().get("GPU", 0)
    if num_gpus is not None and num_gpus > 0 and cluster_gpus == 0:
        # Ray would wait forever for a GPU to join; a local cluster never gets one.
        raise ValueError(f"num_gpus={num_gpus} per task, but the Ray cluster has no GPU")
    tasks = []
    for job in jobs:
        kwargs = {**defaults, **job.options, "reference": job.reference}
        kwargs["distorted"] = job.distorted
        backend = kwargs.get("backend", "auto")
        gpus = num_gpus
        if gpus is None:
            gpus = 1 if cluster_gpus > 0 and backend != "cpu" else 0
        if backend == "auto":
            # A task uses the GPUs Ray allotted it and no other: one without a GPU would
            # otherwise take a card that Ray has handed to another task.
            kwargs["backend"] = "cuda" if gpus > 0 else "cpu"
        tasks.append((kwargs, num_cpus, gpus))
    return ScoreTable.from_reports(jobs, _run(ray, tasks, return_exceptions))
