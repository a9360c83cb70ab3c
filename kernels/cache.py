"""The on-disk cache of generated modules: a module's file name is a hash of its
source and the numba version; it is imported under a stable name registered in
`sys.modules` first, so numba's `cache=True` finds its compiled code next time."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numba

from sexpgpu import env


def kernel_dir() -> Path:
    return env.cache_dir() / "kernels"


def source_key(source: str) -> str:
    return hashlib.sha256(f"{numba.__version__}\n{source}".encode()).hexdigest()[:24]


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
