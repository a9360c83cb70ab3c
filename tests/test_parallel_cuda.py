"""Data-parallel CUDA runs: `--device cuda --procs 2` in numba's CUDA simulator (the
host-staged MPI all-reduce) gives the losses of one CUDA process taking the batch in
two microbatches and of two CPU processes, and resumes after SIGTERM; the engine
choice (nccl, mpi-host, mpi) with fakes; the host-staged and NCCL reducers against
numpy sums; libnccl through ctypes where the `nvidia-nccl-cu13` wheel is installed;
the multi-GPU section of bench/gpu_check.py on fake runs."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cudasim import events, run_args, run_env, run_file, wait_for_checkpoints

from sexpgpu.diagnostics import SexpError
from sexpgpu.parallel import select
from sexpgpu.parallel.libnccl import candidates
from sexpgpu.parallel.nccl import NcclReducer
from sexpgpu.parallel.staged import HostStaged
from sexpgpu.runtime.checkpoint import list_checkpoints, load_checkpoint
from sexpgpu.runtime.schema import errors, load_schema

MLP = Path(__file__).parent / "parallel" / "mlp.sx"
ROOT = Path(__file__).resolve().parent.parent
HAVE_MPI = __import__("shutil").which("mpiexec") is not None and importlib.util.find_spec(
    "mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpiexec and the mpi4py package "
                               "(apt-get install openmpi-bin; pip install 'sexpgpu[mpi]')")
HAVE_NCCL = len(candidates()) > 1  # the wheel's copy was found (the last is the loader's)
needs_nccl = pytest.mark.skipif(not HAVE_NCCL, reason="needs the nvidia-nccl-cu13 package "
                                "(pip install 'sexpgpu[nccl]')")
SMALL = ["--set", "hidden=16", "--log-every", "1"]
GRAD_BYTES = 4 * (40 * 16 + 16 + 16 * 10 + 10)  # the MLP's gradients at hidden 16


# -- fakes: a world of ranks, device arrays, the NCCL library ---------------------------


class FakeWorld:
    """Rank `rank` of `size`, whose peers hold `peers` x this rank's arrays."""

    name = "mpi"

    def __init__(self, rank: int = 0, size: int = 2, others_nccl: float = 1.0,
                 peers: float = 1.0):
        self.rank, self.size, self.others_nccl, self.peers = rank, size, others_nccl, peers
        self.broadcasts: list[object] = []

    def mean(self, values: dict[str, float]) -> dict[str, float]:
        return {k: (v + self.others_nccl * (self.size - 1)) / self.size
                for k, v in values.items()}

    def broadcast(self, value: object, timeout_s: float | None = None) -> object:
        self.broadcasts.append(value)
        return value if self.rank == 0 else b"u" * 128

    def reduce_buckets(self, flats: list[np.ndarray]) -> list[np.ndarray]:
        return [flat * (1 + self.peers) for flat in flats]  # the other rank's equal share


class FakeDeviceArray:
    """A flat device array as numba's: copies with a stream, nbytes, a device pointer."""

    def __init__(self, values: np.ndarray, pointer: int = 0):
        self.values = values
        self.size, self.nbytes, self.dtype = values.size, values.nbytes, values.dtype
        self.__cuda_array_interface__ = {"data": (pointer, False)}

    def copy_to_host(self, ary: np.ndarray, stream: object = 0) -> np.ndarray:
        ary[...] = self.values
        return ary

    def copy_to_device(self, ary: np.ndarray, stream: object = 0) -> None:
        self.values[...] = ary


class FakeStream:
    def __init__(self) -> None:
        self.syncs = 0

    def synchronize(self) -> None:
        self.syncs += 1


