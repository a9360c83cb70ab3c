"""Text sources: a character or byte vocabulary, tokenized once by `prepare` and cached.

The cache lives under `<cache_dir>/data/text-<vocab>-<sha256 of the text>/` (tokens.npy,
vocab.json), so editing the file re-tokenizes and an unchanged file never does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sexpgpu import env
from sexpgpu.atomic import dumps, fsync_dir, read_json, write_file_synced
from sexpgpu.data.dataset import TokenData
from sexpgpu.data.errors import data_error
from sexpgpu.data.files import resolve

VOCABS = ("char", "byte")


@dataclass
class PreparedText:
    tokens: np.ndarray  # (N,) uint16 for char, uint8 for byte; memory mapped
    vocab: list[str] | None  # the characters by id (char vocabulary); None for bytes
    vocab_size: int
    cache: Path

    def decode(self, ids: np.ndarray) -> str:
        if self.vocab is None:
            return bytes(int(i) for i in ids).decode("utf-8", errors="replace")
        return "".join(self.vocab[int(i)] for i in ids)


def _tokenize(raw: bytes, vocab: str, path: Path) -> tuple[np.ndarray, list[str] | None]:
    if vocab == "byte":
        return np.frombuffer(raw, dtype=np.uint8).copy(), None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise data_error(
            path, f"not UTF-8 text (byte {exc.start})", fix="use :vocab :byte for binary files",
        ) from None
    chars = sorted(set(text))  # nanoGPT's shakespeare_char vocabulary
    if len(chars) > np.iinfo(np.uint16).max:
        raise data_error(path, f"{len(chars)} distinct characters do not fit 16-bit ids")
    lookup = {c: i for i, c in enumerate(chars)}
    return np.fromiter((lookup[c] for c in text), dtype=np.uint16, count=len(text)), chars


def prepare(path: Path, vocab: str = "char") -> PreparedText:
    """Tokenize `path` once; later calls read the cached ids by memory map."""
    if vocab not in VOCABS:
        raise data_error(path, f"unknown vocabulary {vocab!r}", expected="char or byte")
    if not path.is_file():
        raise data_error(path, "no such file", fix="check the path (relative to the run file)")
    raw = path.read_bytes()
    if not raw:
        raise data_error(path, "the text file is empty")
    digest = hashlib.sha256(raw).hexdigest()[:24]
    cache = env.cache_dir() / "data" / f"text-{vocab}-{digest}"
    if not (cache / "vocab.json").exists():
        tokens, chars = _tokenize(raw, vocab, path)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        with open(tmp / "tokens.npy", "wb") as fh:
            np.save(fh, tokens)
            fh.flush()
            os.fsync(fh.fileno())
        size = 256 if chars is None else len(chars)
        # vocab.json is written last: its presence marks a complete cache entry
        write_file_synced(tmp / "vocab.json", dumps({"vocab": chars, "vocab_size": size}))
        try:
            os.rename(tmp, cache)
        except OSError:  # another process prepared it first; theirs is identical
            shutil.rmtree(tmp, ignore_errors=True)
        fsync_dir(cache.parent)
    meta = read_json(cache / "vocab.json")
    tokens = np.load(cache / "tokens.npy", mmap_mode="r")
    return PreparedText(tokens, meta["vocab"], meta["vocab_size"], cache)


def text_source(options: dict[str, Any], base_dir: Path) -> TokenData:
    """`(text :path P :vocab :char :split :train :val-fraction 0.1 :context T)`."""
    path = resolve(options.get("path"), base_dir)
    prepared = prepare(path, str(options.get("vocab", "char")))
    fraction = float(options.get("val_fraction", 0.1))
    if not 0.0 <= fraction < 1.0:
        raise data_error(path, f"val_fraction must be in [0, 1), got {fraction}")
    cut = int(len(prepared.tokens) * (1.0 - fraction))  # nanoGPT: first 90% train
    split = str(options.get("split", "train"))
    if split not in ("train", "val"):
        raise data_error(path, f"unknown split {split!r}", expected="train or val")
    declared = options.get("vocab_size")
    if declared is not None and prepared.vocab_size > int(declared):
        raise data_error(
            path, f"the text has {prepared.vocab_size} distinct tokens, more than :vocab-size "
            f"{int(declared)}", expected=f"at most {int(declared)} (:vocab-size)",
            actual=f"{prepared.vocab_size}", fix="raise :vocab-size (and the model's size) "
            "to the text's vocabulary")
    tokens = prepared.tokens[:cut] if split == "train" else prepared.tokens[cut:]
    meta = {"vocab": prepared.vocab, "cache": str(prepared.cache)}
    return TokenData(
        tokens, int(options.get("context", 0)), prepared.vocab_size, origin=str(path), meta=meta
    )
