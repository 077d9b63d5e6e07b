"""The Python package against libvmaf's full-precision JSONs, the CLI, and itself."""

import json
import os
import subprocess

import numpy as np
import pytest

import vmafcuda
from conftest import cli_binary, corpus_json, read_luma, without_fps

ROCKET = ("s_rocket_176x144", "s_rocket_176x144__x264_crf32")  # 8-bit, 60 frames
COFFEE10 = ("s_coffee_1280x720_10bit", "s_coffee_1280x720_10bit__x265_crf28")  # 10-bit, 8
MULTISHOT = ("s_multishot_576x324", "s_multishot_576x324__x264_crf30")  # 4 shots, 64 frames


def assert_close(ours, theirs, what):
    assert ours == pytest.approx(theirs, abs=1e-9, rel=0), what


def assert_matches_libvmaf(report, expected, frames=None):
    """Every metric libvmaf printed, per frame and pooled, equal within 1e-9."""
    ours = report["frames"] if frames is None else frames
    assert len(ours) == len(expected["frames"])
    for mine, theirs in zip(ours, expected["frames"]):
        assert theirs["metrics"], "libvmaf's frame has no metrics"
        for key, value in theirs["metrics"].items():
            assert_close(mine["metrics"][key], value, f"frame {theirs['frameNum']} {key}")
    if frames is None:
        for key, stats in expected["pooled_metrics"].items():
            for method, value in stats.items():
                assert_close(report["pooled_metrics"][key][method], value, f"{key} {method}")


@pytest.mark.parametrize("pair", [ROCKET, COFFEE10], ids=["8bit", "10bit"])
def test_score_equals_libvmaf(y4m, pair):
    report = vmafcuda.score(y4m(pair[0]), y4m(pair[1]), backend="cpu", psnr=True)
    assert report["model"] == "vmaf_v0.6.1"
    assert report["backend"] == "cpu"
    assert_matches_libvmaf(report, corpus_json(f"{pair[1]}.vmaf_v0.6.1.full.json"))


@pytest.mark.parametrize("pair", [ROCKET, COFFEE10], ids=["8bit", "10bit"])
def test_score_equals_the_cli_json(y4m, tmp_path, pair):
    cli = cli_binary()
    if cli is None:
        pytest.skip("no vmafcuda CLI built (cargo build --release, or set VMAFCUDA_CLI)")
    out = tmp_path / "cli.json"
    subprocess.run(
        [str(cli), "score", "-r", str(y4m(pair[0])), "-d", str(y4m(pair[1])),
         "--backend", "cpu", "--feature", "psnr", "--quiet", "--output", str(out)],
        check=True,
        env={**os.environ, "VMAFCUDA_SERVICE": "off"},
    )
    ours = vmafcuda.score(y4m(pair[0]), y4m(pair[1]), backend="cpu", psnr=True)
    # The same doubles, bit for bit: the dicts compare floats with ==.
    assert without_fps(ours) == without_fps(json.loads(out.read_text()))


def test_shots_score_as_fresh_libvmaf_runs(y4m, corpus):
    starts = json.loads((corpus / "video" / f"{MULTISHOT[0]}.shots.json").read_text())["shot_starts"]
    report = vmafcuda.score(
        y4m(MULTISHOT[0]), y4m(MULTISHOT[1]), shots=starts, backend="cpu", psnr=True
    )
    assert [s["first_frame"] for s in report["shots"]] == starts
    for k, shot in enumerate(report["shots"]):
        expected = corpus_json(f"{MULTISHOT[1]}.shot{k}.vmaf_v0.6.1.full.json")
        frames = report["frames"][shot["first_frame"] : shot["last_frame"] + 1]
        assert_matches_libvmaf(report, expected, frames=frames)
        vmaf = expected["pooled_metrics"]["vmaf"]
        assert_close(shot["pooled_metrics"]["vmaf"]["mean"], vmaf["mean"], f"shot {k} mean")


def stream(path_ref, path_dist, shots=(), **kwargs):
    width, height, bpc, ref = read_luma(path_ref)
    _, _, _, dist = read_luma(path_dist)
    with vmafcuda.Scorer(width, height, bpc=bpc, backend="cpu", **kwargs) as scorer:
        for i, (r, d) in enumerate(zip(ref, dist)):
            if i in shots and i > 0:
                scorer.new_shot()
            scorer.push(r, d)
        assert scorer.frames_pushed == len(ref)
        return scorer.finish()


@pytest.mark.parametrize("pair", [ROCKET, COFFEE10], ids=["8bit", "10bit"])
def test_numpy_stream_equals_score(y4m, pair):
    streamed = stream(y4m(pair[0]), y4m(pair[1]))
    scored = vmafcuda.score(y4m(pair[0]), y4m(pair[1]), backend="cpu")
    assert len(streamed["frames"]) > 0
    assert without_fps(streamed) == without_fps(scored)


def test_new_shot_equals_score_with_shots(y4m):
    streamed = stream(y4m(ROCKET[0]), y4m(ROCKET[1]), shots={25, 40})
    scored = vmafcuda.score(y4m(ROCKET[0]), y4m(ROCKET[1]), shots=[0, 25, 40], backend="cpu")
    assert len(streamed["shots"]) == 3
    assert without_fps(streamed) == without_fps(scored)
    # Motion restarts at a shot boundary: frame 25's motion is 0, as at frame 0.
    assert streamed["frames"][25]["metrics"]["integer_motion2"] == 0


