"""Reverse-mode autodiff over the SexpGPU IR, usable from Python alone: build a
graph with `Function` and `Tensor`, differentiate it, add an optimizer and run
it on the reference interpreter or the compiled kernels (see docs/autodiff.md)."""

from sexpgpu.autodiff import init, optim
from sexpgpu.autodiff.function import BACKENDS, CompiledFunction, Function
from sexpgpu.autodiff.functional import (
    FUNCTIONS,
    avg_pool1d,
    avg_pool2d,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber,
    kl_div,
    max_pool1d,
    max_pool2d,
    mse,
    nll,
    smooth_l1,
)
from sexpgpu.autodiff.grad import grad
from sexpgpu.autodiff.tensor import Tensor

from sexpgpu.ir.reference import run_reference

# every registry entry's function (where, concat, zeros, conv2d, ...: docs/autodiff.md)
globals().update(FUNCTIONS)

__all__ = [
    "BACKENDS", "Function", "CompiledFunction", "Tensor", "avg_pool1d", "avg_pool2d", "grad",
    "init", "max_pool1d", "max_pool2d", "optim", "run_reference",
    # the losses (autodiff/functional.py, as sexpgpu/stdlib/nn.sx has them)
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber",
    "kl_div", "mse", "nll", "smooth_l1", *sorted(FUNCTIONS),
]
