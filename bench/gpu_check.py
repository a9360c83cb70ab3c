"""The device check of issues 13 and 21, one command on a machine with one NVIDIA GPU and
the cuda extra (`pip install -e '.[cuda,bench]'`), meant to finish in under 8 minutes:

  python bench/gpu_check.py [--steps 200] [--timed 50] [--no-torch] [--json OUT]

1. Every shipped example trains --steps steps with `sexpgpu run` on cuda and on cpu
   (same seed, same batches); the table gives both final losses and the largest
   relative difference of the logged losses, the GPU's launch mode (CUDA graph or
   ordered launches) and matmul path (cuBLAS or tiled), and the bytes a logged step
   moved each way.
2. The MNIST-1D CNN's and the char-GPT's training step, timed over --timed steps
   (synchronised at the end): SexpGPU on cuda, and where torch is importable PyTorch
   eager and torch.compile on the same GPU.
3. Only on a machine with 2 GPUs or more (and mpiexec, mpi4py): the MLP and the
   char-GPT on cuda in one process and in two (`--procs 2`), once with the engine
   chosen as usual (NCCL with the `nccl` extra) and once host-staged
   (SEXPGPU_COLLECTIVE=mpi-host): the collective each used, median step ms and
   all-reduce ms, and the largest relative loss difference from one process. NCCL's
   first run on hardware is this section.

Prints one table; exit 1 when a run fails. This script has not run on a GPU yet (see
docs/devices.md): its first run is the check.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
EXAMPLES = sorted((ROOT / "examples").glob("*.sx"))
DATA = ROOT.parent / "shared" / "data"  # as bench/torch_models.py: ../shared/data
SHAKESPEARE = DATA / "tinyshakespeare.txt"
MNIST1D_NPZ = DATA / "mnist1d.npz"


def example_args(path: Path) -> list[str]:
    if path.stem == "shakespeare-char" and SHAKESPEARE.exists():
        return ["--set", f"data={SHAKESPEARE}"]
    return []


def train(path: Path, device: str, steps: int, runs: Path, extra: tuple[str, ...] = (),
          env: dict[str, str] | None = None, log_every: int = 10) -> dict:
    """One `sexpgpu run` of `steps` steps; its step events and open event."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sexpgpu", "run", str(path), "--device", device,
         "--set", f"steps={steps}", "--log-every", str(log_every),
         "--runs", str(runs / device), *example_args(path), *extra],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:160], "wall_s": wall}
    (run_dir,) = [p for p in (runs / device).iterdir() if p.is_dir()]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    steps_ = {e["step"]: e for e in events if e["event"] == "step"}
    opened = next(e for e in events if e["event"] == "open")
    return {"steps": steps_, "gpu": opened.get("gpu", {}), "wall_s": wall,
            "collective": opened.get("collective")}


def compare(path: Path, steps: int, tmp: Path) -> dict:
    cpu = train(path, "cpu", steps, tmp / path.stem)
    gpu = train(path, "cuda", steps, tmp / path.stem)
    row = {"example": path.stem, "cpu_s": round(cpu["wall_s"], 1),
           "cuda_s": round(gpu["wall_s"], 1)}
    if "error" in cpu or "error" in gpu:
        row["error"] = cpu.get("error") or gpu.get("error")
        return row
    common = sorted(set(cpu["steps"]) & set(gpu["steps"]))
    rel = [abs(gpu["steps"][s]["loss"] - cpu["steps"][s]["loss"])
           / max(abs(cpu["steps"][s]["loss"]), 1e-12) for s in common]
    last = common[-1]
    info = gpu["gpu"]
    row.update(cpu_loss=cpu["steps"][last]["loss"], cuda_loss=gpu["steps"][last]["loss"],
               max_rel=max(rel), first_rel=rel[0], launch=info.get("launch"),
               matmul=info.get("matmul"), launches=info.get("launches_per_step"),
               h2d=gpu["steps"][last].get("h2d_bytes"), d2h=gpu["steps"][last].get("d2h_bytes"),
               device=info.get("name"))
    return row


# -- step timing ---------------------------------------------------------------------

def sexpgpu_ms(example: str, batch: dict, timed: int) -> float:
    from sexpgpu.api import load_program

    path = ROOT / "examples" / example
    selection = {"data": str(SHAKESPEARE)} if "shakespeare" in example else {}
    _, program = load_program(str(path), selection=selection, device="cuda")
    rows = len(batch["y"])
    counter = itertools.count()

    def step():
        i = next(counter)
        ctx = {"step": i, "microstep": i, "microbatches": 1, "epoch": 0, "samples": i * rows,
               "tokens": i * int(batch["y"].size), "stage": 0, "seed": 0}
        return program.train_step([batch], ctx)

    for _ in range(3):  # compiles, then captures the CUDA graph on the second call
        step().read()
    started = time.perf_counter()
    for _ in range(timed):
        out = step()
    out.read()  # waits for the device
    return (time.perf_counter() - started) * 1000.0 / timed


def torch_ms(model: str, batch: dict, timed: int, compiled: bool) -> float:
    import torch
    import torch_models as tm

    x, y = (torch.from_numpy(batch[k]).to("cuda") for k in ("x", "y"))
    step = tm.training_step(model, x, y, compiled, device="cuda")

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(timed):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - started) * 1000.0 / timed


