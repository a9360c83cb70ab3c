"""What a `defloader` declares, as plain records (sexpgpu/record.py): the contract
writes them, the loader reads them, and the RunPlan carries them to the runtime.
SOURCE_OPTIONS is each built-in source's options, the one table `check` validates a
`:source` against."""

from __future__ import annotations

from typing import Any

from sexpgpu.record import factory, record


@record
class StageSpec:
    """A curriculum stage: from step `start` on, the loader reads this instead.

    `source`/`options`/`batch` left as None keep the loader's own.
    """

    start: int
    name: str = ""
    source: str | None = None
    options: dict[str, Any] = factory(dict)
    batch: int | None = None


@record
class LoaderSpec:
    """`(defloader NAME :source S :batch N :order O ...)`.

    source: a built-in source name (mnist1d, npz, npy, tokens, text, synthetic).
    options: the source's options (path, split, context, ...).
    batch: samples per training step (split evenly into microbatches).
    order: sequential | shuffle | random-windows.
    fields: batch field name -> source array name; empty keeps the source's names.
    stages: curriculum stages switched by step (see StageSpec).
    """

    name: str
    source: str
    options: dict[str, Any] = factory(dict)
    batch: int = 1
    order: str = "sequential"
    fields: dict[str, str] = factory(dict)
    stages: list[StageSpec] = factory(list)


@record
class FieldBound:
    """A batch field's values must lie in low..high-1: the model uses it as `use` (a class
    of a one-hot over n, a row of an embedding table), built at `where` (file:line). The
    compiler derives these from the traced graphs; the loader checks the data."""

    low: int
    high: int
    use: str
    where: str = ""
@record(frozen=True)
class Option:
    """One source option: what kind of value it takes (see `option_problem`)."""

    kind: str  # choice count positive fraction nonneg flag path paths name pair shapes
    choices: tuple[str, ...] = ()      # name pair
    required: bool = False
    example: str = ""                  # the value a fix suggests


_SPLIT = ("train", "test")
_PATH = Option("path", required=True)
# every option each built-in source reads (names with underscores, as the compiler
# passes them: `:val-fraction` is val_fraction); the sources in sources.py read these
SOURCE_OPTIONS: dict[str, dict[str, Option]] = {
    "mnist1d": {
        "split": Option("choice", _SPLIT), "dtype": Option("choice", ("float32", "float64")),
        "num_samples": Option("positive"), "train_split": Option("fraction"),
        "template_len": Option("positive"), "padding": Option("pair"),
        "scale_coeff": Option("nonneg"), "max_translation": Option("count"),
        "corr_noise_scale": Option("nonneg"), "iid_noise_scale": Option("nonneg"),
        "shear_scale": Option("nonneg"), "shuffle_seq": Option("flag"),
        "final_seq_length": Option("positive"), "seed": Option("count"),
    },
    "npz": {"path": _PATH, "shapes": Option("shapes")},
    "npy": {"path": Option("paths", required=True), "field": Option("name"),
            "shapes": Option("shapes")},
    "tokens": {
        "path": _PATH, "context": Option("positive", required=True),
        "dtype": Option("choice", ("uint8", "uint16", "uint32", "int16", "int32", "int64"),
                        example="uint16 (nanoGPT's .bin)"),
        "vocab_size": Option("positive", example="65 (or a knob)"),
    },
    "text": {
        "path": _PATH, "context": Option("positive", required=True),
        "vocab": Option("choice", ("char", "byte")), "split": Option("choice", ("train", "val")),
        "val_fraction": Option("fraction", example="0.1"),
        "vocab_size": Option("positive", example="65 (or a knob)"),
    },
    "synthetic": {
        "task": Option("choice", ("classes", "parity", "linear-regression"), required=True),
        "n": Option("positive"), "dim": Option("positive"), "seed": Option("count"),
        "split": Option("choice", ("train", "test", "val")), "noise": Option("nonneg"),
        "classes": Option("positive"),
    },
}


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def option_problem(option: Option, value: Any) -> str | None:
    """None when `value` (as the compiler passes it: keywords as strings, t/nil as
    True/None, lists as lists) fits `option`; else what was expected."""
    kind = option.kind
    if kind == "choice":
        ok = isinstance(value, str) and value in option.choices
        return None if ok else "one of " + ", ".join(f":{c}" for c in option.choices)
    if kind == "count":
        return None if _is_int(value) and value >= 0 else "an integer >= 0"
    if kind == "positive":
        return None if _is_int(value) and value >= 1 else "an integer >= 1"
    if kind == "fraction":
        return None if _is_number(value) and 0 <= value < 1 else "a number in [0, 1)"
    if kind == "nonneg":
        return None if _is_number(value) and value >= 0 else "a number >= 0"
    if kind == "flag":
        return None if value in (True, None) else "t or nil"
    if kind == "path":
        return None if isinstance(value, str) and value else 'a path string, e.g. "data/x.npz"'
    if kind == "paths":
        ok = (isinstance(value, str) and value) or (
            isinstance(value, dict) and value
            and all(isinstance(v, str) and v for v in value.values()))
        return None if ok else 'a path string, or a plist like (:x "x.npy" :y "y.npy")'
    if kind == "name":
        return None if isinstance(value, str) and value else "a field name, e.g. :x"
    if kind == "pair":
        ok = (isinstance(value, list) and len(value) == 2 and all(_is_int(v) for v in value)
              and 0 <= value[0] <= value[1])
        return None if ok else "two integers LOW HIGH with 0 <= LOW <= HIGH, e.g. '(36 60)"
    if kind == "shapes":  # its entries are checked where they are read (contract/fields.py)
        ok = isinstance(value, (dict, list)) and value
        return None if ok else "a plist of each array's sample shape and dtype, e.g. " \
            "(:x ((40) :f32) :y (() :i64))"
    raise ValueError(f"unknown option kind {kind!r}")
