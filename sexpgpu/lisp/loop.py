"""The `loop` macro's common clauses, interpreted directly (parsed once per form).

Supported: named, with, for/as (in on across = then from upfrom downfrom to upto below
downto above by, being the hash-keys/hash-values of ... using), repeat, while, until,
always, never, thereis, collect append nconc sum count maximize minimize [into],
when/if/unless ... [and ...] [else ...] [end], do, return, initially, finally.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.closures import Env
from sexpgpu.lisp.errors import BlockExit
from sexpgpu.lisp.forms import syntax_error
from sexpgpu.lisp.numbers import add2, sub2
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import special
from sexpgpu.lisp.types import NIL, Char, Cons, Symbol, T, intern, to_py

_DEFAULT = object()  # the unnamed accumulation


class _End(Exception):
    """Leave the loop normally (run finally, return the accumulation)."""


class _Finish(Exception):
    """(loop-finish): leave the loop whose tag it carries normally."""

    def __init__(self, tag: object):
        self.tag = tag


_LOOP_KEY = object()  # the environment key under which a loop's body finds its loop


@special("LOOP-FINISH")
def sf_loop_finish(interp, form, env):
    """(loop-finish): end the innermost enclosing loop as if it ran out (finally runs)"""
    e = env
    while e is not None:
        tag = e.vars.get(_LOOP_KEY)
        if tag is not None:
            raise _Finish(tag)
        e = e.parent
    raise syntax_error(form, "loop-finish outside a loop", "use it inside a loop's body")


class _Done(Exception):
    """Leave the loop returning a value directly, skipping finally (always/never)."""

    def __init__(self, value: Any):
        self.value = value


def _name(x: Any) -> str:
    return x.name if isinstance(x, Symbol) else ""


def _destructure(pattern: Any, value: Any, vars: dict) -> None:
    if pattern is NIL:
        return
    if type(pattern) is Symbol:
        vars[pattern] = value
        return
    if type(pattern) is Cons:
        _destructure(pattern.car, value.car if type(value) is Cons else NIL, vars)
        _destructure(pattern.cdr, value.cdr if type(value) is Cons else NIL, vars)


def _pattern_vars(pattern: Any, out: list) -> list:
    if type(pattern) is Symbol and pattern is not NIL:
        out.append(pattern)
    elif type(pattern) is Cons:
        _pattern_vars(pattern.car, out)
        _pattern_vars(pattern.cdr, out)
    return out


class _Parser:
    def __init__(self, form: Cons):
        self.form = form
        self.items = to_py(form.cdr)
        self.pos = 0

    def more(self) -> bool:
        return self.pos < len(self.items)

    def peek(self) -> str:
        return _name(self.items[self.pos]) if self.more() else ""

    def next(self) -> Any:
        if not self.more():
            raise syntax_error(self.form, "loop clause is missing a form",
                               "see docs/control.md for the loop clauses")
        item = self.items[self.pos]
        self.pos += 1
        return item

    def accept(self, *words: str) -> str | None:
        if self.more() and self.peek() in words:
            self.pos += 1
            return self.items[self.pos - 1].name
        return None


class _Plan:
    def __init__(self) -> None:
        self.name: Any = NIL
        self.with_: list = []  # groups joined by AND, each a list of (pattern, form)
        self.steps: list = []  # ("for", driver) / ("body", clause) in order
        self.initially: list = []
        self.finally_: list = []
        self.accumulators: list = []  # variable names for `into`


_ACCUM = {"COLLECT": "collect", "COLLECTING": "collect", "APPEND": "append",
          "APPENDING": "append", "NCONC": "nconc", "NCONCING": "nconc", "SUM": "sum",
          "SUMMING": "sum", "COUNT": "count", "COUNTING": "count", "MAXIMIZE": "max",
          "MAXIMIZING": "max", "MINIMIZE": "min", "MINIMIZING": "min"}


def _parse(form: Cons) -> _Plan:
    p = _Parser(form)
    plan = _Plan()
    if p.more() and type(p.items[0]) is Cons:
        # simple loop: (loop form...) repeats its body forever
        plan.steps.append(("body", ("do", list(p.items))))
        return plan
    while p.more():
        word = p.peek()
        p.pos += 1
        if word == "NAMED":
            if p.pos != 1:
                raise syntax_error(form, "loop named must come first",
                                   "write (loop named name clause...)")
            plan.name = p.next()
        elif word == "WITH":
            _parse_with(p, plan)
        elif word in ("FOR", "AS"):
            _parse_fors(p, plan, form)
        elif word == "REPEAT":
            plan.steps.append(("repeat", p.next()))
        elif word in ("INITIALLY", "FINALLY"):
            forms = _compound_forms(p)
            if not forms:
                raise syntax_error(form, f"loop {word.lower()} needs at least one form",
                                   f"write {word.lower()} (form...)")
            (plan.initially if word == "INITIALLY" else plan.finally_).extend(forms)
        elif word in ("WHILE", "UNTIL", "ALWAYS", "NEVER", "THEREIS"):
            plan.steps.append(("body", (word.lower(), p.next())))
        else:
            p.pos -= 1
            plan.steps.append(("body", _parse_clause(p, form)))
    _check_unique_vars(plan, form)
    return plan


def _check_unique_vars(plan: _Plan, form: Cons) -> None:
    """A variable bound twice by one loop's with and for clauses is an error."""
    names: list = []
    for group in plan.with_:
        for var, _ in group:
            _pattern_vars(var, names)
    for kind, item in plan.steps:
        if kind == "for":
            _pattern_vars(item["var"], names)
            if item.get("other") is not None:
                names.append(item["other"])
    seen = set()
    for name in names:
        if name in seen:
            raise syntax_error(form, f"loop binds {prin1_to_string(name)} twice",
                               "give each with and for variable its own name")
        seen.add(name)


