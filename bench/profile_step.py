"""Where a CPU training step's time goes, kernel by kernel: the benchmark's step of an
example (bench/bench_step.py's models and batches), each kernel function of its step
module timed at its call, summed over the steps and sorted.

Run: `python bench/profile_step.py gpt [--steps 30]`. A kernel function serves every
call site with its text (one line per function, its call count per step beside it);
a parallel kernel is timed around its launch, its threads included. The timers cost
about a microsecond a call, so the kernels' sum falls a little short of the step.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_step  # noqa: E402  (PyTorch, for the batches and the models' list)

WARMUP_STEPS = 3
IMPORT = re.compile(r"^from \S+ import \w+ as (f\d+)  # (.*)$", re.M)
LAUNCHED = re.compile(r"launch\((f\d+),|\((f\d+), ")  # a launch's, or a band run's


def instrument(module: Any, source: str, spent: Counter, calls: Counter) -> None:
    """Wrap the step module's kernel functions (and its launcher, for the parallel
    ones) so that each call adds its time to spent[label]."""
    labels = {name: f"{name} {ops}" for name, ops in IMPORT.findall(source)}
    launched = {a or b for a, b in LAUNCHED.findall(source)}

    def timed(fn: Callable, label: str) -> Callable:
        def call(*args: Any) -> Any:
            started = time.perf_counter()
            out = fn(*args)
            spent[label] += time.perf_counter() - started
            calls[label] += 1
            return out
        return call

    for name, label in labels.items():
        if name not in launched:
            setattr(module, name, timed(getattr(module, name), label))
    if launched:
        by_function = {id(getattr(module, name)): labels[name] for name in launched}
        module.launch = _TimedLaunches(module.launch, by_function, timed)


class _TimedLaunches:
    """The step module's `launch` (kernels.parallel.Launches), each call timed under
    its kernel's label; its other attributes (`start`) passed through."""

    def __init__(self, launches: Any, labels: dict[int, str], timed: Callable) -> None:
        self._launches, self._labels, self._timed = launches, labels, timed

    def bands(self, bands: int, *calls: tuple) -> Any:
        """A band run (kernels/bands.py), timed whole under its kernels' labels."""
        label = "bands: " + "; ".join(dict.fromkeys(
            self._labels[id(call[0])].split(" ", 1)[1] for call in calls))
        return self._timed(self._launches.bands, label[:100])(bands, *calls)

    def __call__(self, fn: Callable, *args: Any) -> Any:
        return self._timed(self._launches, self._labels[id(fn)])(fn, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._launches, name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=bench_step.MODELS)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--top", type=int, default=30, help="kernel functions listed")
    args = parser.parse_args(argv)
    program, step = bench_step.sexpgpu_program(args.model)
    compiled = program._step
    for _ in range(WARMUP_STEPS):
        step()
    spent: Counter = Counter()
    calls: Counter = Counter()
    instrument(compiled.module, compiled.source, spent, calls)
    started = time.perf_counter()
    for _ in range(args.steps):
        step()
    per_step = (time.perf_counter() - started) / args.steps * 1e3
    kernels = sum(spent.values()) / args.steps * 1e3
    print(f"{args.model}: step {per_step:.2f} ms, its kernels {kernels:.2f} ms "
          f"(means over {args.steps} steps)")
    for label, seconds in spent.most_common(args.top):
        ms = seconds / args.steps * 1e3
        print(f"{ms:8.3f} ms {ms / per_step:6.1%}  x{calls[label] // args.steps:<3d} {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
