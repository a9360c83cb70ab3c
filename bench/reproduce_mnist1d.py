"""Reproduce the MNIST-1D paper's table (issue 6): the four examples (logistic regression,
MLP, CNN, GRU), each on the frozen published dataset (`npz` source) and on the built-in
generator, for several seeds, with `sexpgpu run`; then a table against the published test
accuracy (32/68/94/91%) and one plot per model and dataset (`sexpgpu plot`).

  python bench/reproduce_mnist1d.py [--models mlp cnn] [--data frozen generator]
      [--seeds 42 43 44] [--set steps=20] [--precision bf16] [--out runs/reproduce-mnist1d]
      [--img-dir DIR]

Runs already done are reused (`--resume latest`), so an interrupted reproduction continues.
The helpers in the first part are shared with reproduce_shakespeare.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"  # ../shared/data beside the repository


# ---------------------------------------------------------------------------
# shared with reproduce_shakespeare.py: run `sexpgpu`, read what a run left behind


def sexpgpu(*args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """`sexpgpu ARGS...` as a subprocess of this checkout (no install needed)."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    return subprocess.run([sys.executable, "-m", "sexpgpu", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _failure(done: subprocess.CompletedProcess) -> str:
    """Why a command failed, in a line or a few: the diagnostic when it printed one."""
    out = _last_json(done.stdout) or {}
    found = out.get("error") or next(iter(out.get("diagnostics") or []), None)
    if found:
        return f"exit {done.returncode}: {found.get('code')}: {found.get('message')}"
    tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
    return f"exit {done.returncode}: " + "\n  ".join(tail)


def knob_names(file: Path) -> set[str]:
    """The knobs a run file declares (`sexpgpu variants FILE --json`)."""
    done = sexpgpu("variants", str(file), "--json")
    found = _last_json(done.stdout) if done.returncode == 0 else None
    if not found:
        raise RuntimeError(f"sexpgpu variants {file}: {_failure(done)}")
    return {k["name"] for k in found.get("knobs", [])}


@dataclass
class RunResult:
    """One `sexpgpu run`: its --json summary and what its events say about speed."""

    label: str
    command: list[str]
    summary: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0  # the whole command: compile, data, training, evals
    train_s: float | None = None  # the loop's own elapsed_s
    step_ms: float | None = None
    error: str | None = None

    @property
    def run_dir(self) -> Path | None:
        return Path(self.summary["run_dir"]) if self.summary.get("run_dir") else None

    def last_eval(self, metric: str) -> float | None:
        value = (self.summary.get("last_eval") or {}).get(metric)
        return float(value) if value is not None else None


def median_step_ms(run_dir: Path) -> float | None:
    """Median `step_ms` over the logged steps after the first (which also loads kernels)."""
    log = run_dir / "events.jsonl"
    if not log.exists():
        return None
    times = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "step" and event.get("step", 0) > 1:
            times.append(float(event["step_ms"]))
    return statistics.median(times) if times else None


def run_sexpgpu(label: str, file: Path, sets: list[str], runs_dir: Path,
                flags: tuple[str, ...] = ()) -> RunResult:
    """`sexpgpu run FILE --set ... [FLAGS] --runs DIR --json` (FLAGS: `--precision bf16`);
    a run done before (E-RUN-EXISTS) is continued with `--resume latest`, which for a
    finished run just reports it again."""
    args = ["run", str(file), "--runs", str(runs_dir), "--json", *flags]
    for item in sets:
        args += ["--set", item]
    result = RunResult(label, ["sexpgpu", "run", _shown(file),
                               *(f"--set {_shown_setting(item)}" for item in sets), *flags])
    started = time.time()
    done = sexpgpu(*args)
    out = _last_json(done.stdout)
    if out and not out.get("ok", True) and any(
            d.get("code") == "E-RUN-EXISTS" for d in out.get("diagnostics", [])):
        done = sexpgpu(*args, "--resume", "latest")
        out = _last_json(done.stdout)
    result.wall_s = time.time() - started
    if done.returncode != 0 or not out or "run_dir" not in out:
        result.error = _failure(done)
        if out and "run_dir" in out:
            result.summary = out
        return result
    result.summary = out
    result.train_s = out.get("elapsed_s")
    result.step_ms = median_step_ms(Path(out["run_dir"]))
    return result


