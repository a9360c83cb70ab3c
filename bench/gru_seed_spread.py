"""The MNIST-1D GRU's test accuracy over many seeds, trained by SexpGPU from its own
initialisation and from PyTorch's (`torch.manual_seed(seed)`, then the paper's GRUBase),
on the example's batches: with the computation the same (bench/compare_gru_torch.py),
this separates what the initial draws do to the final accuracy from everything else.

  python bench/gru_seed_spread.py [--init sexpgpu torch] [--seeds 0 1 2 ...] [--steps 8000]

Prints one JSON line per run and, per initialisation, the mean, standard deviation and
range. About 20 s a run on one core. Needs torch for `--init torch`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from compare_gru_torch import EXAMPLE, TORCH_NAMES, loaders  # noqa: E402

from sexpgpu.api import load_program  # noqa: E402


def torch_initial_params(seed: int) -> dict[str, object]:
    """The paper's GRUBase as PyTorch initialises it for `seed`, by SexpGPU's paths."""
    import torch_models as tm

    tm.set_seed(seed)
    named = dict(tm.GRUBase(1, 10).named_parameters())
    return {path: named[name].detach().numpy() for path, name in TORCH_NAMES.items()}


def train(seed: int, init: str, steps: int) -> dict[str, object]:
    """One run as `sexpgpu run` does it (same loaders, same step), from the chosen init."""
    selection = {"seed": str(seed), "steps": str(steps)}
    train_loader, test_loader = loaders(seed, selection)
    _, program = load_program(str(EXAMPLE), selection)
    if init == "torch":
        for path, value in torch_initial_params(seed).items():
            program.params()[path][...] = value
    started = time.perf_counter()
    ctx: dict[str, object] = {}
    out: dict[str, float] = {}
    for step in range(steps):
        ctx = {"step": step, "microstep": step, "microbatches": 1, "epoch": 0,
               "samples": step * 100, "tokens": 0, "stage": 0, "seed": seed}
        out = program.train_step([train_loader.next_batch(step)], ctx)
    test = next(test_loader.eval_batches(steps, None))
    accuracy = program.evaluate(test, ctx, "test")["accuracy"]
    return {"init": init, "seed": seed, "test_accuracy": round(100 * accuracy, 1),
            "last_loss": out.get("loss"), "wall_s": round(time.perf_counter() - started, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--init", nargs="+", choices=["sexpgpu", "torch"],
                    default=["sexpgpu", "torch"])
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    ap.add_argument("--steps", type=int, default=8000)
    args = ap.parse_args()
    found: dict[str, list[float]] = {}
    for init in args.init:
        for seed in args.seeds:
            result = train(seed, init, args.steps)
            found.setdefault(init, []).append(float(result["test_accuracy"]))
            print(json.dumps(result), flush=True)
    for init, accs in found.items():
        spread = statistics.stdev(accs) if len(accs) > 1 else 0.0
        print(f"{init} initialisation, {len(accs)} seeds: mean {statistics.mean(accs):.2f}% "
              f"sd {spread:.2f} ({min(accs):.1f}-{max(accs):.1f})")


if __name__ == "__main__":
    main()
