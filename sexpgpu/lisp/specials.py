"""The core special forms: quote, if, progn, let/let*, setq, function and lambda,
flet/labels/macrolet, block/return-from, tagbody/go, catch/throw, unwind-protect and the
multiple-value forms. One decorated function per form, its syntax in the docstring."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp import lambdalist
from sexpgpu.lisp.backquote import expand_quasiquote
from sexpgpu.lisp.closures import LAMBDA, MISSING, Closure, Env, Macro, block_body, split_body
from sexpgpu.lisp.declarations import (
    DynamicRefs,
    check_bound_types,
    check_the,
    declared_specials,
    has_declarations,
)
from sexpgpu.lisp.errors import (
    BlockExit,
    GoExit,
    ThrowExit,
)
from sexpgpu.lisp.forms import (
    args_of,
    eval_body,
    paired_operands,
    restore_globals,
    set_variable,
    symbol_var,
    syntax_error,
    values_list,
    with_dynamic,
)
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import special
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, lisp_list, to_py


@special("QUOTE")
def sf_quote(interp, form, env):
    """(quote object)"""
    return args_of(form, 1, 1, "(quote object)")[0]


@special("QUASIQUOTE")
def sf_quasiquote(interp, form, env):
    """`template — the reader's backquote"""
    cached = interp.expansions.get(id(form))
    if cached is None or cached[0] is not form:
        cached = (form, None, expand_quasiquote(form.cdr.car, form))
        interp.expansions[id(form)] = cached
    return interp.eval(cached[2], env)


@special("UNQUOTE", "UNQUOTE-SPLICING")
def sf_unquote(interp, form, env):
    """,form — only meaningful inside a backquote"""
    raise syntax_error(form, "comma outside a backquote", "use , and ,@ only inside `")


@special("IF")
def sf_if(interp, form, env):
    """(if test then [else])"""
    rest = form.cdr
    try:
        test, rest = rest.car, rest.cdr
        then, rest = rest.car, rest.cdr
    except AttributeError:
        raise syntax_error(form, "malformed if", "write (if test then [else])") from None
    value = interp.eval(test, env)
    if type(value) is MV:
        value = value[0] if value else NIL
    if value is not NIL:
        return interp.eval(then, env)
    if type(rest) is Cons:
        if rest.cdr is not NIL:
            raise syntax_error(form, "if takes at most three operands",
                               "wrap several else forms in (progn ...)")
        return interp.eval(rest.car, env)
    return NIL


@special("PROGN")
def sf_progn(interp, form, env):
    """(progn form...)"""
    return interp.progn(form.cdr, env)


@special("LOCALLY")
def sf_locally(interp, form, env):
    """(locally (declare ...)... form...)"""
    body, _ = split_body(form.cdr, False)
    if not has_declarations(form.cdr):
        return eval_body(interp, body, env)
    check_bound_types(interp, form.cdr, env, form)
    names = declared_specials(form.cdr)
    if names:  # references to these in the body are to the dynamic variable
        env = Env(DynamicRefs(interp, names), env)
    return eval_body(interp, body, env)


@special("EVAL-WHEN")
def sf_eval_when(interp, form, env):
    """(eval-when (situation...) form...) — always evaluates: there is one time here"""
    return interp.progn(form.cdr.cdr, env) if type(form.cdr) is Cons else NIL


@special("THE")
def sf_the(interp, form, env):
    """(the type form)"""
    items = args_of(form, 2, 2, "(the type form)")
    return check_the(interp, items[0], interp.eval(items[1], env), form)


@special("DECLARE", "DECLAIM", "IN-PACKAGE", "PROCLAIM")
def sf_declare(interp, form, env):
    """(declare ...) / (declaim ...) — accepted and ignored"""
    return NIL


def _binding_pairs(form: Any, bindings: Any) -> list:
    pairs = []
    node = bindings
    while type(node) is Cons:
        item = node.car
        if type(item) is Symbol:
            pairs.append((symbol_var(form, item, "bound"), NIL))
        elif type(item) is Cons and type(item.cdr) in (Cons, type(NIL)) and (
                item.cdr is NIL or item.cdr.cdr is NIL):
            var = symbol_var(form, item.car, "bound")
            pairs.append((var, item.cdr.car if item.cdr is not NIL else NIL))
        else:
            raise syntax_error(form, f"malformed binding {prin1_to_string(item)}",
                               "write each binding as var or (var value)")
        node = node.cdr
    if node is not NIL:
        raise syntax_error(form, "malformed binding list", "write ((var value) ...)")
    return pairs


def _body_runner(interp, forms: list, env):
    return lambda: eval_body(interp, forms, env)


