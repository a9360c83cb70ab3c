"""MNIST-1D generation: shapes, splits, determinism by seed, and the same bits as the
reference's procedure transcribed sample by sample (no reference file needed)."""

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


@pytest.mark.parametrize("count", [0, 9, 2.5])
def test_fewer_samples_than_digits_is_a_data_error(tmp_path, monkeypatch, count):
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    with pytest.raises(SexpError) as info:
        open_source("mnist1d", {"split": "train", "num_samples": count}, tmp_path)
    diagnostic = info.value.diagnostic
    assert diagnostic.code == "E-DATA" and "at least 10" in diagnostic.expected


def test_unknown_split_is_a_data_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    with pytest.raises(SexpError) as info:
        open_source("mnist1d", {"split": "valid", "num_samples": 200}, tmp_path)
    assert info.value.diagnostic.code == "E-DATA"


def _reference(args: mnist1d.Mnist1dArgs) -> dict[str, np.ndarray]:
    """greydanus/mnist1d's make_dataset and transform, one sample at a time, as published
    (scipy's gaussian_filter; numpy's global RandomState drawn in order). The resampling
    is the module's interp1d formula: the installed scipy's interp1d differs in last
    bits (bench/mnist1d_generator.py holds the formula to the frozen published file)."""
    from scipy.ndimage import gaussian_filter

    interpolate = mnist1d._interpolate
    rng = np.random.RandomState(args.seed)
    tpl = mnist1d.templates()
    xs, ys, new_t = [], [], tpl["t"]
    low, high = args.padding
    for label in range(10):
        for _ in range(args.num_samples // 10):
            p = low + int(rng.rand() * (high - low + 1))
            x = interpolate(np.concatenate([tpl["x"][label] + 1e-8, np.zeros(p)]),
                            args.template_len + high)
            t = interpolate(tpl["t"], args.template_len + high)
            x *= 1 + args.scale_coeff * (rng.rand() - 0.5)
            k = rng.choice(args.max_translation)
            x = np.concatenate([x[-k:], x[:-k]])
            mask = x != 0
            corr = gaussian_filter(args.corr_noise_scale * rng.randn(*x.shape), 2)
            x = mask * x + (1 - mask) * corr
            x = x + args.iid_noise_scale * rng.randn(*x.shape)
            x = x - args.shear_scale * (rng.rand() - 0.5) * np.linspace(-0.5, 0.5, len(x))
            xs.append(interpolate(x, args.final_seq_length))
            new_t = interpolate(t, args.final_seq_length)
            ys.append(label)
    order = rng.permutation(len(ys))
    x_all, y_all = np.stack(xs)[order], np.array(ys)[order]
    if args.shuffle_seq:
        x_all = x_all[..., rng.permutation(args.final_seq_length)]
    new_t = new_t / x_all.std()
    x_all = (x_all - x_all.mean()) / x_all.std()
    split = int(len(y_all) * args.train_split)
    return {"x": x_all[:split], "y": y_all[:split], "x_test": x_all[split:],
            "y_test": y_all[split:], "t": new_t}


@pytest.mark.parametrize("args", [
    SMALL,
    mnist1d.Mnist1dArgs(num_samples=300, padding=(10, 20), shuffle_seq=True, seed=3),  # k > length
    mnist1d.Mnist1dArgs(num_samples=120, padding=(0, 0), max_translation=1, seed=0),
    mnist1d.Mnist1dArgs(num_samples=150, final_seq_length=64, scale_coeff=0.9, seed=9),
], ids=["default", "short-shifted-shuffled", "no-padding", "long"])
def test_every_sample_at_once_is_the_reference_bit_for_bit(args) -> None:
    ours, ref = mnist1d.generate(args), _reference(args)
    for key in ("x", "y", "x_test", "y_test", "t"):
        np.testing.assert_array_equal(ours[key], ref[key])


def test_blocks_of_samples_change_no_bit(monkeypatch) -> None:
    # the draws run on from one block to the next: any block size, the same data
    whole = mnist1d.generate(SMALL)
    monkeypatch.setattr(mnist1d, "BLOCK", 7)   # 200 samples: 28 blocks and a partial one
    for key, value in mnist1d.generate(SMALL).items():
        np.testing.assert_array_equal(value, whole[key])