def _shown_setting(item: str) -> str:
    """`data=/work/shared/data/x.npz` as `data=../shared/data/x.npz` (paths only)."""
    key, _, value = item.partition("=")
    return f"{key}={_shown(Path(value))}" if "/" in value else item


def _shown(path: Path) -> str:
    """A path as a reader of the docs would type it: relative to the repository when it is
    in it or beside it (`../shared/data/...`), else absolute."""
    relative = os.path.relpath(Path(path).resolve(), ROOT)
    return relative if not relative.startswith(("../..", "..\\..")) else str(path)


def plot(results: list[RunResult], out_png: Path) -> str | None:
    """`sexpgpu plot RUN... --out PNG` over the runs that have a directory; an error text
    (the reproduction still reports its numbers) or None."""
    dirs = [str(r.run_dir) for r in results if r.run_dir and r.run_dir.exists()]
    if not dirs:
        return "no run directory to plot"
    done = sexpgpu("plot", *dirs, "--out", str(out_png))
    return None if done.returncode == 0 else _failure(done)


def spread(values: list[float]) -> tuple[float, float, float]:
    return statistics.mean(values), min(values), max(values)


def write_outputs(out_dir: Path, table: str, rows: list[dict[str, Any]]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "table.md").write_text(table + "\n", encoding="utf-8")
    (out_dir / "results.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(table)
    print(f"\nwritten: {out_dir / 'table.md'}, {out_dir / 'results.json'}")


# ---------------------------------------------------------------------------
# MNIST-1D

PUBLISHED = {"logreg": 0.32, "mlp": 0.68, "cnn": 0.94, "gru": 0.91}
EXAMPLES = {m: ROOT / "examples" / f"mnist1d-{m}.sx" for m in PUBLISHED}
FROZEN = DATA / "mnist1d.npz"
MEAN_WITHIN, SEED_WITHIN = 0.03, 0.05  # issue 6, "Done means"

# the frozen file's arrays for each split, as the examples' loaders name them (x, y)
_SPLITS = {"train": ("x", "y"), "test": ("x_test", "y_test")}


def split_npz(npz: Path, files_dir: Path) -> dict[str, Path]:
    """The frozen file as one npz per split holding exactly its arrays (`x`, `y`): the
    `npz` source wants every array of a file to have the same number of rows, and the
    published file also holds `x_test`, `y_test` and `t` (40 sample positions)."""
    import numpy as np

    files_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    with np.load(npz, allow_pickle=False) as frozen:
        for split, (x, y) in _SPLITS.items():
            path = files_dir / f"mnist1d-frozen-{split}.npz"
            np.savez(path, x=frozen[x], y=frozen[y])
            out[split] = path
    return out


def frozen_file(model: str, npz: Path, files_dir: Path) -> Path:
    """The example with its two loaders reading the frozen data (`npz` source) instead
    of the generator, for examples that declare no `data` knob."""
    text = EXAMPLES[model].read_text(encoding="utf-8")
    for split, path in split_npz(npz, files_dir).items():
        pattern = rf"\(mnist1d\s+:split\s+:{split}\)"
        text, count = re.subn(pattern, f"(npz :path {json.dumps(str(path))})", text)
        if count != 1:
            raise RuntimeError(f"{EXAMPLES[model].name}: no single `(mnist1d :split :{split})` "
                               "loader to point at the frozen file")
    out = files_dir / f"mnist1d-{model}-frozen.sx"
    out.write_text(f";;;; {EXAMPLES[model].name}, reading {npz} (bench/reproduce_mnist1d.py)\n"
                   + text, encoding="utf-8")
    return out


def file_and_sets(model: str, data: str, npz: Path, out_dir: Path) -> tuple[Path, list[str]]:
    """What to run for one dataset: the generator is the example as it is; the frozen file
    goes through the example's `data` knob when it has one, else a rewritten copy."""
    if data == "generator":
        return EXAMPLES[model], []
    if "data" in knob_names(EXAMPLES[model]):
        return EXAMPLES[model], [f"data={npz}"]
    return frozen_file(model, npz, out_dir / "files"), []


def table_rows(results: dict[tuple[str, str], list[RunResult]],
               precision: str = "f32") -> list[dict[str, Any]]:
    rows = []
    for (model, data), runs in results.items():
        accs = [a for a in (r.last_eval("test/accuracy") for r in runs) if a is not None]
        row: dict[str, Any] = {"model": model, "data": data, "precision": precision,
                               "published": PUBLISHED[model],
                               "seeds": [r.label for r in runs], "accuracies": accs,
                               "errors": [r.error for r in runs if r.error],
                               "commands": [" ".join(r.command) for r in runs]}
        if accs:
            mean, low, high = spread(accs)
            row.update(mean=mean, min=low, max=high, met=(
                abs(mean - PUBLISHED[model]) <= MEAN_WITHIN
                and all(abs(a - PUBLISHED[model]) <= SEED_WITHIN for a in accs)))
        times = [r.step_ms for r in runs if r.step_ms is not None]
        row["step_ms"] = statistics.median(times) if times else None
        row["wall_s"] = statistics.mean(r.wall_s for r in runs) if runs else None
        rows.append(row)
    return rows


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def run_cells(row: dict[str, Any], step_format: str) -> tuple[str, str, str, str]:
    """The cells every reproduction table shares: met, step, wall time, command."""
    met = "-" if "met" not in row else ("yes" if row["met"] else "**no**")
    step = f"{row['step_ms']:{step_format}} ms" if row["step_ms"] is not None else "-"
    wall = f"{row['wall_s']:.1f} s" if row["wall_s"] is not None else "-"
    cmd = f"`{row['commands'][0]}`" if row["commands"] else "-"
    return met, step, wall, cmd


def markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| model | data | precision | published | ours mean | ours min–max | seeds "
           "| within 3/5 pts | step | wall/run | command (first seed) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        got = (pct(r["mean"]), f"{pct(r['min'])}–{pct(r['max'])}") if "mean" in r else ("-", "-")
        met, step, wall, cmd = run_cells(r, ".2f")
        out.append(f"| {r['model']} | {r['data']} | {r.get('precision', 'f32')} "
                   f"| {pct(r['published'])} | {got[0]} | {got[1]} "
                   f"| {len(r['accuracies'])}/{len(r['seeds'])} | {met} | {step} | {wall} "
                   f"| {cmd} |")
    for r in rows:
        for err in r["errors"]:
            out.append(f"\n{r['model']} {r['data']}: failed: {err}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reproduce_mnist1d", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=list(PUBLISHED), default=list(PUBLISHED))
    parser.add_argument("--data", nargs="+", choices=["frozen", "generator"],
                        default=["frozen", "generator"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[42, 43, 44])
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="passed to every run, e.g. --set steps=20 for a smoke test")
    parser.add_argument("--precision", choices=["f32", "bf16"], default="f32",
                        help="train in f32 (default) or bf16 with f32 masters (--precision)")
    parser.add_argument("--npz", type=Path, default=FROZEN, help="the frozen MNIST-1D file")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "reproduce-mnist1d")
    parser.add_argument("--img-dir", type=Path, default=None,
                        help="where the plots go (default OUT/img; docs use docs/img)")
    args = parser.parse_args(argv)
    img_dir = args.img_dir or args.out / "img"
    img_dir.mkdir(parents=True, exist_ok=True)

    flags = ("--precision", args.precision) if args.precision != "f32" else ()
    suffix = f"-{args.precision}" if flags else ""
    results: dict[tuple[str, str], list[RunResult]] = {}
    for model in args.models:
        for data in args.data:
            file, sets = file_and_sets(model, data, args.npz.resolve(), args.out)
            runs = results.setdefault((model, data), [])
            for seed in args.seeds:
                label = f"seed={seed}"
                print(f"{model} {data} {label} ...", flush=True)
                result = run_sexpgpu(label, file, [*sets, f"seed={seed}", *args.sets],
                                     args.out / "runs", flags)
                runs.append(result)
                acc = result.last_eval("test/accuracy")
                print(f"  test accuracy {acc if acc is None else f'{100 * acc:.1f}%'}, "
                      f"{result.wall_s:.1f} s" + (f"\n  {result.error}" if result.error else ""),
                      flush=True)
            problem = plot(runs, img_dir / f"mnist1d-{model}-{data}{suffix}.png")
            if problem:
                print(f"  plot: {problem}", flush=True)
    rows = table_rows(results, args.precision)
    write_outputs(args.out / args.precision if flags else args.out, markdown(rows), rows)
    return 0 if all(not r["errors"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
