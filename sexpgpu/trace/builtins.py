"""The tensor builtins of run files (docs/tensor-builtins.md), generated from the op
registry: every Lisp name an entry lists (`OpDef.lisp`) becomes a builtin that reads
its Lisp arguments as the entry's inputs and arguments say, then adds IR through
`sexpgpu.ir.call` at the site of the user's form. CL's arithmetic (`+ exp max ...`)
reaches the same entries through the evaluator's generic-op hook; the facts about
tensors (shape, dim, dtype, tensorp) are written here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.ir.call import ArgError, call
from sexpgpu.ir.ops.opdef import REQUIRED, Arg, Input, OpDef
from sexpgpu.ir.ops.registry import LISP_NAMES
from sexpgpu.ir.shapes import ShapeRuleError
from sexpgpu.lisp.errors import E_ARITY
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, T, keyword, to_py
from sexpgpu.suggest import did_you_mean
from sexpgpu.trace import args as A
from sexpgpu.trace.tensor import TracedTensor, at_site, current, site, wrap

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def registrar(table: dict[str, Callable[..., Any]]) -> Callable[..., Decorator]:
    """A `@builtin("lisp-name", ...)` decorator entering functions into `table`; the
    contract compiler installs each table into its interpreter."""

    def builtin(*names: str) -> Decorator:
        """Register a builtin under its Lisp name(s); shape-rule errors become diagnostics."""

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            checked = _Checked(fn, names[0])
            for name in names:
                table[name] = checked
            return fn

        return deco

    return builtin


BUILTINS: dict[str, Callable[..., Any]] = {}
builtin = registrar(BUILTINS)


class _Checked:
    """A builtin whose shape-rule errors become diagnostics at the caller's line. The
    interpreter reads the arity from `__code__`/`__defaults__`, so they are the wrapped
    function's (wrong argument counts stay E-ARITY)."""

    def __init__(self, fn: Callable[..., Any], name: str):
        self.fn, self.name = fn, name
        self.__code__ = fn.__code__
        self.__defaults__ = fn.__defaults__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any) -> Any:
        try:
            return self.fn(*args)
        except ShapeRuleError as exc:
            span, notes = site()
            raise error(exc.code, f"{self.name}: {exc.message}", span, expected=exc.expected,
                        actual=exc.actual, fix=exc.fix or "check the shapes of the arguments "
                        "at this line (`sexpgpu explain` lists every parameter's shape)",
                        notes=list(notes)) from None


# CL functions that hand non-numbers to the evaluator's generic-op hook (lisp/numbers.py):
# their tensor entries are reached through `generic`, CL keeps the names. Every other
# Lisp name that is also a CL function (floor, round, sort, atan of two) is installed
# over it, calling CL's function when no argument is a tensor (`numbers_first`).
CL_GENERIC = frozenset({"+", "-", "*", "/", "=", "/=", "<", ">", "<=", ">=", "max", "min",
                        "abs", "expt", "sqrt", "exp", "sin", "cos", "tan", "tanh", "log",
                        "asin", "acos", "sinh", "cosh"})
# CL's variadic arithmetic folds over its arguments: (+ a b c) is (+ (+ a b) c)
VARIADIC = frozenset({"+", "-", "*", "/", "max", "min"})
COMPARISONS = frozenset({"<", "<=", ">", ">=", "=", "/=", "=="})


# -- reading Lisp arguments --------------------------------------------------------


class _Mismatch(Exception):
    """A call that does not fit one entry's arguments (another entry may take it)."""

    def __init__(self, message: str, actual: str):
        super().__init__(message)
        self.message, self.actual = message, actual


_RNG = object()      # the trace's seed, taken only once the op is really built
_STREAM = object()   # a fresh random stream, likewise


def _is_nil(x: Any) -> bool:
    return x is NIL or x is None


def _lisp_items(fn: str, x: Any, what: str) -> list[Any]:
    if isinstance(x, list):
        return x
    if x is NIL or type(x) is Cons:
        return to_py(x)
    raise A.fail(f"{fn}: {what} must be a list", expected="a list", actual=A.show(x))


