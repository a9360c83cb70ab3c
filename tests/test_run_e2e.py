"""`sexpgpu run` end to end on a compiled run file: microbatches equal one big
batch, a killed or preempted run resumes bit for bit (in f32 and in bf16, whose
checkpoint an f32 run may continue), the finite guard stops a run that goes
non-finite and its last good checkpoint resumes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from sexpgpu.api import load_program
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import plan_json
from sexpgpu.runtime.checkpoint import list_checkpoints, load_checkpoint
from sexpgpu.runtime.events import read_events
from sexpgpu.selection import Selection

TINY = Path(__file__).parent / "e2e" / "tiny.sx"
# long enough that a signal sent at step 250 always lands mid-run, not after the end
STEPS = 3000
RESUME_ARGS = ["--set", f"steps={STEPS}", "--checkpoint-every", "100", "--log-every", "1"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    """One kernel cache for the module: later runs of the same graphs compile nothing."""
    path = str(tmp_path_factory.mktemp("cache"))
    os.environ["SEXPGPU_CACHE_DIR"] = path
    return path


def _run(args: list[str], cache: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "SEXPGPU_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "sexpgpu", "run", str(TINY), *args],
                          env=env, capture_output=True, text=True, timeout=600, **kw)


def _events(run_dir: Path) -> list[dict]:
    """The complete lines of a log the run may still be writing."""
    return read_events(run_dir / "events.jsonl")


def _steps(run_dir: Path) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in _events(run_dir) if e["event"] == "step"}


def _final_params(run_dir: Path) -> dict[str, np.ndarray]:
    """Parameters and optimizer state of the newest checkpoint."""
    (step, path), *_ = reversed(list_checkpoints(run_dir))
    saved = load_checkpoint(path)
    arrays = {f"param {k}": v for k, v in saved.params.items()}
    arrays.update({f"state {k}": v for k, v in saved.state.items()})
    assert step == STEPS and arrays
    return arrays


def _only_run(runs: Path) -> Path:
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir


# -- microbatches ---------------------------------------------------------------


def test_four_microbatches_equal_one_batch(cache_dir: str) -> None:
    _, whole = load_program(str(TINY), {"micro": 1})
    _, parts = load_program(str(TINY), {"micro": 4})
    rng = np.random.default_rng(0)
    for step in range(10):
        x = rng.normal(size=(100, 8)).astype(np.float32)
        y = rng.integers(0, 4, size=100).astype(np.int64)
        ctx = {"step": step, "microstep": 0, "microbatches": 1, "epoch": 0, "samples": 0,
               "tokens": 0, "stage": 0, "seed": 7}
        a = whole.train_step([{"x": x, "y": y}], ctx)
        b = parts.train_step([{"x": x[i:i + 25], "y": y[i:i + 25]} for i in range(0, 100, 25)],
                             {**ctx, "microbatches": 4})
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-6)
    for path, value in whole.params().items():
        np.testing.assert_allclose(parts.params()[path], value, rtol=0, atol=1e-6)


# -- resume ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def uninterrupted(cache_dir: str, tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("clean")
    done = _run([*RESUME_ARGS, "--runs", str(runs)], cache_dir)
    assert done.returncode == 0, done.stderr
    return _only_run(runs)


def _wait_for_step(runs: Path, step: int, proc: subprocess.Popen) -> None:
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        dirs = [p for p in runs.iterdir() if p.is_dir()] if runs.exists() else []
        if dirs and (dirs[0] / "events.jsonl").exists():
            seen = _steps(dirs[0]) if (dirs[0] / "events.jsonl").stat().st_size else {}
            if seen and max(seen) >= step:
                return
        time.sleep(0.05)
    raise AssertionError(f"the run never reached step {step}")


def _interrupted_then_resumed(cache: str, runs: Path, sig: int,
                              extra: tuple[str, ...] = ()) -> tuple[int, Path]:
    env = {**os.environ, "SEXPGPU_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "sexpgpu", "run", str(TINY), *RESUME_ARGS, *extra,
            "--runs", str(runs)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for_step(runs, 250, proc)
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    resumed = _run([*RESUME_ARGS, *extra, "--runs", str(runs), "--resume", "latest"], cache)
    assert resumed.returncode == 0, resumed.stderr
    # the human summary on stderr names the run's final state and step
    assert re.search(rf"done: step {STEPS} of {STEPS} in [\dhms.]+ -> ", resumed.stderr), \
        resumed.stderr
    return proc.returncode, _only_run(runs)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
def test_resume_is_bit_identical(sig: int, uninterrupted: Path, cache_dir: str,
                                 tmp_path: Path) -> None:
    code, run_dir = _interrupted_then_resumed(cache_dir, tmp_path / "runs", sig)
    if sig == signal.SIGTERM:
        assert code == 75
    clean = _steps(uninterrupted)
    resumed = _steps(run_dir)
    assert max(resumed) == STEPS
    opens = [e for e in _events(run_dir) if e["event"] == "open"]
    assert len(opens) == 2 and 0 < opens[1]["resumed_from"] < STEPS  # stopped mid-run
    for step, loss in resumed.items():
        assert loss == clean[step], f"step {step}: {loss} != {clean[step]}"
    ours, theirs = _final_params(run_dir), _final_params(uninterrupted)
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert np.array_equal(ours[name], theirs[name]), name


# -- the finite guard -----------------------------------------------------------


def test_nonfinite_stops_and_last_good_checkpoint_resumes(cache_dir: str,
                                                          tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    bad = _run(["--set", "poison=17", "--runs", str(runs), "--checkpoint-every", "10",
                "--json"], cache_dir)
    assert bad.returncode == 3, bad.stderr
    summary = orjson.loads(bad.stdout)
    assert summary["error"]["code"] == "E-NONFINITE"
    # step 18's update (ctx step 17) poisoned the weights: step 19's loss is the first NaN
    assert summary["error"]["message"] == "non-finite loss at step 19"
    assert "first non-finite: param l1/weight" in summary["error"]["actual"]
    assert summary["step"] == 18
    run_dir = _only_run(runs)
    status = orjson.loads((run_dir / "status.json").read_bytes())
    assert status["state"] == "failed" and status["error"]["code"] == "E-NONFINITE"
    assert status["latest_checkpoint"].endswith("step-000010")
    again = _run(["--set", "poison=17", "--runs", str(runs), "--resume", "latest", "--json"],
                 cache_dir)
    resumed = orjson.loads(again.stdout)
    assert resumed["resumed_from"] == 10
    assert resumed["error"]["message"] == "non-finite loss at step 19"  # deterministic replay


# -- precision ------------------------------------------------------------------


@pytest.fixture(scope="module")
def uninterrupted_bf16(cache_dir: str, tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("clean-bf16")
    done = _run([*RESUME_ARGS, "--precision", "bf16", "--runs", str(runs)], cache_dir)
    assert done.returncode == 0, done.stderr
    return _only_run(runs)


def _estimated_memory(precision: str, micro: int = 1) -> dict:
    """`explain`'s step buffers of tiny.sx in `precision` (its lowering of its own)."""
    selection = Selection({"micro": str(micro)}, run={"precision": precision})
    return plan_json(compile_file(str(TINY), selection))["memory_by_precision"][precision]


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_a_runs_plan_records_its_compiled_step_buffers(precision: str, uninterrupted: Path,
                                                       uninterrupted_bf16: Path) -> None:
    """plan.json holds the run's own precision's step buffers, taken from its compiled
    step, which are `explain`'s estimate for a step without batch bands."""
    run_dir = uninterrupted if precision == "f32" else uninterrupted_bf16
    stored = orjson.loads((run_dir / "plan.json").read_bytes())["plan_json"]
    assert stored["memory_by_precision"] == {precision: _estimated_memory(precision)}


