"""`sexpgpu diff A B`: what differs between two run files or two run directories, by
section, in the compiled plans and in the contract forms as read; for two runs, their
results too."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sexpgpu import humanize, usage
from sexpgpu.atomic import print_json, read_json
from sexpgpu.commands.explain import hyper_text
from sexpgpu.commands.syntax import parse
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.forms import head_of, read_forms
from sexpgpu.contract.plan import FREE_OPS, plan_json
from sexpgpu.diagnostics import define_code, error
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.reader import read_all
from sexpgpu.runtime.events import read_events

HELP = """\
Show what differs between two run files, or two runs, by section (knobs, data, model,
objective, optimizer, run) and nothing else: comments and layout are not differences.
For two runs, their results are compared too: final metrics, targets, steps, time and
the CPU thread policy and BLAS each ran with.

Usage:
  sexpgpu diff A B [--json]
  sexpgpu diff (-h | --help)

Options:
  --json   print the differences as one JSON object

A and B are each a run file (compiled with its defaults) or a run directory written
by `sexpgpu run` (runs/<name>/, selection included).

Examples:
  sexpgpu diff examples/mnist1d-mlp.sx my-mlp.sx
  sexpgpu diff runs/mnist1d-mlp-3f2a9c1d runs/mnist1d-mlp-lr=0.03-0b7e44a2
"""

E_DIFF_INPUT = define_code(
    "E-DIFF-INPUT", "not a run file or run directory",
    "`sexpgpu diff A B` compares two run files or two run directories (written by "
    "`sexpgpu run`, holding plan.json). A path that is neither is this error.",
)

SECTIONS = ("knobs", "data", "model", "objective", "optimizer", "run")
# contract form head -> section; requires and helper functions count as model
FORM_SECTIONS = {
    "defknob": "knobs", "defvariant": "knobs", "defsweep": "knobs",
    "defloader": "data", "defmodel": "model", "defobjective": "objective",
    "defevaluate": "objective", "optimizer": "optimizer",
    "defeval": "run", "deftarget": "run", "defrun": "run",
}
# plan.json key -> section (memory and the selection follow from these, so are left out)
PLAN_SECTIONS = {
    "knobs": "knobs", "loaders": "data", "fields": "data", "indices": "data",
    "parameters": "model",
    "step": "objective", "evaluate": "objective", "optimizer": "optimizer",
    "evals": "run", "targets": "run", "run": "run",
}
# list items known by a name rather than a position
LIST_KEYS = ("path", "name", "metric", "select")


@dataclass
class Side:
    """One side of the comparison: the compiled plan and the run file's text."""

    label: str
    plan: dict[str, Any]
    text: str
    file: str
    results: dict[str, Any] | None = None  # a run directory's outcome (results_of)


def load(path: str) -> Side:
    p = Path(path)
    if p.is_dir():
        stored = p / "plan.json"
        if not stored.is_file():
            raise error(E_DIFF_INPUT, f"{path} is not a run directory",
                        expected="a directory written by `sexpgpu run` (with plan.json)",
                        actual=f"{path} has no plan.json", fix="pass a run file or runs/<slug>")
        data = orjson.loads(stored.read_bytes())
        file = data["file"]  # source/ holds it by its name (files beside it by relative path)
        text = (p / "source" / Path(file).name).read_text(encoding="utf-8")
        return Side(path, data["plan_json"], text, file, results_of(p))
    if not p.exists():
        raise error(E_DIFF_INPUT, f"{path} does not exist",
                    expected="a run file or a run directory", actual="no such path",
                    fix="check the path")
    text, _ = read_forms(path)
    return Side(path, plan_json(compile_file(path)), text, path)


def differences(a: Any, b: Any, path: str) -> list[dict[str, Any]]:
    """Where two JSON values differ, by dotted path; items of lists of named objects are
    matched by name, and an object only one side has is one difference, not many."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[dict[str, Any]] = []
        for key in [*a, *(k for k in b if k not in a)]:
            out += differences(a.get(key), b.get(key), f"{path}.{key}")
        return out
    key = _list_key(a, b)
    if key is not None:
        left, right = {v[key]: v for v in a}, {v[key]: v for v in b}
        out = []
        for name in [*left, *(n for n in right if n not in left)]:
            out += differences(left.get(name), right.get(name), f"{path}[{name}]")
        return out
    return [] if a == b else [{"path": path, "a": a, "b": b}]


def _list_key(a: Any, b: Any) -> str | None:
    if not (isinstance(a, list) and isinstance(b, list)):
        return None
    items = [*a, *b]
    if not items or not all(isinstance(v, dict) for v in items):
        return None
    return next((k for k in LIST_KEYS if all(k in v for v in items)), None)


def comparable(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan less what follows from something compared already. A graph is compared
    by its FLOPs and its arithmetic ops: node counts, data movement and constants
    (`full`) and the activation peak move when a constant merges with another (lr 1.0
    vs 0.01), which is no difference of the computation. A schedule is compared by its
    arguments, its values only when it has none."""
    out = dict(plan)
    for key in ("step", "evaluate"):
        graphs = plan.get(key) or {}
        out[key] = {name: {"flops": g.get("flops"),
                           "ops": {op: n for op, n in (g.get("ops") or {}).items()
                                   if op not in FREE_OPS}}
                    for name, g in graphs.items()}
    # a schedule's values follow from its arguments: compared only when it has none
    optimizer = dict(plan.get("optimizer") or {})
    groups = []
    for group in optimizer.get("groups") or []:
        hypers = {k: {x: y for x, y in v.items() if not (x == "at" and v.get("params"))}
                  if isinstance(v, dict) and "schedule" in v else v
                  for k, v in group.get("hyperparameters", {}).items()}
        groups.append({**group, "hyperparameters": hypers})
    if optimizer:
        out["optimizer"] = {**optimizer, "groups": groups}
    return out