def _tensor(fn: str, x: Any, what: str) -> Any:
    """A tensor argument as call() takes it: its Value, or a plain number."""
    if isinstance(x, TracedTensor):
        return x.value
    if x is T:
        return True
    if A.is_number(x):
        # a single-float literal is the f32 value it holds (0.1 reads as
        # 0.10000000149...), so its constant is that value, exactly
        return x if isinstance(x, int) else float(x)
    raise A.fail(f"{fn}: {what} must be a tensor", expected="a tensor or a number",
                 actual=A.show(x))


def _read_tensor(fn: str, spec: Input, x: Any) -> Any:
    if spec.role in ("list", "rest"):
        return [_tensor(fn, t, spec.name) for t in _lisp_items(fn, x, spec.name)]
    if spec.optional and _is_nil(x):
        return None
    return _tensor(fn, x, spec.name)


# the kinds an integer is read as itself (the common case, answered first)
_INTEGER_KINDS = frozenset({"int", "axis", "int?", "axis?", "sizes"})


def _read_arg(fn: str, arg: Arg, x: Any) -> Any:
    """A Lisp value as plain Python of the argument's kind (E-ARG when it is not one)."""
    if type(x) is int and arg.kind in _INTEGER_KINDS:
        return x
    kind, what = arg.kind, f":{arg.lisp_key}"
    if kind.endswith("?") and _is_nil(x):
        return None
    kind = kind.rstrip("?")
    if kind in ("int", "axis"):
        return A.integer(fn, x, what)
    if kind in ("ints", "shape", "newshape"):
        return A.int_list(fn, x, what)
    if kind == "sizes":
        return x if isinstance(x, int) and not isinstance(x, bool) else A.int_list(fn, x, what)
    if kind == "axes":
        return A.axes(fn, x)
    if kind == "flag":
        return A.flag(x)
    if kind == "number":
        return A.number(fn, x, what)
    if kind == "order":  # a norm's p: a number, :inf or :-inf
        if A.is_keyword(x) and A.kw_name(x) in ("inf", "-inf"):
            return float(A.kw_name(x))
        return A.number(fn, x, what)
    if kind == "numbers":
        return [A.number(fn, v, what) for v in _lisp_items(fn, x, what)]
    if kind == "dtype":
        return A.dtype(fn, x)
    if kind == "choice":
        name = A.kw_name(x) if A.is_keyword(x) else x if isinstance(x, str) else \
            "none" if _is_nil(x) else None
        if name not in arg.choices:
            raise A.fail(f"{fn}: {what} must be one of {' '.join(arg.choices)}",
                         expected=" ".join(f":{c}" for c in arg.choices), actual=A.show(x),
                         fix=did_you_mean(str(name), arg.choices))
        return name
    if kind == "string":
        if not isinstance(x, str):
            raise A.fail(f"{fn}: {what} must be a string", expected="a string",
                         actual=A.show(x))
        return x
    raise AssertionError(f"internal error: argument kind {kind}")


def form(name: str, opdef: OpDef) -> str:
    """The Lisp call form of an entry, as the docs and arity errors show it."""
    tensors = [f"&rest {t.name}" if t.role == "rest" else
               f"[{t.name}]" if t.optional else t.name
               for t in opdef.tensor_inputs if t.role != "rng"]
    positional = [a.name if a.required else f"[{a.name}]" for a in opdef.args
                  if a.positional and a.kind != "stream"]
    if any(t.role == "rest" for t in opdef.tensor_inputs):
        words = positional + tensors
    else:
        words = tensors + positional
    keys = [f":{a.lisp_key} {_literal(a.default)}" for a in opdef.args
            if not a.positional and a.kind != "stream"]
    return "(" + " ".join([name] + words + keys) + ")"


def _literal(v: Any) -> str:
    """An argument's default as Lisp writes it."""
    if v is None or v is False:
        return "nil"
    if v is True:
        return "t"
    if isinstance(v, tuple):
        return "'(" + " ".join(_literal(x).lstrip("'") for x in v) + ")"
    if isinstance(v, str):
        return ":" + v
    if v is REQUIRED:
        return "..."
    return repr(v)


