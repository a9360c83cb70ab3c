"""`sexpgpu doctor [FILE]`: whether a run can start here: the machine, then the file."""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy

from sexpgpu import env, usage
from sexpgpu.atomic import print_json
from sexpgpu.contract.compile import compile_file, evaluate_file
from sexpgpu.contract.fields import resolve_path
from sexpgpu.contract.plan import plan_json
from sexpgpu.diagnostics import SexpError
from sexpgpu.selection import Selection, from_docopt

HELP = """\
Say whether a run can start on this machine: versions, CPUs, CUDA, free disk and a
writable cache; with FILE also that it compiles, that its data files exist and that
its memory plan fits.

Usage:
  sexpgpu doctor [FILE] [--set K=V]... [--variant NAME] [--runs DIR] [--device DEV] [--json]
  sexpgpu doctor (-h | --help)

Options:
  --set K=V        bind knob K to V (repeatable)
  --variant NAME   bind the knobs of a variant the file declares
  --runs DIR       where run directories would go [default: runs]
  --device DEV     cpu or cuda (default: the file's defrun :device)
  --json           print the checks as JSON

Each check is `ok`, `warn` (a run can start, but look) or `fail` (it cannot); the exit
code is 1 when any check fails. KEY=VALUE after FILE is the same as --set KEY=VALUE.

Example:
  sexpgpu doctor examples/shakespeare-char.sx --device cuda
"""

MIN_DISK = 1 << 30        # below this free at the runs dir: warn (checkpoints need room)
MEMORY_WARN = 0.8         # a plan above this share of free memory: warn


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def versions() -> list[Check]:
    checks = [Check("python", "ok" if sys.version_info >= (3, 11) else "fail",
                    platform.python_version()),
              Check("numpy", "ok", numpy.__version__)]
    for module in ("numba", "llvmlite"):
        try:
            checks.append(Check(module, "ok", __import__(module).__version__))
        except Exception as exc:  # noqa: BLE001 - a broken install is what doctor reports
            checks.append(Check(module, "fail", f"cannot import: {exc}"))
    return checks


def cpus(load: float | None = None) -> Check:
    """The cores this process may use, and whether other work already keeps them busy.
    By default a step's parallel parts take a second thread only while a core is free
    (kernels/threads.py); a fixed SEXPGPU_THREADS above the free cores stalls every
    step instead (a parallel loop waits for its slowest thread: a GPT step went
    36 ms -> over 1 s)."""
    total = os.cpu_count() or 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else total
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    detail = f"{usable} usable of {total}, load {load:.1f}"
    try:
        fixed = env.threads_fixed()
    except SexpError:  # the env check reports it
        fixed = None
    free = max(1, round(usable - load))
    if fixed is None:
        return Check("cpus", "ok", f"{detail}; threads follow the free cores")
    if load >= 0.75 and fixed > free:
        return Check("cpus", "warn", f"{detail}: other work holds about {load:.0f} of them; "
                     f"set SEXPGPU_THREADS={free} or unset it (now {fixed})")
    return Check("cpus", "ok", detail)


def environment() -> Check:
    """Every SEXPGPU_ variable with a kind holds a value of it (a run would stop at
    E-ENV where it reads one that does not)."""
    refused = []
    for read in env.TYPED_READERS:
        try:
            read()
        except SexpError as exc:
            refused.append(_diag(exc))
    if refused:
        return Check("env", "fail", "; ".join(refused))
    return Check("env", "ok", "every SEXPGPU_ variable set is of its kind")


def cuda() -> tuple[Check, int | None]:
    """Whether a cuda run could start: numba-cuda, the GPU (name, compute capability),
    driver and runtime versions, and its free memory in bytes when it has one."""
    try:
        from sexpgpu.kernels.cuda_backend import probe  # numba-cuda: probed only when asked

        found = probe()
    except Exception as exc:  # noqa: BLE001 - a broken install must not crash doctor
        return Check("cuda", "warn", f"not available: {type(exc).__name__}: {exc}"), None
    if found.simulator:  # numba's simulator: no real device, no memory figures
        return Check("cuda", "ok", f"{found.name} (numba's CUDA simulator)"), None
    if not found.usable:
        return Check("cuda", "warn", f"not available: {found.found}; {found.fix}"), None
    cc = ".".join(map(str, found.compute_capability or ()))
    return Check("cuda", "ok", f"{found.name} (sm {cc}), driver CUDA {found.driver}, runtime "
                 f"{found.runtime}, numba-cuda {found.numba_cuda}, "
                 f"{size(found.free_bytes)} free of {size(found.total_bytes)}"
                 ), found.free_bytes


