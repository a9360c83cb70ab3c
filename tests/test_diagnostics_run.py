"""Run diagnostics: `(diagnostic ...)` and the built-in set, selected with `--diag`.

Trace-level tests run the diagnostics graph through the numpy reference interpreter
(no numba); one module-scoped `sexpgpu run` checks the sampled values against the step
events and the checkpoints written around the sampled step."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.reference import run_reference
from sexpgpu.runtime.compiled import init_param

HERE = Path(__file__).resolve().parent / "diag"
TINY = HERE / "tiny-mlp.sx"
ATTN = HERE / "tiny-attn.sx"


def _ops(graph) -> list[str]:
    return [node.op for node in graph.nodes]


def _params(compiled, seed: int = 1) -> dict[str, np.ndarray]:
    return {spec.path: init_param(spec, seed) for spec in compiled.params}


def _batch(n: int = 32) -> dict[str, np.ndarray]:
    from sexpgpu.data.synthetic import synthetic_source

    data = synthetic_source({"task": "classes", "n": 256, "dim": 8, "classes": 4, "seed": 3})
    return {name: np.asarray(data.arrays[name][:n]) for name in ("x", "y")}


def _reference(compiled, params: dict[str, np.ndarray], batch: dict[str, np.ndarray]) -> dict:
    graph = compiled.diagnostics.graph
    inputs = {**params, **{f"data/{k}": v for k, v in batch.items()}, "rng/seed": np.int64(1)}
    return {k: float(v) for k, v in run_reference(graph, inputs).items()}


# -- zero cost when unselected ------------------------------------------------------


def test_diagnostic_forms_add_no_node_to_the_step_graph(tmp_path):
    text = TINY.read_text(encoding="utf-8")
    bare = tmp_path / "tiny-mlp.sx"
    bare.write_text("\n".join(line for line in text.splitlines()
                              if "(diagnostic " not in line), encoding="utf-8")
    with_forms = compile_file(str(TINY)).graphs.step
    without = compile_file(str(bare)).graphs.step
    selected = compile_file(str(TINY), diagnostics=["*"])
    assert _ops(with_forms) == _ops(without)
    assert _ops(selected.graphs.step) == _ops(without)
    assert selected.diagnostics.graph is not None  # the selection went to its own graph


def test_diag_graph_outputs_exactly_the_selection_and_writes_nothing():
    compiled = compile_file(str(TINY), diagnostics=["logit-max", "dead-frac*"])
    diag = compiled.diagnostics
    assert diag.names == ["dead-frac/hid", "logit-max"]
    assert list(diag.graph.outputs) == diag.names
    assert diag.graph.updates == {}
    # no gradient was asked for: no optimizer state, no backward ops, fewer nodes
    assert {v.role for v in diag.graph.inputs} == {"param", "data"}
    assert len(diag.graph.nodes) < len(compiled.graphs.step.nodes) // 2
    assert "grad-norm/out/weight" in diag.available
    assert "act-rms/hid/lin" in diag.available


# -- values --------------------------------------------------------------------------


def test_user_and_activation_diagnostics_match_numpy():
    compiled = compile_file(str(TINY), diagnostics=["dead-frac/*", "logit-max", "act-rms/*",
                                                    "weight-norm/out/weight"])
    params, batch = _params(compiled), _batch()
    got = _reference(compiled, params, batch)
    pre = batch["x"] @ params["hid/lin/weight"].T + params["hid/lin/bias"]  # (B hidden)
    h = np.maximum(pre, 0.0)
    logits = h @ params["out/weight"].T + params["out/bias"]  # (B 4)
    want = {
        "dead-frac/hid": np.mean(h == 0.0),
        "logit-max": logits.max(),
        "act-rms/hid/lin": np.sqrt(np.mean(pre ** 2)),
        "act-rms/hid": np.sqrt(np.mean(h ** 2)),
        "act-rms/out": np.sqrt(np.mean(logits ** 2)),
        "weight-norm/out/weight": np.linalg.norm(params["out/weight"]),
    }
    assert set(got) == set(want)
    for name, value in want.items():
        assert got[name] == pytest.approx(float(value), rel=1e-5), name


def test_attention_entropy_of_uniform_attention_is_the_mean_log_row_length():
    compiled = compile_file(str(ATTN), diagnostics=["attn-entropy/*"])
    diag = compiled.diagnostics
    assert diag.names == ["attn-entropy/blocks/0/attn", "attn-entropy/blocks/1/attn"]
    params = _params(compiled)
    for name in params:
        if "/c-attn/" in name:  # q = k = 0: each causal row is uniform over i + 1 positions
            params[name][...] = 0.0
    rng = np.random.default_rng(0)
    batch = {"x": rng.integers(0, 2, (16, 8)).astype(np.float32), "y": np.zeros(16, np.int64)}
    got = _reference(compiled, params, batch)
    uniform = np.mean([math.log(i + 1) for i in range(4)])
    for name in diag.names:
        assert got[name] == pytest.approx(uniform, rel=1e-4)


def test_repeated_calls_of_one_child_are_combined():
    from sexpgpu.trace.health import families

    compiled = compile_file(str(ATTN), diagnostics=["act-rms/blocks/*"])
    names = compiled.diagnostics.names
    assert "act-rms/blocks/0" in names and "act-rms/blocks/1/mlp/c-fc" in names
    assert len(names) == len(set(names))
    assert families(["grad-norm", "grad-norm/a", "grad-norm/b", "x"]) == \
        ["grad-norm", "grad-norm/* (2)", "x"]


# -- errors and warnings --------------------------------------------------------------


def _variant(tmp_path, old: str, new: str) -> str:
    text = TINY.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "bad.sx"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return str(path)


def test_unknown_pattern_is_w_diag_nomatch():
    compiled = compile_file(str(TINY), diagnostics=["grad-nrom*"])
    diag = compiled.diagnostics
    assert diag.graph is None and diag.names == []
    (warning,) = diag.warnings
    assert warning.code == "W-DIAG-NOMATCH"
    assert "grad-norm" in warning.fix and "act-rms/* (3)" in warning.expected


@pytest.mark.parametrize("old, new, message, line, col, diagnostics", [
    ("logits :reduce :max)", "logits :reduce :maxx)", "unknown diagnostic reduction",
     25, 7, None),
    ("logits :reduce :max)", "logits :reduce :none)", "not a scalar", 25, 7, ["*"]),
    ("logits :reduce :max)", "'logits :reduce :max)", "not a tensor", 25, 7, ["*"]),
    ("(diagnostic logit-max", "(diagnostic grad-norm", "shadows a built-in", 25, 7, ["*"]),
    ("(diagnostic logit-max logits", "(diagnostic logit-max (amin logits)) (diagnostic "
     "logit-max logits", "two reductions", 25, 44, ["*"]),
])
def test_bad_diagnostic_is_e_diag(tmp_path, old, new, message, line, col, diagnostics):
    path = _variant(tmp_path, old, new)
    with pytest.raises(SexpError) as info:
        compile_file(path, diagnostics=diagnostics)
    found = info.value.diagnostic
    assert found.code == "E-DIAG" and message in found.message
    assert (found.span.line, found.span.col) == (line, col)


@pytest.mark.parametrize("every, patterns, message", [
    ("0", ["grad-norm"], "not a positive step count"),
    ("ten", ["grad-norm"], "not a positive step count"),
    ("5", [], "without --diag"),
])
def test_bad_diag_every_is_e_diag(every, patterns, message):
    from sexpgpu.runtime.health import cadence

    with pytest.raises(SexpError) as info:
        cadence(every, patterns, 0, 10)
    assert info.value.diagnostic.code == "E-DIAG" and message in info.value.diagnostic.message


def test_defrun_diag_every_is_the_default_cadence(tmp_path):
    path = _variant(tmp_path, ":log-every 1)", ":log-every 1 :diag-every 5)")
    assert compile_file(path, trace=False).experiment.run.diag_every == 5


def test_with_microbatches_the_diagnostics_see_one_microbatch(tmp_path):
    path = _variant(tmp_path, ":log-every 1)", ":log-every 1 :microbatches 2)")
    graph = compile_file(path, diagnostics=["grad-norm"]).diagnostics.graph
    shapes = {v.name: v.shape for v in graph.inputs if v.role == "data"}
    assert shapes == {"data/x": (16, 8), "data/y": (16,)}


def test_cadence_defaults():
    from sexpgpu.runtime.health import cadence

    assert cadence(None, [], 7, 10) == 0          # nothing selected: never
    assert cadence(None, ["*"], 7, 10) == 7       # defrun :diag-every
    assert cadence(None, ["*"], 0, 10) == 10      # else the log cadence
    assert cadence("3", ["*"], 7, 10) == 3        # --diag-every wins


# -- one real run ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`sexpgpu run` with diagnostics sampled at steps 3 and 6, a checkpoint every step."""
    from sexpgpu.cli import main

    tmp = tmp_path_factory.mktemp("diag-run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEXPGPU_CACHE_DIR", str(tmp / "cache"))
        import io
        import sys

        out, err = io.StringIO(), io.StringIO()
        mp.setattr(sys, "stdout", out)
        mp.setattr(sys, "stderr", err)
        code = main(["run", str(TINY), "--set", "steps=6", "--runs", str(tmp / "runs"),
                     "--diag", "grad-norm*", "--diag", "update-ratio/*", "--diag",
                     "weight-norm/*", "--diag", "logit-max", "--diag", "nope*",
                     "--diag-every", "3", "--checkpoint-every", "1", "--json"])
    summary = orjson.loads(out.getvalue())
    run_dir = Path(summary["run_dir"])
    events = [orjson.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return code, summary, events, err.getvalue(), run_dir


def test_run_writes_diag_events_at_the_cadence(run):
    code, summary, events, stderr, _ = run
    assert code == 0 and summary["state"] == "done"
    diags = [e for e in events if e["event"] == "diag"]
    assert [e["step"] for e in diags] == [3, 6]
    assert "warning[W-DIAG-NOMATCH]: --diag nope* matches no diagnostic" in stderr
    assert "logit-max" in diags[0]["values"]
    assert not any(name.startswith("act-rms") for name in diags[0]["values"])


def test_global_grad_norm_equals_the_step_events(run):
    _, _, events, _, _ = run
    steps = {e["step"]: e for e in events if e["event"] == "step"}
    for diag in (e for e in events if e["event"] == "diag"):
        assert diag["values"]["grad-norm"] == pytest.approx(steps[diag["step"]]["grad_norm"],
                                                            rel=1e-5)
        per_param = [v for k, v in diag["values"].items() if k.startswith("grad-norm/")]
        assert len(per_param) == 4
        assert math.sqrt(sum(v * v for v in per_param)) == pytest.approx(
            diag["values"]["grad-norm"], rel=1e-5)


def test_update_ratio_and_weight_norm_match_the_checkpoints(run):
    from sexpgpu.runtime.checkpoint import load_checkpoint

    _, _, events, _, run_dir = run
    values = next(e for e in events if e["event"] == "diag" and e["step"] == 6)["values"]
    before = load_checkpoint(run_dir / "checkpoints" / "step-000005").params
    after = load_checkpoint(run_dir / "checkpoints" / "step-000006").params
    for path, w in before.items():
        assert values[f"weight-norm/{path}"] == pytest.approx(np.linalg.norm(w), rel=1e-5)
        ratio = np.linalg.norm(after[path] - w) / np.linalg.norm(w)
        assert values[f"update-ratio/{path}"] == pytest.approx(ratio, rel=1e-3)