def test_a_plan_records_the_buffers_of_accumulate_and_apply(cache_dir: str) -> None:
    plan, _ = load_program(str(TINY), {"micro": 2})
    memory = plan.plan_json["memory_by_precision"]
    assert memory == {"f32": _estimated_memory("f32", micro=2)}
    assert len(memory["f32"]["by_graph"]) == 2 and memory["f32"]["step_buffer_bytes"] > 0


def test_bf16_resume_after_sigkill_is_bit_identical(uninterrupted_bf16: Path, uninterrupted: Path,
                                                    cache_dir: str, tmp_path: Path) -> None:
    """Checkpoints hold the f32 masters and the f32 optimizer state; the bf16 copies are
    made from them each step, so a killed bf16 run resumes bit for bit."""
    code, run_dir = _interrupted_then_resumed(cache_dir, tmp_path / "runs", signal.SIGKILL,
                                              ("--precision", "bf16"))
    assert code == -signal.SIGKILL
    assert "-bf16-" in run_dir.name and "-bf16-" not in uninterrupted.name
    clean, resumed = _steps(uninterrupted_bf16), _steps(run_dir)
    opens = [e for e in _events(run_dir) if e["event"] == "open"]
    assert len(opens) == 2 and 0 < opens[1]["resumed_from"] < STEPS
    assert opens[1]["plan"]["precision"] == "bf16"
    for step, loss in resumed.items():
        assert loss == clean[step], f"step {step}: {loss} != {clean[step]}"
    ours, theirs = _final_params(run_dir), _final_params(uninterrupted_bf16)
    for name in ours:
        assert ours[name].dtype != np.uint16, name  # masters, not bf16 copies
        assert np.array_equal(ours[name], theirs[name]), name
    # bf16 changes results (so it is in the plan hash and the run's name), a little
    f32 = _steps(uninterrupted)
    assert clean[STEPS] != f32[STEPS] and abs(clean[STEPS] - f32[STEPS]) < 0.05


