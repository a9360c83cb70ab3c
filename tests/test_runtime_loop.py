"""The training loop in-process with the numpy test double: outcomes, events, refusals."""

import io
import math
import os
import signal

import numpy as np
import orjson
import pytest

from sexpgpu.data.spec import LoaderSpec
from sexpgpu.diagnostics import SexpError
from sexpgpu.runtime import rundir
from sexpgpu.runtime.events import EventLog, last_by_step, read_events
from sexpgpu.runtime.loop import run_training
from sexpgpu.runtime.numpy_program import SoftmaxRegression, demo_plan
from sexpgpu.runtime.schema import errors, load_schema


def _train(tmp_path, runs="runs", resume=None, program=None, **plan_kw):
    plan = demo_plan(str(tmp_path / "demo.sx"), **plan_kw)
    program = program or SoftmaxRegression(8, 4)
    code, summary = run_training(plan, program, tmp_path / runs, resume=resume)
    return code, summary, program


def test_a_run_finishes_with_valid_events_and_status(tmp_path):
    code, summary, _ = _train(tmp_path, steps=40)
    assert code == 0 and summary["state"] == "done" and summary["step"] == 40
    assert summary["targets_met"] is True and summary["targets"][0]["actual"] > 0.5
    run_dir = tmp_path / "runs" / summary["run"]
    assert sorted(p.name for p in run_dir.iterdir() if not p.name.startswith(".")) == [
        "checkpoints", "events.jsonl", "plan.json", "source", "status.json"]
    assert (run_dir / "source" / "demo.sx").read_text() == "(defrun :steps 60)"
    events = read_events(run_dir / "events.jsonl")
    schema = load_schema("events")
    assert [e for e in events if errors(e, schema)] == []
    kinds = [e["event"] for e in events]
    assert kinds[0] == "open" and kinds[-1] == "close" and kinds.count("step") == 40
    assert kinds.count("eval") == 2 and kinds.count("checkpoint") == 4
    status = orjson.loads((run_dir / "status.json").read_bytes())
    assert errors(status, load_schema("status")) == []
    assert status["state"] == "done" and status["latest_checkpoint"] == "checkpoints/step-000040"
    assert [p.name for p in (run_dir / "checkpoints").iterdir()] != []
    assert len(list((run_dir / "checkpoints").iterdir())) == 3  # keep_checkpoints


def test_four_microbatches_equal_one_batch(tmp_path):
    _, _, whole = _train(tmp_path, runs="a", steps=10, batch=100, microbatches=1)
    _, _, split = _train(tmp_path, runs="b", steps=10, batch=100, microbatches=4)
    for name, value in whole.params().items():
        np.testing.assert_allclose(split.params()[name], value, rtol=0, atol=1e-6)


def test_nonfinite_loss_stops_with_exit_3_and_resumes(tmp_path):
    code, summary, _ = _train(tmp_path, steps=30, program=SoftmaxRegression(8, 4, nan_at_step=17))
    assert code == 3 and summary["state"] == "failed"
    assert summary["error"]["code"] == "E-NONFINITE"
    assert "step 17" in summary["error"]["message"] and "grad b" in summary["error"]["actual"]
    run_dir = tmp_path / "runs" / summary["run"]
    status = orjson.loads((run_dir / "status.json").read_bytes())
    assert status["state"] == "failed" and status["error"]["code"] == "E-NONFINITE"
    assert status["latest_checkpoint"] == "checkpoints/step-000010"
    code, resumed, program = _train(tmp_path, steps=30, resume="latest")
    assert code == 0 and resumed["resumed_from"] == 10 and resumed["step"] == 30
    _, clean, reference = _train(tmp_path, runs="clean", steps=30)
    np.testing.assert_array_equal(program.params()["W"], reference.params()["W"])


def test_running_again_is_refused(tmp_path):
    _train(tmp_path, steps=5)
    with pytest.raises(SexpError) as info:
        _train(tmp_path, steps=5)
    assert info.value.diagnostic.code == "E-RUN-EXISTS" and "done" in info.value.diagnostic.message


