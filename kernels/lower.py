"""Lowering: group a graph's nodes into kernels. Elementwise nodes of one shape
fuse into one loop (several stores allowed); a reduction absorbs the loop that
feeds it; views (reshape) cost nothing; every other op is its own kernel."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from sexpgpu.kernels import views as strided
from sexpgpu.kernels.views import View

from sexpgpu.ir.graph import Graph, Node, Value, live_nodes
from sexpgpu.ir.ops.registry import get_op
from sexpgpu.ir.shapes import axes as norm_axes


@dataclass(eq=False)
class Kernel:
    """One loop nest (or one structured op) of the program, in run order."""

    kind: str                     # "loop" (fused elementwise, maybe + reduce) | "op"
    nodes: list[Node]             # members in topological order
    domain: tuple[int, ...]       # loop kernels: the iteration space
    reduce: Node | None = None    # loop kernels: the reduction the loop feeds
    view: View | None = None      # a copy of a strided view (kernels.views), read as one
    closed: bool = False
    index: int = -1               # position in the program
    inputs: list[Value] = field(default_factory=list)   # buffers read (view bases)
    outputs: list[Value] = field(default_factory=list)  # values stored to buffers

    @property
    def values(self) -> set[Value]:
        return {v for n in self.nodes for v in n.outputs}

    def spans(self) -> list[str]:
        seen: list[str] = []
        for node in self.nodes:
            if node.span is not None and str(node.span) not in seen:
                seen.append(str(node.span))
        return seen


@dataclass
class KernelPlan:
    """The kernels in run order plus how every value is reached."""

    graph: Graph
    kernels: list[Kernel]
    outputs: dict[str, Value]
    base: dict[Value, Value]      # a view's value -> the value whose buffer it reads
    consts: dict[Value, Node]     # `full` values inlined as literals into loops
    stretch: dict[Value, Value]   # broadcast_to's value -> its input, read broadcast
    flipped: dict[Value, Value]   # a matrix transpose read only by matmuls -> its input
    # an update's new value stored straight into the input it replaces -> that input
    in_place: dict[Value, Value] = field(default_factory=dict)
    # a slice/permute/reshape of a buffer -> where its elements lie (kernels.views);
    # readers that cannot read it in place (reads_in_place) read its copy's buffer
    views: dict[Value, View] = field(default_factory=dict)

    def last_reads(self) -> dict[Value, int]:
        """Each buffer value -> the index of the last kernel that reads it."""
        return {v: kernel.index for kernel in self.kernels for v in kernel.inputs}

    def source(self, value: Value) -> Value:
        """The value a loop loads for `value` (broadcast into its index space)."""
        while value in self.stretch:
            value = self.stretch[value]
        return value


def _is_identity(node: Node) -> bool:
    """stop_gradient, a cast to the same dtype: the value is its input."""
    op = get_op(node.op)
    x, out = node.inputs[0] if node.inputs else None, node.outputs[0]
    return (op.kind == "elementwise" and op.scalar == "x0" and x is not None
            and x.type == out.type)


def _is_matrix_transpose(node: Node) -> bool:
    """A permute swapping only the last two axes."""
    if node.op != "permute":
        return False
    perm = tuple(node.attrs["perm"])
    n = len(perm)
    return n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2)


def reads_in_place(op: str, view: View) -> bool:
    """Whether a kernel of `op` reads `view`'s elements where they lie: a concat
    by index arithmetic, a matmul when strides describe it (BLAS); anything else
    reads the view's copy."""
    return op == "concat" or (op == "matmul" and view.grid is None)


