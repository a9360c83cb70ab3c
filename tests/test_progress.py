"""The progress a person reads on stderr: the kernel count while compiling, then the
training line (step, loss, step time, throughput, last eval, ETA from the steady pace);
rewritten in place on a terminal (tested through a pseudo-terminal), one plain line
every --progress-every seconds off one (tested through a pipe)."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys

from cmd_helpers import SWEEP_TINY

from sexpgpu import humanize
from sexpgpu.runtime.progress import Pace, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_one_plain_line_every_n_seconds() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress(out, steps=1000, every_s=30, tty=False, clock=clock)
    for done, cached in ((1, False), (2, True), (3, False)):
        progress.kernel(done, 3, cached)
        clock.now += 1.0
    progress.compiled()
    for step in range(1, 1001):
        progress.step(step, 2.0 / step, step_ms=125.0, rows=100, tokens=0)
        if step == 500:
            progress.evaluating("test")
            progress.evaluated(500, {"test/accuracy": 0.61234567, "test/loss": 1.1})
        clock.now += 0.125  # exact in binary: the times below are exact
    progress.done()
    assert out.getvalue().splitlines() == [
        "compiling kernels 1/3  0.0s",
        "compiled 2 kernels in 3.0s (1 more from the cache)",
        "step 1/1000  loss 2  125 ms/step  800 samples/s",
        "step 241/1000  loss 0.008299  125 ms/step  800 samples/s  eta 1m35s",
        "step 481/1000  loss 0.004158  125 ms/step  800 samples/s  eta 1m05s",
        "step 721/1000  loss 0.002774  125 ms/step  800 samples/s  "
        "test/accuracy 0.6123 test/loss 1.1 (step 500)  eta 35s",
        "step 961/1000  loss 0.002081  125 ms/step  800 samples/s  "
        "test/accuracy 0.6123 test/loss 1.1 (step 500)  eta 4.9s",
        "step 1000/1000  loss 0.002  125 ms/step  800 samples/s  "
        "test/accuracy 0.6123 test/loss 1.1 (step 500)",
    ]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_progress_every_zero_is_silent_off_a_terminal() -> None:
    out = io.StringIO()
    progress = Progress(out, steps=3, every_s=0, tty=False, clock=Clock())
    progress.kernel(1, 1, False)
    progress.compiled()
    for step in (1, 2, 3):
        progress.step(step, 1.0, 1.0, 10, 0)
    progress.done()
    assert out.getvalue() == ""


def test_eta_follows_the_steady_pace_not_the_first_step() -> None:
    clock = Clock()
    pace = Pace(300, clock)
    clock.now = 30.0        # the first step took 30 s (it paid for a cold cache)
    pace.mark(1)            # marks are taken as a step ends: its own time is not in them
    assert pace.eta_s() is None
    for step in range(2, 11):
        clock.now += 0.25
        pace.mark(step)
    assert pace.eta_s() == 290 * 0.25


def test_tokens_per_second_and_numbers_for_reading() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress(out, steps=10, every_s=1, tty=False, clock=clock)
    progress.step(1, 4.174523, step_ms=250.0, rows=12, tokens=768)
    assert out.getvalue() == "step 1/10  loss 4.175  250 ms/step  3.07k tokens/s\n"
    assert [humanize.number(x) for x in (0.41600000858306885, 5.0, 1e-8, True, None)] == [
        "0.416", "5", "1e-08", "t", "-"]
    assert [humanize.duration(s) for s in (4.25, 38.2, 192, 3725)] == [
        "4.2s", "38s", "3m12s", "1h02m"]


def _run_tiny(tmp_path, stderr, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "SEXPGPU_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "sexpgpu", "run", str(SWEEP_TINY), "steps=40",
         "--runs", str(tmp_path / "runs"), *extra],
        stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=tmp_path)


def test_on_a_terminal_the_line_is_rewritten_in_place(tmp_path) -> None:
    master, slave = pty.openpty()
    proc = _run_tiny(tmp_path, slave)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    screen = b"".join(chunks).decode()
    # the kernels count up in place, then one line stays
    assert re.search(r"\rcompiling kernels 1/(\d+)  \d", screen)
    assert re.search(r"\rcompiled \d+ kernels in [\d.]+s\x1b\[K\r?\n", screen)
    # the training line is rewritten (\r ... erase to the end of line) and ends on a newline
    last = re.findall(r"\r(step \d+/40 [^\r\n\x1b]*)\x1b\[K", screen)[-1]
    assert last.startswith("step 40/40  loss ") and "samples/s" in last
    assert "test/accuracy" in last and "eta" not in last
    assert "done: step 40 of 40 in" in screen


def test_off_a_terminal_plain_lines_at_the_cadence(tmp_path) -> None:
    proc = _run_tiny(tmp_path, subprocess.PIPE, "--progress-every", "0.000001")
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0
    text = err.decode()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines[0].startswith("compiling kernels 1/")
    assert any(re.fullmatch(r"compiled \d+ kernels in [\d.]+s", line) for line in lines)
    steps = [line for line in lines if line.startswith("step ")]
    assert steps[0].startswith("step 1/40  loss ") and steps[-1].startswith("step 40/40  loss ")
    assert lines[-3].startswith("done: step 40 of 40 in ")
    # the summary's numbers are for reading: never a float's full repr
    assert not re.search(r"\d\.\d{6,}", text)
