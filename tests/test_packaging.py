"""The repository installs as one namespace: `kernels/` and `autodiff/` become
`sexpgpu.kernels` and `sexpgpu.autodiff`, never top-level packages; the manual (docs/)
installs as `sexpgpu/docs`, where `sexpgpu docs` finds it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
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


# folders of data only (no __init__.py), installed beside the code: the manual's and
# the standard modules' (sexpgpu/nn, sexpgpu/optim)
DATA_PACKAGES = ["sexpgpu.docs", "sexpgpu.docs.errors", "sexpgpu.docs.schema", "sexpgpu.stdlib"]


def test_every_package_folder_is_installed() -> None:
    assert sorted(SETUPTOOLS["packages"]) == sorted([*_package_dirs(), *DATA_PACKAGES])


def test_kernels_and_autodiff_install_inside_sexpgpu() -> None:
    assert SETUPTOOLS["package-dir"] == {"sexpgpu.kernels": "kernels",
                                         "sexpgpu.autodiff": "autodiff",
                                         "sexpgpu.docs": "docs"}
    for name in ("sexpgpu.kernels", "sexpgpu.autodiff"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and Path(spec.origin).parent == ROOT / name.split(".")[1]


def test_no_top_level_kernels_or_autodiff_from_this_project() -> None:
    """What an installation provides, not what the working directory happens to:
    `python -m pytest` puts the checkout itself on sys.path."""
    elsewhere = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    for name in ("kernels", "autodiff"):
        specs = [importlib.machinery.PathFinder.find_spec(name, elsewhere)]
        specs += [finder.find_spec(name, None) for finder in sys.meta_path
                  if finder is not importlib.machinery.PathFinder
                  and hasattr(finder, "find_spec")]
        for spec in specs:  # another project's package may own the name
            assert spec is None or not Path(spec.origin).is_relative_to(ROOT)


def test_the_installed_package_carries_and_finds_its_manual(tmp_path) -> None:
    """`pip install .` (here: the wheel it installs) holds every page of docs/ and the
    index, and `sexpgpu.manual` run from the unpacked wheel reads them from there."""
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w",
         str(tmp_path / "wheel")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "wheel").glob("sexpgpu-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    installed = sorted(p.relative_to(site / "sexpgpu" / "docs").as_posix()
                       for p in (site / "sexpgpu" / "docs").rglob("*") if p.is_file())
    in_checkout = sorted(p.relative_to(ROOT / "docs").as_posix()
                         for p in (ROOT / "docs").rglob("*")
                         if p.is_file() and p.suffix in (".md", ".txt", ".json"))
    assert installed == in_checkout
    probe = ("import sexpgpu, sexpgpu.manual as m; print(sexpgpu.__file__); "
             "print(m.docs_dir()); print(len(m.pages())); print(m.read('agents')[:40])")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    package, found, count, start = out.stdout.splitlines()[:4]
    assert Path(package).is_relative_to(site)
    assert Path(found) == site / "sexpgpu" / "docs"
    assert int(count) > 40 and start.startswith("# Working as an agent")


def test_a_checkout_run_as_itself_finds_kernels_and_autodiff() -> None:
    """`python -m sexpgpu` in the repository after `pip install .` imports this
    checkout's sexpgpu/, not the installed one: its kernels and autodiff are the
    folders beside it (sexpgpu.autodiff was missing, E-INTERNAL). The probe drops an
    editable install's finder, which would find them whatever sexpgpu does."""
    probe = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
             "if 'editable' not in repr(f).lower()]; "
             "import sexpgpu.autodiff, sexpgpu.kernels, sexpgpu.autodiff.grad; "
             "print(sexpgpu.autodiff.__file__); print(sexpgpu.kernels.__file__); "
             "print(*sexpgpu.__path__)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # and the package's own path is its folder alone: a walk of its modules stays in it
    assert [Path(p) for p in out.stdout.split()] == [ROOT / "autodiff" / "__init__.py",
                                                      ROOT / "kernels" / "__init__.py",
                                                      ROOT / "sexpgpu"]
