"""The precision pass: a traced graph (every float value logically f32) rewritten for
the run's precision before lowering, so every launcher compiles the same casts.

In a bf16 region (the run's `:precision :bf16`, or `(with-numerics (:bf16) ...)`) each
traced f32 value gets a class: `weak` (graph inputs and constants: parameters, the
batch, literals, read as they are), `bf16` (an activation, stored as bf16) or `f32` (a
statistic, kept f32):

- an elementwise op computes in f32; its result is `f32` when its operands are
  statistics (and constants) or the op says so (its extra "f32_outputs": the normal
  CDF a GELU multiplies by), else `bf16`;
- a reduction (`sum`, `amax`, `amin`) accumulates in f32 and is `f32`;
- a matmul rounds its operands to bf16, widens them (exactly) and multiplies in f32 by
  BLAS; its product is `bf16`;
- data movement keeps its input's class.

A `bf16` value that some reader takes from memory (a matmul, a movement kernel, an op
of another shape, a later section) is rounded where it is made and every reader sees
the rounded value; one read only inside the loop that makes it is never rounded. The
optimizer update (always f32) and the graph's outputs read f32. In an f32 region every
op computes as traced. A rounding cast is made once per value, a widening cast once
per section (forward, backward, update), so an activation the backward reads stays
bf16 until then; lowering fuses them into the loops around them (docs/numerics.md)."""

from __future__ import annotations

from sexpgpu.diagnostics import Span, define_code, error
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, Node, Value, live_nodes
from sexpgpu.ir.ops.registry import get_op
from sexpgpu.lazynumpy import np
from sexpgpu.record import record
from sexpgpu.suggest import did_you_mean

E_PRECISION = define_code(
    "E-PRECISION", "precision not available",
    "Training runs in `:f32` or in `:bf16` (bfloat16 storage, f32 sums and f32 master "
    "weights). `:f16` is refused: the kernels run on numba, which cannot hold float16 "
    "arrays in CPU code, so there is no f16 storage to lower to (and f16 would need loss "
    "scaling, which bf16 does not). The same holds for `--precision` and `with-numerics`.",
)

PRECISIONS = ("f32", "bf16")
# ops that only move or view elements: their result keeps its input's class
_MOVES = frozenset({"reshape", "permute", "slice", "broadcast_to", "stop_gradient", "take",
                    "unfold", "slice_scatter", "concat"})
# views a matmul operand is read through: its rounding is done on the root and the
# view rebuilt over that, so BLAS still reads transposes and slices in place
_VIEWS = frozenset({"reshape", "permute", "slice", "broadcast_to", "stop_gradient"})
_REDUCTIONS = frozenset({"sum", "amax", "amin"})
_RANK = {"weak": 0, "bf16": 1, "f32": 2}


def check_precision(name: object, where: str, span: Span | None = None,
                    code: object = None) -> str:
    """`name` as a precision ("f32" or "bf16"); f16 is E-PRECISION, anything else
    `code` (the caller's: E-RUN for defrun, E-RUN-FLAG for --precision, ...)."""
    text = str(name).lstrip(":").lower()
    if text in PRECISIONS:
        return text
    if text == "f16":
        raise error(E_PRECISION, f"{where}: f16 is not available: numba cannot hold "
                    "float16 arrays on the CPU", span,
                    expected=":f32 or :bf16", actual=":f16",
                    fix="use :bf16 (same 16-bit storage, f32 range, no loss scaling)")
    raise error(code or E_PRECISION, f"{where}: unknown precision :{text}", span,
                expected=":f32 or :bf16", actual=f":{text}",
                fix=did_you_mean(f":{text}", [f":{p}" for p in PRECISIONS]))


@record
class Lowered:
    """A graph after the pass and where its sections start in its node list."""

    graph: Graph
    forward_end: int
    update_from: int


def lower_precision(graph: Graph, precision: str, forward_end: int | None = None,
                    update_from: int | None = None) -> Lowered:
    """`graph` with the casts `precision` needs. Nodes before `forward_end` are the
    forward, those from `update_from` on the optimizer update (always f32); by
    default the whole graph is forward. A graph that computes wholly in f32 is
    returned as it is, so an f32 run is unchanged by the pass."""
    n = len(graph.nodes)
    update_from = n if update_from is None else update_from
    forward_end = update_from if forward_end is None else forward_end
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}")
    regions = [_region(node, precision, i >= update_from) for i, node in enumerate(graph.nodes)]
    if all(r == "f32" for r in regions):
        return Lowered(graph, forward_end, update_from)
    return _Pass(graph, regions, forward_end, update_from).run()


