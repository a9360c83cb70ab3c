"""Batch bands: a run of serial CPU kernels cut by rows of the batch, each band the
whole run on its own rows, on its own thread, with no barrier between the kernels.

A recurrent layer's step is a chain of small kernels (a 100x64x256 product, its
gates' loop), each too small to pay for waking the pool at every kernel, and each
needing the last: one thread ran them all while the other core idled. But row i of
each one reads only row i of what the ones before it wrote (and weights they do not
write), so the batch's rows split into bands that never meet: band c runs every
kernel of the run on its rows, one after another, while the other bands do the same
(`kernels.parallel.Launches.bands`: one parallel loop over the bands, the kernels'
chunk functions called in order inside it).

Whether a kernel keeps to its rows is read off the code it runs (its loop nest's
text, before parametrisation): every buffer index is evaluated, as the affine form
it must be, at the corners of the loops; a buffer the run writes must be indexed
by row (row i of the first loop, or of every `q` of its iterations, within row i of
the buffer), and a buffer read whole (a weight, a bias) must be one the run does
not write. Buffers that share bytes in the arena (the memory plan reuses a dead
value's) must not meet across bands. A kernel that fails (a sum over the batch, a
gather) either moves after the run, when nothing the run does later touches what
it reads or writes, or ends the run.

The bits are the serial kernels': an elementwise row is computed alone, and an
sgemm's output element is a dot over the whole inner dimension in any rows' split.
How many bands depends on the batch and the machine's cores, never on the threads a
step gets (one thread runs the bands in turn).
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from itertools import product

from sexpgpu.kernels.source import MASK_HEX, KernelCode

from sexpgpu import env

MIN_BAND_ROWS = 16  # rows of a band at least (an sgemm's row blocks are 8)
MAX_BANDS = 8
# element-operations of a run (its kernels' `work`) from which waking the pool pays,
# and of its kernels on average: a band's fixed costs (a call, an sgemm's setup, the
# cache line two bands share) are each kernel's, so tiny kernels lose in bands (a
# 6-unit LSTM's forward run, 100x6x24 products: 2x slower than serial)
MIN_RUN_WORK = 1 << 20
MIN_KERNEL_WORK = 1 << 16
# ... and from this many kernels reading what one before them in the run wrote: the
# bands pay by the barriers a chain of dependent kernels no longer waits at (a
# recurrence's steps); independent kernels (an optimizer's updates) gain nothing in
# one band each, and the char-GPT's updates in bands ran 2-5% slower, the MLP's
# five-kernel forward chain 2-8%
MIN_RUN_LINKS = 8

_LOOP = re.compile(r"^(\s*)for (\w+) in range\((\d+)\):$")
_ASSIGN = re.compile(r"^\s*(\w+) = (.+)$")
_STORE = re.compile(r"^\s*(\w+)\[")
_VIEW = re.compile(r"^\s*(\w+) = (\w+)\[([^\[\]:]+):([^\[\]:]+)\]$")
_GEMM = re.compile(r"^(gemm_([nt])([nt]))\((.*)\)$")
_TOKEN = re.compile(r"0x[0-9a-f]+|\d+|\w+|\*\*|//|\S")
_AFFINE_OPS = frozenset("+*&()")


def band_count(rows: int) -> int:
    """Bands of a batch of `rows`: one per core, each of MIN_BAND_ROWS rows at least."""
    return min(env.usable_cores(), MAX_BANDS, rows // MIN_BAND_ROWS)


def band_rows(rows: int) -> tuple[int, int]:
    """(rows a band, bands) of a batch of `rows`: the last band the rest."""
    per = -(-rows // max(1, band_count(rows)))
    return per, -(-rows // per)


@dataclass
class Access:
    """How a kernel touches one buffer: by rows of `row` elements (its index moves by
    `row` a batch row and stays inside the row), or whole (`row` 0, read only)."""

    row: int
    stores: bool


@dataclass
class Banded:
    """A kernel that keeps to its rows of a batch of `rows`: its accesses, and how
    many iterations of its first loop make one row (`per_row`); a matmul kernel
    (`gemm`) is cut through its sgemm call instead of a loop."""

    rows: int
    accesses: dict[str, Access]
    per_row: int = 1
    gemm: bool = False
    lines: list[str] = field(default_factory=list)  # the text it was read from


class _Reject(Exception):
    """The kernel's text is not one this analysis can vouch for."""