class _Signature:
    """What `_parse` needs of an entry, worked out once per entry rather than per call
    (tracing a GRU makes thousands of calls)."""

    def __init__(self, opdef: OpDef):
        self.keys: dict[str, Arg | Input] = {a.lisp_key: a for a in opdef.args
                                             if a.kind != "stream"}
        self.keys.update({t.name: t for t in opdef.tensor_inputs if t.optional})
        self.ins = [t for t in opdef.tensor_inputs if t.role != "rng"]
        self.positional = [a for a in opdef.args if a.positional and a.kind != "stream"]
        self.rest = any(t.role == "rest" for t in self.ins)
        self.required_in = sum(1 for t in self.ins if not t.optional and t.role != "rest")
        self.required_pos = sum(1 for a in self.positional if a.required)
        self.most = None if self.rest else len(self.ins) + len(self.positional)
        # only its tensors, each given, in order (+, sigmoid, @): no argument to read
        self.plain = (not self.keys and not self.positional and not self.rest
                      and all(t.role != "list" for t in self.ins))
        self.streams = [a.name for a in opdef.args if a.kind == "stream"]
        self.required_args = [a for a in opdef.args if a.required]
        self.rng = any(t.role == "rng" for t in opdef.tensor_inputs)


_SIGNATURES: dict[int, tuple[OpDef, _Signature]] = {}  # id -> (the entry, its signature)


def _signature(opdef: OpDef) -> _Signature:
    known = _SIGNATURES.get(id(opdef))
    if known is None or known[0] is not opdef:
        known = _SIGNATURES[id(opdef)] = (opdef, _Signature(opdef))
    return known[1]


def _parse(fn: str, opdef: OpDef, args: tuple) -> tuple[list[Any], dict[str, Any]]:
    """The tensors and argument values of one call, or _Mismatch when its shape does
    not fit the entry (counts, keywords); E-ARG for a value of the wrong kind."""
    sig = _signature(opdef)
    if sig.plain:
        return _parse_plain(fn, opdef, sig, args)
    keys, ins, positional, rest = sig.keys, sig.ins, sig.positional, sig.rest
    required_in, required_pos, most = sig.required_in, sig.required_pos, sig.most
    lead = 0
    while lead < len(args) and not (isinstance(args[lead], Symbol) and args[lead].is_keyword
                                    and A.kw_name(args[lead]) in keys):
        lead += 1
    if lead < required_in + required_pos or (most is not None and lead > most):
        raise _Mismatch(f"{fn} called with {lead} argument{'s' * (lead != 1)}", str(lead))
    given: list[Any] = list(args[:lead])
    tensors: dict[str, Any] = {}
    values: dict[str, Any] = {}
    if rest:  # einsum: the positional arguments first, then every tensor
        for arg in positional:
            if given:
                values[arg.name] = _read_arg(fn, arg, given.pop(0))
        tensors[ins[0].name] = [_tensor(fn, t, ins[0].name) for t in given]
    else:
        spare = lead - required_in - required_pos  # optional slots filled, in order
        for spec in ins:
            if spec.optional and spare <= 0:
                continue
            spare -= spec.optional
            tensors[spec.name] = _read_tensor(fn, spec, given.pop(0))
        for arg in positional:
            if given and (arg.required or spare > 0):
                spare -= not arg.required
                values[arg.name] = _read_arg(fn, arg, given.pop(0))
    i = lead
    while i < len(args):
        name = A.kw_name(args[i]) if A.is_keyword(args[i]) else None
        if name is None or i + 1 >= len(args):
            raise A.fail(f"{fn}: malformed keyword arguments", expected="(... :key value ...)",
                         actual=" ".join(A.show(a) for a in args[i:]).lower(),
                         fix="give every :key one value")
        spec = keys[name]
        if isinstance(spec, Input):
            tensors.setdefault(spec.name, _read_tensor(fn, spec, args[i + 1]))
        else:
            values.setdefault(spec.name, _read_arg(fn, spec, args[i + 1]))
        i += 2
    for arg in sig.required_args:
        if arg.name not in values:
            raise _Mismatch(f"{fn}: missing :{arg.lisp_key}", "nothing")
    for name in sig.streams:
        values[name] = _STREAM
    out = [_RNG if t.role == "rng" else tensors.get(t.name) for t in opdef.tensor_inputs]
    return out, values


