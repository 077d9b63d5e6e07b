"""vmafcuda.ray on a local 2-CPU Ray cluster: score_jobs (the reports of vmafcuda.score in job
order), score_catalogue (one table, every number the CLI's JSON number bit for bit), the table
as CSV / JSON, catalogue files, and `python -m vmafcuda.ray`. The GPU test runs the catalogue
with a GPU per task and skips on a cluster without one."""

import json
import os
import subprocess
import sys

import pytest

import vmafcuda
from conftest import cli_binary, without_fps

ray = pytest.importorskip("ray")
import vmafcuda.ray  # noqa: E402  (after the skip: the module needs Ray when called)
from vmafcuda.ray import CatalogueError, ScoreTable, read_catalogue  # noqa: E402

ROCKET = "s_rocket_176x144"  # 60 frames, 176x144
MULTISHOT = ("s_multishot_576x324", "s_multishot_576x324__x264_crf30")  # 4 shots, 64 frames
PAIRS = [
    (ROCKET, "s_rocket_176x144__x264_crf32"),
    (ROCKET, "s_rocket_176x144__noise10"),
]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def cluster_has_gpu():
    return ray.cluster_resources().get("GPU", 0) > 0


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


@pytest.fixture(scope="module")
def shot_file(corpus):
    return corpus / "video" / f"{MULTISHOT[0]}.shots.json"


@pytest.fixture(scope="module")
def catalogue(y4m, shot_file):
    """Two references, two renditions each: per-rendition psnr and model, a shot file (paths
    as strings, so that the catalogue can be written as JSON)."""
    return [
        {
            "reference": str(y4m(ROCKET)),
            "renditions": [
                str(y4m(PAIRS[0][1])),
                {"distorted": str(y4m(PAIRS[1][1])), "name": "noise", "psnr": True},
            ],
        },
        {
            "reference": str(y4m(MULTISHOT[0])),
            "shots": str(shot_file),
            "renditions": [
                str(y4m(MULTISHOT[1])),
                {
                    "distorted": str(y4m(MULTISHOT[1])),
                    "name": "crf30_4k",
                    "model": "vmaf_4k_v0.6.1",
                },
            ],
        },
    ]


@pytest.fixture(scope="module")
def cpu_table(cluster, catalogue):
    return vmafcuda.ray.score_catalogue(catalogue, backend="cpu")


def cli_report(cli, job, tmp_path):
    """The CLI's JSON report of one catalogue job."""
    out = tmp_path / f"{job.rendition}.json"
    command = [str(cli), "score", "-r", job.reference, "-d", job.distorted, "--quiet"]
    command += ["--backend", "cpu", "--output", str(out)]
    if "model" in job.options:
        command += ["--model", job.options["model"]]
    if "shots" in job.options:
        command += ["--shots", ",".join(map(str, job.options["shots"]))]
    if job.options.get("psnr"):
        command += ["--feature", "psnr"]
    subprocess.run(command, check=True, env={**os.environ, "VMAFCUDA_SERVICE": "off"})
    return json.loads(out.read_text())


