"""Curves of finished or running runs: read each run directory's events.jsonl and plan.json
into series, and draw them with matplotlib (an optional extra), targets as reference lines.

`sexpgpu plot` (commands/plot.py) is the command; reproduction scripts call `draw` directly.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sexpgpu.atomic import read_json
from sexpgpu.diagnostics import define_code, error
from sexpgpu.runtime.events import last_by_step, read_events

E_PLOT_MISSING = define_code(
    "E-PLOT-MISSING", "matplotlib is not installed",
    "`sexpgpu plot` draws with matplotlib, an optional dependency that a plain install "
    "leaves out. Install the `plot` extra (`pip install sexpgpu[plot]`) and run it again.",
)
E_PLOT_RUN = define_code(
    "E-PLOT-RUN", "not a run directory",
    "`sexpgpu plot` reads the `events.jsonl` (and `plan.json`) that `sexpgpu run` writes in "
    "each run directory (`runs/<slug>/`). The path given does not exist or holds no events.",
)
E_PLOT_METRIC = define_code(
    "E-PLOT-METRIC", "no such metric in these runs",
    "`--metric NAME` picks the curves to draw by name: `loss` (the training loss of the "
    "step events) or an evaluation metric such as `test/accuracy` or `val/loss`. None of "
    "the runs recorded a metric of that name.",
)

TRAIN_LOSS = "loss"


@dataclass
class RunCurves:
    """One run's series by metric name: `loss` (training, from step events) and every
    eval metric (`test/accuracy`, ...), each a list of (step, value); and its targets."""

    name: str
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    targets: list[dict[str, Any]] = field(default_factory=list)
    selection: dict[str, Any] = field(default_factory=dict)


def _targets(run_dir: Path, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Targets from plan.json (there from the start), else from the close summary."""
    plan = run_dir / "plan.json"
    if plan.exists():
        found = read_json(plan).get("targets") or []
        if found:
            return [dict(t) for t in found]
    for event in reversed(events):
        if event.get("event") == "close":
            return [dict(t) for t in event.get("summary", {}).get("targets") or []]
    return []


def _selection(run_dir: Path, events: list[dict[str, Any]]) -> dict[str, Any]:
    plan = run_dir / "plan.json"
    if plan.exists():
        return dict(read_json(plan).get("selection") or {})
    opened = next((e for e in events if e.get("event") == "open"), {})
    return dict(opened.get("selection") or {})


def run_labels(runs: list[RunCurves]) -> list[str]:
    """Short names for a legend: the selection entries that differ between the runs
    (`seed=43`), else the run directory names."""
    keys = sorted({k for r in runs for k in r.selection})
    differ = [k for k in keys if len({repr(r.selection.get(k)) for r in runs}) > 1]
    labels = [",".join(f"{k}={r.selection.get(k)}" for k in differ) for r in runs]
    if differ and len(set(labels)) == len(runs):
        return labels
    return [r.name for r in runs]


def read_run(run_dir: str | Path) -> RunCurves:
    """The curves of one run directory (the last record of each step, so a resumed run's
    repeated steps count once)."""
    run_dir = Path(run_dir)
    log = run_dir / "events.jsonl"
    if not log.is_file():
        what = "does not exist" if not run_dir.exists() else "has no events.jsonl"
        raise error(E_PLOT_RUN, f"{run_dir} is not a run directory", actual=f"{run_dir} {what}",
                    expected="a directory written by `sexpgpu run` (runs/<slug>/)",
                    fix="pass a run directory, e.g. runs/mnist1d-mlp-1a2b3c4d")
    events = read_events(log)
    curves = RunCurves(run_dir.resolve().name, targets=_targets(run_dir, events),
                       selection=_selection(run_dir, events))
    steps = last_by_step(events, "step")
    if steps:
        curves.series[TRAIN_LOSS] = [(s, float(e["loss"])) for s, e in sorted(steps.items())]
    evals: dict[tuple[int, str], dict[str, Any]] = {}
    for event in events:  # the last eval of each (step, name), as for steps
        if event.get("event") == "eval":
            evals[(event["step"], event.get("name", ""))] = event
    for (step, _), event in sorted(evals.items()):
        for metric, value in event.get("metrics", {}).items():
            if isinstance(value, (int, float)):
                curves.series.setdefault(metric, []).append((step, float(value)))
    return curves


