"""Compare the on-machine MNIST-1D generator with the frozen published dataset.

Usage: python bench/mnist1d_generator.py [PATH_TO_mnist1d.npz] [--json]

The frozen file (default /work/shared/data/mnist1d.npz, converted from the
reference's mnist1d_data.pkl) is not part of the repository, so this lives in
bench/, not in the tests. It reports whether the arrays are identical after the
reference's float32 cast, the largest difference, class balance, per-class mean
curves and per-point statistics, and how long generation takes.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import orjson

from sexpgpu.data import mnist1d

DEFAULT = "/work/shared/data/mnist1d.npz"


def compare(path: str) -> dict:
    t0 = time.perf_counter()
    ours = mnist1d.generate()
    seconds = time.perf_counter() - t0
    with np.load(path, allow_pickle=False) as archive:
        ref = {k: archive[k] for k in archive.files}
    report: dict = {"generate_s": round(seconds, 3), "arrays": {}}
    for key in ("x", "y", "x_test", "y_test", "t"):
        a = ours[key].astype(ref[key].dtype)  # the reference's training code casts to float32
        report["arrays"][key] = {
            "shape": list(a.shape), "ref_shape": list(ref[key].shape),
            "identical_after_cast": bool(a.shape == ref[key].shape and np.array_equal(a, ref[key])),
            "max_abs_diff_float64": float(np.max(np.abs(ours[key] - ref[key].astype(np.float64)))),
        }
    x_all = np.concatenate([ours["x"], ours["x_test"]])  # (5000, 40)
    y_all = np.concatenate([ours["y"], ours["y_test"]])  # (5000,)
    rx_all = np.concatenate([ref["x"], ref["x_test"]]).astype(np.float64)
    ry_all = np.concatenate([ref["y"], ref["y_test"]])
    report["class_counts"] = {"ours": np.bincount(y_all).tolist(),
                              "ref": np.bincount(ry_all).tolist()}
    report["train_class_counts"] = {"ours": np.bincount(ours["y"]).tolist(),
                                    "ref": np.bincount(ref["y"]).tolist()}
    mean_gap = [float(np.max(np.abs(x_all[y_all == c].mean(0) - rx_all[ry_all == c].mean(0))))
                for c in range(10)]
    report["per_class_mean_curve_max_abs_diff"] = mean_gap
    report["per_point"] = {
        "mean_max_abs_diff": float(np.max(np.abs(x_all.mean(0) - rx_all.mean(0)))),
        "std_max_abs_diff": float(np.max(np.abs(x_all.std(0) - rx_all.std(0)))),
        "overall_mean": [float(x_all.mean()), float(rx_all.mean())],
        "overall_std": [float(x_all.std()), float(rx_all.std())],
    }
    report["identical"] = all(v["identical_after_cast"] for v in report["arrays"].values())
    return report


def main(argv: list[str]) -> int:
    path = next((a for a in argv if not a.startswith("--")), DEFAULT)
    report = compare(path)
    if "--json" in argv:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(f"generated in {report['generate_s']} s; identical to {path}: "
              f"{report['identical']}")
        for key, row in report["arrays"].items():
            print(f"  {key:<7} {tuple(row['shape'])!s:<11} identical "
                  f"{row['identical_after_cast']!s:<5}  max |diff| (f64 vs f32) "
                  f"{row['max_abs_diff_float64']:.3g}")
        print(f"  class counts (all 5000): {report['class_counts']['ours']}")
        print(f"  train class counts ours {report['train_class_counts']['ours']}")
        print(f"  train class counts ref  {report['train_class_counts']['ref']}")
        gaps = report["per_class_mean_curve_max_abs_diff"]
        print(f"  per-class mean curves, max |diff|: {max(gaps):.3g}")
        pp = report["per_point"]
        print(f"  per-point mean/std max |diff|: {pp['mean_max_abs_diff']:.3g} / "
              f"{pp['std_max_abs_diff']:.3g}")
    return 0 if report["identical"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
