"""The scalar helpers of CPU kernels, compiled once: kernels/mathfn.py's `exp`,
`tanh`, `log`, `erf` and sigmoid, and the counter-based RNG of sexpgpu/ir/rng.py,
each under the kernels' flags and in numba's cache beside its module. A kernel
module imports the ones it calls (`from sexpgpu.kernels.scalars import fast_exp32`)
and LLVM inlines them into its loops when it links the kernel: the loops vectorise
as before (tests/test_kernels_scalars.py), each helper within its ulp bound; a last
bit may differ from the text inlined by numba, as LLVM optimises a helper on its own
first (`reassoc`: a polynomial's operations in another order).

Why not each helper's text in every kernel module that calls it, inlined by numba
(`inline='always'`), as the kernels had it: numba then typed and lowered a helper's
body again at every call site of every kernel, a seventh of the char-GPT's compile
CPU at a cold start. bf16's two conversions stay text in the modules that use them
(their CPU bodies are text, not functions: kernels/bf16.py)."""

from __future__ import annotations

import functools
import types
from typing import Any

from sexpgpu.kernels import mathfn

from sexpgpu.ir import rng

# numba's flags of every CPU kernel and of these (kernels/codegen.py writes them into
# the kernels' text and says why each); fastmath's in the order the text has them
FLAGS = {"cache": True, "error_model": "numpy", "fastmath": ("reassoc", "contract"),
         "no_cfunc_wrapper": True}
MODULES = (mathfn, rng)
NAMES = frozenset(fn.__name__ for module in MODULES for fn in module.SCALAR_FUNCTIONS)


def __getattr__(name: str) -> Any:
    """A helper by name, all compiled on first use: importing this module (as codegen
    does, for NAMES) does not import numba."""
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _dispatchers()[name]


@functools.cache
def _dispatchers() -> dict[str, Any]:
    return {name: fn for module in MODULES for name, fn in _compiled(module).items()}


def _compiled(module: Any) -> dict[str, Any]:
    """`module`'s scalar functions under numba.njit, as copies sharing one globals
    dict (a copy of the module's), so that a call of one inside another names the
    compiled one; numba's cache keys each by its file and line, as the original."""
    import numba  # only when a kernel is compiled: codegen imports NAMES

    namespace = dict(vars(module))
    for fn in module.SCALAR_FUNCTIONS:
        copy = types.FunctionType(fn.__code__, namespace, fn.__name__)
        copy.__qualname__ = fn.__qualname__
        namespace[fn.__name__] = numba.njit(**{**FLAGS, "fastmath": set(FLAGS["fastmath"])})(copy)
    return {fn.__name__: namespace[fn.__name__] for fn in module.SCALAR_FUNCTIONS}