@special("LET")
def sf_let(interp, form, env):
    """(let ((var value)...) body...)"""
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed let", "write (let ((var value)...) body...)")
    pairs = _binding_pairs(form, form.cdr.car)
    vars: dict = {}
    dynamic = []
    specials = interp.specials
    local = has_declarations(form.cdr.cdr)
    if local:
        specials = specials | declared_specials(form.cdr.cdr)
    for var, init in pairs:
        value = interp.eval1(init, env) if init is not NIL else NIL
        if var in specials:
            dynamic.append((var, value))
        else:
            vars[var] = value
    new_env = Env(vars, env)
    if not local and not dynamic:  # no declarations to skip: the body as written
        return interp.progn(form.cdr.cdr, new_env)
    body, _ = split_body(form.cdr.cdr, False)
    if local:
        check_bound_types(interp, form.cdr.cdr, new_env, form)
    if not dynamic:
        return eval_body(interp, body, new_env)
    return with_dynamic(interp, dynamic, _body_runner(interp, body, new_env), env)


@special("LET*")
def sf_let_star(interp, form, env):
    """(let* ((var value)...) body...)"""
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed let*", "write (let* ((var value)...) body...)")
    pairs = _binding_pairs(form, form.cdr.car)
    vars: dict = {}
    new_env = Env(vars, env)
    dynamic = []
    saved = []
    declared = has_declarations(form.cdr.cdr)
    local = declared_specials(form.cdr.cdr) if declared else ()
    try:
        for var, init in pairs:
            value = interp.eval1(init, new_env) if init is not NIL else NIL
            if var in interp.specials or var in local:
                saved.append((var, interp.globals.get(var, MISSING)))
                interp.globals[var] = value
                dynamic.append(var)
            elif var in vars:
                # a repeated name shadows: later inits must see the new binding only
                vars = {var: value}
                new_env = Env(vars, new_env)
            else:
                vars[var] = value
        if not declared:  # no declarations to skip: the body as written
            return interp.progn(form.cdr.cdr, new_env)
        body, _ = split_body(form.cdr.cdr, False)
        check_bound_types(interp, form.cdr.cdr, new_env, form)
        return eval_body(interp, body, new_env)
    finally:
        restore_globals(interp, saved)


@special("SETQ")
def sf_setq(interp, form, env):
    """(setq var value [var value]...)"""
    items = paired_operands(form, "setq", "(setq var value ...)")
    result = NIL
    for i in range(0, len(items), 2):
        var = symbol_var(form, items[i], "assigned")
        result = interp.eval1(items[i + 1], env)
        set_variable(interp, var, result, env, form)
    return result


@special("PSETQ")
def sf_psetq(interp, form, env):
    """(psetq var value [var value]...) — all values computed before any assignment"""
    items = paired_operands(form, "psetq", "(psetq var value ...)")
    values = [interp.eval1(items[i + 1], env) for i in range(0, len(items), 2)]
    for i, value in zip(range(0, len(items), 2), values):
        set_variable(interp, symbol_var(form, items[i], "assigned"), value, env, form)
    return NIL


@special("LAMBDA")
def sf_lambda(interp, form, env):
    """(lambda lambda-list body...)"""
    return interp.make_lambda(form, env, None)


@special("FUNCTION")
def sf_function(interp, form, env):
    """(function name) / #'name / #'(lambda ...)"""
    target = args_of(form, 1, 1, "(function name)")[0]
    if type(target) is Cons and target.car is LAMBDA:
        return interp.make_lambda(target, env, None)
    return interp.function_of(target, env, form.span)


def _function_bindings(interp, form, env, recursive: bool, macro: bool):
    if type(form.cdr) is not Cons:
        raise syntax_error(form, f"malformed {form.car.name.lower()}",
                           f"write ({form.car.name.lower()} ((name (args) body...)) body...)")
    vars: dict = {}
    new_env = Env(vars, env, functions=True)
    definition_env = new_env if recursive else env
    for item in to_py(form.cdr.car):
        if type(item) is not Cons or type(item.car) is not Symbol or type(item.cdr) is not Cons:
            raise syntax_error(form, f"malformed definition {prin1_to_string(item)}",
                               "write (name (args...) body...)")
        name = item.car
        if name in interp.special_forms:   # its calls would be the special form
            raise syntax_error(form, f"{form.car.name.lower()} cannot bind "
                               f"{name.name.lower()}: it is a special operator",
                               "give the local function another name")
        if macro:
            ll = lambdalist.parse(item.cdr.car, form.span, destructuring=True)
            body, _ = split_body(item.cdr.cdr, True)
            vars[name.fkey] = Macro(name.name, ll, body, definition_env)
        else:
            ll = lambdalist.parse(item.cdr.car, form.span)
            body, _ = split_body(item.cdr.cdr, True)
            vars[name.fkey] = Closure(name.name, ll, block_body(name, body), definition_env)
    body, _ = split_body(form.cdr.cdr, False)
    return eval_body(interp, body, new_env)


