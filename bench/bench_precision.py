"""bf16 against f32 in one run (issue 14): the training-step time and the memory of the
MNIST-1D MLP and CNN (batch 100) and the char-GPT (batch 12, context 64), each compiled
twice from its example, `--precision f32` and `--precision bf16`.

  python bench/bench_precision.py [--models mlp cnn gpt] [--rounds 30] [--json FILE]

Memory is what the compiled step allocates beside parameters, optimizer state and batch
(`CompiledGraph.peak_bytes`: the kernels' arena of activations, gradients and
temporaries), and of it the activations the forward stores for the backward. Step times
are medians (and minima) over rounds that alternate f32 and bf16 steps, so load from
other processes falls on both alike; the first steps (which load kernels) are not timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {"mlp": "mnist1d-mlp.sx", "cnn": "mnist1d-cnn.sx", "gpt": "shakespeare-char.sx"}
SHAKESPEARE = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
SELECTIONS: dict[str, dict[str, Any]] = {"gpt": {"data": str(SHAKESPEARE)}}
ROUNDS = {"mlp": 200, "cnn": 100, "gpt": 20}
WARMUP = 3


def build(model: str, precision: str) -> tuple[Any, Any, dict[str, np.ndarray], int]:
    """(program, its compiled step, one batch of the training loader, where the forward
    ends in the step graph) for the example compiled in `precision`."""
    sys.path.insert(0, str(ROOT))
    from sexpgpu.contract.compile import compile_file
    from sexpgpu.contract.plan import run_plan
    from sexpgpu.data.loader import Loader
    from sexpgpu.runtime.compiled import KernelProgram
    from sexpgpu.selection import Selection

    file = ROOT / "examples" / EXAMPLES[model]
    sets = {k: str(v) for k, v in SELECTIONS.get(model, {}).items()}
    compiled = compile_file(str(file), Selection(sets, run={"precision": precision}))
    plan = run_plan(compiled)
    program = KernelProgram(compiled, plan.run.seed)
    spec = next(s for s in plan.loaders if s.name == plan.run.train_loader)
    loader = Loader(spec, file.parent, plan.run.seed, plan.bounds.get(spec.name))
    low = compiled.lowered()
    return program, program._step, loader.next_batch(0), low.sections[low.step.name].forward


def saved_activation_bytes(compiled: Any, forward_end: int) -> int:
    """Bytes of the values a kernel of the forward stores that a kernel of the backward
    reads: the activations kept from one to the other."""
    program = compiled.program
    position = {node.id: i for i, node in enumerate(program.graph.nodes)}
    made_in_forward = {v for k in program.kernels for v in k.outputs
                       if v.node is not None and position[v.node.id] < forward_end}
    read_later = {v for k in program.kernels for v in k.inputs
                  if any(position[n.id] >= forward_end for n in k.nodes)}
    sizes = {"f32": 4, "bf16": 2, "i64": 8, "i32": 4, "bool": 1}
    return sum(int(np.prod(v.shape)) * sizes[v.dtype] for v in made_in_forward & read_later)


def measure(model: str, rounds: int) -> dict[str, Any]:
    built = {p: build(model, p) for p in ("f32", "bf16")}
    ctx = {"step": 0, "microstep": 0, "microbatches": 1, "epoch": 0, "samples": 0,
           "tokens": 0, "stage": 0, "seed": 0}
    times: dict[str, list[float]] = {"f32": [], "bf16": []}
    losses: dict[str, float] = {}
    for step in range(WARMUP + rounds):
        for precision, (program, _, batch, _) in built.items():
            t0 = time.perf_counter()
            out = program.train_step([batch], {**ctx, "step": step})
            if step >= WARMUP:
                times[precision].append((time.perf_counter() - t0) * 1e3)
            losses[precision] = float(out["loss"])
    row: dict[str, Any] = {"model": model, "rounds": rounds}
    for precision, (_, step_graph, _, forward_end) in built.items():
        row[precision] = {
            "median_ms": statistics.median(times[precision]),
            "min_ms": min(times[precision]),
            "step_buffer_bytes": step_graph.peak_bytes,
            "saved_activation_bytes": saved_activation_bytes(step_graph, forward_end),
            "kernels": len(step_graph.program.kernels),
            "loss_after": losses[precision],
        }
    return row


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| model | f32 step, median (min) | bf16 step, median (min) | bf16/f32 "
           "| f32 buffers | bf16 buffers | bf16/f32 | f32 saved act. | bf16 saved act. |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        a, b = r["f32"], r["bf16"]
        out.append(
            f"| {r['model']} | {a['median_ms']:.3f} ms ({a['min_ms']:.3f}) "
            f"| {b['median_ms']:.3f} ms ({b['min_ms']:.3f}) "
            f"| {b['median_ms'] / a['median_ms']:.2f}x "
            f"| {_mib(a['step_buffer_bytes'])} | {_mib(b['step_buffer_bytes'])} "
            f"| {b['step_buffer_bytes'] / a['step_buffer_bytes']:.2f}x "
            f"| {_mib(a['saved_activation_bytes'])} | {_mib(b['saved_activation_bytes'])} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_precision", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=list(EXAMPLES), default=list(EXAMPLES))
    parser.add_argument("--rounds", type=int, default=None,
                        help="timed steps per precision (default: 200 MLP, 100 CNN, 20 GPT)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = []
    for model in args.models:
        print(f"{model} ...", flush=True)
        rows.append(measure(model, args.rounds or ROUNDS[model]))
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
