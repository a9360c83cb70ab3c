"""SexpGPU: one Common Lisp file states one ML experiment.

Importing this package is cheap on purpose: `check` and `eval` must not pay for
numpy or numba. Stages import their heavy dependencies themselves.
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# kernels/ and autodiff/ sit at the top of a checkout (the layout shows the pipeline)
# and install inside this package (pyproject.toml's package-dir). A checkout imported
# as itself, not through an install (`python -m sexpgpu` in the repository after
# `pip install .`), finds them beside it: else sexpgpu.autodiff was missing there.
_HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_HERE, "autodiff")) and os.path.isfile(
        os.path.join(os.path.dirname(_HERE), "autodiff", "__init__.py")):
    __path__.append(os.path.dirname(_HERE))


def __getattr__(name: str) -> Any:
    """`sexpgpu.load_run(DIR)`: a finished run ready to run forward (plan, params,
    forward; sexpgpu/inference/load.py). Resolved on first use by name, so `import
    sexpgpu` stays cheap and the package itself imports none of the compiler (every
    module imports the package: a static import here would close a cycle)."""
    if name == "load_run":
        return import_module("sexpgpu.inference.load").load_run
    raise AttributeError(f"module 'sexpgpu' has no attribute {name!r}")
