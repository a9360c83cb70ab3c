"""`Function`: declare inputs and parameters, build a model with Tensors, take
gradients, add an optimizer, then `compile` on a backend into a `CompiledFunction` that
holds the parameter and optimizer-state arrays and runs on numpy batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.autodiff import init as initialisers
from sexpgpu.autodiff.grad import grad as ir_grad
from sexpgpu.autodiff.tensor import Tensor, apply

from sexpgpu import kernels
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import STORAGE, run_reference
from sexpgpu.lazynumpy import np

# a backend compiles a graph into a runner: inputs by name -> outputs by name,
# writing graph.updates back into the input arrays it was given
Runner = Callable[[dict[str, "np.ndarray"]], dict[str, "np.ndarray"]]
Backend = Callable[[Graph], Runner]


def reference_backend(graph: Graph) -> Runner:
    return lambda inputs: run_reference(graph, inputs)


def reference64_backend(graph: Graph) -> Runner:
    """All floats in float64: the oracle for finite-difference checks."""
    return lambda inputs: run_reference(graph, inputs, dtype_override="f64")


def kernels_backend(graph: Graph) -> Runner:
    return kernels.compile(graph)  # the fused numba kernels (numba loads here, not at import)


BACKENDS: dict[str, Backend] = {"reference": reference_backend,
                                "reference64": reference64_backend,
                                "kernels": kernels_backend}


class Function:
    """A graph under construction with the initial values of its params and state."""

    def __init__(self, name: str = "function", seed: int = 0):
        self.graph = Graph(name)
        self.seed = seed
        self.params: list[Tensor] = []
        self.initial: dict[str, np.ndarray] = {}  # param and state name -> first value

    # -- declaring inputs ---------------------------------------------------------
    def input(self, name: str, shape: tuple[int, ...], dtype: str = "f32",
              role: str = "data") -> Tensor:
        return Tensor(self.graph, self.graph.input(name, tuple(shape), dtype, role))

    def param(self, name: str, shape: tuple[int, ...],
              init: initialisers.Init | np.ndarray | None = None) -> Tensor:
        """A trainable f32 parameter; `init` is an initialiser or an array."""
        stream = len(self.params)  # each parameter draws its own random stream
        if init is None:
            init = initialisers.normal(0.02)
        value = init if isinstance(init, np.ndarray) else init(self.seed, stream, tuple(shape))
        t = self.input(name, shape, "f32", role="param")
        self.initial[name] = np.array(value, dtype=np.float32).reshape(tuple(shape))
        self.params.append(t)
        return t

    def state(self, name: str, shape: tuple[int, ...], dtype: str = "f32",
              value: float = 0.0) -> Tensor:
        """Carried between runs (optimizer moments, step counts); starts at `value`."""
        t = self.input(name, shape, dtype, role="state")
        self.initial[name] = np.full(tuple(shape), value, dtype=STORAGE[dtype])
        return t

    def constant(self, value: float, dtype: str = "f32") -> Tensor:
        return apply(self.graph, "full", shape=(), dtype=dtype, value=value)

    # -- results ------------------------------------------------------------------
    def output(self, name: str, t: Tensor) -> Tensor:
        self.graph.output(name, t.value)
        return t

    def update(self, target: Tensor, new: Tensor) -> None:
        self.graph.update(target.value, new.value)

    def grad(self, loss: Tensor, wrt: list[Tensor] | None = None) -> dict[Tensor, Tensor]:
        """d loss / d each of `wrt` (all parameters by default), appended to the graph."""
        wrt = self.params if wrt is None else wrt
        with self.graph.at(self.graph._span):
            grads = ir_grad(self.graph, loss.value, [t.value for t in wrt])
        return {t: Tensor(self.graph, grads[t.value]) for t in wrt}

    def minimize(self, loss: Tensor, optimizer: Any) -> dict[Tensor, Tensor]:
        """Output `loss`, then build its gradients and the optimizer's update."""
        self.output("loss", loss)
        grads = self.grad(loss)
        optimizer.build(self, grads)
        return grads

    def compile(self, backend: str | Backend = "reference") -> CompiledFunction:
        make = BACKENDS[backend] if isinstance(backend, str) else backend
        return CompiledFunction(self, make(self.graph), float64=backend == "reference64")

    def __str__(self) -> str:
        return str(self.graph)


class CompiledFunction:
    """A compiled Function: owns its params/state arrays; call it with data by name."""

    def __init__(self, fn: Function, runner: Runner, float64: bool = False):
        self.graph = fn.graph
        self.runner = runner
        self.float64 = float64  # hold float arrays in double precision (gradient checks)
        self.arrays = {name: self._convert(value, fn.graph, name)
                       for name, value in fn.initial.items()}

    def _convert(self, array: Any, graph: Graph, name: str) -> np.ndarray:
        value = next((v for v in graph.inputs if v.name == name), None)
        if value is None:
            known = ", ".join(v.name for v in graph.inputs)
            raise KeyError(f"{graph.name} has no input {name!r} (inputs: {known})")
        if self.float64 and value.type.is_float:
            return np.array(array, dtype=np.float64)
        return np.array(array, dtype=STORAGE[value.dtype])

    @property
    def params(self) -> dict[str, np.ndarray]:
        return {v.name: self.arrays[v.name] for v in self.graph.params()}

    def __call__(self, **data: Any) -> dict[str, np.ndarray]:
        inputs: dict[str, np.ndarray] = dict(self.arrays)
        for name, array in data.items():
            inputs[name] = self._convert(array, self.graph, name)
        return self.runner(inputs)
