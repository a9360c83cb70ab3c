"""NCCL through ctypes: the seven entry points a data-parallel run uses, from
libnccl.so.2 as the `nvidia-nccl-cu13` wheel installs it (the `nccl` extra) or as the
system provides it. NCCL's C API has been stable since 2.0; a Python binding would
bring more than these calls need (CuPy a whole array library, nccl4py cuda-core and
the CUTLASS DSL), and both still need this same library. libnccl is statically
linked against the CUDA runtime: it loads, reports its version and makes a unique
id on a machine without a GPU."""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

UNIQUE_ID_BYTES = 128  # sizeof(ncclUniqueId)
SUM = 0                # ncclSum
DTYPES = {"float16": 6, "float32": 7, "float64": 8}  # ncclFloat16, ncclFloat32, ncclFloat64


def candidates() -> list[str]:
    """Where libnccl.so.2 may be: the pip wheel's copy first, then the loader's path."""
    found = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        wheel = Path(root) / "nccl" / "lib" / "libnccl.so.2"
        if wheel.exists():
            found.append(str(wheel))
    return [*found, "libnccl.so.2"]


class _UniqueId(ctypes.Structure):
    # ncclUniqueId is passed by value: ctypes passes a bare array as a pointer
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class NcclError(RuntimeError):
    """An NCCL call returned an error (its code and NCCL's own words)."""


class Nccl:
    """The loaded library; every call raises NcclError on a non-zero result."""

    def __init__(self, path: str | None = None):
        errors = []
        for where in [path] if path else candidates():
            try:
                self.lib = ctypes.CDLL(where)
                self.path = where
                break
            except OSError as exc:
                errors.append(str(exc))
        else:
            raise OSError("libnccl.so.2 not found: " + "; ".join(errors))
        self.lib.ncclGetErrorString.restype = ctypes.c_char_p
        self.lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                           ctypes.c_void_p]
        self.lib.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                              _UniqueId, ctypes.c_int]

    def _check(self, what: str, result: int) -> None:
        if result != 0:
            words = self.lib.ncclGetErrorString(result).decode()
            raise NcclError(f"{what} failed: NCCL error {result} ({words})")

    def version(self) -> str:
        """"2.23.3" for 22303 (NCCL_VERSION_CODE: major*10000 + minor*100 + patch)."""
        code = ctypes.c_int()
        self._check("ncclGetVersion", self.lib.ncclGetVersion(ctypes.byref(code)))
        major, rest = divmod(code.value, 10000)
        return f"{major}.{rest // 100}.{rest % 100}"

    def unique_id(self) -> bytes:
        """The id rank 0 makes and every rank joins by (no GPU needed)."""
        buf = ctypes.create_string_buffer(UNIQUE_ID_BYTES)
        self._check("ncclGetUniqueId", self.lib.ncclGetUniqueId(buf))
        return buf.raw

    def init_rank(self, size: int, unique_id: bytes, rank: int) -> int:
        """A communicator of `size` ranks on the current GPU (blocks until all joined)."""
        comm = ctypes.c_void_p()
        uid = _UniqueId.from_buffer_copy(unique_id)
        self._check("ncclCommInitRank",
                    self.lib.ncclCommInitRank(ctypes.byref(comm), size, uid, rank))
        return int(comm.value)

    def all_reduce_sum(self, pointer: int, count: int, dtype: str, comm: int,
                       stream: int) -> None:
        """In place, enqueued on `stream`."""
        self._check("ncclAllReduce", self.lib.ncclAllReduce(
            pointer, pointer, count, DTYPES[dtype], SUM, comm, stream))

    def group_start(self) -> None:
        self._check("ncclGroupStart", self.lib.ncclGroupStart())

    def group_end(self) -> None:
        self._check("ncclGroupEnd", self.lib.ncclGroupEnd())


def load() -> tuple[Nccl | None, str]:
    """(the library, its version) or (None, why it cannot be used)."""
    try:
        nccl = Nccl()
        return nccl, nccl.version()
    except (OSError, NcclError, AttributeError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