class FakeNccl:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def unique_id(self) -> bytes:
        return b"i" * 128

    def init_rank(self, size: int, uid: bytes, rank: int) -> int:
        self.calls.append(("init", size, uid, rank))
        return 77

    def group_start(self) -> None:
        self.calls.append(("start",))

    def group_end(self) -> None:
        self.calls.append(("end",))

    def all_reduce_sum(self, pointer: int, count: int, dtype: str, comm: int,
                       stream: int) -> None:
        self.calls.append(("sum", pointer, count, dtype, comm, stream))


class FakeEvent:
    def __init__(self, log: list) -> None:
        self.log = log

    def record(self, stream: object) -> None:
        self.log.append(("record", self))

    def elapsed_time(self, end: FakeEvent) -> float:
        return 2.5


class FakeProgram:
    def __init__(self) -> None:
        self.events: list = []

    def stream_handle(self) -> int:
        return 4242

    def stream(self) -> FakeStream:
        return FakeStream()

    def event(self) -> FakeEvent:
        return FakeEvent(self.events)

    def host_buffer(self, nbytes: int) -> np.ndarray:
        return np.zeros(nbytes, np.uint8)


# -- the choice of engine ----------------------------------------------------------------


def test_the_cpu_sums_with_the_world_itself():
    world = FakeWorld()
    assert select.choose(world, "cpu", (None, "no")) == "mpi"
    assert select.engine(world, "cpu", FakeProgram()) is world


def test_nccl_only_when_every_rank_has_it(monkeypatch):
    monkeypatch.delenv("SEXPGPU_COLLECTIVE", raising=False)
    lib = (FakeNccl(), "2.23.4")
    assert select.choose(FakeWorld(others_nccl=1.0), "cuda", lib) == "nccl"
    assert select.choose(FakeWorld(others_nccl=0.0), "cuda", lib) == "mpi-host"
    assert select.choose(FakeWorld(others_nccl=1.0), "cuda", (None, "no lib")) == "mpi-host"
    monkeypatch.setenv("SEXPGPU_COLLECTIVE", "mpi-host")
    assert select.choose(FakeWorld(), "cuda", lib) == "mpi-host"


def test_nccl_asked_for_but_missing_is_a_coded_error(monkeypatch):
    monkeypatch.setenv("SEXPGPU_COLLECTIVE", "nccl")
    with pytest.raises(SexpError) as info:
        select.choose(FakeWorld(), "cuda", (None, "OSError: libnccl.so.2 not found"))
    diag = info.value.diagnostic
    assert diag.code == "E-PROCS" and "libnccl.so.2 not found" in diag.actual
    assert "sexpgpu[nccl]" in diag.fix


def test_the_simulator_never_uses_nccl(monkeypatch):
    monkeypatch.delenv("SEXPGPU_COLLECTIVE", raising=False)
    loaded = []
    lib, why = select.nccl_here(True, lambda: loaded.append(1) or (FakeNccl(), "2"))
    assert lib is None and "simulator" in why and loaded == []
    chosen = select.engine(FakeWorld(), "cuda", FakeProgram(), simulated=True,
                           loader=lambda: (FakeNccl(), "2"))
    assert isinstance(chosen, HostStaged) and chosen.name == "mpi-host"


@pytest.mark.parametrize("rank", [0, 1])
def test_nccl_is_bootstrapped_over_mpi_and_sums_on_the_step_stream(monkeypatch, rank):
    monkeypatch.delenv("SEXPGPU_COLLECTIVE", raising=False)
    lib, world, program = FakeNccl(), FakeWorld(rank=rank), FakeProgram()
    reducer = select.engine(world, "cuda", program, loader=lambda: (lib, "2.23.4"))
    assert isinstance(reducer, NcclReducer) and reducer.name == "nccl"
    # rank 0 makes the id and broadcasts it; the others pass None and get rank 0's
    assert world.broadcasts == [b"i" * 128 if rank == 0 else None]
    assert lib.calls == [("init", 2, b"i" * 128 if rank == 0 else b"u" * 128, rank)]
    arrays = [FakeDeviceArray(np.zeros(n, np.float32), pointer=1000 * n) for n in (3, 5)]
    lib.calls.clear()
    reducer.allreduce_sum(arrays)
    assert lib.calls == [("start",), ("sum", 3000, 3, "float32", 77, 4242),
                         ("sum", 5000, 5, "float32", 77, 4242), ("end",)]
    # two events bracket the group on the stream: the step event's allreduce_ms
    assert [e for _, e in program.events] == [reducer._start, reducer._end]
    assert reducer.device_ms() == 2.5


