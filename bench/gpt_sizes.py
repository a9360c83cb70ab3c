"""The char-GPT at other sizes than the example's, SexpGPU against PyTorch eager: the
same configuration on both sides (examples/shakespeare-char.sx with its knobs set, and
bench/torch_models.GPT), the same random windows of Tiny Shakespeare (bench_step.gpt_batch),
the two steps taking turns so that a slow phase of a shared machine slows both alike,
and torch.set_num_threads equal to SexpGPU's thread count (as bench/bench_step.py).

  python bench/gpt_sizes.py [--sizes 4,4,128,64,12 6,6,384,128,8 ...] [--rounds 20]

A size is layers,heads,width,context,batch. Prints one line per size: the medians of
the rounds and the ratio SexpGPU/eager (docs/benchmarks.md, twenty-second round).
Needs torch (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import torch_models as tm  # noqa: E402
from bench_step import (  # noqa: E402
    gpt_batch,
    match_torch_threads,
    medians_taking_turns,
    program_step,
)

from sexpgpu.api import load_program  # noqa: E402

EXAMPLE = ROOT / "examples" / "shakespeare-char.sx"
SIZES = ("4,4,128,64,12", "3,3,96,50,10", "4,4,192,100,8", "4,8,256,128,16",
         "6,6,384,128,8", "2,8,1024,64,4")


def ours(layers: int, heads: int, width: int, context: int, batch: int,
         feed: dict[str, np.ndarray]) -> Callable[[], float]:
    """SexpGPU's training step of the example at this size."""
    selection = {"data": str(tm.SHAKESPEARE), "n-layer": layers, "n-head": heads,
                 "n-embd": width, "context": context, "batch": batch}
    _, program = load_program(str(EXAMPLE), selection=selection)
    return program_step(program, feed)


def eager(layers: int, heads: int, width: int, context: int, batch: int,
          feed: dict[str, np.ndarray]) -> Callable[[], float]:
    """nanoGPT's step (bench/torch_models.gpt_step) at this size."""
    x, y = (torch.from_numpy(feed[v]) for v in "xy")
    torch.manual_seed(0)
    model = tm.GPT(tm.GPTConfig(block_size=context, n_layer=layers, n_head=heads,
                                n_embd=width))
    setup = tm.GPTSetup(batch_size=batch)
    optimizer = tm.gpt_optimizer(model, setup)
    counter = itertools.count()
    return lambda: tm.gpt_step(model, optimizer, x, y, next(counter), setup).item()


def compare(size: str, rounds: int) -> str:
    layers, heads, width, context, batch = (int(v) for v in size.split(","))
    feed = gpt_batch(tm.GPTSetup(batch_size=batch), context)
    steps = {name: make(layers, heads, width, context, batch, feed)
             for name, make in (("sexpgpu", ours), ("eager", eager))}
    ms = medians_taking_turns(steps, rounds)
    return (f"{size}: SexpGPU {ms['sexpgpu']:.2f} ms, eager {ms['eager']:.2f} ms, "
            f"{ms['sexpgpu'] / ms['eager']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES),
                        help="layers,heads,width,context,batch")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    print(f"threads (torch.set_num_threads = SexpGPU's): {match_torch_threads()}", flush=True)
    for size in args.sizes:
        print(compare(size, args.rounds), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
