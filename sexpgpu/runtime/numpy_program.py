"""A TrainingProgram in plain numpy: softmax regression with hand-written gradients and Adam.

It stands in for a compiled step where the compiler is not involved (the runtime's
tests) and shows what a TrainingProgram must do: accumulate gradients over microbatches,
read its schedule from ctx, update params and optimizer state in place.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from sexpgpu.data.spec import LoaderSpec
from sexpgpu.diagnostics import SexpError, render_all
from sexpgpu.runtime.loop import run_training
from sexpgpu.runtime.program import Batch
from sexpgpu.runtime.spec import EvalSpec, RunPlan, RunSpec, TargetSpec


class SoftmaxRegression:
    """logits = x @ W + b; loss = mean cross-entropy; Adam with linear warmup."""

    def __init__(self, n_in: int, n_classes: int, *, lr: float = 0.05, warmup: int = 5,
                 seed: int = 0, nan_at_step: int | None = None, sleep_s: float = 0.0):
        rng = np.random.default_rng(seed)
        self._params = {
            "W": 0.1 * rng.standard_normal((n_in, n_classes)),  # (D, K)
            "b": np.zeros(n_classes),  # (K,)
        }
        self._state = {"t": np.zeros(())}
        for name, p in self._params.items():
            self._state[f"{name}.m"] = np.zeros_like(p)
            self._state[f"{name}.v"] = np.zeros_like(p)
        self.lr, self.warmup = lr, warmup
        self.nan_at_step, self.sleep_s = nan_at_step, sleep_s  # test hooks
        self._nonfinite: str | None = None

    def params(self) -> dict[str, np.ndarray]:
        return self._params

    def state(self) -> dict[str, np.ndarray]:
        return self._state

    def _forward(self, batch: Batch) -> tuple[np.ndarray, np.ndarray, float]:
        x = batch["x"].astype(np.float64)  # (B, D)
        y = batch["y"]  # (B,)
        logits = x @ self._params["W"] + self._params["b"]  # (B, K)
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)  # (B, K)
        loss = -np.mean(np.log(probs[np.arange(len(y)), y]))
        return x, probs, float(loss)

    def _grads(self, batch: Batch) -> tuple[dict[str, np.ndarray], float]:
        x, probs, loss = self._forward(batch)
        delta = probs.copy()
        delta[np.arange(len(batch["y"])), batch["y"]] -= 1.0
        delta /= len(batch["y"])  # (B, K): d mean-loss / d logits
        return {"W": x.T @ delta, "b": delta.sum(axis=0)}, loss

    def train_step(self, microbatches: list[Batch], ctx: dict[str, Any]) -> dict[str, float]:
        total = sum(len(mb["y"]) for mb in microbatches)
        grads = {name: np.zeros_like(p) for name, p in self._params.items()}
        loss = 0.0
        for mb in microbatches:  # accumulate, each microbatch weighted by its share of rows
            g, mb_loss = self._grads(mb)
            share = len(mb["y"]) / total
            loss += share * mb_loss
            for name in grads:
                grads[name] += share * g[name]
        if self.nan_at_step is not None and ctx["step"] + 1 == self.nan_at_step:
            grads["b"][0] = np.nan
            loss = float("nan")
        self._nonfinite = next((f"grad {n}" for n, g in grads.items()
                                if not np.all(np.isfinite(g))), None)
        grad_norm = float(np.sqrt(sum(np.sum(g * g) for g in grads.values())))
        lr = self.lr * min(1.0, (ctx["step"] + 1) / self.warmup)
        self._adam(grads, lr)
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return {"loss": loss, "grad_norm": grad_norm, "lr": lr}

    def state_step(self) -> int:
        """The Adam step counter: the optimizer steps the state has taken."""
        return int(self._state["t"])

    def _adam(self, grads: dict[str, np.ndarray], lr: float,
              b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> None:
        self._state["t"] += 1.0
        t = float(self._state["t"])
        for name, p in self._params.items():
            m, v = self._state[f"{name}.m"], self._state[f"{name}.v"]
            m *= b1
            m += (1 - b1) * grads[name]
            v *= b2
            v += (1 - b2) * grads[name] ** 2
            p -= lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)

    def evaluate(self, batch: Batch, ctx: dict[str, Any], name: str | None = None
                 ) -> dict[str, float]:
        _, probs, loss = self._forward(batch)
        accuracy = float(np.mean(np.argmax(probs, axis=1) == batch["y"]))
        return {"loss": loss, "accuracy": accuracy}

    def first_nonfinite(self) -> str | None:
        return self._nonfinite

    def diagnostics(self, ctx: dict[str, Any]) -> dict[str, float]:
        return {name + "/rms": float(np.sqrt(np.mean(p * p))) for name, p in self._params.items()}


def demo_plan(path: str, *, steps: int = 60, microbatches: int = 1, batch: int = 32,
              seed: int = 0, checkpoint_every: int = 10, log_every: int = 1,
              selection: dict[str, Any] | None = None, source: str = "(defrun :steps 60)",
              eval_every: int = 20) -> RunPlan:
    """A complete RunPlan for SoftmaxRegression on the synthetic `classes` task."""
    data = {"task": "classes", "n": 600, "dim": 8, "classes": 4, "seed": 7, "noise": 0.5}
    return RunPlan(
        file=path,
        selection=dict(selection or {}),
        source_files={path: source},
        loaders=[LoaderSpec("train", "synthetic", data, batch=batch, order="shuffle"),
                 LoaderSpec("test", "synthetic", {**data, "n": 200, "split": "test"}, batch=100)],
        evals=[EvalSpec("test", "test", every=eval_every)],
        targets=[TargetSpec("test/accuracy", ">=", 0.5, note="well above chance (0.25)")],
        run=RunSpec(steps=steps, microbatches=microbatches, seed=seed,
                    checkpoint_every=checkpoint_every, keep_checkpoints=3, log_every=log_every),
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m sexpgpu.runtime.numpy_program RUNS [--steps N] [--sleep S] [--nan-at K]
    [--resume R] [--status-interval S]`: train the demo plan (the runtime tests run it
    in a subprocess)."""
    parser = argparse.ArgumentParser(prog="numpy_program")
    parser.add_argument("runs")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--nan-at", type=int, default=None)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--status-interval", type=float, default=0.25)
    args = parser.parse_args(argv)
    plan = demo_plan(f"{args.runs}/demo.sx", steps=args.steps)
    program = SoftmaxRegression(8, 4, nan_at_step=args.nan_at, sleep_s=args.sleep)
    try:
        code, _ = run_training(plan, program, args.runs, resume=args.resume,
                               status_interval_s=args.status_interval)
    except SexpError as exc:
        print(render_all(exc.diagnostics), file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
