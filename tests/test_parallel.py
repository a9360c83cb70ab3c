"""Data-parallel runs (`--procs N` over MPI): two processes give one process's losses
and parameters; the ranks' shards are exactly its batch (with dropout and a shuffled
loader); a killed rank ends the job with E-RANK-LOST, SIGTERM with 75, and both
resume; `--diag` reports rank 0's sample; the refusals (a batch that does not
divide, another N, no MPI) are coded."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from cmd_helpers import sexpgpu

from sexpgpu.parallel.collective import Single, buckets
from sexpgpu.runtime.checkpoint import list_checkpoints, load_checkpoint
from sexpgpu.runtime.events import read_events
from sexpgpu.runtime.schema import errors, load_schema

MLP = Path(__file__).parent / "parallel" / "mlp.sx"
ROOT = Path(__file__).resolve().parent.parent
HAVE_MPI = shutil.which("mpiexec") is not None and __import__("importlib").util.find_spec(
    "mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpiexec and the mpi4py package "
                               "(apt-get install openmpi-bin; pip install 'sexpgpu[mpi]')")
LONG = 1500  # steps of the fault runs: long enough that a signal lands mid-run


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


def _env(cache: str) -> dict[str, str]:
    return {**os.environ, "SEXPGPU_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}


def _args(runs: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sexpgpu", "run", str(MLP), "--runs", str(runs),
            "--log-every", "1", *extra]


def _run(cache: str, runs: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(_args(runs, *extra), env=_env(cache), capture_output=True,
                          text=True, timeout=600)


def _only_run(runs: Path) -> Path:
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir


def _events(run_dir: Path) -> list[dict]:
    """The complete lines of a log the run may still be writing."""
    return read_events(run_dir / "events.jsonl")


def _losses(run_dir: Path) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in _events(run_dir) if e["event"] == "step"}


def _params(run_dir: Path) -> dict[str, np.ndarray]:
    (_, path), *_ = reversed(list_checkpoints(run_dir))
    return load_checkpoint(path).params


def _status(run_dir: Path) -> dict:
    return orjson.loads((run_dir / "status.json").read_bytes())


def _close(a: dict[int, float], b: dict[int, float], rtol: float) -> None:
    assert a.keys() == b.keys()
    worst = max(abs(a[k] - b[k]) / abs(b[k]) for k in a)
    assert worst <= rtol, worst


# -- without MPI -----------------------------------------------------------------------


def test_buckets_keep_order_and_size():
    arrays = [np.zeros(n, np.float32) for n in (10, 10, 30, 5, 100)]
    assert buckets(arrays, limit=80) == [[0, 1], [2], [3], [4]]
    assert buckets(arrays, limit=1 << 20) == [[0, 1, 2, 3, 4]]
    mixed = [np.zeros(2, np.float32), np.zeros(2, np.float64)]
    assert buckets(mixed) == [[0], [1]]  # one dtype per bucket


def test_one_process_world_is_the_identity():
    world = Single()
    arrays = [np.arange(3.0)]
    world.allreduce_sum(arrays)
    assert arrays[0].tolist() == [0.0, 1.0, 2.0]
    assert world.mean({"loss": 2.0}) == {"loss": 2.0} and world.gather(5) == [5]


def test_a_batch_that_does_not_divide_is_refused_at_check(capsys, tmp_path):
    bad = tmp_path / "three.sx"
    bad.write_text(MLP.read_text().replace("(defrun :steps steps", "(defrun :procs 3 :steps steps"))
    code, _, err = sexpgpu(capsys, "check", str(bad))
    assert code == 1 and "E-RUN" in err and "3 processes do not divide the batch 100" in err
    code, _, err = sexpgpu(capsys, "run", str(MLP), "--procs", "3", "--runs", str(tmp_path))
    assert code == 1 and "3 processes do not divide the batch 100" in err
    assert not (tmp_path / "runs").exists()  # refused before anything was launched


def test_no_mpiexec_is_a_coded_error(capsys, tmp_path, monkeypatch):
    from sexpgpu.parallel import launch

    monkeypatch.setattr(launch.shutil, "which", lambda name: None)
    code, _, err = sexpgpu(capsys, "run", str(MLP), "--procs", "2", "--runs", str(tmp_path))
    assert code == 1 and "E-PROCS" in err and "mpiexec is not installed" in err


def test_procs_must_agree_with_the_launcher(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    code, _, err = sexpgpu(capsys, "run", str(MLP), "--procs", "4", "--runs", str(tmp_path))
    assert code == 1 and "E-PROCS" in err and "--procs 4 under a launcher that started 2" in err


MPI_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "PMIX_RANK")


def test_srun_tasks_without_mpi_ranks_are_refused(capsys, tmp_path, monkeypatch):
    # `srun -n 2` without --mpi=pmix: Slurm's variables, none of MPI's
    for name in MPI_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in (("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2"), ("SLURM_STEP_ID", "0"),
                        ("SLURM_STEP_NUM_TASKS", "2")):
        monkeypatch.setenv(name, value)
    code, _, err = sexpgpu(capsys, "run", str(MLP), "--runs", str(tmp_path / "runs"))
    assert code == 1 and "E-PROCS" in err and "Traceback" not in err
    assert "srun started 2 tasks, but MPI did not give them ranks" in err
    assert "srun --mpi=pmix -n 2" in err
    assert not (tmp_path / "runs").exists()


def test_a_batch_scripts_own_shell_is_one_process(monkeypatch):
    from sexpgpu import env

    # sbatch --ntasks 4: the script itself sees the allocation's SLURM_NTASKS
    for name in ("SLURM_STEP_NUM_TASKS", "SLURM_STEP_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_NTASKS", "4")
    monkeypatch.setenv("SLURM_PROCID", "0")
    assert env.slurm_step_tasks() is None
    monkeypatch.setenv("SLURM_STEP_ID", "3")  # inside an srun step
    assert env.slurm_step_tasks() == 4
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "1")
    assert env.slurm_step_tasks() == 1


# -- two processes -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(cache: str, tmp_path_factory) -> tuple[Path, Path]:
    """The MLP for 200 steps in one process and in two, same global batch of 100: the
    one process takes it in two microbatches, as the two processes do (the same sums
    in the same order; one piece of 100 differs by float rounding, see below)."""
    one, two = tmp_path_factory.mktemp("one"), tmp_path_factory.mktemp("two")
    done = _run(cache, one, "--set", "micro=2")
    assert done.returncode == 0, done.stderr
    done = _run(cache, two, "--procs", "2")
    assert done.returncode == 0, done.stderr
    return _only_run(one), _only_run(two)


@needs_mpi
def test_two_processes_equal_one(pair: tuple[Path, Path], cache: str, tmp_path: Path):
    one, two = pair
    _close(_losses(two), _losses(one), 1e-6)
    assert len(_losses(two)) == 200
    # against the whole batch in one piece, the mean of two half-batch means rounds
    # differently: a few float32 ulps of the loss (~1e-7 at step 1), which Adam at lr
    # 1e-2 amplifies to ~1e-5 by step 50 and ~1e-3 by step 100
    whole = _run(cache, tmp_path, "--set", "steps=10")
    assert whole.returncode == 0, whole.stderr
    first = {k: v for k, v in _losses(two).items() if k <= 10}
    _close(first, _losses(_only_run(tmp_path)), 5e-6)
    ours, theirs = _params(two), _params(one)
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=0, atol=1e-5)
    events = _events(two)
    schema = load_schema("events")
    assert [e for e in events if errors(e, schema)] == []
    (opened,) = [e for e in events if e["event"] == "open"]  # rank 0 alone wrote the run
    assert opened["world_size"] == 2
    assert all(e["allreduce_ms"] >= 0 for e in events if e["event"] == "step")
    meta = orjson.loads((two / "checkpoints" / "step-000200" / "meta.json").read_bytes())
    assert meta["world_size"] == 2 and len(meta["ranks"]) == 2
    assert meta["ranks"][1]["loaders"] == meta["loaders"]  # each rank read the global batch


@needs_mpi
def test_resuming_with_another_process_count_is_refused(pair: tuple[Path, Path], capsys):
    _, two = pair
    code, _, err = sexpgpu(capsys, "run", str(MLP), "--runs", str(two.parent),
                           "--resume", "latest")
    assert code == 1 and "E-RESUME-PROCS" in err
    assert "written by 2 processes; this run has 1" in err and "--procs 2" in err


@needs_mpi
def test_dropout_and_shuffle_shards_are_the_one_process_batch(cache: str, tmp_path: Path):
    # rank r's rows are the r-th half of the batch, numbered as the r-th microbatch: the
    # same dropout masks and rows as one process taking the batch in two microbatches
    knobs = ["--set", "drop=0.3", "--set", "order=:shuffle"]
    one = _run(cache, tmp_path / "one", *knobs, "--set", "micro=2")
    two = _run(cache, tmp_path / "two", *knobs, "--procs", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    a, b = _only_run(tmp_path / "one"), _only_run(tmp_path / "two")
    _close(_losses(b), _losses(a), 1e-6)
    for name, value in _params(a).items():
        np.testing.assert_allclose(_params(b)[name], value, rtol=0, atol=1e-5)


@needs_mpi
def test_diagnostics_of_two_processes_are_rank_0s_first_microbatch(cache: str, tmp_path: Path):
    # rank 0 samples its first microbatch, the global batch's first of two pieces:
    # the values one process taking the batch in two microbatches records
    knobs = ["--set", "steps=4", "--diag", "*", "--diag-every", "2"]
    one = _run(cache, tmp_path / "one", *knobs, "--set", "micro=2")
    two = _run(cache, tmp_path / "two", *knobs, "--procs", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    diags = [[e for e in _events(_only_run(tmp_path / side)) if e["event"] == "diag"]
             for side in ("one", "two")]
    assert [e["step"] for e in diags[1]] == [2, 4]
    for a, b in zip(*diags):
        assert a["values"].keys() == b["values"].keys() and "grad-norm" in a["values"]
        for name, value in a["values"].items():
            assert b["values"][name] == pytest.approx(value, rel=1e-6), name


# -- faults ----------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _rank_pids(launcher: subprocess.Popen) -> list[int]:
    (mpiexec,) = _children(launcher.pid)
    return _children(mpiexec)


def _wait_for_step(run_dir: Path, step: int, proc: subprocess.Popen) -> None:
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if (run_dir / "events.jsonl").exists():
            seen = _losses(run_dir)
            if seen and max(seen) >= step:
                return
        time.sleep(0.02)
    raise AssertionError(f"the run never reached step {step}")


@needs_mpi
@pytest.mark.slow  # ~70 s on 2 shared cores; bench/bench_parallel.py --faults runs it
def test_sigterm_and_a_killed_rank_both_resume_identically(cache: str, tmp_path: Path):
    fault = ["--set", f"steps={LONG}", "--checkpoint-every", "50", "--procs", "2"]
    clean = _run(cache, tmp_path / "clean", *fault)
    assert clean.returncode == 0, clean.stderr
    reference = _losses(_only_run(tmp_path / "clean"))
    runs = tmp_path / "runs"
    run_dir = runs / _only_run(tmp_path / "clean").name

    # SIGTERM to the job: rank 0 checkpoints, every rank exits 75
    proc = subprocess.Popen(_args(runs, *fault), env=_env(cache), stderr=subprocess.PIPE)
    _wait_for_step(run_dir, 100, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 75, proc.stderr.read()
    status = _status(run_dir)
    assert status["state"] == "preempted"
    stopped = status["step"]
    assert status["latest_checkpoint"] == f"checkpoints/step-{stopped:06d}"

    # SIGKILL of rank 1: the job ends with E-RANK-LOST within 30 s, nothing hangs
    proc = subprocess.Popen(_args(runs, *fault, "--resume", "latest"), env=_env(cache),
                            stderr=subprocess.PIPE, text=True)
    _wait_for_step(run_dir, stopped + 100, proc)
    pids = _rank_pids(proc)
    opened = [e for e in _events(run_dir) if e["event"] == "open"][-1]
    assert len(pids) == 2 and opened["pid"] in pids  # the open event names rank 0
    os.kill(next(p for p in pids if p != opened["pid"]), signal.SIGKILL)  # rank 1
    killed = time.time()
    code = proc.wait(timeout=60)
    assert time.time() - killed < 30
    err = proc.stderr.read()
    assert code == 3 and "E-RANK-LOST" in err, err
    status = _status(run_dir)
    assert status["state"] == "failed" and status["error"]["code"] == "E-RANK-LOST"

    done = _run(cache, runs, *fault, "--resume", "latest")
    assert done.returncode == 0, done.stderr
    resumed = _losses(run_dir)
    assert max(resumed) == LONG
    for step, loss in resumed.items():
        assert loss == reference[step], f"step {step}: {loss} != {reference[step]}"
    opens = [e for e in _events(run_dir) if e["event"] == "open"]
    assert len(opens) == 3 and opens[1]["resumed_from"] == stopped


def test_a_collective_that_never_completes_is_rank_lost():
    from sexpgpu.diagnostics import SexpError
    from sexpgpu.parallel.mpi import _poll

    start = time.monotonic()
    with pytest.raises(SexpError) as info:
        _poll(lambda: (False, None), "the gradient all-reduce", 1, 2, 0.2)
    assert time.monotonic() - start < 2
    diag = info.value.diagnostic
    assert diag.code == "E-RANK-LOST" and "rank 1 of 2 waited 0.2 s" in diag.message


@needs_mpi
def test_a_nonfinite_loss_ends_every_rank_alike(cache: str, tmp_path: Path):
    tiny = Path(__file__).parent / "e2e" / "tiny.sx"
    done = subprocess.run([sys.executable, "-m", "sexpgpu", "run", str(tiny), "--set",
                           "poison=17", "--procs", "2", "--runs", str(tmp_path)],
                          env=_env(cache), capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stderr
    assert "E-NONFINITE" in done.stderr and "E-RANK-LOST" not in done.stderr
    status = _status(_only_run(tmp_path))
    assert status["state"] == "failed" and status["error"]["code"] == "E-NONFINITE"
