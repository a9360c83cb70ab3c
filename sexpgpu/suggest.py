"""'Did you mean' hints for every stage: the closest known name by edit distance, and
the fix sentence a diagnostic prints. One threshold, so every diagnostic agrees on what
counts as a near miss."""

from __future__ import annotations

from collections.abc import Iterable


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and
    swaps of two neighbours (`cdua` -> `cuda`, the commonest typo) each cost one."""
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            d = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                d = min(d, before[j - 2] + 1)
            current.append(d)
        before, previous = previous, current
    return previous[-1]


def nearest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `name` (never `name` itself), if within a third of its
    length in edits (at least one edit)."""
    best, best_d = None, max(1, len(name) // 3) + 1
    for cand in candidates:
        if abs(len(cand) - len(name)) >= best_d or cand == name:
            continue
        d = edit_distance(name, cand)
        if d < best_d:
            best, best_d = cand, d
    return best


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """The fix line of a diagnostic: the nearest candidate, else the list to choose from."""
    names = list(candidates)
    near = nearest(name, names)
    return f"did you mean `{near}`?" if near else f"use one of: {', '.join(names) or '-'}"