def _parse_plain(fn: str, opdef: OpDef, sig: _Signature,
                 args: tuple) -> tuple[list[Any], dict[str, Any]]:
    """`_parse` of an entry that takes only its tensors (most calls of a trace): what
    the general walk gives for it, without the walk."""
    if len(args) != sig.required_in:
        n = len(args)
        raise _Mismatch(f"{fn} called with {n} argument{'s' * (n != 1)}", str(n))
    tensors = [_tensor(fn, x, spec.name) for spec, x in zip(sig.ins, args)]
    values = {name: _STREAM for name in sig.streams}
    if sig.rng:
        given = iter(tensors)
        return [_RNG if t.role == "rng" else next(given) for t in opdef.tensor_inputs], values
    return tensors, values


def _unknown_keyword(fn: str, entries: list[OpDef], args: tuple) -> Exception | None:
    """E-ARG for a keyword no entry of `fn` takes (with the nearest one)."""
    known = sorted({a.lisp_key for e in entries for a in e.args if a.kind != "stream"}
                   | {t.name for e in entries for t in e.tensor_inputs if t.optional})
    for x in args:
        if isinstance(x, Symbol) and x.is_keyword and A.kw_name(x) not in known and known:
            name = A.kw_name(x)
            return A.fail(f"{fn}: unknown keyword :{name}",
                          expected=" ".join(f":{k}" for k in known), actual=f":{name}",
                          fix=did_you_mean(name, known))
    return None


def _arity(fn: str, entries: list[OpDef], actual: str) -> Exception:
    span, notes = site()
    forms = " or ".join(form(fn, e) for e in entries)
    return error(E_ARITY, f"{fn}: wrong number of arguments", span, expected=forms,
                 actual=actual, fix=f"call it as {forms}", notes=list(notes))


def resolve(fn: str, entries: list[OpDef], args: tuple) -> tuple[OpDef, list, dict]:
    """The entry of `fn` this call fits (entries differ by arity), with its inputs."""
    fits = []
    for opdef in entries:
        try:
            fits.append((opdef, *_parse(fn, opdef, args)))
        except _Mismatch as exc:
            last = exc
            continue
        break
    if fits:
        return fits[0]
    unknown = _unknown_keyword(fn, entries, args)
    if unknown is not None:
        raise unknown
    raise _arity(fn, entries, last.actual if len(entries) == 1 else
                 f"({fn} {' '.join(A.show(a) for a in args)})".lower())


def dispatch(fn: str, args: tuple) -> Any:
    """Call the registry entry the Lisp name `fn` means for these arguments."""
    opdef, tensors, values = resolve(fn, LISP_NAMES[fn], args)
    trace = current()
    if opdef.train_only and trace.mode != "train":
        return args[0]  # the identity outside training (dropout in evaluate graphs)
    with at_site(trace) as g:
        if _RNG in tensors:
            tensors = [trace.rng_input() if t is _RNG else t for t in tensors]
        if values:
            values = {k: trace.next_stream() if v is _STREAM else v for k, v in values.items()}
        try:
            out = call(g, opdef, tensors, values, promote=True)
        except ArgError as exc:
            raise A.fail(f"{fn}: {exc.message}", expected=exc.expected,
                         actual=exc.actual) from None
        except ShapeRuleError as exc:  # outside any one node: a bad axis, a dtype
            span, notes = site()
            raise error(exc.code, f"{fn}: {exc.message}", span or g._span,
                        expected=exc.expected, actual=exc.actual,
                        fix=exc.fix or "check the shapes of the arguments at this line",
                        notes=list(notes or g._notes)) from None
    return _result(opdef, out)


