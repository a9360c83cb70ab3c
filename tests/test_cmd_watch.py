"""`sexpgpu watch FILE`: a subprocess checks the file, re-checks it when it is saved with
an error in it, and exits 0 on Ctrl-C."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading

import orjson
from cmd_helpers import ROOT, SWEEP_TINY


def _lines(stream) -> queue.Queue:
    """Lines of `stream` as they come, read on a thread so the test can time out."""
    found: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in stream:
            found.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return found


def _files(tmp_path):
    """A copy of the tiny run file whose hidden width comes from a module of its own."""
    module = tmp_path / "blocks.sx"
    module.write_text("(defun hidden-width () 8)\n", encoding="utf-8")
    text = SWEEP_TINY.read_text(encoding="utf-8")
    text = text.replace('(require "sexpgpu/optim" :as optim)',
                        '(require "sexpgpu/optim" :as optim)\n(require "./blocks.sx" :as blk)')
    text = text.replace("(nn:linear 4 8)", "(nn:linear 4 (blk:hidden-width))")
    path = tmp_path / "tiny.sx"
    path.write_text(text, encoding="utf-8")
    return path, module, text


def test_watch_rechecks_on_save_and_exits_0_on_ctrl_c(tmp_path) -> None:
    path, module, text = _files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sexpgpu", "watch", str(path), "--interval", "0.1", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        lines = _lines(proc.stdout)
        first = orjson.loads(lines.get(timeout=60))
        assert first["ok"] is True and first["parameters"] == 58
        assert first["watching"] == [str(path), str(module)]
        # each save changes the size too, so a coarse file-system clock cannot hide it
        # the second layer now takes 16 inputs where the first gives 8: a shape error
        path.write_text(text.replace("(nn:linear 8 2)", "(nn:linear 16 2)"), encoding="utf-8")
        second = orjson.loads(lines.get(timeout=60))
        assert second["ok"] is False
        diag = second["diagnostics"][0]
        assert diag["code"] == "E-SHAPE"
        assert (diag["span"]["file"], diag["span"]["line"]) == (str(path), 25)
        path.write_text(text + "\n", encoding="utf-8")
        assert orjson.loads(lines.get(timeout=60))["ok"] is True
        # a saved module the file requires is watched too
        module.write_text("(defun hidden-width () 10)\n", encoding="utf-8")
        fourth = orjson.loads(lines.get(timeout=60))
        assert fourth["ok"] is False and fourth["diagnostics"][0]["code"] == "E-SHAPE"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0  # a loaded box may be mid-check
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_watch_text_line_names_the_error(capsys) -> None:
    from sexpgpu.commands.watch import check_once, line
    from sexpgpu.selection import Selection

    result = check_once(str(SWEEP_TINY), Selection({"nope": "1"}))
    assert result["ok"] is False
    assert "error[E-KNOB-UNKNOWN]" in line(result)
    assert check_once(str(SWEEP_TINY), Selection())["ok"] is True


def test_an_internal_error_is_reported_and_the_watch_goes_on(monkeypatch) -> None:
    from sexpgpu.commands import watch
    from sexpgpu.selection import Selection

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(watch, "compile_file", broken)
    result = watch.check_once(str(SWEEP_TINY), Selection())
    assert result["ok"] is False
    assert result["diagnostics"][0]["code"] == "E-INTERNAL"
    assert "boom" in result["diagnostics"][0]["message"]