def test_nccl_that_cannot_start_is_a_coded_error(monkeypatch):
    from sexpgpu.parallel.libnccl import NcclError

    class Refusing(FakeNccl):
        def init_rank(self, size: int, uid: bytes, rank: int) -> int:
            raise NcclError("ncclCommInitRank failed: NCCL error 1 (unhandled cuda error)")

    monkeypatch.delenv("SEXPGPU_COLLECTIVE", raising=False)
    with pytest.raises(SexpError) as info:
        select.engine(FakeWorld(rank=1), "cuda", FakeProgram(),
                      loader=lambda: (Refusing(), "2.23.4"))
    diag = info.value.diagnostic
    assert diag.code == "E-PROCS" and "rank 1 of 2" in diag.message
    assert "unhandled cuda error" in diag.actual and "SEXPGPU_COLLECTIVE=mpi-host" in diag.fix


@needs_nccl
def test_a_real_communicator_without_a_gpu_fails_cleanly():
    from sexpgpu.kernels.cuda_backend import probe

    from sexpgpu.parallel.libnccl import NcclError, load

    if probe().usable:
        pytest.skip("a usable GPU is present: the communicator would start")
    nccl, _ = load()
    with pytest.raises(NcclError, match="ncclCommInitRank failed: NCCL error"):
        nccl.init_rank(1, nccl.unique_id(), 0)


def test_a_step_adds_the_engines_copies_and_device_time_to_its_transfers():
    from sexpgpu.parallel.program import DataParallelProgram

    class Local:
        def accumulate(self, microbatches, ctx, first):
            self.first = first
            return {"loss": 1.0}

        def gradients(self):
            return ["g"]

        def apply(self, ctx):
            return {"grad_norm": 0.5}

        def transfers(self):
            return {"h2d_bytes": 100, "d2h_bytes": 40}

    class Engine:
        name, h2d_bytes, d2h_bytes = "nccl", 0, 0

        def allreduce_sum(self, arrays):
            assert arrays == ["g"]
            self.h2d_bytes += 8
            self.d2h_bytes += 8

        def device_ms(self):
            return 1.25

    world = FakeWorld(rank=1)
    program = DataParallelProgram(Local(), world, Engine())
    out = program.train_step([{"x": np.zeros(2)}, {"x": np.zeros(2)}], {"step": 0})
    assert out == {"loss": 1.0, "grad_norm": 0.5} and program.program.first == 2
    assert program.collective == "nccl"
    assert program.transfers() == {"h2d_bytes": 108, "d2h_bytes": 48, "allreduce_ms": 1.25}


@pytest.mark.parametrize(("local", "gpus", "chosen"), [(5, 4, [1]), (1, 1, []), (0, 0, [])])
def test_each_rank_takes_its_own_gpu(monkeypatch, local, gpus, chosen):
    from sexpgpu.parallel import ranks

    class FakeCuda:
        def __init__(self) -> None:
            self.gpus, self.selected = list(range(gpus)), []

        def is_available(self) -> bool:
            return gpus > 0

        def select_device(self, index: int) -> None:
            self.selected.append(index)

    world, cuda = FakeWorld(rank=local, size=8), FakeCuda()
    world.local_rank = lambda: local
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    ranks.place(world, "cuda", cuda)
    ranks.place(world, "cpu", cuda)  # a CPU run never touches the GPUs
    assert cuda.selected == chosen  # local rank 5 of 4 GPUs: GPU 1; one GPU: left alone


