"""`sexpgpu bundle FILE --out DIR`: one directory that trains the experiment on another
machine and resumes it after preemption."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from sexpgpu import __version__, usage
from sexpgpu.atomic import print_json
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.fields import resolve_path
from sexpgpu.contract.plan import run_plan
from sexpgpu.diagnostics import define_code, error
from sexpgpu.s3.store import client, is_s3, keys, parse, upload
from sexpgpu.selection import Selection, from_docopt

HELP = """\
Make one directory that trains the run on another machine and resumes it after
preemption: the run file and every file it reads, its data, the package, pinned
requirements (their wheels too with --wheels) and a launcher, DIR/run.sh.

Usage:
  sexpgpu bundle FILE --out DIR [--set K=V]... [--variant NAME] [--wheels] [--json]
  sexpgpu bundle (-h | --help)

Options:
  --out DIR        the bundle directory (must not exist yet), or s3://BUCKET/PREFIX
                   (an empty prefix; docs/environment.md, "S3")
  --set K=V        bind knob K for the bundled run (repeatable)
  --variant NAME   bind a variant the file declares
  --wheels         also download the requirements' wheels for this platform, so the
                   launcher installs them without an index
  --json           print the manifest as JSON

KEY=VALUE after FILE is the same as --set KEY=VALUE.

Example:
  sexpgpu bundle examples/mnist1d-mlp.sx --out /tmp/mlp-job
