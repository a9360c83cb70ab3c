"""What `explain` prints and `plan.json` stores: parameters (path, shape, count, tied),
optimizer groups with hyperparameters, one training step (ops, FLOPs) and memory
(params, grads, optimizer state, peak activations, and the step's buffers in f32 and in
bf16); and the RunPlan for the runtime."""

from __future__ import annotations

import hashlib
from collections import Counter
from math import prod
from typing import Any

import orjson

from sexpgpu.contract.compiled import CompiledExperiment
from sexpgpu.contract.indices import runtime_bounds
from sexpgpu.contract.values import knob_json, to_python
from sexpgpu.ir.graph import Graph, Node, Value, live_nodes
from sexpgpu.ir.precision import PRECISIONS
from sexpgpu.lisp.types import Symbol
from sexpgpu.record import asdict
from sexpgpu.runtime.spec import RESULT_FREE, RunPlan
from sexpgpu.trace.args import is_number
from sexpgpu.trace.optimizer import is_schedule, schedule_values
from sexpgpu.trace.step import Sections
from sexpgpu.trace.tensor import TracedTensor

BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4, "i64": 8, "bool": 1}
# ops that move or view data without arithmetic
FREE_OPS = frozenset({"reshape", "permute", "broadcast_to", "slice", "concat", "full", "iota",
                      "const", "cast", "take", "unfold", "fold", "stop_gradient",
                      "slice_scatter", "scatter_add"})


def nbytes(v: Value) -> int:
    return prod(v.shape) * BYTES.get(v.dtype, 4)


def node_flops(node: Node) -> tuple[str, int]:
    """(kind, floating-point operations): matmul 2*M*K*N per batch (attention its
    products); arithmetic one per output element (reductions one per input element);
    data movement none."""
    if node.op == "matmul":
        a, b = node.inputs
        out = node.outputs[0]
        return "matmul", 2 * prod(out.shape) * a.shape[-1]
    if node.op in ("attention", "attention_backward"):
        # its products per head: q k^T and p v forward; the backward recomputes q k^T,
        # then dO v^T, p^T dO, ds k and ds^T q; over every key, as the unfused form
        # counts (the CPU kernels skip a causal row block's hidden keys)
        q, k, v = node.inputs[:3]
        d, e = q.shape[-1], v.shape[-1]
        inner = d + e if node.op == "attention" else 3 * d + 2 * e
        return "matmul", 2 * prod(q.shape[:-1]) * k.shape[-2] * inner
    if node.op in FREE_OPS:
        return "move", 0
    if node.op in ("sum", "amax", "amin", "argmax"):
        return "reduce", prod(node.inputs[0].shape)
    return "elementwise", sum(prod(o.shape) for o in node.outputs)


def graph_summary(g: Graph, sections: Sections | None = None) -> dict[str, Any]:
    live = live_nodes(g)
    live_ids = {n.id for n in live}
    ops: Counter[str] = Counter(n.op for n in live)
    flops: Counter[str] = Counter()
    by_section: dict[str, Counter[str]] = {}
    bounds = (sections.forward, sections.backward) if sections is not None else None
    for i, node in enumerate(g.nodes):
        if node.id not in live_ids:
            continue
        kind, count = node_flops(node)
        flops[kind] += count
        if bounds is not None:
            name = "forward" if i < bounds[0] else "backward" if i < bounds[1] else "update"
            by_section.setdefault(name, Counter())[kind] += count
    out: dict[str, Any] = {
        "nodes": len(live), "ops": dict(sorted(ops.items())),
        "flops": {"matmul": flops["matmul"], "elementwise": flops["elementwise"],
                  "reduce": flops["reduce"], "total": sum(flops.values())},
        "peak_activation_bytes": peak_activations(g, live),
    }
    if by_section:
        out["flops_by_section"] = {k: {"matmul": v["matmul"], "total": sum(v.values())}
                                   for k, v in by_section.items()}
    return out


def peak_activations(g: Graph, live: list[Node]) -> int:
    """Bytes of intermediate values alive at once, at the worst point of a sequential
    schedule (each freed after its last use; outputs and updates kept to the end)."""
    last_use: dict[int, int] = {}
    for i, node in enumerate(live):
        for v in node.inputs:
            last_use[v.id] = i
    keep = {v.id for v in g.outputs.values()} | {v.id for v in g.updates.values()}
    current = peak = 0
    sizes: dict[int, int] = {}
    for i, node in enumerate(live):
        for o in node.outputs:
            sizes[o.id] = nbytes(o)
            current += sizes[o.id]
        peak = max(peak, current)
        for v in node.inputs:
            if v.id in sizes and last_use.get(v.id) == i and v.id not in keep:
                current -= sizes.pop(v.id)
    return peak


