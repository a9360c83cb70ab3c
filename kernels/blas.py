"""The BLAS behind `np.dot` in CPU kernels is scipy's OpenBLAS; this sets its
thread count (numba calls it through scipy, so numpy's own setting misses it)."""

from __future__ import annotations

import ctypes
import functools
import glob
import os

import scipy


@functools.cache
def _library() -> ctypes.CDLL | None:
    root = os.path.join(os.path.dirname(scipy.__file__), "..", "scipy.libs")
    for path in sorted(glob.glob(os.path.join(root, "*openblas*.so*"))):
        lib = ctypes.CDLL(path)
        if hasattr(lib, "scipy_openblas_set_num_threads"):
            return lib
    return None  # another BLAS build: leave it as it is


def set_threads(n: int) -> bool:
    """Use `n` BLAS threads; False when scipy's OpenBLAS is not found."""
    lib = _library()
    if lib is None:
        return False
    lib.scipy_openblas_set_num_threads(int(n))
    return True


@functools.cache
def name() -> str:
    """The BLAS's own description ("OpenBLAS 0.3.30 DYNAMIC_ARCH ... SkylakeX ..."),
    or what is known of it when it is not scipy's OpenBLAS."""
    lib = _library()
    if lib is None:
        return "not scipy's OpenBLAS (thread count left as it is)"
    describe = lib.scipy_openblas_get_config
    describe.restype = ctypes.c_char_p
    return describe().decode(errors="replace").strip()
