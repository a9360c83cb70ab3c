"""`sexpgpu sweep FILE NAME --jobs N`: the sweep's points as `sexpgpu run` processes,
N at a time, each with its share of the cores (SEXPGPU_NUM_THREADS) so they do not
fight over them. A stop signal is passed to every running point (each checkpoints and
exits 75) and no new one starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from sexpgpu.exitcodes import EXIT_PREEMPTED
from sexpgpu.parallel.launch import threads_each


def run_points(argvs: list[list[str]], jobs: int, name: str
               ) -> list[tuple[int, dict[str, Any]]]:
    """(exit code, `--json` summary) of each point, in the points' order."""
    running: dict[int, subprocess.Popen] = {}
    lock = threading.Lock()
    stopped: list[int] = []
    env = dict(os.environ)
    env.setdefault("SEXPGPU_NUM_THREADS", threads_each(min(jobs, len(argvs))))

    def one(index: int) -> tuple[int, dict[str, Any]]:
        with lock:
            if stopped:  # a stop signal came: leave the rest for a later sweep
                return EXIT_PREEMPTED, {"state": "not started"}
            sys.stderr.write(f"sweep {name}: point {index + 1} of {len(argvs)} started\n")
            proc = subprocess.Popen([sys.executable, "-m", "sexpgpu", "run", *argvs[index],
                                     "--json"], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            running[index] = proc
        out, err = proc.communicate()
        with lock:
            del running[index]
        lines = out.decode().strip().splitlines()
        if proc.returncode != 0 and err:
            sys.stderr.write(f"sweep {name}: point {index + 1}:\n{err.decode()}")
        return proc.returncode, orjson.loads(lines[-1]) if lines else {"state": "failed"}

    def forward(signum: int, frame: Any) -> None:
        with lock:
            stopped.append(signum)
            for proc in running.values():
                proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, range(len(argvs))))
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
