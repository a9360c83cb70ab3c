"""MNIST-1D generated on the machine by the published procedure (Greydanus & Kobak).

A numpy rewrite of greydanus/mnist1d (mnist1d/data.py, transform.py): the ten
digit templates, the default arguments and the transform order, drawing from a
legacy `RandomState(seed)` in the same order as the reference's global
`np.random.seed(seed)`, so the same seed gives the same numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class Mnist1dArgs:
    """The reference's `get_dataset_args()` defaults."""

    num_samples: int = 5000
    train_split: float = 0.8
    template_len: int = 12
    padding: tuple[int, int] = field(default=(36, 60))
    scale_coeff: float = 0.4
    max_translation: int = 48
    corr_noise_scale: float = 0.25
    iid_noise_scale: float = 2e-2
    shear_scale: float = 0.75
    shuffle_seq: bool = False
    final_seq_length: int = 40
    seed: int = 42

    def to_json(self) -> dict:
        return asdict(self)


# The ten digit strokes, one row per digit 0..9, as published.
_STROKES = [
    [5, 6, 6.5, 6.75, 7, 7, 7, 7, 6.75, 6.5, 6, 5],
    [5, 3, 3, 3.4, 3.8, 4.2, 4.6, 5, 5.4, 5.8, 5, 5],
    [5, 6, 6.5, 6.5, 6, 5.25, 4.75, 4, 3.5, 3.5, 4, 5],
    [5, 6, 6.5, 6.5, 6, 5, 5, 6, 6.5, 6.5, 6, 5],
    [5, 4.4, 3.8, 3.2, 2.6, 2.6, 5, 5, 5, 5, 5, 5],
    [5, 3, 3, 3, 3, 5, 6, 6.5, 6.5, 6, 4.5, 5],
    [5, 4, 3.5, 3.25, 3, 3, 3, 3, 3.25, 3.5, 4, 5],
    [5, 7, 7, 6.6, 6.2, 5.8, 5.4, 5, 4.6, 4.2, 5, 5],
    [5, 4, 3.5, 3.5, 4, 5, 5, 4, 3.5, 3.5, 4, 5],
    [5, 4, 3.5, 3.5, 4, 5, 5, 5, 5, 4.7, 4.3, 5],
]

DIGITS = len(_STROKES)
# samples transformed together: the arrays of a block, not of the whole set, in memory
BLOCK = 4096


def templates() -> dict[str, np.ndarray]:
    """The whitened digit templates: x (10, 12), t (12,), y (10,)."""
    x = np.asarray(_STROKES, dtype=np.float64)
    x -= x.mean(1, keepdims=True)
    x /= x.std(1, keepdims=True)
    x -= x[:, :1]  # every signal starts and ends at 0
    t = np.linspace(-5, 5, x.shape[1]) / 6.0
    return {"x": x / 6.0, "t": t, "y": np.arange(10)}


def _interpolate(x: np.ndarray, n: int) -> np.ndarray:
    """Linear resampling of the last axis to n points, computed as the reference's
    scipy interp1d did (the frozen published file's bits; scipy's interp1d of today
    differs in last bits)."""
    scale = np.linspace(0, 1, x.shape[-1])
    new_scale = np.linspace(0, 1, n)
    hi = np.clip(np.searchsorted(scale, new_scale), 1, len(scale) - 1)
    lo = hi - 1
    slope = (x[..., hi] - x[..., lo]) / (scale[hi] - scale[lo])
    return slope * (new_scale - scale[lo]) + x[..., lo]


class _Draws(NamedTuple):
    """Each sample's random numbers, drawn in the reference's order (rows: samples)."""

    padding: np.ndarray      # int: zeros appended to the template
    scale: np.ndarray        # uniform draws of the amplitude
    shift: np.ndarray        # int: the translation
    corr: np.ndarray         # (n, length) normal draws of the correlated noise
    iid: np.ndarray          # (n, length) normal draws of the white noise
    shear: np.ndarray        # uniform draws of the shear