def batches() -> dict[str, tuple[str, dict]]:
    data = np.load(MNIST1D_NPZ, allow_pickle=False)
    cnn = {"x": np.ascontiguousarray(data["x"][:100]), "y": np.ascontiguousarray(data["y"][:100])}
    text = SHAKESPEARE.read_text(encoding="utf-8")
    vocab = {ch: i for i, ch in enumerate(sorted(set(text)))}
    tokens = np.array([vocab[ch] for ch in text[:200_000]], dtype=np.int64)
    rng = np.random.default_rng(1337)
    starts = rng.integers(0, len(tokens) - 65, size=12)
    gpt = {"x": np.stack([tokens[i:i + 64] for i in starts]),
           "y": np.stack([tokens[i + 1:i + 65] for i in starts])}
    return {"cnn": ("mnist1d-cnn.sx", cnn), "gpt": ("shakespeare-char.sx", gpt)}


def timings(timed: int, with_torch: bool) -> list[dict]:
    rows = []
    for model, (example, batch) in batches().items():
        row = {"model": model}
        for name in ("sexpgpu", "torch_eager", "torch_compile"):
            if name != "sexpgpu" and not with_torch:
                continue
            try:
                if name == "sexpgpu":
                    ms = sexpgpu_ms(example, batch, timed)
                else:
                    ms = torch_ms(model, batch, timed, compiled=name == "torch_compile")
                row[name] = round(ms, 3)
            except Exception as exc:  # noqa: BLE001 - shown in the table
                row[name] = f"{type(exc).__name__}: {exc}"[:80]
        rows.append(row)
    return rows


# -- several GPUs ----------------------------------------------------------------------

def gpu_count() -> int:
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.splitlines() if line.startswith("GPU "))


def multi_gpu(steps: int, tmp: Path) -> list[dict]:
    """2-process data-parallel steps against one process, per engine (NCCL as chosen,
    then host-staged), on the MLP and the char-GPT; every step logged."""
    rows = []
    for path in (ROOT / "examples" / "mnist1d-mlp.sx", ROOT / "examples" / "shakespeare-char.sx"):
        base = tmp / "multi" / path.stem
        one = train(path, "cuda", steps, base / "one", log_every=1)
        for label, env in (("auto", {}), ("mpi-host", {"SEXPGPU_COLLECTIVE": "mpi-host"})):
            two = train(path, "cuda", steps, base / label, ("--procs", "2"), env, log_every=1)
            row = {"example": path.stem, "engine": label}
            if "error" in one or "error" in two:
                row["error"] = one.get("error") or two.get("error")
                rows.append(row)
                continue
            common = sorted(set(one["steps"]) & set(two["steps"]))[10:]  # after warm-up
            rel = max(abs(two["steps"][s]["loss"] - one["steps"][s]["loss"])
                      / max(abs(one["steps"][s]["loss"]), 1e-12) for s in common)
            row.update(collective=two["collective"], max_rel=rel,
                       one_ms=float(np.median([one["steps"][s]["step_ms"] for s in common])),
                       two_ms=float(np.median([two["steps"][s]["step_ms"] for s in common])),
                       allreduce_ms=float(np.median([two["steps"][s]["allreduce_ms"]
                                                     for s in common])))
            rows.append(row)
    return rows


def print_multi(rows: list[dict]) -> None:
    print(f"\n{'2 GPUs':<18} {'engine':>9} {'collective':>10} {'1-proc ms':>10} "
          f"{'2-proc ms':>10} {'allreduce ms':>12} {'max rel':>9}")
    for r in rows:
        if "error" in r:
            print(f"{r['example']:<18} {r['engine']:>9} ERROR {r['error']}")
            continue
        print(f"{r['example']:<18} {r['engine']:>9} {r['collective']!s:>10} "
              f"{r['one_ms']:>10.2f} {r['two_ms']:>10.2f} {r['allreduce_ms']:>12.3f} "
              f"{r['max_rel']:>9.2e}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--timed", type=int, default=50)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    try:
        import torch  # noqa: F401

        with_torch = not args.no_torch
    except ImportError:
        with_torch = False
    with tempfile.TemporaryDirectory() as tmp:
        runs = [compare(path, args.steps, Path(tmp)) for path in EXAMPLES]
        multi = multi_gpu(min(args.steps, 100), Path(tmp)) if gpu_count() >= 2 else []
    steps = timings(args.timed, with_torch)
    print(f"{'example':<18} {'cpu loss':>10} {'cuda loss':>10} {'max rel':>9} {'launch':>9} "
          f"{'matmul':>7} {'launches':>8} {'h2d B':>7} {'d2h B':>6} {'cpu s':>6} {'cuda s':>6}")
    for r in runs:
        if "error" in r:
            print(f"{r['example']:<18} ERROR {r['error']}")
            continue
        print(f"{r['example']:<18} {r['cpu_loss']:>10.5f} {r['cuda_loss']:>10.5f} "
              f"{r['max_rel']:>9.2e} {r['launch']!s:>9} {r['matmul']!s:>7} {r['launches']!s:>8} "
              f"{r['h2d']!s:>7} {r['d2h']!s:>6} {r['cpu_s']:>6} {r['cuda_s']:>6}")
    print(f"\n{'step ms':<18} {'sexpgpu':>12} {'torch eager':>14} {'torch.compile':>14}")
    for r in steps:
        print(f"{r['model']:<18} {r.get('sexpgpu', '-')!s:>12} {r.get('torch_eager', '-')!s:>14} "
              f"{r.get('torch_compile', '-')!s:>14}")
    if multi:
        print_multi(multi)
    else:
        print("\n2 GPUs: fewer than 2 here; the data-parallel section did not run")
    if runs and "device" in runs[0]:
        print(f"\ndevice: {runs[0].get('device')}")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "steps": steps,
                                               "multi_gpu": multi}, indent=1))
    return 1 if any("error" in r for r in runs + multi) else 0


if __name__ == "__main__":
    sys.exit(main())