def test_bf16_checkpoint_continues_in_f32(uninterrupted_bf16: Path, cache_dir: str,
                                          tmp_path: Path) -> None:
    start = uninterrupted_bf16 / "checkpoints" / f"step-{STEPS - 100:06d}"
    runs = tmp_path / "runs"
    done = _run([*RESUME_ARGS, "--runs", str(runs), "--resume", str(start), "--json"],
                cache_dir)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(done.stdout)
    assert summary["resumed_from"] == STEPS - 100 and summary["step"] == STEPS
    run_dir = _only_run(runs)
    assert "-bf16-" not in run_dir.name  # the f32 run's own directory
    warns = [e["message"] for e in _events(run_dir) if e["event"] == "warn"]
    assert any("written in :bf16, in :f32" in w for w in warns), warns
    assert abs(summary["last_loss"] - _steps(uninterrupted_bf16)[STEPS]) < 0.05
    # another plan (a knob changed) is still refused, precision or not
    other = _run([*RESUME_ARGS, "--set", "lr=0.02", "--runs", str(tmp_path / "other"),
                  "--resume", str(start), "--json"], cache_dir)
    assert other.returncode == 1
    assert orjson.loads(other.stdout)["diagnostics"][0]["code"] == "E-RESUME-MISMATCH"


def test_f16_is_refused_at_check(tmp_path: Path) -> None:
    text = TINY.read_text().replace("(defrun :steps steps :seed 7 :microbatches micro)",
                                    "(defrun :steps steps :seed 7 :microbatches micro\n"
                                    "  :precision :f16)")
    f16 = tmp_path / "tiny-f16.sx"
    f16.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    checked = subprocess.run([sys.executable, "-m", "sexpgpu", "check", str(f16), "--json"],
                             env=env, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 1
    (diag,) = orjson.loads(checked.stdout)["diagnostics"]
    assert diag["code"] == "E-PRECISION" and "numba cannot hold float16" in diag["message"]
    assert diag["fix"].startswith("use :bf16")
    assert (diag["span"]["line"], diag["span"]["col"]) == (text.count("\n", 0, text.index(
        "(defrun")) + 1, 1)