def plan_changes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    changes: dict[str, list[dict[str, Any]]] = {s: [] for s in SECTIONS}
    a, b = comparable(a), comparable(b)
    for key, section in PLAN_SECTIONS.items():
        changes[section] += differences(a.get(key), b.get(key), key)
    return changes


def results_of(run_dir: Path) -> dict[str, Any]:
    """What a run came to, from status.json and its close event: state, steps, time,
    final metrics (the last loss and the last eval) and targets."""
    status = read_json(run_dir / "status.json") if (run_dir / "status.json").is_file() else {}
    closed: dict[str, Any] = {}
    threads = None
    if (run_dir / "events.jsonl").is_file():
        for event in read_events(run_dir / "events.jsonl"):
            if event.get("event") == "close":
                closed = event.get("summary") or {}
            elif event.get("event") == "open":
                threads = event.get("threads")  # the last opening's (a resume's)
    elapsed = closed.get("elapsed_s")
    if elapsed is None and status.get("started") and status.get("updated"):
        elapsed = round(status["updated"] - status["started"], 3)
    metrics = {"loss": status.get("last_loss", closed.get("last_loss"))}
    last_eval = status.get("last_eval") or closed.get("last_eval") or {}
    metrics.update({k: v for k, v in last_eval.items() if k != "step"})
    return {"state": status.get("state", closed.get("state")),
            "step": status.get("step", closed.get("step")),
            "steps": status.get("steps", closed.get("steps")), "time_s": elapsed,
            "metrics": {k: v for k, v in metrics.items() if v is not None},
            "targets": status.get("targets") or closed.get("targets") or [],
            "targets_met": closed.get("targets_met"), "threads": threads}


