"""Reverse-mode autodiff over the SexpGPU IR, usable from Python alone: build a
graph with `Function` and `Tensor`, differentiate it, add an optimizer and run
it on the reference interpreter or the compiled kernels (see docs/autodiff.md)."""

from sexpgpu.autodiff import init, optim
from sexpgpu.autodiff.function import BACKENDS, CompiledFunction, Function
from sexpgpu.autodiff.functional import (
    avg_pool1d,
    avg_pool2d,
    causal_mask,
    concat,
    conv1d,
    conv2d,
    cross_entropy,
    dropout,
    full,
    iota,
    log_softmax,
    logical_and,
    logical_or,
    masked_fill,
    max_pool1d,
    max_pool2d,
    maximum,
    minimum,
    mse,
    one_hot,
    ones,
    softmax,
    stack,
    take,
    take_along_axis,
    where,
    zeros,
)
from sexpgpu.autodiff.grad import grad
from sexpgpu.autodiff.tensor import Tensor, matmul

from sexpgpu.ir.reference import run_reference

__all__ = [
    "BACKENDS", "Function", "CompiledFunction", "Tensor", "avg_pool1d", "avg_pool2d", "causal_mask",
    "concat", "conv1d", "conv2d", "cross_entropy", "dropout", "full", "grad", "init", "iota",
    "log_softmax", "logical_and", "logical_or", "masked_fill", "matmul", "max_pool1d",
    "max_pool2d", "maximum", "minimum", "mse", "one_hot", "ones", "optim", "run_reference",
    "softmax", "stack", "take", "take_along_axis", "where", "zeros",
]
