"""`sexpgpu diff A B`: differences by section in the compiled plans and the contract
forms, for run files and run directories; layout and comments are not differences."""

from __future__ import annotations

import shutil
from pathlib import Path

from cmd_helpers import ROOT, SWEEP_TINY, sexpgpu, sexpgpu_json

from sexpgpu.commands.fmt import format_text
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.runtime import rundir
from sexpgpu.selection import Selection


def _copy(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _sections(payload: dict) -> set[str]:
    return {name for name, found in payload["sections"].items()
            if found["plan"] or found["forms"]}


def test_layout_and_comments_are_not_differences(tmp_path, capsys) -> None:
    text = SWEEP_TINY.read_text(encoding="utf-8")
    other = _copy(tmp_path, "tiny.sx", ";; a new comment\n" + format_text(text))
    code, payload = sexpgpu_json(capsys, "diff", SWEEP_TINY, other)
    assert code == 0 and payload["same"] is True and not _sections(payload)
    code, out, _ = sexpgpu(capsys, "diff", SWEEP_TINY, other)
    assert out.startswith("no differences")


def test_a_knob_default_shows_in_knobs_and_where_it_flows(tmp_path, capsys) -> None:
    text = SWEEP_TINY.read_text(encoding="utf-8")
    other = _copy(tmp_path, "tiny.sx", text.replace("(defknob lr 1e-2", "(defknob lr 0.5"))
    code, payload = sexpgpu_json(capsys, "diff", SWEEP_TINY, other)
    assert code == 0 and payload["same"] is False
    assert _sections(payload) == {"knobs", "optimizer"}
    knobs = payload["sections"]["knobs"]
    assert knobs["plan"] == [{"path": "knobs.lr", "a": 0.01, "b": 0.5}]
    assert [f["form"] for f in knobs["forms"]] == ["defknob lr"]


def test_model_changes_are_model_and_objective(tmp_path, capsys) -> None:
    text = SWEEP_TINY.read_text(encoding="utf-8")
    other = _copy(tmp_path, "tiny.sx", text.replace("(nn:linear 4 8)", "(nn:linear 4 16)")
                  .replace("(nn:linear 8 2)", "(nn:linear 16 2)"))
    code, payload = sexpgpu_json(capsys, "diff", SWEEP_TINY, other)
    assert code == 0
    assert {"model", "objective"} <= _sections(payload) <= {"model", "objective", "optimizer"}
    paths = [c["path"] for c in payload["sections"]["model"]["plan"]]
    assert "parameters.tensors[l1/weight].shape" in paths
    code, out, _ = sexpgpu(capsys, "diff", SWEEP_TINY, other)
    assert "form defmodel net" in out and "parameters.total: 58 -> 114" in out


def test_two_run_directories_differ_by_their_selection(tmp_path, capsys) -> None:
    dirs = []
    for seed in ("1", "2"):
        plan = run_plan(compile_file(str(SWEEP_TINY), Selection({"seed": seed})))
        run_dir = tmp_path / "runs" / rundir.slug_for(plan)
        rundir.create(run_dir, plan)  # source/ and plan.json, as `sexpgpu run` writes them
        dirs.append(run_dir)
    code, payload = sexpgpu_json(capsys, "diff", *dirs)
    assert code == 0
    assert payload["sections"]["knobs"]["plan"] == [{"path": "knobs.seed", "a": 1, "b": 2}]
    assert payload["sections"]["run"]["plan"] == [{"path": "run.seed", "a": 1, "b": 2}]
    assert _sections(payload) == {"knobs", "run"}


def test_a_path_that_is_neither_is_a_diagnostic(tmp_path, capsys) -> None:
    code, payload = sexpgpu_json(capsys, "diff", tmp_path, SWEEP_TINY)
    assert code == 1 and payload["diagnostics"][0]["code"] == "E-DIFF-INPUT"
    code, payload = sexpgpu_json(capsys, "diff", SWEEP_TINY, tmp_path / "nope.sx")
    assert code == 1 and payload["diagnostics"][0]["code"] == "E-DIFF-INPUT"


def test_diff_of_two_examples_names_every_section_that_differs(tmp_path, capsys) -> None:
    a = shutil.copy(ROOT / "examples" / "mnist1d-logreg.sx", tmp_path / "a.sx")
    code, payload = sexpgpu_json(capsys, "diff", a, ROOT / "examples" / "mnist1d-mlp.sx")
    assert code == 0 and {"knobs", "model", "objective"} <= _sections(payload)
    assert "data" not in _sections(payload)


def test_a_learning_rate_alone_is_no_graph_difference(tmp_path, capsys) -> None:
    """lr 1.0 makes its constant merge with another one: one node fewer, a different
    activation peak, and still the same computation."""
    text = (ROOT / "examples" / "mnist1d-mlp.sx").read_text(encoding="utf-8")
    other = _copy(tmp_path, "mlp.sx", text.replace("(defknob lr 1e-2", "(defknob lr 1.0"))
    code, payload = sexpgpu_json(capsys, "diff", ROOT / "examples" / "mnist1d-mlp.sx", other)
    assert code == 0 and _sections(payload) == {"knobs", "optimizer"}
    (change,) = payload["sections"]["optimizer"]["plan"]
    assert change["path"].endswith("hyperparameters.lr") and change["b"] == 1.0


def test_a_schedule_differs_by_its_arguments(tmp_path, capsys) -> None:
    gpt = ROOT / "examples" / "shakespeare-char.sx"
    text = gpt.read_text(encoding="utf-8")
    other = _copy(tmp_path, gpt.name, text.replace("(defknob warmup 100", "(defknob warmup 50"))
    code, payload = sexpgpu_json(capsys, "diff", gpt, other)
    assert code == 0
    paths = [c["path"] for c in payload["sections"]["optimizer"]["plan"]]
    assert paths == ["optimizer.groups[:ndim 1].hyperparameters.lr.params.warmup",
                     "optimizer.groups[(all other parameters)].hyperparameters.lr.params.warmup"]
    code, out, _ = sexpgpu(capsys, "diff", gpt, other)
    assert "hyperparameters.lr.params.warmup: 100 -> 50" in out


def test_two_runs_compare_their_results(tmp_path, capsys) -> None:
    runs = tmp_path / "runs"
    for lr in ("1e-2", "1e-3"):
        code, _, err = sexpgpu(capsys, "run", SWEEP_TINY, f"lr={lr}", "steps=4", "--runs", runs,
                               "--progress-every", "0")
        assert code == 0, err
    a, b = sorted(p for p in runs.iterdir() if p.is_dir())  # lr=0.001 sorts first
    code, payload = sexpgpu_json(capsys, "diff", a, b)
    assert code == 0 and _sections(payload) == {"knobs", "optimizer"}
    results = payload["results"]
    assert results["a"]["state"] == results["b"]["state"] == "done"
    assert results["a"]["step"] == results["b"]["step"] == 4
    assert [m["name"] for m in results["metrics"]] == ["loss", "test/loss", "test/accuracy"]
    loss = results["metrics"][0]
    assert loss["delta"] == loss["b"] - loss["a"]
    (target,) = results["targets"]
    assert target["metric"] == "test/accuracy" and target["a"]["met"] is True
    code, out, _ = sexpgpu(capsys, "diff", a, b)
    lines = out.splitlines()
    at = lines.index("results")
    assert lines[at + 1] == "  state: done -> done" and lines[at + 2] == "  steps: 4 of 4 -> 4 of 4"
    assert lines[at + 3].startswith("  time: ")
    # the open event's thread policy, the same on both sides
    assert results["a"]["threads"] == results["b"]["threads"]
    assert results["a"]["threads"]["policy"] in ("auto", "fixed")
    assert lines[at + 4].startswith(("  threads: auto ", "  threads: fixed ")) \
        and "(differ)" not in lines[at + 4]
    assert lines[at + 5].startswith("  loss: ") and "(" in lines[at + 5]
    assert lines[-1].startswith("  target test/accuracy >= 0: ") and lines[-1].endswith(" met")
