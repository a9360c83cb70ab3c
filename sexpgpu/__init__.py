"""SexpGPU: one Common Lisp file states one ML experiment.

Importing this package is cheap on purpose: `check` and `eval` must not pay for
numpy or numba. Stages import their heavy dependencies themselves.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`sexpgpu.load_run(DIR)`: a finished run ready to run forward (plan, params,
    forward; sexpgpu/inference/load.py). Resolved on first use by name, so `import
    sexpgpu` stays cheap and the package itself imports none of the compiler (every
    module imports the package: a static import here would close a cycle)."""
    if name == "load_run":
        return import_module("sexpgpu.inference.load").load_run
    raise AttributeError(f"module 'sexpgpu' has no attribute {name!r}")
