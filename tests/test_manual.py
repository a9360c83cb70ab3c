"""The manual ships with the package: `sexpgpu docs` lists, prints and streams the pages
of docs/, docs/llms.txt indexes every one of them, and docs/cli.md's verb table is
cli.py's verbs (the installed copy is tested in test_packaging)."""

from __future__ import annotations

import re

import orjson
from cmd_helpers import ROOT, sexpgpu

from sexpgpu import cli, manual

DOCS = ROOT / "docs"


def test_the_index_lists_every_page_once() -> None:
    listed = [p.name for p in manual.pages()]
    on_disk = sorted(p.relative_to(DOCS).with_suffix("").as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed)
    assert all(p.about for p in manual.pages())


def test_docs_lists_pages_by_section(capsys) -> None:
    code, out, _ = sexpgpu(capsys, "docs")
    assert code == 0
    assert out.startswith("Start here\n  why ")
    assert re.search(r"^  agents +the loop", out, re.MULTILINE)
    code, out, _ = sexpgpu(capsys, "docs", "--json")
    pages = orjson.loads(out)["pages"]
    assert {"name": "run", "title": "run", "section": "The command line"}.items() <= \
        next(p for p in pages if p["name"] == "run").items()


def test_docs_page_prints_the_markdown(capsys) -> None:
    for name in ("agents", "agents.md", "errors/cli"):
        code, out, _ = sexpgpu(capsys, "docs", name)
        path = DOCS / (name.removesuffix(".md") + ".md")
        assert code == 0 and out == path.read_text(encoding="utf-8")


def test_docs_all_is_every_page_in_index_order(capsys) -> None:
    code, out, _ = sexpgpu(capsys, "docs", "--all")
    heads = re.findall(r"^# page: (\S+)$", out, re.MULTILINE)
    assert code == 0 and heads == ["llms.txt", *(p.name for p in manual.pages())]


def test_an_unknown_page_is_a_diagnostic(capsys) -> None:
    code, _, err = sexpgpu(capsys, "docs", "runn")
    assert code == 1
    assert err.startswith("error[E-DOCS-PAGE]: no manual page `runn`\n")
    assert "did you mean `run`?" in err


def test_the_verb_table_in_cli_md_is_cli_py() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    table = re.findall(r"^\| `([a-z]+)[ `]", text, re.MULTILINE)
    assert sorted(table) == sorted(cli.COMMANDS)
    # and the top-level --help names each verb once
    helped = re.findall(r"^  ([a-z]+) ", cli.HELP.split("Commands:")[1], re.MULTILINE)
    assert sorted(helped) == sorted(cli.COMMANDS)
