"""`(with-numerics (:f32) body...)`: a region of a traced function computed in another
precision than the run's. The macro (contract/forms.sx) brackets its body with the two
builtins below, which tag every node built inside; the precision pass
(ir/precision.py) reads the tag, and the backward of a tagged node inherits it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir.precision import PRECISIONS, check_precision
from sexpgpu.lisp.types import NIL, Cons, to_py
from sexpgpu.suggest import did_you_mean
from sexpgpu.trace import args as A
from sexpgpu.trace.builtins import registrar
from sexpgpu.trace.tensor import current, site

E_NUMERICS = define_code(
    "E-NUMERICS", "bad with-numerics region",
    "`(with-numerics (OPTION) body...)` computes its body in one precision whatever the "
    "run's: OPTION is :f32 (an f32 island in a bf16 model: attention logits, a loss) or "
    ":bf16 (bf16 inside an f32 run). Exactly one option; regions nest, the innermost "
    "wins; the region only means something while a model or objective is traced.",
)

# the `with-numerics` macro's builtins; the contract compiler installs them with the others
NUMERICS_BUILTINS: dict[str, Callable[..., Any]] = {}
builtin = registrar(NUMERICS_BUILTINS)


def _option(options: Any) -> str:
    """The one precision keyword of a region's option list."""
    items = to_py(options) if isinstance(options, Cons) or options is NIL else options
    if not isinstance(items, list) or len(items) != 1:
        span, notes = site()
        raise error(E_NUMERICS, "with-numerics takes one option", span,
                    expected="(with-numerics (:f32) body...) or (with-numerics (:bf16) ...)",
                    actual=A.show(options), fix="name one precision: (:f32) or (:bf16)",
                    notes=list(notes))
    option = items[0]
    name = A.kw_name(option) if A.is_keyword(option) else None
    if name == "f16":
        span, _ = site()
        return check_precision(name, "with-numerics", span)  # E-PRECISION, with why
    if name not in PRECISIONS:
        span, notes = site()
        text = f":{name}" if name else A.show(option)
        raise error(E_NUMERICS, f"with-numerics: unknown option {text}", span,
                    expected=" or ".join(f":{p}" for p in PRECISIONS), actual=text,
                    fix=did_you_mean(text, [f":{p}" for p in PRECISIONS]),
                    notes=list(notes))
    return name


@builtin("%numerics-push")
def numerics_push(options: Any) -> Any:
    """Tag the nodes traced from now on; returns the tag to restore (nil: none)."""
    graph = current("with-numerics").graph
    saved = graph.set_numerics(_option(options))
    return NIL if saved is None else saved


@builtin("%numerics-pop")
def numerics_pop(saved: Any) -> Any:
    """Restore the tag `%numerics-push` returned: the region has ended."""
    current("with-numerics").graph.set_numerics(None if saved is NIL else str(saved))
    return NIL
