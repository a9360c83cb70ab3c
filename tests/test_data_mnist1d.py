"""MNIST-1D generation: shapes, splits, determinism by seed (no reference file needed)."""

import numpy as np
import pytest

from sexpgpu.data import mnist1d
from sexpgpu.data.sources import open_source
from sexpgpu.diagnostics import SexpError

SMALL = mnist1d.Mnist1dArgs(num_samples=200)


def test_templates_start_and_end_at_zero():
    tpl = mnist1d.templates()
    assert tpl["x"].shape == (10, 12) and tpl["t"].shape == (12,)
    np.testing.assert_array_equal(tpl["x"][:, 0], np.zeros(10))
    assert np.allclose(tpl["x"][:, -1], 0.0)  # every digit stroke ends where it began


def test_default_split_shapes_and_labels(tmp_path, monkeypatch):
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    train = open_source("mnist1d", {"split": "train"}, tmp_path)
    test = open_source("mnist1d", {"split": "test"}, tmp_path)
    assert train.arrays["x"].shape == (4000, 40) and train.arrays["x"].dtype == np.float32
    assert test.arrays["x"].shape == (1000, 40) and test.arrays["y"].shape == (1000,)
    labels = np.concatenate([train.arrays["y"], test.arrays["y"]])
    np.testing.assert_array_equal(np.bincount(labels), np.full(10, 500))  # 500 per class
    # the whole set is centred and scaled to unit std before the split
    both = np.concatenate([train.arrays["x"], test.arrays["x"]]).astype(np.float64)
    assert abs(both.mean()) < 1e-6 and abs(both.std() - 1.0) < 1e-5
    assert list((tmp_path / "data").glob("mnist1d-*.npz")), "generated data is cached"


def test_same_seed_same_data_other_seed_other_data():
    a = mnist1d.generate(SMALL)
    b = mnist1d.generate(SMALL)
    c = mnist1d.generate(mnist1d.Mnist1dArgs(num_samples=200, seed=7))
    for key in ("x", "y", "x_test", "y_test", "t"):
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a["x"], c["x"])


def test_train_split_fraction():
    data = mnist1d.generate(mnist1d.Mnist1dArgs(num_samples=200, train_split=0.75))
    assert data["x"].shape == (150, 40) and data["x_test"].shape == (50, 40)
    assert data["t"].shape == (40,)


def test_unknown_option_is_a_data_error(tmp_path):
    with pytest.raises(SexpError) as info:
        open_source("mnist1d", {"split": "train", "colour": 3}, tmp_path)
    assert info.value.diagnostic.code == "E-DATA" and "colour" in info.value.diagnostic.message


def test_unknown_split_is_a_data_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    with pytest.raises(SexpError) as info:
        open_source("mnist1d", {"split": "valid", "num_samples": 200}, tmp_path)
    assert info.value.diagnostic.code == "E-DATA"