def _parse_with(p: _Parser, plan: _Plan) -> None:
    """with var [= init] {and var [= init]}... (the AND-joined inits are evaluated
    before any of their variables is bound)"""
    group = []
    while True:
        var = p.next()
        declared = _skip_type(p)
        # a typed variable without an init starts at that type's zero, as in SBCL
        default = _TYPE_ZEROS.get(getattr(declared, "name", None), NIL)
        init = p.next() if p.accept("=") else default
        group.append((var, init))
        if not p.accept("AND"):
            break
    plan.with_.append(group)


def _parse_fors(p: _Parser, plan: _Plan, form: Cons) -> None:
    """for-clauses joined by AND: one group, stepped in parallel."""
    group = len(plan.steps)
    while True:
        spec = _parse_for(p, form)
        spec["group"] = group
        plan.steps.append(("for", spec))
        if not p.accept("AND"):
            break


def _compound_forms(p: _Parser) -> list:
    forms = []
    while p.more() and type(p.items[p.pos]) is Cons:
        forms.append(p.next())
    return forms


def _parse_clause(p: _Parser, form: Cons) -> tuple:
    word = p.peek()
    p.pos += 1
    if word in ("DO", "DOING"):
        forms = _compound_forms(p)
        if not forms:
            raise syntax_error(form, f"loop {word.lower()} needs at least one form",
                               "write do (form...)")
        return ("do", forms)
    if word == "RETURN":
        return ("return", p.next())
    if word in _ACCUM:
        expr = p.next()
        into = p.next() if p.accept("INTO") else _DEFAULT
        _skip_type(p)  # sum x of-type fixnum: the type changes nothing here
        return ("accum", _ACCUM[word], expr, into)
    if word in ("WHEN", "IF", "UNLESS"):
        test = p.next()
        then = [_parse_clause(p, form)]
        while p.accept("AND"):
            then.append(_parse_clause(p, form))
        other = []
        if p.accept("ELSE"):
            other.append(_parse_clause(p, form))
            while p.accept("AND"):
                other.append(_parse_clause(p, form))
        p.accept("END")
        return ("if", test, word == "UNLESS", then, other)
    shown = word.lower() or prin1_to_string(p.items[p.pos - 1])
    raise syntax_error(form, f"unknown loop clause {shown}",
                       "see docs/control.md for the loop clauses")


