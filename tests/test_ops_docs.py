"""Every registry entry is reachable and documented: each Lisp name it lists, called
through the run-file evaluator on the entry's own samples, builds what the entry
builds (the same values); each Python method and function does too; an op with no
front-end name is built by the ops it says reach it; and the docs tables
(tools/gen_op_docs.py) are what the registry says now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from op_cases import assert_same_values, ir_dtype
from sexpgpu.autodiff.grad import grad
from sexpgpu.autodiff.tensor import Tensor

from sexpgpu import autodiff as ad
from sexpgpu.contract.compile import make_interpreter
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.ops.registry import LISP_NAMES, OPS
from sexpgpu.ir.reference import run_reference
from sexpgpu.lisp.types import MV, Cons, to_py
from sexpgpu.trace.builtins import CL_GENERIC
from sexpgpu.trace.tensor import Trace, TracedTensor, tracing

ROOT = Path(__file__).resolve().parent.parent
EXPOSED = sorted(n for n, op in OPS.items() if op.exposed)
INTERNAL = sorted(n for n, op in OPS.items() if not op.exposed)


def _case(opdef: OpDef) -> tuple[list, dict]:
    return opdef.samples(np.random.default_rng(3))[0]


def _inputs(g: Graph, arrays: list) -> list:
    return [g.input(f"x{i}", np.shape(a), ir_dtype(np.asarray(a))) for i, a in enumerate(arrays)]


def _feed(arrays: list) -> dict:
    return {f"x{i}": np.asarray(a) for i, a in enumerate(arrays)}


def _expected(opdef: OpDef, arrays: list, attrs: dict) -> list[np.ndarray]:
    """The entry applied directly: what every front end must build."""
    g = Graph("direct")
    out = opdef.apply_case(g, _inputs(g, arrays), attrs)
    outs = list(out) if isinstance(out, tuple) else [out]
    for k, v in enumerate(outs):
        g.output(f"y{k}", v)
    got = run_reference(g, _feed(arrays))
    return [got[f"y{k}"] for k in range(len(outs))]


def _same(got: list[np.ndarray], want: list[np.ndarray], opdef: OpDef) -> None:
    if "rng" in [t.role for t in opdef.tensor_inputs]:
        return  # a front end draws its own stream; that the op is built is the check
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert_same_values(np.asarray(a), np.asarray(b), f"{opdef.name} output {k}")


def test_every_op_is_exposed_or_says_what_reaches_it() -> None:
    for name, opdef in OPS.items():
        if opdef.exposed:
            assert opdef.lisp, f"{name} has no Lisp name"
            assert opdef.method or opdef.function, f"{name} has no Python name"
        else:
            assert opdef.reached, f"{name}: no front-end name and nothing said to reach it"
            assert all(r in OPS and OPS[r].exposed for r in opdef.reached), name


# -- Lisp -------------------------------------------------------------------------


def _lisp(v: object, kind: str) -> str:
    """A sample's argument value as Lisp source."""
    if v is None or v is False:
        return "nil"
    if v is True:
        return "t"
    if isinstance(v, (tuple, list)):
        return "'(" + " ".join(_lisp(x, kind).lstrip("'") for x in v) + ")"
    if isinstance(v, str):
        return f'"{v}"' if kind == "string" else f":{v}"
    if isinstance(v, float):
        return repr(v).replace("e", "d") if "e" in repr(v) else repr(v) + "d0"
    return repr(v)


def lisp_call(name: str, opdef: OpDef, n_arrays: int, attrs: dict) -> str:
    """The Lisp form calling `opdef` as `name` on variables x0, x1, ... and `attrs`."""
    tensors = [t for t in opdef.tensor_inputs if t.role != "rng"]
    words: list[str] = []
    spread = any(t.role in ("list", "rest") for t in tensors)
    variables = [f"x{i}" for i in range(n_arrays - sum(t.role == "rng"
                                                      for t in opdef.tensor_inputs))]
    positional = [a for a in opdef.args if a.positional and a.kind != "stream"]
    keywords = [a for a in opdef.args if not a.positional and a.kind != "stream"]
    pos_words = []
    for arg in positional:
        if arg.name in attrs:
            pos_words.append(_lisp(attrs[arg.name], arg.kind))
        elif not arg.required:
            break
    if spread and tensors[0].role == "rest":
        words = pos_words + variables
    elif spread:
        words = ["(list " + " ".join(variables) + ")"] + pos_words
    else:
        words = variables + pos_words
    for arg in keywords:
        if arg.name in attrs:
            words += [f":{arg.lisp_key}", _lisp(attrs[arg.name], arg.kind)]
    return "(" + " ".join([name] + words) + ")"


