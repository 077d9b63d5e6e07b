"""Shared fixtures: the reference corpus (../shared/corpus beside the repository, or
$VMAFCUDA_CORPUS), its y4m files decompressed once per session, and a y4m luma reader."""

import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = pathlib.Path(os.environ.get("VMAFCUDA_CORPUS", REPO.parent / "shared" / "corpus"))


def corpus_json(name):
    return json.loads((CORPUS / "vmaf" / name).read_text())


@pytest.fixture(scope="session")
def corpus():
    if not (CORPUS / "manifest.json").exists():
        pytest.skip(f"no reference corpus at {CORPUS} (set VMAFCUDA_CORPUS)")
    return CORPUS


@pytest.fixture(scope="session")
def y4m(corpus, tmp_path_factory):
    """y4m(name) -> path of video/<name>.y4m, decompressed from the corpus's .zst."""
    out = tmp_path_factory.mktemp("y4m")
    made = {}

    def get(name):
        if name not in made:
            path = out / f"{name}.y4m"
            packed = corpus / "video" / f"{name}.y4m.zst"
            if shutil.which("zstd") is not None:
                subprocess.run(["zstd", "-q", "-d", str(packed), "-o", str(path)], check=True)
            else:
                # The GPU machine has no zstd program; the zstandard module does the same.
                try:
                    import zstandard
                except ImportError:
                    pytest.skip("neither the zstd program nor the zstandard module is installed")
                with open(packed, "rb") as src, open(path, "wb") as dst:
                    zstandard.ZstdDecompressor().copy_stream(src, dst)
            made[name] = path
        return made[name]

    return get


def read_luma(path):
    """Luma planes of a 4:2:0 y4m file as 2-D arrays (uint8, or uint16 for 10-bit)."""
    data = pathlib.Path(path).read_bytes()
    header_end = data.index(b"\n")
    fields = data[:header_end].split()
    width = int(next(f[1:] for f in fields if f.startswith(b"W")))
    height = int(next(f[1:] for f in fields if f.startswith(b"H")))
    colour = next((f[1:] for f in fields if f.startswith(b"C")), b"420jpeg")
    sample = 2 if b"p10" in colour else 1
    dtype = np.dtype("<u2") if sample == 2 else np.uint8
    chroma = ((width + 1) // 2) * ((height + 1) // 2)
    frame_bytes = (width * height + 2 * chroma) * sample
    frames = []
    pos = header_end + 1
    while pos < len(data):
        pos = data.index(b"\n", pos) + 1  # the FRAME line
        luma = np.frombuffer(data, dtype=dtype, count=width * height, offset=pos)
        frames.append(luma.reshape(height, width))
        pos += frame_bytes
    return width, height, (10 if sample == 2 else 8), frames


def cli_binary():
    """The vmafcuda CLI: $VMAFCUDA_CLI, else a release (or debug) build in the target folder."""
    given = os.environ.get("VMAFCUDA_CLI")
    if given:
        return pathlib.Path(given)
    for profile in ("release", "debug"):
        for target in (os.environ.get("CARGO_TARGET_DIR"), REPO / "target"):
            if target and (pathlib.Path(target) / profile / "vmafcuda").exists():
                return pathlib.Path(target) / profile / "vmafcuda"
    return None


def without_fps(report):
    report = dict(report)
    report.pop("fps", None)
    return report
