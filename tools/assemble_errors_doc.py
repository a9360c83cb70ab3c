"""Assemble docs/errors.md from the per-stage sections in docs/errors/*.md.

Each stage documents its own codes beside its docs (docs/errors/<stage>.md);
this writes the one page users read, with an index. Run after adding a code:
    python tools/assemble_errors_doc.py
tests/test_errors_doc.py fails when docs/errors.md is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
ORDER = ["lisp", "contract", "tensors", "autodiff", "kernels", "diag", "runtime", "cli", "plot"]
HEADING = re.compile(r"^## ([EW]-[A-Z0-9-]+): (.*)$", re.MULTILINE)
TITLES = {
    "lisp": "Reading and evaluating the Lisp",
    "contract": "The run file",
    "tensors": "Tensor operations",
    "autodiff": "Differentiation",
    "kernels": "Kernels",
    "diag": "Run diagnostics",
    "runtime": "Running",
    "cli": "Command line",
    "plot": "Plots",
}

INTRO = """# Diagnostic codes

Every problem SexpGPU reports has a code: `E-...` is an error (the command
fails, exit 1, or 3 for runtime failures), `W-...` a warning (reported, the
command goes on). Each diagnostic names the file, line and column in your file,
the expected and actual facts, and a fix when one is known; `--json` gives the
same fields as an object. Every code below has a test that triggers it.

## E-INTERNAL: internal compiler error

A bug in SexpGPU, not in your file: it is reported as `internal error, please
report` with the Python exception's type and message. Rerun with
`SEXPGPU_DEBUG=1` to see the traceback, and report it with the file that
caused it.
"""


def _body(text: str) -> str:
    """A stage file's sections, without its own title line."""
    match = HEADING.search(text)
    return text[match.start():] if match else ""


def assemble() -> str:
    stages = sorted((DOCS / "errors").glob("*.md"),
                    key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else 99, p.stem))
    index, bodies = [], []
    for path in stages:
        body = _body(path.read_text(encoding="utf-8")).strip()
        title = TITLES.get(path.stem, path.stem)
        codes = HEADING.findall(body)
        index.append(f"- {title}: " + ", ".join(f"`{code}`" for code, _ in codes))
        bodies.append(body)
    return "\n".join([INTRO, "## Index\n", *index, "", *(b + "\n" for b in bodies)])


def main() -> int:
    target = DOCS / "errors.md"
    text = assemble()
    if "--check" in sys.argv:
        return 0 if target.exists() and target.read_text(encoding="utf-8") == text else 1
    target.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
