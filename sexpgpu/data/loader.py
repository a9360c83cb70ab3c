"""Loaders: turn a source into batches, deterministically from (seed, loader name).

Orders: `sequential` (in order, wrapping at the end: the MNIST-1D paper's training
takes batches of 100 in order), `shuffle` (a fresh permutation each epoch) and
`random-windows` (independent random draws; for token streams nanoGPT's random
windows of context + 1). Stages switch the source by step (curricula). The
position is a few integers; a checkpoint saves it and `restore` puts it back
exactly, because every permutation and draw is recomputed from the seed and a
counter rather than carried as generator state.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sexpgpu.data.bounds import check_arrays, check_windows, vocabulary_fits
from sexpgpu.data.dataset import TokenData
from sexpgpu.data.errors import data_error
from sexpgpu.data.sources import Data, open_source
from sexpgpu.data.spec import FieldBound, LoaderSpec, StageSpec

ORDERS = ("sequential", "shuffle", "random-windows")
_EVAL_STREAM = 0x7FFFFFFF  # a draw counter training never reaches: eval windows are fixed


def _name_key(name: str) -> int:
    """A stable (not PYTHONHASHSEED-dependent) number for a loader name."""
    return zlib.crc32(name.encode("utf-8"))


class _Stage:
    """One source read in one order; owns its position (cursor and draws)."""

    def __init__(self, index: int, name: str, start: int, data: Data, batch: int,
                 order: str, fields: dict[str, str], seed_words: list[int],
                 bounds: dict[str, FieldBound] | None = None):
        self.index, self.name, self.start = index, name, start
        self.data, self.batch, self.order, self.fields = data, batch, order, fields
        self.seed_words = seed_words
        # index fields: arrays are checked whole now, token windows as they are cut
        self.bounds = dict(bounds or {})
        if isinstance(data, TokenData):
            self._check_windows = bool(self.bounds) and not vocabulary_fits(data, self.bounds)
        else:
            check_arrays(data, fields, self.bounds)
            self._check_windows = False
        self.cursor = 0  # rows (or windows) consumed in sequential/shuffled order
        self.draws = 0  # random batches drawn
        self._perm: tuple[int, np.ndarray] | None = None
        if batch < 1:
            raise data_error(data.origin, f"batch must be at least 1, got {batch}")

    def units(self) -> int:
        if isinstance(self.data, TokenData):
            return self.data.num_windows()
        return len(self.data)

    def epoch(self) -> int:
        consumed = self.cursor if self.order != "random-windows" else self.draws * self.batch
        return consumed // self.units()

    def _permutation(self, epoch: int) -> np.ndarray:
        if self._perm is None or self._perm[0] != epoch:
            rng = np.random.default_rng([*self.seed_words, epoch])
            self._perm = (epoch, rng.permutation(self.units()))
        return self._perm[1]

    def _ordered(self, first: int, count: int) -> np.ndarray:
        """Unit indices for order positions first .. first+count-1 (wrapping epochs)."""
        n = self.units()
        positions = first + np.arange(count)
        if self.order == "sequential":
            return positions % n
        out = np.empty(count, dtype=np.int64)
        for epoch in np.unique(positions // n):
            sel = positions // n == epoch
            out[sel] = self._permutation(int(epoch))[positions[sel] % n]
        return out

    def _rows(self, units: np.ndarray, random_starts: np.ndarray | None = None) -> dict:
        if isinstance(self.data, TokenData):
            starts = random_starts if random_starts is not None else units * self.data.context
            batch = self._select(self.data.windows(starts))
            if self._check_windows:
                check_windows(batch, starts, self.data, self.fields, self.bounds)
            return batch
        return self._select(self.data.rows(units))

    def _select(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self.fields:
            return arrays
        missing = [src for src in self.fields.values() if src not in arrays]
        if missing:
            raise data_error(
                self.data.origin, f"the source has no array {missing[0]!r}",
                expected=", ".join(sorted(arrays)), fix="change the loader's :fields",
            )
        return {out: arrays[src] for out, src in self.fields.items()}

    def take(self) -> dict[str, np.ndarray]:
        """The next training batch; advances the position."""
        if self.order == "random-windows":
            rng = np.random.default_rng([*self.seed_words, self.draws])
            self.draws += 1
            if isinstance(self.data, TokenData):
                starts = rng.integers(0, self.data.num_starts(), size=self.batch)
                return self._rows(starts, random_starts=starts)
            return self._rows(rng.integers(0, len(self.data), size=self.batch))
        units = self._ordered(self.cursor, self.batch)
        self.cursor += self.batch
        return self._rows(units)

    def passes(self, batches: int | None) -> Iterator[dict[str, np.ndarray]]:
        """Evaluation batches from the start, without touching the position.

        batches None: one full pass in order, the last batch possibly short.
        Random-window token loaders draw the same fixed windows at every eval.
        """
        if self.order == "random-windows" and isinstance(self.data, TokenData) and batches:
            rng = np.random.default_rng([*self.seed_words, _EVAL_STREAM])
            for _ in range(batches):
                starts = rng.integers(0, self.data.num_starts(), size=self.batch)
                yield self._rows(starts, random_starts=starts)
            return
        n = self.units()
        total = n if batches is None else batches * self.batch
        for first in range(0, total, self.batch):
            count = min(self.batch, total - first)
            yield self._rows(np.arange(first, first + count) % n)

    def sample_tokens(self) -> int:
        return self.batch * self.data.context if isinstance(self.data, TokenData) else 0


class Loader:
    """Batches for one `defloader`; `next_batch(step)` picks the stage for that step."""

    def __init__(self, spec: LoaderSpec, base_dir: str | Path, seed: int,
                 bounds: dict[str, FieldBound] | None = None):
        """`bounds`: the batch fields the model uses as indices (RunPlan.bounds), checked
        as the data enters (data.bounds)."""
        self.spec = spec
        order = spec.order.lstrip(":")
        if order not in ORDERS:
            raise data_error(
                None, f"loader {spec.name}: unknown order {spec.order!r}",
                expected=", ".join(ORDERS),
            )
        opened: dict[bytes, Data] = {}
        stage_specs = [StageSpec(0, spec.name, spec.source, spec.options, spec.batch)]
        stage_specs += sorted(spec.stages, key=lambda s: s.start)
        self.stages: list[_Stage] = []
        for index, st in enumerate(stage_specs):
            source = st.source or spec.source
            options = st.options if st.source else {**spec.options, **st.options}
            key = repr((source, sorted(options.items()))).encode()
            if key not in opened:
                opened[key] = open_source(source, options, Path(base_dir),
                                          names=set(spec.fields.values()))
            words = [int(seed), _name_key(spec.name), index]
            self.stages.append(_Stage(index, st.name or f"stage-{index}", st.start, opened[key],
                                      st.batch or spec.batch, order, spec.fields, words,
                                      bounds))
        self.samples = 0
        self.tokens = 0

    def stage_at(self, step: int) -> _Stage:
        current = self.stages[0]
        for stage in self.stages:
            if stage.start <= step:
                current = stage
        return current

    def next_batch(self, step: int) -> dict[str, np.ndarray]:
        stage = self.stage_at(step)
        batch = stage.take()
        self.samples += stage.batch
        self.tokens += stage.sample_tokens()
        return batch

    def eval_batches(self, step: int, batches: int | None) -> Iterator[dict[str, np.ndarray]]:
        return self.stage_at(step).passes(batches)

    def counters(self, step: int) -> dict[str, int]:
        """The ctx keys a loader feeds: samples, tokens, epoch, stage."""
        stage = self.stage_at(step)
        return {"samples": self.samples, "tokens": self.tokens,
                "epoch": stage.epoch(), "stage": stage.index}

    def position(self) -> dict[str, Any]:
        return {
            "samples": self.samples, "tokens": self.tokens,
            "stages": [{"cursor": s.cursor, "draws": s.draws} for s in self.stages],
        }

    def restore(self, position: dict[str, Any]) -> None:
        if len(position["stages"]) != len(self.stages):
            raise ValueError("loader position has a different number of stages")
        self.samples = int(position["samples"])
        self.tokens = int(position["tokens"])
        for stage, saved in zip(self.stages, position["stages"]):
            stage.cursor, stage.draws = int(saved["cursor"]), int(saved["draws"])


def batch_size(batch: dict[str, np.ndarray]) -> int:
    """Rows in a batch (every field shares its first dimension)."""
    return int(next(iter(batch.values())).shape[0])


def split_microbatches(batch: dict[str, np.ndarray], count: int) -> list[dict[str, np.ndarray]]:
    """Cut one batch into `count` microbatches of (nearly) equal size, in order."""
    pieces = np.array_split(np.arange(batch_size(batch)), count)
    return [{k: v[idx[0]:idx[-1] + 1] for k, v in batch.items()} for idx in pieces if len(idx)]
