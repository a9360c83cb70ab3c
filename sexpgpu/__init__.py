"""SexpGPU: one Common Lisp file states one ML experiment.

Importing this package is cheap on purpose: `check` and `eval` must not pay for
numpy or numba. Stages import their heavy dependencies themselves.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# kernels/ and autodiff/ sit at the top of a checkout (the layout shows the pipeline)
# and install inside this package (pyproject.toml's package-dir). A checkout imported
# as itself, not through an install (`python -m sexpgpu` in the repository after
# `pip install .`), finds them beside it: else sexpgpu.autodiff was missing there.


class _Beside:
    """A meta-path finder of sexpgpu.kernels and sexpgpu.autodiff in the checkout's
    top-level folders (after every other finder: an install's own copy wins)."""

    NAMES = ("sexpgpu.kernels", "sexpgpu.autodiff")

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.NAMES:
            return None
        from importlib.machinery import ModuleSpec, SourceFileLoader  # only when used

        folder = os.path.join(self.root, name.rpartition(".")[2])
        init = os.path.join(folder, "__init__.py")
        spec = ModuleSpec(name, SourceFileLoader(name, init), origin=init, is_package=True)
        spec.submodule_search_locations = [folder]
        spec.has_location = True
        return spec


_HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_HERE, "autodiff")) and os.path.isfile(
        os.path.join(os.path.dirname(_HERE), "autodiff", "__init__.py")):
    sys.meta_path.append(_Beside(os.path.dirname(_HERE)))


def __getattr__(name: str) -> Any:
    """`sexpgpu.load_run(DIR)`: a finished run ready to run forward (plan, params,
    forward; sexpgpu/inference/load.py). Resolved on first use by name, so `import
    sexpgpu` stays cheap and the package itself imports none of the compiler (every
    module imports the package: a static import here would close a cycle)."""
    if name == "load_run":
        return import_module("sexpgpu.inference.load").load_run
    raise AttributeError(f"module 'sexpgpu' has no attribute {name!r}")