def _lisp_values(result: object) -> list:
    if isinstance(result, MV):
        return list(result)
    if isinstance(result, Cons):
        return to_py(result)
    return [result]


LISP_CASES = [(lisp, name) for name in EXPOSED for lisp in OPS[name].lisp]


@pytest.mark.parametrize("lisp,name", LISP_CASES, ids=[f"{n}:{lisp}" for lisp, n in LISP_CASES])
def test_lisp_name_builds_the_entry(lisp: str, name: str) -> None:
    """Each Lisp name, as a run file calls it (through CL's generic hook for `+ exp
    ...`), on the entry's first sample: the same values as the entry itself."""
    opdef = OPS[name]
    arrays, attrs = _case(opdef)
    assert lisp in LISP_NAMES and opdef in LISP_NAMES[lisp]
    interp = make_interpreter()
    assert lisp in CL_GENERIC or interp.functions.get(_symbol(lisp)) is not None, lisp
    g = Graph("lisp")
    tensors = [t for t in opdef.tensor_inputs]
    rng_at = [k for k, t in enumerate(tensors) if t.role == "rng"]
    with tracing(Trace(g)):
        values = _inputs(g, [a for k, a in enumerate(arrays) if k not in rng_at])
        for k, v in enumerate(values):
            interp.set_global(f"X{k}", TracedTensor(v), special=False)
        form = lisp_call(lisp, opdef, len(arrays), attrs)
        result = interp.load(form, "reach.sx")
    outs = _lisp_values(result)
    assert all(isinstance(o, TracedTensor) for o in outs), form
    for k, o in enumerate(outs):
        g.output(f"y{k}", o.value)
    feed = _feed([a for k, a in enumerate(arrays) if k not in rng_at])
    for v in g.inputs:
        if v.role == "rng":
            feed[v.name] = np.asarray(arrays[rng_at[0]])
    got = run_reference(g, feed)
    _same([got[f"y{k}"] for k in range(len(outs))], _expected(opdef, arrays, attrs), opdef)


def _symbol(name: str):
    from sexpgpu.lisp.types import intern

    return intern(name.upper())


# -- Python -------------------------------------------------------------------------


def _python_call(opdef: OpDef, fn, tensors: list, attrs: dict):
    args: list = []
    kwargs: dict = {}
    for arg in opdef.args:
        if arg.name in attrs and arg.kind != "stream" or (arg.kind == "stream"
                                                          and arg.name in attrs):
            if arg.varargs:
                args.append(attrs[arg.name])
            else:
                kwargs[arg.py_key] = attrs[arg.name]
    if any(t.role == "rest" for t in opdef.tensor_inputs):  # einsum("ij,jk", a, b)
        lead = [kwargs.pop(a.py_key) for a in opdef.args if a.positional and a.py_key in kwargs]
        return fn(*lead, *args, *tensors, **kwargs)
    if any(t.role == "list" for t in opdef.tensor_inputs):
        return fn(tensors, *args, **kwargs)
    return fn(*tensors, *args, **kwargs)


PY_CASES = [(name, how) for name in EXPOSED for how in ("method", "function")
            if getattr(OPS[name], how)]


