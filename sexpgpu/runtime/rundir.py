"""Run directories: `runs/<slug>/` with source/, plan.json, events, status, checkpoints.

The slug names the run file, the selection and a short hash of source + selection,
so the same experiment always lands in the same directory: running it again resumes
(`--resume latest`) or is refused, never overwritten.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import orjson

from sexpgpu.atomic import dumps, read_json, write_bytes_atomic, write_json_atomic
from sexpgpu.diagnostics import SexpError, define_code, error
from sexpgpu.record import asdict
from sexpgpu.runtime.checkpoint import E_CHECKPOINT
from sexpgpu.runtime.spec import RESULT_FREE, RunPlan

E_RUN_EXISTS = define_code(
    "E-RUN-EXISTS", "run directory already exists",
    "This file with this selection was run before, so its run directory exists. A run "
    "directory is never overwritten: continue it with `--resume latest`, or start a "
    "separate one elsewhere with `--runs DIR`.",
)
E_RESUME_MISMATCH = define_code(
    "E-RESUME-MISMATCH", "checkpoint belongs to a different plan",
    "A checkpoint resumes only the plan that wrote it (its plan hash). The run file, a "
    "file it requires, the selection (--set/--variant) or the compiled plan changed since; "
    "the diagnostic names what. Resuming would not continue the same run.",
)
E_RUN_IO = define_code(
    "E-RUN-IO", "cannot write the run directory",
    "Reading or writing one of a run's own files (a checkpoint, events.jsonl, status.json, "
    "the copy of its source) failed: the disk is full, a quota is reached, the directory "
    "is read-only, or a path the run needs is a file. The run stops (exit 3) and its last "
    "good checkpoint stays the latest: free the space, then `--resume latest`.",
)


def io_error(exc: OSError, doing: str) -> SexpError:
    """The one diagnostic for an OSError met while reading or writing a run's files."""
    name = errno.errorcode.get(exc.errno or 0)
    reason = (exc.strerror or str(exc)) + (f" ({name})" if name else "")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = "free space on that disk (or pass --runs DIR on another), then `--resume latest`"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        fix = "make the runs directory writable, or pass --runs DIR, then `--resume latest`"
    else:
        fix = "fix the path (or pass --runs DIR), then `--resume latest`"
    return error(E_RUN_IO, f"{doing} failed: {reason}",
                 expected="a writable run directory with free space",
                 actual=f"{exc.filename}: {reason}" if exc.filename else reason, fix=fix)


def check_layout(run_dir: Path) -> None:
    """Every directory the run will write into is a directory (or can become one): a file
    in its place (`--runs` naming a file, a file called `checkpoints`) is E-RUN-IO now,
    not at the first checkpoint."""
    run_dir = Path(run_dir)
    for path in [*reversed(run_dir.parents), run_dir, run_dir / "checkpoints"]:
        if path.exists() and not path.is_dir():
            raise error(E_RUN_IO, f"{path} is a file, not a directory",
                        expected=f"{path} to be a directory (or not to exist yet)",
                        actual="a file", fix="move the file away, or pass --runs DIR")


def _short(data: bytes, n: int = 8) -> str:
    return hashlib.sha256(data).hexdigest()[:n]


def source_hash(plan: RunPlan) -> str:
    """A hash of the sources and the selection that is the same wherever the checkout or
    the package lies: each file is named relative to the run file's directory (or, for
    the standard modules, to the installed package), never by its absolute path."""
    base = Path(plan.file).resolve().parent
    package = Path(__file__).resolve().parent.parent
    sources = sorted((_portable(Path(name), base, package), text)
                     for name, text in plan.source_files.items())
    return _short(dumps({"sources": sources, "selection": plan.selection}))


def _portable(path: Path, base: Path, package: Path) -> str:
    resolved = path.resolve()
    for root, prefix in ((base, ""), (package, "sexpgpu/")):
        if resolved.is_relative_to(root):
            return prefix + resolved.relative_to(root).as_posix()
    return path.name


def plan_hash(plan: RunPlan) -> str:
    """The compiler's hash when given, else one over everything that changes results."""
    if plan.plan_hash:
        return plan.plan_hash
    run = {k: v for k, v in asdict(plan.run).items() if k not in RESULT_FREE}
    body = plan.to_json()
    body.update(run=run, plan_hash="", sources=sorted(plan.source_files.items()))
    return _short(dumps(body), 16)


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("_")


