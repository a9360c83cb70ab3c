"""Lowering: group a graph's nodes into kernels and record where each value lives
(KernelPlan). Same-shape elementwise nodes fuse into one loop, a reduction absorbs
the loop feeding it, views and constants cost nothing, any other op is one kernel."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from sexpgpu.kernels import views as strided
from sexpgpu.kernels.outer import outer_products
from sexpgpu.kernels.source import storage, strides
from sexpgpu.kernels.unstack import unstacked
from sexpgpu.kernels.views import View

from sexpgpu.ir.cse import merged
from sexpgpu.ir.graph import Graph, Node, Value, live_nodes
from sexpgpu.ir.ops.registry import get_op
from sexpgpu.ir.shapes import axes as norm_axes
from sexpgpu.ir.shapes import axis as norm_axis


@dataclass(eq=False)
class Kernel:
    """One loop nest (or one structured op) of the program, in run order."""

    kind: str                     # "loop" (fused elementwise, maybe + reduce) | "op"
    nodes: list[Node]             # members in topological order
    domain: tuple[int, ...]       # loop kernels: the iteration space
    reduce: Node | None = None    # loop kernels: the reduction the loop feeds
    # more reductions of the same loop over the same axes (a variance's sum of
    # squares and its sum of deviations): one pass computes them all
    siblings: list[Node] = field(default_factory=list)
    view: View | None = None      # a copy of a strided view (kernels.views), read as one
    # values of later nodes whose buffers this kernel fills through strided views of
    # its results (`_Grouper._stores_ahead`): the merged heads of an attention
    homes: list[Value] = field(default_factory=list)
    closed: bool = False
    index: int = -1               # position in the program
    inputs: list[Value] = field(default_factory=list)   # buffers read (view bases)
    outputs: list[Value] = field(default_factory=list)  # values stored to buffers

    @property
    def values(self) -> set[Value]:
        return {v for n in self.nodes for v in n.outputs}

    @property
    def reductions(self) -> list[Node]:
        return [self.reduce] + self.siblings if self.reduce is not None else []

    def spans(self) -> list[str]:
        seen: list[str] = []
        for node in self.nodes:
            if node.span is not None and str(node.span) not in seen:
                seen.append(str(node.span))
        return seen


# -- where a value lives ----------------------------------------------------------
# Each value lowering has placed has one Location (a graph input has none: it is
# the caller's array). A Const, Broadcast, Transposed or Strided value that a
# structured op or an output needs gains a `copy` kernel, placed before that
# reader, whose buffer such readers read; loops keep inlining the constant or
# reading the source broadcast, and matmuls (and concats) keep reading a
# transpose or view in place. The location itself never changes: a loop placed
# earlier has already read the value the way its location said.


@dataclass(frozen=True)
class Computed:
    """Made by `kernel`: a loop variable, stored to a buffer when read elsewhere."""

    kernel: Kernel
    into: Value | None = None     # an update stored straight into the input it replaces


@dataclass(frozen=True)
class Alias:
    """The elements of `of`, row-major (reshape, stop_gradient, a same-dtype cast)."""

    of: Value                     # never itself an Alias


@dataclass(frozen=True)
class Const:
    """A scalar `full` constant, written as a literal into the loops that read it;
    other readers read `copy`, a fill kernel made for the first one. (A constant
    tensor is filled and Computed: `_add_const`.)"""

    node: Node
    copy: Kernel | None = None


@dataclass(frozen=True)
class Broadcast:
    """broadcast_to: loops read `source` broadcast into their own index space;
    other readers read `copy`, made for the first one."""

    source: Value
    copy: Kernel | None = None


@dataclass(frozen=True)
class Transposed:
    """A transpose of the last two axes: matmuls read `source` transposed (BLAS
    flags, swapped offsets); other readers read `copy`, made for the first one."""

    source: Value
    copy: Kernel | None = None


@dataclass(frozen=True)
class Strided:
    """A slice, permute or reshape chain over a buffer (kernels.views): readers that
    `reads_in_place` read `view.root`; others read `copy`, made for the first one."""

    view: View
    copy: Kernel | None = None


Location = Computed | Alias | Const | Broadcast | Transposed | Strided


@dataclass
class KernelPlan:
    """The kernels in run order plus where every value lives."""

    graph: Graph
    kernels: list[Kernel]
    outputs: dict[str, Value]
    where: dict[Value, Location] = field(default_factory=dict)  # graph inputs: absent

    def base(self, value: Value) -> Value:
        """The value whose buffer or loop variable holds `value`'s elements."""
        place = self.where.get(value)
        return place.of if isinstance(place, Alias) else value

    def source(self, value: Value) -> Value:
        """The value a loop loads for `value` (broadcast into its index space)."""
        place = self.where.get(value)
        while isinstance(place, Broadcast):
            value = place.source
            place = self.where.get(value)
        return value

    def home(self, value: Value) -> Value:
        """The value whose buffer holds `value`: its base, or for an update stored
        in place the input it overwrites."""
        value = self.base(value)
        place = self.where.get(value)
        if isinstance(place, Computed) and place.into is not None:
            return place.into
        return value

    def const(self, value: Value) -> Node | None:
        """The `full` node of a constant loops inline as a literal."""
        place = self.where.get(self.base(value))
        return place.node if isinstance(place, Const) else None

    def transposed(self, value: Value) -> Value | None:
        """The value a matmul reads transposed for `value`, if `value` is Transposed."""
        place = self.where.get(self.base(value))
        return place.source if isinstance(place, Transposed) else None

    def view(self, value: Value) -> View | None:
        """Where `value`'s elements lie, if `value` is a strided view."""
        place = self.where.get(self.base(value))
        return place.view if isinstance(place, Strided) else None

    def loop_view(self, value: Value, op: str) -> View | None:
        """The strided view a loop's `op` (an elementwise op, a reduction) reads in
        place for `value`: strides describe it, its last axis steps by one element
        over at least LOOP_VIEW_ROW of them (or has one element: a column, which a
        copy would gather the same way), and its root is no parameter updated in the
        step (an update stored over its input reads its own rows only: `_reads_in_step`).

        Why: an LSTM's gates are four column blocks of one (batch, 4 hidden) product,
        and each step's input projection a row of the whole sequence's; copied out,
        each step ran four to five copy kernels (the hidden-128 LSTM's step: 1.7 of
        16 ms). A view whose last axis strides (a permute's) stays a copy, which one
        pass makes contiguous for every loop that reads it."""
        view = self.view(value) if loop_op(op) else None
        if view is None or view.grid is not None or view.root in self.graph.updates:
            return None
        rows = view.shape[-1] if view.strides[-1:] == (1,) else 0
        return view if view.shape[-1:] in ((), (1,)) or rows >= LOOP_VIEW_ROW else None

    def kernel(self, value: Value) -> Kernel | None:
        """The kernel that makes `value`'s elements (or a copy of them: a constant's
        fill, a broadcast's, transpose's or view's copy)."""
        place = self.where.get(value)
        if isinstance(place, Computed):
            return place.kernel
        return place.copy if isinstance(place, (Const, Broadcast, Transposed, Strided)) \
            else None

    def operand(self, value: Value, op: str) -> Value:
        """The value whose buffer a kernel of `op` reads for `value`: a matmul reads
        a transpose's source, a reader that `reads_in_place` a strided view's root."""
        value = self.base(value)
        place = self.where.get(value)
        if op == "matmul" and isinstance(place, Transposed):
            value = self.base(place.source)
            place = self.where.get(value)
        if isinstance(place, Strided) and self.reads_view(value, op):
            value = self.base(place.view.root)
        return value

    def reads_view(self, value: Value, op: str) -> bool:
        """Whether a kernel of `op` reads the strided view `value` where it lies
        (`reads_in_place`, or a loop's `loop_view`) instead of its copy."""
        view = self.view(value)
        return view is not None and (reads_in_place(op, view)
                                     or self.loop_view(value, op) is not None)

    def stored_ahead(self, value: Value, kernel: Kernel) -> View | None:
        """The strided view of a buffer `kernel` fills (its homes) through which it
        stores `value` (`_Grouper._stores_ahead`, `_Grouper._fill`), or None."""
        place = self.where.get(value)
        return place.view if isinstance(place, Strided) and place.view.root in kernel.homes \
            else None

    @property
    def in_place(self) -> dict[Value, Value]:
        """Updates stored straight into the input they replace: new value -> input."""
        return {v: p.into for v, p in self.where.items()
                if isinstance(p, Computed) and p.into is not None}

    def last_reads(self) -> dict[Value, int]:
        """Each buffer value -> the index of the last kernel that reads it."""
        return {v: kernel.index for kernel in self.kernels for v in kernel.inputs}