"""

E_BUNDLE_EXISTS = define_code(
    "E-BUNDLE-EXISTS", "the bundle directory already exists",
    "`sexpgpu bundle` writes a new directory and never merges into an old one: --out "
    "must not exist yet.",
)
E_BUNDLE_DATA = define_code(
    "E-BUNDLE-DATA", "a data file the bundle cannot carry",
    "A loader reads a file whose path is written in the run file and lies outside the run "
    "file's directory, so the bundled file would still point at this machine's path. "
    "Read the path from a knob (`(defknob data \"...\")`, `:path data`); the bundle then "
    "copies the file and binds the knob to the copy.",
)
E_BUNDLE_SOURCE = define_code(
    "E-BUNDLE-SOURCE", "a required file the bundle cannot carry",
    "The run file (or a library it requires) requires a file by an absolute path, so the "
    "bundled copy would still read this machine's file. The bundle copies every file the "
    "run read, keeping their layout relative to one another; it checks that the bundled "
    "run file, compiled from the bundle, reads nothing outside it. Require libraries by "
    "a relative path (`(require \"../lib/blocks.sx\")`).",
)

# The installed namespace; in a source checkout kernels/ and autodiff/ sit beside
# sexpgpu/, so each is located by its import name and copied to its place.
PACKAGES = ("sexpgpu", "sexpgpu.kernels", "sexpgpu.autodiff")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "bundle", argv)
    if is_s3(args["--out"]):
        return _to_s3(args)
    out = Path(args["--out"])
    if out.exists():
        raise error(E_BUNDLE_EXISTS, f"{out} already exists", expected="a path with nothing",
                    actual=f"{out} exists", fix="pick another --out, or remove the old bundle")
    manifest = build(args["FILE"], from_docopt(args), out, wheels=args["--wheels"])
    return _report(args, manifest, f"wrote {out}: {len(manifest['files'])} files; "
                                   f"run it with `sh {out / 'run.sh'}`")


def _to_s3(args: dict[str, Any]) -> int:
    """`--out s3://BUCKET/PREFIX`: built in a temporary directory, then uploaded, run.sh
    last (a prefix with run.sh holds a whole bundle); a prefix in use is refused."""
    target = parse(args["--out"])
    s3 = client()
    if keys(s3, target):
        raise error(E_BUNDLE_EXISTS, f"{target} already holds objects",
                    expected="an empty S3 prefix", actual=f"objects under {target}/",
                    fix="pick another --out prefix, or delete the old bundle there")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bundle"
        manifest = build(args["FILE"], from_docopt(args), out, wheels=args["--wheels"])
        files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
        for name in sorted(files, key=lambda n: n == "run.sh"):
            upload(s3, out / name, target.child(name))
    return _report(args, manifest, f"wrote {target}: {len(files)} files; on the other "
                                   f"machine `aws s3 cp --recursive {target} job && "
                                   f"sh job/run.sh`")


def _report(args: dict[str, Any], manifest: dict, line: str) -> int:
    """The manifest as JSON with --json, else one line for a person."""
    if args["--json"]:
        print_json(manifest)
    else:
        sys.stderr.write(line + "\n")
    return 0


def build(file: str, selection: Selection, out: Path, wheels: bool = False) -> dict[str, Any]:
    """Write the bundle for `file` under `selection` into `out` (a new directory)."""
    plan = run_plan(compile_file(file, selection))
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        manifest = _fill(plan, selection, staging, wheels)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    staging.rename(out)  # the bundle appears whole or not at all
    return manifest


def _fill(plan: Any, selection: Selection, staging: Path, wheels: bool) -> dict[str, Any]:
    base = Path(plan.file).resolve().parent
    (staging / "source").mkdir(parents=True)
    # the run file and every file it required keep their layout relative to one another
    # (a `(require "../lib/x.sx")` still finds its file) under their deepest common folder
    sources = _user_sources(plan)
    top = Path(os.path.commonpath([base, *(path.parent for path in sources)]))
    for path, text in sources.items():
        _write(staging / "source" / path.relative_to(top), text.encode("utf-8"))
    bundled_base = staging / "source" / base.relative_to(top)
    sets = _bundle_data(plan, base, bundled_base, staging, dict(selection.sets))
    for package in PACKAGES:
        root = Path(importlib.util.find_spec(package).origin).parent
        shutil.copytree(root, staging / "lib" / package.replace(".", "/"), ignore=IGNORED,
                        dirs_exist_ok=True)
    requirements = _requirements()
    _write(staging / "requirements.txt", ("\n".join(requirements) + "\n").encode())
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "-d",
                        str(staging / "wheels"), "-r", str(staging / "requirements.txt")],
                       check=True)
    run_file = "source/" + Path(plan.file).resolve().relative_to(top).as_posix()
    flags = [f for k, v in sets.items() for f in ("--set", f"{k}={v}")]
    if selection.variant is not None:
        flags += ["--variant", selection.variant]
    _check_self_contained(staging, run_file, sets, selection.variant)
    launcher = staging / "run.sh"
    _write(launcher, LAUNCHER.replace("@FILE@", shlex.quote(run_file))
           .replace("@FLAGS@", " ".join(shlex.quote(f) for f in flags)).encode())
    launcher.chmod(0o755)
    manifest = {"sexpgpu": __version__, "python": sys.version.split()[0],
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "file": run_file, "flags": flags, "requirements": requirements,
                "files": _hashes(staging)}
    _write(staging / "bundle.json", orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return manifest


def _user_sources(plan: Any) -> dict[Path, str]:
    """The files the compilation read, but the standard modules (they come with the
    package), by resolved path."""
    shipped = Path(importlib.util.find_spec("sexpgpu").origin).parent
    found = {}
    for name, text in plan.source_files.items():
        path = Path(name).resolve()
        if not path.is_relative_to(shipped):
            found[path] = text
    return found


def _bundle_data(plan: Any, base: Path, bundled_base: Path, staging: Path,
                 sets: dict[str, str]) -> dict[str, str]:
    """Copy every data file the loaders read; returns the knob bindings of the bundled
    run: the ones given, with each knob that named a data file (given or by default)
    bound to its copy under `data/` (a path relative to the bundled run file, as every
    data path is). Paths in the file and in knobs are relative to the run file's
    directory, never to the directory `bundle` was started in."""
    knob_paths = {resolve_path(v, base).resolve(): k for k, v in plan.selection.items()
                  if isinstance(v, str) and v and resolve_path(v, base).is_file()}
    copied: dict[Path, str] = {}
    for path in _data_files(plan, base):
        if path in copied:
            continue
        if path in knob_paths:
            name = _free_name(staging / "data", path.name)
            _copy(path, staging / "data" / name)
            sets[knob_paths[path]] = os.path.relpath(staging / "data" / name, bundled_base)
            copied[path] = name
        elif path.is_relative_to(base):
            _copy(path, bundled_base / path.relative_to(base))
            copied[path] = str(path.relative_to(base))
        else:
            raise error(E_BUNDLE_DATA, f"{path} is written in the run file and lies outside "
                        f"its directory", actual=str(path),
                        expected=f"a file under {base}, or a path read from a knob",
                        fix="read the path from a knob, e.g. (defknob data \"...\") and "
                            ":path data, then bundle with --set data=PATH")
    return sets


def _data_files(plan: Any, base: Path) -> list[Path]:
    """The files the loaders (and their curriculum stages) read, resolved against the run
    file's directory (npy may name one file per field)."""
    found = []
    for spec in plan.loaders:
        for options in [spec.options, *(stage.options for stage in spec.stages)]:
            paths = options.get("path")
            for path in paths.values() if isinstance(paths, dict) else [paths]:
                if isinstance(path, str) and path and resolve_path(path, base).is_file():
                    found.append(resolve_path(path, base).resolve())
    return found


