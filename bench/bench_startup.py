"""Start-up time of `sexpgpu run FILE --set steps=1` (issues 6 and 15): cold (an empty
cache directory, so every kernel is generated and compiled) and warm (the same cache
again), for every example (the char-GPT on a small generated text); `-k gpt` for one.

Run: `pytest bench/bench_startup.py --benchmark-only`. The benchmark times the whole
command; the summary also gives the time to the first `step` event in events.jsonl.
The processes write and read Python's bytecode, as on a user's install (`pip install`
compiles it), whatever PYTHONDONTWRITEBYTECODE says here: without it every process,
each compile worker too, compiled the package's modules from source (~0.3 s); the
package is byte-compiled once before the first round.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHAKESPEARE = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
EXAMPLES = {"gpt": "shakespeare-char.sx", "mlp": "mnist1d-mlp.sx", "logreg": "mnist1d-logreg.sx",
            "cnn": "mnist1d-cnn.sx", "gru": "mnist1d-gru.sx"}
TIMEOUT_S = 900
# the environment of the timed processes: bytecode written and read (see above)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@pytest.fixture(scope="module", autouse=True)
def _bytecode() -> None:
    """The package byte-compiled, as an install leaves it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "sexpgpu", "kernels", "autodiff"],
                   cwd=ROOT, env=ENV, capture_output=True, check=False)


def small_text(path: Path, n_chars: int = 20_000) -> Path:
    """A text file with Tiny Shakespeare's 65-character alphabet (so the example's vocab
    knob fits), drawn at random: big enough for train and val windows, tiny to prepare."""
    if SHAKESPEARE.exists():
        alphabet = sorted(set(SHAKESPEARE.read_text(encoding="utf-8")))
    else:
        alphabet = sorted(set("\n !$&',-.3:;?" + "abcdefghijklmnopqrstuvwxyz"
                              + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(alphabet), size=n_chars - len(alphabet))
    path.write_text("".join(alphabet) + "".join(alphabet[i] for i in picks), encoding="utf-8")
    return path


def run_once(file: Path, cache: Path, runs: Path, sets: list[str]) -> dict[str, Any]:
    """`sexpgpu run FILE --set steps=1 ...` in a fresh process; seconds to the first step
    event and to the end of the command."""
    cmd = [sys.executable, "-m", "sexpgpu", "run", str(file), "--set", "steps=1",
           "--runs", str(runs), "--json"]
    for item in sets:
        cmd += ["--set", item]
    env = {**ENV, "SEXPGPU_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    started = time.time()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    total = time.time() - started
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-6:]
        raise RuntimeError(f"exit {done.returncode}: " + " | ".join(tail))
    first_step = None
    for log in runs.glob("*/events.jsonl"):
        for line in log.read_bytes().splitlines():
            event = orjson.loads(line)
            if event.get("event") == "step":
                first_step = event["time"] - started
                break
    return {"total_s": total, "first_step_s": first_step}


@pytest.mark.parametrize("model", list(EXAMPLES))
@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_startup(benchmark, model: str, cache: str, tmp_path: Path, startup_results) -> None:
    benchmark.group = f"startup {model}"
    file = ROOT / "examples" / EXAMPLES[model]
    sets = [f"data={small_text(tmp_path / 'small.txt')}"] if model == "gpt" else []
    cache_dir = tmp_path / "cache"
    attempts = iter(range(100))
    key = (model, cache)

    def fresh() -> tuple[tuple, dict]:
        # cold: a new empty cache every round; warm: the cache filled by the first run
        n = next(attempts)
        cache_used = tmp_path / f"cache-{n}" if cache == "cold" else cache_dir
        return (file, cache_used, tmp_path / f"runs-{n}", sets), {}

    try:
        if cache == "warm":
            run_once(file, cache_dir, tmp_path / "runs-fill", sets)  # fill the cache
        timings: list[dict[str, Any]] = []
        benchmark.pedantic(lambda *a: timings.append(run_once(*a)), setup=fresh,
                           rounds=1 if cache == "cold" else 3, iterations=1)
    except Exception as exc:  # noqa: BLE001 - reported in the summary, not hidden
        startup_results[key] = {"unavailable": f"{type(exc).__name__}: {exc}"[:400]}
        pytest.skip(f"not available: {startup_results[key]['unavailable']}")
    firsts = sorted(t["first_step_s"] for t in timings if t["first_step_s"] is not None)
    startup_results[key] = {
        "total_s": float(np.median([t["total_s"] for t in timings])),
        "first_step_s": float(np.median(firsts)) if firsts else None, "rounds": len(timings)}
    benchmark.extra_info.update(startup_results[key])
    assert firsts, f"{model}: the run wrote no step event"
