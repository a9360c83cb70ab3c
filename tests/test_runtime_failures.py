"""A failing run loses nothing: a full disk while writing a checkpoint, events or status
is E-RUN-IO (exit 3) with the last good checkpoint kept; a file where the run needs a
directory is E-RUN-IO before anything is written; a malformed checkpoint (pickled
arrays, a meta of the wrong shape, a step its optimizer state contradicts) is
E-CHECKPOINT; a stop signal while compiling is exit 75."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from sexpgpu.atomic import dumps
from sexpgpu.commands import checkpoint as command
from sexpgpu.diagnostics import SexpError
from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime import events as events_module
from sexpgpu.runtime import status as status_module
from sexpgpu.runtime.events import read_events
from sexpgpu.runtime.loop import run_training
from sexpgpu.runtime.numpy_program import SoftmaxRegression, demo_plan

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "e2e" / "tiny.sx"


def _disk_full(path: object = None) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", path)


def _train(tmp_path: Path, steps: int = 30, resume: str | None = None,
           program: SoftmaxRegression | None = None) -> tuple[int, dict, SoftmaxRegression]:
    plan = demo_plan(str(tmp_path / "demo.sx"), steps=steps)
    program = program or SoftmaxRegression(8, 4)
    code, summary = run_training(plan, program, tmp_path / "runs", resume=resume,
                                 stderr=io.StringIO())
    return code, summary, program


def _status(summary: dict) -> dict:
    return orjson.loads((Path(summary["run_dir"]) / "status.json").read_bytes())


# -- a full disk ------------------------------------------------------------------------


def test_disk_full_while_checkpointing_keeps_the_last_good_one(tmp_path, monkeypatch):
    real = ckpt.write_file_synced

    def full_at_step_20(path: Path, data: bytes) -> None:
        if ".tmp-step-000020" in str(path) and path.name == "state.npz":
            raise _disk_full()  # a write() says no filename; the writer adds it
        real(path, data)

    monkeypatch.setattr(ckpt, "write_file_synced", full_at_step_20)
    code, summary, _ = _train(tmp_path)
    assert code == 3 and summary["state"] == "failed"
    assert summary["error"]["code"] == "E-RUN-IO"
    assert "ENOSPC" in summary["error"]["message"] and "step-000020" in summary["error"]["message"]
    assert "step-000010" in summary["error"]["notes"][0]["message"]
    status = _status(summary)
    assert status["state"] == "failed" and status["error"]["code"] == "E-RUN-IO"
    run_dir = Path(summary["run_dir"])
    assert ckpt.latest_valid(run_dir).name == "step-000010"
    assert [p.name for p in (run_dir / "checkpoints").iterdir()] == ["step-000010"]  # no temp
    assert read_events(run_dir / "events.jsonl")[-1]["event"] == "close"

    monkeypatch.setattr(ckpt, "write_file_synced", real)  # space freed: resume
    code, resumed, program = _train(tmp_path, resume="latest")
    assert code == 0 and resumed["resumed_from"] == 10 and resumed["step"] == 30
    plan = demo_plan(str(tmp_path / "demo.sx"), steps=30)
    reference = SoftmaxRegression(8, 4)
    run_training(plan, reference, tmp_path / "clean", stderr=io.StringIO())
    np.testing.assert_array_equal(program.params()["W"], reference.params()["W"])


def test_disk_full_while_logging_events_fails_the_run_cleanly(tmp_path, monkeypatch):
    real = events_module.dumps

    def full_at_step_15(record: dict) -> bytes:
        if record.get("event") == "step" and record.get("step") == 15:
            raise _disk_full()
        return real(record)

    monkeypatch.setattr(events_module, "dumps", full_at_step_15)
    code, summary, _ = _train(tmp_path)
    assert code == 3 and summary["error"]["code"] == "E-RUN-IO"
    assert "events.jsonl" in summary["error"]["actual"]
    assert _status(summary)["state"] == "failed"
    assert ckpt.latest_valid(Path(summary["run_dir"])).name == "step-000010"


def test_status_that_cannot_be_written_still_ends_coded(tmp_path, monkeypatch):
    real = status_module.write_json_atomic

    def full_once_done(path: Path, data: dict) -> None:
        if data.get("state") != "running":
            raise _disk_full(str(path))
        real(path, data)

    monkeypatch.setattr(status_module, "write_json_atomic", full_once_done)
    code, summary, _ = _train(tmp_path, steps=12)
    assert code == 3 and summary["state"] == "failed"
    assert summary["error"]["code"] == "E-RUN-IO" and "status.json" in summary["error"]["actual"]
    assert ckpt.latest_valid(Path(summary["run_dir"])).name == "step-000012"  # it was saved


def test_disk_full_creating_the_run_directory_is_coded(tmp_path, monkeypatch):
    from sexpgpu.runtime import rundir

    def full(path: Path, data: bytes) -> None:
        raise _disk_full(str(path))

    monkeypatch.setattr(rundir, "write_bytes_atomic", full)
    with pytest.raises(SexpError) as info:
        _train(tmp_path)
    assert info.value.diagnostic.code == "E-RUN-IO"
    assert "demo.sx" in info.value.diagnostic.actual


# -- a file where a directory should be --------------------------------------------------


def test_runs_path_that_is_a_file_is_refused_before_anything(tmp_path):
    (tmp_path / "runs").write_text("not a directory")
    with pytest.raises(SexpError) as info:
        _train(tmp_path)
    diag = info.value.diagnostic
    assert diag.code == "E-RUN-IO" and "is a file" in diag.message


def test_checkpoints_path_that_is_a_file_is_refused_on_resume(tmp_path, capsys):
    _, summary, _ = _train(tmp_path, steps=10)
    run_dir = Path(summary["run_dir"])
    for path in (run_dir / "checkpoints").iterdir():
        ckpt.shutil.rmtree(path)
    (run_dir / "checkpoints").rmdir()
    (run_dir / "checkpoints").write_text("oops")
    with pytest.raises(SexpError) as info:
        _train(tmp_path, steps=10, resume="latest")
    assert info.value.diagnostic.code == "E-RUN-IO"
    assert "checkpoints is a file" in info.value.diagnostic.message
    with pytest.raises(SexpError) as info:
        command.main(["ls", str(run_dir)])
    assert info.value.diagnostic.code == "E-CHECKPOINT"


def test_checkpoint_show_of_a_name_that_is_no_step(tmp_path):
    _, summary, _ = _train(tmp_path, steps=10)
    with pytest.raises(SexpError) as info:
        command.main(["show", summary["run_dir"], "newest"])
    assert info.value.diagnostic.code == "E-CHECKPOINT"


# -- malformed checkpoints -----------------------------------------------------------------


def _rewrite(checkpoint: Path, name: str, data: bytes) -> None:
    """Replace one file of a checkpoint and its manifest entry, so it still verifies by
    size and sha256: only the content checks can find what is wrong."""
    (checkpoint / name).write_bytes(data)
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (checkpoint / "manifest.json").write_bytes(dumps(manifest))


def _npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _newest(tmp_path: Path, steps: int = 20) -> tuple[dict, Path]:
    _, summary, _ = _train(tmp_path, steps=steps)
    return summary, Path(summary["run_dir"]) / "checkpoints" / ckpt.checkpoint_name(steps)


def test_pickled_object_array_is_refused(tmp_path):
    summary, newest = _newest(tmp_path)
    saved = ckpt.load_checkpoint(newest)
    _rewrite(newest, "params.npz", _npz(**{**saved.params, "W": np.array([{"x": 1}], object)}))
    assert "dtype object" in ckpt.verify(newest)
    with pytest.raises(SexpError) as info:
        ckpt.load_checkpoint(newest)
    assert info.value.diagnostic.code == "E-CHECKPOINT"
    with pytest.raises(SexpError) as info:
        _train(tmp_path, steps=20, resume=str(newest))
    assert info.value.diagnostic.code == "E-CHECKPOINT"
    code, resumed, _ = _train(tmp_path, steps=20, resume="latest")  # latest skips it
    assert code == 0 and resumed["resumed_from"] == 10


@pytest.mark.parametrize("change", [
    {"step": "20"}, {"loaders": []}, {"loaders": {"train": {"samples": -1}}},
    {"ctx": {"step": 19}}, {"format": 2}, {"last_loss": "low"}, {"step": 19},
], ids=["step-string", "loaders-list", "position", "ctx-step", "format", "loss", "step"])
def test_meta_of_the_wrong_shape_is_refused(tmp_path, change):
    _, newest = _newest(tmp_path)
    meta = {**ckpt.read_meta(newest), **change}
    _rewrite(newest, "meta.json", dumps(meta))
    problem = ckpt.verify(newest)
    assert problem is not None and ("meta.json" in problem or "step disagrees" in problem)
    with pytest.raises(SexpError) as info:
        _train(tmp_path, steps=20, resume=str(newest))
    assert info.value.diagnostic.code == "E-CHECKPOINT"


def test_meta_that_is_not_an_object_is_refused(tmp_path):
    _, newest = _newest(tmp_path)
    _rewrite(newest, "meta.json", b"[1, 2]")
    assert "meta.json is malformed" in ckpt.verify(newest)


def test_manifest_that_lists_nothing_does_not_verify(tmp_path):
    _, newest = _newest(tmp_path)
    (newest / "manifest.json").write_bytes(dumps({"format": 1, "step": 20, "files": {}}))
    assert "does not list" in ckpt.verify(newest)


def test_step_the_optimizer_state_contradicts_is_refused(tmp_path):
    summary, newest = _newest(tmp_path)
    saved = ckpt.load_checkpoint(newest)
    _rewrite(newest, "state.npz", _npz(**{**saved.state, "t": np.array(7.0)}))
    assert ckpt.verify(newest) is None  # well-formed: only the program can tell
    code, failed, _ = _train(tmp_path, steps=20, resume=str(newest))
    assert code == 1 and failed["error"]["code"] == "E-CHECKPOINT"
    assert "optimizer state has taken 7 steps" in failed["error"]["message"]
    assert _status(summary)["error"]["code"] == "E-CHECKPOINT"


def test_loader_positions_of_another_plan_are_refused(tmp_path):
    _, newest = _newest(tmp_path)
    meta = ckpt.read_meta(newest)
    meta["loaders"]["extra"] = meta["loaders"]["train"]
    _rewrite(newest, "meta.json", dumps(meta))
    code, failed, _ = _train(tmp_path, steps=20, resume=str(newest))
    assert code == 1 and failed["error"]["code"] == "E-CHECKPOINT"


# -- a stop signal while compiling ---------------------------------------------------------

# each makes one phase of `sexpgpu run` slow and says when it has begun
SLOW = {
    "importing": """