def _gemm_call(lines: list[str]) -> tuple[str, str, list[str]] | None:
    """A kernel text that is one sgemm call: (its function, "t" when a is stored
    transposed, its 13 arguments: a, a_at, lda, b, b_at, ldb, out, out_at, ldc, m,
    k, n, beta), else None."""
    m = _GEMM.match(lines[0]) if len(lines) == 1 else None
    if m is None:
        return None
    return m.group(1), m.group(2), [x.strip() for x in m.group(4).split(",")]


def rows_of(lines: list[str]) -> list[int]:
    """The batch rows a kernel's text suggests: an sgemm call's rows, or the trip
    count of its first loop."""
    gemm = _gemm_call(lines)
    if gemm is not None:
        m = gemm[2][9]
        return [int(m)] if m.isdigit() else []
    first = _LOOP.match(lines[0]) if lines else None
    return [int(first.group(3))] if first is not None and not first.group(1) else []


def banded(code: KernelCode, lines: list[str], rows: int, sizes: dict[str, int]) -> Banded | None:
    """`code` as a kernel of a batch of `rows` bands, or None: `lines` its serial CPU
    text with literal integers, `sizes` the elements of every buffer (found once for
    each `rows`: the memory plan's order and the step module both ask)."""
    if code.index_checks or rows < 2 or not lines:
        return None
    if rows not in code.bands:
        code.bands[rows] = _banded(code, lines, rows, sizes)
    return code.bands[rows]


def _banded(code: KernelCode, lines: list[str], rows: int, sizes: dict[str, int]) -> Banded | None:
    gemm = _gemm_call(lines)
    try:
        if gemm is not None:
            band = _banded_gemm(gemm[1], gemm[2], rows, sizes)
        else:
            band = _banded_loop(code, lines, rows, sizes)
    except _Reject:
        return None
    if band is not None:
        band.lines = lines
    return band


def _banded_loop(code: KernelCode, lines: list[str], rows: int,
                 sizes: dict[str, int]) -> Banded | None:
    first = _LOOP.match(lines[0])
    if first is None or first.group(1) or not all(line[:1].isspace() for line in lines[1:]):
        return None  # each band runs the first loop's part; nothing may follow it
    trips = int(first.group(3))
    if trips % rows:
        return None
    per_row = trips // rows
    loops, steps = _statements(lines, set(code.params))
    first_var = first.group(2)
    accesses: dict[str, Access] = {}
    for buf, coefs, low, high, stores in _evaluated(loops, steps):
        step = coefs.get(first_var, 0)
        lo, hi = low - min(0, step * (trips - 1)), high - max(0, step * (trips - 1))
        row = _row_of(buf, step, per_row, lo, hi, rows, sizes)
        if row is None or (stores and row == 0):
            return None
        seen = accesses.setdefault(buf, Access(row, False))
        if seen.row != row:
            return None
        seen.stores |= stores
    return Banded(rows, accesses, per_row)


def _row_of(buf: str, step: int, per_row: int, lo: int, hi: int, rows: int,
            sizes: dict[str, int]) -> int | None:
    """The row length by which a buffer indexed `step * v + f` (f in [lo, hi], v the
    first loop's variable, `per_row` of its iterations a batch row) keeps to rows:
    0 when read whole (step 0), None when it strays."""
    if step == 0:
        return 0
    size = sizes[buf]
    if size % rows:
        return None
    row = size // rows
    if step * per_row != row or lo < 0 or step * (per_row - 1) + hi >= row:
        return None
    return row


def _statements(lines: list[str], buffers: set[str]) -> tuple[dict[str, int], list[tuple]]:
    """The loop variables' trip counts and, in order, the text's integer assignments
    ("set", name, expression) and buffer accesses ("at", buffer, index, stores). A
    row view (`d_ = buf[a:b]`, a copy's rows) is an access of its first and last
    elements, and each element read or stored through it one of `buf` at `a` on."""
    loops: dict[str, int] = {}
    steps: list[tuple] = []
    views: dict[str, tuple[str, str]] = {}
    for line in lines:
        view = _VIEW.match(line)
        if view is not None and view.group(2) in buffers and view.group(1) not in buffers \
                and _affine(view.group(3)) and _affine(view.group(4)):
            name, buf, low, high = view.groups()
            views[name] = (buf, low)
            steps += [("at", buf, low, False), ("at", buf, f"({high}) - 1", False)]
            continue
        line = _through_views(line, views)
        text = line.strip()
        loop = _LOOP.match(line)
        if loop is not None:
            var, trips = loop.group(2), int(loop.group(3))
            if loops.setdefault(var, trips) != trips:  # one variable, two ranges
                raise _Reject(text)
            continue
        if text.startswith(("for ", "if ", "elif ", "else", "while ", "return", "break")):
            raise _Reject(text)
        accesses = list(_accesses(text, buffers))
        assign = _ASSIGN.match(line)
        if not accesses and assign is not None and _affine(assign.group(2)):
            steps.append(("set", assign.group(1), assign.group(2)))
            continue
        store = _STORE.match(line)
        for k, (buf, index) in enumerate(accesses):
            stores = k == 0 and store is not None and store.group(1) == buf
            steps.append(("at", buf, index, stores))
    return loops, steps


