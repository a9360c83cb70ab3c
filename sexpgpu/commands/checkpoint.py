"""`sexpgpu checkpoint`: list a run's checkpoints, or show one (runtime/checkpoint.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sexpgpu import humanize, usage
from sexpgpu.atomic import print_json
from sexpgpu.runtime import checkpoint as ckpt

HELP = """\
List the checkpoints of a run, or show one (its step, files and whether it verifies).

Usage:
  sexpgpu checkpoint ls RUN [--runs DIR] [--json]
  sexpgpu checkpoint show RUN [CHECKPOINT] [--runs DIR] [--json]
  sexpgpu checkpoint (-h | --help)

Options:
  --runs DIR   where run directories are [default: runs]
  --json       print the answer as JSON

RUN is a run directory, or a run's name under --runs. CHECKPOINT is a step
number, a name like step-000400, or `latest` (the default: the newest that verifies).

Examples:
  sexpgpu checkpoint ls runs/mnist1d-mlp-3f2a9c1d
  sexpgpu checkpoint show mnist1d-mlp-3f2a9c1d 400
"""


def _arrays(path: Path) -> dict[str, dict[str, Any]]:
    """Names, shapes and dtypes of an npz without loading the data."""
    return {name: {"shape": list(shape), "dtype": str(dtype)}
            for name, (shape, dtype) in ckpt.array_headers(path).items()}


def list_run(run_dir: Path) -> list[dict[str, Any]]:
    latest = ckpt.latest_valid(run_dir)
    rows = []
    for step, path in ckpt.list_checkpoints(run_dir):
        problem = ckpt.verify(path)
        size = (sum(f.stat().st_size for f in path.iterdir() if f.is_file()) if path.is_dir()
                else path.stat().st_size)
        rows.append({"name": path.name, "step": step, "path": str(path), "bytes": size,
                     "valid": problem is None, "problem": problem, "latest": path == latest})
    return rows


def show(path: Path) -> dict[str, Any]:
    ckpt.checked(path)
    meta = ckpt.read_meta(path)
    return {"name": path.name, "path": str(path), "valid": True, "meta": meta,
            "params": _arrays(path / "params.npz"), "state": _arrays(path / "state.npz")}


def _print_list(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no checkpoints")
    for row in rows:
        mark = "*" if row["latest"] else " "
        health = "ok" if row["valid"] else f"BAD: {row['problem']}"
        print(f"{mark} {row['name']}  step {row['step']:>8}  {row['bytes']:>10} bytes  {health}")


def _print_show(info: dict[str, Any]) -> None:
    meta = info["meta"]
    print(f"{info['name']}  (step {meta['step']}, plan {meta.get('plan_hash')})")
    print(f"  last loss  {humanize.number(meta.get('last_loss'))}")
    last_eval = meta.get("last_eval") or {}
    shown = "  ".join(f"{k} {humanize.number(v)}" for k, v in last_eval.items() if k != "step")
    at = f" (step {last_eval['step']})" if "step" in last_eval else ""
    print(f"  last eval  {shown + at if last_eval else '-'}")
    print(f"  ctx        {meta.get('ctx')}")
    print(f"  loaders    {meta.get('loaders')}")
    for kind in ("params", "state"):
        print(f"  {kind}:")
        for name, desc in info[kind].items():
            print(f"    {name:<30} {desc['dtype']:<8} {tuple(desc['shape'])}")


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "checkpoint", argv)
    run_dir = ckpt.find_run(args["RUN"], args["--runs"])
    if args["ls"]:
        result: Any = list_run(run_dir)
        printer = _print_list
    else:
        result = show(ckpt.pick(run_dir, args["CHECKPOINT"]))
        printer = _print_show
    if args["--json"]:
        print_json(result)
    else:
        printer(result)
    return 0