import importlib, pathlib, time
from sexpgpu import cli
real = importlib.import_module
def slow(name, *args):
    if name == "sexpgpu.commands.run":
        pathlib.Path(MARK).touch()
        time.sleep(60)
    return real(name, *args)
cli.importlib.import_module = slow
""",
    "compiling": """
import pathlib, time
import sexpgpu.commands.run as run
real = run.compile_file
def slow(*args, **kwargs):
    pathlib.Path(MARK).touch()
    time.sleep(60)
    return real(*args, **kwargs)
run.compile_file = slow
""",
}
MAIN = """
import sys
from sexpgpu import cli
sys.exit(cli.main(["run", FILE, "--runs", RUNS, "--set", "steps=5"]))
"""


@pytest.mark.parametrize("phase", sorted(SLOW))
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_stop_signal_before_training_exits_75(tmp_path, phase, signum):
    mark, runs = tmp_path / "begun", tmp_path / "runs"
    script = (f"MARK, FILE, RUNS = {str(mark)!r}, {str(TINY)!r}, {str(runs)!r}\n"
              + SLOW[phase] + MAIN)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 60
    while not mark.exists():
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.01)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 75, err
    assert "before training began" in err and "Traceback" not in err
    assert not runs.exists()  # nothing was written: the retry starts it from scratch
