"""Shared by the tests of the command-line verbs: run one verb in this process."""

from __future__ import annotations

from pathlib import Path

import orjson

from sexpgpu import cli

ROOT = Path(__file__).resolve().parent.parent
SWEEP_TINY = Path(__file__).resolve().parent / "sweep" / "tiny.sx"


def sexpgpu(capsys, *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `sexpgpu ARGV...` run in this process."""
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def sexpgpu_json(capsys, *argv: str) -> tuple[int, dict]:
    code, out, _ = sexpgpu(capsys, *argv, "--json")
    return code, orjson.loads(out.strip().splitlines()[-1])