def _is_identity(node: Node) -> bool:
    """stop_gradient, a cast to the same dtype: the value is its input."""
    op = get_op(node.op)
    x, out = node.inputs[0] if node.inputs else None, node.outputs[0]
    return (op.kind == "elementwise" and op.body(node.attrs) == "x0" and x is not None
            and x.type == out.type)


def _is_matrix_transpose(node: Node) -> bool:
    """A permute swapping only the last two axes."""
    if node.op != "permute":
        return False
    perm = tuple(node.attrs["perm"])
    n = len(perm)
    return n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2)


# the shortest last axis (in elements, stepping by one) that a loop reads in place:
# a shorter one's inner loop barely fills vector registers, where the copy's flat loop
# does (bench/rnn_sizes.py, the LSTM from primitives: at 16 hidden units 1.51 ms read
# in place, 1.34 copied; at 32, 2.07 against 2.49; at 64, 5.18 against 5.98)
LOOP_VIEW_ROW = 32
# the shortest rows a loop stores through a view (`_Grouper.plan_fills`; at least
# LOOP_VIEW_ROW, so that loops read them in place too): its loop nest
# is then two loops deep where it was one flat loop, which only long rows pay for (the
# 6-unit LSTM's gates loop ran 8x slower storing through rows of 6; the GRU example's
# at 32 units 12.7 -> 16.7 us a call, its step 10% slower; at 64 units the LSTM's
# step 5-8% faster, its four gate gradients' concat gone; at 128 units 1.2-1.5 ms)
FILL_ROW = 64
# ... and the shortest from which a loop may read the piece too, where it lies: a
# filled stack's rows are scattered (an RNN's state at one time step: rows of 64
# floats 10 KB apart), and a loop reading them there and storing the next step's
# ran 1.2x slower than on its own buffer (the 64-unit GRU's gates loop, 14.5 against
# 17.5 us; its step 15-20% slower filling the stack than copying it). At 128 units
# the stacked LSTM and GRU were as fast or faster filled.
FILL_READ_ROW = 128
# sums of this many 2-D matmuls or more run as one kernel of accumulating sgemm calls
# (`_Grouper.plan_sums`, CPU): an unrolled RNN's weight gradients, one product a time
# step, were each too small to split between threads (100x64x256: 23 us on one) and
# were summed by a loop of their own afterwards; as one kernel the 40 products of the
# 64-unit LSTM share one split, and no (steps, 64, 256) of partial gradients is
# stored and read back. Two products stay apart: two matmuls and an add are no worse
SUM_TERMS = 3
# ops whose kernels read a strided view's elements through its strides
STRIDED_READERS = ("matmul", "attention", "attention_backward")
# ops whose kernels store their results through strided views (kernels/attention.py)
STRIDED_WRITERS = ("attention", "attention_backward")


