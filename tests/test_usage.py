"""The command line's front door: usage errors are E-USAGE diagnostics (exit 2) with a
did-you-mean against the verb's real options, never docopt's internals; `KEY=VALUE`
after the file is `--set KEY=VALUE`; every verb's --help is written for users."""

from __future__ import annotations

import orjson
import pytest
from cmd_helpers import ROOT, sexpgpu

from sexpgpu import cli, usage
from sexpgpu.commands import run as run_cmd

MLP = str(ROOT / "examples" / "mnist1d-mlp.sx")


def test_a_knob_written_as_an_option_renders_exactly(capsys) -> None:
    code, out, err = sexpgpu(capsys, "run", "mine.sx", "--steps", "5")
    assert code == cli.EXIT_USAGE and out == ""
    assert err == (
        "error[E-USAGE]: `sexpgpu run` has no option `--steps`\n"
        "   = actual: sexpgpu run mine.sx --steps 5\n"
        "   = fix: did you mean `--set steps=5`?\n"
        "   = note: usage: sexpgpu run FILE [--set K=V]... [--variant NAME] [--runs DIR] "
        "[--resume WHICH] [--device DEV] [--precision P] [--checkpoint-every N] [--log-every N] "
        "[--diag PATTERN]... [--diag-every N] [--progress-every S] [--procs N] "
        "[--log-to SINKS] [--json]\n"
        "   = note: `sexpgpu run --help` explains every option\n")


@pytest.mark.parametrize("argv, message, fix", [
    (["run", "a.sx", "--seed", "43"], "`sexpgpu run` has no option `--seed`",
     "did you mean `--set seed=43`?"),
    (["run", "a.sx", "--steps=5"], "`sexpgpu run` has no option `--steps`",
     "did you mean `--set steps=5`?"),
    (["run", "a.sx", "--varaint", "small"], "`sexpgpu run` has no option `--varaint`",
     "did you mean `--variant`?"),
    (["plot", "runs/x", "--metrc", "lr"], "`sexpgpu plot` has no option `--metrc`",
     "did you mean `--metric`?"),
    (["new", "foo.sx"], "missing TO", "write `sexpgpu new FROM TO`"),
    (["check"], "missing FILE", "write `sexpgpu check FILE`"),
    (["diff", "a", "b", "c"], "unexpected argument `c`", "`sexpgpu diff` takes A B"),
    (["run", "a.sx", "--runs"], "`--runs` needs a value", "write `--runs DIR`"),
    (["run", "a.sx", "--variant", "a", "--variant", "b"], "`--variant` is given twice",
     "give `--variant` once"),
    (["variants", "a.sx", "lr=1"], "unexpected argument `lr=1`",
     "`sexpgpu variants` takes no knobs"),
    (["chek", "a.sx"], "unknown command `chek`", "did you mean `sexpgpu check`?"),
])
def test_usage_errors_name_the_argument_and_the_fix(capsys, argv, message, fix) -> None:
    code, out, err = sexpgpu(capsys, *argv)
    assert code == cli.EXIT_USAGE, err
    assert err.startswith(f"error[E-USAGE]: {message}\n"), err
    assert f"   = fix: {fix}\n" in err
    for leak in ("Warning", "Option(", "Argument(", "unmatched", "Traceback"):
        assert leak not in err


def test_usage_error_as_json(capsys) -> None:
    code, out, _ = sexpgpu(capsys, "new", "foo.sx", "--json")
    payload = orjson.loads(out)
    assert code == cli.EXIT_USAGE and payload["ok"] is False
    (diag,) = payload["diagnostics"]
    assert diag["code"] == "E-USAGE" and diag["message"] == "missing TO"


def test_key_value_after_the_file_is_set(capsys) -> None:
    code, out, _ = sexpgpu(capsys, "check", MLP, "hidden=64", "lr=3e-2", "--json")
    assert code == 0
    assert orjson.loads(out)["knobs"]["hidden"] == 64
    options = usage.options_of(run_cmd.HELP)
    assert usage.hydra_sets(["f.sx", "lr=1", "--runs", "a=b", "./x=y.sx"], options) == [
        "f.sx", "--set", "lr=1", "--runs", "a=b", "./x=y.sx"]


def test_an_unknown_knob_given_as_key_value_is_the_knob_diagnostic(capsys) -> None:
    code, _, err = sexpgpu(capsys, "check", MLP, "hiden=64")
    assert code == 1 and "error[E-KNOB-UNKNOWN]" in err and "did you mean `hidden`?" in err


def test_every_verb_has_help_for_users(capsys) -> None:
    for verb in cli.COMMANDS:
        code, out, err = sexpgpu(capsys, verb, "--help")
        assert code == 0 and err == "", verb
        first = out.splitlines()[0]
        # a sentence for the person typing: not a module path, not `sexpgpu VERB:`
        assert first[0].isupper() and not first.startswith("`"), (verb, first)
        assert "Usage:" in out and "Example" in out, verb
