"""`sexpgpu explain`: render the plan (contract/plan.py) for a person, or as JSON."""

from __future__ import annotations

import sys
from typing import Any

from sexpgpu import humanize, usage
from sexpgpu.atomic import print_json
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import plan_json
from sexpgpu.selection import from_docopt

HELP = """\
Explain what the compiler made of a run file: parameters, optimizer groups and their
hyperparameters (each schedule with its parameters and its value at a few steps), one
training step's ops and FLOPs, memory, data, evals and targets.

Usage:
  sexpgpu explain FILE [--set K=V]... [--variant NAME] [--device DEV] [--precision P]
                  [--json]
  sexpgpu explain (-h | --help)

Options:
  --set K=V        bind knob K to V (repeatable)
  --variant NAME   bind the knobs of a variant the file declares
  --device DEV     cpu or cuda (default: the file's defrun :device); for cuda, also
                   the device memory the run holds (`device_memory`)
  --precision P    f32 or bf16 (default: the file's defrun :precision)
  --json           print the plan as JSON (what a run stores as plan.json)

KEY=VALUE after FILE is the same as --set KEY=VALUE.

Examples:
  sexpgpu explain examples/shakespeare-char.sx
  sexpgpu explain examples/mnist1d-mlp.sx lr=3e-2 --json
"""


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def hyper_text(value: Any) -> str:
    """A hyperparameter as a person reads it: `0.9`, `t`, `5`, or a schedule with its
    arguments, `(optim:cosine :peak 0.001 :final 0.0001 :warmup 100 :steps 2000)`."""
    if isinstance(value, dict) and "schedule" in value:
        args = "".join(f" :{k} {humanize.number(v)}" for k, v in value["params"].items())
        return f"({value['schedule']}{args})"
    return humanize.number(value)


def render(plan: dict[str, Any]) -> str:
    out = [f"file {plan['file']}"]
    if plan["knobs"]:
        out.append("knobs  " + "  ".join(f"{k}={humanize.number(v)}"
                                         for k, v in plan["knobs"].items()))
    params = plan["parameters"]
    out.append(f"\nparameters  {params['total']:,} in {len(params['tensors'])} tensors")
    width = max((len(p["path"]) for p in params["tensors"]), default=4)
    for p in params["tensors"]:
        shape = "(" + " ".join(str(d) for d in p["shape"]) + ")"
        tied = f"  tied: {', '.join(p['tied'])}" if p["tied"] else ""
        out.append(f"  {p['path']:<{width}}  {shape:<16} {p['count']:>12,}  "
                   f"{p['init']['kind']}{tied}")
    out.append("\noptimizer groups" + (f"  (clip global norm {plan['optimizer']['clip']})"
                                        if plan["optimizer"]["clip"] else ""))
    for group in plan["optimizer"]["groups"]:
        hypers = " ".join(f":{k} {hyper_text(v)}" for k, v in group["hyperparameters"].items())
        out.append(f"  {group['select']}: {group['optimizer']} {hypers}")
        for name, value in group["hyperparameters"].items():
            if isinstance(value, dict) and value.get("at"):
                at = ", ".join(f"{k}: {humanize.number(v)}" for k, v in value["at"].items())
                out.append(f"    :{name} at step {at}")
        out.append(f"    {len(group['params'])} tensors, {group['count']:,} parameters, "
                   f"state {', '.join(group['state']) or 'none'}")
    for name, step in plan["step"].items():
        flops = step["flops"]
        out.append(f"\nstep graph {name}: {step['nodes']} ops, {flops['total']:,} FLOPs "
                   f"(matmul {flops['matmul']:,})")
        for section, f in step.get("flops_by_section", {}).items():
            out.append(f"  {section:<9} {f['total']:>16,} FLOPs (matmul {f['matmul']:,})")
        ops = ", ".join(f"{op} {n}" for op, n in sorted(step["ops"].items(),
                                                         key=lambda kv: -kv[1]))
        out.append(f"  ops: {ops}")
    out.append("\ndata")
    for loader in plan["loaders"]:
        indices = plan.get("indices", {}).get(loader["name"], {})
        fields = ", ".join(f"{k} {f['dtype']} ({' '.join(map(str, f['shape']))})"
                           + (f" in {indices[k]['low']}..{indices[k]['high'] - 1}"
                              if k in indices else "")
                           for k, f in plan["fields"].get(loader["name"], {}).items())
        out.append(f"  {loader['name']}: {loader['source']} batch {loader['batch']} "
                   f"{loader['order']}  [{fields}]")
    for ev in plan["evals"]:
        every = f"every {ev['every']} steps" if ev["every"] else "at the end"
        out.append(f"  eval {ev['name']}: loader {ev['loader']}, {every}"
                   + (f", {ev['batches']} batches" if ev["batches"] else ", one full pass"))
    for target in plan["targets"]:
        source = f"  ({target['source']})" if target.get("source") else ""
        out.append(f"  target {target['metric']} {target['op']} "
                   f"{humanize.number(target['value'])}{source}")
    mem = plan["memory"]
    out.append(f"\nmemory  params {_size(mem['params_bytes'])}, grads {_size(mem['grads_bytes'])}"
               f", optimizer state {_size(mem['optimizer_state_bytes'])}, peak activations "
               f"{_size(mem['peak_activation_bytes'])}")
    if "device_memory" in plan:
        out.append(device_memory_line(plan["device_memory"]))
    by = plan.get("memory_by_precision") or {}
    if by:
        run = (plan.get("run") or {}).get("precision", "f32")
        sizes = ", ".join(f"{p} {_size(v['step_buffer_bytes'])}"
                          + (" (this run)" if p == run else "") for p, v in by.items())
        out.append(f"  step buffers (activations, gradients): {sizes}; parameters, "
                   "optimizer state and the gradients it reads stay f32")
    return "\n".join(out) + "\n"


def device_memory_line(need: dict[str, int]) -> str:
    return (f"device memory (cuda) {_size(need['total_bytes'])}: parameters and state "
            f"{_size(need['resident_bytes'])}, buffers {_size(need['buffers_bytes'])}, "
            f"inputs {_size(need['staging_bytes'])}, cuBLAS workspace "
            f"{_size(need['workspace_bytes'])}")


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "explain", argv)
    compiled = compile_file(args["FILE"], from_docopt(args))
    plan = plan_json(compiled)
    run = compiled.experiment.run
    if (run.device if run is not None else "cpu") == "cuda":
        from sexpgpu.runtime.device import device_need  # lowers the graphs, numba-free

        plan = {**plan, "device_memory": device_need(compiled)}
    if args["--json"]:
        print_json(plan)
    else:
        sys.stdout.write(render(plan))
    return 0