def _stays_f32(value: Value) -> bool:
    return value.dtype == "f32"


def _part(concat: Node, operand: Value) -> View:
    """Where `operand`'s elements lie in the concat's buffer."""
    out = concat.outputs[0]
    axis = norm_axis(concat.attrs.get("axis", 0), len(out.shape))
    start = sum(v.shape[axis] for v in concat.inputs[:concat.inputs.index(operand)])
    out_strides = strides(out.shape)
    return View(out, start * out_strides[axis], operand.shape, out_strides)


def _inverse(chain: list[Node], view: View) -> View | None:
    """The view of the chain's first input such that applying the chain's permutes
    and reshapes to it gives `view` (of the chain's last output); None when no
    strides describe it."""
    for step in reversed(chain):
        shape = step.inputs[0].shape
        if step.op == "permute":
            inverse = [0] * len(shape)
            for axis, p in enumerate(step.attrs["perm"]):
                inverse[p] = view.strides[axis]
            view = View(view.root, view.offset, shape, tuple(inverse))
        else:
            new = strided.reshaped_strides(view.shape, view.strides, shape)
            if new is None:
                return None
            view = View(view.root, view.offset, shape, new)
    return view


def reads_in_place(op: str, view: View) -> bool:
    """Whether a kernel of `op` reads `view`'s elements where they lie: a concat
    by index arithmetic, a matmul (BLAS) or attention (its loops) when strides
    describe it; loops read it in place where `KernelPlan.loop_view` says;
    anything else reads the view's copy."""
    return op == "concat" or (op in STRIDED_READERS and view.grid is None)


def _loop_made(value: Value) -> bool:
    """A non-empty f32 result of an elementwise loop (no fill, broadcast or identity)."""
    node = value.node
    return (node is not None and _rule(node) == "elementwise" and loop_op(node.op)
            and _stays_f32(value) and prod(value.shape) > 0)


def loop_op(op: str) -> bool:
    """An op that loop kernels compute: an elementwise op or a reduction (a fill
    and a broadcast are locations of their own)."""
    return get_op(op).kind in ("elementwise", "reduce") and op not in ("full", "broadcast_to")


def _rule(node: Node) -> str:
    """Which of the grouper's rules (_Grouper.RULES) places `node`."""
    op = get_op(node.op)
    if node.op == "full":
        return "const"
    if op.kind == "view" or _is_identity(node):
        return "alias"
    if node.op == "broadcast_to":
        return "broadcast"
    if op.kind in ("elementwise", "reduce"):
        return op.kind
    if _is_matrix_transpose(node):
        return "transpose"
    return "structured"


def _sibling(kernel: Kernel, node: Node) -> bool:
    """`node` reduces a value of `kernel`'s loop (not one of its results) over the
    same axes as the kernel's reduction: one more accumulator in the same nest."""
    first = kernel.reduce
    ndim = len(kernel.domain)
    return (node.inputs[0].node not in kernel.reductions
            and norm_axes(node.attrs.get("axes"), ndim) == norm_axes(first.attrs.get("axes"), ndim)
            and node.attrs.get("keepdims", False) == first.attrs.get("keepdims", False))


def _sums_batch(total: Node) -> bool:
    """`total` sums an f32 batched matmul over exactly its batch axes, both
    operands having that batch."""
    x = total.inputs[0]
    a, b = x.node.inputs
    batch = x.shape[:-2]
    return (bool(batch) and a.shape[:-2] == batch and b.shape[:-2] == batch
            and all(v.dtype == "f32" for v in (a, b, x, total.outputs[0]))
            and tuple(norm_axes(total.attrs.get("axes"), len(x.shape)))
            == tuple(range(len(batch)))
            and total.outputs[0].shape == x.shape[-2:])


