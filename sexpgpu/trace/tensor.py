"""Symbolic tensors and the trace they are built into: one `Trace` per graph,
holding the graph, the source site of the form being evaluated and the metrics."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sexpgpu.diagnostics import Note, Span, define_code, error
from sexpgpu.ir.graph import Graph, OfValue, Value
from sexpgpu.lisp.types import Foreign

E_TRACE = define_code(
    "E-TRACE", "tensor operation outside a traced function",
    "Tensor builtins only work while a model, objective, evaluate function, optimizer "
    "update or schedule is being traced: inside `defmodel`, `defobjective`, "
    "`defevaluate`, `defoptimizer` or a schedule. At the top level of a file there is "
    "no graph to add the operation to.",
)

# Site = (span of the user's form, notes walking back through library calls)
Site = tuple[Span | None, tuple[Note, ...]]


class TracedTensor(Foreign, OfValue):
    """A symbolic tensor: an IR value of the graph being traced."""

    __slots__ = ("value",)

    def __init__(self, value: Value):
        self.value = value

    def __repr__(self) -> str:
        dims = " ".join(str(d) for d in self.shape)
        return f"#<tensor {self.dtype} ({dims})>"


class Trace:
    """One graph under construction and what the evaluator tells it about sites."""

    def __init__(self, graph: Graph, mode: str = "train"):
        self.graph = graph
        self.mode = mode                      # "train" (dropout on) or "eval"
        self.metrics: dict[str, Value] = {}
        self.metric_sites: dict[str, Span | None] = {}
        self._rng: Value | None = None
        self._streams = 0

    def rng_input(self) -> Value:
        """The step's seed (role "rng"): one per graph, fed a new value every step."""
        if self._rng is None:
            self._rng = self.graph.input("rng/seed", (), "i64", role="rng")
        return self._rng

    @property
    def streams(self) -> int:
        """The dropout streams drawn so far."""
        return self._streams

    def next_stream(self) -> int:
        """Each dropout site draws from its own stream of the counter-based RNG."""
        self._streams += 1
        return self._streams


_STACK: list[Trace] = []
_SITE: list[Callable[[], Site]] = []


def set_site_provider(provider: Callable[[], Site]) -> None:
    """The evaluator tells tracing where it is: the user's span and the library chain."""
    _SITE[:] = [provider]


def site() -> Site:
    return _SITE[0]() if _SITE else (None, ())


@contextmanager
def tracing(trace: Trace) -> Iterator[Trace]:
    _STACK.append(trace)
    try:
        yield trace
    finally:
        _STACK.pop()


def active() -> Trace | None:
    return _STACK[-1] if _STACK else None


def current(what: str = "a tensor operation") -> Trace:
    if not _STACK:
        span, notes = site()
        raise error(E_TRACE, f"{what} outside a traced function", span,
                    expected="a call inside defmodel, defobjective, defevaluate or an optimizer",
                    actual="a call at the top level of the file",
                    fix="move the tensor code into the model or the objective",
                    notes=list(notes))
    return _STACK[-1]


class at_site:  # noqa: N801 - used as `with at_site() as g`, like a contextmanager
    """Build nodes under the current site so shape errors point at the user's line.
    Without a site provider the evaluator attaches the span to the error itself, so
    this is only the graph (no context switch per op: tracing a GRU makes thousands)."""

    __slots__ = ("graph", "_at")

    def __init__(self, trace: Trace | None = None) -> None:
        self.graph = (trace or current()).graph
        self._at = None
        if _SITE:
            span, notes = site()
            if span is not None:  # else keep the span the caller set (e.g. the optimizer)
                self._at = self.graph.at(span, notes)

    def __enter__(self) -> Graph:
        if self._at is not None:
            self._at.__enter__()
        return self.graph

    def __exit__(self, *exc: object) -> None:
        if self._at is not None:
            self._at.__exit__(*exc)


def wrap(value: Any) -> Any:
    """IR values become Tensors; tuples of values stay tuples of Tensors."""
    if isinstance(value, Value):
        return TracedTensor(value)
    if isinstance(value, tuple):
        return tuple(wrap(v) for v in value)
    return value
