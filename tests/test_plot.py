"""`sexpgpu plot`: curves read from a real run directory (the numpy stand-in program),
the PNG drawn with targets as reference lines, and its three diagnostics."""

from __future__ import annotations

import io
import sys

import orjson
import pytest

from sexpgpu import cli
from sexpgpu.diagnostics import SexpError
from sexpgpu.plot import RunCurves, draw, panels, read_run, run_labels
from sexpgpu.runtime.events import EventLog
from sexpgpu.runtime.loop import run_training
from sexpgpu.runtime.numpy_program import SoftmaxRegression, demo_plan

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("plot")
    plan = demo_plan(str(base / "demo.sx"), steps=40, eval_every=10, log_every=5)
    code, summary = run_training(plan, SoftmaxRegression(8, 4), base / "runs", stderr=io.StringIO())
    assert code == 0
    return base / "runs" / summary["run"]


def test_read_run_collects_loss_eval_series_and_targets(run_dir):
    curves = read_run(run_dir)
    assert [s for s, _ in curves.series["loss"]] == [1, 5, 10, 15, 20, 25, 30, 35, 40]
    assert [s for s, _ in curves.series["test/accuracy"]] == [10, 20, 30, 40]
    assert [s for s, _ in curves.series["test/loss"]] == [10, 20, 30, 40]
    assert curves.series["loss"][-1][1] < curves.series["loss"][0][1]  # it trained
    assert curves.targets[0]["metric"] == "test/accuracy" and curves.targets[0]["value"] == 0.5
    assert panels([curves]) == {"loss": ["loss", "test/loss"], "test/accuracy": ["test/accuracy"]}


def test_a_resumed_runs_repeated_steps_count_once(run_dir, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "plan.json").write_bytes((run_dir / "plan.json").read_bytes())
    (copy / "events.jsonl").write_bytes((run_dir / "events.jsonl").read_bytes())
    log = EventLog(copy / "events.jsonl")
    log.emit("step", step=40, loss=123.0, lr=0.1, grad_norm=1.0, step_ms=1.0,
             samples_per_s=1.0, epoch=1)
    log.close()
    loss = dict(read_run(copy).series["loss"])
    assert loss[40] == 123.0 and len(loss) == 9


def test_plot_draws_a_png_with_the_target_line(run_dir, tmp_path, capsys):
    out = tmp_path / "curves.png"
    code = cli.main(["plot", str(run_dir), "--out", str(out), "--json"])
    assert code == 0
    drawn = orjson.loads(capsys.readouterr().out)
    assert drawn["ok"] and drawn["out"] == str(out) and drawn["runs"] == [run_dir.name]
    assert drawn["targets"][0]["metric"] == "test/accuracy"
    assert out.read_bytes()[:8] == PNG_MAGIC and out.stat().st_size > 10_000


def test_plot_several_runs_and_one_metric(run_dir, tmp_path):
    drawn = draw([run_dir, run_dir], tmp_path / "two.png", metrics=["test/accuracy"])
    assert drawn["panels"] == {"test/accuracy": ["test/accuracy"]}
    assert len(drawn["targets"]) == 1  # the same target from two runs is drawn once
    assert (tmp_path / "two.png").read_bytes()[:8] == PNG_MAGIC


def test_unknown_metric_is_e_plot_metric_with_a_suggestion(run_dir, tmp_path):
    with pytest.raises(SexpError) as info:
        draw([run_dir], tmp_path / "x.png", metrics=["test/acuracy"])
    diag = info.value.diagnostic
    assert diag.code == "E-PLOT-METRIC" and diag.fix == "--metric test/accuracy"
    assert not (tmp_path / "x.png").exists()


def test_a_directory_without_events_is_e_plot_run(tmp_path, capsys):
    code = cli.main(["plot", str(tmp_path), "--out", str(tmp_path / "x.png"), "--json"])
    assert code == 1
    diag = orjson.loads(capsys.readouterr().out)["diagnostics"][0]
    assert diag["code"] == "E-PLOT-RUN" and "has no events.jsonl" in diag["actual"]


def test_without_matplotlib_plot_is_e_plot_missing(run_dir, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(SexpError) as info:
        draw([run_dir], tmp_path / "x.png")
    diag = info.value.diagnostic
    assert diag.code == "E-PLOT-MISSING" and diag.fix == "pip install sexpgpu[plot]"


def test_legend_names_runs_by_the_selection_that_differs():
    a = RunCurves("mlp-lr=0.01_seed=42-ab", selection={"lr": 0.01, "seed": 42})
    b = RunCurves("mlp-lr=0.01_seed=43-cd", selection={"lr": 0.01, "seed": 43})
    assert run_labels([a, b]) == ["seed=42", "seed=43"]
    assert run_labels([a, a]) == [a.name, a.name]  # nothing differs: the directory names
