"""Regenerate the expected outputs of the SBCL conformance corpus (tests/conformance).

Runs `sbcl --script` on each `.lisp` program and stores its standard output as the
sibling `.out`. A program that exits non-zero, writes to stderr (warnings) or enters
the debugger gets no `.out` and is reported. CI never runs this; it needs sbcl.

Usage: python tools/gen_conformance.py [PATH ...]   (default: all of tests/conformance)
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "conformance"
TIMEOUT_S = 30


def programs(args: list[str]) -> list[Path]:
    """The .lisp files named by args (files or folders), or the whole corpus."""
    roots = [Path(a) for a in args] or [CORPUS]
    found: list[Path] = []
    for root in roots:
        found.extend(sorted(root.rglob("*.lisp")) if root.is_dir() else [root])
    return [p for p in found if p.suffix == ".lisp"]


def generate(path: Path) -> str | None:
    """Run sbcl on one program; write its .out and return None, or return the problem."""
    out_path = path.with_suffix(".out")
    try:
        proc = subprocess.run(
            ["sbcl", "--script", path.name],
            cwd=path.parent,
            capture_output=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        problem = "timed out"
    else:
        stdout = proc.stdout.decode("utf-8")
        if proc.returncode != 0:
            problem = f"exit {proc.returncode}: {proc.stderr.decode()[:400]}"
        elif proc.stderr:
            problem = f"stderr: {proc.stderr.decode()[:400]}"
        elif "debugger invoked" in stdout:
            problem = "entered the debugger"
        else:
            out_path.write_text(stdout, encoding="utf-8")
            return None
    out_path.unlink(missing_ok=True)
    return problem


def main(argv: list[str]) -> int:
    paths = programs(argv)
    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = list(pool.map(generate, paths))
    bad = [(p, why) for p, why in zip(paths, problems) if why is not None]
    for path, why in bad:
        print(f"FAIL {path}: {why}", file=sys.stderr)
    print(f"{len(paths) - len(bad)} of {len(paths)} programs generated", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
