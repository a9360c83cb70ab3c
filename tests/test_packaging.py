"""The repository installs as one namespace: `kernels/` and `autodiff/` become
`sexpgpu.kernels` and `sexpgpu.autodiff`, never top-level packages."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _package_dirs() -> dict[str, Path]:
    """Every folder with an __init__.py, by the name it installs under."""
    found = {}
    for top, name in (("sexpgpu", "sexpgpu"), ("kernels", "sexpgpu.kernels"),
                      ("autodiff", "sexpgpu.autodiff")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found[".".join((name, *rel))] = init.parent
    return found


def test_every_package_folder_is_installed() -> None:
    assert sorted(SETUPTOOLS["packages"]) == sorted(_package_dirs())


def test_kernels_and_autodiff_install_inside_sexpgpu() -> None:
    assert SETUPTOOLS["package-dir"] == {"sexpgpu.kernels": "kernels",
                                         "sexpgpu.autodiff": "autodiff"}
    for name in ("sexpgpu.kernels", "sexpgpu.autodiff"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and Path(spec.origin).parent == ROOT / name.split(".")[1]


def test_no_top_level_kernels_or_autodiff_from_this_project() -> None:
    for name in ("kernels", "autodiff"):
        spec = importlib.util.find_spec(name)  # another project's package may own the name
        assert spec is None or not Path(spec.origin).is_relative_to(ROOT)