def _check_self_contained(staging: Path, run_file: str, sets: dict[str, str],
                          variant: str | None) -> None:
    """Evaluate the bundled run file as the launcher will: every file it reads (required
    libraries, data) must be the bundle's own copy."""
    saved = os.environ.get("SEXPGPU_LIBRARY_PATH")
    os.environ["SEXPGPU_LIBRARY_PATH"] = os.pathsep.join(  # as run.sh sets it
        [str(staging / "source"), *([saved] if saved else [])])
    try:
        bundled = compile_file(str(staging / run_file),
                               Selection.from_args([f"{k}={v}" for k, v in sets.items()],
                                                   variant),
                               trace=False)
    finally:
        if saved is None:
            del os.environ["SEXPGPU_LIBRARY_PATH"]
        else:
            os.environ["SEXPGPU_LIBRARY_PATH"] = saved
    plan_base = (staging / run_file).parent
    shipped = Path(importlib.util.find_spec("sexpgpu").origin).parent
    inside = staging.resolve()
    for name in bundled.sources:
        path = Path(name).resolve()
        if not path.is_relative_to(shipped) and not path.is_relative_to(inside):
            raise error(E_BUNDLE_SOURCE, f"the bundled run would read {path}, outside the "
                        "bundle", expected="every required file inside the bundle",
                        actual=f"{path}, required by an absolute path",
                        fix="require it by a path relative to the file that requires it")
    for spec in bundled.experiment.loaders:
        for options in [spec.options, *(stage.options for stage in spec.stages)]:
            paths = options.get("path")
            for raw in paths.values() if isinstance(paths, dict) else [paths]:
                if not isinstance(raw, str) or not raw:
                    continue
                path = resolve_path(raw, plan_base).resolve()
                if not path.is_relative_to(inside) or not path.is_file():
                    raise error(E_BUNDLE_DATA, f"the bundled run would read {raw}, which the "
                                "bundle does not hold", actual=str(path),
                                expected="a file inside the bundle",
                                fix="read the path from a knob (`:path data`) so the "
                                    "bundle can copy it and rebind the knob")


def _requirements() -> list[str]:
    """The package's dependencies pinned to the versions installed here."""
    pinned = []
    for requirement in importlib.metadata.requires("sexpgpu") or []:
        if "extra ==" in requirement:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        pinned.append(f"{name}=={importlib.metadata.version(name)}")
    return sorted(pinned, key=str.lower)


def _hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _free_name(folder: Path, name: str) -> str:
    stem, suffix, n = Path(name).stem, Path(name).suffix, 1
    while (folder / name).exists():
        n += 1
        name = f"{stem}-{n}{suffix}"
    return name


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


LAUNCHER = r"""#!/bin/sh
# Trains the bundled experiment, or resumes it: run this again after a preemption
# (exit code 75) and it continues from the newest checkpoint that verifies.
# SEXPGPU_PYTHON: an interpreter that already has requirements.txt (no venv made).
set -eu
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
py=${SEXPGPU_PYTHON:-}
if [ -z "$py" ]; then
  py=$here/.venv/bin/python
  if [ ! -x "$py" ]; then
    # built aside and renamed, so a preempted install is never mistaken for a done one
    rm -rf "$here/.venv.partial"
    python3 -m venv "$here/.venv.partial"
    if [ -d "$here/wheels" ]; then
      "$here/.venv.partial/bin/python" -m pip install --quiet --no-index \
        --find-links "$here/wheels" -r "$here/requirements.txt"
    else
      "$here/.venv.partial/bin/python" -m pip install --quiet -r "$here/requirements.txt"
    fi
    mv "$here/.venv.partial" "$here/.venv"
  fi
fi
export PYTHONPATH="$here/lib${PYTHONPATH:+:$PYTHONPATH}"
export SEXPGPU_CACHE_DIR="${SEXPGPU_CACHE_DIR:-$here/cache}"
# the run file's modules, as bundled (a library above the run file needs this root)
export SEXPGPU_LIBRARY_PATH="$here/source${SEXPGPU_LIBRARY_PATH:+:$SEXPGPU_LIBRARY_PATH}"
set -- @FLAGS@ --runs "$here/runs" "$@"
if [ -n "$(ls -A "$here/runs" 2>/dev/null)" ]; then
  set -- --resume latest "$@"
fi
exec "$py" -m sexpgpu run "$here/"@FILE@ "$@"
"""