class _Grouper:
    """Walks the nodes once, growing open loop kernels and closing them when a
    value they hold is needed by something that cannot join them."""

    def __init__(self, uses: dict[Value, int] | None = None) -> None:
        self.uses = uses or {}    # how many node inputs and roots read each value
        self.kernels: list[Kernel] = []
        self.owner: dict[Value, Kernel] = {}
        self.base: dict[Value, Value] = {}
        self.consts: dict[Value, Node] = {}
        self.stretch: dict[Value, Value] = {}
        self.flipped: dict[Value, Value] = {}
        self.views: dict[Value, View] = {}      # copied out only when some reader needs it
        self.open: list[Kernel] = []

    def close(self, kernel: Kernel | None) -> None:
        if kernel is not None and not kernel.closed:
            kernel.closed = True
            self.open.remove(kernel)
            self.kernels.append(kernel)

    def read(self, value: Value) -> Value:
        """The value a loop loads for `value`, broadcast into its index space."""
        while value in self.stretch:
            value = self.stretch[value]
        return value

    def resolve(self, value: Value) -> Value:
        """The value whose buffer or loop variable a loop reads for `value`."""
        while value in self.stretch:
            value = self.stretch[value]
        return self.base.get(value, value)

    def materialize(self, value: Value) -> None:
        """Make sure `value` lives in a buffer before a non-loop consumer runs."""
        value = self.base.get(value, value)
        if value in self.views:
            # a view read by something that cannot read it in place: one kernel
            # copies it out of its root's buffer (however many ops made the view);
            # readers that can keep reading it in place
            if value not in self.owner:
                view = self.views[value]
                self.materialize(view.root)
                kernel = Kernel("op", [value.node], value.shape, closed=True, view=view)
                self.kernels.append(kernel)
                self.owner[value] = kernel
            return
        if value in self.flipped:
            # a transpose read by something other than a matmul: now it needs a
            # kernel (matmuls keep reading its source transposed)
            if value not in self.owner:
                self.materialize(self.flipped[value])
                self._emit_op(value.node)
            return
        if value in self.stretch:
            # a broadcast read by a structured op or returned: now it needs a loop
            source = self.stretch.pop(value)
            self.materialize(source)
            kernel = Kernel("loop", [value.node], value.shape, closed=True)
            self.kernels.append(kernel)
            self.owner[value] = kernel
            return
        if value in self.consts:
            # a constant read by a structured op: fill a buffer with it
            node = self.consts.pop(value)
            kernel = Kernel("loop", [node], value.shape, closed=True)
            self.kernels.append(kernel)
            self.owner[value] = kernel
        self.close(self.owner.get(value))

    def _emit_op(self, node: Node) -> None:
        kernel = Kernel("op", [node], node.outputs[0].shape, closed=True)
        self.kernels.append(kernel)
        for v in node.outputs:
            self.owner[v] = kernel

    def add(self, node: Node) -> None:
        op = get_op(node.op)
        out = node.outputs[0]
        inner = self.base.get(node.inputs[0], node.inputs[0]) if node.inputs else None
        if _is_matrix_transpose(node) and inner in self.flipped:
            # the transpose of a transpose (a linear layer's weight in its input
            # gradient) is the original buffer: no copy, no kernel
            source = self.flipped[inner]
            self.base[out] = self.base.get(source, source)
            return
        if self._add_view(node):
            return
        for v in node.inputs:
            view = self.views.get(self.base.get(v, v))
            if (node.op != "matmul" and self.base.get(v, v) in self.flipped) or \
                    (view is not None and not reads_in_place(node.op, view)):
                self.materialize(v)
        if node.op == "full":
            self.consts[out] = node
        elif op.kind == "view" or _is_identity(node):
            # a reshape reads its input's buffer row-major: no kernel at all
            src = node.inputs[0]
            if src in self.stretch:
                if _is_identity(node):
                    self.stretch[out] = src
                    return
                self.materialize(src)  # a reshape of a broadcast needs its elements
            self.base[out] = self.base.get(src, src)
        elif node.op == "broadcast_to":
            # loops read the input broadcast straight into their own index space
            self.stretch[out] = node.inputs[0]
        elif op.kind == "elementwise":
            self._add_elementwise(node)
        elif op.kind == "reduce" and self._fold_batch_sum(node):
            pass
        elif op.kind == "reduce":
            self._add_reduce(node)
        elif _is_matrix_transpose(node) and node.inputs[0] not in self.stretch:
            # matmul reads it transposed in place (BLAS flags / swapped offsets)
            self.flipped[out] = node.inputs[0]
        else:
            for v in node.inputs:
                if node.op == "matmul" and self.base.get(v, v) in self.flipped:
                    v = self.flipped[self.base.get(v, v)]
                view = self.views.get(self.base.get(v, v))
                if view is not None and reads_in_place(node.op, view):
                    v = view.root
                self.materialize(v)
            self._emit_op(node)

    def _add_view(self, node: Node) -> bool:
        """A slice or permute of a buffer, or a slice, permute or reshape of such a
        view, becomes a pending view (kernels.views): matmuls read it in place, and
        it is made a kernel only when something else reads it."""
        if node.op not in ("slice", "permute", "reshape") or node.outputs[0].dtype != "f32":
            return False
        src = node.inputs[0]
        source = self.base.get(src, src)
        if src in self.stretch or source in self.consts or source in self.flipped:
            return False
        view = strided.apply(self.views[source], node) if source in self.views else None
        if view is None:
            if source in self.views:
                self.materialize(source)  # no strides describe it: copy it out, then view that
            elif node.op == "reshape" or _is_matrix_transpose(node):
                return False  # a reshape of a buffer is a plain view; a transpose is flipped
            view = strided.apply(strided.whole(src, source), node)
        self.views[node.outputs[0]] = view
        return True

    def _add_elementwise(self, node: Node) -> None:
        shape = node.outputs[0].shape
        joinable: list[Kernel] = []
        for v in node.inputs:
            kernel = self.owner.get(self.resolve(v))
            if kernel is None or kernel.closed:
                continue
            if kernel.domain == shape and kernel.reduce is None and self.read(v).shape == shape:
                if kernel not in joinable:
                    joinable.append(kernel)
            else:
                self.close(kernel)
        joinable = [k for k in joinable if not k.closed]
        if joinable:
            target = joinable[0]
            for other in joinable[1:]:
                # both open, so neither has been read outside: one loop can hold both
                target.nodes = sorted(target.nodes + other.nodes, key=lambda n: n.id)
                for v in other.values:
                    self.owner[v] = target
                self.open.remove(other)
        else:
            target = Kernel("loop", [], shape)
            self.open.append(target)
        target.nodes.append(node)
        for v in node.outputs:
            self.owner[v] = target

    def _fold_batch_sum(self, node: Node) -> bool:
        """`sum(matmul(permute(a), b), batch axes)` (a weight gradient) joins its
        matmul's kernel: one (m, batch*k) x (batch*k, n) product, no (batch, m, n)."""
        x = node.inputs[0]
        mm = x.node
        if node.op != "sum" or mm is None or mm.op != "matmul" or self.uses.get(x) != 1:
            return False
        kernel = self.owner.get(x)
        a, b = mm.inputs
        batch = x.shape[:-2]
        if (kernel is None or kernel.nodes != [mm] or not batch
                or a.shape[:-2] != batch or b.shape[:-2] != batch
                or any(v.dtype != "f32" for v in (a, b, x, node.outputs[0]))
                or self.base.get(a, a) not in self.flipped or self.base.get(b, b) in self.flipped
                or self.base.get(a, a) in self.views or self.base.get(b, b) in self.views
                or tuple(norm_axes(node.attrs.get("axes"), len(x.shape)))
                != tuple(range(len(batch)))
                or node.outputs[0].shape != x.shape[-2:]):
            return False
        kernel.nodes.append(node)
        self.owner[node.outputs[0]] = kernel
        return True

    def _add_reduce(self, node: Node) -> None:
        x = node.inputs[0]
        kernel = self.owner.get(self.resolve(x))
        if self.read(x).shape != x.shape:
            self.close(kernel)  # x is a broadcast: read its source from a buffer
        for v in node.inputs[1:]:
            self.materialize(v)
        if (kernel is not None and not kernel.closed and kernel.domain == x.shape
                and x.shape and prod(x.shape) > 0):
            # the loop producing x runs inside the reduction's loop nest: every
            # element of the domain is still visited exactly once
            kernel.nodes.append(node)
            kernel.reduce = node
        else:
            self.close(kernel)
            kernel = Kernel("loop", [node], x.shape, reduce=node)
            self.open.append(kernel)
        self.owner[node.outputs[0]] = kernel
        self.close(kernel)