def _through_views(line: str, views: dict[str, tuple[str, str]]) -> str:
    """`line` with each element of a row view named as its buffer's (`d_[j]` is
    `buf[(a) + j]`); a view named any other way rejects the kernel."""
    for name, (buf, low) in views.items():
        line = re.sub(rf"\b{name}\[", f"{buf}[({low}) + ", line)
        if re.search(rf"\b{name}\b", line):
            raise _Reject(f"{name} used whole")
    return line


def _accesses(text: str, buffers: set[str]):
    """(buffer, index expression) of each `buf[...]` in a line; a buffer named any
    other way (passed whole to a call, sliced) rejects the kernel."""
    for m in re.finditer(r"\b(\w+)\b", text):
        name = m.group(1)
        if name not in buffers:
            continue
        if text[m.end():m.end() + 1] != "[":
            raise _Reject(f"{name} used whole")
        depth, end = 0, m.end()
        for end in range(m.end(), len(text)):
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            if depth == 0:
                break
        index = text[m.end() + 1:end]
        if not _affine(index):
            raise _Reject(f"{name}[{index}]")
        yield name, index


def _affine(expression: str) -> bool:
    """Whether an expression has only integers, names and + * & ( ): an affine index
    (& only ever masks a non-negative one, see MASK_HEX)."""
    tokens = _TOKEN.findall(expression)
    return bool(tokens) and all(t in _AFFINE_OPS or t[0].isalnum() or t[0] == "_"
                                for t in tokens)


def _evaluated(loops: dict[str, int], steps: list[tuple]):
    """Each access's (buffer, coefficient of every loop variable, lowest and highest
    index over the loops, stores), its index checked affine at every corner of the
    loops (a corner the affine form misses rejects the kernel)."""
    names = list(loops)

    def run(point: dict[str, int]) -> list[int]:
        scope, found = dict(point), []
        for step in steps:
            if step[0] == "at":
                found.append(_eval(step[2], scope))
                continue
            try:  # an integer, or a float value's arithmetic (no index may use it)
                scope[step[1]] = _eval(step[2], scope)
            except _Reject:
                scope.pop(step[1], None)
        return found

    origin = run(dict.fromkeys(names, 0))
    coefs = {v: [b - a for a, b in zip(origin, run({**dict.fromkeys(names, 0), v: 1}))]
             for v in names}
    for corner in product(*[(0, loops[v] - 1) for v in names]):
        point = dict(zip(names, corner))
        expected = [o + sum(coefs[v][k] * point[v] for v in names) for k, o in enumerate(origin)]
        if run(point) != expected:
            raise _Reject("not affine")
    accesses = [s for s in steps if s[0] == "at"]
    for k, (_, buf, _, stores) in enumerate(accesses):
        spans = [coefs[v][k] * (loops[v] - 1) for v in names]
        yield (buf, {v: coefs[v][k] for v in names},
               origin[k] + sum(min(0, s) for s in spans),
               origin[k] + sum(max(0, s) for s in spans), stores)


_NO_BUILTINS = {"__builtins__": {}}


@functools.lru_cache(maxsize=1 << 14)
def _compiled(expression: str):
    """An affine expression compiled once (a GRU's step evaluates ~30000 of them)."""
    return compile(expression, "<index>", "eval")


def _eval(expression: str, scope: dict[str, int]) -> int:
    try:
        return int(eval(_compiled(expression), _NO_BUILTINS, scope))  # noqa: S307 - affine
    except NameError as e:
        raise _Reject(str(e)) from None


