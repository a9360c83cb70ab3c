"""PyTorch references for issue 6: the MNIST-1D paper's four models and training loop, and
nanoGPT's shakespeare-char model for CPUs, written as in their repositories.

Run `python bench/torch_models.py mnist1d [--steps N] [--seeds 42 43 44] [--models ...]`
to train the MNIST-1D references on the frozen dataset and print their final test
accuracy (docs/reproductions.md records the figures). Needs `pip install sexpgpu[bench]`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared/data beside the repo
MNIST1D_NPZ = DATA / "mnist1d.npz"
SHAKESPEARE = DATA / "tinyshakespeare.txt"
PUBLISHED_ACCURACY = {"logreg": 32.0, "mlp": 68.0, "cnn": 94.0, "gru": 91.0}


# ---------------------------------------------------------------------------
# MNIST-1D (greydanus/mnist1d, notebooks/models.py)


class LinearBase(nn.Module):
    """Logistic regression: 40 -> 10."""

    def __init__(self, input_size: int = 40, output_size: int = 10):
        super().__init__()
        self.linear = nn.Linear(input_size, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)  # (B, 10)


class MLPBase(nn.Module):
    """40 -> hidden -> hidden -> 10, ReLU, the second layer residual."""

    def __init__(self, input_size: int = 40, output_size: int = 10, hidden_size: int = 256):
        super().__init__()
        self.linear1 = nn.Linear(input_size, hidden_size)
        self.linear2 = nn.Linear(hidden_size, hidden_size)
        self.linear3 = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear1(x).relu()  # (B, H)
        h = h + self.linear2(h).relu()  # (B, H)
        return self.linear3(h)  # (B, 10)


class ConvBase(nn.Module):
    """Three stride-2 1-D convolutions of 25 channels, then a linear classifier."""

    def __init__(self, output_size: int = 10, channels: int = 25, linear_in: int = 125):
        super().__init__()
        self.conv1 = nn.Conv1d(1, channels, 5, stride=2, padding=1)
        self.conv2 = nn.Conv1d(channels, channels, 3, stride=2, padding=1)
        self.conv3 = nn.Conv1d(channels, channels, 3, stride=2, padding=1)
        self.linear = nn.Linear(linear_in, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 1, x.shape[-1])  # (B, 1, 40)
        h = self.conv1(x).relu()  # (B, 25, 19)
        h = self.conv2(h).relu()  # (B, 25, 10)
        h = self.conv3(h).relu()  # (B, 25, 5)
        return self.linear(h.view(h.shape[0], -1))  # (B, 10)


class GRUBase(nn.Module):
    """A bidirectional GRU (6 units) over the 40 samples; all hidden states -> 10."""

    def __init__(self, input_size: int = 1, output_size: int = 10, hidden_size: int = 6,
                 time_steps: int = 40, bidirectional: bool = True):
        super().__init__()
        self.gru = nn.GRU(input_size=input_size, hidden_size=hidden_size, batch_first=True,
                          bidirectional=bidirectional)
        directions = 2 if bidirectional else 1
        self.linear = nn.Linear(directions * hidden_size * time_steps, output_size)
        self.hidden_size, self.directions = hidden_size, directions

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(*x.shape[:2], 1)  # (B, 40, 1)
        h0 = torch.zeros(self.directions, x.shape[0], self.hidden_size, dtype=x.dtype,
                         device=x.device)
        output, _ = self.gru(x, h0)  # (B, 40, 12)
        return self.linear(output.reshape(output.shape[0], -1))  # (B, 10)


class LSTMBase(nn.Module):
    """An LSTM (6 units, one direction) over the 40 samples; all hidden states -> 10
    (bench/models/mnist1d-lstm.sx in PyTorch)."""

    def __init__(self, output_size: int = 10, hidden_size: int = 6, time_steps: int = 40):
        super().__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=hidden_size, batch_first=True)
        self.linear = nn.Linear(hidden_size * time_steps, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.lstm(x.view(*x.shape[:2], 1))  # (B, 40, 6), zero initial state
        return self.linear(output.reshape(output.shape[0], -1))  # (B, 10)


MNIST1D_MODELS = {
    "logreg": lambda: LinearBase(40, 10),
    "mlp": lambda: MLPBase(40, 10, hidden_size=256),
    "cnn": lambda: ConvBase(10),
    "gru": lambda: GRUBase(1, 10),
    "lstm": lambda: LSTMBase(10),
}


@dataclass
class Mnist1dSetup:
    """notebooks/train.py `get_model_args`: Adam lr 1e-2, batch 100 taken in order."""

    learning_rate: float = 1e-2
    batch_size: int = 100
    total_steps: int = 8000
    eval_every: int = 250


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_mnist1d(path: Path = MNIST1D_NPZ) -> dict[str, torch.Tensor]:
    data = np.load(path, allow_pickle=False)
    return {"x": torch.from_numpy(data["x"]).float(), "y": torch.from_numpy(data["y"]).long(),
            "x_test": torch.from_numpy(data["x_test"]).float(),
            "y_test": torch.from_numpy(data["y_test"]).long()}


def mnist1d_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
                 y: torch.Tensor, update: Callable[[], Any] | None = None) -> torch.Tensor:
    """One training step as in train.py: forward, backward, update (`update` replaces
    optimizer.step, e.g. by a compiled one)."""
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    (update or optimizer.step)()
    optimizer.zero_grad()
    return loss


def train_mnist1d(name: str, data: dict[str, torch.Tensor], seed: int,
                  setup: Mnist1dSetup | None = None) -> dict[str, Any]:
    """train.py's `train_model`: steps 0..total_steps inclusive (so total_steps + 1
    updates, as the reference loops `range(total_steps + 1)`), test accuracy in percent
    every eval_every steps. Returns the curve and the final accuracy."""
    setup = setup or Mnist1dSetup()
    set_seed(seed)
    model = MNIST1D_MODELS[name]()
    optimizer = torch.optim.Adam(model.parameters(), setup.learning_rate)
    x_train, y_train = data["x"], data["y"]
    curve: list[tuple[int, float, float]] = []
    started = time.perf_counter()
    for step in range(setup.total_steps + 1):
        start = (step * setup.batch_size) % len(x_train)
        x, y = x_train[start:start + setup.batch_size], y_train[start:start + setup.batch_size]
        loss = mnist1d_step(model, optimizer, x, y)
        if step % setup.eval_every == 0 or step == setup.total_steps:
            with torch.no_grad():
                logits = model(data["x_test"])
                accuracy = 100.0 * (logits.argmax(-1) == data["y_test"]).float().mean().item()
            curve.append((step, float(loss.item()), accuracy))
    return {"model": name, "seed": seed, "steps": setup.total_steps,
            "final_test_accuracy": curve[-1][2], "curve": curve,
            "wall_s": round(time.perf_counter() - started, 2)}


# ---------------------------------------------------------------------------
# nanoGPT shakespeare-char, CPU configuration (karpathy/nanoGPT model.py, train.py)


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 65
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False
    gelu: str = "none"  # nanoGPT's exact GELU; "tanh" is GPT-2's approximation


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has no bias=False before 2.1)."""

    def __init__(self, ndim: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.dropout = config.n_head, config.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.gelu = config.gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate=self.gelu))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT: token + position embeddings, pre-LN blocks, tied output head."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # residual projections, GPT-2 style
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        _, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)  # (B, T, C); dropout 0 in this configuration
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, vocab)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