def _region(node: Node, precision: str, update: bool) -> str:
    if update:
        return "f32"
    return node.numerics or precision


def _float(v: Value) -> bool:
    return v.type.is_float


class _Pass:
    """One walk over the traced nodes, rebuilding each into a new graph."""

    def __init__(self, graph: Graph, regions: list[str], forward_end: int, update_from: int):
        self.old, self.regions = graph, regions
        self.bounds = (forward_end, update_from)
        self.g = Graph(graph.name)
        self.g.inputs = list(graph.inputs)  # the same input values: callers feed them by name
        self.new: dict[int, Value] = {}     # traced value id -> the value as stored
        self.raw: dict[int, Value] = {}     # bf16 values: the f32 result before rounding
        self.cls: dict[int, str] = {}       # traced f32 value id -> weak | bf16 | f32
        self.made_in: dict[int, int] = {}   # traced value id -> section of its node
        self.casts: dict[tuple, Value] = {}
        self.section = 0
        for v in graph.inputs:
            self.new[v.id] = v
            if v.dtype == "f32":
                self.cls[v.id] = "weak"
        self.stored_for_later = self._read_outside_loop()

    def _section_of(self, i: int) -> int:
        return 0 if i < self.bounds[0] else 1 if i < self.bounds[1] else 2

    def _read_outside_loop(self) -> set[int]:
        """Traced values some reader takes from memory rather than inside the loop that
        makes them: they are rounded to bf16 where they are made (their bf16 copy is
        what the backward and the matmuls read). The update and the outputs read f32."""
        made: dict[int, int] = {}
        out: set[int] = set()
        live = {node.id for node in live_nodes(self.old)}  # a dead VJP term reads nothing
        for i, node in enumerate(self.old.nodes):
            section = self._section_of(i)
            if node.id not in live:
                continue
            for v in node.inputs:
                if v.id in made and section != 2 and not _in_loop(v, node, made[v.id], section):
                    out.add(v.id)
            for v in node.outputs:
                made[v.id] = section
        return out

    def run(self) -> Lowered:
        starts = [0, 0]
        for i, node in enumerate(self.old.nodes):
            self.section = self._section_of(i)
            if i == self.bounds[0]:
                starts[0] = len(self.g.nodes)
            if i == self.bounds[1]:
                starts[1] = len(self.g.nodes)
            with self.g.at(node.span, node.notes), self.g.numerics(node.numerics):
                self._node(node, self.regions[i])
        n = len(self.old.nodes)
        starts = [len(self.g.nodes) if b >= n else s for b, s in zip(self.bounds, starts)]
        self.section = 2
        for name, v in self.old.outputs.items():
            self.g.output(name, self.read(v, None, v.dtype))
        for target, v in self.old.updates.items():
            self.g.update(target, self.read(v, None, target.dtype))
        # drop what nothing reads (a traced view a matmul now reads rebuilt over its
        # rounded root, say), keeping the section boundaries
        live = {node.id for node in live_nodes(self.g)}
        kept = [[n for n in self.g.nodes[a:b] if n.id in live]
                for a, b in ((0, starts[0]), (starts[0], starts[1]), (starts[1], None))]
        self.g.nodes = [n for part in kept for n in part]
        return Lowered(self.g, len(kept[0]), len(kept[0]) + len(kept[1]))

    # -- reading a traced value ---------------------------------------------------------

    def read(self, v: Value, reader: Node | None, dtype: str) -> Value:
        """`v` as `reader` (None: an output or update) takes it at `dtype`. A bf16 value
        that some reader takes from memory is rounded for every reader, so the forward
        and the backward see the same activation (amax's VJP compares them); one only
        read inside the loop that makes it (or by the update) is read unrounded."""
        if dtype == "f32" and v.id in self.raw and (
                self.section == 2 or v.id not in self.stored_for_later and reader is not None
                and _in_loop(v, reader, self.made_in[v.id], self.section)):
            return self.raw[v.id]
        return self.want(v, dtype)

    def stored(self, v: Value) -> Value:
        """`v` as stored: a bf16 value's rounding is made once, where `v` is made."""
        if v.id not in self.new:
            self.new[v.id] = self.g.apply("cast", self.raw[v.id], dtype="bf16")
        return self.new[v.id]

    def want(self, v: Value, dtype: str) -> Value:
        """The stored `v` at `dtype`, converted by a cast (or a constant) the first time
        it is asked for (per section for widenings and for weak values, which are
        cheaper to convert again than to keep)."""
        have = self.stored(v)
        if have.dtype == dtype or not _float(v) or dtype not in ("f32", "bf16"):
            return have
        weak = self.cls.get(v.id) == "weak"
        per = self.section if dtype == "f32" or weak else -1
        key = (v.id, dtype, per)
        if key not in self.casts:
            self.casts[key] = self._convert(v, have, dtype)
        return self.casts[key]

    def _convert(self, v: Value, have: Value, dtype: str) -> Value:
        node = v.node
        if node is not None and node.op == "full":
            value = node.attrs["value"]
            if dtype == "bf16":  # the constant as bf16 holds it: kernels write literals
                value = float(_round_bf16(value))
            if node.attrs["shape"] == ():
                return build.scalar(self.g, value, dtype)
            return self.g.apply("full", shape=node.attrs["shape"], dtype=dtype, value=value)
        if node is not None and node.op == "cast" and not _float(node.inputs[0]):
            return self.g.apply("cast", self.new[node.inputs[0].id], dtype=dtype)
        return self.g.apply("cast", have, dtype=dtype)

    def operand(self, v: Value, rounded: bool) -> Value:
        """`v` as a matmul reads it, in f32: `rounded` to bf16 and widened back (exactly)
        in a bf16 region, as stored in an f32 one. Views are rebuilt over the converted
        root, which BLAS reads in place, rather than copied to be converted."""
        key = (v.id, "r32" if rounded else "w32", self.section)
        if key in self.casts:
            return self.casts[key]
        if not rounded and self._root_is_f32(v):
            return self.want(v, "f32")  # nothing to convert: read as traced
        node = v.node
        if node is not None and node.op in _VIEWS and v.dtype == "f32":
            out = self.g.apply(node.op, self.operand(node.inputs[0], rounded), **node.attrs)
        elif rounded and self.stored(v).dtype != "bf16":  # a weight, the batch, a statistic
            out = self.g.apply("cast", self.want(v, "bf16"), dtype="f32")
        else:  # as stored: bf16 widens exactly (the same cast as other f32 readers')
            out = self.want(v, "f32")
        self.casts[key] = out
        return out

    def _root_is_f32(self, v: Value) -> bool:
        """Whether the view chain `v` reads (if any) starts at a value stored in f32."""
        while v.node is not None and v.node.op in _VIEWS and v.dtype == "f32":
            v = v.node.inputs[0]
        return v.id not in self.raw and self.new[v.id].dtype == "f32"

    def _operand(self, v: Value, reader: Node) -> Value:
        """`v` at f32 for an elementwise `reader`. A stored bf16 vector read broadcast
        (a bias gradient's, say) is widened after broadcasting, so the cast runs in
        the reader's loop (lowering reads a broadcast's source in place) instead of
        in a small loop of its own."""
        shape = reader.outputs[0].shape
        if (not _float(v) or v.shape == shape or self.cls.get(v.id) != "bf16"
                or self.stored(v).dtype != "bf16"
                or (v.id, "f32", self.section) in self.casts):  # widened once already
            return self.read(v, reader, "f32") if _float(v) else self.new[v.id]
        wide = self.g.apply("broadcast_to", self.stored(v), shape=shape)
        return self.g.apply("cast", wide, dtype="f32")

    # -- rebuilding one node --------------------------------------------------------

    def _emit(self, node: Node, inputs: list[Value], cls: str | None, raw: bool = False) -> None:
        """Rebuild `node` over `inputs`; a bf16 result computed in f32 (`raw`) is kept
        unrounded, and rounded here when some reader takes it from memory."""
        out = self.g.apply(node.op, *inputs, **node.attrs)
        outs = out if isinstance(out, tuple) else (out,)
        for old, new in zip(node.outputs, outs):
            self.made_in[old.id] = self.section
            if old.dtype == "f32" and cls is not None:
                self.cls[old.id] = cls
            if raw and old.dtype == "f32" and cls == "bf16":
                self.raw[old.id] = new
                if old.id in self.stored_for_later:
                    self.stored(old)
            else:
                self.new[old.id] = new

    def _node(self, node: Node, region: str) -> None:
        op = node.op
        floats = [v for v in node.inputs if _float(v)]
        traced_f32 = any(v.dtype == "f32" for v in [*floats, *node.outputs])
        if not traced_f32:  # integers, or the user's own bf16: as traced
            self._emit(node, [self.want(v, v.dtype) for v in node.inputs], None)
        elif op in ("full", "iota", "const"):
            self._emit(node, [], "weak")
        elif op == "cast":
            self._cast(node)
        elif op in _REDUCTIONS:
            self._emit(node, [self.read(node.inputs[0], node, "f32")], "f32")
        elif op == "argmax":
            x = node.inputs[0]
            self._emit(node, [self.want(x, "bf16" if self.cls.get(x.id) == "bf16" else "f32")],
                       None)
        elif op == "matmul" and region == "bf16":
            self._emit(node, [self.operand(v, True) for v in node.inputs], "bf16", raw=True)
        elif op == "matmul":
            self._emit(node, [self.operand(v, False) for v in node.inputs], "f32")
        elif op in _MOVES or get_op(op).kind != "elementwise":
            self._move(node, floats, region)
        else:  # elementwise: computed in f32; a statistic's result stays f32
            classes = {self.cls.get(v.id, "f32") for v in floats}
            statistic = (region == "f32" or "f32" in classes and "bf16" not in classes
                         or 0 in get_op(op).extra.get("f32_outputs", ()))
            inputs = [self._operand(v, node) for v in node.inputs]
            self._emit(node, inputs, "f32" if statistic else "bf16", raw=not statistic)

    def _move(self, node: Node, floats: list[Value], region: str) -> None:
        """Data movement (and dropout, fold, scatter_add, attention: kernels that read
        and store memory) keeps the class of what it moves (the widest, for a concat);
        in an f32 region it moves f32. An op's f32-only inputs and outputs (extra
        "f32_inputs", "f32_outputs": attention's row logsumexp) stay f32."""
        extra = get_op(node.op).extra
        keep = extra.get("f32_inputs", ())
        cls = max((self.cls.get(v.id, "f32") for i, v in enumerate(node.inputs)
                   if _float(v) and i not in keep), key=_RANK.__getitem__, default="f32")
        if region == "f32" and cls == "bf16":
            cls = "f32"
        dtype = "bf16" if cls == "bf16" else "f32"
        self._emit(node, [self.want(v, "f32" if i in keep else dtype) if _float(v)
                          else self.new[v.id] for i, v in enumerate(node.inputs)], cls)
        for i in extra.get("f32_outputs", ()):
            self.cls[node.outputs[i].id] = "f32"

    def _cast(self, node: Node) -> None:
        x, out = node.inputs[0], node.outputs[0]
        if not _float(out):                  # to an integer or bool: from what x holds
            self._emit(node, [self.read(x, node, "f32") if x.dtype == "f32"
                              else self.new[x.id]], None)
        elif not _float(x):                  # an integer or bool made float: weak
            self._emit(node, [self.new[x.id]], "weak")
        elif x.dtype == out.dtype:           # f32 -> f32: the value itself
            self._emit(node, [self.read(x, node, "f32")], self.cls.get(x.id, "f32"))
        else:                                # the user's explicit cast: as written
            self._emit(node, [self.want(x, x.dtype)], "f32" if out.dtype == "f32" else None)


def _in_loop(v: Value, reader: Node, made_in: int, section: int) -> bool:
    """Whether `reader` takes `v` inside the loop that makes it, as lowering fuses:
    a same-shape elementwise op or a reduction of `v`, in the same section."""
    if made_in != section:
        return False
    if reader.op in _REDUCTIONS:
        return True
    return (get_op(reader.op).kind == "elementwise" and reader.op != "broadcast_to"
            and reader.outputs[0].shape == v.shape)


def _round_bf16(value: float) -> np.float32:
    """`value` rounded to the nearest bf16 (ties to even), as an f32."""
    from sexpgpu.ir.reference import round_bf16  # the reference's rounding

    return round_bf16(np.array([value], np.float32))[0]
