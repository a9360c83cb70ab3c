"""Trackers: `--log-to` mirrors step, eval and diag events to TensorBoard (and W&B
offline, MLflow's local file store where those packages are installed); events.jsonl
stays complete, and a sink that fails or hangs is a `warn` event, never a failed run."""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import orjson
import pytest
from cmd_helpers import SWEEP_TINY, sexpgpu

from sexpgpu.trackers import config, mirror, sinks

ARGS = ("steps=12", "--log-every", "1")


@pytest.fixture(autouse=True)
def _fresh_selection():
    """`--log-to` lasts for the process; each test starts from the environment."""
    config.select(None)
    yield
    config.select(None)


def _events(run_dir: Path) -> list[dict]:
    return [orjson.loads(x) for x in (run_dir / "events.jsonl").read_bytes().splitlines()]


def _run(capsys, tmp_path: Path, *args: str) -> tuple[int, Path, str]:
    code, _, err = sexpgpu(capsys, "run", SWEEP_TINY, *ARGS, "--runs", tmp_path / "runs",
                           *args)
    (run_dir,) = (tmp_path / "runs").iterdir()
    return code, run_dir, err


def _tensorboard_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the event files under `folder`, read as TFRecords (length,
    crc, an Event protobuf, crc) with tensorboardX's own protobuf classes."""
    from tensorboardX.proto import event_pb2

    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, at = path.read_bytes(), 0
        while at < len(data):
            (size,) = struct.unpack("<Q", data[at:at + 8])
            event = event_pb2.Event.FromString(data[at + 12:at + 12 + size])
            at += 12 + size + 4
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    out.setdefault(value.tag, []).append((event.step, value.simple_value))
    return out


def test_tensorboard_gets_every_step_and_eval(capsys, tmp_path) -> None:
    pytest.importorskip("tensorboardX", reason="the tensorboardX package is not installed")
    code, run_dir, err = _run(capsys, tmp_path, "--log-to", "tensorboard")
    assert code == 0, err
    scalars = _tensorboard_scalars(run_dir / "tensorboard")
    events = _events(run_dir)
    steps = [(e["step"], e["loss"]) for e in events if e["event"] == "step"]
    assert [s for s, _ in scalars["train/loss"]] == [s for s, _ in steps]
    assert [v for _, v in scalars["train/loss"]] == pytest.approx([v for _, v in steps],
                                                                  rel=1e-6)
    evals = [(e["step"], e["metrics"]) for e in events if e["event"] == "eval"]
    assert evals and [s for s, _ in scalars["test/accuracy"]] == [s for s, _ in evals]
    assert not [e for e in events if e["event"] == "warn"]


def test_the_environment_variable_selects_trackers(capsys, tmp_path, monkeypatch) -> None:
    pytest.importorskip("tensorboardX", reason="the tensorboardX package is not installed")
    monkeypatch.setenv("SEXPGPU_LOG_TO", "tensorboard")
    code, run_dir, err = _run(capsys, tmp_path)
    assert code == 0, err
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))


class _Failing:
    def __init__(self, run_dir: Path, opened: dict):
        self.writes = 0

    def write(self, record: dict) -> None:
        raise OSError(28, "No space left on device")

    def close(self) -> None:
        pass


def test_a_failing_sink_is_a_warning_and_the_run_is_done(capsys, tmp_path,
                                                         monkeypatch) -> None:
    monkeypatch.setitem(sinks.SINKS, "mlflow", _Failing)
    code, run_dir, err = _run(capsys, tmp_path, "--log-to", "mlflow")
    assert code == 0, err
    events = _events(run_dir)
    warns = [e["message"] for e in events if e["event"] == "warn"]
    assert len(warns) == 1 and "--log-to mlflow: OSError" in warns[0]
    assert "No space left on device" in warns[0]
    assert events[-1]["event"] == "close" and events[-1]["status"] == "done"
    assert len([e for e in events if e["event"] == "step"]) == 12


class _Hanging(_Failing):
    release = threading.Event()

    def write(self, record: dict) -> None:
        self.release.wait(60)  # a tracker server that never answers