def lower(graph: Graph, outputs: list[str] | None = None) -> KernelPlan:
    """Group the nodes needed for `outputs` (all by default) and `graph.updates`."""
    names = list(graph.outputs) if outputs is None else list(outputs)
    wanted = {name: graph.outputs[name] for name in names}
    roots = list(wanted.values()) + list(graph.updates.values())
    nodes = live_nodes(graph, roots)
    uses: dict[Value, int] = {}
    for value in [v for n in nodes for v in n.inputs] + roots:
        uses[value] = uses.get(value, 0) + 1
    grouper = _Grouper(uses)
    for node in nodes:
        grouper.add(node)
    for value in roots:
        grouper.materialize(value)
    for kernel in list(grouper.open):
        grouper.close(kernel)
    program = KernelPlan(graph, grouper.kernels, wanted, grouper.base, grouper.consts,
                      stretch=grouper.stretch, flipped=grouper.flipped, views=grouper.views)
    _link(program, roots)
    _update_in_place(program)
    return program


def _link(program: KernelPlan, roots: list[Value]) -> None:
    """Number the kernels and find what each reads from and stores to buffers."""
    needed_outside: set[Value] = {program.base.get(v, v) for v in roots}
    for index, kernel in enumerate(program.kernels):
        kernel.index = index
        mine = kernel.values
        reads: list[Value] = []
        if kernel.view is not None:
            root = program.base.get(kernel.view.root, kernel.view.root)
            kernel.inputs = [root]
            needed_outside.add(root)
            continue
        for node in kernel.nodes:
            for v in node.inputs:
                if kernel.kind == "loop":
                    v = program.source(v)
                b = program.base.get(v, v)
                b = program.flipped.get(b, b) if node.op == "matmul" else b
                view = program.views.get(b)
                b = view.root if view is not None and reads_in_place(node.op, view) else b
                b = program.base.get(b, b)
                if b in mine or b in program.consts or b in reads:
                    continue
                reads.append(b)
                needed_outside.add(b)
        kernel.inputs = reads
    for kernel in program.kernels:
        kernel.outputs = [v for n in kernel.nodes for v in n.outputs if v in needed_outside]