def test_catalogue_table_holds_the_cli_json_numbers(cpu_table, catalogue, shot_file, tmp_path):
    cli = cli_binary()
    if cli is None:
        pytest.skip("no vmafcuda CLI built (cargo build --release, or set VMAFCUDA_CLI)")
    jobs = read_catalogue(catalogue)
    pooled = cpu_table.pooled()
    assert [r["rendition"] for r in pooled] == [PAIRS[0][1], "noise", MULTISHOT[1], "crf30_4k"]
    assert [r["model"] for r in pooled] == ["vmaf_v0.6.1"] * 3 + ["vmaf_4k_v0.6.1"]
    assert len(cpu_table.shots()) == 1 + 1 + 4 + 4
    for job, report, row in zip(jobs, cpu_table.reports, pooled):
        expected = cli_report(cli, job, tmp_path)
        assert without_fps(report) == without_fps(expected)
        assert row["backend"] == "cpu" and row["error"] is None
        assert row["frames"] == len(expected["frames"])
        metrics = ["vmaf"] + (["psnr_y", "psnr_cb", "psnr_cr"] if job.options.get("psnr") else [])
        for metric in metrics:
            for stat, value in expected["pooled_metrics"][metric].items():
                assert row[f"{metric}_{stat}"] == value, (job.rendition, metric, stat)
        if not job.options.get("psnr"):
            assert row["psnr_y_mean"] is None
        shot_rows = [r for r in cpu_table.shots() if r["rendition"] == job.rendition]
        assert len(shot_rows) == len(expected["shots"])
        for shot_row, shot in zip(shot_rows, expected["shots"]):
            assert shot_row["shot"] == shot["index"]
            assert (shot_row["first_frame"], shot_row["last_frame"]) == (
                shot["first_frame"], shot["last_frame"]
            )
            for stat, value in shot["pooled_metrics"]["vmaf"].items():
                assert shot_row[f"vmaf_{stat}"] == value, (job.rendition, shot["index"], stat)
    starts = json.loads(shot_file.read_text())["shot_starts"]
    assert [r["first_frame"] for r in cpu_table.shots()[2:6]] == starts


def test_table_round_trips_through_csv_and_json(cpu_table, tmp_path):
    text = cpu_table.to_csv(tmp_path / "t.csv")
    assert text.splitlines()[0].startswith("kind,reference,rendition,distorted,model,backend")
    first = cpu_table.rows[0]["vmaf_mean"]
    assert f",{first!r}," in text  # the double as repr writes it
    assert ScoreTable.read_csv(tmp_path / "t.csv") == cpu_table
    cpu_table.to_json(tmp_path / "t.json")
    back = ScoreTable.read_json(tmp_path / "t.json")
    assert back == cpu_table
    assert json.loads((tmp_path / "t.json").read_text())[0]["vmaf_mean"] == first
    for mine, theirs in zip(back.rows, cpu_table.rows):
        for column, value in theirs.items():
            assert mine[column] == value and type(mine[column]) is type(value), column


def test_catalogue_files_name_the_same_jobs(catalogue, y4m, shot_file, tmp_path):
    folder = y4m(ROCKET).parent  # relative paths are relative to the catalogue file
    as_json = folder / "catalogue.json"
    entries = json.loads(json.dumps(catalogue))
    for entry in entries:
        entry["reference"] = os.path.basename(entry["reference"])
    entries[0]["renditions"][0] = os.path.basename(entries[0]["renditions"][0])
    as_json.write_text(json.dumps(entries))
    jobs = read_catalogue(catalogue)
    assert read_catalogue(as_json) == jobs
    as_csv = folder / "catalogue.csv"
    lines = ["reference,distorted,name,model,shots,psnr"]
    for job in jobs:
        o = job.options
        shots = " ".join(map(str, o.get("shots", [])))
        psnr = "true" if o.get("psnr") else ""
        model = o.get("model", "")
        lines.append(f"{job.reference},{job.distorted},{job.rendition},{model},{shots},{psnr}")
    as_csv.write_text("\n".join(lines) + "\n")
    assert read_catalogue(as_csv) == jobs


def test_catalogue_errors_say_where(tmp_path):
    with pytest.raises(CatalogueError, match="entry 0: renditions must be a non-empty list"):
        read_catalogue([{"reference": "a.y4m", "renditions": []}])
    with pytest.raises(CatalogueError, match="entry 1, rendition 0: unknown key 'shot'"):
        read_catalogue([
            {"reference": "a.y4m", "renditions": ["b.y4m"]},
            {"reference": "a.y4m", "renditions": [{"distorted": "c.y4m", "shot": [0]}]},
        ])
    with pytest.raises(CatalogueError, match="cannot read catalogue"):
        read_catalogue(tmp_path / "missing.json")
    (tmp_path / "c.csv").write_text("reference,distorted,psnr\na.y4m,b.y4m,maybe\n")
    with pytest.raises(CatalogueError, match="line 2: psnr must be true or false"):
        read_catalogue(tmp_path / "c.csv")


