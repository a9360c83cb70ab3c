"""The CUDA backend: the one module that imports numba-cuda (and, on a real GPU,
nvmath-python for cuBLAS and cuda.core for CUDA graphs). It says whether a device
is usable, holds device memory and the stream, moves bytes, and runs a step's
launch list: in order, or captured once as a CUDA graph and replayed."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import numpy as np
from sexpgpu.kernels.gemm import BlasCall, blas_call

from sexpgpu import env

NUMBA_CUDA = "0.30"           # the numba-cuda series the `cuda` extra installs
WORKSPACE = 32 << 20          # cuBLAS workspace: set once, so capture allocates nothing


def cuda() -> Any:
    """The `numba.cuda` module (imported on first use: `check` never loads numba)."""
    from numba import cuda as nb_cuda  # numba-cuda: an optional extra, loaded on first use

    return nb_cuda


def simulated() -> bool:
    return env.cuda_simulator()


# -- what is here ------------------------------------------------------------------

@dataclass
class Probe:
    """What a `--device cuda` run would find on this machine."""

    usable: bool
    looked_for: str
    found: str
    fix: str = ""
    simulator: bool = False
    name: str | None = None
    compute_capability: tuple[int, int] | None = None
    driver: str | None = None          # the CUDA version the driver supports, "13.0"
    runtime: str | None = None         # the CUDA runtime numba-cuda loaded
    numba_cuda: str | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v is not None}
        if self.compute_capability is not None:
            out["compute_capability"] = ".".join(map(str, self.compute_capability))
        return out


def _version_text(v: Any) -> str:
    if isinstance(v, tuple):
        return ".".join(str(x) for x in v)
    if isinstance(v, int):  # 13000 -> 13.0
        return f"{v // 1000}.{v % 1000 // 10}"
    return str(v)


def probe() -> Probe:
    """numba-cuda's version and a GPU (or numba's simulator); never raises."""
    looked_for = f"numba-cuda {NUMBA_CUDA}.x and an NVIDIA GPU with its driver"
    try:
        version = metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        version = None
    if simulated():
        return Probe(True, looked_for, "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)",
                     simulator=True, name="SIMULATOR", numba_cuda=version)
    if version is None:
        return Probe(False, looked_for, "numba-cuda is not installed",
                     "pip install 'sexpgpu[cuda]' (numba-cuda with its CUDA 13 libraries), "
                     "or train with --device cpu")
    if not version.startswith(NUMBA_CUDA + "."):
        return Probe(False, looked_for, f"numba-cuda {version}",
                     f"pip install 'sexpgpu[cuda]' (it pins numba-cuda {NUMBA_CUDA}.x)",
                     numba_cuda=version)
    try:
        nb = cuda()
        if not nb.is_available():
            return Probe(False, looked_for, "no usable CUDA GPU or driver (numba-cuda "
                         f"{version} found no device)", "run on a machine with an NVIDIA GPU "
                         "and its driver (`nvidia-smi` lists it), or train with --device cpu",
                         numba_cuda=version)
        device = nb.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
        free, total = nb.current_context().get_memory_info()
        driver = runtime = None
        try:
            from numba.cuda.cudadrv import (
                driver as nb_driver,  # numba-cuda: an optional extra, loaded on first use
            )
            from numba.cuda.cudadrv import (
                runtime as nb_runtime,  # numba-cuda: an optional extra, loaded on first use
            )
            driver = _version_text(nb_driver.driver.get_version())
            runtime = _version_text(nb_runtime.runtime.get_version())
        except Exception:  # noqa: BLE001 - versions are informative only
            pass
        return Probe(True, looked_for, f"{name}", name=name,
                     compute_capability=tuple(device.compute_capability), driver=driver,
                     runtime=runtime, numba_cuda=version, free_bytes=int(free),
                     total_bytes=int(total))
    except Exception as exc:  # noqa: BLE001 - a broken driver is a finding
        return Probe(False, looked_for, f"CUDA failed to start: {type(exc).__name__}: {exc}",
                     "check the driver (`nvidia-smi`), or train with --device cpu",
                     numba_cuda=version)


# -- memory and transfers ----------------------------------------------------------

def device_array(n: int, dtype: Any) -> Any:
    return cuda().device_array(max(1, n), dtype=np.dtype(dtype))


def to_device(array: np.ndarray, stream: Any = 0) -> Any:
    return cuda().to_device(np.ascontiguousarray(array), stream=stream)


def host_staging(nbytes: int) -> np.ndarray:
    """A host buffer for the bytes a step sends: page-locked on a real GPU, so the
    copy is one DMA that overlaps the host's work."""
    if simulated():
        return np.zeros(max(1, nbytes), np.uint8)
    return cuda().pinned_array(max(1, nbytes), dtype=np.uint8)


