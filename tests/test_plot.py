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


# -- any series, several runs, a sweep against its knob --------------------------------


@pytest.fixture(scope="module")
def lr_runs(tmp_path_factory):
    """Three runs of the demo plan that differ in one knob, `lr`, as a sweep makes them;
    the first with a sampled diagnostic."""
    base = tmp_path_factory.mktemp("sweep")
    dirs = []
    for lr in (0.3, 0.03, 3.0):
        plan = demo_plan(str(base / "demo.sx"), steps=30, eval_every=10, log_every=5,
                         selection={"lr": lr, "seed": 0})
        program = SoftmaxRegression(8, 4, lr=lr)
        code, summary = run_training(plan, program, base / "runs", stderr=io.StringIO())
        assert code == 0
        dirs.append(base / "runs" / summary["run"])
    log = EventLog(dirs[0] / "events.jsonl")
    for step in (10, 20, 30):
        log.emit("diag", step=step, values={"grad-norm/w": 1.0 / step, "grad-norm/b": 0.1})
    log.close()
    return dirs


def test_every_number_a_run_records_is_a_series(lr_runs, capsys):
    curves = read_run(lr_runs[0])
    for name in ("loss", "lr", "grad_norm", "step_ms", "samples_per_s", "test/accuracy",
                 "grad-norm/w", "grad-norm/b"):
        assert curves.series[name], name
    assert [s for s, _ in curves.series["grad-norm/w"]] == [10, 20, 30]
    code = cli.main(["plot", str(lr_runs[0]), "--list"])
    assert code == 0
    assert capsys.readouterr().out.splitlines()[:3] == ["loss", "lr", "grad_norm"]


def test_plot_any_series_by_name_or_glob(lr_runs, tmp_path):
    drawn = draw(lr_runs, tmp_path / "any.png",
                 metrics=["lr", "grad_norm", "grad-norm/*", "test/accuracy"], smooth=3,
                 title="three learning rates")
    assert list(drawn["panels"]) == ["lr", "grad_norm", "grad-norm/b", "grad-norm/w",
                                     "test/accuracy"]
    assert (tmp_path / "any.png").read_bytes().startswith(PNG_MAGIC)


def test_the_legend_names_runs_by_their_knob_and_the_title_by_the_file(lr_runs):
    runs = [read_run(d) for d in lr_runs]
    assert run_labels(runs) == ["lr=0.3", "lr=0.03", "lr=3.0"]
    from sexpgpu.plot import default_title
    assert default_title(runs) == "demo (3 runs)"


def test_a_sweep_against_its_knob(lr_runs, tmp_path, capsys):
    out = tmp_path / "sweep.png"
    code = cli.main(["plot", *map(str, lr_runs), "--against", "lr", "--metric",
                     "test/accuracy", "--out", str(out), "--json"])
    drawn = orjson.loads(capsys.readouterr().out)
    assert code == 0 and drawn["against"] == "lr" and list(drawn["panels"]) == ["test/accuracy"]
    assert out.read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(SexpError) as caught:
        draw(lr_runs, tmp_path / "x.png", against="lrr")
    assert caught.value.diagnostic.code == "E-PLOT-METRIC"
    assert caught.value.diagnostic.fix == "did you mean `lr`?"


def test_smoothing_is_a_centred_moving_average():
    from sexpgpu.plot import smoothed
    assert smoothed([0.0, 3.0, 6.0, 9.0], 3) == [1.5, 3.0, 6.0, 7.5]
    assert smoothed([1.0, 2.0], 1) == [1.0, 2.0]
