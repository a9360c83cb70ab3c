"""The command dispatcher: usage, exit codes, and internal errors shown as such."""

from __future__ import annotations

import sys
import types

import orjson

from sexpgpu import cli


def test_no_arguments_is_usage(capsys) -> None:
    assert cli.main([]) == cli.EXIT_USAGE
    assert "Usage:" in capsys.readouterr().out


def test_unknown_verb_is_usage(capsys) -> None:
    assert cli.main(["frobnicate"]) == cli.EXIT_USAGE
    assert "error[E-USAGE]: unknown command `frobnicate`" in capsys.readouterr().err


def test_version(capsys) -> None:
    assert cli.main(["--version"]) == cli.EXIT_OK
    assert capsys.readouterr().out.startswith("sexpgpu ")


def _broken_command(monkeypatch) -> None:
    module = types.ModuleType("sexpgpu.commands.broken")

    def main(argv: list[str]) -> int:
        raise RuntimeError("a bug")

    module.main = main
    monkeypatch.setitem(sys.modules, "sexpgpu.commands.broken", module)
    monkeypatch.setitem(cli.COMMANDS, "broken", "broken")


def test_internal_error_is_reported_not_raised(monkeypatch, capsys) -> None:
    _broken_command(monkeypatch)
    monkeypatch.delenv("SEXPGPU_DEBUG", raising=False)
    assert cli.main(["broken"]) == cli.EXIT_ERRORS
    err = capsys.readouterr().err
    assert "error[E-INTERNAL]: internal error, please report: RuntimeError: a bug" in err
    assert "Traceback" not in err


def test_internal_error_as_json(monkeypatch, capsys) -> None:
    _broken_command(monkeypatch)
    assert cli.main(["broken", "--json"]) == cli.EXIT_ERRORS
    payload = orjson.loads(capsys.readouterr().out)
    assert payload["diagnostics"][0]["code"] == "E-INTERNAL"


def test_debug_shows_traceback(monkeypatch, capsys) -> None:
    _broken_command(monkeypatch)
    monkeypatch.setenv("SEXPGPU_DEBUG", "1")
    cli.main(["broken"])
    assert "Traceback" in capsys.readouterr().err