@dataclass
class GPTSetup:
    """nanoGPT config/train_shakespeare_char.py with the README's CPU overrides."""

    batch_size: int = 12
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int = 2000
    max_iters: int = 2000
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.99)
    grad_clip: float = 1.0


def gpt_lr(it: int, s: GPTSetup) -> float:
    """nanoGPT's get_lr: linear warmup, cosine decay to min_lr, then min_lr."""
    if it < s.warmup_iters:
        return s.learning_rate * (it + 1) / (s.warmup_iters + 1)
    if it > s.lr_decay_iters:
        return s.min_lr
    ratio = (it - s.warmup_iters) / (s.lr_decay_iters - s.warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return s.min_lr + coeff * (s.learning_rate - s.min_lr)


def gpt_optimizer(model: GPT, s: GPTSetup, tensor_lr: bool = False) -> torch.optim.AdamW:
    """nanoGPT's configure_optimizers: weight decay on >=2-D parameters only. tensor_lr
    keeps the lr in a tensor so a compiled step does not recompile when it changes."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": s.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    lr = torch.tensor(s.learning_rate) if tensor_lr else s.learning_rate
    return torch.optim.AdamW(groups, lr=lr, betas=s.betas)


def gpt_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
             y: torch.Tensor, it: int, s: GPTSetup,
             update: Callable[[], Any] | None = None) -> torch.Tensor:
    """One nanoGPT iteration (no gradient accumulation on CPU): lr, forward, backward,
    clip, update. A tensor lr (what a compiled optimizer needs) is set in place."""
    lr = gpt_lr(it, s)
    for group in optimizer.param_groups:
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(lr)
        else:
            group["lr"] = lr
    loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
    (update or optimizer.step)()
    optimizer.zero_grad(set_to_none=True)
    return loss


def training_step(model: str, x: torch.Tensor, y: torch.Tensor, compiled: bool = False,
                  device: str = "cpu") -> Callable[[], torch.Tensor]:
    """A closure running one training step of `model` ("gpt" or an MNIST1D_MODELS name)
    on the batch (x, y) and returning its loss; seeded with 0. With `compiled`, the module
    and the optimizer update go through torch.compile (PyTorch's "compiling the
    optimizer" recipe; the GPT's lr is then a tensor)."""
    torch.manual_seed(0)
    if model == "gpt":
        setup = GPTSetup()
        net = GPT(GPTConfig()).to(device)
        optimizer = gpt_optimizer(net, setup, tensor_lr=compiled)
    else:
        net = MNIST1D_MODELS[model]().to(device)
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    forward, update = net, optimizer.step
    if compiled:
        forward = torch.compile(net)
        update = torch.compile(optimizer.step, fullgraph=False)
    steps = itertools.count()

    if model == "gpt":
        def step() -> torch.Tensor:
            it = next(steps) % setup.max_iters
            return gpt_step(forward, optimizer, x, y, it, setup, update)
    else:
        def step() -> torch.Tensor:
            return mnist1d_step(forward, optimizer, x, y, update)
    return step


def char_batch(tokens: np.ndarray, batch: int, block: int,
               rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """nanoGPT's get_batch: random windows of block + 1 tokens."""
    starts = rng.integers(0, len(tokens) - block - 1, size=batch)
    x = np.stack([tokens[i:i + block] for i in starts]).astype(np.int64)  # (B, T)
    y = np.stack([tokens[i + 1:i + 1 + block] for i in starts]).astype(np.int64)  # (B, T)
    return torch.from_numpy(x), torch.from_numpy(y)


def char_tokens(path: Path = SHAKESPEARE) -> tuple[np.ndarray, np.ndarray]:
    """nanoGPT's data/shakespeare_char/prepare.py: sorted characters as the vocabulary,
    the first 90% of the text for training and the rest for validation."""
    text = path.read_text(encoding="utf-8")
    vocab = {ch: i for i, ch in enumerate(sorted(set(text)))}
    ids = np.array([vocab[ch] for ch in text], dtype=np.int64)
    cut = int(0.9 * len(ids))
    return ids[:cut], ids[cut:]


def train_gpt(seed: int, setup: GPTSetup | None = None, eval_iters: int = 200,
              eval_interval: int = 250, path: Path = SHAKESPEARE) -> dict[str, Any]:
    """nanoGPT's train.py loop for this configuration; the val loss is the mean over
    `eval_iters` random batches (nanoGPT's estimate_loss), at every eval_interval and the
    end. Returns the curve and the final val loss."""
    setup = setup or GPTSetup()
    config = GPTConfig()
    train, val = char_tokens(path)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = GPT(config)
    optimizer = gpt_optimizer(model, setup)

    def val_loss() -> float:
        model.eval()
        with torch.no_grad():
            losses = [model(*char_batch(val, setup.batch_size, config.block_size, rng)).item()
                      for _ in range(eval_iters)]
        model.train()
        return float(np.mean(losses))

    curve: list[tuple[int, float, float | None]] = []
    started = time.perf_counter()
    for it in range(setup.max_iters + 1):  # nanoGPT evaluates at iter 0 and max_iters too
        if it % eval_interval == 0 or it == setup.max_iters:
            curve.append((it, float("nan"), val_loss()))
        if it == setup.max_iters:
            break
        x, y = char_batch(train, setup.batch_size, config.block_size, rng)
        loss = gpt_step(model, optimizer, x, y, it, setup)
        if it % 100 == 0:
            curve.append((it, float(loss.item()), None))
    return {"model": "gpt", "seed": seed, "steps": setup.max_iters,
            "final_val_loss": curve[-1][2], "curve": curve,
            "wall_s": round(time.perf_counter() - started, 2)}


# ---------------------------------------------------------------------------
# Command line: train the references


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torch_models", description=__doc__)
    parser.add_argument("what", choices=["mnist1d", "gpt"])
    parser.add_argument("--models", nargs="+", default=list(MNIST1D_MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[42, 43, 44])
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=MNIST1D_NPZ)
    parser.add_argument("--out", type=Path, default=None, help="append results as JSON lines")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.what == "gpt":
        return _main_gpt(args)
    data = load_mnist1d(args.data)
    for name in args.models:
        accs = []
        for seed in args.seeds:
            result = train_mnist1d(name, data, seed, Mnist1dSetup(total_steps=args.steps))
            accs.append(result["final_test_accuracy"])
            print(f"{name} seed {seed}: test accuracy {result['final_test_accuracy']:.1f}% "
                  f"({result['wall_s']} s)", flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(result) + "\n")
        print(f"{name}: mean {np.mean(accs):.1f} min {min(accs):.1f} max {max(accs):.1f} "
              f"(published {PUBLISHED_ACCURACY[name]:.0f})", flush=True)
    return 0


def _main_gpt(args: argparse.Namespace) -> int:
    seeds = args.seeds if args.seeds != [42, 43, 44] else [1337, 1338]
    finals = []
    for seed in seeds:
        result = train_gpt(seed, GPTSetup(max_iters=min(args.steps, 2000)))
        finals.append(result["final_val_loss"])
        print(f"gpt seed {seed}: val loss {result['final_val_loss']:.4f} ({result['wall_s']} s)",
              flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(result) + "\n")
    print(f"gpt: mean {np.mean(finals):.4f} min {min(finals):.4f} max {max(finals):.4f} "
          "(published 1.88)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
