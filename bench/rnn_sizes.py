"""Recurrent models at other hidden sizes than the benchmark's six units, SexpGPU
against PyTorch eager on the MNIST-1D batch of bench/bench_step.py: the LSTM written
three ways (bench/models/mnist1d-lstm.sx: `nn:lstm`, `nn:lstm-cell` run by
`nn:run-cell`, and a cell from primitives; PyTorch runs nn.LSTM for each) and the
bidirectional GRU example (examples/mnist1d-gru.sx; nn.GRU), the steps taking turns
after a warm-up (bench_step.medians_taking_turns) with torch.set_num_threads equal to
SexpGPU's thread count.

  python bench/rnn_sizes.py [--hidden 6 32 64 128] [--rounds 30]

Prints one line per model and size: the medians and the ratio SexpGPU/eager
(docs/benchmarks.md, twenty-third round). Needs torch (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import torch_models as tm  # noqa: E402
from bench_step import (  # noqa: E402
    match_torch_threads,
    medians_taking_turns,
    mnist1d_batch,
    program_step,
)

from sexpgpu.api import load_program  # noqa: E402

HIDDEN = (6, 32, 64, 128)
# the model's name -> its run file and knobs, and PyTorch's module of `hidden` units
MODELS: dict[str, tuple[str, dict, Callable[[int], torch.nn.Module]]] = {
    "nn:lstm": ("bench/models/mnist1d-lstm.sx", {"cell": ":layer"},
                lambda h: tm.LSTMBase(10, hidden_size=h)),
    "lstm-cell": ("bench/models/mnist1d-lstm.sx", {"cell": ":cell"},
                  lambda h: tm.LSTMBase(10, hidden_size=h)),
    "lstm-prim": ("bench/models/mnist1d-lstm.sx", {"cell": ":primitives"},
                  lambda h: tm.LSTMBase(10, hidden_size=h)),
    "gru": ("examples/mnist1d-gru.sx", {}, lambda h: tm.GRUBase(1, 10, hidden_size=h)),
}


def ours(model: str, hidden: int) -> Callable[[], float]:
    path, knobs, _ = MODELS[model]
    _, program = load_program(str(ROOT / path), selection={**knobs, "hidden": hidden})
    return program_step(program, mnist1d_batch())


def eager(model: str, hidden: int) -> Callable[[], float]:
    """The MNIST-1D training step (bench/torch_models.mnist1d_step, Adam lr 1e-2)."""
    torch.manual_seed(0)
    net = MODELS[model][2](hidden)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = (torch.from_numpy(v) for v in mnist1d_batch().values())
    return lambda: tm.mnist1d_step(net, optimizer, x, y).item()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", nargs="+", type=int, default=list(HIDDEN))
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    print(f"threads (torch.set_num_threads = SexpGPU's): {match_torch_threads()}", flush=True)
    for hidden in args.hidden:
        for model in args.models:
            ms = medians_taking_turns({"sexpgpu": ours(model, hidden),
                                       "eager": eager(model, hidden)}, args.rounds)
            print(f"{model} hidden {hidden}: SexpGPU {ms['sexpgpu']:.2f} ms, eager "
                  f"{ms['eager']:.2f} ms, {ms['sexpgpu'] / ms['eager']:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