SELECTION_BUDGET = 48  # characters of knobs in a run name, before abbreviating


def slug_for(plan: RunPlan) -> str:
    """`<stem>[-<knobs>][-<precision>]-<hash>`, e.g. `mnist1d-mlp-hidden=64,lr=0.03-1a2b3c4d`:
    the knobs whose value differs from the file's default, within SELECTION_BUDGET
    characters (see `selection_words`), then the precision unless f32 (it changes
    results); the hash is over the sources and the whole selection, so the name is unique
    and the same in every process. plan.json has the full selection."""
    parts = [_clean(Path(plan.file).stem) or "run"]
    chosen = selection_words(plan.selection, plan.defaults)
    if chosen:
        parts.append(chosen)
    if plan.run.precision != "f32":  # two precisions, two runs
        parts.append(plan.run.precision)
    parts.append(source_hash(plan))
    return "-".join(parts)


def selection_words(selection: dict[str, Any], defaults: dict[str, Any],
                    budget: int = SELECTION_BUDGET) -> str:
    """The knobs a run changes, for its name; a value is never cut. In the file's order,
    `name=value` joined by `,`. Longer than `budget`: knob names are abbreviated one at a
    time from the first (`n-layer` -> `nl`, `hidden` -> `hdd`); still longer: the knobs
    that do not fit, in order, are left out and counted (`+2`)."""
    changed = [(k, v) for k, v in selection.items() if k not in defaults or defaults[k] != v]
    names = [k for k, _ in changed]
    values = [value_word(v) for _, v in changed]

    def joined(kept: list[int]) -> str:
        words = [f"{names[i]}={values[i]}" for i in kept]
        if len(kept) < len(names):
            words.append(f"+{len(names) - len(kept)}")
        return ",".join(words)

    everything = list(range(len(names)))
    for i in everything:
        if len(joined(everything)) <= budget:
            return joined(everything)
        names[i] = abbreviate(names[i])
    kept: list[int] = []
    for i in everything:  # in order, each knob that still fits; the rest are counted
        if len(joined([*kept, i])) <= budget:
            kept.append(i)
    while kept and len(joined(kept)) > budget:
        kept.pop()
    return joined(kept)


def abbreviate(knob: str) -> str:
    """`n-layer` -> `nl`, `min-lr` -> `ml` (initials); one word: its first letter and the
    consonants after it, three letters at most (`hidden` -> `hdd`, `steps` -> `stp`)."""
    parts = [p for p in re.split(r"[-_]", knob) if p]
    if len(parts) > 1:
        return "".join(p[0] for p in parts)
    word = parts[0] if parts else knob
    return (word[0] + "".join(c for c in word[1:] if c.lower() not in "aeiou"))[:3]


def value_word(value: Any) -> str:
    """A knob value in a run name: numbers as Python writes them shortest (`0.03`, `3e-05`),
    t/nil, a keyword without its colon, a path by its file name; any other character
    than letters, digits and `.+-` becomes `_`."""
    if isinstance(value, bool):
        text = "t" if value else "nil"
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, str):
        text = value[1:] if value.startswith(":") else value
        if "/" in text or "\\" in text:
            text = Path(text).name or text
    else:
        text = str(value)
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", text).strip("_") or "_"


def _write_sources(run_dir: Path, plan: RunPlan) -> None:
    """Copy the files as read, under source/, relative to the run file's directory."""
    base = Path(plan.file).resolve().parent
    for name, text in plan.source_files.items():
        path = Path(name).resolve()
        rel = path.relative_to(base) if path.is_relative_to(base) else Path(path.name)
        target = run_dir / "source" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target, text.encode("utf-8"))


def create(run_dir: Path, plan: RunPlan) -> None:
    """Make a new run directory (refusing an existing one) with its source and plan."""
    check_layout(run_dir)
    try:
        run_dir.mkdir(parents=True)
    except FileExistsError:
        status = run_dir / "status.json"
        state = read_json(status) if status.exists() else {}
        where = f"{state.get('state', 'unknown')} at step {state.get('step', '?')}"
        raise error(E_RUN_EXISTS, f"run {run_dir.name} already exists ({where})",
                    actual=str(run_dir),
                    fix="add `--resume latest` to continue it, or `--runs DIR` for a new one",
                    ) from None
    _write_sources(run_dir, plan)
    write_json_atomic(run_dir / "plan.json", {**plan.to_json(), "plan_hash": plan_hash(plan)})


