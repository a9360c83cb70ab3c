"""`sexpgpu sample`: text from a trained language model (inference/sample.py)."""

from __future__ import annotations

import sys

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.inference.load import load_run
from sexpgpu.inference.sample import Vocabulary, generate, vocabulary

HELP = """\
Generate text from a trained language model: the run file's defpredict (the forward
alone) on the run's checkpoint, one token at a time, decoded through the training
loader's vocabulary. The same --seed gives the same text.

Usage:
  sexpgpu sample RUN [--checkpoint WHICH] [--prompt TEXT] [--tokens N]
                     [--temperature T] [--top-k K] [--seed S] [--runs DIR] [--json]
  sexpgpu sample (-h | --help)

Options:
  --checkpoint WHICH  latest, a step number, step-NNNNNN or a checkpoint path
                      [default: latest]
  --prompt TEXT       the text to continue (default: a newline when the vocabulary
                      has one, else the first token)
  --tokens N          how many tokens to generate [default: 200]
  --temperature T     divides the logits; 0 always takes the likeliest token
                      [default: 1.0]
  --top-k K           draw only among the K likeliest tokens
  --seed S            the seed of the draws [default: 0]
  --runs DIR          where run directories are [default: runs]
  --json              print {"prompt", "text", "ids", ...} as JSON

RUN is a run directory, or a run's name under --runs. Progress goes to standard
error, the text to standard output.

Examples:
  sexpgpu sample runs/shakespeare-char-3f2a9c1d --prompt "ROMEO:" --tokens 300
  sexpgpu sample runs/shakespeare-char-3f2a9c1d --temperature 0.8 --top-k 20 --seed 7
"""


def _prompt(vocab: Vocabulary | None, text: str | None) -> list[int]:
    if vocab is None:
        return [0]
    if text is None:
        return vocab.encode("\n") if vocab.chars is None or "\n" in vocab.chars else [0]
    return vocab.encode(text) if text else [0]


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "sample", argv)
    tokens = usage.number(args["--tokens"], "--tokens", int, 1, "200")
    temperature = usage.number(args["--temperature"], "--temperature", float, 0, "0.8")
    top_k = usage.number(args["--top-k"], "--top-k", int, 1, "20")
    seed = usage.number(args["--seed"], "--seed", int, 0, "0")
    run = load_run(args["RUN"], args["--checkpoint"], batch=1, runs=args["--runs"])
    sys.stderr.write(f"sample: {run.run_dir.name} at {run.checkpoint.name}, compiling the "
                     "forward\n")
    vocab = vocabulary(run)
    prompt = _prompt(vocab, args["--prompt"])
    ids = generate(run, prompt, tokens, temperature, top_k, seed)
    text = vocab.decode(ids) if vocab is not None else " ".join(map(str, ids))
    if args["--json"]:
        shown = vocab.decode(prompt) if vocab is not None else None
        payload = {"run": str(run.run_dir), "checkpoint": str(run.checkpoint),
                   "prompt": shown, "text": text, "ids": ids, "seed": seed,
                   "temperature": temperature, "top_k": top_k}
        print_json(payload)
    else:
        sys.stdout.write((args["--prompt"] or "") + text + "\n")
    return 0