def _panel_of(metric: str) -> str:
    """Losses share one panel (train and eval on one scale); any other metric gets its own."""
    last = metric.rsplit("/", 1)[-1]
    return "loss" if last == "loss" else metric


def panels(runs: list[RunCurves], metrics: list[str] | None = None) -> dict[str, list[str]]:
    """Panel title -> the metric names drawn in it, in a stable order."""
    names = sorted({m for run in runs for m in run.series}, key=lambda m: (m != TRAIN_LOSS, m))
    if metrics:
        unknown = [m for m in metrics if m not in names]
        if unknown:
            close = difflib.get_close_matches(unknown[0], names, n=1)
            raise error(E_PLOT_METRIC, f"no metric `{unknown[0]}` in these runs",
                        expected=", ".join(names) or "a run with step or eval events",
                        actual=unknown[0],
                        fix=f"--metric {close[0]}" if close else "drop --metric to draw all")
        names = [m for m in names if m in metrics]
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(_panel_of(name), []).append(name)
    return out


def _target_metric(target: dict[str, Any]) -> str:
    metric = str(target.get("metric", ""))
    return TRAIN_LOSS if metric == "train/loss" else metric


def _pyplot_free_figure(n_panels: int) -> Any:
    """A matplotlib Figure with no global pyplot state (safe in tests and threads)."""
    try:
        from matplotlib.figure import Figure  # optional (the plot extra): E-PLOT-MISSING
    except ImportError:
        raise error(E_PLOT_MISSING, "plotting needs matplotlib, which is not installed",
                    expected="the `plot` extra", actual="import matplotlib failed",
                    fix="pip install sexpgpu[plot]") from None
    return Figure(figsize=(6.0 * n_panels, 4.2), layout="constrained")


def draw(run_dirs: list[str | Path], out: str | Path,
         metrics: list[str] | None = None) -> dict[str, Any]:
    """Draw the runs' curves into one PNG (one panel per metric, losses together), each
    run's targets as dashed horizontal lines. Returns what was drawn."""
    runs = [read_run(d) for d in run_dirs]
    layout = panels(runs, metrics)
    if not layout:
        raise error(E_PLOT_RUN, "these runs have no step or eval events yet",
                    actual=", ".join(r.name for r in runs),
                    fix="wait for the first logged step, or check the run's status.json")
    fig = _pyplot_free_figure(len(layout))
    axes = fig.subplots(1, len(layout), squeeze=False)[0]
    colors = [f"C{i % 10}" for i in range(len(runs))]
    names_of = dict(zip((id(r) for r in runs), run_labels(runs)))
    drawn_targets = []
    for ax, (title, names) in zip(axes, layout.items()):
        for run, color in zip(runs, colors):
            for name in names:
                points = run.series.get(name)
                if not points:
                    continue
                steps, values = zip(*points)
                style = "-" if name == TRAIN_LOSS else "o-"
                shown_as = "train/loss" if name == TRAIN_LOSS else name
                label = shown_as if len(runs) == 1 else f"{names_of[id(run)]}: {shown_as}"
                ax.plot(steps, values, style, color=color, markersize=3, linewidth=1.2,
                        alpha=0.55 if (name == TRAIN_LOSS and len(names) > 1) else 1.0,
                        label=label)
        shown = set()
        for run in runs:
            for target in run.targets:
                key = (target.get("metric"), target.get("op"), target.get("value"))
                if _target_metric(target) not in names or key in shown:
                    continue
                shown.add(key)
                note = f" ({target['note']})" if target.get("note") else ""
                ax.axhline(float(target["value"]), color="black", linestyle="--", linewidth=1,
                           label=f"target {target['metric']} {target.get('op', '')} "
                                 f"{target['value']:g}{note}")
                drawn_targets.append(target)
        values = [v for run in runs for n in names for _, v in run.series.get(n, [])]
        if title == "loss" and min(values) > 0 and max(values) > 10 * min(values):
            ax.set_yscale("log")  # losses span decades once a model fits its training set
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return {"out": str(out), "runs": [r.name for r in runs], "panels": layout,
            "targets": drawn_targets}
