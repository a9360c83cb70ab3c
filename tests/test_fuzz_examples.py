"""Fuzz `check`: mutants of the shipped examples must end in a coded diagnostic or pass.

Each mutant (seeded) replaces a number, deletes or duplicates a form, swaps two
arguments, truncates the file or inserts an unbalanced paren, then runs the check
pipeline in-process (`compile_file(..., trace=True)`). Any non-SexpError exception,
an E-INTERNAL, or a mutant over 10 s fails the test.
"""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.sx"))
MUTANTS = int(os.environ.get("SEXPGPU_FUZZ_MUTANTS", "300"))
SEED = int(os.environ.get("SEXPGPU_FUZZ_SEED", "12"))
NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")
REPLACEMENTS = ["0", "-1", "999999999999", "1e30", '"x"', ":k", "nil", "0.0", "1/3"]


def _forms(text: str) -> list[tuple[int, int]]:
    """(start, end) of each parenthesised form, ignoring strings and comments roughly."""
    spans, stack = [], []
    in_str = False
    i = 0
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == ";":
            while i < len(text) and text[i] != "\n":
                i += 1
        elif c == "(":
            stack.append(i)
        elif c == ")" and stack:
            spans.append((stack.pop(), i + 1))
        i += 1
    return spans


def mutate(text: str, rng: random.Random) -> str:
    kind = rng.choice(["number", "number", "delete", "duplicate", "swap", "truncate", "paren"])
    if kind == "number":
        found = list(NUMBER.finditer(text))
        if found:
            m = rng.choice(found)
            return text[:m.start()] + rng.choice(REPLACEMENTS) + text[m.end():]
    forms = _forms(text)
    if kind in ("delete", "duplicate") and forms:
        a, b = rng.choice(forms)
        return text[:a] + (text[a:b] + " " + text[a:b] if kind == "duplicate" else "") + text[b:]
    if kind == "swap" and forms:
        a, b = rng.choice(forms)
        inner = [(x, y) for x, y in forms if a < x and y < b
                 and not any(p < x and y < q for p, q in forms if a < p and q < b)]
        if len(inner) >= 2:
            (x1, y1), (x2, y2) = sorted(rng.sample(inner, 2))
            return text[:x1] + text[x2:y2] + text[y1:x2] + text[x1:y1] + text[y2:]
    if kind == "truncate":
        return text[:rng.randrange(len(text))]
    pos = rng.randrange(len(text))
    return text[:pos] + rng.choice("()") + text[pos:]


def test_mutants_of_the_examples_end_in_coded_diagnostics(tmp_path):
    rng = random.Random(SEED)
    texts = [(p, p.read_text()) for p in EXAMPLES]
    failures = []
    for n in range(MUTANTS):
        path, text = texts[n % len(texts)]
        mutant = mutate(text, rng)
        run = tmp_path / path.name
        run.write_text(mutant)
        start = time.monotonic()
        try:
            compile_file(str(run), trace=True)
        except SexpError as exc:
            codes = [d.code for d in exc.diagnostics]
            if "E-INTERNAL" in codes:
                failures.append((n, path.name, f"E-INTERNAL: {exc}"[:300]))
        except Exception as exc:  # noqa: BLE001 - what the fuzz test looks for
            failures.append((n, path.name, f"{type(exc).__name__}: {exc}"[:300]))
        elapsed = time.monotonic() - start
        if elapsed > 10:
            failures.append((n, path.name, f"took {elapsed:.1f} s"))
        if failures and len(failures) > 5:
            break
    if failures:
        (tmp_path / "failing.sx").write_text(mutant)
    assert not failures, "\n".join(f"mutant {n} of {name}: {why}" for n, name, why in failures)


@pytest.mark.parametrize("seed", [0, 1])
def test_mutate_is_deterministic(seed):
    text = EXAMPLES[0].read_text()
    assert mutate(text, random.Random(seed)) == mutate(text, random.Random(seed))
