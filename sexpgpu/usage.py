"""The command line's front door for every verb: docopt-ng parses a verb's help text,
and whatever does not fit it becomes an `E-USAGE` diagnostic with a did-you-mean
against that verb's real options (docopt's own messages are never shown).

Hydra-style `KEY=VALUE` arguments after the file are read as `--set KEY=VALUE`.
"""

from __future__ import annotations

import re
from typing import Any

from docopt import DocoptExit, docopt

from sexpgpu.diagnostics import Note, SexpError, define_code, error
from sexpgpu.record import record
from sexpgpu.suggest import edit_distance, nearest

E_USAGE = define_code(
    "E-USAGE", "the arguments do not fit the command",
    "A verb was given an option it does not have, an option without its value, too many "
    "or too few arguments. The diagnostic names the argument, the nearest option the "
    "verb has, and its usage line; `sexpgpu VERB --help` lists every option. A knob is "
    "never an option: write `--set steps=5` (or `steps=5` after the file), not `--steps 5`.",
)

# an argument that binds a knob, Hydra-style: `lr=3e-4`, `n-layer=6` (never a path: no /)
KEY_VALUE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*=")
_OPTION_LINE = re.compile(r"^\s*(?:(-[A-Za-z]),?\s*)?(--[a-z][a-z0-9-]*)?(?:[ =]([A-Z][\w=]*))?")


class UsageError(SexpError):
    """A command line that does not fit its verb: exit 2, never 1."""


@record
class OptionSpec:
    names: tuple[str, ...]      # ("-e",) or ("--runs",) or ("-h", "--help")
    takes_value: bool
    repeatable: bool


def options_of(doc: str) -> dict[str, OptionSpec]:
    """Every option a help text declares (its Options: section and usage lines), by name."""
    usage, _, rest = doc.partition("Options:")
    found: dict[str, OptionSpec] = {}
    for line in rest.splitlines():
        if not line.strip().startswith("-"):
            continue
        match = _OPTION_LINE.match(line)
        short, long_, value = match.group(1), match.group(2), match.group(3)
        names = tuple(n for n in (short, long_) if n)
        repeatable = any(re.search(rf"\[{re.escape(n)}\b[^\]]*\]\.\.\.", usage) for n in names)
        spec = OptionSpec(names, value is not None, repeatable)
        for name in names:
            found[name] = spec
    for name in ("-h", "--help"):
        found.setdefault(name, OptionSpec(("-h", "--help"), False, False))
    return found


def usage_lines(doc: str) -> list[str]:
    """The `sexpgpu VERB ...` lines of the Usage: section, continuation lines joined."""
    body = doc.split("Usage:", 1)[1].split("\n\n", 1)[0]
    lines: list[str] = []
    for raw in body.splitlines():
        text = raw.strip()
        if not text:
            continue
        if text.startswith("sexpgpu "):
            lines.append(text)
        elif lines:
            lines[-1] += " " + text
    return [line for line in lines if "--help" not in line]


def hydra_sets(argv: list[str], options: dict[str, OptionSpec]) -> list[str]:
    """`KEY=VALUE` arguments (not an option's value) become `--set KEY=VALUE`, when the
    verb has --set. A file whose name has `=` in it is written `./name=x.sx`."""
    if "--set" not in options:
        return argv
    out: list[str] = []
    takes_value = False
    for arg in argv:
        if takes_value:
            out.append(arg)
            takes_value = False
            continue
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            spec = options.get(name)
            takes_value = spec is not None and spec.takes_value and "=" not in arg
            out.append(arg)
        elif KEY_VALUE.match(arg):
            out += ["--set", arg]
        else:
            out.append(arg)
    return out


def parse(doc: str, verb: str, argv: list[str]) -> dict[str, Any]:
    """docopt-ng over `doc` for `sexpgpu VERB ARGV...`; UsageError when it does not fit.
    `--help` prints `doc` and exits 0 (docopt's SystemExit, handled by the dispatcher)."""
    options = options_of(doc)
    argv = hydra_sets(list(argv), options)
    try:
        return docopt(doc, argv=[verb, *argv])
    except DocoptExit:
        raise usage_error(doc, verb, argv, options) from None