_SIMPLE_TYPES = ("FIXNUM", "FLOAT", "INTEGER", "NUMBER")
_TYPE_ZEROS = {"FIXNUM": 0, "INTEGER": 0, "NUMBER": 0}


def _skip_type(p: _Parser) -> Any:
    """The optional type of a loop variable (of-type spec, or fixnum/float/...): skipped,
    returned so a with-clause can start the variable at the type's zero."""
    if p.accept("OF-TYPE"):
        return p.next()
    if p.peek() in _SIMPLE_TYPES:
        return p.next()
    return None


def _parse_for(p: _Parser, form: Cons) -> dict:
    var = p.next()
    _skip_type(p)
    word = p.peek()
    p.pos += 1
    if word == "IN" or word == "ON":
        source = p.next()
        by = p.next() if p.accept("BY") else None
        return {"kind": word.lower(), "var": var, "source": source, "by": by}
    if word == "ACROSS":
        return {"kind": "across", "var": var, "source": p.next()}
    if word == "=":
        init = p.next()
        then = p.next() if p.accept("THEN") else None
        return {"kind": "=", "var": var, "init": init, "then": then}
    if word == "BEING":
        return _parse_being(p, var)
    if word in _ARITH_WORDS:
        p.pos -= 1
        return _parse_arith(p, var)
    raise syntax_error(form, f"unknown loop for-clause word {word.lower()}",
                       "write for x in list / for i from 0 below n / for x = init then step")


def _parse_being(p: _Parser, var: Any) -> dict:
    """for x being the elements of v / the hash-keys of h [using (hash-value v)]"""
    p.accept("THE", "EACH")
    what = p.next().name
    if what in ("ELEMENT", "ELEMENTS"):
        p.accept("OF", "IN")
        return {"kind": "across", "var": var, "source": p.next()}
    p.accept("OF", "IN")
    table = p.next()
    other = None
    if p.accept("USING"):
        using = p.next()
        other = to_py(using)[1]
    keys = what in ("HASH-KEY", "HASH-KEYS")
    return {"kind": "hash", "var": var, "source": table, "keys": keys, "other": other}


_ARITH_WORDS = ("FROM", "UPFROM", "DOWNFROM", "TO", "UPTO", "BELOW", "DOWNTO", "ABOVE", "BY")


def _parse_arith(p: _Parser, var: Any) -> dict:
    """for i [from|upfrom|downfrom a] [to|upto|below|downto|above b] [by c], any order"""
    spec = {"kind": "arith", "var": var, "start": 0, "end": None, "by": 1,
            "down": False, "inclusive": True, "order": []}
    up = down = False
    while p.peek() in _ARITH_WORDS:
        key = p.next().name
        value = p.next()
        slot = ("start" if key in ("FROM", "UPFROM", "DOWNFROM")
                else "by" if key == "BY" else "end")
        if slot == "start" and slot in spec["order"]:  # a later to or by wins, as in SBCL
            raise syntax_error(p.form, f"loop for-clause repeats {key.lower()}",
                               "give from, to and by at most once each")
        spec["order"].append(slot)  # the forms are evaluated in the order written
        spec[slot] = value
        up = up or key in ("UPFROM", "UPTO", "BELOW")
        down = down or key in ("DOWNFROM", "DOWNTO", "ABOVE")
        if slot == "end":
            spec["inclusive"] = key in ("TO", "UPTO", "DOWNTO")
    if up and down:
        raise syntax_error(p.form, "loop for-clause counts both up and down",
                           "use from/upfrom/to/upto/below or downfrom/downto/above")
    spec["down"] = down
    return spec


