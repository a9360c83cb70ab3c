"""SexpGPU's char-GPT against nanoGPT's in PyTorch from the same initial weights on the
same batches: the two training runs must follow each other step for step, so that a
difference in the final validation loss (docs/reproductions.md) is seed noise, not a
different computation.

  python bench/compare_gpt_torch.py [--steps 200] [--seed 1337] [--text PATH]

SexpGPU's parameters after initialisation are copied into bench/torch_models.GPT (with
the exact GELU, as the example and nanoGPT use); both then train on the same random windows of
the training split with nanoGPT's schedule, AdamW and clipping. Prints the loss of both
per step, their largest relative difference over the first 10 and all steps, and the
relative difference of every parameter at the end. Needs torch (`pip install -e
'.[bench]'`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import torch_models as tm  # noqa: E402

from sexpgpu.api import load_program  # noqa: E402


def torch_name(path: str) -> str:
    """SexpGPU's parameter path -> the PyTorch module's parameter name."""
    return path.replace("/", ".").replace("-", "_")


def torch_gpt(params: dict[str, np.ndarray]) -> tm.GPT:
    model = tm.GPT(tm.GPTConfig(gelu="none"))
    state = model.state_dict()
    loaded = set()
    for path, value in params.items():
        name = torch_name(path)
        if name not in state:
            raise KeyError(f"no PyTorch parameter for {path} ({name})")
        state[name].copy_(torch.from_numpy(np.asarray(value, np.float32)))
        loaded.add(name)
    missing = {n for n in state if n not in loaded and n != "lm_head.weight"}  # tied to wte
    if missing:
        raise KeyError(f"PyTorch parameters not loaded: {sorted(missing)}")
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--text", default=str(tm.SHAKESPEARE))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    selection = {"data": args.text, "seed": args.seed, "steps": 2000}
    _, program = load_program(str(ROOT / "examples" / "shakespeare-char.sx"), selection)
    model = torch_gpt(program.params())
    setup = tm.GPTSetup()
    optimizer = tm.gpt_optimizer(model, setup)
    train, _ = tm.char_tokens(Path(args.text))
    rng = np.random.default_rng(args.seed)
    ours, theirs = [], []
    for it in range(args.steps):
        x, y = tm.char_batch(train, setup.batch_size, 64, rng)
        ctx = {"step": it, "microstep": it, "microbatches": 1, "epoch": 0,
               "samples": it * setup.batch_size, "tokens": it * x.numel(), "stage": 0,
               "seed": args.seed}
        ours.append(program.train_step([{"x": x.numpy(), "y": y.numpy()}], ctx)["loss"])
        theirs.append(tm.gpt_step(model, optimizer, x, y, it, setup).item())
        if it % 20 == 0 or it == args.steps - 1:
            print(f"step {it:4d}  sexpgpu {ours[-1]:.6f}  pytorch {theirs[-1]:.6f}")
    rel = np.abs(np.array(ours) - np.array(theirs)) / np.abs(np.array(theirs))
    print(f"loss, largest relative difference: steps 0-9 {rel[:10].max():.2e}, "
          f"all {args.steps} steps {rel.max():.2e}")
    state = model.state_dict()
    worst = max((np.linalg.norm(v - state[torch_name(p)].numpy())
                 / np.linalg.norm(state[torch_name(p)].numpy()), p)
                for p, v in program.params().items())
    print(f"parameters after {args.steps} steps, largest relative difference (norm): "
          f"{worst[0]:.2e} ({worst[1]})")


if __name__ == "__main__":
    main()
