"""The examples compile and check; explain's numbers equal independent counts from
the architectures (GPT and MNIST-1D CNN parameters, the MLP step's matmul FLOPs, the
GRU's initialisers against PyTorch's defaults)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import pytest

from sexpgpu import cli
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import plan_json
from sexpgpu.selection import Selection

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MNIST1D = ["mnist1d-logreg", "mnist1d-mlp", "mnist1d-cnn", "mnist1d-gru"]


@pytest.fixture(scope="module")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """CI has no Tiny Shakespeare: a small generated text stands in for it."""
    path = tmp_path_factory.mktemp("data") / "input.txt"
    path.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 40)
    return str(path)


@pytest.fixture(scope="module")
def gpt(text_file: str):  # noqa: ANN201 - a CompiledExperiment
    return compile_file(str(EXAMPLES / "shakespeare-char.sx"),
                        Selection.from_args([f"data={text_file}"]))


@pytest.mark.parametrize("name", MNIST1D)
def test_check_passes(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", str(EXAMPLES / f"{name}.sx")]) == 0
    assert capsys.readouterr().out.startswith("ok ")


def test_check_passes_on_the_gpt(text_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "shakespeare-char.sx")
    assert cli.main(["check", path, "--set", f"data={text_file}", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["ok"] is True


def test_gpt_checks_without_its_text_file(capsys: pytest.CaptureFixture[str]) -> None:
    """Shapes come from the context knob: check passes and says the file is absent."""
    path = str(EXAMPLES / "shakespeare-char.sx")
    assert cli.main(["check", path, "--set", "data=/nonexistent/input.txt", "--json"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert out["ok"] is True
    assert {w["code"] for w in out["warnings"]} == {"W-DATA-ABSENT"}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.sx")), ids=lambda p: p.stem)
def test_examples_are_short_and_declare_steps(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 120
    assert "(defknob steps " in text


def test_gpt_parameter_count_matches_the_architecture(gpt) -> None:  # noqa: ANN001
    vocab, ctx, n_layer, d = 65, 64, 4, 128
    per_block = d + 3 * d * d + d * d + d + 4 * d * d + 4 * d * d   # ln, attn, ln, mlp
    expected = vocab * d + ctx * d + n_layer * per_block + d       # lm-head tied to wte
    plan = plan_json(gpt)
    assert plan["parameters"]["total"] == expected == 804_096
    wte = next(p for p in plan["parameters"]["tensors"] if p["path"] == "wte/weight")
    assert wte["tied"] == ["lm-head/weight"]
    assert not any(p["path"] == "lm-head/weight" for p in plan["parameters"]["tensors"])


def test_gpt_decays_matrices_only(gpt) -> None:  # noqa: ANN001
    groups = plan_json(gpt)["optimizer"]["groups"]
    no_decay, decay = groups
    assert no_decay["hyperparameters"]["weight-decay"] == 0.0
    assert len(no_decay["params"]) == 4 * 2 + 1                  # layer norms, no biases
    assert decay["hyperparameters"]["weight-decay"] == pytest.approx(0.1)
    lr = decay["hyperparameters"]["lr"]  # the schedule, its arguments, its values
    assert lr["schedule"] == "optim:cosine"
    assert lr["params"] == {"peak": 0.001, "final": 0.0001, "warmup": 100, "steps": 2000}
    assert list(lr["at"]) == ["0", "99", "499", "999", "1499", "1999"]
    assert lr["at"]["99"] == pytest.approx(1e-3 * 100 / 101)      # warming up
    assert lr["at"]["999"] == pytest.approx(1e-4 + 0.5 * (1 + math.cos(math.pi * 899 / 1900))
                                            * 9e-4, rel=1e-5)     # half a cosine down
    assert lr["at"]["1999"] == pytest.approx(1e-4, rel=1e-4)
    assert plan_json(gpt)["optimizer"]["clip"] == 1.0


def test_cnn_parameter_count_matches_the_architecture() -> None:
    c, length = 25, 40
    for kernel in (5, 3, 3):
        length = (length + 2 - kernel) // 2 + 1                      # stride 2, padding 1
    expected = (c * 1 * 5 + c) + 2 * (c * c * 3 + c) + (c * length * 10 + 10)
    plan = plan_json(compile_file(str(EXAMPLES / "mnist1d-cnn.sx")))
    assert plan["parameters"]["total"] == expected == 5_210


def test_gru_parameter_count_matches_pytorch() -> None:
    hidden, steps = 6, 40
    per_direction = 3 * hidden * 1 + 3 * hidden * hidden + 2 * 3 * hidden
    expected = 2 * per_direction + (2 * hidden * steps * 10 + 10)
    plan = plan_json(compile_file(str(EXAMPLES / "mnist1d-gru.sx")))
    assert plan["parameters"]["total"] == expected == 5_134


def test_gru_initialisers_match_pytorch_defaults() -> None:
    """nn.GRU draws every weight and bias from U(+-1/sqrt(hidden)); nn.Linear draws its
    weight by kaiming_uniform_(a=sqrt(5)), bound gain*sqrt(3/fan_in) with gain
    sqrt(2/(1+a^2)), and its bias from U(+-1/sqrt(fan_in)) (torch/nn/modules/rnn.py and
    linear.py, reset_parameters). Issue 20 suspected a different distribution."""
    from sexpgpu.runtime.compiled import init_param

    hidden, fan_in = 6, 2 * 6 * 40
    gain = math.sqrt(2.0 / (1.0 + 5.0))
    bounds = {"weight-ih": 1 / math.sqrt(hidden), "weight-hh": 1 / math.sqrt(hidden),
              "bias-ih": 1 / math.sqrt(hidden), "bias-hh": 1 / math.sqrt(hidden)}
    expected = {f"gru/cells/{cell}/{name}": bound
                for cell in (0, 1) for name, bound in bounds.items()}
    expected["linear/weight"] = gain * math.sqrt(3.0 / fan_in)
    expected["linear/bias"] = 1 / math.sqrt(fan_in)
    specs = {s.path: s for s in compile_file(str(EXAMPLES / "mnist1d-gru.sx")).params}
    assert set(specs) == set(expected)
    for path, bound in expected.items():
        init = specs[path].init
        assert init.dist == "uniform", path
        assert init.params["low"] == pytest.approx(-bound, rel=1e-6), path
        assert init.params["high"] == pytest.approx(bound, rel=1e-6), path
    # and the drawn values fill that interval as a uniform distribution does
    weight = init_param(specs["linear/weight"], seed=7).astype(np.float64).ravel()
    bound = expected["linear/weight"]
    assert np.all(np.abs(weight) < bound)
    assert abs(weight.mean()) < 4 * bound / math.sqrt(3 * weight.size)
    assert weight.var() == pytest.approx(bound**2 / 3, rel=0.05)


def test_mlp_step_flops_equal_a_hand_count() -> None:
    batch, sizes = 100, [(40, 256), (256, 256), (256, 10)]
    forward = sum(2 * batch * i * o for i, o in sizes)               # x @ W^T per layer
    # backward: dW for every layer, dx for all but the first (x is data)
    backward = sum(2 * batch * i * o for i, o in sizes) * 2 - 2 * batch * 40 * 256
    step = plan_json(compile_file(str(EXAMPLES / "mnist1d-mlp.sx")))["step"]["train_step"]
    assert step["flops_by_section"]["forward"]["matmul"] == forward
    assert step["flops_by_section"]["backward"]["matmul"] == backward
    assert step["flops"]["matmul"] == forward + backward
    assert step["flops_by_section"]["update"]["matmul"] == 0


def test_explain_memory(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", str(EXAMPLES / "mnist1d-mlp.sx"), "--json"]) == 0
    memory = orjson.loads(capsys.readouterr().out)["memory"]
    assert memory["params_bytes"] == 78_858 * 4 == memory["grads_bytes"]
    assert memory["optimizer_state_bytes"] == 2 * 78_858 * 4           # adam: m and v
    assert memory["peak_activation_bytes"] > 100 * 256 * 4


def test_explain_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", str(EXAMPLES / "mnist1d-cnn.sx")]) == 0
    out = capsys.readouterr().out
    assert "conv1/weight" in out and "5,210" in out and "peak activations" in out


def test_ir_prints_forward_backward_update(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ir", str(EXAMPLES / "mnist1d-logreg.sx"), "--no-lower"]) == 0
    out = capsys.readouterr().out
    for section in (";; forward", ";; backward", ";; update", "graph evaluate/test"):
        assert section in out
    assert "matmul" in out


def test_variants_lists_sweep_points(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["variants", str(EXAMPLES / "mnist1d-mlp.sx"), "--json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    sweeps = {s["name"]: s for s in data["sweeps"]}
    assert [p["lr"] for p in sweeps["lr-scan"]["points"]] == [3e-3, 1e-2, 3e-2]
    assert sweeps["width"]["zip"] and len(sweeps["width"]["points"]) == 4
    assert {k["name"] for k in data["knobs"]} >= {"steps", "lr", "hidden"}
    assert {v["name"] for v in data["variants"]} == {"small", "smoke"}


def test_variant_changes_the_model() -> None:
    compiled = compile_file(str(EXAMPLES / "mnist1d-mlp.sx"), Selection(variant="small"))
    shapes = {p.path: p.shape for p in compiled.params}
    assert shapes["l2/weight"] == (64, 64)


def test_every_node_remembers_a_line_of_the_run_file() -> None:
    path = str(EXAMPLES / "mnist1d-mlp.sx")
    compiled = compile_file(path)
    step = compiled.graphs.step
    assert all(n.span is not None and n.span.file == path for n in step.nodes)
    forward = step.nodes[:compiled.graphs.sections["train_step"].forward]
    lines = {n.span.line for n in forward}
    text = Path(path).read_text().splitlines()
    assert any("(l3 (+ h (relu (l2 h))))" in text[line - 1] for line in lines)


def test_targets_keep_the_numbers_the_file_wrote() -> None:
    exp = compile_file(str(EXAMPLES / "mnist1d-logreg.sx"), trace=False).experiment
    (target,) = exp.targets
    assert target.value == 0.29  # a single float as written, not 0.28999999165534973
    assert exp.target_sources["test/accuracy"]["published"] == 0.32
