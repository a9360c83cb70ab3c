"""Where a traced node came from: the innermost form of the user's file that is being
evaluated when a tensor builtin runs (library frames are skipped), read from the
evaluator's Python frames only when a builtin asks, so evaluation pays nothing."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from sexpgpu.lisp.interp import Interpreter
from sexpgpu.trace.tensor import Site

MAX_FRAMES = 600  # a bound on the walk; deeper than any sensible model


def site_provider(interp: Any) -> Callable[[], Site]:
    """A provider for `set_site_provider`: (the user's span, no notes).

    Library lines are not returned as notes: when an error is raised the evaluator
    adds them itself from the forms it was evaluating."""
    eval_cons = Interpreter.eval_cons.__code__
    library = interp.library_files

    def provider() -> Site:
        frame = sys._getframe(2)
        for _ in range(MAX_FRAMES):
            if frame is None:
                break
            if frame.f_code is eval_cons:
                span = getattr(frame.f_locals.get("form"), "span", None)
                if span is not None and span.file not in library:
                    return span, ()
            frame = frame.f_back
        return None, ()

    return provider