def test_a_failed_catalogue_job_raises_or_is_an_error_row(cluster, y4m, tmp_path):
    catalogue = [
        {"reference": y4m(ROCKET), "renditions": [y4m(PAIRS[0][1]), str(tmp_path / "gone.y4m")]}
    ]
    with pytest.raises(vmafcuda.VmafError, match="gone.y4m"):
        vmafcuda.ray.score_catalogue(catalogue)
    table = vmafcuda.ray.score_catalogue(catalogue, return_exceptions=True)
    good, failed = table.pooled()
    # backend auto: a GPU per task and CUDA when the cluster has GPUs, else the CPU.
    assert good["backend"] == ("cuda" if cluster_has_gpu() else "cpu")
    assert good["error"] is None and good["vmaf_mean"] > 0
    assert failed["rendition"] == "gone"
    assert failed["error"].startswith("VmafError: ") and "gone.y4m" in failed["error"]
    assert failed["vmaf_mean"] is None and isinstance(table.reports[1], vmafcuda.VmafError)
    assert table.errors() == [failed]


def test_gpus_asked_of_a_cluster_without_gpus_is_an_error(cluster, catalogue):
    if cluster_has_gpu():
        pytest.skip("the cluster has GPUs")
    with pytest.raises(ValueError, match="no GPU"):
        vmafcuda.ray.score_catalogue(catalogue, num_gpus=1)


def run_module(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "vmafcuda.ray", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=120,
    )


def test_module_cli_writes_the_table_and_exit_codes(cpu_table, catalogue, tmp_path):
    done = run_module("missing.json", "--out", "t.csv", cwd=tmp_path)
    assert done.returncode == 2 and "cannot read catalogue missing.json" in done.stderr
    assert not (tmp_path / "t.csv").exists()
    done = run_module("missing.json", cwd=tmp_path)
    assert done.returncode == 2 and "--out" in done.stderr
    # A rendition that is not there: exit 1 and no table; --keep-going writes the rest and an
    # error row (and exits 1 all the same).
    with_gone = catalogue + [{"reference": catalogue[0]["reference"], "renditions": ["gone.y4m"]}]
    (tmp_path / "c.json").write_text(json.dumps(with_gone))
    # --address auto: the test's cluster, not a second one.
    args = ["c.json", "--out", "t.csv", "--json", "t.json", "--address", "auto", "--backend", "cpu"]
    done = run_module(*args, cwd=tmp_path)
    assert done.returncode == 1 and "1 of 5 jobs failed; no table written" in done.stderr
    assert not (tmp_path / "t.csv").exists() and not (tmp_path / "t.json").exists()
    done = run_module(*args, "--keep-going", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "gone (" in done.stderr and "gone.y4m: cannot open" in done.stderr
    table = ScoreTable.read_csv(tmp_path / "t.csv")
    assert ScoreTable.read_json(tmp_path / "t.json") == table
    assert table.rows[:-1] == cpu_table.rows
    assert table.rows[-1]["rendition"] == "gone" and "gone.y4m" in table.rows[-1]["error"]


def cuda_works():
    try:
        vmafcuda.Scorer(64, 64, backend="cuda").close()
    except vmafcuda.VmafError:
        return False
    return True


def test_gpu_tasks_equal_the_cpu_table(cpu_table, catalogue):
    if not cluster_has_gpu() or not cuda_works():
        pytest.skip("no GPU in the Ray cluster or no CUDA device for vmafcuda")
    table = vmafcuda.ray.score_catalogue(catalogue)  # num_gpus auto: one GPU per task, CUDA
    assert {r["backend"] for r in table.rows} == {"cuda"}

    def without_backend(rows):
        return [{k: v for k, v in r.items() if k != "backend"} for r in rows]

    assert without_backend(table.rows) == without_backend(cpu_table.rows)
    for gpu, cpu in zip(table.reports, cpu_table.reports):
        assert {**without_fps(gpu), "backend": "cpu"} == without_fps(cpu)
