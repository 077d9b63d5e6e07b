"""CUDA arrays (`__cuda_array_interface__`: PyTorch, CuPy) pushed to a Scorer in place.

The checks of the protocol's fields run everywhere (with stand-in objects); the scoring tests
need PyTorch with a CUDA device and skip without one. On the GPU machine they prove that
torch and CuPy input gives the CLI's numbers bit for bit, from pitched crops, from a
producer's own stream, with shot boundaries, and through the CPU when the scorer runs there.
"""

import numpy as np
import pytest

import vmafcuda
from conftest import read_luma, without_fps

ROCKET = ("s_rocket_176x144", "s_rocket_176x144__x264_crf32")  # 8-bit, 60 frames
COFFEE10 = ("s_coffee_1280x720_10bit", "s_coffee_1280x720_10bit__x265_crf28")  # 10-bit, 8
MULTISHOT = ("s_multishot_576x324", "s_multishot_576x324__x264_crf30")  # 4 shots, 64 frames


class FakeCudaArray:
    """Only the protocol's dict: what a producer hands over, without memory behind it."""

    def __init__(self, shape=(48, 64), typestr="|u1", ptr=0x10000, strides=None, **extra):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, False),
            "strides": strides,
            "version": 3,
            **extra,
        }


def test_protocol_fields_are_checked():
    scorer = vmafcuda.Scorer(64, 48, backend="cpu")
    good = FakeCudaArray()
    with pytest.raises(TypeError, match="<f4"):
        scorer.push(FakeCudaArray(typestr="<f4"), good)
    with pytest.raises(ValueError, match="does not match"):
        scorer.push(FakeCudaArray(shape=(64, 48)), good)
    with pytest.raises(TypeError, match="uint8"):
        scorer.push(FakeCudaArray(typestr="<u2", ptr=0x10000), good)
    with pytest.raises(ValueError, match="2-D"):
        scorer.push(FakeCudaArray(shape=(48, 64, 1)), good)
    with pytest.raises(ValueError, match="contiguous"):
        scorer.push(FakeCudaArray(strides=(128, 2)), good)
    with pytest.raises(ValueError, match="stream 0"):
        scorer.push(FakeCudaArray(stream=0), good)
    with pytest.raises(ValueError, match="masked"):
        scorer.push(FakeCudaArray(mask=FakeCudaArray()), good)
    with pytest.raises(ValueError, match="null pointer"):
        scorer.push(FakeCudaArray(ptr=0), good)
    with pytest.raises(TypeError, match="both be CUDA arrays or both host"):
        scorer.push(good, np.zeros((48, 64), np.uint8))
    # An address that is no CUDA allocation (or no driver at all here): a clear error naming
    # the plane, never a crash.
    with pytest.raises(ValueError, match="reference"):
        scorer.push(good, good)
    assert scorer.frames_pushed == 0
    scorer.close()


def cuda_torch():
    try:
        import torch
    except ImportError:
        pytest.skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for PyTorch")
    return torch


def reference_report(y4m, pair, shots=None):
    return vmafcuda.score(y4m(pair[0]), y4m(pair[1]), backend="cpu", shots=shots)


def same_scores(report, expected, backend="cuda"):
    """The report equals the CPU reference in everything but the speed and the backend."""
    assert report["backend"] == backend
    strip = lambda r: {k: v for k, v in without_fps(r).items() if k != "backend"}  # noqa: E731
    assert strip(report) == strip(expected)


def push_all(scorer, ref, dist, to_device, cuts=()):
    for i, (r, d) in enumerate(zip(ref, dist)):
        if i in cuts:
            scorer.new_shot()
        scorer.push(to_device(r), to_device(d))
    return scorer.finish()


@pytest.mark.parametrize("pair", [ROCKET, COFFEE10], ids=["8bit", "10bit"])
def test_torch_tensors_equal_the_cli(y4m, pair):
    torch = cuda_torch()
    w, h, bpc, ref = read_luma(y4m(pair[0]))
    _, _, _, dist = read_luma(y4m(pair[1]))
    dtype = torch.uint16 if bpc > 8 else torch.uint8

    def to_device(a):
        return torch.from_numpy(a.copy()).to(dtype).cuda()

    with vmafcuda.Scorer(w, h, bpc=bpc, backend="cuda") as scorer:
        assert scorer.backend == "cuda"
        report = push_all(scorer, ref, dist, to_device)
    same_scores(report, reference_report(y4m, pair))


def test_torch_shots_pitched_crops_and_a_producer_stream(y4m):
    torch = cuda_torch()
    w, h, bpc, ref = read_luma(y4m(MULTISHOT[0]))
    _, _, _, dist = read_luma(y4m(MULTISHOT[1]))
    stream = torch.cuda.Stream()

    def to_device(a):
        # A crop of a wider tensor (pitched rows), written on a stream of its own: the
        # scorer must wait for that stream (the protocol's "stream" field) before reading.
        with torch.cuda.stream(stream):
            wide = torch.zeros((h, w + 37), dtype=torch.uint8, device="cuda")
            wide[:, 5 : 5 + w].copy_(torch.from_numpy(a.copy()).pin_memory(), non_blocking=True)
            crop = wide[:, 5 : 5 + w]
            assert crop.__cuda_array_interface__["strides"] == (w + 37, 1)
            return crop

    cuts = {16, 32, 48}
    with vmafcuda.Scorer(w, h, backend="cuda") as scorer:
        with torch.cuda.stream(stream):
            report = push_all(scorer, ref, dist, to_device, cuts)
    expected = reference_report(y4m, MULTISHOT, shots=[0, *sorted(cuts)])
    assert len(report["shots"]) == 4
    same_scores(report, expected)


def test_cupy_arrays_equal_the_cli(y4m):
    cuda_torch()
    cupy = pytest.importorskip("cupy")
    w, h, bpc, ref = read_luma(y4m(ROCKET[0]))
    _, _, _, dist = read_luma(y4m(ROCKET[1]))
    with vmafcuda.Scorer(w, h, backend="cuda") as scorer:
        report = push_all(scorer, ref, dist, cupy.asarray)
    same_scores(report, reference_report(y4m, ROCKET))


def test_cuda_tensors_into_a_cpu_scorer_are_read_back(y4m):
    torch = cuda_torch()
    w, h, bpc, ref = read_luma(y4m(ROCKET[0]))
    _, _, _, dist = read_luma(y4m(ROCKET[1]))
    with vmafcuda.Scorer(w, h, backend="cpu") as scorer:
        report = push_all(scorer, ref, dist, lambda a: torch.from_numpy(a.copy()).cuda())
    assert without_fps(report) == without_fps(reference_report(y4m, ROCKET))


def test_cuda_errors_are_clear():
    torch = cuda_torch()
    with vmafcuda.Scorer(64, 48, backend="cuda") as scorer:
        good = torch.zeros((48, 64), dtype=torch.uint8, device="cuda")
        with pytest.raises(ValueError, match="not memory the CUDA driver knows"):
            scorer.push(FakeCudaArray(ptr=0x10000), good)
        with pytest.raises(TypeError, match="uint8"):
            scorer.push(good.to(torch.int16), good)
        with pytest.raises(ValueError, match="contiguous"):
            scorer.push(torch.zeros((64, 48), dtype=torch.uint8, device="cuda").t(), good)
        scorer.push(good, good)
        scorer.sync()
        assert scorer.finish()["frames"][0]["metrics"]["vmaf"] > 0
