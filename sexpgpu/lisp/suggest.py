"""'Did you mean' hints: the closest known name by edit distance."""

from __future__ import annotations

from collections.abc import Iterable


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate within a third of the name's length in edits, if any."""
    best, best_d = None, max(1, len(name) // 3) + 1
    for cand in candidates:
        if abs(len(cand) - len(name)) >= best_d or cand == name:
            continue
        d = edit_distance(name, cand)
        if d < best_d:
            best, best_d = cand, d
    return best
