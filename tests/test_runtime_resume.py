"""Stopping and resuming real processes: SIGKILL, SIGTERM, and a status.json poller.

Each run is `python -m sexpgpu.runtime.numpy_program` (the numpy test double on the
demo plan) in a subprocess; the reference is the same plan run uninterrupted.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime.events import last_by_step, read_events
from sexpgpu.runtime.numpy_program import main as train_demo
from sexpgpu.runtime.schema import errors, load_schema

ROOT = Path(__file__).resolve().parents[1]
STEPS = 60


def _start(runs: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "sexpgpu.runtime.numpy_program", str(runs),
           "--steps", str(STEPS), *extra]
    return subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE)


def _run_dir(runs: Path) -> Path:
    return next(p for p in runs.iterdir() if p.is_dir())


def _logged_step(runs: Path) -> int:
    """The newest step in events.jsonl so far (0 before the first)."""
    try:
        steps = last_by_step(read_events(_run_dir(runs) / "events.jsonl"))
    except (StopIteration, FileNotFoundError):
        return 0
    return max(steps, default=0)


def _wait_for_step(proc: subprocess.Popen, runs: Path, step: int, on_poll=None) -> None:
    deadline = time.time() + 60
    while _logged_step(runs) < step:
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.time() < deadline
        if on_poll:
            on_poll()
        time.sleep(0.005)


def _reference(tmp_path: Path) -> tuple[dict, dict]:
    runs = tmp_path / "reference"
    assert train_demo([str(runs), "--steps", str(STEPS)]) == 0
    run_dir = _run_dir(runs)
    final = ckpt.load_checkpoint(run_dir / "checkpoints" / ckpt.checkpoint_name(STEPS))
    return last_by_step(read_events(run_dir / "events.jsonl")), final.params


def _assert_same_as_reference(runs: Path, reference: tuple[dict, dict]) -> None:
    ref_steps, ref_params = reference
    run_dir = _run_dir(runs)
    steps = last_by_step(read_events(run_dir / "events.jsonl"))
    assert sorted(steps) == sorted(ref_steps) == list(range(1, STEPS + 1))
    for step, event in steps.items():
        assert event["loss"] == ref_steps[step]["loss"], f"step {step} differs"
    final = ckpt.load_checkpoint(run_dir / "checkpoints" / ckpt.checkpoint_name(STEPS))
    for name, value in ref_params.items():
        np.testing.assert_array_equal(final.params[name], value)


def test_sigkill_then_resume_latest_is_bit_identical(tmp_path):
    reference = _reference(tmp_path)
    runs = tmp_path / "runs"
    proc = _start(runs, "--sleep", "0.02")
    _wait_for_step(proc, runs, 25)
    proc.kill()
    proc.wait()
    resumed_from = ckpt.latest_valid(_run_dir(runs))
    assert resumed_from is not None and 20 <= ckpt.read_meta(resumed_from)["step"] < STEPS
    proc = _start(runs, "--resume", "latest")
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    _assert_same_as_reference(runs, reference)


def test_sigterm_checkpoints_exits_75_and_resumes_identically(tmp_path):
    reference = _reference(tmp_path)
    runs = tmp_path / "runs"
    reads, bad = [0], []

    def poll_status() -> None:  # a poller must never see a torn status.json
        path = _run_dir(runs) / "status.json" if runs.exists() and any(runs.iterdir()) else None
        if path is not None and path.exists():
            data = path.read_bytes()
            try:
                status = orjson.loads(data)
                reads[0] += 1
                bad.extend(errors(status, load_schema("status")))
            except orjson.JSONDecodeError:
                bad.append(data)

    proc = _start(runs, "--sleep", "0.02", "--status-interval", "0")  # rewrite every step
    _wait_for_step(proc, runs, 15, on_poll=poll_status)
    proc.send_signal(signal.SIGTERM)
    while proc.poll() is None:
        poll_status()
    assert proc.returncode == 75, proc.stderr.read().decode()
    assert bad == [] and reads[0] > 20

    run_dir = _run_dir(runs)
    status = orjson.loads((run_dir / "status.json").read_bytes())
    stopped_at = status["step"]
    assert status["state"] == "preempted" and stopped_at < STEPS
    assert status["latest_checkpoint"] == f"checkpoints/{ckpt.checkpoint_name(stopped_at)}"
    close = read_events(run_dir / "events.jsonl")[-1]
    assert close["event"] == "close" and close["status"] == "preempted"

    proc = _start(runs, "--resume", "latest")
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    _assert_same_as_reference(runs, reference)
    schema = load_schema("events")
    assert [e for e in read_events(run_dir / "events.jsonl") if errors(e, schema)] == []
