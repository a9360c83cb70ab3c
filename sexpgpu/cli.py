"""The `sexpgpu` command: parses the verb and hands the rest to its module.

Usage:
  sexpgpu <command> [<args>...]
  sexpgpu (-h | --help)
  sexpgpu --version

Commands:
  eval       evaluate a file (or -e EXPR) as compile-time Lisp
  check      compile a run file and check every shape
  explain    parameters, optimizer groups, one step, memory
  ir         the IR (forward, backward, step) and the lowering report
  variants   the declared knobs, variants and sweeps
  run        train
  sweep      run every point of a declared sweep
  checkpoint list or show the checkpoints of a run
  plot       draw the loss and eval curves of runs
  watch      re-check a run file on every save
  diff       what differs between two run files or runs, by section
  new        a new run file from another with the selection written in
  fmt        the one canonical layout of a .sx file
  bundle     one directory that trains the run elsewhere and resumes it
  doctor     whether a run can start here

Run `sexpgpu <command> --help` for a command's options.

Exit codes: 0 ok, 1 the file has errors or a run failed, 2 usage,
3 runtime failure (non-finite, data), 75 interrupted and resumable.
"""

from __future__ import annotations

import importlib
import sys
import traceback

from sexpgpu import __version__, env
from sexpgpu.diagnostics import E_INTERNAL, Diagnostic, SexpError, SourceMap, render_all
from sexpgpu.exitcodes import EXIT_ERRORS, EXIT_OK, EXIT_PREEMPTED, EXIT_USAGE
from sexpgpu.runtime.signals import Stopped, StopRequests

# verb -> module under sexpgpu.commands exposing main(argv) -> int
COMMANDS: dict[str, str] = {
    "eval": "eval_",
    "check": "check",
    "explain": "explain",
    "ir": "ir",
    "variants": "variants",
    "run": "run",
    "checkpoint": "checkpoint",
    "plot": "plot",
    "sweep": "sweep",
    "watch": "watch",
    "diff": "diff",
    "new": "new",
    "fmt": "fmt",
    "bundle": "bundle",
    "doctor": "doctor",
}
# verbs a scheduler preempts: a stop signal from the first moment (importing numba takes
# a while) is exit 75, never death by the signal (docs/bundle.md, "Preemptible jobs")
PREEMPTIBLE = ("run", "sweep")


def print_diagnostics(
    diags: list[Diagnostic], *, as_json: bool, sources: SourceMap | None = None
) -> None:
    """Diagnostics go to stderr as text, or to stdout as JSON with --json."""
    if as_json:
        import orjson  # only for --json: kept off the import path of every command

        payload = {"ok": False, "diagnostics": [d.to_json() for d in diags]}
        sys.stdout.write(orjson.dumps(payload).decode() + "\n")
    else:
        sys.stderr.write(render_all(diags, sources) + "\n")


def _internal_error(exc: BaseException, as_json: bool) -> int:
    diag = Diagnostic(E_INTERNAL, f"internal error, please report: {type(exc).__name__}: {exc}")
    if not env.debug():
        diag.fix = "rerun with SEXPGPU_DEBUG=1 to see the Python traceback"
    print_diagnostics([diag], as_json=as_json)
    if env.debug():
        traceback.print_exception(exc)
    return EXIT_ERRORS


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__.strip() + "\n")
        return EXIT_OK if argv else EXIT_USAGE
    if argv[0] == "--version":
        sys.stdout.write(f"sexpgpu {__version__}\n")
        return EXIT_OK
    verb, rest = argv[0], argv[1:]
    module_name = COMMANDS.get(verb)
    if module_name is None:
        sys.stderr.write(f"sexpgpu: unknown command {verb!r}\n\n{__doc__.strip()}\n")
        return EXIT_USAGE
    as_json = "--json" in rest
    if verb in PREEMPTIBLE:
        with StopRequests(abort=True):
            try:
                return _dispatch(module_name, rest, as_json)
            except Stopped as exc:
                return _stopped(verb, exc)
    return _dispatch(module_name, rest, as_json)


def _stopped(verb: str, exc: Stopped) -> int:
    sys.stderr.write(f"sexpgpu {verb}: stopped by {exc.signame} before training began; "
                     "nothing was written, run it again to start\n")
    return EXIT_PREEMPTED


def _dispatch(module_name: str, rest: list[str], as_json: bool) -> int:
    """Run one verb's main: diagnostics and internal errors become exit codes here."""
    try:
        module = importlib.import_module(f"sexpgpu.commands.{module_name}")
        return module.main(rest)
    except Stopped as exc:
        return _stopped(module_name, exc)
    except SexpError as exc:
        print_diagnostics(exc.diagnostics, as_json=as_json)
        return EXIT_ERRORS
    except SystemExit as exc:  # docopt usage errors
        if exc.code not in (None, 0) and isinstance(exc.code, str):
            sys.stderr.write(exc.code + "\n")
            return EXIT_USAGE
        return EXIT_OK if exc.code in (None, 0) else int(exc.code)
    except KeyboardInterrupt:
        return EXIT_PREEMPTED
    except Exception as exc:  # noqa: BLE001 - the one place internal errors are caught
        return _internal_error(exc, as_json)
