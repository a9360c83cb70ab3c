"""SexpGPU's MNIST-1D GRU against the paper's model in PyTorch from the same initial weights
on the same batches: a difference in final test accuracy (docs/reproductions.md) is then
either seed noise or a difference in what is computed, and the per-step losses say which.

  python bench/compare_gru_torch.py [--steps 8000] [--seed 7] [--data generator|frozen]

First step 0 is compared exactly: the step graph run by the float64 reference interpreter
against bench/torch_models.GRUBase in float64 (loss and every parameter's gradient, read
from Adam's first moment after one step). Then SexpGPU's compiled kernels (float32) and
PyTorch (float32) train from those weights on the same batches with Adam lr 1e-2; the
script prints the loss of both every 500 steps, their largest relative difference over the
first 10, 100, 1000 and all steps, and the test accuracy of both at the end. Needs torch
(`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import torch_models as tm  # noqa: E402

from sexpgpu.api import load_program  # noqa: E402
from sexpgpu.contract.compile import compile_file  # noqa: E402
from sexpgpu.data.loader import Loader  # noqa: E402
from sexpgpu.ir.reference import run_reference  # noqa: E402
from sexpgpu.runtime.compiled import init_param  # noqa: E402
from sexpgpu.selection import Selection  # noqa: E402

EXAMPLE = ROOT / "examples" / "mnist1d-gru.sx"

# SexpGPU's parameter path -> GRUBase's parameter name (nn.GRU's layer 0, both directions)
TORCH_NAMES = {
    "gru/cells/0/weight-ih": "gru.weight_ih_l0",
    "gru/cells/0/weight-hh": "gru.weight_hh_l0",
    "gru/cells/0/bias-ih": "gru.bias_ih_l0",
    "gru/cells/0/bias-hh": "gru.bias_hh_l0",
    "gru/cells/1/weight-ih": "gru.weight_ih_l0_reverse",
    "gru/cells/1/weight-hh": "gru.weight_hh_l0_reverse",
    "gru/cells/1/bias-ih": "gru.bias_ih_l0_reverse",
    "gru/cells/1/bias-hh": "gru.bias_hh_l0_reverse",
    "linear/weight": "linear.weight",
    "linear/bias": "linear.bias",
}


def torch_gru(params: dict[str, np.ndarray], dtype: torch.dtype) -> tm.GRUBase:
    """The paper's GRUBase holding SexpGPU's parameters."""
    model = tm.GRUBase(1, 10).to(dtype)
    named = dict(model.named_parameters())
    if set(named) != set(TORCH_NAMES.values()) or set(params) != set(TORCH_NAMES):
        raise KeyError(f"parameters differ: {sorted(params)} vs {sorted(named)}")
    with torch.no_grad():
        for path, name in TORCH_NAMES.items():
            if tuple(named[name].shape) != params[path].shape:
                raise ValueError(f"{path} {params[path].shape} vs {name} {named[name].shape}")
            named[name].copy_(torch.from_numpy(np.asarray(params[path], np.float64)))
    return model


def loaders(seed: int, selection: dict[str, str]) -> tuple[Loader, Loader]:
    """The example's train and test loaders, as `sexpgpu run` opens them."""
    plan, _ = load_program(str(EXAMPLE), selection)
    base = Path(plan.file).resolve().parent
    return Loader(plan.loader("train"), base, seed), Loader(plan.loader("test"), base, seed)


