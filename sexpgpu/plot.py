"""Curves of finished or running runs: read each run directory's events.jsonl and plan.json
into series (every number a run records), and draw them with matplotlib (an optional
extra): several runs with a legend, targets as reference lines, a sweep against its knob.

`sexpgpu plot` (commands/plot.py) is the command; reproduction scripts call `draw` directly.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sexpgpu import humanize
from sexpgpu.atomic import read_json
from sexpgpu.diagnostics import define_code, error
from sexpgpu.runtime.events import last_by_step, read_events
from sexpgpu.suggest import did_you_mean

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
    "`--metric NAME` picks the series to draw by name or glob: `loss`, `lr`, `grad_norm` "
    "(the step events), an evaluation metric such as `test/accuracy`, a sampled "
    "diagnostic. None of the runs recorded a series of that name (`sexpgpu plot RUN "
    "--list` lists theirs); or `--against KNOB` names a knob a run does not have.",
)

TRAIN_LOSS = "loss"
# the numbers of a step event that are series (besides `metrics`, the objective's own)
STEP_FIELDS = ("loss", "lr", "grad_norm", "step_ms", "samples_per_s", "tokens_per_s")


@dataclass
class RunCurves:
    """One run's series by name, each a list of (step, value): the step events' numbers
    (`loss`, `lr`, `grad_norm`, ...), the objective's own metrics, every eval metric
    (`test/accuracy`) and every sampled diagnostic; its targets and selection."""

    name: str
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    targets: list[dict[str, Any]] = field(default_factory=list)
    selection: dict[str, Any] = field(default_factory=dict)
    evals: list[str] = field(default_factory=list)   # the names that came from eval events
    file: str = ""                                     # the run file's path, for a title

    def add(self, name: str, step: int, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value):
            self.series.setdefault(name, []).append((step, float(value)))


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
    """The series of one run directory (the last record of each step, so a resumed run's
    repeated steps count once)."""
    run_dir = Path(run_dir)
    log = run_dir / "events.jsonl"
    if not log.is_file():
        what = "does not exist" if not run_dir.exists() else "has no events.jsonl"
        raise error(E_PLOT_RUN, f"{run_dir} is not a run directory", actual=f"{run_dir} {what}",
                    expected="a directory written by `sexpgpu run` (runs/<slug>/)",
                    fix="pass a run directory, e.g. runs/mnist1d-mlp-1a2b3c4d")
    events = read_events(log)
    plan = read_json(run_dir / "plan.json") if (run_dir / "plan.json").is_file() else {}
    curves = RunCurves(run_dir.resolve().name, targets=_targets(run_dir, events),
                       selection=_selection(run_dir, events), file=str(plan.get("file", "")))
    for step, event in sorted(last_by_step(events, "step").items()):
        for name in STEP_FIELDS:
            curves.add(name, step, event.get(name))
        for name, value in (event.get("metrics") or {}).items():
            curves.add(name, step, value)
    for step, event in sorted(last_by_step(events, "diag").items()):
        for name, value in (event.get("values") or {}).items():
            curves.add(name, step, value)
    evals: dict[tuple[int, str], dict[str, Any]] = {}
    for event in events:  # the last eval of each (step, name), as for steps
        if event.get("event") == "eval":
            evals[(event["step"], event.get("name", ""))] = event
    for (step, _), event in sorted(evals.items()):
        for metric, value in event.get("metrics", {}).items():
            curves.add(metric, step, value)
            if metric not in curves.evals:
                curves.evals.append(metric)
    return curves


def _panel_of(metric: str) -> str:
    """Losses share one panel (train and eval on one scale); any other series gets its own."""
    last = metric.rsplit("/", 1)[-1]
    return "loss" if last == "loss" else metric


def series_names(runs: list[RunCurves]) -> list[str]:
    """Every series the runs have: the loss first, then the step series, the evals, the
    rest (diagnostics, the objective's metrics) by name."""
    names = {m for run in runs for m in run.series}
    evals = {m for run in runs for m in run.evals}
    order = {name: i for i, name in enumerate(STEP_FIELDS)}
    return sorted(names, key=lambda m: (m in evals, m not in order, order.get(m, 0), m))


def panels(runs: list[RunCurves], metrics: list[str] | None = None) -> dict[str, list[str]]:
    """Panel title -> the series drawn in it, in a stable order. Without `metrics`: the
    training loss and every eval metric; `metrics` are names or globs (`grad-norm/*`)."""
    names = series_names(runs)
    if metrics:
        chosen: list[str] = []
        for wanted in metrics:
            found = [n for n in names if fnmatch.fnmatchcase(n, wanted)]
            if not found:
                close = difflib.get_close_matches(wanted, names, n=1)
                raise error(E_PLOT_METRIC, f"no metric `{wanted}` in these runs",
                            expected=", ".join(names) or "a run with step or eval events",
                            actual=wanted,
                            fix=f"--metric {close[0]}" if close else "drop --metric to draw all")
            chosen += [n for n in found if n not in chosen]
        names = [n for n in names if n in chosen]
    else:
        evals = {m for run in runs for m in run.evals}
        names = [n for n in names if n == TRAIN_LOSS or n in evals]
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(_panel_of(name), []).append(name)
    return out


def smoothed(values: list[float], window: int) -> list[float]:
    """A centred moving average over `window` points (shorter at the ends)."""
    if window <= 1:
        return list(values)
    half = window // 2
    out = []
    for i in range(len(values)):
        part = values[max(0, i - half):i + half + 1]
        out.append(sum(part) / len(part))
    return out


def _target_metric(target: dict[str, Any]) -> str:
    metric = str(target.get("metric", ""))
    return TRAIN_LOSS if metric == "train/loss" else metric


def _pyplot_free_figure(n_panels: int) -> tuple[Any, list[Any]]:
    """A matplotlib Figure with no global pyplot state (safe in tests and threads), and
    its axes: panels in rows of three."""
    try:
        from matplotlib.figure import Figure  # optional (the plot extra): E-PLOT-MISSING
    except ImportError:
        raise error(E_PLOT_MISSING, "plotting needs matplotlib, which is not installed",
                    expected="the `plot` extra", actual="import matplotlib failed",
                    fix="pip install sexpgpu[plot]") from None
    cols = min(3, n_panels)
    rows = (n_panels + cols - 1) // cols
    fig = Figure(figsize=(5.6 * cols, 4.0 * rows + 0.4), layout="constrained")
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def default_title(runs: list[RunCurves]) -> str:
    files = sorted({Path(r.file).stem for r in runs if r.file}) or sorted({r.name for r in runs})
    title = ", ".join(files)
    return title + (f" ({len(runs)} runs)" if len(runs) > 1 else "")


def _knob_value(run: RunCurves, knob: str) -> float:
    value = run.selection.get(knob)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        knobs = ", ".join(k for k, v in run.selection.items()
                          if isinstance(v, (int, float)) and not isinstance(v, bool))
        raise error(E_PLOT_METRIC, f"run {run.name} has no numeric knob `{knob}`",
                    expected=f"a numeric knob of its selection: {knobs or '(none)'}",
                    actual=repr(value) if value is not None else "absent",
                    fix=did_you_mean(knob, list(run.selection)))
    return float(value)


def draw(run_dirs: list[str | Path], out: str | Path, metrics: list[str] | None = None,
         *, against: str | None = None, smooth: int = 0,
         title: str | None = None) -> dict[str, Any]:
    """Draw the runs' series into one PNG: one panel per series (losses together), one
    colour per run, each run's targets as dashed lines; `against`: one point per run,
    each series' last value against that knob's value; `smooth`: a moving average over
    that many logged points drawn over each step series. Returns what was drawn."""
    runs = [read_run(d) for d in run_dirs]
    layout = panels(runs, metrics)
    if not layout:
        raise error(E_PLOT_RUN, "these runs have no step or eval events yet",
                    actual=", ".join(r.name for r in runs),
                    fix="wait for the first logged step, or check the run's status.json")
    fig, axes = _pyplot_free_figure(len(layout))
    fig.suptitle(title if title is not None else default_title(runs))
    colors = [f"C{i % 10}" for i in range(len(runs))]
    labels = dict(zip((id(r) for r in runs), run_labels(runs)))
    drawn_targets: list[dict[str, Any]] = []
    for ax, (panel, names) in zip(axes, layout.items()):
        if against is not None:
            _draw_against(ax, runs, names, against)
        else:
            _draw_curves(ax, runs, names, colors, labels, smooth)
        drawn_targets += _draw_targets(ax, runs, names)
        values = [v for run in runs for n in names for _, v in run.series.get(n, [])]
        if panel == "loss" and values and min(values) > 0 and max(values) > 10 * min(values):
            ax.set_yscale("log")  # losses span decades once a model fits its training set
        ax.set_title(panel)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return {"out": str(out), "runs": [r.name for r in runs], "panels": layout,
            "targets": drawn_targets, "against": against}


def _draw_curves(ax: Any, runs: list[RunCurves], names: list[str], colors: list[str],
                 labels: dict[int, str], smooth: int) -> None:
    for run, color in zip(runs, colors):
        for name in names:
            points = run.series.get(name)
            if not points:
                continue
            steps, values = zip(*points)
            is_eval = name in run.evals
            shown_as = "train/loss" if name == TRAIN_LOSS else name
            label = shown_as if len(runs) == 1 else f"{labels[id(run)]}: {shown_as}"
            faint = name == TRAIN_LOSS and len(names) > 1
            if smooth > 1 and not is_eval:
                ax.plot(steps, values, "-", color=color, linewidth=0.8, alpha=0.25)
                ax.plot(steps, smoothed(list(values), smooth), "-", color=color,
                        linewidth=1.4, label=f"{label} (mean of {smooth})")
            else:
                ax.plot(steps, values, "o-" if is_eval else "-", color=color, markersize=3,
                        linewidth=1.2, alpha=0.55 if faint else 1.0, label=label)
    ax.set_xlabel("step")


def _draw_against(ax: Any, runs: list[RunCurves], names: list[str], knob: str) -> None:
    """A sweep: each series' last value in each run against the run's value of `knob`."""
    xs = [_knob_value(run, knob) for run in runs]
    for i, name in enumerate(names):
        points = sorted((x, run.series[name][-1][1]) for x, run in zip(xs, runs)
                        if run.series.get(name))
        if points:
            ax.plot(*zip(*points), "o-", color=f"C{i}", markersize=5, linewidth=1.2,
                    label=f"{name} (last)")
    if xs and min(xs) > 0 and max(xs) >= 10 * min(xs):
        ax.set_xscale("log")  # a learning-rate scan spans decades
    ax.set_xlabel(knob)


def _draw_targets(ax: Any, runs: list[RunCurves], names: list[str]) -> list[dict[str, Any]]:
    drawn, shown = [], set()
    for run in runs:
        for target in run.targets:
            key = (target.get("metric"), target.get("op"), target.get("value"))
            if _target_metric(target) not in names or key in shown:
                continue
            shown.add(key)
            note = f" ({target['note']})" if target.get("note") else ""
            ax.axhline(float(target["value"]), color="black", linestyle="--", linewidth=1,
                       label=f"target {target['metric']} {target.get('op', '')} "
                             f"{humanize.number(target['value'])}{note}")
            drawn.append(target)
    return drawn
