"""The compile-time evaluator: a tree-walking interpreter over reader forms.

This module holds evaluation itself: calls, macro expansion, function lookup and the
step/depth limits. The language it evaluates (special forms, builtins, prelude) comes
from `library.py`; environments and closures from `closures.py`; error reporting from
`reporting.py`.
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from typing import Any, TextIO

from sexpgpu.diagnostics import SexpError, error
from sexpgpu.lisp import lambdalist, macrofns, modules, printvars
from sexpgpu.lisp.closures import LAMBDA, MISSING, Closure, Env, Macro, split_body
from sexpgpu.lisp.conditions import Condition
from sexpgpu.lisp.errors import (
    E_LISP_ERROR,
    E_SYNTAX,
    E_TYPE,
    E_UNBOUND,
    E_UNDEFINED_FUNCTION,
    BlockExit,
    GoExit,
    LimitError,
    ThrowExit,
    limit_error,
    unsupported,
)
from sexpgpu.lisp.formcache import read_cached
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.registry import SPECIAL_FORMS, Builtin
from sexpgpu.lisp.reporting import CHECK_EVERY, Reporting, default_generic_op
from sexpgpu.lisp.types import MV, NIL, Cons, FloatOverflow, Symbol, T, intern
from sexpgpu.lisp.unsupported import REASONS
from sexpgpu.suggest import nearest

DEFAULT_MAX_STEPS = 1_000_000
DEFAULT_MAX_SECONDS = 1.0  # CPU-time backstop for steps that are individually slow
DEFAULT_MAX_DEPTH = 10_000
DEFAULT_MAX_ALLOC = 1_000_000
MAX_INTEGER_BITS = 100_000  # every integer and ratio a builtin returns stays below this
UNKNOWN_SITE = object()  # `user_site` when the user's call into a library had no position
_PY_FRAMES_PER_CALL = 40  # generous: Python frames one Lisp call may use


class Interpreter(Reporting):
    """One evaluation world: globals, functions, macros, modules, output stream, limits."""

    def __init__(self, stdout: TextIO | None = None, *, prelude: bool = True,
                 max_steps: int = DEFAULT_MAX_STEPS, max_depth: int = DEFAULT_MAX_DEPTH,
                 max_alloc: int = DEFAULT_MAX_ALLOC, max_seconds: float = DEFAULT_MAX_SECONDS):
        # deferred: the library is some twenty modules that `sexpgpu fmt`, `diff` and
        # `new` (which only read and print through this package) never need
        from sexpgpu.lisp import library

        self.out = stdout if stdout is not None else sys.stdout
        self.at_line_start = True
        self.column = 0
        self._init_namespaces()
        self._init_limits(max_steps, max_depth, max_alloc, max_seconds)
        self.user_condition_types: dict = {}
        self.structs: dict = {}
        self.docs: dict = {}  # (name, FUNCTION, VARIABLE or TYPE) -> docstring
        self.load_time_values: dict = {}  # id(form) -> (form, its value)
        self.deftypes: dict = {}  # type name -> the closure deftype made (its expander)
        self.handlers: list = []  # type specs of the active handler-case clauses
        self.catch_tags: list = []  # the tags of the active catch forms, innermost last
        # the span of the innermost call with a position now running (set just before a
        # function is applied): what a tracer records as the source of an IR node
        self.current_span = None
        # while a library closure runs under user code: the span of the user's call into
        # it (UNKNOWN_SITE when that call had no position); None while user code runs.
        # Tracing reads it instead of walking the Python stack (trace/site.py)
        self.user_site: Any = None
        self.struct_setters: dict = {}
        self.generic_op = default_generic_op
        self.library_files: set[str] = set()
        self.defining_standard = False  # evaluating the prelude or a standard file
        self.standard_names: set[Symbol] = set()  # what standard files defined
        self.sources: dict[str, str] = {}
        self.modules = modules.ModuleTable(self)
        self.module_resolver = modules.default_resolver
        needed = self.max_depth * _PY_FRAMES_PER_CALL + 2000
        if sys.getrecursionlimit() < needed:
            sys.setrecursionlimit(needed)
        library.install(self, prelude=prelude)

    def _init_namespaces(self) -> None:
        """Empty global tables; `library.install` fills them with the language."""
        self.globals: dict = {NIL: NIL, T: T}
        self.specials: set = set()
        self.constants: set = {NIL, T}
        self.functions: dict = {}
        self.macros: dict = {}
        self.setf_functions: dict = {}
        self.special_forms: dict = SPECIAL_FORMS
        self.expansions: dict = {}

    def _init_limits(self, max_steps: int, max_depth: int, max_alloc: int,
                     max_seconds: float) -> None:
        self.max_steps = max_steps
        self.max_depth = max_depth
        self.max_alloc = max_alloc
        self.max_seconds = max_seconds
        self.steps = 0
        self.checkpoint = min(max_steps, CHECK_EVERY)  # next step count to check limits at
        self.started: float | None = None  # CPU clock at the start of the top-level evaluation
        self.depth = 0
        self.active = 0  # nesting of eval_forms/call entries from Python
        self.allocated = 0

    # ------------------------------------------------------------------ output

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.at_line_start = text.endswith("\n")
            newline = text.rfind("\n")
            self.column = self.column + len(text) if newline < 0 else len(text) - newline - 1

    # ------------------------------------------------------------ public API

    def builtin(self, name: str, *, interp: bool = False):
        """Decorator: define a Python function as a Lisp function in this interpreter."""

        def register(fn):
            self.functions[intern(name.upper())] = Builtin(name.upper(), fn, interp)
            return fn

        return register

    def define_special_form(self, name: str, fn) -> None:
        """Add a special form `fn(interp, form, env)` to this interpreter only."""
        if self.special_forms is SPECIAL_FORMS:
            self.special_forms = dict(SPECIAL_FORMS)
        self.special_forms[intern(name.upper())] = fn

    def get_global(self, name: str | Symbol, default: Any = MISSING) -> Any:
        sym = name if isinstance(name, Symbol) else intern(name.upper())
        value = self.globals.get(sym, MISSING)
        if value is MISSING:
            if default is MISSING:
                raise error(E_UNBOUND, f"unbound variable {sym.name}")
            return default
        return value

    def set_global(self, name: str | Symbol, value: Any, special: bool = True) -> None:
        sym = name if isinstance(name, Symbol) else intern(name.upper())
        self.globals[sym] = value
        if special:
            self.specials.add(sym)

    def load(self, text: str, file: str = "<string>", library: bool = False) -> Any:
        """Read and evaluate every form of `text`; returns the last value."""
        self.sources[file] = text
        if library:
            self.library_files.add(file)
        forms = read_cached(text, file) if library else read_all(text, file)
        saved, self.defining_standard = self.defining_standard, library
        try:
            return self.eval_forms(forms)
        finally:
            self.defining_standard = saved

    def eval_forms(self, forms: list, env: Env | None = None) -> Any:
        """Evaluate top-level forms in order; returns the last value (possibly MV)."""
        result: Any = NIL
        self._enter()
        spans = getattr(forms, "spans", None)
        index = 0
        try:
            for form in forms:
                result = self.eval(form, env)
                index += 1
        except SexpError as exc:
            if spans and index < len(spans) and exc.diagnostic.span is None \
                    and not exc.__dict__.get("trail"):
                exc.diagnostic.span = spans[index]  # a top-level atom: its own position
            self.finish_error(exc)
            raise
        except RecursionError:
            raise self.finish_error(self._depth_error()) from None
        except (BlockExit, GoExit, ThrowExit) as exit_:
            raise self.finish_error(self._dead_exit(exit_, spans, index)) from None
        finally:
            self._leave()
        return result

    def _dead_exit(self, exit_: Exception, spans: Any, index: int) -> SexpError:
        """A throw with no catch, or a return-from/go into a block that already exited."""
        if isinstance(exit_, ThrowExit):
            message = f"attempt to throw to a tag that does not exist: {prin1_to_string(exit_.tag)}"
        else:
            message = "return-from or go to a block that has already exited"
        exc = error(E_LISP_ERROR, message, spans[index] if spans and index < len(spans) else None,
                    fix="throw only inside the dynamic extent of a matching catch")
        exc.condition = Condition("CONTROL-ERROR", message)
        return exc

    def _enter(self) -> bool:
        """Start of an evaluation from Python: the outermost one resets the limits."""
        self.active += 1
        if self.active == 1:
            printvars.watch(self.globals)  # print as this world's variables say
            self.steps = 0
            self.allocated = 0
            self.checkpoint = min(self.max_steps, CHECK_EVERY)
            self.started = time.thread_time()
            return True
        return False

    def _leave(self) -> None:
        """End of an evaluation from Python: outside every evaluation, symbols print in
        the default case again (a program's *print-case* must not leak into diagnostics)."""
        self.active -= 1
        if self.active == 0:
            printvars.reset()

    def call(self, fn: Any, *args: Any) -> Any:
        """Call a Lisp function (object or symbol naming one) from Python; one value."""
        if isinstance(fn, Symbol):
            fn = self.function_of(fn, None)
        self._enter()
        try:
            value = self.apply(fn, list(args))
        except SexpError as exc:
            self.finish_error(exc)
            raise
        except RecursionError:
            raise self.finish_error(self._depth_error()) from None
        except (BlockExit, GoExit, ThrowExit) as exit_:
            raise self.finish_error(self._dead_exit(exit_, None, 0)) from None
        finally:
            self._leave()
        if type(value) is MV:
            return value[0] if value else NIL
        return value

    # -------------------------------------------------------------- evaluation

    def eval1(self, form: Any, env: Env | None) -> Any:
        value = self.eval(form, env)
        if type(value) is MV:
            return value[0] if value else NIL
        return value

    def eval(self, form: Any, env: Env | None) -> Any:
        t = type(form)
        if t is Symbol:
            return self.lookup(form, env)
        if t is Cons:
            return self.eval_cons(form, env)
        return form

    def progn(self, forms: Any, env: Env | None) -> Any:
        result: Any = NIL
        while type(forms) is Cons:
            result = self.eval(forms.car, env)
            forms = forms.cdr
        return result

    def lookup(self, sym: Symbol, env: Env | None) -> Any:
        e = env
        while e is not None:
            value = e.vars.get(sym, MISSING)
            if value is not MISSING:
                return value
            e = e.parent
        value = self.globals.get(sym, MISSING)
        if value is not MISSING:
            return value
        if sym.is_keyword:
            return sym
        target = self.modules.resolve(sym)
        if target is not None and target in self.globals:
            return self.globals[target]
        raise self._unbound(sym, env)

    def eval_cons(self, form: Cons, env: Env | None) -> Any:
        """A compound form: special form, macro call or function call. This is the
        evaluator's inner loop, so the operator lookup stays inline rather than in helpers."""
        self.steps += 1
        if self.steps > self.checkpoint:
            self.check_limits()
        head = form.car
        try:
            if type(head) is Symbol:
                special = self.special_forms.get(head)
                if special is not None:
                    return special(self, form, env)
                fn = None
                key = head.fkey
                e = env.fns if env is not None else None
                while e is not None:
                    fn = e.vars.get(key)
                    if fn is not None:
                        break
                    e = e.outer_fns()
                if fn is None:
                    macro = self.macros.get(head)
                    if macro is not None:
                        return self.eval_macro(macro, form, env)
                    fn = self.functions.get(head)
                    if fn is None:
                        fn = self._resolve_function(head, form)
                        if type(fn) is Macro:
                            return self.eval_macro(fn, form, env)
                elif type(fn) is Macro:
                    return self.eval_macro(fn, form, env)
            elif type(head) is Cons and head.car is LAMBDA:
                fn = self.make_lambda(head, env, None)
            else:
                raise self._not_a_function_name(form)
            args = []
            node = form.cdr
            while type(node) is Cons:
                value = self.eval(node.car, env)
                if type(value) is MV:
                    value = value[0] if value else NIL
                args.append(value)
                node = node.cdr
            # for builtins that record where they ran; None for a form without position,
            # so that a stale span is never taken for this call's
            self.current_span = form.span
            return self.apply(fn, args)
        except SexpError as exc:
            self._trail(exc, form)
            raise
        except RecursionError:
            exc = self._depth_error()
            self._trail(exc, form)
            raise exc from None
        except (TypeError, AttributeError, ValueError, IndexError, KeyError) as bad:
            # builtins convert their own; this catches a special form given a wrong value
            exc = self._wrong_value_in(form)
            self._trail(exc, form)
            raise exc from bad

    def apply(self, fn: Any, args: list) -> Any:
        t = type(fn)
        if t is Closure:
            return self.call_closure(fn, args)
        if t is Builtin:
            n = len(args)
            if n < fn.min or (fn.max is not None and n > fn.max):
                raise self._builtin_arity(fn, n)
            try:
                if fn.interp_arg:
                    result = fn.fn(self, *args)
                else:
                    result = fn.fn(*args)
                tr = type(result)
                if tr is int:
                    if result.bit_length() > MAX_INTEGER_BITS:
                        raise OverflowError
                elif tr is Fraction and (result.numerator.bit_length() > MAX_INTEGER_BITS
                                         or result.denominator.bit_length() > MAX_INTEGER_BITS):
                    raise OverflowError
                return result
            except (TypeError, AttributeError, ValueError, IndexError, KeyError) as exc:
                raise self._builtin_type_error(fn, args, exc) from None
            except ZeroDivisionError:
                raise self._division_by_zero(fn, args) from None
            except FloatOverflow:
                raise self._float_overflow(fn, args) from None
            except OverflowError:
                raise limit_error(f"{fn.name.lower()}: number too large",
                                  f"keep integers and ratios under {MAX_INTEGER_BITS} bits "
                                  "and floats within float range") from None
            except MemoryError:
                raise limit_error("out of memory", "allocate less") from None
        if t is Symbol:
            return self.apply(self.function_of(fn, None), args)
        if t is Macro:  # what macro-function returned, called on a form and environment
            return macrofns.call_macro(self, fn, args)
        if callable(fn) and not isinstance(fn, (Macro, type)):
            return fn(*args)
        raise error(E_TYPE, f"{prin1_to_string(fn)} is not a function",
                    expected="a function", actual=prin1_to_string(fn),
                    fix="pass #'name or a lambda")

    def call_closure(self, fn: Closure, args: list) -> Any:
        library = fn.library
        if library is None:
            library = fn.library = self._is_library(fn)
        site = self.user_site
        if library:  # entered from user code, or from a user form inlined by a macro
            span = self.current_span
            entry = site is None or (span is not None and span.file not in self.library_files)
            site = (span or UNKNOWN_SITE) if entry else site
        else:
            site = None
        if site is self.user_site:
            return self._call_closure(fn, args)
        saved, self.user_site = self.user_site, site
        try:
            return self._call_closure(fn, args)
        finally:
            self.user_site = saved

    def _is_library(self, fn: Closure) -> bool:
        """Whether the body's positioned forms (a bounded look) all come from library
        files. A library macro's expansion that holds user forms (defobjective's) is
        user code: tracing then reads positions from the stack, as for any user code."""
        todo, seen, library = list(reversed(fn.body)), 0, False
        while todo and seen < 64:
            form = todo.pop()
            seen += 1
            if type(form) is Cons:
                if form.span is not None:
                    if form.span.file not in self.library_files:
                        return False
                    library = True
                todo += (form.cdr, form.car)
        return library

    def _call_closure(self, fn: Closure, args: list) -> Any:
        self.depth += 1
        try:
            if self.depth > self.max_depth:
                raise self._depth_error()
            ll = fn.ll
            if ll.simple:
                if len(args) != ll.nreq:
                    raise lambdalist.arity_error(fn.name or "lambda", ll, len(args))
                env = Env(dict(zip(ll.required, args)), fn.env)
            else:
                vars: dict = {}
                env = Env(vars, fn.env)
                lambdalist.bind(self, ll, args, vars, env, fn.name or "lambda")
            result: Any = NIL
            for form in fn.body:
                result = self.eval(form, env)
            return result
        except SexpError as exc:
            if not isinstance(exc, LimitError) or not getattr(exc, "pending", None):
                exc.pending = f"in a call to {fn.name or 'a lambda'}"
            raise
        finally:
            self.depth -= 1

    def call1(self, fn: Any, *args: Any) -> Any:
        """Call with positional args, returning the primary value (for builtins)."""
        value = self.apply(fn, list(args))
        if type(value) is MV:
            return value[0] if value else NIL
        return value

    # ---------------------------------------------------------------- functions

    def make_lambda(self, form: Cons, env: Env | None, name: str | None) -> Closure:
        """A closure from (lambda lambda-list . body)."""
        rest = form.cdr
        if type(rest) is not Cons:
            raise error(E_SYNTAX, "lambda needs a lambda list", form.span,
                        fix="write (lambda (args...) body...)")
        ll = lambdalist.parse(rest.car, form.span)
        body, _ = split_body(rest.cdr, True)
        return Closure(name, ll, body, env)

    def function_of(self, name: Any, env: Env | None, span: Any = None) -> Any:
        """The function named by a symbol (lexical first), or a (setf name) function."""
        if type(name) is Cons and getattr(name.car, "name", None) == "SETF":
            fn = self.setf_functions.get(name.cdr.car)
            if fn is None:
                raise error(E_UNDEFINED_FUNCTION,
                            f"undefined function (setf {prin1_to_string(name.cdr.car)})", span)
            return fn
        if not isinstance(name, Symbol):
            raise error(E_TYPE, f"{prin1_to_string(name)} is not a function name", span,
                        fix="pass #'name or a lambda")
        e = env.fns if env is not None else None
        while e is not None:
            fn = e.vars.get(name.fkey)
            if fn is not None and type(fn) is not Macro:
                return fn
            e = e.outer_fns()
        fn = self.functions.get(name)
        if fn is None:
            fn = self._resolve_function(name, None)
        if type(fn) is Macro:
            raise error(E_TYPE, f"{name.name} is a macro, not a function", span,
                        fix="macros cannot be passed as functions; wrap it in a lambda")
        return fn

    def _resolve_function(self, head: Symbol, form: Cons | None) -> Any:
        target = self.modules.resolve(head)
        if target is not None:
            macro = self.macros.get(target)
            if macro is not None:
                return macro
            fn = self.functions.get(target)
            if fn is not None:
                return fn
        if head in self.special_forms:
            raise error(E_TYPE, f"{head.name} is a special form, not a function",
                        form.span if form else None)
        if head.interned and head.name in REASONS:
            raise unsupported(head.name.lower(), REASONS[head.name], form.span if form else None)
        defined = list(self.functions) + list(self.macros)
        hint = self.modules.nearest_definition(head, defined) \
            or nearest(head.name, [s.name for s in defined])
        exc = error(E_UNDEFINED_FUNCTION, f"undefined function {head.name.lower()}",
                    form.span if form is not None else None,
                    fix=f"did you mean {hint.lower()}?" if hint else
                    "define it with defun before calling it, or check the spelling")
        exc.condition = Condition(
            "UNDEFINED-FUNCTION", f"The function COMMON-LISP-USER::{head.name} is undefined.",
            {"NAME": head})
        raise exc

    # ------------------------------------------------------------------ macros

    def eval_macro(self, macro: Macro, form: Cons, env: Env | None) -> Any:
        cached = self.expansions.get(id(form))
        if cached is not None and cached[0] is form and cached[1] is macro:
            expansion = cached[2]
        else:
            expansion = self.expand_macro(macro, form, env)
            self.expansions[id(form)] = (form, macro, expansion)
        self.depth += 1  # a macro that expands into itself must hit the depth limit
        try:
            if self.depth > self.max_depth:
                raise self._depth_error()
            return self.eval(expansion, env)
        except SexpError as exc:
            exc.pending = f"in the expansion of macro {macro.name.lower()}"
            raise
        finally:
            self.depth -= 1

    def expand_macro(self, macro: Macro, form: Cons, env: Env | None) -> Any:
        vars: dict = {}
        menv = Env(vars, macro.env)
        self.depth += 1
        try:
            if self.depth > self.max_depth:
                raise self._depth_error()
            ll = macro.ll
            if ll.whole is not None:
                vars[ll.whole] = form
            lambdalist.bind_destructure(self, ll, form.cdr, vars, menv, macro.name.lower())
            if ll.whole is not None:
                vars[ll.whole] = form  # &whole is the entire form, not the arguments
            if ll.environment is not None:  # the caller's lexical macros, for macroexpand-1
                vars[ll.environment] = env if env is not None else NIL
            result: Any = NIL
            for body_form in macro.body:
                result = self.eval(body_form, menv)
        except SexpError as exc:
            exc.pending = f"while expanding macro {macro.name.lower()}"
            raise
        finally:
            self.depth -= 1
        if type(result) is MV:
            result = result[0] if result else NIL
        return result

    def macro_of(self, head: Any, env: Env | None) -> Macro | None:
        if type(head) is not Symbol:
            return None
        e = env.fns if env is not None else None
        while e is not None:
            fn = e.vars.get(head.fkey)
            if fn is not None:
                return fn if type(fn) is Macro else None
            e = e.outer_fns()
        if head in self.special_forms:
            return None
        macro = self.macros.get(head)
        if macro is None and head not in self.functions:
            target = self.modules.resolve(head)
            if target is not None:
                macro = self.macros.get(target)
        return macro

    def macroexpand_1(self, form: Any, env: Env | None) -> tuple[Any, bool]:
        if type(form) is Cons:
            macro = self.macro_of(form.car, env)
            if macro is not None:
                return self.expand_macro(macro, form, env), True
            if form.car in self.special_forms and form.car not in self.macros:
                # deferred: only macroexpand-1 of these forms needs them, and each module
                # imported costs startup
                from sexpgpu.lisp.expanders import expand_builtin

                expansion = expand_builtin(form)
                if expansion is not None:
                    return expansion, True
        return form, False
