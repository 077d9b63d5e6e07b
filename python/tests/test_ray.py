"""vmafcuda.ray: one Ray task per job, the reports of vmafcuda.score in job order."""

import pytest

import vmafcuda
from conftest import without_fps

ray = pytest.importorskip("ray")
import vmafcuda.ray  # noqa: E402  (after the skip: the module needs Ray when called)

PAIRS = [
    ("s_rocket_176x144", "s_rocket_176x144__x264_crf32"),
    ("s_rocket_176x144", "s_rocket_176x144__noise10"),
]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_score_jobs_equals_score_in_job_order(cluster, y4m):
    jobs = [{"reference": y4m(r), "distorted": y4m(d), "backend": "cpu"} for r, d in PAIRS]
    jobs.append((y4m(PAIRS[0][0]), y4m(PAIRS[0][1])))  # a tuple job takes the defaults
    reports = vmafcuda.ray.score_jobs(jobs, psnr=True, backend="cpu")
    assert len(reports) == 3
    for job, report in zip(jobs[:2], reports):
        expected = vmafcuda.score(job["reference"], job["distorted"], backend="cpu", psnr=True)
        assert without_fps(report) == without_fps(expected)
    assert without_fps(reports[2]) == without_fps(reports[0])
    assert reports[0] != reports[1]


def test_a_failed_job_raises_its_vmaf_error(cluster, y4m, tmp_path):
    jobs = [(y4m(PAIRS[0][0]), y4m(PAIRS[0][1])), (tmp_path / "missing.y4m", y4m(PAIRS[0][1]))]
    with pytest.raises(vmafcuda.VmafError, match="missing.y4m"):
        vmafcuda.ray.score_jobs(jobs, backend="cpu")
    results = vmafcuda.ray.score_jobs(jobs, backend="cpu", return_exceptions=True)
    assert results[0]["frames"]
    assert isinstance(results[1], vmafcuda.VmafError)