def check_step0(selection: dict[str, str], seed: int, x: np.ndarray, y: np.ndarray) -> None:
    """One step in float64: the reference interpreter on the step graph against PyTorch."""
    compiled = compile_file(str(EXAMPLE), Selection(selection))
    params = {spec.path: init_param(spec, seed) for spec in compiled.params}
    graph = compiled.graphs.step
    inputs: dict[str, np.ndarray] = {"data/x": x.astype(np.float64), "data/y": y,
                                     "ctx/step": np.float64(0.0)}
    for value in graph.inputs:
        if value.role == "param":
            inputs[value.name] = params[value.name].astype(np.float64)
        elif value.role == "state":
            inputs[value.name] = np.zeros(value.shape, np.float64)
    ours = float(run_reference(graph, inputs, dtype_override="f64")["loss"])
    model = torch_gru(params, torch.float64)
    loss = F.cross_entropy(model(torch.from_numpy(x.astype(np.float64))), torch.from_numpy(y))
    loss.backward()
    print(f"step 0, float64: loss sexpgpu {ours:.15f} pytorch {loss.item():.15f} "
          f"(difference {abs(ours - loss.item()):.1e})")
    # after one Adam step m = (1 - beta1) g, with 1 - beta1 computed in f32 as the graph does
    one_minus_beta1 = float(np.float32(1.0) - np.float32(0.9))
    named = dict(model.named_parameters())
    for path, name in TORCH_NAMES.items():
        grad = inputs[f"opt/{path}/m"] / one_minus_beta1
        theirs = named[name].grad.numpy()
        rel = np.linalg.norm(grad - theirs) / np.linalg.norm(theirs)
        print(f"  grad {path:24s} |g| {np.linalg.norm(theirs):.3e}  relative difference "
              f"{rel:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data", choices=["generator", "frozen"], default="generator",
                    help="the example's loaders (the built-in generator) or the frozen file")
    ap.add_argument("--npz", default=str(tm.MNIST1D_NPZ))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--print-every", type=int, default=500)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    selection = {"seed": str(args.seed), "steps": str(args.steps)}

    train, test = loaders(args.seed, selection)
    test_batch = next(test.eval_batches(0, None))
    frozen = tm.load_mnist1d(Path(args.npz)) if Path(args.npz).exists() else None
    if frozen is not None:  # the generator is the published procedure: same arrays
        same = (np.array_equal(test_batch["x"], frozen["x_test"].numpy())
                and np.array_equal(test_batch["y"], frozen["y_test"].numpy()))
        print(f"generator's test split equals the frozen file: {same}")

    def next_batch(step: int) -> tuple[np.ndarray, np.ndarray]:
        if args.data == "generator":
            batch = train.next_batch(step)
            return batch["x"], batch["y"]
        start = (step * 100) % len(frozen["x"])  # train.py: batches of 100 in order
        return (frozen["x"][start:start + 100].numpy(), frozen["y"][start:start + 100].numpy())

    x0, y0 = next_batch(0)
    check_step0(selection, args.seed, x0, y0)

    _, program = load_program(str(EXAMPLE), selection)
    model = torch_gru(program.params(), torch.float32)
    optimizer = torch.optim.Adam(model.parameters(), tm.Mnist1dSetup().learning_rate)
    ours, theirs = [], []
    started = time.perf_counter()
    for step in range(args.steps):
        x, y = (x0, y0) if step == 0 else next_batch(step)
        ctx = {"step": step, "microstep": step, "microbatches": 1, "epoch": 0,
               "samples": step * len(y), "tokens": 0, "stage": 0, "seed": args.seed}
        ours.append(program.train_step([{"x": x, "y": y}], ctx)["loss"])
        theirs.append(tm.mnist1d_step(model, optimizer, torch.from_numpy(x),
                                      torch.from_numpy(y)).item())
        if step % args.print_every == 0 or step == args.steps - 1:
            print(f"step {step:5d}  sexpgpu {ours[-1]:.6f}  pytorch {theirs[-1]:.6f}  "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    diff = np.abs(np.array(ours) - np.array(theirs))
    rel = diff / np.abs(np.array(theirs))
    spans = [n for n in (10, 100, 1000) if n < args.steps] + [args.steps]
    print("loss, largest difference (absolute / relative): " + ", ".join(
        f"steps 0-{n - 1} {diff[:n].max():.2e} / {rel[:n].max():.2e}" for n in spans))
    print("loss, mean difference sexpgpu - pytorch: " + ", ".join(
        f"steps 0-{n - 1} {np.mean(np.array(ours[:n]) - np.array(theirs[:n])):+.2e}"
        for n in spans))

    state = dict(model.named_parameters())
    worst = max((np.linalg.norm(v - state[TORCH_NAMES[p]].detach().numpy())
                 / np.linalg.norm(state[TORCH_NAMES[p]].detach().numpy()), p)
                for p, v in program.params().items())
    print(f"parameters after {args.steps} steps, largest relative difference (norm): "
          f"{worst[0]:.2e} ({worst[1]})")
    ctx = {"step": args.steps, "microstep": args.steps, "microbatches": 1, "epoch": 0,
           "samples": 0, "tokens": 0, "stage": 0, "seed": args.seed}
    acc_ours = program.evaluate(test_batch, ctx, "test")["accuracy"]
    with torch.no_grad():
        logits = model(torch.from_numpy(test_batch["x"]))
        acc_theirs = (logits.argmax(-1).numpy() == test_batch["y"]).mean()
    print(f"test accuracy after {args.steps} steps: sexpgpu {100 * acc_ours:.1f}%  "
          f"pytorch {100 * acc_theirs:.1f}%")


if __name__ == "__main__":
    main()
