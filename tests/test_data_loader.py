"""Loaders: orders, stages, counters, fields, eval passes and exact position restore."""

import numpy as np
import pytest

from sexpgpu.data.loader import Loader, split_microbatches
from sexpgpu.data.spec import LoaderSpec, StageSpec
from sexpgpu.diagnostics import SexpError


@pytest.fixture
def arrays(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.arange(40.0).reshape(20, 2), y=np.arange(20))
    return tmp_path


@pytest.fixture
def tokens(tmp_path):
    np.arange(1000, dtype=np.uint16).tofile(tmp_path / "t.bin")
    return tmp_path


def _loader(base, order="sequential", batch=5, name="train", seed=0, **kw) -> Loader:
    spec = LoaderSpec(name, "npz", {"path": "d.npz"}, batch=batch, order=order, **kw)
    return Loader(spec, base, seed)


def _ys(loader: Loader, count: int) -> list[list[int]]:
    return [loader.next_batch(step)["y"].tolist() for step in range(count)]


def test_sequential_in_order_and_wrapping(arrays):
    loader = _loader(arrays, batch=8)
    assert _ys(loader, 3) == [list(range(8)), list(range(8, 16)), [16, 17, 18, 19, 0, 1, 2, 3]]
    assert loader.counters(3) == {"samples": 24, "tokens": 0, "epoch": 1, "stage": 0}


def test_shuffle_is_a_permutation_per_epoch(arrays):
    loader = _loader(arrays, order="shuffle", batch=5)
    epochs = [sum(_ys(loader, 4), []) for _ in range(2)]
    assert sorted(epochs[0]) == list(range(20)) and sorted(epochs[1]) == list(range(20))
    assert epochs[0] != epochs[1] and epochs[0] != list(range(20))


def test_order_depends_on_seed_and_name_only(arrays):
    def first(**kw):
        return _ys(_loader(arrays, order="shuffle", **kw), 2)
    assert first(seed=1) == first(seed=1)
    assert first(seed=1) != first(seed=2)
    assert first(seed=1, name="a") != first(seed=1, name="b")


def test_position_restores_exactly(arrays, tokens):
    for order in ("sequential", "shuffle", "random-windows"):
        a = _loader(arrays, order=order, batch=7)
        _ys(a, 5)
        b = _loader(arrays, order=order, batch=7)
        b.restore(a.position())
        assert _ys(a, 6) == _ys(b, 6), order
    spec = LoaderSpec("lm", "tokens", {"path": "t.bin", "context": 16}, batch=4,
                      order="random-windows")
    a, b = Loader(spec, tokens, 3), Loader(spec, tokens, 3)
    [a.next_batch(s) for s in range(3)]
    b.restore(a.position())
    np.testing.assert_array_equal(a.next_batch(3)["x"], b.next_batch(3)["x"])


def test_random_windows_on_tokens(tokens):
    spec = LoaderSpec("lm", "tokens", {"path": "t.bin", "context": 16}, batch=4,
                      order="random-windows")
    loader = Loader(spec, tokens, 0)
    batch = loader.next_batch(0)
    assert batch["x"].shape == (4, 16) and batch["x"].dtype == np.int64
    np.testing.assert_array_equal(batch["y"], batch["x"] + 1)  # tokens are 0..999 in order
    assert batch["x"].max() < 1000 - 1
    assert loader.counters(1)["tokens"] == 64 and loader.counters(1)["samples"] == 4


def test_sequential_token_windows_do_not_overlap(tokens):
    spec = LoaderSpec("lm", "tokens", {"path": "t.bin", "context": 10}, batch=2)
    loader = Loader(spec, tokens, 0)
    np.testing.assert_array_equal(loader.next_batch(0)["x"][:, 0], [0, 10])
    np.testing.assert_array_equal(loader.next_batch(1)["x"][:, 0], [20, 30])


def test_stages_switch_by_step(arrays, tokens):
    spec = LoaderSpec("lm", "tokens", {"path": "t.bin", "context": 4}, batch=2,
                      stages=[StageSpec(3, "long", options={"context": 8}, batch=1)])
    loader = Loader(spec, tokens, 0)
    assert loader.next_batch(2)["x"].shape == (2, 4)
    assert loader.next_batch(3)["x"].shape == (1, 8)
    assert loader.counters(3)["stage"] == 1 and loader.counters(2)["stage"] == 0
    assert loader.counters(3)["samples"] == 3 and loader.counters(3)["tokens"] == 16


def test_fields_rename_and_missing_field(arrays):
    loader = _loader(arrays, fields={"inputs": "x", "labels": "y"})
    assert set(loader.next_batch(0)) == {"inputs", "labels"}
    with pytest.raises(SexpError) as info:  # found when the loader opens its source
        _loader(arrays, fields={"inputs": "z"})
    assert info.value.diagnostic.code == "E-DATA" and "'z'" in info.value.diagnostic.message


def test_unknown_order(arrays):
    with pytest.raises(SexpError) as info:
        _loader(arrays, order="backwards")
    assert info.value.diagnostic.code == "E-DATA"


def test_eval_pass_leaves_the_position_alone(arrays):
    loader = _loader(arrays, batch=8)
    loader.next_batch(0)
    sizes = [len(b["y"]) for b in loader.eval_batches(1, None)]
    assert sizes == [8, 8, 4]  # one full pass, the last batch short
    assert [len(b["y"]) for b in loader.eval_batches(1, 2)] == [8, 8]
    assert loader.next_batch(1)["y"].tolist() == list(range(8, 16))


def test_split_microbatches():
    batch = {"x": np.arange(100).reshape(100, 1), "y": np.arange(100)}
    parts = split_microbatches(batch, 4)
    assert [len(p["y"]) for p in parts] == [25, 25, 25, 25]
    np.testing.assert_array_equal(np.concatenate([p["y"] for p in parts]), batch["y"])
    assert [len(p["y"]) for p in split_microbatches(batch, 3)] == [34, 33, 33]
