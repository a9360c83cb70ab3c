"""Commands in the docs that cannot go stale: the runnable code blocks of docs/*.md and
README.md, run by tests/test_docs_commands.py (and by hand: `python tools/docs_commands.py`).

Two markers, in a code fence's info string:

    ```sh runnable [steps=N]      every line is a `sexpgpu ...` command that must exit 0;
                                  with steps=N, each `run` and `sweep` gets `steps=N`
                                  (unless it sets steps or picks a variant, which may),
                                  so it trains briefly
    ```console runnable [steps=N] `$ sexpgpu ...` lines are commands; the lines after one
                                  are its output (stdout and stderr as a terminal shows
                                  them), compared line by line: a line `...` stands for
                                  any number of lines, `...` inside a line for any text

Each page's commands run in order in a scratch directory of its own, where `examples/`,
`tests/` and `docs/` are the repository's (a block may use what an earlier one on the
page made, such as a run to resume), with `> FILE` redirections dropped.

    python tools/docs_commands.py            # run every block, report failures
    python tools/docs_commands.py --write    # also rewrite the outputs of console blocks
                                             # that have no `...` (after a real change)
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w+)?\s*(.*)$")
LINKED = ("examples", "tests", "docs")


@dataclass
class Command:
    argv: list[str]
    expected: list[str] | None = None   # console blocks: the output lines as written
    line: int = 0                       # where in the page


@dataclass
class Block:
    path: Path
    line: int                           # the fence's line, from 1
    kind: str                           # "sh" or "console"
    steps: int | None
    body: list[str]
    commands: list[Command] = field(default_factory=list)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The runnable blocks of one page, with their commands."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        words = match.group(2).split()
        if "runnable" in words:
            steps = next((int(w.split("=", 1)[1]) for w in words if w.startswith("steps=")),
                         None)
            block = Block(path, i + 1, match.group(1) or "", steps, lines[i + 1:end])
            block.commands = _commands(block)
            found.append(block)
        i = end + 1
    return found


def _commands(block: Block) -> list[Command]:
    out: list[Command] = []
    if block.kind == "console":
        for n, line in enumerate(block.body):
            if line.startswith("$ "):
                out.append(Command(_argv(line[2:]), [], block.line + 1 + n))
            elif out:
                out[-1].expected.append(line)
        return out
    logical = ""
    for n, line in enumerate(block.body):
        logical += line.rstrip("\\")
        if line.endswith("\\"):
            continue
        if logical.strip():
            out.append(Command(_argv(logical), None, block.line + 1 + n))
        logical = ""
    return out


def _argv(text: str) -> list[str]:
    words = shlex.split(text, comments=True)
    argv: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == ">":
            skip = True
        elif not word.startswith(">"):
            argv.append(word)
    return argv


def with_steps(argv: list[str], steps: int | None) -> list[str]:
    """`steps=N` added to a run or sweep that sets no steps and picks no variant."""
    if steps is None or len(argv) < 2 or argv[1] not in ("run", "sweep"):
        return argv
    if any(w.removeprefix("--set=").startswith("steps=") or w == "--variant"
           or w.startswith("--variant=") for w in argv):
        return argv
    return [*argv, f"steps={steps}"]


def scratch_dir() -> Path:
    """A directory to run in: the repository's examples/, tests/ and docs/ linked in."""
    where = Path(tempfile.mkdtemp(prefix="sexpgpu-docs-"))
    for name in LINKED:
        (where / name).symlink_to(ROOT / name)
    return where


def run(argv: list[str], cwd: Path) -> tuple[int, str]:
    """One `sexpgpu` command in this process: its exit code and its stdout and stderr,
    interleaved as a terminal shows them."""
    from sexpgpu import cli

    if not argv or argv[0] != "sexpgpu":
        raise ValueError(f"a runnable block runs sexpgpu commands only, not {argv[:1]}")
    buffer = io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            code = cli.main(argv[1:])
    finally:
        os.chdir(here)
    return code, buffer.getvalue()


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line; `...` alone is any number of lines, inside a line any text."""
    if not expected:
        return not actual
    head, rest = expected[0].rstrip(), expected[1:]
    if head == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(re.escape(part) for part in head.split("..."))
    return re.fullmatch(pattern, actual[0].rstrip()) is not None and matches(rest, actual[1:])


def check_block(block: Block, cwd: Path) -> list[str]:
    """The problems of one block (empty: it is true)."""
    problems: list[str] = []
    for command in block.commands:
        argv = with_steps(command.argv, block.steps)
        code, output = run(argv, cwd)
        where = f"{block.path.relative_to(ROOT)}:{command.line}: {' '.join(argv)}"
        if command.expected is None:
            if code != 0:
                problems.append(f"{where}: exit {code}\n{output}")
        elif not matches(command.expected, output.splitlines()):
            problems.append(f"{where}: the output differs from the page\n--- page\n"
                            + "\n".join(command.expected) + "\n--- actual\n" + output)
    return problems


def rewrite(block: Block, cwd: Path) -> None:
    """Write each console command's real output into the page (blocks without `...`)."""
    if block.kind != "console" or any("..." in e for c in block.commands
                                      for e in c.expected or []):
        return
    body: list[str] = []
    for command in block.commands:
        _, output = run(with_steps(command.argv, block.steps), cwd)
        body += [next(line for line in block.body if line[2:].strip() and
                      _argv(line[2:]) == command.argv), *output.rstrip("\n").splitlines()]
    lines = block.path.read_text(encoding="utf-8").splitlines()
    lines[block.line:block.line + len(block.body)] = body
    block.path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    failures = 0
    for page in pages():
        cwd = scratch_dir()
        for block in reversed(blocks(page)) if "--write" in argv else blocks(page):
            if "--write" in argv:
                rewrite(block, cwd)
            for problem in check_block(block, cwd):
                failures += 1
                sys.stderr.write(problem + "\n\n")
    sys.stderr.write(f"{failures} failing commands\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