class _Grouper:
    """Walks the nodes once, growing open loop kernels and closing them when a
    value they hold is needed by something that cannot join them; records where
    each value lives in `plan.where`."""

    def __init__(self, plan: KernelPlan, uses: dict[Value, int],
                 readers: dict[Value, list[Node]]) -> None:
        self.plan = plan
        self.where = plan.where
        self.uses = uses          # how many node inputs and roots read each value
        self.readers = readers    # the nodes reading each value (roots are not nodes)
        self.open: list[Kernel] = []
        # the last reduction's kernel, left open only for the node right after it
        # (a sibling reduction of the same loop); any other node closes it, so the
        # kernel runs where it always did
        self.held: Kernel | None = None
        # loop results stored straight into a concat's buffer (`plan_fills`): the
        # concat and where the result lies in it
        self.fills: dict[Value, tuple[Node, View]] = {}
        # each such concat's output -> the loops filling it, so far
        self.fillers: dict[Value, list[Kernel]] = {}
        # sums of matmuls computed by one kernel (`plan_sums`): the sum's last add ->
        # its products, and each product and inner add -> that last add
        self.sums: dict[Node, list[Node]] = {}
        self.in_sum: dict[Node, Node] = {}

    # -- kernels ------------------------------------------------------------------

    def close(self, kernel: Kernel | None) -> None:
        if kernel is not None and not kernel.closed:
            kernel.closed = True
            self.open.remove(kernel)
            self.plan.kernels.append(kernel)

    def _closed(self, kind: str, node: Node, view: View | None = None) -> Kernel:
        """A kernel of one node, appended to the program as it is."""
        kernel = Kernel(kind, [node], node.outputs[0].shape, closed=True, view=view)
        self.plan.kernels.append(kernel)
        return kernel

    def _open_kernel(self, value: Value) -> Kernel | None:
        """The open loop that a loop reading `value` could join (none for a concat
        that loops fill: their results are all in its buffer first)."""
        value = self.plan.base(self.plan.source(value))
        if value in self.fillers:
            self.materialize(value)
            return None
        kernel = self.plan.kernel(value)
        return kernel if kernel is not None and not kernel.closed else None

    def materialize(self, value: Value) -> None:
        """Make sure `value`'s elements are in a buffer before a non-loop reader runs."""
        value = self.plan.base(value)
        for kernel in self.fillers.get(value, []):
            self.close(kernel)
        match self.where.get(value):
            case Computed(kernel=kernel):
                self.close(kernel)
            case Strided(view=view, copy=None):
                # one kernel copies the view out of its root's buffer (however many
                # ops made it); readers that read it in place keep doing so
                self.materialize(view.root)
                self.where[value] = Strided(view, self._closed("op", value.node, view))
            case Transposed(source=source, copy=None):
                # matmuls keep reading its source transposed
                self.materialize(source)
                self.where[value] = Transposed(source, self._closed("op", value.node))
            case Broadcast(source=source, copy=None):
                # loops placed before (and after) keep reading the source broadcast
                self.materialize(source)
                self.where[value] = Broadcast(source, self._closed("loop", value.node))
            case Const(node=node, copy=None):
                # loops keep the literal; the fill runs before this reader
                self.where[value] = Const(node, self._closed("loop", node))

    # -- placing a node -----------------------------------------------------------

    def add(self, node: Node) -> None:
        """Place `node`: join or open a loop, record a free location, or emit its kernel."""
        held, self.held = self.held, None
        if held is not None and not self._joins_as_sibling(held, node):
            self.close(held)
        if node.outputs and all(v in self.where for v in node.outputs):
            return  # a buffer an earlier kernel fills (_stores_ahead): nothing to run
        if node in self.in_sum or node in self.sums:
            self._add_summed(node)
            return
        if self._undo_transpose(node) or self._add_view(node):
            return
        if not _is_identity(node):  # an identity is its input, wherever that lies
            self._readable(node)
        self.RULES[_rule(node)](self, node)

    def _readable(self, node: Node) -> None:
        """Copy out each input `node`'s kernel cannot read where it lies, and store
        the root of each view a loop reads in place."""
        for v in node.inputs:
            if self._needs_elements(v, node.op):
                self.materialize(v)
            elif self.plan.loop_view(v, node.op) is not None:
                # a loop reading a view in place reads its root's buffer: stored
                # before this loop runs (its own loop closed)
                self.materialize(self.plan.operand(v, node.op))

    def _operands_stored(self, node: Node) -> None:
        """Store every buffer a structured kernel of `node` reads before it runs."""
        for v in node.inputs:
            self.materialize(self.plan.operand(v, node.op))

    def _needs_elements(self, value: Value, op: str) -> bool:
        """A kernel of `op` cannot read `value` where it lies (a transpose read by
        anything but a matmul, a view it does not read in place: `KernelPlan.reads_view`)."""
        match self.where.get(self.plan.base(value)):
            case Transposed():
                return op != "matmul"
            case Strided():
                return not self.plan.reads_view(value, op)
        return False

    def _undo_transpose(self, node: Node) -> bool:
        """The transpose of a transpose (a linear layer's weight in its input
        gradient) is the original buffer: no copy, no kernel."""
        if not _is_matrix_transpose(node):
            return False
        place = self.where.get(self.plan.base(node.inputs[0]))
        if not isinstance(place, Transposed):
            return False
        self.where[node.outputs[0]] = Alias(self.plan.base(place.source))
        return True

    def _add_view(self, node: Node) -> bool:
        """A slice or permute of a buffer, or a slice, permute or reshape of such a
        view, becomes a Strided location (kernels.views): matmuls read it in place,
        and it is made a kernel only when something else reads it."""
        if node.op not in ("slice", "permute", "reshape") or node.outputs[0].dtype != "f32":
            return False
        src = node.inputs[0]
        source = self.plan.base(src)
        place = self.where.get(source)
        if isinstance(place, (Broadcast, Const, Transposed)):
            return False
        view = strided.apply(place.view, node) if isinstance(place, Strided) else None
        if view is None:
            if isinstance(place, Strided):
                self.materialize(source)  # no strides describe it: copy it out, then view that
            elif node.op == "reshape" or _is_matrix_transpose(node):
                return False  # a reshape of a buffer is an Alias; a transpose is Transposed
            view = strided.apply(strided.whole(src, source), node)
        self.where[node.outputs[0]] = Strided(view)
        return True

    # -- the rules, one per _rule() ------------------------------------------------

    def _add_const(self, node: Node) -> None:
        value = node.outputs[0]
        if prod(value.shape) > 1:
            # a constant tensor (an RNN's zero first state): filled once and read like
            # any value, so the loops reading it have the text of those reading the
            # values that take its place at later steps (one kernel to compile, not two)
            self.where[value] = Computed(self._closed("loop", node))
            return
        self.where[value] = Const(node)

    def _add_alias(self, node: Node) -> None:
        """A reshape reads its input's buffer row-major: no kernel at all."""
        src = node.inputs[0]
        if isinstance(self.where.get(src), Broadcast):
            if _is_identity(node):
                self.where[node.outputs[0]] = Broadcast(src)
                return
            self.materialize(src)  # a reshape of a broadcast needs its elements
        self.where[node.outputs[0]] = Alias(self.plan.base(src))

    def _add_broadcast(self, node: Node) -> None:
        """Loops read the input broadcast straight into their own index space."""
        self.where[node.outputs[0]] = Broadcast(node.inputs[0])

    def _add_elementwise(self, node: Node) -> None:
        shape = node.outputs[0].shape
        joinable: list[Kernel] = []
        for v in node.inputs:
            kernel = self._open_kernel(v)
            if kernel is None:
                continue
            if kernel.domain == shape and kernel.reduce is None \
                    and self.plan.source(v).shape == shape:
                if kernel not in joinable:
                    joinable.append(kernel)
            else:
                self.close(kernel)  # another shape, a reduction, or read broadcast
        target = self._merge([k for k in joinable if not k.closed], shape)
        target.nodes.append(node)
        for v in node.outputs:
            self.where[v] = Computed(target)
            if v in self.fills:
                self._fill(v, target)

    def _merge(self, loops: list[Kernel], shape: tuple[int, ...]) -> Kernel:
        """One open loop holding all of `loops` (a new one if there are none)."""
        if not loops:
            target = Kernel("loop", [], shape)
            self.open.append(target)
            return target
        target = loops[0]
        for other in loops[1:]:
            # both open, so neither has been read outside: one loop can hold both
            target.nodes = sorted(target.nodes + other.nodes, key=lambda n: n.id)
            for v in other.values:
                if isinstance(self.where.get(v), Computed):  # not a result stored ahead
                    self.where[v] = Computed(target)
            for root in other.homes:
                self.fillers[root] = [target if k is other else k for k in self.fillers[root]]
                if self.plan.kernel(root) is other:
                    self.where[root] = Computed(target)
                if root not in target.homes:
                    target.homes.append(root)
            self.open.remove(other)
        return target

    def _add_reduce(self, node: Node) -> None:
        if self._fold_batch_sum(node):
            return
        x = node.inputs[0]
        kernel = self._open_kernel(x)
        if self.plan.source(x).shape != x.shape:
            self.close(kernel)  # x is a broadcast: read its source from a buffer
        for v in node.inputs[1:]:
            self.materialize(v)
        # (a loop storing results into a concat's buffer stays a plain loop nest)
        fits = (kernel is not None and not kernel.closed and kernel.domain == x.shape
                and x.shape and prod(x.shape) > 0 and not kernel.homes)
        if fits and kernel.reduce is None:
            # the loop producing x runs inside the reduction's loop nest: every
            # element of the domain is still visited exactly once
            kernel.nodes.append(node)
            kernel.reduce = node
        elif fits and _sibling(kernel, node):
            kernel.nodes.append(node)
            kernel.siblings.append(node)
        else:
            self.close(kernel)
            kernel = Kernel("loop", [node], x.shape, reduce=node)
            self.open.append(kernel)
        self.where[node.outputs[0]] = Computed(kernel)
        self.held = kernel  # open for a sibling placed next, else closed then

    def _joins_as_sibling(self, kernel: Kernel, node: Node) -> bool:
        """`node` is a reduction that would join `kernel` as a sibling."""
        if _rule(node) != "reduce" or kernel.closed:
            return False
        x = node.inputs[0]
        return (self._open_kernel(x) is kernel and self.plan.source(x).shape == x.shape
                and kernel.domain == x.shape and _sibling(kernel, node))

    def _fold_batch_sum(self, node: Node) -> bool:
        """`sum(matmul(permute(a), b), batch axes)` (a weight gradient) joins its
        matmul's kernel: one (m, batch*k) x (batch*k, n) product, no (batch, m, n)."""
        x = node.inputs[0]
        mm = x.node
        if node.op != "sum" or mm is None or mm.op != "matmul" or self.uses.get(x) != 1:
            return False
        kernel = self.plan.kernel(x)
        if kernel is None or kernel.nodes != [mm] or not _sums_batch(node):
            return False
        a, b = (self.where.get(self.plan.base(v)) for v in mm.inputs)
        # b may be a view (the merged heads the attention output's projection reads):
        # read from its copy, or in place when its elements lie row-major without
        # gaps, its rows stack like a buffer's
        if not isinstance(a, Transposed) or isinstance(b, Transposed) or (
                isinstance(b, Strided) and reads_in_place("matmul", b.view)
                and not b.view.contiguous()):
            return False
        kernel.nodes.append(node)
        self.where[node.outputs[0]] = Computed(kernel)
        return True

    def _add_transpose(self, node: Node) -> None:
        """Matmuls read it transposed in place (BLAS flags / swapped offsets)."""
        if isinstance(self.where.get(node.inputs[0]), Broadcast):
            self._add_structured(node)
            return
        self.where[node.outputs[0]] = Transposed(node.inputs[0])

    def _add_structured(self, node: Node) -> None:
        """Its own kernel, run once the buffers it reads are written."""
        self._operands_stored(node)
        kernel = self._closed("op", node)
        for v in node.outputs:
            self.where[v] = Computed(kernel)
        if node.op in STRIDED_WRITERS:
            self._stores_ahead(node, kernel)

    def _stores_ahead(self, node: Node, kernel: Kernel) -> None:
        """Store results that later nodes only permute and reshape (an attention's
        heads merged back, their gradients concatenated into the projection's) straight
        into the buffer those make, through strided views: no kernel copies them there.
        Each result becomes a Strided view of that buffer, which `kernel` then fills."""
        chains = {v: self._view_chain(v) for v in node.outputs}
        ends = {v: chain[-1].outputs[0] for v, chain in chains.items() if chain}
        joins = {self._only_reader(end) for end in ends.values()}
        concat = joins.pop() if len(joins) == 1 else None
        if concat is not None and concat.op == "concat" and len(ends) == len(concat.inputs) \
                and set(concat.inputs) == set(ends.values()) and _stays_f32(concat.outputs[0]):
            # every operand of the concat is one of these results: fill all of it
            root = concat.outputs[0]
            views = {v: _inverse(chains[v], _part(concat, end)) for v, end in ends.items()}
        else:
            root = None
            views = {v: _inverse(chains[v], strided.whole(end, end)) for v, end in ends.items()
                     if not self._reads_as_buffer(v, chains[v])}
        if any(view is None for view in views.values()):
            return
        for v, view in views.items():
            home = root if root is not None else ends[v]
            self.where[v] = Strided(view)
            self.where[home] = Computed(kernel)
            if home not in kernel.homes:
                kernel.homes.append(home)

    def plan_sums(self, nodes: list[Node]) -> None:
        """Find the sums of SUM_TERMS or more 2-D f32 matmuls of one shape, added up
        by adds that nothing else reads (an unrolled RNN's weight gradients): each
        becomes one kernel at the last add (`_add_summed`)."""
        order = {node: k for k, node in enumerate(nodes)}
        for node in reversed(nodes):
            if node.op != "add" or node in self.in_sum:
                continue
            tree = self._sum_tree(node)
            if tree is not None and sum(n.op == "matmul" for n in tree) >= SUM_TERMS:
                tree.sort(key=order.__getitem__)
                self.sums[node] = [n for n in tree if n.op == "matmul"]
                self.in_sum.update((n, node) for n in tree)

    def _sum_tree(self, root: Node) -> list[Node] | None:
        """The matmuls and inner adds of the sum `root` ends, or None when it adds
        anything else, broadcasts, or another node reads a part of it."""
        out = root.outputs[0]
        if out.dtype != "f32" or len(out.shape) != 2 or min(out.shape) < 2:
            return None
        tree: list[Node] = []
        todo = [root]
        while todo:
            for v in todo.pop().inputs:
                part = v.node
                if part is None or v.type != out.type or self.uses.get(v) != 1:
                    return None
                if part.op == "add":
                    todo.append(part)
                elif part.op != "matmul" or any(len(x.shape) != 2 or x.dtype != "f32"
                                                for x in part.inputs):
                    return None
                tree.append(part)
        return tree

    def _add_summed(self, node: Node) -> None:
        """Place a node of a sum of matmuls: a product's operands are made ready where
        it stands (and kept until the sum is computed), an inner add waits, and the
        last add runs the sum as one kernel, or, when a product reads a view sgemm
        cannot read in place, each node as it would have run."""
        if node in self.in_sum:
            if node.op == "matmul":
                self._readable(node)
                self._operands_stored(node)
            return
        terms = self.sums.pop(node)
        tree = [n for n, root in self.in_sum.items() if root is node]
        if all(self._sgemm_reads(v) for mm in terms for v in mm.inputs):
            kernel = Kernel("op", tree + [node], node.outputs[0].shape, closed=True)
            self.plan.kernels.append(kernel)
            for n in kernel.nodes:
                self.where[n.outputs[0]] = Computed(kernel)
            return
        for n in tree:
            del self.in_sum[n]
        for n in tree + [node]:
            self.add(n)

    def _sgemm_reads(self, value: Value) -> bool:
        """A matmul reads `value` where it lies as an sgemm operand: a buffer, a
        transpose of one, or a 2-D view whose rows or columns step by one element."""
        view = self.plan.view(value)
        return view is None or (reads_in_place("matmul", view) and len(view.shape) == 2
                                and strided.leading(view.strides, *view.shape) is not None)

    def plan_fills(self, nodes: list[Node]) -> None:
        """Find the concats whose every operand is a loop's result (through reshapes
        and permutes: a stack) that nothing else reads but matmuls: an RNN's hidden
        states stacked over time, each step's gate gradients joined. Each loop then
        stores its result into the concat's buffer (`_fill`), and the concat is no
        kernel (the 128-unit LSTM copied 0.7 ms a step into its two stacks and 0.5 ms
        into its 40 steps' gradient concats)."""
        for node in nodes:
            if node.op != "concat" or len(node.inputs) < 2 or not _stays_f32(node.outputs[0]):
                continue
            pieces = [self._piece(end, node) for end in node.inputs]
            if all(piece is not None for piece in pieces) \
                    and len({v for v, _ in pieces}) == len(pieces):
                self.fills.update((v, (node, view)) for v, view in pieces)

    def _piece(self, end: Value, concat: Node) -> tuple[Value, View] | None:
        """The loop result that `end`, an operand of `concat`, reshapes or permutes,
        and where its elements lie in the concat's buffer; None unless the concat
        alone reads `end`, each step of the chain alone reads the one before, and
        only matmuls read the loop's result besides."""
        if self._only_reader(end) is not concat:
            return None
        chain: list[Node] = []
        value = end
        while not _loop_made(value):
            step = value.node
            if step is None or step.op not in ("reshape", "permute") \
                    or not _stays_f32(step.inputs[0]):
                return None
            chain.insert(0, step)
            value = step.inputs[0]
            if not _loop_made(value) and self._only_reader(value) is not step:
                return None
        view = _inverse(chain, _part(concat, end))
        if view is None or view.grid is not None or view.strides[-1:] != (1,) \
                or view.shape[-1] < FILL_ROW \
                or not self._reads_stored(value, chain[0] if chain else concat,
                                          view.shape[-1] >= FILL_READ_ROW):
            return None
        return value, view

    def _reads_stored(self, value: Value, first: Node, loops: bool) -> bool:
        """Whether every reader of `value` but `first` reads it where `_fill` puts it
        with no copy and no loop split: matmuls (and transposes only they read) in
        place, and, with `loops`, loops once a matmul has read it (its loop is closed
        by then: they could not have joined it; rows of FILL_ROW are long enough for
        `KernelPlan.loop_view`)."""
        readers = self.readers.get(value, [])
        if self.uses.get(value) != len(readers):
            return False
        stored = False
        for node in readers:
            if node.op in STRIDED_READERS:
                stored = True
            elif node is not first and not self._only_multiplies(node) \
                    and not (loops and stored and loop_op(node.op)):
                return False
        return True

    def _only_multiplies(self, node: Node) -> bool:
        """`node` is a matrix transpose that only matmuls read (a weight gradient's
        operand: matmuls read it transposed in place)."""
        readers = self.readers.get(node.outputs[0], [])
        return _is_matrix_transpose(node) and all(n.op == "matmul" for n in readers) \
            and self.uses.get(node.outputs[0]) == len(readers)

    def _fill(self, value: Value, kernel: Kernel) -> None:
        """`kernel` stores `value` into the buffer of the concat that `plan_fills`
        found for it, through a strided view; the first such loop makes the buffer."""
        concat, view = self.fills[value]
        root = concat.outputs[0]
        self.where[value] = Strided(view)
        self.where.setdefault(root, Computed(kernel))
        if root not in kernel.homes:
            kernel.homes.append(root)
        self.fillers.setdefault(root, []).append(kernel)

    def _only_reader(self, value: Value) -> Node | None:
        """The one node reading `value` once, when it is not also a root."""
        readers = self.readers.get(value, [])
        return readers[0] if len(readers) == 1 and self.uses.get(value) == 1 else None

    def _view_chain(self, value: Value) -> list[Node]:
        """The f32 permutes and reshapes that alone read `value` and each other's
        results, in order; empty when any other reader of `value` cannot read a view of
        it in place."""
        chain: list[Node] = []
        if not _stays_f32(value):
            return chain
        readers = self.readers.get(value, [])
        moves = [n for n in readers if n.op in ("permute", "reshape")]
        if len(moves) != 1 or self.uses.get(value, 0) != len(readers) \
                or any(n.op not in STRIDED_READERS for n in readers if n is not moves[0]):
            return chain
        step: Node | None = moves[0]
        while step is not None and step.op in ("permute", "reshape") \
                and _stays_f32(step.outputs[0]):
            chain.append(step)
            step = self._only_reader(step.outputs[0])
        return chain

    def _reads_as_buffer(self, value: Value, chain: list[Node]) -> bool:
        """The chain's result is `value`'s buffer read row-major (no copy needed)."""
        view = strided.whole(value, value)
        for step in chain:
            view = strided.apply(view, step)
            if view is None:
                return False
        return view.contiguous()

    RULES = {
        "const": _add_const,
        "alias": _add_alias,
        "broadcast": _add_broadcast,
        "elementwise": _add_elementwise,
        "reduce": _add_reduce,
        "transpose": _add_transpose,
        "structured": _add_structured,
    }