def _banded_gemm(ta: str, args: list[str], rows: int, sizes: dict[str, int]) -> Banded | None:
    """An sgemm call out = a @ b (+ beta out) of `rows` rows: out by rows, a by rows
    when stored as it is (read whole when transposed), b whole."""
    a, ao, lda, b, _, _, out, oo, ldc, m, k, n, _ = args
    if not all(x.isdigit() for x in (ao, lda, oo, ldc, m, k, n)) or int(m) != rows:
        return None
    k, n = int(k), int(n)
    accesses = {b: Access(0, False)}
    if ta == "t":
        accesses[a] = Access(0, False)
    else:
        row = _row_of(a, int(lda), 1, int(ao), int(ao) + k - 1, rows, sizes)
        if not row or a == b:
            return None
        accesses[a] = Access(row, False)
    row = _row_of(out, int(ldc), 1, int(oo), int(oo) + n - 1, rows, sizes)
    if not row or out in (a, b):
        return None
    accesses[out] = Access(row, True)
    return Banded(rows, accesses, gemm=True)


def band_lines(band: Banded, per: int) -> list[str]:
    """The kernel's text as chunk `chunk_`'s band of `per` batch rows."""
    lines = band.lines
    if band.gemm:
        call, ta, args = _gemm_call(lines)
        a, ao, lda, b, bo, ldb, out, oo, ldc, m, k, n, beta = args
        a_at = f"{ao} + c * {per * (1 if ta == 't' else int(lda)):#x}"
        o_at = f"{oo} + c * {per * int(ldc):#x}"
        rows = f"min({per:#x}, {m} - c * {per:#x})"
        return [f"c = chunk_ & {MASK_HEX}",
                f"{call}({a}, {a_at}, {lda}, {b}, {bo}, {ldb}, {out}, {o_at}, {ldc}, "
                f"{rows}, {k}, {n}, {beta})"]
    var, trips = _LOOP.match(lines[0]).groups()[1:]
    size = per * band.per_row
    return [f"trips_ = {trips}",
            f"first_ = (chunk_ & {MASK_HEX}) * {size:#x}",
            f"for {var}_ in range(min({size:#x}, trips_ - first_)):",
            f"    {var} = first_ + {var}_"] + lines[1:]


# -- runs ------------------------------------------------------------------------

@dataclass
class Run:
    """Kernels (indices into the step's) run in bands, then the ones moved after it."""

    rows: int
    kernels: list[int] = field(default_factory=list)
    moved: list[int] = field(default_factory=list)
    work: int = 0
    links: int = 0  # kernels reading what one before them in the run wrote
    band: dict[int, Banded] = field(default_factory=dict)  # each kernel's rows


Place = tuple[str, int, int]  # (memory it is in: "arena" or an input's name, first byte, end)


def plan_runs(codes: list[KernelCode], bands: list[Banded | None], serial: list[bool],
              places: dict[str, Place], itemsizes: dict[str, int]) -> list[Run]:
    """The runs worth banding, in order, each a stretch of the step's kernels:
    `bands[i]` kernel i's rows (None: not bandable), `serial[i]` whether it is a
    plain serial kernel (one that may move past a run), `places` every buffer's bytes."""
    runs: list[Run] = []
    run: _Open | None = None
    for i, band in enumerate(bands):
        if run is not None and band is not None and band.rows == run.rows and run.admits(band):
            run.add(i, band, codes[i].work)
            continue
        if run is not None and band is None and serial[i] and run.defers(i, codes[i]):
            continue
        if run is not None:
            runs.append(run.run)
        run = _Open(band.rows, places, itemsizes) if band is not None else None
        if run is not None:
            run.add(i, band, codes[i].work)
    if run is not None:
        runs.append(run.run)
    return [r for r in runs if len(r.kernels) > 1 and r.links >= MIN_RUN_LINKS
            and r.work >= MIN_RUN_WORK
            and r.work >= MIN_KERNEL_WORK * len(r.kernels) and band_count(r.rows) >= 2]


