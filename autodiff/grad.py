"""Reverse-mode differentiation at compile time: walk a graph backwards from a
scalar loss and append each node's VJP (from its registry entry) as more IR."""

from __future__ import annotations

from sexpgpu.autodiff.fanout import sum_parts

from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir.build import scalar
from sexpgpu.ir.graph import Graph, Node, Value
from sexpgpu.ir.ops.registry import get_op
from sexpgpu.ir.shapes import fmt
from sexpgpu.ir.types import FLOAT_DTYPES
from sexpgpu.record import factory, record

E_GRAD_RULE = define_code(
    "E-GRAD-RULE", "differentiation rule not implemented",
    "The loss depends on a parameter through an op that has no VJP rule, so its "
    "gradient cannot be built. Wrap the op's input in stop-gradient if no gradient "
    "should flow there, or use a differentiable formulation.",
)
E_GRAD_LOSS = define_code(
    "E-GRAD-LOSS", "the loss is not a float scalar",
    "Gradients are taken of one scalar: the objective must return a float tensor "
    "of shape (). Reduce it with sum or mean first.",
)


def _differentiable(v: Value) -> bool:
    return v.dtype in FLOAT_DTYPES


def _accumulate(cts: dict[int, list[Value]], v: Value, ct: Value) -> None:
    """Fan-out: a value used several times collects its cotangents, summed (by
    autodiff.fanout) once all are in, when its own node's VJP needs them."""
    if ct.type is not v.type and ct.type != v.type:
        raise AssertionError(f"internal error: cotangent {ct.type} for value {v.type}")
    cts.setdefault(v.id, []).append(ct)


def _total(g: Graph, cts: dict[int, list[Value]], v: Value) -> Value | None:
    parts = cts.get(v.id)
    if parts is None:
        return None
    if len(parts) > 1:
        cts[v.id] = parts = [sum_parts(g, parts)]
    return parts[0]


def _total_in(g: Graph, cts: dict[int, list[Value]], v: Value, node: Node) -> Value | None:
    """`_total` of an output of `node`: a fan-out sum is built in the node's numerics
    region (entered only then: most values have one cotangent)."""
    parts = cts.get(v.id)
    if parts is None or len(parts) == 1:
        return None if parts is None else parts[0]
    with g.numerics(node.numerics):
        return _total(g, cts, v)


def _relevant(graph: Graph, loss: Value, wrt: list[Value]) -> tuple[set[int], set[int]]:
    """Ids of nodes on some float path from a `wrt` value to the loss, and ids of the
    values that a float path from `wrt` reaches."""
    reaches: set[int] = {v.id for v in wrt}
    forward: set[int] = set()
    for node in graph.nodes:  # (loops, not any(): this walks every node of the step)
        for v in node.inputs:
            if v.id in reaches and v.type.dtype in FLOAT_DTYPES:
                forward.add(node.id)
                reaches.update(o.id for o in node.outputs if o.type.dtype in FLOAT_DTYPES)
                break
    needed: set[int] = {loss.id}
    relevant: set[int] = set()
    for node in reversed(graph.nodes):
        if node.id in forward:
            for o in node.outputs:
                if o.id in needed:
                    relevant.add(node.id)
                    needed.update(v.id for v in node.inputs)
                    break
    return relevant, reaches


def _vjp(g: Graph, node: Node, out_cts: list[Value | None]) -> list[Value | None]:
    opdef = get_op(node.op)
    if opdef.vjp is None:
        shapes = " ".join(f"{v.type}" for v in node.inputs)
        raise error(E_GRAD_RULE, f"differentiation rule for {node.op} not implemented",
                    node.span, actual=f"{node.op} applied to {shapes}",
                    fix="wrap its input in stop_gradient, or use a differentiable op",
                    notes=list(node.notes))
    # backward nodes point at the forward line and keep its numerics region
    with g.at(node.span, node.notes), g.numerics(node.numerics):
        return opdef.vjp(g, node, out_cts)


@record
class Backward:
    """What a backward pass built and found.

    grads: the gradient of every `wrt` value (zeros where there is no path);
    unreached: the `wrt` values no cotangent reached: the loss has no gradient path
    to them (not used, or used only through argmax, a comparison, a cast to an
    integer, stop-gradient or another op whose gradient is zero);
    cuts: the nodes where a float path from `wrt` towards the loss stops carrying
    gradient, in graph order (for explaining `unreached`)."""

    grads: dict[Value, Value]
    unreached: list[Value] = factory(list)
    cuts: list[Node] = factory(list)


def grad(graph: Graph, loss: Value, wrt: list[Value]) -> dict[Value, Value]:
    """Append the gradient of scalar `loss` with respect to each of `wrt` to `graph`.

    Returns {value: gradient value}; a value the loss does not depend on gets zeros.
    Integer and boolean values never carry gradients; stop_gradient cuts them."""
    return backward(graph, loss, wrt).grads


def backward(graph: Graph, loss: Value, wrt: list[Value]) -> Backward:
    """`grad`, also saying which of `wrt` no gradient reached and where paths stop."""
    if loss.shape != () or not _differentiable(loss):
        raise error(E_GRAD_LOSS, "the loss must be a float scalar", graph._span,
                    expected="a float tensor of shape ()",
                    actual=f"{loss.dtype} {fmt(loss.shape)}",
                    fix="reduce it with sum or mean")
    relevant, reaches = _relevant(graph, loss, wrt)
    stopped: set[int] = set()   # nodes whose VJP gave no cotangent to a reached input
    cts: dict[int, list[Value]] = {loss.id: [scalar(graph, 1.0, loss.dtype)]}
    for node in reversed(list(graph.nodes)):
        if node.id not in relevant:
            continue
        out_cts = [_total_in(graph, cts, o, node) for o in node.outputs]
        if all(c is None for c in out_cts):
            continue
        in_cts = _vjp(graph, node, out_cts)
        if len(in_cts) != len(node.inputs):
            raise AssertionError(f"internal error: {node.op}'s VJP gave {len(in_cts)} "
                                 f"cotangents for {len(node.inputs)} inputs")
        for v, ct in zip(node.inputs, in_cts):
            if ct is not None and _differentiable(v):
                _accumulate(cts, v, ct)
            elif ct is None and v.id in reaches and _differentiable(v):
                stopped.add(node.id)
    out = Backward({})
    for v in wrt:
        ct = _total(graph, cts, v)
        if ct is None:
            out.unreached.append(v)
            ct = graph.apply("full", shape=v.shape, dtype=v.dtype, value=0.0)
        out.grads[v] = ct
    if out.unreached:
        out.cuts = _cuts(graph, loss, out.unreached, stopped)
    return out


def _cuts(graph: Graph, loss: Value, unreached: list[Value], stopped: set[int]) -> list[Node]:
    """Nodes the loss depends on that take a value a float path from `unreached` reaches
    but pass no gradient back: a non-float result (argmax, a comparison, a cast to an
    integer) or a VJP that gave none (stop-gradient, sign)."""
    reaches: set[int] = {v.id for v in unreached}
    candidates: list[Node] = []
    for node in graph.nodes:
        if any(v.id in reaches for v in node.inputs if _differentiable(v)):
            candidates.append(node)
            if node.id not in stopped:
                reaches.update(o.id for o in node.outputs if _differentiable(o))
    needed: set[int] = {loss.id}
    for node in reversed(graph.nodes):
        if any(o.id in needed for o in node.outputs):
            needed.update(v.id for v in node.inputs)
    return [node for node in candidates
            if any(o.id in needed for o in node.outputs)
            and (node.id in stopped or not any(_differentiable(o) for o in node.outputs))]