def _update_in_place(program: KernelPlan) -> None:
    """Store an update's new value (a parameter's, an optimizer state's) straight
    into the input it replaces, when the loop making it is the last to read that
    input and reads it only at its own position: no buffer and no copy-back, and
    a loop that reads and writes one array vectorises where two arrays that may
    overlap make LLVM fall back to scalar code (Adam's update ran 7x faster)."""
    outputs = {program.base.get(v, v) for v in program.outputs.values()}
    last_read = program.last_reads()
    owner = {v: k for k in program.kernels for v in k.outputs}
    for target, new in program.graph.updates.items():
        value = program.base.get(new, new)
        kernel = owner.get(value)
        if (kernel is None or kernel.kind != "loop" or kernel.reduce is not None
                or value.type != target.type or kernel.domain != value.shape
                or target in outputs or value in program.in_place
                or last_read.get(target, -1) > kernel.index
                or not _reads_in_step(kernel, program, target)):
            continue
        program.in_place[value] = target


def _reads_in_step(kernel: Kernel, program: KernelPlan, target: Value) -> bool:
    """Every load of `target` in this loop is at the loop's own position."""
    for node in kernel.nodes:
        for v in node.inputs:
            read = program.source(v)
            if program.base.get(read, read) is target and read.shape != kernel.domain:
                return False
    return True
