"""`sexpgpu sweep FILE NAME`: every point of a declared sweep, in order, each the run that
`sexpgpu run FILE --set ...` makes; unknown sweeps and clashing --set are diagnostics.

One module-scoped sweep trains the 2-point seed sweep of tests/sweep/tiny.sx (3 steps;
the seed leaves the kernels alone, so the second point compiles nothing)."""

from __future__ import annotations

import orjson
import pytest
from cmd_helpers import SWEEP_TINY, sexpgpu, sexpgpu_json

from sexpgpu import cli
from sexpgpu.commands.sweep import table
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.runtime import rundir
from sexpgpu.selection import Selection


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[int, dict, str, str]:
    cache = str(tmp_path_factory.mktemp("cache"))
    mp = pytest.MonkeyPatch()
    mp.setenv("SEXPGPU_CACHE_DIR", cache)
    runs = tmp_path_factory.mktemp("runs")
    capture = tmp_path_factory.mktemp("out") / "stdout.json"
    import contextlib

    with open(capture, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        code = cli.main(["sweep", str(SWEEP_TINY), "seeds", "--runs", str(runs), "--json"])
    mp.undo()
    return code, orjson.loads(capture.read_text(encoding="utf-8")), str(runs), cache


def test_every_point_runs_in_order(swept) -> None:
    code, report, _, _ = swept
    assert code == 0 and report["ok"] is True and report["planned"] == 2
    assert [p["point"] for p in report["points"]] == [0, 1]
    assert [p["set"] for p in report["points"]] == [{"seed": "1"}, {"seed": "2"}]
    for point in report["points"]:
        assert point["state"] == "done" and point["step"] == 3
        assert set(point["last_eval"]) == {"test/loss", "test/accuracy", "step"}
        assert point["targets"][0]["metric"] == "test/accuracy"
    # different seeds, different initial weights: the losses differ
    assert report["points"][0]["last_loss"] != report["points"][1]["last_loss"]


def test_each_point_is_the_run_of_its_selection(swept) -> None:
    _, report, runs, _ = swept
    for point in report["points"]:
        plan = run_plan(compile_file(str(SWEEP_TINY), Selection(point["set"])))
        assert point["run"] == rundir.slug_for(plan)
        stored = orjson.loads((rundir.Path(runs) / point["run"] / "plan.json").read_bytes())
        assert stored["plan_json"]["knobs"]["seed"] == int(point["set"]["seed"])


def test_table_has_one_row_per_point_and_the_final_metrics(swept) -> None:
    _, report, _, _ = swept
    lines = table(report["points"]).splitlines()
    assert lines[0].split() == ["point", "seed", "state", "loss", "test/loss", "test/accuracy",
                                "targets", "run"]
    assert [line.split()[:3] for line in lines[1:]] == [["0", "1", "done"], ["1", "2", "done"]]


def test_unknown_sweep_is_the_selection_diagnostic_with_did_you_mean(capsys) -> None:
    code, payload = sexpgpu_json(capsys, "sweep", SWEEP_TINY, "lr-scn")
    assert code == 1
    diag = payload["diagnostics"][0]
    assert diag["code"] == "E-SWEEP" and diag["fix"] == "did you mean `lr-scan`?"


def test_set_of_a_swept_knob_is_refused(capsys) -> None:
    code, payload = sexpgpu_json(capsys, "sweep", SWEEP_TINY, "lr-scan", "--set", "lr=0.1")
    assert code == 1
    diag = payload["diagnostics"][0]
    assert diag["code"] == "E-SWEEP-SET"
    assert (diag["span"]["line"], diag["span"]["col"]) == (13, 1)


def test_unknown_variant_is_checked_before_any_point_runs(capsys, tmp_path) -> None:
    code, _, err = sexpgpu(capsys, "sweep", SWEEP_TINY, "seeds", "--variant", "slo",
                           "--runs", tmp_path)
    assert code == 1 and "E-VARIANT-UNKNOWN" in err and "`slow`" in err
    assert not any(tmp_path.iterdir())


def test_running_it_again_refuses_each_existing_point(swept, capsys, monkeypatch) -> None:
    _, _, runs, cache = swept
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", cache)
    code, report = sexpgpu_json(capsys, "sweep", SWEEP_TINY, "seeds", "--runs", runs)
    assert code == 1 and report["ok"] is False
    assert [p["error"]["code"] for p in report["points"]] == ["E-RUN-EXISTS", "E-RUN-EXISTS"]
    assert "failed (E-RUN-EXISTS)" in table(report["points"])


# -- several points at a time, and Slurm ----------------------------------------------


def _three_points(tmp_path) -> str:
    path = tmp_path / "three.sx"
    text = SWEEP_TINY.read_text().replace("(defsweep seeds", "(defsweep three :seed (1 2 3))\n"
                                          "(defsweep seeds")
    path.write_text(text)
    return str(path)


def test_jobs_2_gives_the_sequential_results(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))
    file = _three_points(tmp_path)
    reports = {}
    for jobs in ("1", "2"):
        runs = tmp_path / f"runs-{jobs}"
        code, reports[jobs] = sexpgpu_json(capsys, "sweep", file, "three", "--runs", str(runs),
                                           "--jobs", jobs)
        assert code == 0 and reports[jobs]["ok"] is True
    one, two = reports["1"]["points"], reports["2"]["points"]
    assert [p["set"] for p in two] == [{"seed": "1"}, {"seed": "2"}, {"seed": "3"}]
    for a, b in zip(one, two):
        assert b["state"] == "done" and b["run"] == a["run"]  # each point its own run
        assert b["last_loss"] == a["last_loss"] and b["last_eval"] == a["last_eval"]
    assert len({p["run"] for p in two}) == 3


def test_slurm_script_passes_bash_n_and_runs_its_point(tmp_path, capsys) -> None:
    import shutil
    import subprocess

    file = _three_points(tmp_path)
    code, script, _ = sexpgpu(capsys, "sweep", file, "three", "--emit", "slurm",
                              "--set", "lr=0.02", "--runs", "my runs")
    assert code == 0 and "#SBATCH --array=0-2" in script
    for seed in (1, 2, 3):
        assert f"--set=seed={seed}'  # point {seed - 1}" in script
    path = tmp_path / "sweep.sbatch"
    path.write_text(script)
    bash = shutil.which("bash")
    assert subprocess.run([bash, "-n", str(path)]).returncode == 0
    # a stand-in `sexpgpu` shows what task 2 runs, first time and once requeued
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sexpgpu").write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    (fake / "sexpgpu").chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin", "SLURM_ARRAY_TASK_ID": "2"}
    first = subprocess.run([bash, str(path)], env=env, capture_output=True, text=True,
                           cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout == (f"run|{file}|--set=lr=0.02|--runs=my runs|--progress-every=30|"
                            "--set=seed=3|")
    again = subprocess.run([bash, str(path)], env={**env, "SLURM_RESTART_COUNT": "1"},
                           capture_output=True, text=True, cwd=tmp_path)
    assert again.stdout.endswith("--set=seed=3|--resume|latest|")


def test_jobs_must_be_a_positive_number(capsys) -> None:
    code, _, err = sexpgpu(capsys, "sweep", str(SWEEP_TINY), "seeds", "--jobs", "0")
    assert code == 1 and "E-RUN-FLAG" in err and "--jobs 0" in err
