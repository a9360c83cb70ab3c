"""The on-disk cache of generated modules: a module's file name is a hash of its
source and the numba version; it is imported under a stable name registered in
`sys.modules` first, so numba's `cache=True` finds its compiled code next time.
`index.json` beside them says, for each module, its ops, the source lines its
nodes came from, and the graphs that use it with what its parameters hold."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from sexpgpu import env


def kernel_dir() -> Path:
    return env.cache_dir() / "kernels"


# the modules whose functions generated kernels compile in (intrinsics, called
# functions): numba's cache checks a kernel file's own timestamp only, so their text
# is part of every key (an edited sgemm is never served from old compiled code)
_COMPILED_IN = ("sexpgpu.kernels.parallel", "sexpgpu.kernels.sgemm", "sexpgpu.kernels.vgemm",
                "sexpgpu.kernels.scalars", "sexpgpu.kernels.mathfn", "sexpgpu.ir.rng")


@functools.cache
def _compiled_in() -> str:
    texts = [Path(importlib.util.find_spec(name).origin).read_text(encoding="utf-8")
             for name in _COMPILED_IN]
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


def source_key(source: str) -> str:
    # numba: not on `run`'s first step (kernels.workers asks where the cache is first)
    import numba

    text = f"{numba.__version__}\n{_compiled_in()}\n{source}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def module_name(source: str) -> str:
    """The stable module name `source` is imported under."""
    return f"sexpgpu_kernels_{source_key(source)}"


def load_module(source: str) -> ModuleType:
    """Write `source` to the cache (once, atomically) and import it."""
    name = module_name(source)
    if name in sys.modules:
        return sys.modules[name]
    directory = kernel_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.py"
    if not path.exists():
        # never rewrite an existing file: numba's cache index checks its timestamp
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module



def index_path() -> Path:
    return kernel_dir() / "index.jsonl"


def module_path(source: str) -> Path:
    return kernel_dir() / f"{module_name(source)}.py"


def record(entries: dict[str, dict], graph: str, step_source: str) -> None:
    """Append a newly generated graph to index.jsonl: its step module, and for each
    kernel module it imports the ops, the source sites (`file:line:col`) and what
    the parameters hold in this graph (p0 -> l1_weight). One line per graph,
    appended once (when its step module is first written), so the index grows as
    the modules do; `index()` folds it by kernel file."""
    line = {"graph": graph, "step": f"{module_name(step_source)}.py",
            "kernels": {f"{name}.py": entry for name, entry in entries.items()}}
    path = index_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def index() -> dict[str, dict]:
    """Each kernel (or CUDA graph) module file: its ops, sites and the graphs that
    use it, each with its kernels' parameters (index.jsonl, folded)."""
    out: dict[str, dict] = {}
    try:
        lines = index_path().read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for text in lines:
        try:
            line = json.loads(text)
        except ValueError:
            continue  # a line cut short by a killed process
        for name, entry in line["kernels"].items():
            known = out.setdefault(name, {"ops": [], "sites": [], "graphs": {}})
            known["ops"] += [op for op in entry["ops"] if op not in known["ops"]]
            known["sites"] += [s for s in entry["sites"] if s not in known["sites"]]
            known["graphs"][line["graph"]] = entry["params"]
    return out


def main() -> None:
    """`python -m sexpgpu.kernels.cache`: one line per kernel module of the cache."""
    print(f"# {kernel_dir()}")
    for name, entry in sorted(index().items()):
        sites = ", ".join(entry["sites"][:4]) + (" ..." if len(entry["sites"]) > 4 else "")
        print(f"{name}  {', '.join(entry['ops'])}  {sites}")


if __name__ == "__main__":
    main()
