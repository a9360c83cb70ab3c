"""Batch fields the model uses as indices (class ids into a one-hot, token ids into an
embedding), checked against the model's sizes as the data enters: named arrays whole
when a loader opens, a text's vocabulary when it is prepared, token windows as they are
cut. Out of range is E-DATA naming the file, the row, the value and the limit: never a
one-hot row of zeros or an embedding lookup past the table."""

from __future__ import annotations

import numpy as np

from sexpgpu.data.dataset import ArrayData, TokenData
from sexpgpu.data.errors import data_error
from sexpgpu.data.spec import FieldBound
from sexpgpu.diagnostics import SexpError

FIX = ("size the model for the data (the knob that sets the number of classes or the "
       "vocabulary), or fix the data")


def _source_names(fields: dict[str, str], bounds: dict[str, FieldBound]) -> dict[str, str]:
    """Batch field -> source array name, for the bounded fields."""
    return {field: fields.get(field, field) if fields else field for field in bounds}


def _error(origin: str, field: str, src: str, value: int, at: str, count: int,
           bound: FieldBound) -> SexpError:
    where = f" ({bound.where})" if bound.where else ""
    more = f"; {count} values out of range in all" if count > 1 else ""
    return data_error(
        origin, f"`{src}` {at} holds {value}, outside {bound.low}..{bound.high - 1}",
        expected=f"`{field}` in {bound.low}..{bound.high - 1}: the model uses it as a "
        f"{bound.use}{where}", actual=f"{value} at {at}{more}", fix=FIX)


def _first_bad(array: np.ndarray, bound: FieldBound) -> tuple[tuple[int, ...], int] | None:
    """(index, count) of the first value outside the bound, or None."""
    bad = (array < bound.low) | (array >= bound.high)
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return first, int(bad.sum())


def check_arrays(data: ArrayData, fields: dict[str, str],
                 bounds: dict[str, FieldBound]) -> None:
    """Every row of each bounded array, once, when the loader opens its source."""
    for field, src in _source_names(fields, bounds).items():
        array = data.arrays.get(src)
        if array is None or not np.issubdtype(array.dtype, np.integer):
            continue  # a missing array is reported by field selection; floats by check
        found = _first_bad(array, bounds[field])
        if found is not None:
            index, count = found
            at = f"row {index[0]}" + (f", position {list(index[1:])}" if len(index) > 1 else "")
            raise _error(data.origin, field, src, int(array[index]), at, count, bounds[field])


def vocabulary_fits(data: TokenData, bounds: dict[str, FieldBound]) -> bool:
    """A character text's vocabulary is known exactly: check it once at open. True when
    it fits every bound (the windows need no further check)."""
    vocab = data.meta.get("vocab")
    if vocab is None or any(bound.low > 0 for bound in bounds.values()):
        return False  # not known exactly, or ids must skip 0: check every window
    for field, bound in bounds.items():
        if len(vocab) > bound.high:
            char = vocab[bound.high]
            raise data_error(
                data.origin, f"the text has {len(vocab)} distinct characters (ids "
                f"0..{len(vocab) - 1}), more than the model's {bound.high}",
                expected=f"`{field}` in {bound.low}..{bound.high - 1}: the model uses it as a "
                f"{bound.use}" + (f" ({bound.where})" if bound.where else ""),
                actual=f"{len(vocab)} characters; {char!r} has id {bound.high}", fix=FIX)
    return True


def check_windows(batch: dict[str, np.ndarray], starts: np.ndarray, data: TokenData,
                  fields: dict[str, str], bounds: dict[str, FieldBound]) -> None:
    """The windows just cut from a token stream: x[b, t] is token starts[b] + t of the
    file, y[b, t] token starts[b] + t + 1."""
    for field, src in _source_names(fields, bounds).items():
        array = batch.get(field)
        if array is None:
            continue
        found = _first_bad(array, bounds[field])
        if found is not None:
            (row, col), count = found
            offset = int(starts[row]) + col + (1 if src == "y" else 0)
            raise _error(data.origin, field, src, int(array[row, col]), f"token {offset}",
                         count, bounds[field])