def test_a_hanging_sink_does_not_hold_the_run(capsys, tmp_path, monkeypatch) -> None:
    """The sink blocks on its first event: every step still runs and the run closes,
    waiting for the sink only the close grace."""
    monkeypatch.setitem(sinks.SINKS, "wandb", _Hanging)
    monkeypatch.setattr(mirror, "CLOSE_GRACE_S", 0.2)
    try:
        code, run_dir, err = _run(capsys, tmp_path, "--log-to", "wandb")
    finally:
        _Hanging.release.set()
    assert code == 0, err
    events = _events(run_dir)
    assert len([e for e in events if e["event"] == "step"]) == 12
    assert events[-1]["status"] == "done"


def test_a_missing_package_is_a_warning_naming_it(capsys, tmp_path, monkeypatch) -> None:
    class Missing(_Failing):
        def __init__(self, run_dir: Path, opened: dict):
            raise ImportError("No module named 'wandb'")

    monkeypatch.setitem(sinks.SINKS, "wandb", Missing)
    code, run_dir, err = _run(capsys, tmp_path, "--log-to", "wandb")
    assert code == 0, err
    warns = [e["message"] for e in _events(run_dir) if e["event"] == "warn"]
    assert warns == ["--log-to wandb: the wandb package is not installed "
                     "(pip install 'sexpgpu[wandb]'); not mirrored"]


def test_an_unknown_tracker_is_a_usage_error(capsys, tmp_path) -> None:
    code, _, err = sexpgpu(capsys, "run", SWEEP_TINY, "--log-to", "tensorbord",
                           "--runs", tmp_path / "runs")
    assert code == 2 and "no tracker `tensorbord`" in err
    assert "did you mean `tensorboard`?" in err and not (tmp_path / "runs").exists()


def test_a_full_queue_drops_rather_than_waits(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(mirror, "QUEUE_SIZE", 2)
    monkeypatch.setitem(sinks.SINKS, "wandb", _Hanging)
    _Hanging.release.clear()
    m = mirror.Mirror({"wandb": _Hanging}, tmp_path)
    m.submit({"event": "open", "selection": {}})  # the sink opens, then hangs on it
    for _ in range(500):
        if m.sinks:
            break
        threading.Event().wait(0.01)
    for step in range(10):
        m.submit({"event": "step", "step": step, "loss": 1.0})
    assert m.dropped == 8  # two wait in the queue
    _Hanging.release.set()
    m.close(grace_s=5)


def test_scalars_name_each_event_kind() -> None:
    assert sinks.scalars({"event": "step", "time": 1.0, "step": 3, "loss": 0.5,
                          "lr": 0.1, "flag": True}) == {"train/loss": 0.5, "train/lr": 0.1}
    assert sinks.scalars({"event": "eval", "step": 3, "name": "val",
                          "metrics": {"val/loss": 2}}) == {"val/loss": 2.0}
    assert sinks.scalars({"event": "diag", "step": 3, "values": {"g": 1}}) == {"diag/g": 1.0}
    assert sinks.scalars({"event": "warn", "message": "x"}) == {}


def test_wandb_offline_run_has_the_history(capsys, tmp_path, monkeypatch) -> None:
    pytest.importorskip("wandb", reason="the wandb package is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    code, run_dir, err = _run(capsys, tmp_path, "--log-to", "wandb")
    assert code == 0, err
    assert not [e for e in _events(run_dir) if e["event"] == "warn"]
    assert list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))


def test_mlflow_file_store_has_the_metrics(capsys, tmp_path, monkeypatch) -> None:
    pytest.importorskip("mlflow", reason="the mlflow package is not installed")
    from mlflow.tracking import MlflowClient

    store = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # mlflow 3 prefers a database
    code, run_dir, err = _run(capsys, tmp_path, "--log-to", "mlflow")
    assert code == 0, err
    assert not [e for e in _events(run_dir) if e["event"] == "warn"]
    client = MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("sexpgpu").experiment_id])
    history = client.get_metric_history(run.info.run_id, "train/loss")
    steps = [e for e in _events(run_dir) if e["event"] == "step"]
    assert [m.step for m in history] == [e["step"] for e in steps]
