"""File, text and synthetic sources, and the E-DATA diagnostics they raise."""

import numpy as np
import pytest

from sexpgpu.data.sources import open_source
from sexpgpu.data.text import prepare
from sexpgpu.diagnostics import SexpError


def _data_error(call) -> str:
    with pytest.raises(SexpError) as info:
        call()
    assert info.value.diagnostic.code == "E-DATA"
    return info.value.diagnostic.message


def test_npz_relative_to_run_file_dir(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.arange(12.0).reshape(6, 2), y=np.arange(6))
    data = open_source("npz", {"path": "d.npz"}, tmp_path)
    assert len(data) == 6 and set(data.arrays) == {"x", "y"}
    absolute = open_source("npz", {"path": str(tmp_path / "d.npz")}, "/")
    np.testing.assert_array_equal(absolute.arrays["y"], np.arange(6))


def test_missing_file_names_the_path(tmp_path):
    message = _data_error(lambda: open_source("npz", {"path": "nope.npz"}, tmp_path))
    assert str(tmp_path / "nope.npz") in message and "no such file" in message


def test_malformed_npz_and_npy(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"not a zip at all")
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    assert "npz" in _data_error(lambda: open_source("npz", {"path": "bad.npz"}, tmp_path))
    assert "npy" in _data_error(lambda: open_source("npy", {"path": "bad.npy"}, tmp_path))


def test_arrays_of_different_lengths(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.zeros((5, 2)), y=np.zeros(4))
    message = _data_error(lambda: open_source("npz", {"path": "d.npz"}, tmp_path))
    assert "first dimension" in message


@pytest.mark.parametrize("arrays, what", [
    ({"x": np.zeros((0, 2)), "y": np.zeros(0)}, "no rows"),
    ({"x": np.zeros((4, 2)), "y": np.array(["a", "b", "c", "d"])}, "not numbers"),
], ids=["empty", "strings"])
def test_arrays_without_rows_or_of_strings(tmp_path, arrays, what):
    np.savez(tmp_path / "d.npz", **arrays)
    assert what in _data_error(lambda: open_source("npz", {"path": "d.npz"}, tmp_path))


def test_npy_fields(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((3, 2)))
    np.save(tmp_path / "y.npy", np.arange(3))
    one = open_source("npy", {"path": "x.npy", "field": "inputs"}, tmp_path)
    two = open_source("npy", {"path": {"x": "x.npy", "y": "y.npy"}}, tmp_path)
    assert set(one.arrays) == {"inputs"} and set(two.arrays) == {"x", "y"}


def test_token_file_is_memory_mapped(tmp_path):
    np.arange(100, dtype=np.uint16).tofile(tmp_path / "train.bin")
    data = open_source("tokens", {"path": "train.bin", "context": 8}, tmp_path)
    assert isinstance(data.tokens, np.memmap) and len(data.tokens) == 100
    window = data.windows(np.array([5]))
    np.testing.assert_array_equal(window["x"][0], np.arange(5, 13))
    np.testing.assert_array_equal(window["y"][0], np.arange(6, 14))  # shifted by one


def test_token_file_size_must_match_dtype(tmp_path):
    (tmp_path / "odd.bin").write_bytes(b"\x00" * 7)
    message = _data_error(lambda: open_source("tokens", {"path": "odd.bin", "context": 2},
                                              tmp_path))
    assert "whole number of tokens" in message


def test_too_few_tokens_for_a_window(tmp_path):
    np.arange(4, dtype=np.uint16).tofile(tmp_path / "tiny.bin")
    _data_error(lambda: open_source("tokens", {"path": "tiny.bin", "context": 8}, tmp_path))


def test_text_char_vocab_is_prepared_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "t.txt").write_text("hello world, hello text\n" * 20)
    first = prepare(tmp_path / "t.txt", "char")
    assert first.vocab == sorted(set("hello world, hello text\n"))
    assert first.decode(first.tokens[:11]) == "hello world"
    stamp = (first.cache / "tokens.npy").stat().st_mtime_ns
    second = prepare(tmp_path / "t.txt", "char")
    assert second.cache == first.cache and (second.cache / "tokens.npy").stat().st_mtime_ns == stamp
    (tmp_path / "t.txt").write_text("changed\n" * 20)
    assert prepare(tmp_path / "t.txt", "char").cache != first.cache  # keyed by content


def test_text_split_and_byte_vocab(tmp_path, monkeypatch):
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "t.txt").write_bytes(bytes(range(256)) * 4)
    opts = {"path": "t.txt", "vocab": "byte", "context": 4, "val_fraction": 0.25}
    train = open_source("text", {**opts, "split": "train"}, tmp_path)
    val = open_source("text", {**opts, "split": "val"}, tmp_path)
    assert train.vocab_size == 256 and len(train.tokens) == 768 and len(val.tokens) == 256
    _data_error(lambda: open_source("text", {**opts, "vocab": "char"}, tmp_path))  # not UTF-8


def test_synthetic_tasks():
    parity = open_source("synthetic", {"task": "parity", "n": 50, "dim": 5}, ".")
    np.testing.assert_array_equal(parity.arrays["y"], parity.arrays["x"].sum(axis=1) % 2)
    reg = open_source("synthetic", {"task": "linear-regression", "n": 40, "dim": 3}, ".")
    assert reg.arrays["x"].shape == (40, 3) and reg.arrays["y"].shape == (40,)
    a = open_source("synthetic", {"task": "classes", "n": 30, "seed": 1}, ".")
    b = open_source("synthetic", {"task": "classes", "n": 30, "seed": 1}, ".")
    test = open_source("synthetic", {"task": "classes", "n": 30, "seed": 1, "split": "test"}, ".")
    np.testing.assert_array_equal(a.arrays["x"], b.arrays["x"])
    assert not np.array_equal(a.arrays["x"], test.arrays["x"])


def test_unknown_source_and_task():
    assert "unknown data source" in _data_error(lambda: open_source("csv", {}, "."))
    assert "unknown synthetic task" in _data_error(
        lambda: open_source("synthetic", {"task": "xor"}, "."))