def step_buffer_bytes(c: CompiledExperiment, precision: str) -> dict[str, int]:
    """The bytes of the buffers a compiled step allocates beside the parameters,
    optimizer state and batch (activations, gradients, temporaries: the kernels' memory
    plan, `docs/kernels.md`), per step graph, after the precision pass for `precision`."""
    from sexpgpu.kernels.lower import lower  # no numba: lowering and the plan only
    from sexpgpu.kernels.memplan import plan_memory

    # the plan without batch bands (kernels/bands.py), whose runs need every kernel
    # rendered (a GRU's 0.5 s a graph, on every `run`'s start): a CPU step with runs
    # keeps their values alive through them, up to ~1.5x this for an LSTM's
    return {g.name: plan_memory(lower(g)).peak_bytes
            for g in c.lowered(precision).step_graphs()}


def precision_memory(c: CompiledExperiment) -> dict[str, Any]:
    """`memory_by_precision` of the plan: each precision's step buffers, the largest
    step graph's and each one's (parameters, the gradients the optimizer reads and its
    state are f32 under both, so `memory` above holds for both)."""
    out: dict[str, Any] = {}
    for precision in PRECISIONS:
        by_graph = step_buffer_bytes(c, precision)
        out[precision] = {"step_buffer_bytes": max(by_graph.values(), default=0),
                          "by_graph": by_graph}
    return out


def _hyper(value: Any) -> Any:
    if is_number(value):
        return float(to_python(value))
    if is_schedule(value):
        return {"schedule": _schedule_name(value), "params": _schedule_params(value)}
    return to_python(value)