def test_host_staged_sums_device_buckets_and_counts_the_copies():
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(n).astype(np.float32) for n in (7, 1, 300)]
    arrays = [FakeDeviceArray(v.copy()) for v in values]
    stream = FakeStream()
    staged = HostStaged(FakeWorld(peers=1.0), stream, lambda n: np.zeros(n, np.uint8))
    for step in (1, 2):  # the host buffers are made once and reused
        staged.allreduce_sum(arrays)
        for a, v in zip(arrays, values):
            np.testing.assert_array_equal(a.values, v * 2.0 ** step)  # exact in f32
    nbytes = sum(v.nbytes for v in values)
    assert staged.d2h_bytes == staged.h2d_bytes == 2 * nbytes
    assert stream.syncs == 4 and len(staged._host) == 1


# -- libnccl through ctypes -----------------------------------------------------------



@needs_nccl
def test_libnccl_loads_and_makes_unique_ids_without_a_gpu():
    from importlib import metadata

    from sexpgpu.parallel import libnccl

    nccl, version = libnccl.load()
    assert nccl is not None, version
    assert version == metadata.version("nvidia-nccl-cu13")  # the wheel's own number
    first, second = nccl.unique_id(), nccl.unique_id()
    assert len(first) == 128 and first != second


def test_a_missing_libnccl_says_why():
    from sexpgpu.parallel import libnccl

    with pytest.raises(OSError, match="libnccl.so.2 not found"):
        libnccl.Nccl("/nonexistent/libnccl.so.2")


# -- two processes in the CUDA simulator -------------------------------------------------


def _args(runs: Path, device: str, *extra: str) -> list[str]:
    return run_args(MLP, runs, device, *SMALL, *extra)


def _run(runs: Path, device: str, cache: str, *extra: str) -> Path:
    return run_file(MLP, runs, device, cache, *SMALL, *extra)


def _losses(run_dir: Path) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in events(run_dir, "step")}


def _params(run_dir: Path) -> dict[str, np.ndarray]:
    (_, path), *_ = reversed(list_checkpoints(run_dir))
    return load_checkpoint(path).params


def _close(a: dict[int, float], b: dict[int, float], rtol: float) -> None:
    assert a.keys() == b.keys()
    worst = max(abs(a[k] - b[k]) / abs(b[k]) for k in a)
    assert worst <= rtol, worst


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


@needs_mpi
@pytest.mark.cudasim
def test_two_cuda_processes_equal_one_with_two_microbatches(cache: str, tmp_path: Path):
    steps = ["--set", "steps=4", "--diag", "grad-norm*", "--diag-every", "2"]
    two = _run(tmp_path / "two", "cuda", cache, *steps, "--procs", "2")
    one = _run(tmp_path / "one", "cuda", cache, *steps, "--set", "micro=2")
    cpu = _run(tmp_path / "cpu", "cpu", cache, *steps, "--procs", "2")
    # the tolerances of the CPU's test (tests/test_parallel.py)
    _close(_losses(two), _losses(one), 1e-6)
    _close(_losses(two), _losses(cpu), 1e-6)
    for reference in (one, cpu):
        for name, value in _params(reference).items():
            np.testing.assert_allclose(_params(two)[name], value, rtol=0, atol=1e-5)
    # --diag: rank 0's first microbatch, the one process's first of two
    for ours, theirs in zip(events(two, "diag"), events(one, "diag"), strict=True):
        assert ours["step"] == theirs["step"] and ours["values"].keys() == theirs["values"].keys()
        for name, value in theirs["values"].items():
            assert ours["values"][name] == pytest.approx(value, rel=1e-6), name
    assert len(events(two, "diag")) == 2
    schema = load_schema("events")
    assert [e for e in events(two) if errors(e, schema)] == []
    (opened,) = events(two, "open")
    assert opened["world_size"] == 2 and opened["collective"] == "mpi-host"
    assert events(cpu, "open")[0]["collective"] == "mpi"
    # the gradients' trip through the host is counted with the step's own transfers:
    # each step reads the same records as one process and copies every gradient twice
    for ours, theirs in zip(events(two, "step"), events(one, "step")):
        assert ours["d2h_bytes"] == theirs["d2h_bytes"] + GRAD_BYTES
        assert ours["h2d_bytes"] >= GRAD_BYTES and ours["allreduce_ms"] >= 0


