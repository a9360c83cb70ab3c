"""Write the op tables of the docs from the op registry: docs/tensors.md (primitives
and compositions), docs/tensor-builtins.md (the Lisp builtins) and docs/autodiff.md
(the Tensor methods and functions). Each table sits between two markers,
`<!-- ops:begin NAME -->` and `<!-- ops:end NAME -->`; the text around them is
written by hand. Run after adding or changing an op:
    python tools/gen_op_docs.py
tests/test_ops_docs.py fails when a table is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from sexpgpu.autodiff.tensor import Tensor, signature

from sexpgpu.ir.ops._define import zero_vjp
from sexpgpu.ir.ops.opdef import REQUIRED, Arg, OpDef
from sexpgpu.ir.ops.registry import OPS
from sexpgpu.trace.builtins import CL_GENERIC, form

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MARKER = re.compile(r"(<!-- ops:begin (\S+) [^>]*-->\n)(.*?)(<!-- ops:end \2 -->)", re.S)
# the integer rule in a word (docs/tensors.md explains them)
INTEGERS = {"keep": "kept", "float": "as f32", "reject": "E-DTYPE", "count": "bools as i64"}


def _code(text: str) -> str:
    return f"`{text}`"


def _value(v: object) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "t" if v else "nil"
    if isinstance(v, tuple):
        return "(" + " ".join(_value(x) for x in v) + ")"
    if isinstance(v, str):
        return ":" + v
    return repr(v)


def _arg(arg: Arg) -> str:
    kind = "|".join(arg.choices) if arg.kind == "choice" else arg.kind
    text = f"{arg.name}: {kind}"
    return text if arg.default is REQUIRED else f"{text} = {_value(arg.default)}"


def _args(opdef: OpDef) -> str:
    shown = [_arg(a) for a in opdef.args if a.kind != "stream"]
    return ", ".join(shown) or ""


def _lisp(opdef: OpDef) -> str:
    if opdef.lisp:
        return " ".join(_code(n) for n in opdef.lisp)
    if opdef.reached:
        return "via " + ", ".join(_code(r) for r in opdef.reached)
    return "-"


def _python(opdef: OpDef) -> str:
    names = []
    if opdef.method:
        names.append(_code(f"x.{opdef.method}"))
    if opdef.function:
        names.append(_code(f"ad.{opdef.function}"))
    return " ".join(names) or "-"


def _gradient(opdef: OpDef) -> str:
    if "gradient" in opdef.extra:
        return opdef.extra["gradient"]
    if opdef.vjp is zero_vjp:
        return "0 (piecewise constant)"
    return "-" if opdef.vjp is None else "yes"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def primitives() -> str:
    rows = ["| op | does | arguments | integers | gradient | Lisp | Python |",
            "|---|---|---|---|---|---|---|"]
    for op in OPS.values():
        if op.kind == "composite":
            continue
        rows.append(f"| {_code(op.name)} | {_cell(op.doc)} | {_cell(_args(op))} "
                    f"| {INTEGERS[op.integers]} | {_gradient(op)} | {_lisp(op)} "
                    f"| {_python(op)} |")
    return "\n".join(rows) + "\n"


def compositions() -> str:
    rows = ["| op | does | arguments | integers | Lisp | Python |",
            "|---|---|---|---|---|---|"]
    for op in OPS.values():
        if op.kind != "composite":
            continue
        rows.append(f"| {_code(op.name)} | {_cell(op.doc)} | {_cell(_args(op))} "
                    f"| {INTEGERS[op.integers]} | {_lisp(op)} | {_python(op)} |")
    return "\n".join(rows) + "\n"


def builtins() -> str:
    rows = ["| call | does | integers | op |", "|---|---|---|---|"]
    for op in OPS.values():
        for name in op.lisp:
            how = " (CL's function, on tensors)" if name in CL_GENERIC else ""
            rows.append(f"| {_code(form(name, op))} | {_cell(op.doc)}{how} "
                        f"| {INTEGERS[op.integers]} | {_code(op.name)} |")
    return "\n".join(rows) + "\n"


def _py_signature(op: OpDef, as_method: bool) -> str:
    sig = str(signature(op, as_method))
    if as_method:
        sig = sig.replace("(self, ", "(").replace("(self)", "()")
        return f"x.{op.method}{sig}"
    return f"ad.{op.function}{sig}"


def methods() -> str:
    rows = ["| method | does | op |", "|---|---|---|"]
    for op in OPS.values():
        if op.method:
            rows.append(f"| {_code(_py_signature(op, True))} | {_cell(op.doc)} "
                        f"| {_code(op.name)} |")
    return "\n".join(rows) + "\n"


def functions() -> str:
    rows = ["| function | does | op |", "|---|---|---|"]
    for op in OPS.values():
        if op.function:
            rows.append(f"| {_code(_py_signature(op, False))} | {_cell(op.doc)} "
                        f"| {_code(op.name)} |")
    return "\n".join(rows) + "\n"


TABLES = {"primitives": primitives, "compositions": compositions, "builtins": builtins,
          "methods": methods, "functions": functions}
FILES = ("tensors.md", "tensor-builtins.md", "autodiff.md")


def render(text: str) -> str:
    """`text` with every marked table regenerated."""
    def table(match: re.Match) -> str:
        return match.group(1) + TABLES[match.group(2)]() + match.group(4)
    return MARKER.sub(table, text)


def main() -> int:
    assert Tensor  # the methods are installed on import
    for name in FILES:
        path = DOCS / name
        text = path.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())