def _draw(n: int, length: int, args: Mnist1dArgs, rng: np.random.RandomState) -> _Draws:
    """n samples' draws from `rng`, one sample after the other as the reference's
    transform makes them (legacy normal and bounded-integer draws take a varying
    number of words from the stream, so no draw can be batched across samples)."""
    low, high = args.padding
    padding, scale, shift, shear = (np.empty(n, t) for t in (np.int64, float, np.int64, float))
    corr, iid = np.empty((n, length)), np.empty((n, length))
    for i in range(n):
        padding[i] = low + int(rng.rand() * (high - low + 1))
        scale[i] = rng.rand()
        shift[i] = rng.choice(args.max_translation)
        corr[i] = rng.randn(length)
        iid[i] = rng.randn(length)
        shear[i] = rng.rand()
    return _Draws(padding, scale, shift, corr, iid, shear)


def _transform(x: np.ndarray, args: Mnist1dArgs, d: _Draws) -> np.ndarray:
    """The templates x (one row a sample) padded, dilated, scaled, translated, noised,
    sheared and subsampled in the reference's order, a block of samples at once: each
    operation is the reference's per-sample one applied to rows, so the bits are
    the same (per sample, 1.7 s for the default 5000; this way 0.1 s)."""
    # the reference's smoother (same kernel and edges, along each row); scipy.ndimage
    # takes ~0.3 s to import, paid only when the data set is generated, not when it
    # is read from the cache
    from scipy.ndimage import gaussian_filter1d

    length = d.corr.shape[1]
    new_x = np.empty((len(x), length))
    for p in np.unique(d.padding):  # a source length of its own: interpolated together
        rows = d.padding == p
        padded = np.concatenate([x[rows] + 1e-8, np.zeros((rows.sum(), p))], axis=1)
        new_x[rows] = _interpolate(padded, length)  # eps keeps the stroke nonzero for the mask
    new_x *= (1 + args.scale_coeff * (d.scale - 0.5))[:, None]
    # the reference's concatenate([x[-k:], x[:-k]]): a rotation by k, none from k = length
    shift = np.where(d.shift < length, d.shift, 0)
    new_x = new_x[np.arange(len(x))[:, None], (np.arange(length) - shift[:, None]) % length]

    mask = new_x != 0
    corr = gaussian_filter1d(args.corr_noise_scale * d.corr, 2, axis=1)
    new_x = mask * new_x + (1 - mask) * corr
    new_x = new_x + args.iid_noise_scale * d.iid

    coeff = args.shear_scale * (d.shear - 0.5)
    new_x = new_x - coeff[:, None] * np.linspace(-0.5, 0.5, length)
    return _interpolate(new_x, args.final_seq_length)


def generate(args: Mnist1dArgs | None = None) -> dict[str, np.ndarray]:
    """The dataset as the reference's make_dataset returns it, in float64.

    Keys: x (n_train, L), y (n_train,), x_test, y_test, t (L,). With the defaults,
    4000 train and 1000 test samples of length 40.
    """
    args = args or Mnist1dArgs()
    rng = np.random.RandomState(args.seed)
    tpl = templates()
    per_class = args.num_samples // len(tpl["y"])
    labels = np.repeat(tpl["y"], per_class)   # the reference's order: class by class
    length = args.template_len + args.padding[1]
    xs = np.concatenate([
        _transform(tpl["x"][block], args, _draw(len(block), length, args, rng))
        for block in np.split(labels, range(BLOCK, len(labels), BLOCK))])
    new_t = _interpolate(_interpolate(tpl["t"], length), args.final_seq_length)
    order = rng.permutation(len(labels))
    xs_all = xs[order]  # (N, L)
    ys_all = labels[order]  # (N,)
    if args.shuffle_seq:
        xs_all = xs_all[..., rng.permutation(args.final_seq_length)]
    new_t = new_t / xs_all.std()
    xs_all = (xs_all - xs_all.mean()) / xs_all.std()  # center the whole set, unit std
    split = int(len(ys_all) * args.train_split)
    return {
        "x": xs_all[:split], "y": ys_all[:split],
        "x_test": xs_all[split:], "y_test": ys_all[split:],
        "t": new_t,
    }
