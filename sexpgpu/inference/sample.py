"""Text from a language model's forward: a window of ids in, the last position's
logits out, temperature and top-k, one token at a time (nanoGPT's `generate`).

The forward graph has one shape, (1, context): a prompt shorter than the context is
right-padded and the logits are read at its last position. That is exact for a causal
model (a GPT: position t sees tokens <= t only), which is what `sample` is for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sexpgpu.data.files import resolve
from sexpgpu.data.text import prepare
from sexpgpu.diagnostics import error
from sexpgpu.inference.load import LoadedRun, data_base
from sexpgpu.trace.step import E_PREDICT
from sexpgpu.usage import E_USAGE, UsageError


@dataclass
class Vocabulary:
    """The training loader's tokens as text: characters by id, or bytes."""

    chars: list[str] | None  # None: a byte vocabulary
    size: int

    def encode(self, text: str) -> list[int]:
        if self.chars is None:
            return list(text.encode("utf-8"))
        lookup = {c: i for i, c in enumerate(self.chars)}
        missing = sorted({c for c in text if c not in lookup})
        if missing:
            raise UsageError(*error(
                E_USAGE, f"the prompt has characters the vocabulary lacks: {missing!r}",
                expected=f"characters among the {self.size} the run was trained on",
                actual="".join(missing), fix="leave those characters out of --prompt",
            ).diagnostics)
        return [lookup[c] for c in text]

    def decode(self, ids: list[int]) -> str:
        if self.chars is None:
            return bytes(ids).decode("utf-8", errors="replace")
        return "".join(self.chars[i] for i in ids)


def vocabulary(run: LoadedRun) -> Vocabulary | None:
    """The vocabulary of the training loader's text source (None for other sources:
    `sample` then prints token ids)."""
    exp = run.compiled.experiment
    assert exp.run is not None
    spec = exp.loader(exp.run.train_loader)
    if spec is None or spec.source.lstrip(":") != "text":
        return None
    path = resolve(spec.options.get("path"), data_base(run.run_dir, run.plan))
    prepared = prepare(Path(path), str(spec.options.get("vocab", "char")))
    return Vocabulary(prepared.vocab, prepared.vocab_size)


def token_input(run: LoadedRun) -> tuple[str, int]:
    """The forward's one integer input of shape (batch, context): its name and context."""
    fields = run.fields()
    ids = [(k, shape) for k, (shape, dtype) in fields.items()
           if dtype.startswith("i") and len(shape) == 1]
    if len(fields) != 1 or not ids:
        shown = ", ".join(f"{k} {d}{list(s)}" for k, (s, d) in fields.items())
        raise error(E_PREDICT, "`sample` needs a defpredict that takes one window of token ids",
                    expected="(defpredict (model &key x) (model x)) with x an integer "
                    "field of shape (context)", actual=shown or "no input",
                    fix="use `sexpgpu predict` for models that do not read token windows")
    name, (context,) = ids[0]
    return name, int(context)


def next_logits(run: LoadedRun, name: str, context: int, ids: list[int]) -> np.ndarray:
    """The logits after `ids` (its last `context` ids; shorter windows right-padded)."""
    window = ids[-context:]
    x = np.zeros((1, context), np.int64)
    x[0, :len(window)] = window
    out = run.forward(**{name: x})[0]     # (T vocab), or (vocab) for a last-position model
    return out[len(window) - 1] if out.ndim == 2 else out


def pick(logits: np.ndarray, temperature: float, top_k: int | None,
         rng: np.random.Generator) -> int:
    """One token: the argmax at temperature 0, else a draw from softmax(logits / T)
    restricted to the top k."""
    logits = logits.astype(np.float64)
    if temperature <= 0:
        return int(np.argmax(logits))
    logits = logits / temperature
    if top_k is not None and top_k < len(logits):
        kth = np.sort(logits)[-top_k]
        logits = np.where(logits < kth, -np.inf, logits)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    return int(rng.choice(len(probs), p=probs))


def generate(run: LoadedRun, prompt: list[int], tokens: int, temperature: float = 1.0,
             top_k: int | None = None, seed: int = 0) -> list[int]:
    """`tokens` new ids after `prompt`; the same seed gives the same ids."""
    name, context = token_input(run)
    rng = np.random.default_rng(seed)
    ids = list(prompt)
    for _ in range(tokens):
        ids.append(pick(next_logits(run, name, context, ids), temperature, top_k, rng))
    return ids[len(prompt):]
