"""The `sexpgpu` command: parses the verb and hands the rest to its module
(sexpgpu/commands/VERB.py, whose HELP is the verb's usage); usage errors, diagnostics
and internal errors become exit codes here."""

from __future__ import annotations

import importlib
import os
import sys

from sexpgpu import __version__, env
from sexpgpu.diagnostics import E_INTERNAL, Diagnostic, Note, SexpError, SourceMap, render_all
from sexpgpu.exitcodes import EXIT_ERRORS, EXIT_OK, EXIT_PREEMPTED, EXIT_USAGE
from sexpgpu.runtime.signals import Stopped, StopRequests
from sexpgpu.suggest import nearest
from sexpgpu.usage import E_USAGE, UsageError

HELP = """\
sexpgpu: one .sx file states one ML experiment; check it, explain it, train it.

Usage:
  sexpgpu COMMAND [ARGS...]
  sexpgpu (-h | --help)
  sexpgpu --version

Commands:
  check      compile a run file and check every shape (no data, no GPU, < 1 s)
  explain    parameters, optimizer groups and schedules, one step's FLOPs, memory
  run        train; progress on stderr, the run directory under runs/
  diff       what differs between two run files or two runs, results included
  plot       draw any series of one or more runs into a PNG
  sweep      run every point of a declared sweep
  variants   the declared knobs, variants and sweeps
  new        a new run file from another with the selection written in
  fmt        the one canonical layout of a .sx file
  watch      check a run file again on every save
  ir         the IR of the step and the lowering report
  eval       evaluate a file (or -e EXPR) as compile-time Lisp
  checkpoint list or show the checkpoints of a run
  sample     text from a trained language model (its defpredict)
  predict    a trained model's outputs for the rows of a .npy file
  export     a run's parameters as safetensors or npz, named by path
  bundle     one directory that trains the run elsewhere and resumes it
  doctor     whether a run can start here
  docs       the manual: list its pages, print one, or all of them

Run `sexpgpu COMMAND --help` for a command's options, `sexpgpu docs` for the manual.

Exit codes: 0 ok, 1 the file has errors or a run failed, 2 usage,
3 runtime failure (non-finite, data), 75 interrupted and resumable.
"""

# verb -> module under sexpgpu.commands exposing main(argv) -> int
COMMANDS: dict[str, str] = {
    "eval": "eval_",
    "check": "check",
    "explain": "explain",
    "ir": "ir",
    "variants": "variants",
    "run": "run",
    "checkpoint": "checkpoint",
    "sample": "sample",
    "predict": "predict",
    "export": "export",
    "plot": "plot",
    "sweep": "sweep",
    "watch": "watch",
    "diff": "diff",
    "new": "new",
    "fmt": "fmt",
    "bundle": "bundle",
    "doctor": "doctor",
    "docs": "docs",
}
# verbs a scheduler preempts: a stop signal from the first moment (importing numba takes
# a while) is exit 75, never death by the signal (docs/bundle.md, "Preemptible jobs")
PREEMPTIBLE = ("run", "sweep")


def print_diagnostics(
    diags: list[Diagnostic], *, as_json: bool, sources: SourceMap | None = None
) -> None:
    """Diagnostics go to stderr as text, or to stdout as JSON with --json."""
    if as_json:
        # only for --json: orjson kept off the import path of every command
        from sexpgpu.atomic import print_json

        payload = {"ok": False, "diagnostics": [d.to_json() for d in diags]}
        print_json(payload)
    else:
        sys.stderr.write(render_all(diags, sources) + "\n")


def _internal_error(exc: BaseException, as_json: bool) -> int:
    diag = Diagnostic(E_INTERNAL, f"internal error, please report: {type(exc).__name__}: {exc}")
    if not env.debug():
        diag.fix = "rerun with SEXPGPU_DEBUG=1 to see the Python traceback"
    print_diagnostics([diag], as_json=as_json)
    if env.debug():
        import traceback  # only to show an internal error: kept off every command's path

        traceback.print_exception(exc)
    return EXIT_ERRORS


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(HELP)
        return EXIT_OK if argv else EXIT_USAGE
    if argv[0] == "--version":
        sys.stdout.write(f"sexpgpu {__version__}\n")
        return EXIT_OK
    verb, rest = argv[0], argv[1:]
    module_name = COMMANDS.get(verb)
    as_json = "--json" in rest
    if module_name is None:
        print_diagnostics([_unknown_verb(verb)], as_json=as_json)
        return EXIT_USAGE
    if verb in PREEMPTIBLE:
        with StopRequests(abort=True):
            try:
                return _dispatch(module_name, rest, as_json)
            except Stopped as exc:
                return _stopped(verb, exc)
    return _dispatch(module_name, rest, as_json)


def _unknown_verb(verb: str) -> Diagnostic:
    near = nearest(verb, COMMANDS)
    return Diagnostic(E_USAGE, f"unknown command `{verb}`", actual=f"sexpgpu {verb}",
                      fix=f"did you mean `sexpgpu {near}`?" if near
                      else "`sexpgpu --help` lists the commands",
                      notes=[Note("commands: " + ", ".join(COMMANDS))])


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
    except UsageError as exc:  # the command line does not fit the verb: exit 2
        print_diagnostics(exc.diagnostics, as_json=as_json)
        return EXIT_USAGE
    except SexpError as exc:
        print_diagnostics(exc.diagnostics, as_json=as_json)
        return EXIT_ERRORS
    except SystemExit as exc:  # `--help` (docopt prints the help and exits 0)
        return EXIT_OK if exc.code in (None, 0) else EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_PREEMPTED
    except BrokenPipeError:  # `sexpgpu docs --all | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the one place internal errors are caught
        return _internal_error(exc, as_json)
