"""Imports flow one way along the pipeline: no module imports, even from inside a
function, a module that imports it back; a function-local import exists only to keep a
heavy dependency off a fast path, and says so in a comment."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"sexpgpu": "sexpgpu", "kernels": "sexpgpu.kernels", "autodiff": "sexpgpu.autodiff"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The project modules an import statement loads."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names if a.name in MODULES)
        return
    base = node.module or ""
    if node.level:
        package = module.split(".")[: None if path.name == "__init__.py" else -1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    for alias in node.names:
        full = f"{base}.{alias.name}"
        yield full if full in MODULES else base


def _imports(module: str, path: Path) -> Iterator[tuple[ast.AST, bool]]:
    """Every import statement of a module, with whether it sits inside a function;
    imports under `if TYPE_CHECKING:` never run and are left out."""
    def walk(node: ast.AST, local: bool) -> Iterator[tuple[ast.AST, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, local
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            else:
                inner = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                yield from walk(child, local or inner)
    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for node, _ in _imports(module, path):
            graph[module].update(t for t in _targets(module, path, node)
                                 if t in MODULES and t != module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_function_local_imports_say_why() -> None:
    silent = []
    for module, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node, local in _imports(module, path):
            here = range(node.lineno - 2, node.end_lineno)  # the line above, and its own
            if local and not any("#" in lines[i] for i in here if i >= 0):
                silent.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not silent, f"function-local imports without a comment saying why: {silent}"