class _Driver:
    """Runtime state of one for-clause: first() then next(), each False when done."""

    def __init__(self, interp, spec: dict, vars: dict, env: Env):
        self.interp = interp
        self.spec = spec
        self.vars = vars
        self.env = env
        self.state: Any = None

    def first(self) -> bool:
        s = self.spec
        kind = s["kind"]
        ev = self.interp.eval1
        if kind in ("in", "on"):
            self.state = ev(s["source"], self.env)
            self.step_fn = ev(s["by"], self.env) if s["by"] is not None else None
            return self._bind_list()
        if kind == "across":
            seq = ev(s["source"], self.env)
            if type(seq) is str:
                self.state = [Char(c) for c in seq]
            else:
                self.state = to_py(seq) if type(seq) is Cons or seq is NIL else list(seq)
            self.index = 0
            return self._bind_across()
        if kind == "=":
            _destructure(s["var"], ev(s["init"], self.env), self.vars)
            return True
        if kind == "hash":
            table = ev(s["source"], self.env)
            self.state = list(table.table.values())
            self.index = 0
            return self._bind_hash()
        values = {"start": 0, "end": None, "by": 1}
        for slot in s["order"]:
            values[slot] = ev(s[slot], self.env)
        self.end, self.by = values["end"], values["by"]
        self.value = values["start"]
        if s["var"] is not NIL:
            self.vars[s["var"]] = self.value
        return self._in_range(self.value)

    def pending(self) -> Any:
        """For `=`: the next value, computed before parallel (AND) clauses step."""
        form = self.spec["then"] if self.spec["then"] is not None else self.spec["init"]
        return self.interp.eval1(form, self.env)

    def next(self) -> bool:
        s = self.spec
        kind = s["kind"]
        if kind in ("in", "on"):
            if self.step_fn is not None:
                self.state = self.interp.call1(self.step_fn, self.state)
            else:
                self.state = self.state.cdr if type(self.state) is Cons else NIL
            return self._bind_list()
        if kind == "across":
            self.index += 1
            return self._bind_across()
        if kind == "=":
            form = s["then"] if s["then"] is not None else s["init"]
            _destructure(s["var"], self.interp.eval1(form, self.env), self.vars)
            return True
        if kind == "hash":
            self.index += 1
            return self._bind_hash()
        current = self.value if s["var"] is NIL else self.vars[s["var"]]  # body may setq it
        value = sub2(current, self.by) if s["down"] else add2(current, self.by)
        self.value = value
        if s["var"] is not NIL:
            self.vars[s["var"]] = value
        return self._in_range(value)

    def _in_range(self, value) -> bool:
        s = self.spec
        if self.end is None:
            return True
        if s["down"]:
            return value >= self.end if s["inclusive"] else value > self.end
        return value <= self.end if s["inclusive"] else value < self.end

    def _bind_list(self) -> bool:
        if type(self.state) is not Cons:
            return False
        value = self.state.car if self.spec["kind"] == "in" else self.state
        _destructure(self.spec["var"], value, self.vars)
        return True

    def _bind_across(self) -> bool:
        if self.index >= len(self.state):
            return False
        _destructure(self.spec["var"], self.state[self.index], self.vars)
        return True

    def _bind_hash(self) -> bool:
        if self.index >= len(self.state):
            return False
        key, value = self.state[self.index]
        s = self.spec
        _destructure(s["var"], key if s["keys"] else value, self.vars)
        if s["other"] is not None:
            self.vars[s["other"]] = value if s["keys"] else key
        return True