def lower(graph: Graph, outputs: list[str] | None = None, device: str = "cpu") -> KernelPlan:
    """Group the nodes needed for `outputs` (all by default) and `graph.updates`, each
    computation once (`ir.cse`: the plan's graph may be a copy of `graph`), for
    `device`'s kernels (the CPU's sum its matmuls in one kernel: `plan_sums`; CUDA's
    tiled matmul kernels keep each product theirs)."""
    graph = outer_products(unstacked(merged(graph)))
    names = list(graph.outputs) if outputs is None else list(outputs)
    wanted = {name: graph.outputs[name] for name in names}
    roots = list(wanted.values()) + list(graph.updates.values())
    nodes = live_nodes(graph, roots)
    for node in nodes:
        for value in node.inputs + node.outputs:
            storage(value)  # E-KERNEL-DTYPE (f16) at the node that made it, in a loop too
    program = KernelPlan(graph, [], wanted)
    grouper = _Grouper(program, _count_uses(nodes, roots), _readers(nodes))
    if device == "cpu":
        grouper.plan_sums(nodes)
    grouper.plan_fills(nodes)
    for node in nodes:
        grouper.add(node)
    for value in roots:
        grouper.materialize(value)
    for kernel in list(grouper.open):
        grouper.close(kernel)
    _link(program, roots)
    _update_in_place(program)
    return program