def compare_results(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two runs' outcomes side by side: every metric either has (with b - a), every
    target (actual and met on each side), state, steps and time."""
    names = [*a["metrics"], *(m for m in b["metrics"] if m not in a["metrics"])]
    metrics = []
    for name in names:
        va, vb = a["metrics"].get(name), b["metrics"].get(name)
        delta = vb - va if isinstance(va, (int, float)) and isinstance(vb, (int, float)) \
            else None
        metrics.append({"name": name, "a": va, "b": vb, "delta": delta})
    targets = []
    keyed = {(t["metric"], t["op"], t["value"]): t for t in b["targets"]}
    for t in a["targets"]:
        other = keyed.pop((t["metric"], t["op"], t["value"]), {})
        targets.append({"metric": t["metric"], "op": t["op"], "value": t["value"],
                        "a": {"actual": t.get("actual"), "met": t.get("met")},
                        "b": {"actual": other.get("actual"), "met": other.get("met")}})
    for t in keyed.values():
        targets.append({"metric": t["metric"], "op": t["op"], "value": t["value"],
                        "a": {"actual": None, "met": None},
                        "b": {"actual": t.get("actual"), "met": t.get("met")}})
    return {"a": a, "b": b, "metrics": metrics, "targets": targets}


def contract_forms(side: Side) -> dict[str, tuple[str, str, str]]:
    """`head name` -> (section, printed form for comparing, source text for showing)."""
    forms = read_all(side.text, side.file)
    nodes = [n for n in parse(side.text) if not n.is_comment]
    out: dict[str, tuple[str, str, str]] = {}
    for form, node in zip(forms, nodes):
        head = head_of(form) or "form"
        named = node.forms()
        name = named[1].text.lower() if head != "optimizer" and len(named) > 1 else ""
        key = f"{head} {name}".strip()
        while key in out:  # e.g. several requires: keep each
            key += "'"
        shown = " ".join(side.text[node.start:node.end].split())
        out[key] = (FORM_SECTIONS.get(head, "model"), prin1_to_string(form), shown)
    return out


def form_changes(a: Side, b: Side) -> dict[str, list[dict[str, Any]]]:
    changes: dict[str, list[dict[str, Any]]] = {s: [] for s in SECTIONS}
    fa, fb = contract_forms(a), contract_forms(b)
    for key in [*fa, *(k for k in fb if k not in fa)]:
        left, right = fa.get(key), fb.get(key)
        if left is not None and right is not None and left[1] == right[1]:
            continue
        section = (left or right)[0]  # type: ignore[index]
        changes[section].append({"form": key, "a": left[2] if left else None,
                                 "b": right[2] if right else None})
    return changes


def compare(a: Side, b: Side) -> dict[str, Any]:
    plans, forms = plan_changes(a.plan, b.plan), form_changes(a, b)
    sections = {s: {"plan": plans[s], "forms": forms[s]} for s in SECTIONS}
    same = not any(v["plan"] or v["forms"] for v in sections.values())
    results = (compare_results(a.results, b.results)
               if a.results is not None and b.results is not None else None)
    return {"ok": True, "a": a.label, "b": b.label, "same": same, "sections": sections,
            "results": results}


def _short(value: Any, width: int = 90) -> str:
    if value is None:
        text = "(absent)"
    elif isinstance(value, dict) and "schedule" in value:
        text = hyper_text(value)
    elif isinstance(value, (dict, list)):
        text = orjson.dumps(value).decode()
    elif isinstance(value, (bool, int, float)):
        text = humanize.number(value)
    else:
        text = str(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def threads_text(threads: dict[str, Any] | None) -> str:
    """A run's thread policy in a few words: `auto (up to 2), BLAS 1, numba 2`.
    Runs before the one thread pool recorded the policy's count as `blas_threads`."""
    if not threads:
        return "(not recorded)"
    count = threads.get("threads", threads["blas_threads"])
    policy = f"up to {count}" if threads["policy"] == "auto" else f"{count}"
    blas = threads["blas_threads"] if "threads" in threads else "shared"
    text = f"{threads['policy']} ({policy}), BLAS {blas}, numba {threads['numba_threads']}"
    # recorded since kernels/fpmode.py (runs before it kept subnormals) and
    # kernels/vectorwidth.py (runs before it had LLVM's choice)
    text += f", denormals {threads['denormals']}" if "denormals" in threads else ""
    return text + (f", loops {threads['loop_vectors']}" if "loop_vectors" in threads else "")


def render_results(results: dict[str, Any]) -> list[str]:
    a, b = results["a"], results["b"]

    def took(side: dict[str, Any]) -> str:
        return humanize.duration(side["time_s"]) if side["time_s"] is not None else "-"

    out = ["results",
           f"  state: {a['state']} -> {b['state']}",
           f"  steps: {a['step']} of {a['steps']} -> {b['step']} of {b['steps']}",
           f"  time: {took(a)} -> {took(b)}"]
    if a.get("threads") or b.get("threads"):
        mark = "" if a.get("threads") == b.get("threads") else "  (differ)"
        out.append(f"  threads: {threads_text(a.get('threads'))} -> "
                   f"{threads_text(b.get('threads'))}{mark}")
        both = (a.get("threads"), b.get("threads"))
        for key in ("sgemm", "blas"):
            if all(both) and both[0].get(key) != both[1].get(key):
                out.append(f"  {key}: {both[0].get(key, '(not recorded)')} -> "
                           f"{both[1].get(key, '(not recorded)')}")
    for m in results["metrics"]:
        delta = f"  ({'+' if m['delta'] >= 0 else ''}{humanize.number(m['delta'])})" \
            if m["delta"] is not None else ""
        out.append(f"  {m['name']}: {humanize.number(m['a'])} -> {humanize.number(m['b'])}"
                   f"{delta}")
    for t in results["targets"]:
        def met(side: dict[str, Any]) -> str:
            if side["met"] is None:
                return humanize.number(side["actual"])
            return f"{humanize.number(side['actual'])} {'met' if side['met'] else 'NOT met'}"
        out.append(f"  target {t['metric']} {t['op']} {humanize.number(t['value'])}: "
                   f"{met(t['a'])} -> {met(t['b'])}")
    return out


def render(result: dict[str, Any]) -> str:
    results = render_results(result["results"]) if result.get("results") else []
    if result["same"]:
        head = f"no differences between {result['a']} and {result['b']}"
        return "\n".join([head + (" (plans and files)" if results else ""), *results]) + "\n"
    out = [f"--- {result['a']}", f"+++ {result['b']}"]
    for section, found in result["sections"].items():
        if not (found["plan"] or found["forms"]):
            continue
        out.append(section)
        for change in found["forms"]:
            out.append(f"  form {change['form']}")
            out.append(f"    - {_short(change['a'])}")
            out.append(f"    + {_short(change['b'])}")
        for change in found["plan"]:
            out.append(f"  {change['path']}: {_short(change['a'], 60)} -> "
                       f"{_short(change['b'], 60)}")
    return "\n".join(out + results) + "\n"


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "diff", argv)
    result = compare(load(args["A"]), load(args["B"]))
    if args["--json"]:
        print_json(result)
    else:
        sys.stdout.write(render(result))
    return 0