# the newest PTX ISA a driver of each CUDA version loads (CUDA 13.x: ISA 9.x)
_PTX_OF_CUDA = {(12, 0): (8, 0), (12, 1): (8, 1), (12, 2): (8, 2), (12, 3): (8, 3),
                (12, 4): (8, 4), (12, 5): (8, 5), (12, 6): (8, 5), (12, 8): (8, 7),
                (12, 9): (8, 8)}


def ptx_check() -> Check:
    """The PTX ISA numba-cuda's NVVM emits against what the driver can load."""
    from sexpgpu.kernels.cuda_backend import (  # numba-cuda: probed only when asked
        nvvm_ptx_version,
        probe,
    )

    if env.cuda_simulator():
        return Check("ptx", "ok", "numba's simulator compiles no PTX (unset "
                     "NUMBA_ENABLE_CUDASIM to check NVVM's)")
    isa = nvvm_ptx_version()
    if isa is None:
        return Check("ptx", "warn", "numba-cuda's NVVM did not compile a test kernel "
                     "(pip install 'sexpgpu[cuda]')")
    emitted = f"PTX ISA {isa[0]}.{isa[1]}"
    found = probe()
    if found.driver is None:
        return Check("ptx", "ok" if found.simulator else "warn",
                     f"{emitted}; no driver here to compare with")
    major, minor = (int(x) for x in found.driver.split(".")[:2])
    loads = (major - 4, minor) if major >= 13 else _PTX_OF_CUDA.get((major, minor), (8, 0))
    if isa > loads:
        return Check("ptx", "fail", f"{emitted}, but the driver (CUDA {found.driver}) loads up "
                     f"to {loads[0]}.{loads[1]}: update the driver, or install the cuda extra "
                     "again (it pins the CUDA 13.0 NVVM)")
    return Check("ptx", "ok", f"{emitted}; the driver (CUDA {found.driver}) loads up to "
                 f"{loads[0]}.{loads[1]}")


def nccl_check(loader: Any = None) -> Check:
    """NCCL for CUDA runs of several processes (the `nccl` extra); never a failure:
    without it they sum gradients through host memory."""
    if loader is None:
        # ctypes over libnccl: only with --device cuda
        from sexpgpu.parallel.libnccl import load as loader
    lib, why = loader()
    if lib is None:
        return Check("nccl", "ok", "not installed: CUDA runs of several processes sum "
                     "gradients through host memory over MPI (pip install 'sexpgpu[nccl]' "
                     f"for GPU to GPU; {why})")
    return Check("nccl", "ok", f"NCCL {why} ({lib.path}): CUDA runs of several processes "
                 "sum gradients GPU to GPU (untested on hardware so far)")


def disk(runs: str) -> Check:
    where = Path(runs).resolve()
    while not where.exists():  # the runs dir may not exist yet: its nearest ancestor
        where = where.parent
    free = shutil.disk_usage(where).free
    status = "ok" if free >= MIN_DISK else "warn"
    return Check("disk", status, f"{size(free)} free at {where}")


def cache() -> Check:
    where = env.cache_dir()
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("cache", "fail", f"{where} is not writable: {exc.strerror or exc}")
    return Check("cache", "ok", f"{where} is writable")


def mem_available() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is no /proc)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for row in fh:
                if row.startswith("MemAvailable:"):
                    return int(row.split()[1]) * 1024
    except OSError:
        return None
    return None


