"""`sexpgpu docs`: the manual that ships with the package (sexpgpu/manual.py)."""

from __future__ import annotations

import sys

from sexpgpu import manual, usage
from sexpgpu.atomic import print_json

HELP = """\
Read the manual that ships with this install: list its pages, print one as markdown,
or print every page in one stream (for an agent's context).

Usage:
  sexpgpu docs [PAGE] [--json]
  sexpgpu docs --all
  sexpgpu docs (-h | --help)

Options:
  --all    print every page, the index first, each under a `# page: NAME` line
  --json   list the pages (or give the page) as JSON

PAGE is a page's name as listed (`run`, `agents`, `errors/cli`), with or without `.md`.

Examples:
  sexpgpu docs
  sexpgpu docs agents
  sexpgpu docs --all > sexpgpu-manual.md
"""


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "docs", argv)
    if args["--all"]:
        sys.stdout.write(manual.everything())
        return 0
    if args["PAGE"]:
        text = manual.read(args["PAGE"])
        if args["--json"]:
            payload = {"ok": True, "page": args["PAGE"].removesuffix(".md"), "markdown": text}
            print_json(payload)
        else:
            sys.stdout.write(text)
        return 0
    listed = manual.pages()
    if args["--json"]:
        payload = {"ok": True, "dir": str(manual.docs_dir()),
                   "pages": [vars(p) for p in listed]}
        print_json(payload)
        return 0
    width = max(len(p.name) for p in listed)
    section = None
    for page in listed:
        if page.section != section:
            section = page.section
            sys.stdout.write(("\n" if page is not listed[0] else "") + f"{section}\n")
        sys.stdout.write(f"  {page.name:<{width}}  {page.about or page.title}\n")
    sys.stdout.write("\n`sexpgpu docs PAGE` prints a page; `sexpgpu docs --all` prints them all.\n")
    return 0