def _result(opdef: OpDef, out: Any) -> Any:
    """Values as Lisp sees them: a tensor, multiple values, or a list of tensors."""
    if opdef.returns == "list":
        return A.to_lisp_list([TracedTensor(v) for v in out])
    if isinstance(out, tuple):
        return MV(TracedTensor(v) for v in out)
    return TracedTensor(out)


def _make(name: str) -> Callable[..., Any]:
    def tensor_builtin(*args: Any) -> Any:
        return dispatch(name, args)

    entries = LISP_NAMES[name]
    tensor_builtin.__name__ = name
    tensor_builtin.__doc__ = "; ".join(f"{form(name, e)}: {e.doc}" for e in entries)
    return tensor_builtin


for _name in LISP_NAMES:
    if _name not in CL_GENERIC:
        builtin(_name)(_make(_name))


def numbers_first(fn: Callable[..., Any], previous: Any, interp: Any) -> Callable[..., Any]:
    """A tensor builtin over a CL function of the same name (floor, round, sort): the
    CL function unless an argument is a tensor."""

    def either(*args: Any) -> Any:
        if any(isinstance(a, TracedTensor) for a in args):
            return fn(*args)
        n = len(args)
        if n < previous.min or (previous.max is not None and n > previous.max):
            want = f"{previous.min}" if previous.max == previous.min else (
                f"at least {previous.min}" if previous.max is None
                else f"{previous.min} to {previous.max}")
            raise error(E_ARITY, f"{previous.name.lower()} called with {n} argument"
                        f"{'s' if n != 1 else ''}", expected=f"{want} argument(s)",
                        actual=str(n), fix=f"call {previous.name.lower()} with {want} argument(s)")
        return previous.fn(interp, *args) if previous.interp_arg else previous.fn(*args)

    return either


# -- CL's arithmetic on tensors (the evaluator's generic-op hook) -------------------


def generic(name: str, *args: Any) -> Any:
    """`+ - * / expt max min abs exp log sqrt < ...` when an argument is a tensor."""
    name = name.lower()
    if name == "log" and len(args) == 2:  # CL's (log x base)
        return dispatch("/", (dispatch("log", args[:1]), dispatch("log", args[1:])))
    if name not in LISP_NAMES or not args:
        raise A.fail(f"{name}: not defined on tensors", expected="a number",
                     actual=" ".join(A.show(a) for a in args))
    if name in COMPARISONS and len(args) != 2:
        raise A.fail(f"{name}: compares two tensors", expected="2 arguments",
                     actual=str(len(args)))
    # (two arguments, the usual call, need no folding)
    if name in VARIADIC and len(args) != 2 and not any(A.is_keyword(a) for a in args):
        if len(args) == 1 and name in ("+", "*", "max", "min"):
            return args[0]
        if len(args) > 2:
            result = args[0]
            for arg in args[1:]:
                result = dispatch(name, (result, arg))
            return result
    return dispatch(name, args)


# -- facts about tensors ---------------------------------------------------------


@builtin("shape")
def shape(x: Any) -> Any:
    return A.to_lisp_list(_need("shape", x).shape)


@builtin("dim")
def dim(x: Any, axis: Any) -> int:
    t = _need("dim", x)
    ax = A.integer("dim", axis, "axis")
    if not -len(t.shape) <= ax < len(t.shape):
        raise A.fail(f"dim: axis {ax} out of range", expected=f"an axis of {_fmt(t.shape)}",
                     actual=str(ax))
    return t.shape[ax]


@builtin("dtype")
def dtype(x: Any) -> Any:
    return keyword(_need("dtype", x).dtype.upper())


@builtin("tensorp")
def tensorp(x: Any) -> Any:
    return A.boolean(isinstance(x, TracedTensor))


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + " ".join(str(d) for d in shape) + ")"


def _need(fn: str, x: Any) -> TracedTensor:
    if not isinstance(x, TracedTensor):
        raise A.fail(f"{fn}: expected a tensor", expected="a tensor", actual=A.show(x))
    return x


__all__ = ["BUILTINS", "CL_GENERIC", "dispatch", "form", "generic", "numbers_first", "wrap"]
