"""docs/errors.md and the code registry agree, and every code has a test that triggers it."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import sexpgpu
from sexpgpu.diagnostics import CODES

ROOT = Path(__file__).resolve().parent.parent
HEADING = re.compile(r"^## ([EW]-[A-Z0-9-]+): ", re.MULTILINE)


def _import_everything() -> None:
    """Codes are declared beside the stage that raises them: import every stage."""
    # kernels/ and autodiff/ live beside sexpgpu/ in a checkout: walk each by name
    for package in ("sexpgpu", "sexpgpu.kernels", "sexpgpu.autodiff"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if info.name.endswith("__main__"):  # commands declare codes too (sweep, fmt, ...)
                continue
            importlib.import_module(info.name)


def _documented() -> list[str]:
    return HEADING.findall((ROOT / "docs" / "errors.md").read_text(encoding="utf-8"))


def test_every_declared_code_is_documented() -> None:
    _import_everything()
    documented = set(_documented())
    missing = sorted(set(CODES) - documented)
    assert not missing, f"codes declared but not in docs/errors.md: {missing}"


def test_every_documented_code_is_declared() -> None:
    _import_everything()
    unknown = sorted(set(_documented()) - set(CODES))
    assert not unknown, f"docs/errors.md lists codes nothing declares: {unknown}"


def test_every_documented_code_has_a_test() -> None:
    tests = ROOT / "tests"
    corpus = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in tests.rglob("*")
        if p.is_file() and p.suffix in (".py", ".sx", ".json", ".toml")
        and p.name != Path(__file__).name
    )
    untested = [code for code in _documented() if code not in corpus]
    assert not untested, f"codes with no test that triggers them: {untested}"
    assert sexpgpu.__version__


def test_errors_page_is_assembled_from_the_stage_pages() -> None:
    spec = importlib.util.spec_from_file_location(
        "assemble_errors_doc", ROOT / "tools" / "assemble_errors_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    current = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert current == module.assemble(), "run: python tools/assemble_errors_doc.py"