@needs_mpi
@pytest.mark.cudasim
def test_nccl_insisted_on_where_it_cannot_run_ends_every_rank_alike(cache: str,
                                                                     tmp_path: Path):
    runs = tmp_path / "runs"
    done = subprocess.run(_args(runs, "cuda", "--set", "steps=2", "--procs", "2"),
                          env={**run_env(cache, True), "SEXPGPU_COLLECTIVE": "nccl"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "error[E-PROCS]: SEXPGPU_COLLECTIVE=nccl, but NCCL cannot run on every rank" \
        in done.stderr
    assert "simulator" in done.stderr and "Traceback" not in done.stderr
    assert not runs.exists()  # refused before the run's directory was made


@needs_mpi
@pytest.mark.cudasim
@pytest.mark.slow  # ~35 s on 2 shared cores; bench/bench_parallel.py --faults runs it
def test_two_cuda_processes_stop_and_resume_identically(cache: str, tmp_path: Path):
    fault = ["--set", "steps=24", "--checkpoint-every", "3", "--procs", "2"]
    runs = tmp_path / "runs"
    proc = subprocess.Popen(_args(runs, "cuda", *fault), env=run_env(cache, True),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_checkpoints(runs, proc, 1)
    proc.send_signal(signal.SIGTERM)  # reaches the ranks as SIGUSR1: checkpoint, exit 75
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 75, err.decode()[-3000:]
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    stopped = max(_losses(run_dir))
    assert stopped < 24
    resumed = subprocess.run(_args(runs, "cuda", *fault, "--resume", "latest"),
                             env=run_env(cache, True), capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    clean = _run(tmp_path / "clean", "cuda", cache, *fault)
    want, got = _losses(clean), _losses(run_dir)
    assert max(got) == 24 and all(got[s] == want[s] for s in got)
    opens = events(run_dir, "open")
    assert len(opens) == 2 and opens[1]["resumed_from"] == stopped
    for name, value in _params(clean).items():
        np.testing.assert_array_equal(_params(run_dir)[name], value)


# -- bench/gpu_check.py's multi-GPU section (prepared, run where 2 GPUs are lent) ---------


def test_the_multi_gpu_check_compares_each_engine_with_one_process(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import gpu_check

    def train(path, device, steps, runs, extra=(), env=None, log_every=10):
        two = "--procs" in extra
        collective = (env or {}).get("SEXPGPU_COLLECTIVE", "nccl") if two else None
        return {"collective": collective, "gpu": {}, "wall_s": 1.0, "steps": {
            s: {"loss": 2.0 + (1e-6 if two else 0.0), "step_ms": 8.0 if two else 10.0,
                "allreduce_ms": 1.5} for s in range(1, steps + 1)}}

    monkeypatch.setattr(gpu_check, "train", train)
    rows = gpu_check.multi_gpu(20, Path("/nonexistent"))
    assert [(r["example"], r["engine"], r["collective"]) for r in rows] == [
        ("mnist1d-mlp", "auto", "nccl"), ("mnist1d-mlp", "mpi-host", "mpi-host"),
        ("shakespeare-char", "auto", "nccl"), ("shakespeare-char", "mpi-host", "mpi-host")]
    assert rows[0]["one_ms"] == 10.0 and rows[0]["two_ms"] == 8.0
    assert rows[0]["allreduce_ms"] == 1.5 and rows[0]["max_rel"] == pytest.approx(5e-7)
    gpu_check.print_multi(rows)
    assert "mpi-host" in capsys.readouterr().out