def lock(run_dir: Path) -> int:
    """Hold the run directory for this process (released when the fd is closed or the
    process dies); a second process running the same run is refused."""
    fd = os.open(run_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise error(E_RUN_EXISTS, f"run {run_dir.name} is running in another process",
                    actual=str(run_dir),
                    fix="wait for it to finish, or stop it (SIGTERM) and `--resume latest`",
                    ) from None
    return fd


def _first_difference(old: str, new: str) -> int:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    for i, (a, b) in enumerate(zip(old_lines, new_lines)):
        if a != b:
            return i + 1
    return min(len(old_lines), len(new_lines)) + 1


def describe_change(old_run_dir: Path, plan: RunPlan) -> list[str]:
    """What differs between the plan a run directory was made for and `plan`."""
    changes: list[str] = []
    old = read_json(old_run_dir / "plan.json")
    old_sel, new_sel = old.get("selection", {}), plan.selection
    for key in sorted(set(old_sel) | set(new_sel)):
        if old_sel.get(key) != new_sel.get(key):
            changes.append(f"selection {key}: {old_sel.get(key)!r} -> {new_sel.get(key)!r}")
    base = Path(plan.file).resolve().parent
    for name, text in sorted(plan.source_files.items()):
        path = Path(name).resolve()
        rel = path.relative_to(base) if path.is_relative_to(base) else Path(path.name)
        saved = old_run_dir / "source" / rel
        if not saved.exists():
            changes.append(f"file {rel} is new")
        elif saved.read_text(encoding="utf-8") != text:
            line = _first_difference(saved.read_text(encoding="utf-8"), text)
            changes.append(f"file {rel} changed (first at line {line})")
    for section in ("loaders", "evals", "targets", "run", "plan_json"):
        new_value = orjsonable(plan.to_json()[section])
        if old.get(section) != new_value and not (section == "run" and _same_run(old, plan)):
            changes.append(f"{section} changed")
    return changes or ["the compiled plan changed (plan hash differs)"]


def orjsonable(value: Any) -> Any:
    """The value as it reads back from JSON (tuples become lists)."""
    return orjson.loads(dumps(value))


def _same_run(old: dict[str, Any], plan: RunPlan) -> bool:
    new = orjsonable(asdict(plan.run))
    keep = [k for k in new if k not in RESULT_FREE]
    return all(old.get("run", {}).get(k) == new[k] for k in keep)


def refuse_mismatch(old_run_dir: Path, plan: RunPlan, checkpoint: Path) -> Exception:
    changes = describe_change(old_run_dir, plan) if (old_run_dir / "plan.json").exists() else []
    return error(
        E_RESUME_MISMATCH, f"checkpoint {checkpoint.name} was written by a different plan",
        expected=f"plan hash {plan_hash(plan)}",
        actual="; ".join(changes) if changes else "a different plan hash",
        fix="run without --resume to start a new run, or restore what changed",
    )


def find_siblings(runs_dir: Path, plan: RunPlan) -> list[Path]:
    """Other run directories of the same run file (newest first), to explain a mismatch."""
    stem = _clean(Path(plan.file).stem) or "run"
    found = [p for p in Path(runs_dir).glob(f"{stem}-*") if (p / "plan.json").exists()]
    return sorted(found, key=lambda p: (p / "plan.json").stat().st_mtime, reverse=True)


def no_run_to_resume(runs_dir: Path, plan: RunPlan) -> Exception:
    """--resume latest without a matching run directory: explain what changed, if we can."""
    siblings = find_siblings(runs_dir, plan)
    if siblings:
        changes = describe_change(siblings[0], plan)
        return error(
            E_RESUME_MISMATCH, f"no run of this plan to resume; {siblings[0].name} differs",
            expected=f"run {slug_for(plan)}", actual="; ".join(changes),
            fix="run without --resume to start a new run, or restore what changed",
        )
    return error(E_CHECKPOINT, f"no run to resume in {runs_dir}",
                 actual=f"{Path(runs_dir) / slug_for(plan)} does not exist",
                 fix="run without --resume to start it")
