"""`sexpgpu run --device cuda` end to end, in numba's CUDA simulator: the tiny run
trains 5 steps with the CPU's losses and parameters, a run killed mid-way resumes
on the device bit for bit, each step event counts the bytes it moved; and without a
GPU (no simulator) `--device cuda` is a coded diagnostic, exit 1, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest
from cudasim import events, run_args, run_env, run_file, wait_for_checkpoints

from sexpgpu.runtime.checkpoint import list_checkpoints, load_checkpoint

TINY = Path(__file__).parent / "e2e" / "tiny.sx"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


def _args(runs: Path, device: str, *extra: str) -> list[str]:
    return run_args(TINY, runs, device, *extra)


def _run(runs: Path, device: str, cache: str, *extra: str) -> Path:
    return run_file(TINY, runs, device, cache, *extra)


def _final(run_dir: Path) -> dict[str, np.ndarray]:
    (_, path), *_ = reversed(list_checkpoints(run_dir))
    saved = load_checkpoint(path)
    return {**{f"param {k}": v for k, v in saved.params.items()},
            **{f"state {k}": v for k, v in saved.state.items()}}


STEPS = ["--set", "steps=5", "--log-every", "1"]


@pytest.mark.cudasim
def test_cuda_trains_like_the_cpu_and_counts_its_transfers(cache: str, tmp_path: Path) -> None:
    cpu = _run(tmp_path / "cpu", "cpu", cache, *STEPS)
    gpu = _run(tmp_path / "gpu", "cuda", cache, *STEPS)
    cpu_steps, gpu_steps = events(cpu, "step"), events(gpu, "step")
    assert [e["step"] for e in gpu_steps] == [1, 2, 3, 4, 5]
    for a, b in zip(cpu_steps, gpu_steps):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5, abs=1e-6)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-5, abs=1e-6)
    ours, theirs = _final(gpu), _final(cpu)
    assert ours.keys() == theirs.keys()
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)
    (opened,) = events(gpu, "open")
    assert opened["gpu"]["simulator"] is True and opened["gpu"]["launch"] == "launches"
    assert opened["gpu"]["launches_per_step"] > 0
    # each step sends its batch (x: 100 x 8 f32, y: 100 i64, a few counters) in one
    # copy and brings back only the record: loss, lr, grad_norm, calls and two flags
    batch = 100 * 8 * 4 + 100 * 8
    for e in gpu_steps:
        assert batch <= e["h2d_bytes"] <= batch + 3 * 256, e
        assert e["d2h_bytes"] == 8 * 6, e
    assert "h2d_bytes" not in cpu_steps[0]
    # logging every 5 steps: the device is read once, on the step that logs
    sparse = _run(tmp_path / "sparse", "cuda", cache, "--set", "steps=5", "--log-every", "5")
    assert [(e["step"], e["d2h_bytes"]) for e in events(sparse, "step")] == [(1, 48), (5, 48)]
    # four microbatches: the record sums the step's losses on the device
    micro = _run(tmp_path / "micro", "cuda", cache, *STEPS, "--set", "micro=4")
    for a, b in zip(gpu_steps, events(micro, "step")):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5)


@pytest.mark.cudasim
def test_cuda_finite_guard_names_the_step_read_later(cache: str, tmp_path: Path) -> None:
    """The guard's flag is kept on the device and read at the log cadence: a loss that
    went non-finite at step 3 is reported as step 3 when step 5 reads it."""
    done = subprocess.run(_args(tmp_path / "runs", "cuda", "--set", "steps=5", "--set",
                                "poison=1", "--log-every", "5", "--json"),
                          env=run_env(cache, True), capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stderr[-2000:]
    summary = orjson.loads(done.stdout)
    assert summary["error"]["code"] == "E-NONFINITE"
    assert summary["error"]["message"] == "non-finite loss at step 3"


@pytest.mark.cudasim
def test_cuda_resume_after_sigkill_is_bit_identical(cache: str, tmp_path: Path) -> None:
    extra = ["--set", "steps=12", "--checkpoint-every", "3", "--log-every", "1"]
    clean = _run(tmp_path / "clean", "cuda", cache, *extra)
    runs = tmp_path / "killed"
    proc = subprocess.Popen(_args(runs, "cuda", *extra), env=run_env(cache, True),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_checkpoints(runs, proc, 2)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    resumed = subprocess.run(_args(runs, "cuda", *extra, "--resume", "latest"),
                             env=run_env(cache, True), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    opens = events(run_dir, "open")
    assert len(opens) == 2 and 0 < opens[1]["resumed_from"] < 12
    want = {e["step"]: e["loss"] for e in events(clean, "step")}
    got = {e["step"]: e["loss"] for e in events(run_dir, "step")}
    assert max(got) == 12 and all(got[s] == want[s] for s in got)
    ours, theirs = _final(run_dir), _final(clean)
    for name in ours:
        assert np.array_equal(ours[name], theirs[name]), name


def _gpu_here() -> bool:
    from sexpgpu.kernels.cuda_backend import probe

    return os.environ.get("NUMBA_ENABLE_CUDASIM", "") in ("", "0") and probe().usable


@pytest.mark.skipif(_gpu_here(), reason="a usable GPU is present: the run would start")
@pytest.mark.parametrize("how", ["flag", "defrun"])
def test_cuda_without_a_gpu_is_a_coded_error(how: str, cache: str, tmp_path: Path) -> None:
    path = TINY
    args = ["--device", "cuda"]
    if how == "defrun":
        path = tmp_path / "tiny-cuda.sx"
        path.write_text(TINY.read_text().replace(":microbatches micro)",
                                                 ":microbatches micro :device :cuda)"))
        args = []
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "sexpgpu", "run", str(path), *args,
                           "--runs", str(runs)], env=run_env(cache, False),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "error[E-DEVICE-UNAVAILABLE]" in done.stderr
    assert "= fix:" in done.stderr and "Traceback" not in done.stderr
    assert not runs.exists()  # refused before anything was written