def schedule_steps(steps: int) -> list[int]:
    """The steps at which explain shows a schedule's value: the first, the last, and
    a twentieth, a quarter, a half and three quarters of the way."""
    last = max(steps - 1, 0)
    return sorted({0, last // 20, last // 4, last // 2, 3 * last // 4, last})


def _closure_frames(fn: Any) -> list[Any]:
    """The lexical frames a schedule closes over, innermost first (the file's top-level
    variables live elsewhere: these are let and function frames)."""
    frames, env = [], getattr(fn, "env", None)
    while env is not None:
        frames.append(env)
        env = env.parent
    return frames


def _schedule_name(fn: Any) -> str:
    """The function that made the schedule (`cosine` for `(optim:cosine ...)`): the block
    its lambda was made in, else `lambda`."""
    for frame in _closure_frames(fn):
        for key in frame.vars:
            if getattr(key, "kind", None) == "block":  # `sexpgpu/optim:cosine`: optim:cosine
                return key.symbol.name.lower().rsplit("/", 1)[-1]
    return getattr(fn, "name", None) or "lambda"


def _schedule_params(fn: Any) -> dict[str, Any]:
    """The arguments of the function that made the schedule: the first frame it closes
    over that binds variables (`:peak 1e-3 :final 1e-4 ...`)."""
    for frame in _closure_frames(fn):
        params = {key.name.lower(): to_python(value) for key, value in frame.vars.items()
                  if isinstance(key, Symbol)}
        if params:
            return {k: float(v) if is_number(v) and not isinstance(v, int) else v
                    for k, v in params.items()
                    if isinstance(v, (int, float, str, bool, list)) or v is None}
    return {}


def _schedule_values(c: CompiledExperiment) -> dict[int, dict[int, float]]:
    """Each group's :lr schedule at `schedule_steps` (by group index), where it depends
    on the step alone."""
    graphs, run = c.graphs, c.experiment.run
    if graphs is None or run is None:
        return {}
    update_graph = graphs.step or graphs.apply
    out = {}
    for group, lr in graphs.learning_rates:
        if isinstance(lr, TracedTensor) and is_schedule(group.optimizer.hypers.get("lr")):
            values = schedule_values(update_graph, lr.value, schedule_steps(run.steps),
                                     run.microbatches)
            if values is not None:
                out[id(group)] = values
    return out


def plan_json(c: CompiledExperiment, memory: bool = True) -> dict[str, Any]:
    """The plan as JSON: what `explain` prints and `plan.json` stores. `memory`: the
    step buffers of each precision (`precision_memory`), which lowers every step graph
    once per precision; a run records its own from its compiled program instead."""
    exp = c.experiment
    params = [{"path": p.path, "shape": list(p.shape), "count": p.count, "dtype": p.dtype,
               "init": p.init.to_json(), "tied": list(p.tied)} for p in c.params]
    total = sum(p.count for p in c.params)
    by_path = {p.path: p for p in c.params}
    groups = []
    state_bytes = 0
    lr_values = _schedule_values(c)
    for group in (c.graphs.groups if c.graphs else []):
        count = sum(by_path[path].count for path in group.params)
        state_bytes += count * 4 * len(group.optimizer.live_states())
        hypers = {k: _hyper(v) for k, v in group.optimizer.hypers.items()}
        if id(group) in lr_values:  # the value at a few steps: what the schedule does
            hypers["lr"]["at"] = {str(k): v for k, v in lr_values[id(group)].items()}
        groups.append({
            "select": group.label(), "optimizer": group.optimizer.name,
            "hyperparameters": hypers,
            "state": group.optimizer.live_states(),
            "params": list(group.params), "count": count,
        })
    steps = {}
    graphs = c.graphs
    for g in c.step_graphs():
        steps[g.name] = graph_summary(g, graphs.sections.get(g.name) if graphs else None)
    evals = {name: graph_summary(g) for name, g in c.evaluates.items()}
    peak = max((s["peak_activation_bytes"] for s in steps.values()), default=0)
    micro = exp.run.microbatches if exp.run else 1
    grad_bytes = total * 4 * (2 if micro > 1 else 1)  # + accumulation buffers
    return {
        "file": exp.file,
        "selection": c.selection.to_json(),
        "knobs": {k: knob_json(v) for k, v in exp.knobs.items()},
        "parameters": {"total": total, "tensors": params},
        "optimizer": {"groups": groups,
                      "clip": exp.optimizer.clip if exp.optimizer else None},
        "step": steps,
        "evaluate": evals,
        "memory": {"params_bytes": total * 4, "grads_bytes": grad_bytes,
                   "optimizer_state_bytes": state_bytes, "peak_activation_bytes": peak},
        "memory_by_precision": precision_memory(c) if c.graphs and memory else {},
        "loaders": [asdict(s) for s in exp.loaders],
        "fields": {name: {k: {"shape": list(s), "dtype": d} for k, (s, d) in f.items()}
                   for name, f in c.fields.items()},
        "indices": {loader: {field: {"low": b.low, "high": b.high, "use": b.use}
                             for field, b in fields.items()}
                    for loader, fields in c.bounds.items()},
        "evals": [asdict(s) for s in exp.evals],
        "targets": [{**asdict(t), **exp.target_sources.get(t.metric, {})}
                    for t in exp.targets],
        "run": asdict(exp.run) if exp.run else None,
    }


def run_plan(c: CompiledExperiment, memory: bool = True) -> RunPlan:
    """The RunPlan the runtime trains from (the graphs travel beside it in
    CompiledExperiment); `memory` as for `plan_json`."""
    exp = c.experiment
    plan = plan_json(c, memory)
    assert exp.run is not None
    return RunPlan(file=exp.file, selection={k: knob_json(v) for k, v in exp.knobs.items()},
                   source_files=dict(c.sources), loaders=list(exp.loaders),
                   evals=list(exp.evals), targets=list(exp.targets), run=exp.run,
                   plan_json=plan, plan_hash=_digest(plan),
                   masters_hash=_digest(plan, drop=("precision",)),
                   bounds=runtime_bounds(c.bounds),
                   defaults={k: knob_json(d.default) for k, d in exp.decls.knobs.items()})


def _digest(plan: dict[str, Any], drop: tuple[str, ...] = ()) -> str:
    """The hash of what changes results: the plan without the run settings that do not
    (RESULT_FREE) and without the buffer sizes (they follow from the graphs, and change
    when lowering improves). `drop` leaves out more run settings: without `precision` it
    names the f32 masters a checkpoint holds, which an f32 run may continue."""
    run = {k: v for k, v in plan["run"].items() if k not in RESULT_FREE + drop}
    hashed = {**{k: v for k, v in plan.items() if k != "memory_by_precision"}, "run": run}
    return hashlib.sha256(orjson.dumps(hashed, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
