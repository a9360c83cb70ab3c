"""Control special forms: cond, case and typecase (and their e- forms), and/or,
when/unless, the do-loops (dotimes, dolist, do, do*) and progv."""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.closures import MISSING, Env, split_body
from sexpgpu.lisp.conditions import Condition
from sexpgpu.lisp.equality import eql
from sexpgpu.lisp.errors import E_LISP_ERROR, E_TYPE, BlockExit
from sexpgpu.lisp.forms import args_of, syntax_error, with_dynamic
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import special
from sexpgpu.lisp.specials import run_tagbody
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, T, intern, to_py
from sexpgpu.lisp.typespec import typep

OTHERWISE = intern("OTHERWISE")


@special("COND")
def sf_cond(interp, form, env):
    """(cond (test form...)...)"""
    node = form.cdr
    while type(node) is Cons:
        clause = node.car
        if type(clause) is not Cons:
            raise syntax_error(form, f"malformed cond clause {prin1_to_string(clause)}",
                               "write each clause as (test form...)")
        test = interp.eval(clause.car, env)
        if type(test) is MV:
            test = test[0] if test else NIL
        if test is not NIL:
            if clause.cdr is NIL:
                return test
            return interp.progn(clause.cdr, env)
        node = node.cdr
    return NIL


@special("AND")
def sf_and(interp, form, env):
    """(and form...)"""
    result = T
    node = form.cdr
    while type(node) is Cons:
        if node.cdr is NIL:
            return interp.eval(node.car, env)
        result = interp.eval1(node.car, env)
        if result is NIL:
            return NIL
        node = node.cdr
    return result


@special("OR")
def sf_or(interp, form, env):
    """(or form...)"""
    node = form.cdr
    while type(node) is Cons:
        if node.cdr is NIL:
            return interp.eval(node.car, env)
        result = interp.eval1(node.car, env)
        if result is not NIL:
            return result
        node = node.cdr
    return NIL


@special("WHEN")
def sf_when(interp, form, env):
    """(when test form...)"""
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed when", "write (when test form...)")
    if interp.eval1(form.cdr.car, env) is not NIL:
        return interp.progn(form.cdr.cdr, env)
    return NIL


@special("UNLESS")
def sf_unless(interp, form, env):
    """(unless test form...)"""
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed unless", "write (unless test form...)")
    if interp.eval1(form.cdr.car, env) is NIL:
        return interp.progn(form.cdr.cdr, env)
    return NIL


def _case(interp, form, env, exhaustive: bool):
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed case", "write (case key (keys form...)...)")
    key = interp.eval1(form.cdr.car, env)
    node = form.cdr.cdr
    while type(node) is Cons:
        clause = node.car
        if type(clause) is not Cons:
            raise syntax_error(form, "malformed case clause", "write (keys form...)")
        keys = clause.car
        if (keys is T or keys is OTHERWISE) and not exhaustive:
            return interp.progn(clause.cdr, env)
        if type(keys) is Cons:
            hit = any(eql(key, k) for k in keys)
        else:
            hit = keys is not NIL and eql(key, keys)
        if hit:
            return interp.progn(clause.cdr, env)
        node = node.cdr
    if exhaustive:
        wanted = []
        for clause in to_py(form.cdr.cdr):
            wanted.extend(to_py(clause.car) if type(clause.car) is Cons else [clause.car])
        raise _fell_through(form, key, "ECASE", wanted,
                            "add a clause for this key or use case with an otherwise clause")
    return NIL


def _fell_through(form: Any, value: Any, construct: str, wanted: list, fix: str) -> Exception:
    """The TYPE-ERROR of an ecase/etypecase whose value matched no clause (SBCL's wording)."""
    message = (f"{prin1_to_string(value)} fell through {construct} expression. "
               f"Wanted one of ({' '.join(prin1_to_string(w) for w in wanted)}).")
    exc = error(E_LISP_ERROR, message, form.span, fix=fix)
    exc.condition = Condition("TYPE-ERROR", message)
    return exc


@special("CASE")
def sf_case(interp, form, env):
    """(case key ((k...) form...)... [(otherwise form...)])"""
    return _case(interp, form, env, False)


@special("ECASE", "CCASE")
def sf_ecase(interp, form, env):
    """(ecase key ((k...) form...)...) — an error when no clause matches"""
    return _case(interp, form, env, True)


def _typecase(interp, form, env, exhaustive: bool):
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed typecase", "write (typecase x (type form...)...)")
    value = interp.eval1(form.cdr.car, env)
    for clause in to_py(form.cdr.cdr):
        if type(clause) is not Cons:
            raise syntax_error(form, "malformed typecase clause", "write (type form...)")
        spec = clause.car
        if (spec is OTHERWISE or spec is T) and not exhaustive or typep(interp, value, spec):
            return interp.progn(clause.cdr, env)
    if exhaustive:
        types = [c.car for c in to_py(form.cdr.cdr)]
        raise _fell_through(form, value, "ETYPECASE", types, "add a clause for this type")
    return NIL


@special("TYPECASE")
def sf_typecase(interp, form, env):
    """(typecase x (type form...)... [(otherwise form...)])"""
    return _typecase(interp, form, env, False)


@special("ETYPECASE", "CTYPECASE")
def sf_etypecase(interp, form, env):
    """(etypecase x (type form...)...)"""
    return _typecase(interp, form, env, True)


def _loop_body(interp, body: list, env) -> None:
    """Run a do-style body (a tagbody when it has tags)."""
    if any(type(item) is not Cons for item in body):
        run_tagbody(interp, body, env)
    else:
        for item in body:
            interp.eval(item, env)


