"""SexpGPU: one Common Lisp file states one ML experiment.

Importing this package is cheap on purpose: `check` and `eval` must not pay for
numpy or numba. Stages import their heavy dependencies themselves.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

__version__ = "0.1.0"


def load_run(run_dir: str | PathLike[str], checkpoint: str | None = None,
             **options: Any) -> Any:
    """A finished run ready to run forward (sexpgpu.inference.load.load_run: plan,
    params, forward). Imported on call, so `import sexpgpu` stays cheap."""
    # the compiler and numpy load only when a run is loaded
    from sexpgpu.inference.load import load_run as load

    return load(run_dir, checkpoint, **options)
