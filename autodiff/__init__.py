"""Reverse-mode autodiff over the SexpGPU IR, usable from Python alone: build a
graph with `Function` and `Tensor`, differentiate it, add an optimizer and run
it on the reference interpreter or the compiled kernels (see docs/autodiff.md).

The Python front end (`Tensor`, `Function`, the functional API) is imported on first
use: the compiler imports `sexpgpu.autodiff.grad` in every `check`, and the front
end's ~8 ms of imports (`inspect` among them) were for Python users alone.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# `grad` the function, not the submodule of that name: bound here first, before any
# `import sexpgpu.autodiff.grad` could bind the submodule in its place
from sexpgpu.autodiff.grad import grad  # noqa: F401 - the package's `grad`

# name -> the module that defines it (registry functions: `functional.FUNCTIONS`)
_HOMES = {
    "init": "sexpgpu.autodiff.init", "optim": "sexpgpu.autodiff.optim",
    "BACKENDS": "sexpgpu.autodiff.function", "CompiledFunction": "sexpgpu.autodiff.function",
    "Function": "sexpgpu.autodiff.function", "Tensor": "sexpgpu.autodiff.tensor",
    "run_reference": "sexpgpu.ir.reference",
    # the losses and pools (autodiff/functional.py, as sexpgpu/stdlib/nn.sx has them)
    **{name: "sexpgpu.autodiff.functional" for name in (
        "avg_pool1d", "avg_pool2d", "binary_cross_entropy", "binary_cross_entropy_with_logits",
        "cross_entropy", "huber", "kl_div", "max_pool1d", "max_pool2d", "mse", "nll",
        "smooth_l1")},
}


def _functions() -> dict[str, Any]:
    """Every registry entry's function (where, concat, zeros, conv2d, ...: docs/autodiff.md)."""
    return import_module("sexpgpu.autodiff.functional").FUNCTIONS


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return ["grad", *_HOMES, *sorted(_functions())]
    home = _HOMES.get(name)
    if home is not None:
        module = import_module(home)
        value = module if home.endswith(f".{name}") else getattr(module, name)
    else:
        functions = _functions()
        if name not in functions:
            raise AttributeError(f"module 'sexpgpu.autodiff' has no attribute {name!r}")
        value = functions[name]
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES, *_functions()})
