"""Where a traced node came from: the innermost form of the user's file that is being
evaluated when a tensor builtin runs (library frames are skipped). The evaluator keeps
two cheap facts that answer most asks: the span of the call being applied and, inside
library code, the span of the user's call into it. When neither is a user span the
answer is read from the evaluator's Python frames (a walk that cost 40% of tracing a
GRU when it was taken for every node)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from sexpgpu.lisp.interp import UNKNOWN_SITE, Interpreter
from sexpgpu.trace.tensor import Site

MAX_FRAMES = 600  # a bound on the walk; deeper than any sensible model
_EVAL_CONS = Interpreter.eval_cons.__code__


def stack_site(library: set[str], frame: Any) -> Any:
    """The span of the innermost form outside `library` that an `eval_cons` frame at or
    above `frame` is evaluating; None when there is none."""
    for _ in range(MAX_FRAMES):
        if frame is None:
            break
        if frame.f_code is _EVAL_CONS:
            span = getattr(frame.f_locals.get("form"), "span", None)
            if span is not None and span.file not in library:
                return span
        frame = frame.f_back
    return None


def site_provider(interp: Any) -> Callable[[], Site]:
    """A provider for `set_site_provider`: (the user's span, no notes).

    Library lines are not returned as notes: when an error is raised the evaluator
    adds them itself from the forms it was evaluating."""
    library = interp.library_files

    def provider() -> Site:
        # a user form being applied is the innermost; else, inside library code, the
        # user's call into it
        span = interp.current_span
        if span is not None and span.file not in library:
            return span, ()
        entry = interp.user_site
        if entry is not None and entry is not UNKNOWN_SITE and entry.file not in library:
            return entry, ()
        found = stack_site(library, sys._getframe(2))
        if entry is not None and found is not None:
            # inside library code every frame up to the user's call is the library's,
            # so the walk's answer holds until that call returns
            interp.user_site = found
        return found, ()

    return provider