def test_every_rebuild_mode_gives_the_same_shot_scores(y4m):
    runs = {
        mode: vmafcuda.score(
            y4m(ROCKET[0]), y4m(ROCKET[1]), shots=[0, 25, 40], backend="cpu", rebuild=mode
        )
        for mode in ("full", "reset", "cold")
    }
    assert len(runs["full"]["shots"]) == 3
    assert without_fps(runs["reset"]) == without_fps(runs["full"])
    assert without_fps(runs["cold"]) == without_fps(runs["full"])
    with pytest.raises(vmafcuda.VmafError, match="rebuild"):
        vmafcuda.score(y4m(ROCKET[0]), y4m(ROCKET[1]), rebuild="sometimes")
    with pytest.raises(vmafcuda.VmafError, match="rebuild"):
        vmafcuda.Scorer(64, 64, rebuild="warm")


def test_engine_errors_are_vmaf_errors(y4m, tmp_path):
    assert issubclass(vmafcuda.VmafError, ValueError)
    with pytest.raises(vmafcuda.VmafError, match="missing.y4m"):
        vmafcuda.score(tmp_path / "missing.y4m", y4m(ROCKET[1]))
    with pytest.raises(vmafcuda.VmafError, match="no_such_model"):
        vmafcuda.score(y4m(ROCKET[0]), y4m(ROCKET[1]), model="no_such_model")
    with pytest.raises(vmafcuda.VmafError, match="unknown backend"):
        vmafcuda.score(y4m(ROCKET[0]), y4m(ROCKET[1]), backend="tpu")
    with pytest.raises(vmafcuda.VmafError, match="frame size"):
        vmafcuda.score(y4m(ROCKET[0]), y4m(MULTISHOT[1]))
    with pytest.raises(vmafcuda.VmafError, match="ascending"):
        vmafcuda.score(y4m(ROCKET[0]), y4m(ROCKET[1]), shots=[0, 10, 5])
    with pytest.raises(vmafcuda.VmafError, match="too small"):
        vmafcuda.Scorer(16, 16)


def test_forced_cuda_without_a_gpu_is_an_error():
    try:
        scorer = vmafcuda.Scorer(64, 64, backend="cuda")
    except vmafcuda.VmafError as e:
        assert str(e)
    else:
        assert scorer.backend == "cuda"
        scorer.close()


def test_push_checks_arrays():
    scorer = vmafcuda.Scorer(64, 48)
    good = np.zeros((48, 64), np.uint8)
    with pytest.raises(TypeError, match="float32"):
        scorer.push(good.astype(np.float32), good)
    with pytest.raises(TypeError, match="uint8"):
        scorer.push(good.astype(np.uint16), good)
    with pytest.raises(ValueError, match="does not match"):
        scorer.push(np.zeros((64, 48), np.uint8), good)
    with pytest.raises(ValueError, match="2-D"):
        scorer.push(np.zeros((48, 64, 1), np.uint8), good)
    with pytest.raises(ValueError, match="C-contiguous"):
        scorer.push(np.zeros((48, 128), np.uint8)[:, ::2], good)
    with pytest.raises(TypeError, match="NumPy array"):
        scorer.push(b"\0" * 64 * 48, good)
    assert scorer.frames_pushed == 0
    with pytest.raises(vmafcuda.VmafError, match="no frames"):
        scorer.finish()
    scorer.push(good, good)
    assert scorer.finish()["frames"][0]["metrics"]["vmaf"] > 0
    with pytest.raises(vmafcuda.VmafError, match="closed"):
        scorer.push(good, good)
    deep = vmafcuda.Scorer(64, 48, bpc=10)
    with pytest.raises(TypeError, match="uint16"):
        deep.push(good, good)
    with pytest.raises(TypeError, match="dtype"):
        deep.push(good.astype(">u2"), good.astype(">u2"))


def test_samples_above_the_bit_depth_are_refused():
    frame = np.full((48, 64), 1023, np.uint16)
    with vmafcuda.Scorer(64, 48, bpc=10, backend="cpu") as scorer:
        scorer.push(frame, frame)
        msb = frame.copy()
        msb[3, 5] = 1023 << 6
        with pytest.raises(
            vmafcuda.VmafError,
            match=r"frame 1, distorted luma: sample 65472 at x=5, y=3 does not fit 10 bits",
        ):
            scorer.push(frame, msb)
        assert scorer.frames_pushed == 1


def test_context_manager_closes_the_scorer():
    frame = np.full((48, 64), 128, np.uint8)
    with vmafcuda.Scorer(64, 48, backend="cpu") as scorer:
        assert scorer.backend == "cpu"
        scorer.push(frame, frame)
    with pytest.raises(vmafcuda.VmafError, match="closed"):
        scorer.push(frame, frame)
    with pytest.raises(vmafcuda.VmafError, match="closed"):
        scorer.finish()
    # An exception inside the block propagates (and the scorer is closed all the same).
    with pytest.raises(RuntimeError, match="inside"):
        with vmafcuda.Scorer(64, 48) as other:
            raise RuntimeError("inside")
    with pytest.raises(vmafcuda.VmafError, match="closed"):
        other.push(frame, frame)
