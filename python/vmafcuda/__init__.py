"""vmafcuda: Netflix VMAF, bit-exact with libvmaf 3.2.0, on the CPU and on CUDA GPUs.

``score(reference, distorted, ...)`` scores a y4m pair; ``Scorer(width, height, ...)`` scores
luma planes pushed as NumPy arrays. Both return the report of the ``vmafcuda`` CLI's JSON file
as a dict; every error of the engine is a ``VmafError`` (a ``ValueError``).
"""

from ._native import Scorer, VmafError, __version__, score

__all__ = ["Scorer", "VmafError", "score", "__version__"]
