"""Run settings are resolved once, at the contract boundary: defrun's values, then the
command line's overrides, validated into the RunSpec before anything is traced."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cmd_helpers import ROOT, sexpgpu

from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.diagnostics import SexpError
from sexpgpu.record import field_names
from sexpgpu.runtime.spec import RunSpec
from sexpgpu.selection import Selection

LOGREG = ROOT / "examples" / "mnist1d-logreg.sx"
BROKEN = Path(__file__).parent / "broken"


def _with_defrun(tmp_path: Path, defrun: str) -> str:
    source = BROKEN.joinpath("device-unknown.sx").read_text().splitlines()[1:-1]
    path = tmp_path / "run.sx"
    path.write_text("\n".join([*source, defrun]) + "\n")
    return str(path)


def _run_spec(path: str, **run: str) -> RunSpec:
    return compile_file(path, Selection(run=run), trace=False).experiment.run


def test_unknown_device_flag_is_refused_before_anything_compiles() -> None:
    script = ("import sys; from sexpgpu import cli; "
              f"code = cli.main(['run', {str(LOGREG)!r}, '--device', 'tpu', '--runs', 'x']); "
              "print(code, 'numba' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["1", "False"], proc.stderr
    assert "error[E-DEVICE]: --device: unknown device `tpu`" in proc.stderr
    assert "did you mean `cpu`?" in proc.stderr and "Traceback" not in proc.stderr


def test_device_typo_in_defrun_is_a_diagnostic_at_its_line(tmp_path: Path) -> None:
    path = _with_defrun(tmp_path, "(defrun :steps steps :device :cdua)")
    with pytest.raises(SexpError) as info:
        _run_spec(path)
    diag = info.value.diagnostic
    assert diag.code == "E-DEVICE" and diag.span.line == 14 and diag.fix == "did you mean `cuda`?"


def test_the_command_line_wins_over_defrun(tmp_path: Path) -> None:
    path = _with_defrun(tmp_path, "(defrun :steps steps :device :cuda :log-every 7)")
    assert (_run_spec(path).device, _run_spec(path).log_every) == ("cuda", 7)
    spec = _run_spec(path, **{"device": "cpu", "log-every": "3", "checkpoint-every": "0"})
    assert (spec.device, spec.log_every, spec.checkpoint_every) == ("cpu", 3, 0)


def test_defrun_defaults_are_runspecs(tmp_path: Path) -> None:
    spec = _run_spec(_with_defrun(tmp_path, "(defrun :steps 5)"))
    defaults = RunSpec(steps=5, train_loader=spec.train_loader)
    assert [getattr(spec, f) for f in field_names(RunSpec)] == \
        [getattr(defaults, f) for f in field_names(RunSpec)]


@pytest.mark.parametrize("flag", ["--log-every", "--checkpoint-every"])
def test_a_cadence_flag_needs_a_number(capsys, flag: str) -> None:
    code, _, err = sexpgpu(capsys, "run", LOGREG, flag, "ten", "--runs", "unused")
    assert code == 1 and f"error[E-RUN-FLAG]: {flag} ten" in err


def test_load_program_device_overrides_defrun_like_the_flag(tmp_path: Path) -> None:
    from sexpgpu import api

    path = _with_defrun(tmp_path, "(defrun :steps steps :device :cuda)")
    with pytest.raises(SexpError) as info:
        api.load_program(path, device="gpu")
    assert info.value.diagnostic.code == "E-DEVICE"
    plan, program = api.load_program(path, device="cpu")
    assert plan.run.device == "cpu" and program.params()


def test_result_free_settings_leave_the_plan_hash_alone() -> None:
    plain = run_plan(compile_file(str(LOGREG), Selection()))
    flags = {"device": "cuda", "log-every": "1", "checkpoint-every": "5"}
    flagged = run_plan(compile_file(str(LOGREG), Selection(run=flags)))
    assert flagged.run.device == "cuda" and flagged.plan_json["run"]["log_every"] == 1
    assert plain.plan_hash == flagged.plan_hash


# -- precision --------------------------------------------------------------------


def test_precision_changes_the_plan_hash_and_the_run_name() -> None:
    """Unlike the device, precision changes results: `--precision bf16` wins over defrun,
    reaches the plan (and its hash) and names the run; the f32 masters a checkpoint holds
    are the same plan's (`masters_hash`)."""
    from sexpgpu.commands.diff import plan_changes
    from sexpgpu.runtime.rundir import slug_for

    plain = run_plan(compile_file(str(LOGREG), Selection()))
    bf16 = run_plan(compile_file(str(LOGREG), Selection(run={"precision": "bf16"})))
    assert (plain.run.precision, bf16.run.precision) == ("f32", "bf16")
    assert plain.plan_hash != bf16.plan_hash and plain.masters_hash == bf16.masters_hash
    assert "-bf16-" in slug_for(bf16) and "bf16" not in slug_for(plain)
    changes = plan_changes(plain.plan_json, bf16.plan_json)["run"]
    assert changes == [{"path": "run.precision", "a": "f32", "b": "bf16"}]
    memory = bf16.plan_json["memory_by_precision"]
    assert set(memory) == {"f32", "bf16"} and memory == plain.plan_json["memory_by_precision"]


def test_precision_flag_is_checked_before_anything_compiles(capsys) -> None:
    code, _, err = sexpgpu(capsys, "run", LOGREG, "--precision", "bf61", "--runs", "unused")
    assert code == 1 and "error[E-RUN-FLAG]: --precision: unknown precision :bf61" in err
    assert "did you mean `:bf16`?" in err
    code, _, err = sexpgpu(capsys, "run", LOGREG, "--precision", "f16", "--runs", "unused")
    assert code == 1 and "error[E-PRECISION]: --precision: f16 is not available" in err


def test_explain_shows_memory_in_both_precisions_and_ir_the_casts(capsys) -> None:
    mlp = ROOT / "examples" / "mnist1d-mlp.sx"
    code, out, _ = sexpgpu(capsys, "explain", mlp, "--precision", "bf16")
    assert code == 0
    line = next(x for x in out.splitlines() if "step buffers" in x)
    assert "f32 " in line and "bf16 " in line and "(this run)" in line.split("bf16")[1]
    code, out, _ = sexpgpu(capsys, "ir", mlp, "--precision", "bf16", "--no-lower")
    assert code == 0 and out.startswith(";; precision bf16")
    assert ":dtype bf16 : bf16[100 40]" in out  # the batch rounded for the first matmul
    code, out, _ = sexpgpu(capsys, "ir", mlp, "--no-lower")
    assert code == 0 and out.startswith(";; precision f32")
    assert "bf16[" not in out and ":dtype bf16" not in out  # f32: the traced graphs