def pointer(array: Any) -> int:
    return int(array.__cuda_array_interface__["data"][0])


# -- the stream, launches, CUDA graphs, cuBLAS ---------------------------------------

class Backend:
    """One per process: the stream every step runs on, the cuBLAS handle, and
    whether steps are captured as CUDA graphs (with the reason when they are not)."""

    def __init__(self) -> None:
        nb = cuda()
        self.simulator = simulated()
        self._core_stream = None
        if self.simulator:
            self.stream = nb.stream()
        else:
            nb.current_context()
            try:  # a cuda.core stream, so that it can be captured into a graph
                from cuda.core import Device

                device = Device(nb.get_current_device().id)
                device.set_current()
                self._core_stream = device.create_stream()
                self.stream = nb.external_stream(int(self._core_stream.handle))
            except Exception:  # noqa: BLE001 - graphs then stay off (graph_mode says why)
                self.stream = nb.stream()
        self.graphs, self.graph_reason = self._graphs_supported()
        self._blas: Any = None
        self.blas_reason = ("numba's simulator has no cuBLAS: matmuls run the tiled kernel"
                            if self.simulator else "")

    def _graphs_supported(self) -> tuple[bool, str]:
        if self.simulator:
            return False, "numba's simulator has no CUDA graphs: ordered launches on one stream"
        if env.cuda_sync():
            return False, "SEXPGPU_CUDA_SYNC=1: ordered launches, synchronised after each"
        if self._core_stream is None:
            return False, "cuda.core could not wrap the stream: ordered launches on one stream"
        return True, "the step is captured as a CUDA graph on its second call and replayed"

    def blas(self) -> Any:
        """The cuBLAS handle (nvmath-python), or None where matmuls use the tiled kernel."""
        if self._blas is None and not self.simulator and not self.blas_reason:
            try:
                from nvmath.bindings import cublas  # nvmath: only on a real GPU

                handle = cublas.create()
                cublas.set_stream(handle, self.stream_handle())
                self._workspace = device_array(WORKSPACE, np.uint8)
                cublas.set_workspace(handle, pointer(self._workspace), WORKSPACE)
                self._blas = (cublas, handle)
            except Exception as exc:  # noqa: BLE001 - then the tiled kernel runs
                self.blas_reason = (f"cuBLAS unavailable ({type(exc).__name__}: {exc}): "
                                    "matmuls run the tiled kernel")
        return self._blas

    def stream_handle(self) -> int:
        if self._core_stream is not None:
            return int(self._core_stream.handle)
        handle = self.stream.handle
        return int(handle.value if hasattr(handle, "value") else handle)

    def synchronize(self) -> None:
        self.stream.synchronize()

    def event(self) -> Any:
        return cuda().event()


_BACKEND: Backend | None = None


def backend() -> Backend:
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = Backend()
    return _BACKEND