class _Accum:
    __slots__ = ("kind", "value", "tail", "var", "seen")

    def __init__(self, kind: str, var: Any):
        self.kind = kind
        self.var = var
        self.tail = None
        # maximize/minimize of nothing is 0 in SBCL (its variable starts there)
        self.value = {"sum": 0, "count": 0, "max": 0, "min": 0}.get(kind, NIL)
        self.seen = False


IT = intern("IT")


def _run_clause(interp, clause: tuple, env: Env, vars: dict, accums: dict,
                it: Any = None) -> None:
    """Run a body clause; `it` is the value a when/if test gave (for `collect it`)."""
    kind = clause[0]
    if kind == "do":
        for f in clause[1]:
            interp.eval(f, env)
    elif kind == "accum":
        _, how, expr, into = clause
        value = it if it is not None and expr is IT else interp.eval1(expr, env)
        acc = accums.get(into)
        if acc is None:
            acc = accums[into] = _Accum(how, into)
        _accumulate(interp, acc, how, value)
        if into is not _DEFAULT:
            vars[into] = acc.value
    elif kind == "if":
        _, test, negate, then, other = clause
        tested = interp.eval1(test, env)
        result = tested is not NIL
        # `it` names the test's value in the first clause only; later ones see variable IT
        for i, sub in enumerate(then if result != negate else other):
            _run_clause(interp, sub, env, vars, accums, tested if result and not i else None)
    elif kind == "return":
        if it is not None and clause[1] is IT:
            raise _Done(it)
        raise _Done(interp.eval(clause[1], env))
    else:
        _run_test(interp, kind, clause[1], env)


def _run_test(interp, kind: str, form: Any, env: Env) -> None:
    """while/until end the loop normally; always/never/thereis return a value at once."""
    if kind == "while":
        if interp.eval1(form, env) is NIL:
            raise _End
    elif kind == "until":
        if interp.eval1(form, env) is not NIL:
            raise _End
    elif kind == "always":
        if interp.eval1(form, env) is NIL:
            raise _Done(NIL)
    elif kind == "never":
        if interp.eval1(form, env) is not NIL:
            raise _Done(NIL)
    elif kind == "thereis":
        value = interp.eval1(form, env)
        if value is not NIL:
            raise _Done(value)


def _accumulate(interp, acc: _Accum, how: str, value: Any) -> None:
    if how in ("collect", "append", "nconc"):
        _collect(acc, how, value)
    elif how == "sum":
        acc.value = interp.apply(interp.functions[intern("+")], [acc.value, value])
    elif how == "count":
        if value is not NIL:
            acc.value += 1
    elif how in ("max", "min"):
        better = interp.functions[intern(">" if how == "max" else "<")]
        if not acc.seen or interp.apply(better, [value, acc.value]) is not NIL:
            acc.value = value
            acc.seen = True


def _collect(acc: _Accum, how: str, value: Any) -> None:
    """Append to the list being built: one element (collect) or a list's elements
    (append, nconc: copied, with a dotted tail kept as the new tail)."""
    items = [value] if how == "collect" else to_py(value)
    last = NIL
    if how != "collect":
        node = value
        while type(node) is Cons:
            node = node.cdr
        last = node
    for item in items:
        cell = Cons(item, NIL)
        if acc.tail is None:
            acc.value = cell
        else:
            acc.tail.cdr = cell
        acc.tail = cell
    if last is not NIL and acc.tail is not None:
        acc.tail.cdr = last
    elif last is not NIL and acc.tail is None:
        acc.value = last


@special("LOOP")
def sf_loop(interp, form, env):
    """(loop clause...) — see the module docstring for the clauses"""
    cached = interp.expansions.get(id(form))
    if cached is None or cached[0] is not form:
        cached = (form, None, _parse(form))
        interp.expansions[id(form)] = cached
    plan: _Plan = cached[2]
    tag = object()
    run = _Run(interp, plan, Env({plan.name.bkey: tag, _LOOP_KEY: tag}, env))
    try:
        for f in plan.initially:
            interp.eval(f, run.env)
        try:
            run.iterate()
        except _End:
            pass
        except _Finish as finish:
            if finish.tag is not tag:
                raise
        for f in plan.finally_:
            interp.eval(f, run.env)
        return run.result()
    except _Done as done:
        return done.value
    except BlockExit as exit_:
        if exit_.tag is tag:
            return exit_.value
        raise


