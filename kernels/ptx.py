"""Ahead-of-time checks of a graph's CUDA kernels without a GPU: each kernel module is
compiled to PTX by numba-cuda's NVVM for a compute capability and assembled by the
machine's ptxas, which reports registers, spills and shared memory per kernel
(`sexpgpu ir FILE --kernels --device cuda`, tests/test_cuda_ptx.py). Results are
cached on disk by kernel text, argument types, target and NVVM version."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson
from sexpgpu.kernels.cache import load_module, module_name

from sexpgpu import env

TARGETS = ((8, 0), (9, 0))   # sm_80 (A100) and sm_90 (H100/H200)


@dataclass
class Assembled:
    """ptxas's figures for one kernel on one target (or why it failed)."""

    cc: str                  # "9.0"
    ptx_version: str         # the PTX ISA NVVM emitted, "9.0"
    registers: int = 0
    spill_stores: int = 0    # bytes
    spill_loads: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0
    error: str = ""

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


def find_ptxas() -> str | None:
    """ptxas on PATH, under $CUDA_HOME or /usr/local/cuda*, or from the nvidia-cuda-nvcc
    wheel (nvidia/cu13/bin); None when there is none."""
    found = shutil.which("ptxas")
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", "")]
    roots += sorted((str(p) for p in Path("/usr/local").glob("cuda*")), reverse=True)
    try:  # the nvidia-cuda-nvcc wheel (.ci/run installs it where the system has none)
        import nvidia

        roots += [str(Path(p) / "cu13") for p in nvidia.__path__]
    except ImportError:
        pass
    for root in filter(None, roots):
        candidate = Path(root) / "bin" / "ptxas"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


_REGS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_VERSION = re.compile(r"^\.version\s+(\d+\.\d+)", re.M)


def parse_ptxas(text: str) -> dict[str, int]:
    """The figures of `ptxas -v` output for a single-kernel PTX file."""
    out = {"registers": 0, "shared_bytes": 0, "stack_bytes": 0, "spill_stores": 0,
           "spill_loads": 0}
    if m := _REGS.search(text):
        out["registers"] = int(m.group(1))
    if m := _SMEM.search(text):
        out["shared_bytes"] = int(m.group(1))
    if m := _SPILL.search(text):
        out["stack_bytes"], out["spill_stores"], out["spill_loads"] = map(int, m.groups())
    return out


def _cache_file(key: str) -> Path:
    return env.cache_dir() / "ptx" / f"{key}.json"


def assemble(source: str, argtypes: list[str], cc: tuple[int, int], ptxas: str) -> Assembled:
    """Compile one kernel module's `kernel` to PTX for `cc` and assemble it."""
    import numba_cuda  # noqa: F401 - the NVVM of the `cuda` extra, never numba's own
    from sexpgpu.kernels import cuda_backend

    key = hashlib.sha256(orjson.dumps([source, argtypes, cc, numba_cuda.__version__,
                                       ptxas])).hexdigest()[:24]
    cached = _cache_file(key)
    if cached.exists():
        return Assembled(**orjson.loads(cached.read_bytes()))
    target = f"{cc[0]}.{cc[1]}"
    try:
        module = load_module(source)
        ptx = cuda_backend.compile_ptx(module.kernel.py_func, argtypes, cc)
    except Exception as exc:  # noqa: BLE001 - a kernel NVVM cannot compile is the finding
        return Assembled(target, "", error=f"NVVM: {type(exc).__name__}: {exc}"[:2000])
    version = m.group(1) if (m := _VERSION.search(ptx)) else "?"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.ptx"
        path.write_text(ptx)
        done = subprocess.run([ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", "-o",
                               str(Path(tmp) / "kernel.cubin"), str(path)],
                              capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return Assembled(target, version, error=f"ptxas: {done.stderr.strip()[:2000]}")
    result = Assembled(target, version, **parse_ptxas(done.stdout + done.stderr))
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(orjson.dumps(asdict(result)))
    return result


def report(generated, targets=TARGETS, ptxas: str | None = None, jobs: int = 1) -> list[dict]:
    """For each launch of a CUDA step: its name, family, launch configuration and,
    per target, ptxas's figures (a kernel shared by several launches is built once;
    `jobs` processes build them)."""
    return reports([generated], targets, ptxas, jobs)[0]


def reports(steps: list, targets=TARGETS, ptxas: str | None = None,
            jobs: int = 1) -> list[list[dict]]:
    """`report` of each of several CUDA steps, their kernels built together: one pool
    of `jobs` processes over all of them (the op samples' steps have a kernel or two
    each, too few to share out one step at a time)."""
    ptxas = ptxas or find_ptxas()
    if ptxas is None:
        raise FileNotFoundError("ptxas (the CUDA toolkit's PTX assembler) is not on PATH, "
                                "under $CUDA_HOME/bin or /usr/local/cuda*/bin")
    by_module = {module_name(mod.source): mod for step in steps for mod in step.modules}
    tasks = [(name, cc) for name in by_module for cc in targets]
    built = dict(zip(tasks, build_all([(by_module[name].source, by_module[name].argtypes, cc)
                                       for name, cc in tasks], ptxas, jobs)))
    return [[_row(launch, built, targets) for launch in step.launches] for step in steps]


def _row(launch, built: dict, targets) -> dict:
    row = {"name": launch.name, "family": launch.family, "grid": list(launch.grid),
           "block": list(launch.block), "shared_bytes": launch.shared_bytes}
    if (launch.module, targets[0]) in built:
        row["module"] = launch.module
        for cc in targets:
            row[f"sm_{cc[0]}{cc[1]}"] = asdict(built[launch.module, cc])
    return row


def build_all(tasks: list[tuple[str, list[str], tuple[int, int]]], ptxas: str,
              jobs: int = 1) -> list[Assembled]:
    """`assemble` over (source, argtypes, cc) tasks, in `jobs` processes."""
    if jobs <= 1 or len(tasks) < 4:
        return [assemble(source, argtypes, cc, ptxas) for source, argtypes, cc in tasks]
    from concurrent.futures import (
        ProcessPoolExecutor,  # only when many kernels are assembled at once
    )

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(assemble, source, argtypes, cc, ptxas)
                   for source, argtypes, cc in tasks]
        return [f.result() for f in futures]


def distinct(rows: list[dict]) -> int:
    return len({r["module"] for r in rows if "module" in r})
