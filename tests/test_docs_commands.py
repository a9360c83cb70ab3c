"""The docs cannot go stale: every runnable block of docs/*.md and README.md is run
(tools/docs_commands.py: ```sh runnable blocks must exit 0, ```console runnable blocks
must print what the page shows), the examples are in the canonical layout, and the
pages keep the markers (a page that lost them would be tested by nothing)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from cmd_helpers import ROOT

from sexpgpu import cli

spec = importlib.util.spec_from_file_location("docs_commands", ROOT / "tools" / "docs_commands.py")
docs_commands = importlib.util.module_from_spec(spec)
sys.modules["docs_commands"] = docs_commands
spec.loader.exec_module(docs_commands)

PAGES = [p for p in docs_commands.pages() if docs_commands.blocks(p)]


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kernels")


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_the_commands_of_a_page_do_what_it_says(page, kernel_cache, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(kernel_cache))
    cwd = docs_commands.scratch_dir()
    problems = [p for block in docs_commands.blocks(page)
                for p in docs_commands.check_block(block, cwd)]
    assert not problems, "\n\n".join(problems)


def test_the_pages_that_quote_commands_keep_their_markers() -> None:
    marked = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/quickstart.md", "docs/check.md", "docs/explain.md",
            "docs/cli.md", "docs/run.md", "docs/sweep.md"} <= marked


def test_the_examples_are_in_the_canonical_layout(capsys) -> None:
    assert cli.main(["fmt", str(ROOT / "examples"), "--check"]) == 0, capsys.readouterr().err


def test_the_matcher() -> None:
    m = docs_commands.matches
    assert m(["a", "...", "d"], ["a", "b", "c", "d"]) and m(["a", "..."], ["a"])
    assert m(["ok x: ... (412 ms)"], ["ok x: 78,858 parameters (412 ms)"])
    assert not m(["a", "b"], ["a", "b", "c"]) and not m(["a..."], ["b"])
    assert docs_commands.with_steps(["sexpgpu", "run", "f.sx"], 20) == [
        "sexpgpu", "run", "f.sx", "steps=20"]
    assert docs_commands.with_steps(["sexpgpu", "run", "f.sx", "--variant", "smoke"], 20) == [
        "sexpgpu", "run", "f.sx", "--variant", "smoke"]
    assert docs_commands._argv("sexpgpu docs --all > x.md  # all") == ["sexpgpu", "docs", "--all"]