@dataclass
class Step:
    """A graph's launch list bound to its device buffers, run on the backend's stream.
    `entries`: (name, kernel, grid, block, args) in order; `calls`: the cuBLAS call
    of each matmul cuBLAS can do, by launch name; `buffers`: the step's device
    buffers by name (the calls' pointers); `describe(name, exc)`: the coded error
    for a failure in launch `name` (None: somewhere in a replayed graph)."""

    entries: list[tuple[str, Any, tuple, tuple, tuple]]
    calls: dict[str, BlasCall]
    buffers: dict[str, Any]
    describe: Any
    runs: int = 0
    graph: Any = None
    mode: str = "launches"        # launches | graph
    reason: str = ""
    _prepared: dict[str, tuple] = field(default_factory=dict)

    def run(self) -> None:
        be = backend()
        self.runs += 1
        if self.graph is not None:
            self._replay(be)
            return
        if be.graphs and self.runs == 2:
            # the first run compiled every kernel and set cuBLAS up: capture now
            if self._capture(be):
                self._replay(be)
                return
        self.reason = self.reason or be.graph_reason
        self._launch_all(be, be.stream)

    def _launch_all(self, be: Backend, stream: Any) -> None:
        sync = env.cuda_sync()
        for name, kernel, grid, block, args in self.entries:
            try:
                call = self.calls.get(name)
                if call is not None and be.blas() is not None:
                    self._gemm(be, name, call)
                else:
                    kernel[grid, block, stream](*args)
                if sync:
                    stream.synchronize()
            except Exception as exc:  # noqa: BLE001 - a launch's failure, coded
                raise self.describe(name, exc) from None

    def _capture(self, be: Backend) -> bool:
        blas = be.blas()
        try:
            builder = be._core_stream.create_graph_builder()
            builder.begin_building("thread_local")
            capturing = cuda().external_stream(int(builder.stream.handle))
            if blas is not None:
                blas[0].set_stream(blas[1], int(builder.stream.handle))
            try:
                self._launch_all(be, capturing)
            finally:
                builder.end_building()
                if blas is not None:
                    blas[0].set_stream(blas[1], be.stream_handle())
            self.graph = builder.complete()
            self.graph.upload(be._core_stream)
            self.mode, self.reason = "graph", be.graph_reason
            return True
        except Exception as exc:  # noqa: BLE001 - ordered launches still work
            self.graph, self.mode = None, "launches"
            self.reason = f"graph capture failed ({type(exc).__name__}: {exc}): ordered launches"
            be.graphs, be.graph_reason = False, self.reason
            return False

    def _replay(self, be: Backend) -> None:
        try:
            self.graph.launch(be._core_stream)
        except Exception as exc:  # noqa: BLE001
            raise self.describe(None, exc) from None

    def _gemm(self, be: Backend, name: str, call: BlasCall) -> None:
        """One sgemm: strided batched, or batched over pointer arrays made once."""
        cublas, handle = be.blas()
        if name not in self._prepared:
            self._prepared[name] = _prepare_gemm(call, self.buffers)
        alpha, beta, p, q, c, arrays = self._prepared[name]
        if call.strided is not None:
            sp, sq, sc = call.strided
            cublas.sgemm_strided_batched(handle, call.transp, call.transq, call.m, call.n,
                                         call.k, alpha.ctypes.data, p, call.ldp, sp, q,
                                         call.ldq, sq, beta.ctypes.data, c, call.ldc, sc,
                                         call.count)
        else:
            pa, qa, ca = (pointer(a) for a in arrays)
            cublas.sgemm_batched(handle, call.transp, call.transq, call.m, call.n, call.k,
                                 alpha.ctypes.data, pa, call.ldp, qa, call.ldq,
                                 beta.ctypes.data, ca, call.ldc, call.count)


def _prepare_gemm(call: BlasCall, buffers: dict[str, Any]) -> tuple:
    """Host scalars and device pointers of one cuBLAS call; for sgemm_batched, the
    pointer arrays (made once: the buffers never move)."""
    base = {name: pointer(buffers[name]) for name in (call.p, call.q, call.c)}
    alpha, beta = np.ones(1, np.float32), np.zeros(1, np.float32)
    p0, q0, c0 = call.offsets[0]
    p, q, c = base[call.p] + 4 * p0, base[call.q] + 4 * q0, base[call.c] + 4 * c0
    arrays: list[Any] = []
    if call.strided is None:
        for k, buf in enumerate((call.p, call.q, call.c)):
            ptrs = np.array([base[buf] + 4 * o[k] for o in call.offsets], np.uint64)
            arrays.append(to_device(ptrs))
    return alpha, beta, p, q, c, arrays


def gemm_calls(codes: list[Any]) -> dict[str, BlasCall]:
    """Each matmul kernel's cuBLAS call, by kernel name (those cuBLAS can do)."""
    out = {}
    for code in codes:
        if code.gemm is not None:
            call = blas_call(code.gemm)
            if call is not None:
                out[code.name] = call
    return out


# -- PTX -----------------------------------------------------------------------------

_PTX_VERSION = re.compile(r"^\.version\s+(\d+)\.(\d+)", re.M)


def ptx_version(ptx: str) -> tuple[int, int] | None:
    m = _PTX_VERSION.search(ptx)
    return (int(m.group(1)), int(m.group(2))) if m else None


def compile_ptx(fn: Any, argtypes: list[str], cc: tuple[int, int]) -> str:
    """The PTX NVVM makes of a kernel's Python function for compute capability `cc`,
    with no GPU needed: numba-cuda compiles the device functions a kernel calls (the
    RNG, bf16 and index helpers) for the current device's compute capability, so
    while this runs that device is said to be one of `cc`."""
    import numba  # numba-cuda: an optional extra, loaded on first use
    from numba.cuda import dispatcher  # numba-cuda: an optional extra, loaded on first use

    sig = tuple(eval(t, {"__builtins__": {}}, vars(numba.types)) for t in argtypes)
    current = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: type("Target", (), {"compute_capability": cc})
    try:
        ptx, _ = cuda().compile_ptx(fn, sig, cc=cc)
    finally:
        dispatcher.get_current_device = current
    return ptx


def nvvm_ptx_version() -> tuple[int, int] | None:
    """The PTX ISA version this NVVM emits (a one-line kernel compiled for sm_80)."""
    def probe_kernel(a):  # pragma: no cover - compiled, never run
        a[0] = 1

    try:
        return ptx_version(compile_ptx(probe_kernel, ["float32[::1]"], (8, 0)))
    except Exception:  # noqa: BLE001
        return None
