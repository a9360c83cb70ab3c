"""`sexpgpu watch FILE`: `check` again on every save, polling the file's modification
time and size."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.contract.compile import PACKAGE, compile_file
from sexpgpu.diagnostics import E_INTERNAL, Diagnostic, Note, SexpError, Span, render_all
from sexpgpu.selection import Selection, from_docopt

HELP = """\
Check a run file again every time it is saved: one line per check on standard
output, a failing check's diagnostics in full on standard error. Ctrl-C stops it.

Usage:
  sexpgpu watch FILE [--set K=V]... [--variant NAME] [--interval S] [--json]
  sexpgpu watch (-h | --help)

Options:
  --set K=V        bind knob K to V (repeatable)
  --variant NAME   bind the knobs of a variant the file declares
  --interval S     seconds between looks at the file [default: 0.3]
  --json           one JSON object a line per check instead of text

KEY=VALUE after FILE is the same as --set KEY=VALUE.

Example:
  sexpgpu watch my-run.sx
"""


def stamp(path: str) -> tuple[int, int] | None:
    """What changes when the file is saved (None while it is missing, e.g. mid-save)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def own_sources(path: str, sources: dict[str, str]) -> list[str]:
    """FILE and the modules it required that are yours (not SexpGPU's own library)."""
    mine = [name for name in sources
            if not Path(name).resolve().is_relative_to(PACKAGE) and Path(name).exists()]
    return [path, *(name for name in mine if Path(name).resolve() != Path(path).resolve())]


def check_once(path: str, selection: Selection) -> dict[str, Any]:
    """Compile and trace like `sexpgpu check`; the result as a JSON-ready dict."""
    started = time.perf_counter()
    try:
        compiled = compile_file(path, selection)
    except SexpError as exc:
        return {"ok": False, "file": path, "ms": _ms(started),
                "diagnostics": [d.to_json() for d in exc.diagnostics], "error": exc}
    except Exception as exc:  # noqa: BLE001 - a bug must not end the watch; report it, go on
        internal = SexpError(Diagnostic(E_INTERNAL, "internal error, please report: "
                                        f"{type(exc).__name__}: {exc}"))
        return {"ok": False, "file": path, "ms": _ms(started),
                "diagnostics": [d.to_json() for d in internal.diagnostics], "error": internal}
    graphs = {g.name: len(g.nodes) for g in compiled.step_graphs()}
    return {"ok": True, "file": path, "ms": _ms(started),
            "parameters": sum(p.count for p in compiled.params), "graphs": graphs,
            "watching": own_sources(path, compiled.sources),
            "warnings": [w.to_json() for w in compiled.warnings]}


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def line(result: dict[str, Any]) -> str:
    when = time.strftime("%H:%M:%S")
    if result["ok"]:
        warned = len(result.get("warnings", []))
        return (f"{when} ok {result['file']}: {result['parameters']:,} parameters "
                f"({result['ms']:.0f} ms)" + (f", {warned} warnings" if warned else ""))
    first = result["diagnostics"][0]
    span = first["span"]
    where = f"{span['file']}:{span['line']}:{span['col']}: " if span else ""
    more = len(result["diagnostics"]) - 1
    return (f"{when} error[{first['code']}] {where}{first['message']}"
            + (f" (+{more} more)" if more else ""))


def report(result: dict[str, Any], as_json: bool) -> None:
    error = result.pop("error", None)
    if as_json:
        print_json(result)
    else:
        sys.stdout.write(line(result) + "\n")
        if error is not None:
            sys.stderr.write(render_all(error.diagnostics) + "\n")
        elif result.get("warnings"):
            sys.stderr.write(render_all([_diagnostic(w) for w in result["warnings"]]) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "watch", argv)
    path, interval = args["FILE"], float(args["--interval"])
    selection = from_docopt(args)
    watching = [path]  # widened to FILE's own required modules after each good check
    seen: object = "never checked"  # so the first look always checks, even a missing file
    try:
        while True:
            now = [stamp(name) for name in watching]
            if now != seen:
                result = check_once(path, selection)
                if result.get("watching", watching) != watching:
                    watching = result["watching"]
                    now = [stamp(name) for name in watching]
                seen = now  # stamps from before the check: a save during it is seen next
                report(result, args["--json"])
            time.sleep(interval)
    except KeyboardInterrupt:  # Ctrl-C is how a watch ends: not an interruption to resume
        return 0


def _diagnostic(data: dict[str, Any]) -> Diagnostic:
    """A diagnostic back from its JSON form (the watch result keeps the JSON)."""
    span = data.get("span")
    return Diagnostic(data["code"], data["message"], Span(**span) if span else None,
                      data.get("expected"), data.get("actual"), data.get("fix"),
                      [Note(n["message"], Span(**n["span"]) if n.get("span") else None)
                       for n in data.get("notes", [])])