def data_checks(exp: Any) -> list[Check]:
    """One check per loader: its data file exists, or its source is generated here."""
    base = Path(exp.file).resolve().parent
    checks = []
    for spec in exp.loaders:
        paths = [spec.options.get("path"), *(s.options.get("path") for s in spec.stages
                                              if s.source is not None)]
        files = [resolve_path(p, base) for p in paths if p]
        if not files:
            checks.append(Check(f"data {spec.name}", "ok", f"{spec.source}: generated, no file"))
            continue
        missing = [str(f) for f in files if not Path(f).exists()]
        if missing:
            checks.append(Check(f"data {spec.name}", "fail", f"missing {', '.join(missing)}"))
        else:
            total = sum(Path(f).stat().st_size for f in files)
            checks.append(Check(f"data {spec.name}", "ok",
                                f"{', '.join(map(str, files))} ({size(total)})"))
    return checks


def memory_check(plan: dict[str, Any], device: str, gpu_free: int | None) -> Check:
    mem = plan["memory"]
    need = (mem["params_bytes"] + mem["grads_bytes"] + mem["optimizer_state_bytes"]
            + mem["peak_activation_bytes"])
    parts = (f"params {size(mem['params_bytes'])} + grads {size(mem['grads_bytes'])} + "
             f"optimizer state {size(mem['optimizer_state_bytes'])} + peak activations "
             f"{size(mem['peak_activation_bytes'])} = {size(need)}")
    if device == "cuda" and "device_memory" in plan:  # what the device holds, from the plans
        dev = plan["device_memory"]
        need = dev["total_bytes"]
        parts = (f"parameters and state {size(dev['resident_bytes'])} + buffers "
                 f"{size(dev['buffers_bytes'])} + inputs {size(dev['staging_bytes'])} + cuBLAS "
                 f"workspace {size(dev['workspace_bytes'])} = {size(need)} on the device")
    free, where = (gpu_free, "GPU") if device == "cuda" else (mem_available(), "RAM")
    if free is None:
        return Check("memory", "warn", f"{parts}; free {where} unknown")
    status = "fail" if need > free else "warn" if need > MEMORY_WARN * free else "ok"
    return Check("memory", status, f"{parts}; {size(free)} {where} free")


def file_checks(path: str, selection: Selection, gpu_free: int | None) -> list[Check]:
    try:
        exp, _, _, _ = evaluate_file(path, selection)
    except SexpError as exc:
        return [Check("compile", "fail", _diag(exc))]
    checks = data_checks(exp)
    try:
        compiled = compile_file(path, selection)
    except SexpError as exc:
        return [Check("compile", "fail", _diag(exc)), *checks]
    plan = plan_json(compiled)
    device = exp.run.device if exp.run else "cpu"  # --device is in the selection
    checks.insert(0, Check("compile", "ok", f"{plan['parameters']['total']:,} parameters"))
    if device == "cuda":
        from sexpgpu.runtime.device import device_need  # only for --device cuda

        plan = {**plan, "device_memory": device_need(compiled)}
    if device == "cuda" and gpu_free is None and not env.cuda_simulator():
        checks.append(Check("device", "fail", "the run asks for cuda; none is available"))
    else:
        checks.append(Check("device", "ok", device))
    checks.append(memory_check(plan, device, gpu_free))
    return checks


def _diag(exc: SexpError) -> str:
    d = exc.diagnostic
    return f"error[{d.code}] {d.span or ''} {d.message}".replace("  ", " ")


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "doctor", argv)
    checks = versions()
    cuda_check, gpu_free = cuda()
    checks += [environment(), cpus(), cuda_check, disk(args["--runs"]), cache()]
    if args["--device"] == "cuda":
        checks += [ptx_check(), nccl_check()]
    if args["FILE"]:
        checks += file_checks(args["FILE"], from_docopt(args), gpu_free)
    ok = not any(c.status == "fail" for c in checks)
    if args["--json"]:
        payload = {"ok": ok, "file": args["FILE"], "checks": [asdict(c) for c in checks]}
        print_json(payload)
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            sys.stdout.write(f"{c.status:<4}  {c.name:<{width}}  {c.detail}\n")
        sys.stdout.write("a run can start here\n" if ok else "a run cannot start here\n")
    return 0 if ok else 1