def usage_error(doc: str, verb: str, argv: list[str],
                options: dict[str, OptionSpec] | None = None) -> UsageError:
    """The one diagnostic for a command line that does not fit: the first argument that
    is wrong, and what would be right."""
    options = options if options is not None else options_of(doc)
    lines = usage_lines(doc)
    notes = [Note("usage: " + line) for line in lines]
    notes.append(Note(f"`sexpgpu {verb} --help` explains every option"))
    actual = " ".join(["sexpgpu", verb, *argv])
    seen: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            positional.append(arg)
            i += 1
            continue
        name, eq, inline = arg.partition("=")
        spec = options.get(name) or _unique_prefix(name, options)
        if spec is None:
            value = inline if eq else (argv[i + 1] if i + 1 < len(argv)
                                       and not argv[i + 1].startswith("-") else None)
            return _fail(f"`sexpgpu {verb}` has no option `{name}`", actual,
                         _unknown_option_fix(name, value, options), notes)
        key = spec.names[-1]
        if key in seen and not spec.repeatable:
            return _fail(f"`{key}` is given twice", actual,
                         f"give `{key}` once", notes)
        seen.add(key)
        if spec.takes_value and not eq:
            if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                return _fail(f"`{name}` needs a value", actual,
                             f"write `{name} {_metavar(doc, key)}`", notes)
            i += 1
        elif not spec.takes_value and eq:
            return _fail(f"`{name}` takes no value", actual, f"write `{name}` alone", notes)
        i += 1
    wanted = _positionals(lines[0]) if lines else []
    required = [p for p in wanted if not p.startswith("[")]
    if len(lines) == 1 and len(positional) < len(required):
        missing = required[len(positional)]
        return _fail(f"missing {missing}", actual,
                     f"write `sexpgpu {verb} {' '.join(p.strip('[]') for p in wanted)}`",
                     notes)
    if len(lines) == 1 and not any(p.endswith("...") for p in wanted) \
            and len(positional) > len(wanted):
        extra = positional[len(wanted)]
        fix = (f"`sexpgpu {verb}` takes {' '.join(wanted)}" if wanted
               else f"`sexpgpu {verb}` takes no arguments")
        if "=" in extra and "--set" not in options:
            fix = f"`sexpgpu {verb}` takes no knobs"
        return _fail(f"unexpected argument `{extra}`", actual, fix, notes)
    return _fail(f"these arguments do not fit `sexpgpu {verb}`", actual,
                 "write them as one of the usage lines below", notes)


def _fail(message: str, actual: str, fix: str, notes: list[Note]) -> UsageError:
    diag = error(E_USAGE, message, actual=actual, fix=fix, notes=notes).diagnostic
    return UsageError(diag)


def _unique_prefix(name: str, options: dict[str, OptionSpec]) -> OptionSpec | None:
    """docopt accepts an unambiguous prefix of a long option (`--var` for `--variant`)."""
    if not name.startswith("--") or len(name) < 3:
        return None
    specs = {id(spec): spec for opt, spec in options.items() if opt.startswith(name)}
    return next(iter(specs.values())) if len(specs) == 1 else None


def _unknown_option_fix(name: str, value: str | None, options: dict[str, OptionSpec]) -> str:
    """The nearest real option; else, where the verb binds knobs, `--set NAME=VALUE`: a
    knob written as an option (`--seed 43`) is likelier than a two-letter typo of one."""
    near = nearest(name, [o for o in options if o.startswith("--")])
    binds_knobs = "--set" in options and name.startswith("--")
    if near is not None and (not binds_knobs or edit_distance(name, near) <= 1):
        return f"did you mean `{near}`?"
    if binds_knobs:
        knob = name[2:]
        return f"did you mean `--set {knob}={value if value is not None else 'VALUE'}`?"
    shown = ", ".join(sorted({spec.names[-1] for spec in options.values()}))
    return f"use one of: {shown}"


def _positionals(line: str) -> list[str]:
    """`FILE`, `[FILE]`, `RUN...` of one usage line (options and their values left out)."""
    words = line.split()[2:]
    out: list[str] = []
    skip_value = False
    for word in words:
        bare = word.strip("[]()|.")
        if skip_value:
            skip_value = False
            if not word.startswith("["):
                continue
        if bare.startswith("-"):
            skip_value = " " not in bare and not word.endswith("]") and "=" not in bare
            continue
        if bare.isupper() and "=" not in bare and not word.startswith("[--"):
            optional = word.startswith("[")
            name = bare + ("..." if word.rstrip("])").endswith("...") else "")
            out.append(f"[{name}]" if optional else name)
    return out


def _metavar(doc: str, option: str) -> str:
    match = re.search(rf"{re.escape(option)}[ =]([A-Z][\w=]*)", doc)
    return match.group(1) if match else "VALUE"


def number(raw: str | None, option: str, kind: type = int, minimum: float = 0,
           example: str = "1") -> Any:
    """An option's numeric value (`--tokens 200`), or None when the option is absent;
    E-USAGE (exit 2) when it is not a number of that kind, or below `minimum`."""
    if raw is None:
        return None
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or value != value or value < minimum:
        what = "an integer" if kind is int else "a number"
        raise UsageError(*error(E_USAGE, f"{option} {raw}: not {what} >= {minimum:g}",
                                expected=f"{what} >= {minimum:g}", actual=raw,
                                fix=f"{option} {example}").diagnostics)
    return value
