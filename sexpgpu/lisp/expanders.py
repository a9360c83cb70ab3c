"""What `macroexpand-1` returns for the CL macros that are special forms here.

Evaluation never uses these (the special forms run directly); they exist so that
`(macroexpand-1 '(when a b))` shows the expansion SBCL shows: `(IF A B)`.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.types import NIL, Cons, Symbol, T, intern, lisp_list, to_py

IF, PROGN, SETQ, SETF = intern("IF"), intern("PROGN"), intern("SETQ"), intern("SETF")


def _body(forms: list) -> Any:
    return forms[0] if len(forms) == 1 else Cons(PROGN, lisp_list(forms))


def _when(args: list) -> Any:
    if len(args) == 1:
        return lisp_list([IF, args[0], NIL])
    return lisp_list([IF, args[0], _body(args[1:])])


def _unless(args: list) -> Any:
    return lisp_list([IF, args[0], NIL, _body(args[1:])]) if len(args) > 1 else \
        lisp_list([IF, args[0], NIL, NIL])


def _and(args: list) -> Any:
    if not args:
        return T
    if len(args) == 1:
        return args[0]
    return lisp_list([IF, args[0], Cons(intern("AND"), lisp_list(args[1:]))]) \
        if len(args) > 2 else lisp_list([IF, args[0], args[1]])


def _incf(args: list) -> Any | None:
    if type(args[0]) is not Symbol:
        return None
    delta = args[1] if len(args) > 1 else 1
    return lisp_list([SETQ, args[0], lisp_list([intern("+"), delta, args[0]])])


def _push(args: list) -> Any | None:
    if len(args) != 2 or type(args[1]) is not Symbol:
        return None
    return lisp_list([SETQ, args[1], lisp_list([intern("CONS"), args[0], args[1]])])


def _setf(args: list) -> Any | None:
    if len(args) == 2 and type(args[0]) is Symbol:
        return lisp_list([SETQ, args[0], args[1]])
    if len(args) > 2 and len(args) % 2 == 0:
        pairs = [lisp_list([SETF, args[i], args[i + 1]]) for i in range(0, len(args), 2)]
        return Cons(PROGN, lisp_list(pairs))
    return None


def _return(args: list) -> Any:
    return lisp_list([intern("RETURN-FROM"), NIL] + args[:1])


def _pop(args: list) -> Any | None:
    if len(args) != 1 or type(args[0]) is not Symbol:
        return None
    place = args[0]
    return lisp_list([intern("PROG1"), lisp_list([intern("CAR"), place]),
                      lisp_list([SETQ, place, lisp_list([intern("CDR"), place])])])


def _cond(args: list) -> Any | None:
    clause = args[0]
    if type(clause) is not Cons:
        return None
    test, body = clause.car, to_py(clause.cdr)
    rest = args[1:]
    if test is T and not rest:
        return _body(body) if body else T
    if not body:
        return None  # SBCL introduces a gensym here: no comparable expansion
    tail = [Cons(intern("COND"), lisp_list(rest))] if rest else []
    if rest and len(rest) == 1 and type(rest[0]) is Cons and rest[0].car is T:
        tail = [lisp_list([intern("THE"), T, _body(to_py(rest[0].cdr))])]
    return lisp_list([IF, test, _body(body)] + tail)


EXPANDERS = {"WHEN": _when, "UNLESS": _unless, "AND": _and, "COND": _cond, "INCF": _incf,
             "PUSH": _push, "POP": _pop, "SETF": _setf, "RETURN": _return}


def expand_builtin(form: Cons) -> Any | None:
    """SBCL's one-step expansion of a built-in macro form, or None when there is none."""
    head = form.car
    fn = EXPANDERS.get(head.name) if type(head) is Symbol and head.interned else None
    if fn is None:
        return None
    args = to_py(form.cdr)
    if head.name not in ("AND", "RETURN") and not args:
        return None
    return fn(args)
