"""The counter-based RNG of `sexpgpu/ir/rng.py` compiled for a launcher: its scalar
functions under `numba.njit` or as `numba.cuda` device functions, bit-identical
to the numpy arrays the reference draws."""

from __future__ import annotations

import types

from sexpgpu.ir import rng


def jitted(target: str = "cpu") -> types.SimpleNamespace:
    """The scalar functions compiled with `numba.njit` ("cpu") or as `numba.cuda`
    device functions ("cuda"); calls between them resolve to the compiled ones."""
    import numba  # kept off `check`'s path, which imports the RNG's definition only

    if target == "cpu":
        decorate = numba.njit
    elif target == "cuda":
        from numba import cuda  # only when a CUDA module is generated

        def decorate(fn):
            return cuda.jit(device=True)(fn)
    else:
        raise ValueError(f"unknown target {target!r}")
    # fresh function objects sharing one globals dict (a copy of the defining
    # module's), so `rng_bits` inside `rng_uniform` names the compiled rng_bits
    namespace = dict(vars(rng))
    for fn in rng.SCALAR_FUNCTIONS:
        copy = types.FunctionType(fn.__code__, namespace, fn.__name__)
        namespace[fn.__name__] = decorate(copy)
    return types.SimpleNamespace(**{fn.__name__.removeprefix("rng_"): namespace[fn.__name__]
                                    for fn in rng.SCALAR_FUNCTIONS})
