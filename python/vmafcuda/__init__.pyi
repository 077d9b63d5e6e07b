"""Type stubs of vmafcuda (the extension module vmafcuda._native, re-exported)."""

from os import PathLike
from types import TracebackType
from typing import Any, Dict, Optional, Sequence, Type, Union

__version__: str

Report = Dict[str, Any]
"""The CLI's JSON report: version, fps, model, backend, frames, pooled_metrics, shots."""

class VmafError(ValueError):
    """A scoring error, with the engine's message."""

def score(
    reference: Union[str, PathLike[str]],
    distorted: Union[str, PathLike[str]],
    model: str = "vmaf_v0.6.1",
    shots: Optional[Sequence[int]] = None,
    backend: str = "auto",
    psnr: bool = False,
    rebuild: str = "full",  # "full", "reset" or "cold": what a shot boundary does; same scores
) -> Report:
    """Scores a y4m pair; returns the CLI's JSON report as a dict."""

class Scorer:
    """Streaming scorer of luma planes: 2-D C-contiguous uint8 / uint16 NumPy arrays, or CUDA
    arrays (``__cuda_array_interface__``: PyTorch, CuPy) read in place on the GPU."""

    def __init__(
        self,
        width: int,
        height: int,
        bpc: int = 8,
        model: str = "vmaf_v0.6.1",
        backend: str = "auto",  # "auto", "cpu", "cuda" or "cuda:N"
        shots: Optional[Sequence[int]] = None,
        rebuild: str = "full",  # "full", "reset" or "cold": what a shot boundary does; same scores
    ) -> None: ...
    @property
    def backend(self) -> str:
        """``"cpu"`` or ``"cuda"``."""
    @property
    def frames_pushed(self) -> int: ...
    def push(self, reference: Any, distorted: Any) -> None:
        """Scores one pair of (height, width) luma arrays (both host or both CUDA). CUDA arrays
        are queued (up to 3 pairs in flight) and kept alive until read: do not write into
        them before ``sync()``."""
    def sync(self) -> None:
        """Waits until the GPU has read and scored every CUDA array pushed so far."""
    def new_shot(self) -> None:
        """The next frame starts a new shot (motion restarts, as a fresh libvmaf run)."""
    def finish(self) -> Report:
        """Ends the run and returns the report; the scorer is closed afterwards."""
    def close(self) -> None:
        """Releases the scorer without a report (idempotent)."""
    def __enter__(self) -> "Scorer": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
