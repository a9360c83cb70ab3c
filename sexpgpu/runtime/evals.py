"""Evaluation passes (`defeval`) and targets (`deftarget`), as the loop uses them."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from sexpgpu.data.loader import Loader, batch_size
from sexpgpu.runtime.spec import EvalSpec, TargetSpec

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
}


def run_eval(program: Any, spec: EvalSpec, loader: Loader, step: int,
             ctx: dict[str, Any]) -> dict[str, float]:
    """Metrics averaged over the eval's batches, weighted by rows: `{"test/accuracy": ..}`."""
    sums: dict[str, float] = {}
    rows = 0
    for batch in loader.eval_batches(step, spec.batches):
        n = batch_size(batch)
        for name, value in program.evaluate(batch, ctx, spec.name).items():
            sums[name] = sums.get(name, 0.0) + float(value) * n
        rows += n
    return {f"{spec.name}/{name}": total / rows for name, total in sums.items()}


def due(every: int, step: int) -> bool:
    return every > 0 and step % every == 0


def check_targets(targets: list[TargetSpec], values: dict[str, float]) -> list[dict[str, Any]]:
    """Each target with the value it was checked against and whether it was met."""
    out = []
    for target in targets:
        op = target.op.lstrip(":")
        actual = values.get(target.metric)
        met = (actual is not None and math.isfinite(actual) and op in OPS
               and OPS[op](actual, target.value))
        out.append({"metric": target.metric, "op": op, "value": target.value,
                    "actual": actual, "met": bool(met), "note": target.note})
    return out
