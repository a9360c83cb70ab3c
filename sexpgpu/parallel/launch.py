"""`sexpgpu run FILE --procs N` on one machine: the same command started N times
through the system's `mpiexec`, which gives each copy its rank. This process waits
for them: a stop signal is passed on as SIGUSR1 (mpiexec forwards it at once, where
it would kill the job on SIGTERM), and a job whose rank was killed is closed here with
E-RANK-LOST when rank 0 could not close it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from sexpgpu.atomic import read_json, write_json_atomic
from sexpgpu.diagnostics import define_code, error, render
from sexpgpu.exitcodes import EXIT_ERRORS, EXIT_OK, EXIT_PREEMPTED, EXIT_RUNTIME, EXIT_USAGE
from sexpgpu.parallel.collective import lost
from sexpgpu.runtime.events import EventLog

E_PROCS = define_code(
    "E-PROCS", "cannot start the processes of a data-parallel run",
    "`--procs N` (or `defrun :procs N`) starts N processes through the system's MPI: "
    "`mpiexec` must be on PATH and mpi4py installed (`pip install 'sexpgpu[mpi]'`; "
    "Debian/Ubuntu: `apt-get install openmpi-bin libopenmpi-dev`). Under a launcher "
    "(`mpiexec -n N`, `srun`), `--procs` must agree with the number it started, and "
    "`srun -n N` must give its tasks MPI ranks (`--mpi=pmix`). SEXPGPU_COLLECTIVE=nccl "
    "needs NCCL on every rank (the `nccl` extra and a GPU).",
)

OUR_CODES = (EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_RUNTIME, EXIT_PREEMPTED)


def mpiexec_command(procs: int) -> list[str]:
    """mpiexec with the flags one machine needs: Open MPI refuses more processes than
    cores (--oversubscribe) and root (--allow-run-as-root) unless told."""
    found = shutil.which("mpiexec")
    if found is None or importlib.util.find_spec("mpi4py") is None:
        missing = "mpiexec" if found is None else "mpi4py"
        raise error(E_PROCS, f"--procs {procs} needs MPI: {missing} is not installed",
                    expected="mpiexec on PATH and the mpi4py package",
                    actual=f"no {missing}",
                    fix="apt-get install openmpi-bin libopenmpi-dev && "
                    "pip install 'sexpgpu[mpi]'")
    command = [found, "-n", str(procs)]
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version or "OpenRTE" in version:
        command += ["--oversubscribe", "--quiet"]  # our diagnostics say what happened
        if os.geteuid() == 0:
            command.append("--allow-run-as-root")
    return command


def threads_each(procs: int) -> str:
    """The cores divided among the processes, so they do not fight over them."""
    return str(max(1, len(os.sched_getaffinity(0)) // procs))


def launch(argv: list[str], procs: int) -> int:
    """Run `sexpgpu run *argv` as `procs` MPI processes; their exit code."""
    command = mpiexec_command(procs)
    with tempfile.TemporaryDirectory(prefix="sexpgpu-launch-") as tmp:
        info = Path(tmp) / "run.json"
        env = dict(os.environ, SEXPGPU_LAUNCH_INFO=str(info))
        env.setdefault("SEXPGPU_NUM_THREADS", threads_each(procs))
        child = subprocess.Popen([*command, sys.executable, "-m", "sexpgpu", "run", *argv],
                                 env=env)
        code = _wait(child)
        if code in OUR_CODES:
            return code
        run_dir = read_json(info)["run_dir"] if info.exists() else None
        diag = lost("the end of the job", 0, procs, 0).diagnostic
        diag.message = f"a process of this {procs}-process run ended without closing it " \
                       f"(mpiexec exit {code})"
        diag.actual = "a rank was killed or crashed"
        sys.stderr.write(render(diag) + "\n")
        if run_dir is not None:
            close_lost_run(Path(run_dir), diag.to_json())
        return EXIT_RUNTIME


def _wait(child: subprocess.Popen) -> int:
    """The child's exit code; SIGTERM or SIGINT here reaches the ranks as SIGUSR1."""
    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signal.SIGUSR1)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def close_lost_run(run_dir: Path, failure: dict) -> None:
    """status.json says failed and events.jsonl is closed, when rank 0 could not."""
    status_path = run_dir / "status.json"
    status = read_json(status_path) if status_path.exists() else None
    if status is None or status.get("state") != "running":
        return  # rank 0 closed the run itself
    status.update(state="failed", error={"code": failure["code"],
                                         "message": failure["message"]},
                  updated=round(time.time(), 3))
    write_json_atomic(status_path, status)
    events = EventLog(run_dir / "events.jsonl")
    summary = {"run": run_dir.name, "run_dir": str(run_dir), "step": status.get("step"),
               "steps": status.get("steps"), "state": "failed", "exit_code": EXIT_RUNTIME,
               "error": failure, "latest_checkpoint": status.get("latest_checkpoint")}
    events.emit("close", status="failed", summary=summary)
    events.close()