def test_resume_with_changed_source_or_selection_is_refused(tmp_path):
    _train(tmp_path, steps=20, selection={"lr": 0.05}, source="(defrun)\n(a)\n")
    with pytest.raises(SexpError) as info:
        _train(tmp_path, steps=20, selection={"lr": 0.05}, source="(defrun)\n(b)\n",
               resume="latest")
    diag = info.value.diagnostic
    assert diag.code == "E-RESUME-MISMATCH" and "demo.sx changed (first at line 2)" in diag.actual
    first = next((tmp_path / "runs").iterdir())
    with pytest.raises(SexpError) as info:
        _train(tmp_path, steps=20, selection={"lr": 0.1}, source="(defrun)\n(a)\n",
               resume=str(first / "checkpoints" / "step-000020"))
    diag = info.value.diagnostic
    assert diag.code == "E-RESUME-MISMATCH" and "selection lr: 0.05 -> 0.1" in diag.actual


def test_resume_latest_without_any_run(tmp_path):
    with pytest.raises(SexpError) as info:
        _train(tmp_path, steps=5, resume="latest")
    assert info.value.diagnostic.code == "E-CHECKPOINT"


def test_corrupt_newest_checkpoint_falls_back_with_a_warning(tmp_path):
    _, summary, _ = _train(tmp_path, steps=30)
    run_dir = tmp_path / "runs" / summary["run"]
    newest = run_dir / "checkpoints" / "step-000030"
    (newest / "params.npz").write_bytes((newest / "params.npz").read_bytes()[:100])
    code, resumed, _ = _train(tmp_path, steps=30, resume="latest")
    assert code == 0 and resumed["resumed_from"] == 20
    warns = [e["message"] for e in read_events(run_dir / "events.jsonl") if e["event"] == "warn"]
    assert any("skipped checkpoint step-000030" in w for w in warns)


def test_missing_data_file_is_exit_3_with_e_data(tmp_path):
    plan = demo_plan(str(tmp_path / "demo.sx"), steps=5)
    plan.loaders[0] = LoaderSpec("train", "npz", {"path": "missing.npz"}, batch=4)
    code, summary = run_training(plan, SoftmaxRegression(8, 4), tmp_path / "runs")
    assert code == 3 and summary["error"]["code"] == "E-DATA"
    assert "missing.npz" in summary["error"]["message"]


def test_ctx_carries_step_and_counters(tmp_path):
    seen = []

    class Recording(SoftmaxRegression):
        def train_step(self, microbatches, ctx):
            seen.append(dict(ctx))
            return super().train_step(microbatches, ctx)

    _train(tmp_path, steps=3, batch=32, microbatches=2, program=Recording(8, 4))
    assert [c["step"] for c in seen] == [0, 1, 2]
    assert [c["microstep"] for c in seen] == [0, 2, 4]
    assert [c["samples"] for c in seen] == [0, 32, 64]
    assert all(c["epoch"] == 0 and c["stage"] == 0 and c["tokens"] == 0 for c in seen)


def test_step_losses_are_logged_at_the_cadence(tmp_path):
    _, summary, _ = _train(tmp_path, steps=25, log_every=10)
    steps = last_by_step(read_events(tmp_path / "runs" / summary["run"] / "events.jsonl"))
    assert sorted(steps) == [1, 10, 20, 25]
    assert all(math.isfinite(e["loss"]) for e in steps.values())


def test_checkpoint_that_does_not_fit_the_program(tmp_path):
    _, summary, _ = _train(tmp_path, steps=10)
    code, failed, _ = _train(tmp_path, steps=10, resume="latest", program=SoftmaxRegression(8, 5))
    assert code == 1 and failed["error"]["code"] == "E-CHECKPOINT"
    status = orjson.loads((tmp_path / "runs" / summary["run"] / "status.json").read_bytes())
    assert status["state"] == "failed" and status["error"]["code"] == "E-CHECKPOINT"


def test_progress_rewritten_on_a_terminal_plain_off_one(tmp_path):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    shown, plain = Terminal(), io.StringIO()
    for name, stream in (("a", shown), ("b", plain)):
        plan = demo_plan(str(tmp_path / "demo.sx"), steps=3)
        run_training(plan, SoftmaxRegression(8, 4), tmp_path / name, stderr=stream)
    assert "\rstep 3/3  loss" in shown.getvalue()
    lines = plain.getvalue().splitlines()  # the first and the last step, no more in 30 s
    assert [line.split("  ")[0] for line in lines] == ["step 1/3", "step 3/3"]