@pytest.mark.parametrize("name,how", PY_CASES, ids=[f"{n}:{h}" for n, h in PY_CASES])
def test_python_name_builds_the_entry(name: str, how: str) -> None:
    opdef = OPS[name]
    arrays, attrs = _case(opdef)
    g = Graph("python")
    tensors = [Tensor(g, v) for v in _inputs(g, arrays)]
    if how == "method":
        fn = getattr(tensors[0], opdef.method)
        out = _python_call(opdef, fn, tensors[1:], attrs)
    else:
        fn = getattr(ad, opdef.function)
        if not opdef.tensor_inputs:
            out = fn(g, *[attrs[a.name] for a in opdef.args if a.positional],
                     **{a.py_key: attrs[a.name] for a in opdef.args
                        if not a.positional and a.name in attrs})
        else:
            out = _python_call(opdef, fn, tensors, attrs)
    outs = list(out) if isinstance(out, tuple) else [out]
    assert all(isinstance(o, Tensor) for o in outs)
    for k, o in enumerate(outs):
        g.output(f"y{k}", o.value)
    got = run_reference(g, _feed(arrays))
    _same([got[f"y{k}"] for k in range(len(outs))], _expected(opdef, arrays, attrs), opdef)


# -- ops reached through others -------------------------------------------------------


@pytest.mark.parametrize("name", INTERNAL)
def test_internal_op_is_built_by_what_reaches_it(name: str) -> None:
    """An op with no name of its own appears in the graph (forward or gradient) of
    one of the ops it says reach it, on their samples."""
    built: set[str] = set()
    for witness in OPS[name].reached:
        for arrays, attrs in OPS[witness].samples(np.random.default_rng(0)):
            g = Graph("reach")
            xs = _inputs(g, arrays)
            out = OPS[witness].apply_case(g, xs, attrs)
            outs = [v for v in (out if isinstance(out, tuple) else (out,))
                    if v.dtype in ("f32",)]
            floats = [x for x in xs if x.dtype == "f32"]
            if outs and floats:
                loss = g.apply("sum", outs[0], axes=None, keepdims=False)
                grad(g, loss, floats)
            built |= {n.op for n in g.nodes}
    assert name in built, f"{name} is built by none of {OPS[name].reached}"


# -- the docs -------------------------------------------------------------------------


def _generator():
    spec = importlib.util.spec_from_file_location("gen_op_docs", ROOT / "tools" / "gen_op_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("doc", ["tensors.md", "tensor-builtins.md", "autodiff.md"])
def test_docs_tables_are_generated_from_the_registry(doc: str) -> None:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    assert "<!-- ops:begin" in text
    assert text == _generator().render(text), "run: python tools/gen_op_docs.py"


def test_every_name_is_documented() -> None:
    builtins = (ROOT / "docs" / "tensor-builtins.md").read_text(encoding="utf-8")
    python = (ROOT / "docs" / "autodiff.md").read_text(encoding="utf-8")
    tensors = (ROOT / "docs" / "tensors.md").read_text(encoding="utf-8")
    for name, opdef in OPS.items():
        assert f"| `{name}` |" in tensors, name
        for lisp in opdef.lisp:
            assert f"`({lisp}" in builtins, lisp
        if opdef.method:
            assert f"`x.{opdef.method}(" in python, opdef.method
        if opdef.function:
            assert f"`ad.{opdef.function}(" in python, opdef.function


# a CL function that is also a tensor op's Lisp name: CL's call on numbers and its
# result (the tensor path is the reachability test above)
CL_CALLS = {"atan": ("(atan 1 1)", "0.7853982"), "ceiling": ("(ceiling 1.2)", "2"),
            "floor": ("(floor 7 2)", "3"), "round": ("(round 2.5)", "2"),
            "signum": ("(signum -3)", "-1"), "sort": ("(sort (list 3 1 2) #'<)", "(1 2 3)"),
            "truncate": ("(truncate -1.5)", "-1")}


def test_cl_functions_keep_their_meaning_on_numbers() -> None:
    """A tensor op named as a CL function (floor, round, sort, ...) leaves CL's
    function alone when no argument is a tensor; every such name has a case here."""
    from sexpgpu.lisp import registry
    from sexpgpu.lisp.printer import prin1_to_string
    from sexpgpu.lisp.types import primary

    interp = make_interpreter()
    shadowed = sorted(n for n in LISP_NAMES if n not in CL_GENERIC
                      and _symbol(n) in registry.BUILTINS)
    assert shadowed == sorted(CL_CALLS), "add the new name's CL call to CL_CALLS"
    for name, (form, want) in CL_CALLS.items():
        assert prin1_to_string(primary(interp.load(form, "cl.sx"))) == want, name