class _Open:
    """A run being built: what its kernels touch, and the kernels moved after it."""

    def __init__(self, rows: int, places: dict[str, Place], itemsizes: dict[str, int]):
        self.rows, self.places, self.itemsizes = rows, places, itemsizes
        self.run = Run(rows)
        self.touched: dict[str, Access] = {}
        # where the touched buffers and the moved kernels' lie: a kernel's buffers are
        # checked against those they may meet, not all of them (a GRU's backward run
        # touches ~2000 buffers and moves 80 kernels after itself)
        self.spans = _Spans(places)
        self.moved_writes, self.moved_touches = _Spans(places), _Spans(places)
        per, count = band_rows(rows)
        self.bands = [(c * per, min(rows, c * per + per)) for c in range(count)]

    def add(self, i: int, band: Banded, work: int) -> None:
        self.run.links += any(self.touched.get(buf, Access(0, False)).stores
                              for buf in band.accesses)
        for buf, access in band.accesses.items():
            self.spans.add(buf)
            seen = self.touched.setdefault(buf, Access(access.row, False))
            seen.stores |= access.stores
        self.run.kernels.append(i)
        self.run.band[i] = band
        self.run.work += work

    def admits(self, band: Banded) -> bool:
        """Whether a kernel joins the run: every buffer the run writes read by rows
        alike, no bytes meeting across bands, none a moved kernel needs kept."""
        for buf, access in band.accesses.items():
            seen = self.touched.get(buf)
            if seen is not None and seen.row != access.row and (seen.stores or access.stores):
                return False
        return self._apart(band) and not any(
            (self.moved_touches if access.stores else self.moved_writes).meeting(buf)
            for buf, access in band.accesses.items())

    def _apart(self, band: Banded) -> bool:
        """Whether no bytes the new kernel touches meet, in another band, bytes the run
        or the kernel itself touches, where either side writes them (buffers the memory
        plan overlaps)."""
        for buf, access in band.accesses.items():
            for other in self.spans.meeting(buf) | band.accesses.keys():
                if other == buf:
                    continue
                row, stores = self._joined(other, band)
                if (access.stores or stores) and self._cross(buf, access.row, other, row):
                    return False
        return True

    def _joined(self, buf: str, band: Banded) -> tuple[int, bool]:
        """Buffer `buf`'s row and whether it is written, over the run and the kernel."""
        seen, new = self.touched.get(buf), band.accesses.get(buf)
        if seen is None:
            return new.row, new.stores
        return seen.row, seen.stores or (new is not None and new.stores)

    def _cross(self, a: str, a_row: int, b: str, b_row: int) -> bool:
        """Whether buffer a's bytes in some band meet buffer b's in another (a row of
        0: the whole buffer in every band)."""
        if not self._overlaps(a, b):
            return False
        for (lo, hi), (lo2, hi2) in product(self.bands, self.bands):
            if (lo, hi) == (lo2, hi2):
                continue
            x = self._span(a, a_row, lo, hi)
            y = self._span(b, b_row, lo2, hi2)
            if x[0] < y[1] and y[0] < x[1]:
                return True
        return False

    def _span(self, buf: str, row: int, lo: int, hi: int) -> tuple[int, int]:
        _, start, end = self.places[buf]
        if row == 0:
            return start, end
        size = self.itemsizes[buf] * row
        return start + lo * size, start + hi * size

    def defers(self, i: int, code: KernelCode) -> bool:
        """Move kernel i after the run (it stays after every kernel it followed). The
        kernels that join later must then leave its reads and writes alone: they
        neither write what it reads nor touch what it writes (`admits`)."""
        if code.index_checks:
            return False
        for buf in code.reads:
            self.moved_touches.add(buf)
        for buf in code.writes:
            self.moved_touches.add(buf)
            self.moved_writes.add(buf)
        self.run.moved.append(i)
        return True

    def _overlaps(self, a: str, b: str) -> bool:
        (mem_a, start_a, end_a), (mem_b, start_b, end_b) = self.places[a], self.places[b]
        return mem_a == mem_b and start_a < end_b and start_b < end_a


class _Spans:
    """Buffers by the bytes they lie in, to find those that share bytes with another:
    each memory's buffers sorted by first byte, and its longest buffer's length."""

    def __init__(self, places: dict[str, Place]) -> None:
        self.places = places
        self.starts: dict[str, list[tuple[int, str]]] = {}
        self.longest: dict[str, int] = {}
        self.names: set[str] = set()

    def add(self, buf: str) -> None:
        if buf in self.names:
            return
        self.names.add(buf)
        mem, start, end = self.places[buf]
        bisect.insort(self.starts.setdefault(mem, []), (start, buf))
        self.longest[mem] = max(self.longest.get(mem, 0), end - start)

    def meeting(self, buf: str) -> set[str]:
        """The buffers here that share bytes with `buf` (itself too, when here)."""
        mem, start, end = self.places[buf]
        starts = self.starts.get(mem, [])
        first = bisect.bisect_left(starts, (start - self.longest.get(mem, 0), ""))
        last = bisect.bisect_left(starts, (end, ""))
        return {name for at, name in starts[first:last]
                if self.places[name][2] > start and at < end}