def _count_uses(nodes: list[Node], roots: list[Value]) -> dict[Value, int]:
    """How many node inputs and roots read each value."""
    uses: dict[Value, int] = {}
    for value in [v for n in nodes for v in n.inputs] + roots:
        uses[value] = uses.get(value, 0) + 1
    return uses


def _readers(nodes: list[Node]) -> dict[Value, list[Node]]:
    """The nodes reading each value, in order (once each)."""
    readers: dict[Value, list[Node]] = {}
    for node in nodes:
        for value in dict.fromkeys(node.inputs):
            readers.setdefault(value, []).append(node)
    return readers


def _link(program: KernelPlan, roots: list[Value]) -> None:
    """Number the kernels and find what each reads from and stores to buffers. A
    kernel that stores nothing anyone reads is dropped: a view's copy made for a
    reader that then read the view in place (or read an identity of it)."""
    while True:
        needed_outside: set[Value] = {program.base(v) for v in roots}
        for index, kernel in enumerate(program.kernels):
            kernel.index = index
            kernel.inputs = _buffers_read(program, kernel)
            needed_outside.update(kernel.inputs)
        for kernel in program.kernels:
            # a structured op with several results stores them all: its renderer writes
            # each (sort moves values and indices together)
            kernel.outputs = [v for n in kernel.nodes for v in n.outputs
                              if (v in needed_outside or (kernel.kind == "op"
                                                          and len(n.outputs) > 1))
                              and program.stored_ahead(v, kernel) is None] + kernel.homes
        live = [k for k in program.kernels if k.outputs]
        if len(live) == len(program.kernels):
            break
        program.kernels = live
    _check_order(program)