@special("FLET")
def sf_flet(interp, form, env):
    """(flet ((name lambda-list body...)...) body...)"""
    return _function_bindings(interp, form, env, False, False)


@special("LABELS")
def sf_labels(interp, form, env):
    """(labels ((name lambda-list body...)...) body...) — the functions see each other"""
    return _function_bindings(interp, form, env, True, False)


@special("MACROLET")
def sf_macrolet(interp, form, env):
    """(macrolet ((name lambda-list body...)...) body...)"""
    return _function_bindings(interp, form, env, False, True)


@special("BLOCK")
def sf_block(interp, form, env):
    """(block name body...)"""
    if type(form.cdr) is not Cons or type(form.cdr.car) is not Symbol:
        raise syntax_error(form, "malformed block", "write (block name body...)")
    tag = object()
    new_env = Env({form.cdr.car.bkey: tag}, env)
    try:
        return interp.progn(form.cdr.cdr, new_env)
    except BlockExit as exit_:
        if exit_.tag is tag:
            return exit_.value
        raise


def _visible_marker(env, key: Any) -> Any:
    """The innermost lexical binding of a block or tagbody-tag key, or None."""
    e = env
    while e is not None:
        marker = e.vars.get(key)
        if marker is not None:
            return marker
        e = e.parent
    return None


def return_from(interp, name: Symbol, value: Any, env, form) -> None:
    tag = _visible_marker(env, name.bkey)
    if tag is not None:
        raise BlockExit(tag, value)
    raise syntax_error(form, f"return-from: no block named {name.name.lower()} is visible",
                       "return only from an enclosing block (or a loop/dolist for NIL)")


@special("RETURN-FROM")
def sf_return_from(interp, form, env):
    """(return-from name [value])"""
    items = args_of(form, 1, 2, "(return-from name [value])")
    value = interp.eval(items[1], env) if len(items) > 1 else NIL
    return_from(interp, items[0], value, env, form)


@special("RETURN")
def sf_return(interp, form, env):
    """(return [value]) — return-from the innermost block named NIL"""
    items = args_of(form, 0, 1, "(return [value])")
    value = interp.eval(items[0], env) if items else NIL
    return_from(interp, NIL, value, env, form)


@special("TAGBODY")
def sf_tagbody(interp, form, env):
    """(tagbody {tag | form}...)"""
    run_tagbody(interp, to_py(form.cdr), env)
    return NIL


def run_tagbody(interp, items: list, env) -> None:
    tags = {}
    for i, item in enumerate(items):
        if type(item) is not Cons:
            tags[item] = i
    if not tags:
        for item in items:
            interp.eval(item, env)
        return
    owner = object()
    vars = {("tag", tag): owner for tag in tags}
    new_env = Env(vars, env)
    pc = 0
    n = len(items)
    while pc < n:
        item = items[pc]
        pc += 1
        if type(item) is not Cons:
            continue
        try:
            interp.eval(item, new_env)
        except GoExit as go:
            if go.body is not owner:
                raise
            pc = tags[go.tag] + 1
            interp.steps += 1


@special("GO")
def sf_go(interp, form, env):
    """(go tag)"""
    tag = args_of(form, 1, 1, "(go tag)")[0]
    owner = _visible_marker(env, ("tag", tag))
    if owner is not None:
        raise GoExit(owner, tag)
    raise syntax_error(form, f"go: no tag {prin1_to_string(tag)} is visible",
                       "go only to a tag of an enclosing tagbody")


@special("CATCH")
def sf_catch(interp, form, env):
    """(catch tag body...)"""
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed catch", "write (catch tag body...)")
    tag = interp.eval1(form.cdr.car, env)
    interp.catch_tags.append(tag)
    try:
        return interp.progn(form.cdr.cdr, env)
    except ThrowExit as thrown:
        if thrown.tag is tag or (type(tag) is int and thrown.tag == tag):
            return thrown.value
        raise
    finally:
        interp.catch_tags.pop()