def _in_nil_block(interp, env, run):
    tag = object()
    new_env = Env({NIL.bkey: tag}, env)
    try:
        return run(new_env)
    except BlockExit as exit_:
        if exit_.tag is tag:
            return exit_.value
        raise


@special("DOTIMES")
def sf_dotimes(interp, form, env):
    """(dotimes (var count [result]) body...)"""
    if type(form.cdr) is not Cons or type(form.cdr.car) is not Cons:
        raise syntax_error(form, "malformed dotimes", "write (dotimes (i n) body...)")
    spec = to_py(form.cdr.car)
    if not spec or type(spec[0]) is not Symbol or len(spec) > 3 or len(spec) < 2:
        raise syntax_error(form, "malformed dotimes", "write (dotimes (i n [result]) body...)")
    body, _ = split_body(form.cdr.cdr, False)

    def run(block_env):
        count = interp.eval1(spec[1], block_env)
        if type(count) is not int:
            raise error(E_TYPE, "dotimes count must be an integer", form.span,
                        actual=prin1_to_string(count), fix="pass an integer count")
        vars = {spec[0]: 0}
        loop_env = Env(vars, block_env)
        for i in range(count):
            vars[spec[0]] = i
            interp.steps += 1
            _loop_body(interp, body, loop_env)
        vars[spec[0]] = max(count, 0)
        return interp.eval(spec[2], loop_env) if len(spec) > 2 else NIL

    return _in_nil_block(interp, env, run)


@special("DOLIST")
def sf_dolist(interp, form, env):
    """(dolist (var list [result]) body...)"""
    if type(form.cdr) is not Cons or type(form.cdr.car) is not Cons:
        raise syntax_error(form, "malformed dolist", "write (dolist (x list) body...)")
    spec = to_py(form.cdr.car)
    if not spec or type(spec[0]) is not Symbol or len(spec) > 3 or len(spec) < 2:
        raise syntax_error(form, "malformed dolist", "write (dolist (x list [result]) body...)")
    body, _ = split_body(form.cdr.cdr, False)

    def run(block_env):
        node = interp.eval1(spec[1], block_env)
        if node is not NIL and type(node) is not Cons:
            raise error(E_TYPE, "dolist needs a list", form.span,
                        actual=prin1_to_string(node), fix="pass a list")
        var = spec[0]
        while type(node) is Cons:
            # a fresh binding per element: closures capture each one, as in SBCL
            interp.steps += 1
            _loop_body(interp, body, Env({var: node.car}, block_env))
            node = node.cdr
        if node is not NIL:
            raise error(E_TYPE, "dolist needs a proper list", form.span,
                        actual=prin1_to_string(node), fix="pass a list that ends in NIL")
        return interp.eval(spec[2], Env({var: NIL}, block_env)) if len(spec) > 2 else NIL

    return _in_nil_block(interp, env, run)


def _do(interp, form, env, sequential: bool):
    items = args_of(form, 2, None, "(do ((var init step)...) (end-test result...) body...)")
    specs = _do_specs(form, items[0])
    end = items[1]
    if type(end) is not Cons:
        raise syntax_error(form, "malformed do end clause", "write (end-test result...)")
    body, _ = split_body(form.cdr.cdr.cdr, False)

    def run(block_env):
        vars: dict = {}
        loop_env = Env(vars, block_env)
        for var, init, _ in specs:
            vars[var] = interp.eval1(init, loop_env if sequential else block_env)
        while True:
            interp.steps += 1
            if interp.steps > interp.checkpoint:
                interp.check_limits()
            if interp.eval1(end.car, loop_env) is not NIL:
                return interp.progn(end.cdr, loop_env)
            _loop_body(interp, body, loop_env)
            _step_do_vars(interp, specs, vars, loop_env, sequential)

    return _in_nil_block(interp, env, run)


def _do_specs(form: Cons, specs: Any) -> list:
    """[(var, init form, step form or None)] of do's ((var [init [step]])...)."""
    out = []
    for spec in to_py(specs):
        if type(spec) is Symbol:
            out.append((spec, NIL, None))
        elif type(spec) is Cons and type(spec.car) is Symbol:
            parts = to_py(spec)
            out.append((parts[0], parts[1] if len(parts) > 1 else NIL,
                        parts[2] if len(parts) > 2 else None))
        else:
            raise syntax_error(form, f"malformed do variable {prin1_to_string(spec)}",
                               "write (var init [step])")
    return out


def _step_do_vars(interp, specs: list, vars: dict, env: Env, sequential: bool) -> None:
    """do* assigns each step as it goes; do computes them all, then assigns."""
    if sequential:
        for var, _, step in specs:
            if step is not None:
                vars[var] = interp.eval1(step, env)
    else:
        new = [(var, interp.eval1(step, env)) for var, _, step in specs if step is not None]
        for var, value in new:
            vars[var] = value


@special("DO")
def sf_do(interp, form, env):
    """(do ((var init [step])...) (end-test result...) body...) — parallel stepping"""
    return _do(interp, form, env, False)


@special("DO*")
def sf_do_star(interp, form, env):
    """(do* ((var init [step])...) (end-test result...) body...) — sequential stepping"""
    return _do(interp, form, env, True)


@special("PROGV")
def sf_progv(interp, form, env):
    """(progv symbols values body...)"""
    items = args_of(form, 2, None, "(progv symbols values body...)")
    syms = to_py(interp.eval1(items[0], env))
    values = to_py(interp.eval1(items[1], env))
    dynamic = [(s, values[i] if i < len(values) else MISSING) for i, s in enumerate(syms)]
    return with_dynamic(interp, dynamic, lambda: interp.progn(form.cdr.cdr.cdr, env), env)