def test_torn_last_event_line_is_cut_on_reopen(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"event":"warn","time":1.0,"message":"ok"}\n{"event":"st')
    log = EventLog(path)
    log.emit("annotation", message="after")
    log.close()
    assert [e["event"] for e in read_events(path)] == ["warn", "annotation"]


def test_a_line_still_being_written_is_not_read(tmp_path):
    """A reader of a live run's log sees only whole lines: the writer's last line may
    end, mid-write, where it happens to parse, or where it does not."""
    path = tmp_path / "events.jsonl"
    whole = b'{"event":"step","step":1,"loss":2.0}\n'
    for tail in (b'{"event":"step","step":2,"lo', b'{"event":"step","step":2}'):
        path.write_bytes(whole + tail)
        assert read_events(path) == [{"event": "step", "step": 1, "loss": 2.0}]


def test_resuming_a_finished_run_reports_it_again(tmp_path):
    _, first, _ = _train(tmp_path, steps=20)
    code, again, _ = _train(tmp_path, steps=20, resume="latest")
    assert code == 0 and again["resumed_from"] == 20 and again["targets"] == first["targets"]
    events = read_events(tmp_path / "runs" / first["run"] / "events.jsonl")
    assert [e["event"] for e in events].count("step") == 20  # nothing was trained twice


def test_a_run_in_progress_is_not_run_twice(tmp_path):
    _, summary, _ = _train(tmp_path, steps=10)
    held = rundir.lock(tmp_path / "runs" / summary["run"])  # as if another process ran it
    try:
        with pytest.raises(SexpError) as info:
            _train(tmp_path, steps=10, resume="latest")
    finally:
        os.close(held)
    assert info.value.diagnostic.code == "E-RUN-EXISTS"
    assert "another process" in info.value.diagnostic.message
    assert _train(tmp_path, steps=10, resume="latest")[0] == 0


def test_mnist1d_in_order_batches_of_100(tmp_path, monkeypatch):
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))
    plan = demo_plan(str(tmp_path / "mnist.sx"), steps=41, batch=100, log_every=40)
    plan.loaders = [LoaderSpec("train", "mnist1d", {"split": "train"}, batch=100),
                    LoaderSpec("test", "mnist1d", {"split": "test"}, batch=500)]
    plan.targets = []
    code, summary = run_training(plan, SoftmaxRegression(40, 10), tmp_path / "runs")
    steps = last_by_step(read_events(tmp_path / "runs" / summary["run"] / "events.jsonl"))
    assert code == 0 and steps[41]["loss"] < steps[1]["loss"]
    assert steps[40]["epoch"] == 1  # 40 batches of 100 are one pass over the 4000
    assert 0.1 < summary["last_eval"]["test/accuracy"] <= 1.0


class _SignalledAtTheEnd(SoftmaxRegression):
    """Sends itself SIGTERM during the final evaluation, after the last step."""

    def __init__(self, steps: int):
        super().__init__(8, 4)
        self.steps_done, self.steps, self.sent = 0, steps, False

    def train_step(self, microbatches, ctx):
        self.steps_done += 1
        return super().train_step(microbatches, ctx)

    def evaluate(self, batch, ctx, name=None):
        if self.steps_done == self.steps and not self.sent:  # once: a second one stops at once
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)
        return super().evaluate(batch, ctx, name)


def test_a_stop_signal_while_a_finished_run_closes_leaves_it_done(tmp_path):
    # the handlers stay installed until the run has closed: the default SIGTERM
    # handler would kill the process between the last step and `close`
    code, summary, _ = _train(tmp_path, steps=25, program=_SignalledAtTheEnd(25))
    assert code == 0 and summary["state"] == "done" and summary["step"] == 25


def test_targets_read_the_last_steps_outputs(tmp_path):
    from sexpgpu.runtime.spec import TargetSpec

    plan = demo_plan(str(tmp_path / "demo.sx"), steps=12)
    plan.targets = [TargetSpec("train/grad_norm", ">=", 0.0), TargetSpec("lr", ">", 0.0),
                    TargetSpec("test/accuracy", ">=", 0.0)]
    code, summary = run_training(plan, SoftmaxRegression(8, 4), tmp_path / "runs")
    assert code == 0
    assert all(t["actual"] is not None and t["met"] for t in summary["targets"])
    # a resumed run that has no step left still knows them (saved in the checkpoint)
    code, again = run_training(plan, SoftmaxRegression(8, 4), tmp_path / "runs",
                               resume="latest")
    assert [t["actual"] for t in again["targets"]] == [t["actual"] for t in summary["targets"]]
