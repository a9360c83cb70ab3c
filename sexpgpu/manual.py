"""The manual that ships with the package: the pages of docs/ (installed as
`sexpgpu/docs/`) and their index, docs/llms.txt, for `sexpgpu docs` and for agents."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sexpgpu.diagnostics import define_code, error
from sexpgpu.suggest import did_you_mean

E_DOCS_PAGE = define_code(
    "E-DOCS-PAGE", "no manual page by that name",
    "`sexpgpu docs PAGE` prints one page of the manual; PAGE is a name `sexpgpu docs` "
    "lists (`run`, `agents`, `errors/cli`), with or without `.md`. The diagnostic names "
    "the nearest page.",
)

INDEX = "llms.txt"
_ENTRY = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<path>[^)]+\.md)\)(?::\s*(?P<about>.*))?$")


@dataclass
class Page:
    name: str      # `run`, `errors/cli`: the path under docs/ without .md
    title: str
    about: str
    section: str


def docs_dir() -> Path:
    """Where the pages are: inside the installed package (`pip install .` puts docs/
    there as sexpgpu/docs), else the checkout's docs/ beside the package (editable)."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "docs", package.parent / "docs"):
        if (candidate / INDEX).is_file():
            return candidate
    raise FileNotFoundError(f"the manual is not installed: no {INDEX} under {package}")


def pages() -> list[Page]:
    """Every page, in the index's order."""
    found: list[Page] = []
    section = ""
    for line in (docs_dir() / INDEX).read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        match = _ENTRY.match(line.strip())
        if match:
            found.append(Page(match["path"].removesuffix(".md"), match["title"],
                              match["about"] or "", section))
    return found


def read(name: str) -> str:
    """One page's markdown; E-DOCS-PAGE for a name the index does not list."""
    wanted = name.strip().removesuffix(".md").removeprefix("docs/")
    names = [p.name for p in pages()]
    if wanted not in names:
        raise error(E_DOCS_PAGE, f"no manual page `{name}`", actual=name,
                    expected="a page `sexpgpu docs` lists", fix=did_you_mean(wanted, names))
    return (docs_dir() / f"{wanted}.md").read_text(encoding="utf-8")


def everything() -> str:
    """Every page in one stream, each under a `# page: NAME` line: the index first."""
    parts = [f"# page: {INDEX}\n\n" + (docs_dir() / INDEX).read_text(encoding="utf-8")]
    for page in pages():
        parts.append(f"# page: {page.name}\n\n" + read(page.name))
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"