@special("THROW")
def sf_throw(interp, form, env):
    """(throw tag value)"""
    items = args_of(form, 2, 2, "(throw tag value)")
    tag = interp.eval1(items[0], env)
    value = interp.eval(items[1], env)
    if not any(t is tag or (type(t) is int and t == tag) for t in interp.catch_tags):
        # no catch for it: a CONTROL-ERROR here, where handler-case can still see it
        raise interp._dead_exit(ThrowExit(tag, value), None, 0)
    raise ThrowExit(tag, value)


@special("UNWIND-PROTECT")
def sf_unwind_protect(interp, form, env):
    """(unwind-protect protected cleanup...)"""
    if type(form.cdr) is not Cons:
        raise syntax_error(form, "malformed unwind-protect",
                           "write (unwind-protect form cleanup...)")
    try:
        return interp.eval(form.cdr.car, env)
    finally:
        interp.progn(form.cdr.cdr, env)


@special("MULTIPLE-VALUE-CALL")
def sf_multiple_value_call(interp, form, env):
    """(multiple-value-call function form...)"""
    items = args_of(form, 1, None, "(multiple-value-call fn form...)")
    fn = interp.eval1(items[0], env)
    args: list = []
    for item in items[1:]:
        value = interp.eval(item, env)
        if type(value) is MV:
            args.extend(value)
        else:
            args.append(value)
    return interp.apply(fn, args)


def _prog_keeping(interp, items: list, env, keep: int, all_values: bool) -> Any:
    """Evaluate items in order and return what items[keep] gave (all its values or the first)."""
    result = NIL
    for i, item in enumerate(items):
        if i == keep:
            result = interp.eval(item, env) if all_values else interp.eval1(item, env)
        else:
            interp.eval(item, env)
    return result


@special("MULTIPLE-VALUE-PROG1")
def sf_multiple_value_prog1(interp, form, env):
    """(multiple-value-prog1 first form...)"""
    items = args_of(form, 1, None, "(multiple-value-prog1 form...)")
    return _prog_keeping(interp, items, env, 0, True)


@special("PROG1")
def sf_prog1(interp, form, env):
    """(prog1 first form...)"""
    items = args_of(form, 1, None, "(prog1 form...)")
    return _prog_keeping(interp, items, env, 0, False)


@special("PROG2")
def sf_prog2(interp, form, env):
    """(prog2 first second form...)"""
    items = args_of(form, 2, None, "(prog2 form form...)")
    return _prog_keeping(interp, items, env, 1, False)


@special("MULTIPLE-VALUE-BIND")
def sf_multiple_value_bind(interp, form, env):
    """(multiple-value-bind (var...) form body...)"""
    items = args_of(form, 2, None, "(multiple-value-bind (vars...) form body...)")
    names = [symbol_var(form, v, "bound") for v in to_py(items[0])]
    values = values_list(interp.eval(items[1], env))
    vars = {name: values[i] if i < len(values) else NIL for i, name in enumerate(names)}
    body, _ = split_body(form.cdr.cdr.cdr, False)
    new_env = Env(vars, env)
    return eval_body(interp, body, new_env)


@special("MULTIPLE-VALUE-SETQ")
def sf_multiple_value_setq(interp, form, env):
    """(multiple-value-setq (var...) form)"""
    items = args_of(form, 2, 2, "(multiple-value-setq (vars...) form)")
    values = values_list(interp.eval(items[1], env))
    for i, var in enumerate(to_py(items[0])):
        set_variable(interp, var, values[i] if i < len(values) else NIL, env, form)
    return values[0] if values else NIL


@special("MULTIPLE-VALUE-LIST")
def sf_multiple_value_list(interp, form, env):
    """(multiple-value-list form)"""
    items = args_of(form, 1, 1, "(multiple-value-list form)")
    return lisp_list(values_list(interp.eval(items[0], env)))


@special("NTH-VALUE")
def sf_nth_value(interp, form, env):
    """(nth-value n form)"""
    items = args_of(form, 2, 2, "(nth-value n form)")
    n = interp.eval1(items[0], env)
    values = values_list(interp.eval(items[1], env))
    return values[n] if 0 <= n < len(values) else NIL


@special("DESTRUCTURING-BIND")
def sf_destructuring_bind(interp, form, env):
    """(destructuring-bind lambda-list expression body...)"""
    items = args_of(form, 2, None, "(destructuring-bind (pattern) expr body...)")
    ll = lambdalist.parse(items[0], form.span, destructuring=True)
    value = interp.eval1(items[1], env)
    vars: dict = {}
    new_env = Env(vars, env)
    lambdalist.bind_destructure(interp, ll, value, vars, new_env, "destructuring-bind")
    body, _ = split_body(form.cdr.cdr.cdr, False)
    return eval_body(interp, body, new_env)
