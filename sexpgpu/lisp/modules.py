"""`require`: load a module once per interpreter and give its names a prefix.

A module's top-level definitions (any `(defXXX name ...)`) are renamed to
`CANONICAL:NAME` when it loads; `(require "m" :as p)` makes `p:name` resolve to them.
Without `:as`, the definitions are also reachable unprefixed. Aliases are
interpreter-wide. Relative names resolve against the requiring file; `sexpgpu/x`
resolves to the package's `sexpgpu/stdlib/x.sx`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sexpgpu import env
from sexpgpu.diagnostics import Note, SexpError, Span, error
from sexpgpu.lisp.errors import E_REQUIRE
from sexpgpu.lisp.formcache import read_cached
from sexpgpu.lisp.forms import args_of, syntax_error
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.registry import special
from sexpgpu.lisp.types import Cons, Symbol, T, intern
from sexpgpu.suggest import nearest

STDLIB = Path(__file__).resolve().parent.parent / "stdlib"


class RequireRefused(Exception):
    """A module path outside the directories `require` may read, or not a regular file."""


def library_roots() -> list[Path]:
    """The standard modules and the declared library roots (SEXPGPU_LIBRARY_PATH)."""
    return [STDLIB, *env.library_path()]


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root.resolve())
        return True
    except ValueError:
        return False


def default_resolver(name: str, from_file: str | None,
                     root: Path | None = None) -> tuple[str, str]:
    """(text, file) of module `name`; raises FileNotFoundError when there is none and
    RequireRefused when the file is outside `root` (the run file's directory tree),
    the standard modules and the library roots, or is not a regular file."""
    if name.startswith("sexpgpu/"):
        path = (STDLIB / (name[len("sexpgpu/"):] + ".sx")).resolve()
    else:
        base = Path(from_file).parent if from_file and not from_file.startswith("<") \
            else Path.cwd()
        path = (base / name).resolve()
        if not path.suffix:
            path = path.with_suffix(".sx")
    allowed = [STDLIB] if name.startswith("sexpgpu/") else \
        [*([root] if root is not None else []), *library_roots()]
    if not any(_inside(path, r) for r in allowed):
        raise RequireRefused("outside the directories it may read")
    if not path.exists():
        raise FileNotFoundError(str(path))
    if not stat.S_ISREG(path.stat().st_mode):
        raise RequireRefused("not a regular file")
    with open(path, encoding="utf-8") as fh:
        return fh.read(), str(path)


def canonical_name(name: str, file: str) -> str:
    if name.startswith("sexpgpu/"):
        return name.upper()
    return os.path.splitext(os.path.basename(file))[0].upper()


class ModuleTable:
    def __init__(self, interp: Any):
        self.interp = interp
        self.loaded: dict[str, str] = {}  # file -> canonical prefix
        self.loading: list[tuple[str, Span | None]] = []
        self.aliases: dict[str, str] = {}  # alias -> canonical prefix
        self._cache: dict[Symbol, Symbol | None] = {}
        self.roots: dict[str, Path | None] = {}  # module file -> the tree it may require from

    def _root_of(self, from_file: str | None) -> Path | None:
        """The directory tree a file may require from: a module keeps the tree of the
        file that loaded it; the run file (or a string, from the working directory)
        its own directory."""
        if from_file in self.roots:
            return self.roots[from_file]
        if from_file and not from_file.startswith("<"):
            return Path(from_file).resolve().parent
        return Path.cwd().resolve()

    def resolve(self, sym: Symbol) -> Symbol | None:
        """The module definition `prefix:name` refers to, if the prefix is an alias."""
        name = sym.name
        if ":" not in name or sym.is_keyword or not self.aliases:
            return None
        prefix, _, rest = name.partition(":")
        canonical = self.aliases.get(prefix)
        if canonical is None:
            return None
        return intern(f"{canonical}:{rest}")

    def nearest_definition(self, sym: Symbol, defined: Iterable[Symbol]) -> str | None:
        """For `alias:name` naming nothing: the module's definition it most likely
        means, as the user writes it. A name the module defines with a suffix comes
        first (`nn:conv1d` -> `nn:conv1d-layer`: the builtin `conv1d` is the function,
        the module's the layer), then the nearest in spelling."""
        prefix, _, rest = sym.name.partition(":")
        canonical = self.aliases.get(prefix)
        if canonical is None or not rest:
            return None
        own = [s.name[len(canonical) + 1:] for s in defined
               if s.name.startswith(canonical + ":")]
        longer = sorted(n for n in own if n.startswith(rest + "-"))
        hint = longer[0] if longer else nearest(rest, own)
        return f"{prefix}:{hint}".lower() if hint else None

    def require(self, name: str, alias: str | None, span: Span | None) -> None:
        from_file = span.file if span else None
        root = self._root_of(from_file)
        try:
            resolver = self.interp.module_resolver
            text, file = resolver(name, from_file, root) if resolver is default_resolver \
                else resolver(name, from_file)  # a host's resolver decides for itself
        except RequireRefused as why:
            raise error(E_REQUIRE, f'module "{name}" is {why}: require reads only '
                        "files under the run file's directory, the standard modules and "
                        "SEXPGPU_LIBRARY_PATH", span,
                        fix="move the module next to the run file, or add its directory "
                            "to SEXPGPU_LIBRARY_PATH (see docs/require.md)") from None
        except (OSError, FileNotFoundError, UnicodeDecodeError):
            raise error(E_REQUIRE, f'module "{name}" not found', span,
                        fix='check the name: "./file.sx" is relative to this file, '
                            '"sexpgpu/nn" is the standard library') from None
        for loading_file, _ in self.loading:
            if loading_file == file:
                chain = " -> ".join(os.path.basename(f) for f, _ in self.loading)
                notes = [Note("required here", s) for _, s in self.loading if s]
                raise error(E_REQUIRE, f'modules require each other in a cycle: {chain} -> '
                            f'{os.path.basename(file)}', span, notes=notes,
                            fix="move the shared definitions into a third module")
        canonical = self.loaded.get(file)
        if canonical is None:
            canonical = canonical_name(name, file)
            self.roots[file] = root
            self._load(text, file, canonical, span)
            self.loaded[file] = canonical
        if alias is not None:
            self.aliases[alias] = canonical
        else:
            self._import_unprefixed(canonical)

    def _load(self, text: str, file: str, canonical: str, span: Span | None) -> None:
        interp = self.interp
        interp.sources[file] = text
        standard = file.startswith(str(STDLIB))
        if standard:
            interp.library_files.add(file)
        forms = read_cached(text, file) if standard else read_all(text, file)
        renames = {}
        for form in forms:
            if type(form) is Cons and isinstance(form.car, Symbol) \
                    and form.car.name.startswith("DEF") and type(form.cdr) is Cons \
                    and type(form.cdr.car) is Symbol:
                defined = form.cdr.car
                renames[defined] = intern(f"{canonical}:{defined.name}")
        forms = [_rename(f, renames) for f in forms]
        self.loading.append((file, span))
        saved = interp.defining_standard
        interp.defining_standard = file in interp.library_files
        try:
            for form in forms:
                interp.eval(form, None)
        except SexpError as exc:
            exc.pending = f"in module {canonical.lower()}, required here"
            raise
        finally:
            interp.defining_standard = saved
            self.loading.pop()
        self.exports = getattr(self, "exports", {})
        self.exports[canonical] = renames

    def _import_unprefixed(self, canonical: str) -> None:
        interp = self.interp
        for plain, qualified in getattr(self, "exports", {}).get(canonical, {}).items():
            for table in (interp.functions, interp.macros, interp.globals):
                if qualified in table:
                    table[plain] = table[qualified]
            if qualified in interp.specials:
                interp.specials.add(plain)


def _rename(form: Any, renames: dict) -> Any:
    if type(form) is Symbol:
        return renames.get(form, form)
    if type(form) is Cons:
        car = _rename(form.car, renames)
        cdr = _rename(form.cdr, renames)
        if car is form.car and cdr is form.cdr:
            return form
        return Cons(car, cdr, form.span)
    return form


@special("REQUIRE")
def sf_require(interp, form, env):
    """(require "name" [:as prefix])"""
    items = args_of(form, 1, 3, '(require "module" :as prefix)')
    name = interp.eval1(items[0], env)
    alias = None
    if len(items) == 3:
        if getattr(items[1], "name", None) != "AS" or type(items[2]) is not Symbol:
            raise syntax_error(form, "malformed require", 'write (require "module" :as prefix)')
        alias = items[2].name
    elif len(items) == 2:
        raise syntax_error(form, "malformed require", 'write (require "module" :as prefix)')
    if type(name) is Symbol:
        name = name.name.lower()
    if type(name) is not str:
        raise syntax_error(form, "require needs a module name string",
                           'write (require "sexpgpu/nn" :as nn)')
    interp.modules.require(name, alias, form.span)
    return T