def _check_order(program: KernelPlan) -> None:
    """Every buffer a kernel reads is a graph input or stored by an earlier kernel:
    a value placed wrongly would otherwise be read before it is written (silently,
    from a reused slot)."""
    written: set[Value] = set(program.graph.inputs)
    for kernel in program.kernels:
        early = [v for v in kernel.inputs if v not in written]
        if early:
            raise AssertionError(f"internal error: kernel {kernel.index} "
                                 f"({', '.join(n.op for n in kernel.nodes)}) reads "
                                 f"{early[0]} before a kernel stores it")
        written.update(kernel.outputs)


def _buffers_read(program: KernelPlan, kernel: Kernel) -> list[Value]:
    """The values whose buffers `kernel` reads, in first-read order."""
    if kernel.view is not None:
        return [program.base(kernel.view.root)]
    mine = kernel.values
    reads: list[Value] = []
    for node in kernel.nodes:
        for v in node.inputs:
            if kernel.kind == "loop":
                v = program.source(v)
            b = program.operand(v, node.op)
            inlined = kernel.kind == "loop" and program.const(b) is not None
            if b not in mine and not inlined and b not in reads:
                reads.append(b)
    return reads


def _update_in_place(program: KernelPlan) -> None:
    """Store an update's new value (a parameter's, an optimizer state's) straight
    into the input it replaces, when the loop making it is the last to read that
    input and reads it only at its own position: no buffer and no copy-back, and
    a loop that reads and writes one array vectorises where two arrays that may
    overlap make LLVM fall back to scalar code (Adam's update ran 7x faster)."""
    outputs = {program.base(v) for v in program.outputs.values()}
    last_read = program.last_reads()
    owner = {v: k for k in program.kernels for v in k.outputs}
    for target, new in program.graph.updates.items():
        value = program.base(new)
        kernel = owner.get(value)
        if kernel is None or target in outputs or last_read.get(target, -1) > kernel.index:
            continue  # made by no kernel, or the old value is still needed after it
        if _can_store_into(program, kernel, value, target):
            program.where[value] = Computed(kernel, into=target)


def _can_store_into(program: KernelPlan, kernel: Kernel, value: Value, target: Value) -> bool:
    """`kernel` is an elementwise loop over `value`'s shape that can store `value`
    over `target` (not already stored over another input) as it reads it."""
    return (kernel.kind == "loop" and kernel.reduce is None and value.type == target.type
            and kernel.domain == value.shape and program.home(value) is value
            and _reads_in_step(kernel, program, target))


def _reads_in_step(kernel: Kernel, program: KernelPlan, target: Value) -> bool:
    """Every load of `target` in this loop is at the loop's own position."""
    for node in kernel.nodes:
        for v in node.inputs:
            read = program.source(v)
            if program.operand(read, node.op) is target \
                    and (read.shape != kernel.domain or program.view(read) is not None):
                return False
    return True