class _Run:
    """One execution of a loop: its variables (with-clauses bound, for-variables and
    accumulations declared at creation), for-clause drivers and repeat counters."""

    def __init__(self, interp, plan: _Plan, block_env: Env):
        self.interp = interp
        self.plan = plan
        self.vars: dict = {}
        self.env = Env(self.vars, block_env)
        self.accums: dict = {}
        self.drivers: dict = {}
        self.repeats: dict = {}
        for group in plan.with_:
            values = [interp.eval1(init, self.env) if init is not NIL else NIL
                      for _, init in group]
            for (var, _), value in zip(group, values):
                _destructure(var, value, self.vars)
        for kind, item in plan.steps:
            if kind == "for":
                for v in _pattern_vars(item["var"], []):
                    self.vars.setdefault(v, NIL)
            elif kind == "body":
                _declare_into(item, self.vars, self.accums)

    def iterate(self) -> None:
        """Run the clauses in order, again and again, until one ends the loop (_End)."""
        interp, plan, drivers, repeats = self.interp, self.plan, self.drivers, self.repeats
        first = True
        while True:
            interp.steps += 1
            if interp.steps > interp.checkpoint:
                interp.check_limits()
            for index, (kind, item) in enumerate(plan.steps):
                if kind == "for":
                    if first:
                        driver = drivers[index] = _Driver(interp, item, self.vars, self.env)
                        alive = driver.first()
                    elif item["group"] != index:
                        continue  # stepped with the first clause of its AND group
                    else:
                        alive = _step_group(plan, drivers, index)
                    if not alive:
                        raise _End
                elif kind == "repeat":
                    if first:
                        repeats[index] = interp.eval1(item, self.env)
                    if repeats[index] <= 0:
                        raise _End
                    repeats[index] -= 1
                else:
                    _run_clause(interp, item, self.env, self.vars, self.accums)
            first = False

    def result(self) -> Any:
        """The value of a loop that ended normally: its unnamed accumulation, else T for
        always/never, else NIL."""
        default = self.accums.get(_DEFAULT)
        if default is not None:
            return default.value
        if any(kind == "body" and item[0] in ("always", "never")
               for kind, item in self.plan.steps):
            return T
        return NIL


def _step_group(plan: _Plan, drivers: dict, start: int) -> bool:
    """Step the for-clauses joined by AND to the one at `start`, in parallel: every
    `= ... then` value is computed before any variable of the group changes."""
    members = [i for i in range(start, len(plan.steps))
               if plan.steps[i][0] == "for" and plan.steps[i][1]["group"] == start]
    if len(members) == 1:
        return drivers[start].next()
    values = {i: drivers[i].pending() for i in members if plan.steps[i][1]["kind"] == "="}
    for i in members:
        if i not in values and not drivers[i].next():
            return False
    for i, value in values.items():
        _destructure(plan.steps[i][1]["var"], value, drivers[i].vars)
    return True


def _declare_into(clause: tuple, vars: dict, accums: dict) -> None:
    """Create the accumulations up front: a sum over no iterations is still 0."""
    if clause[0] == "accum":
        if clause[3] is _DEFAULT:
            accums.setdefault(_DEFAULT, _Accum(clause[1], _DEFAULT))
        else:
            start = {"sum": 0, "count": 0, "max": 0, "min": 0}.get(clause[1], NIL)
            vars.setdefault(clause[3], start)
    elif clause[0] == "if":
        for sub in clause[3] + clause[4]:
            _declare_into(sub, vars, accums)
