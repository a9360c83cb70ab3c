"""Using a finished run: `sample` from a char-GPT trained here a few hundred steps on a
small text (vocabulary, determinism under a seed, words it learned), `predict` against
the run's own evaluation, `load_run`'s forward against the reference interpreter, and
`export` (npz; safetensors and PyTorch's logits when those packages are installed)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import orjson
import pytest
from cmd_helpers import ROOT, sexpgpu, sexpgpu_json

import sexpgpu as package
from sexpgpu.inference.load import load_run
from sexpgpu.ir.reference import run_reference
from sexpgpu.runtime.checkpoint import latest_valid, load_checkpoint

GPT = ROOT / "examples" / "shakespeare-char.sx"
MLP = ROOT / "examples" / "mnist1d-mlp.sx"
WORDS = "the quick brown fox jumps over lazy dog and cat sat on mat".split()
GPT_KNOBS = {"steps": 300, "n-layer": 1, "n-head": 2, "n-embd": 32, "context": 16}


@pytest.fixture(scope="module")
def gpt_run(tmp_path_factory) -> tuple[Path, str]:
    """A one-layer char-GPT trained 300 steps on random words; (run dir, its text)."""
    tmp = tmp_path_factory.mktemp("gpt")
    rng = random.Random(0)
    text = " ".join(rng.choice(WORDS) for _ in range(3000))
    (tmp / "words.txt").write_text(text)
    sets = [f"{k}={v}" for k, v in {**GPT_KNOBS, "vocab": len(set(text))}.items()]
    capsys = _Capture()
    code, _, err = sexpgpu(capsys, "run", GPT, f"data={tmp / 'words.txt'}", *sets,
                           "--runs", tmp / "runs")
    assert code == 0, err
    (run_dir,) = (tmp / "runs").iterdir()
    return run_dir, text


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("mlp")
    code, _, err = sexpgpu(_Capture(), "run", MLP, "steps=100", "--runs", tmp / "runs")
    assert code == 0, err
    (run_dir,) = (tmp / "runs").iterdir()
    return run_dir


class _Capture:
    """capsys for module fixtures (pytest's is function scoped): output is discarded."""

    def readouterr(self) -> tuple[str, str]:
        return "", ""


def _sample(capsys, run_dir: Path, *args: str) -> dict:
    code, payload = sexpgpu_json(capsys, "sample", run_dir, *args)
    assert code == 0
    return payload


def test_sample_decodes_the_vocabulary_and_repeats_under_a_seed(capsys, gpt_run) -> None:
    run_dir, text = gpt_run
    first = _sample(capsys, run_dir, "--tokens", "120", "--seed", "3", "--prompt", "the ")
    again = _sample(capsys, run_dir, "--tokens", "120", "--seed", "3", "--prompt", "the ")
    other = _sample(capsys, run_dir, "--tokens", "120", "--seed", "4", "--prompt", "the ")
    assert len(first["ids"]) == 120 and len(first["text"]) == 120
    assert set(first["text"]) <= set(text)
    assert first == again
    assert other["text"] != first["text"]
    vocab = sorted(set(text))  # nanoGPT's char vocabulary: the sorted characters
    assert first["text"] == "".join(vocab[i] for i in first["ids"])


def test_sample_writes_words_it_learned(capsys, gpt_run) -> None:
    """After 300 steps most words it writes at temperature 0.5 are words of the text
    (an untrained model writes none: 27 characters drawn uniformly)."""
    run_dir, _ = gpt_run
    out = _sample(capsys, run_dir, "--tokens", "200", "--temperature", "0.5", "--top-k", "5",
                  "--prompt", "the ")
    words = out["text"].split()
    assert sum(w in WORDS for w in words) / len(words) > 0.3, out["text"]


def test_sample_at_temperature_zero_follows_the_argmax(gpt_run) -> None:
    """Greedy decoding: every token is the argmax of the reference interpreter's
    logits for the window before it (an independent run of the same graph)."""
    run_dir, text = gpt_run
    from sexpgpu.inference.sample import generate

    run = load_run(run_dir, batch=1)
    vocab = sorted(set(text))
    ids = generate(run, [vocab.index("t")], 20, temperature=0.0)
    window = [vocab.index("t")] + ids
    for t in range(1, len(window)):
        x = np.zeros((1, 16), np.int64)
        x[0, :t] = window[max(0, t - 16):t][-16:]
        logits = run_reference(run.graph, {**run.params, "data/x": x,
                                           "rng/seed": np.int64(1337)})["output"]
        assert int(np.argmax(logits[0, min(t, 16) - 1])) == window[t]


def test_load_run_forward_matches_the_reference_interpreter(gpt_run) -> None:
    run_dir, _ = gpt_run
    run = package.load_run(run_dir)  # `sexpgpu.load_run`; the training batch: 12 rows a launch
    saved = load_checkpoint(latest_valid(run_dir))
    assert run.params.keys() == saved.params.keys()
    assert run.fields() == {"x": ((16,), "i64")}
    x = np.random.default_rng(0).integers(0, 10, (15, 16))  # 15 rows: two launches
    got = run.forward(x=x)
    assert got.shape == (15, 16, len(saved.params["wte/weight"]))
    padded = np.concatenate([x, np.zeros((9, 16), np.int64)])
    want = np.concatenate([run_reference(run.graph, {**saved.params, "data/x": rows,
                                                     "rng/seed": np.int64(1337)})["output"]
                           for rows in (padded[:12], padded[12:])])[:15]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_predict_agrees_with_the_runs_own_evaluation(capsys, mlp_run, tmp_path) -> None:
    """The argmax of `predict` over the whole test split gives the accuracy the run's
    last eval reported (the defevaluate graph, a different graph on the same weights)."""
    from sexpgpu.data.sources import open_source

    test = open_source("mnist1d", {"split": "test"}, tmp_path).arrays
    np.save(tmp_path / "x.npy", test["x"])
    code, out = sexpgpu_json(capsys, "predict", mlp_run, "--input", tmp_path / "x.npy")
    assert code == 0 and out["shape"] == [len(test["x"]), 10]
    accuracy = float(np.mean(np.array(out["argmax"]) == test["y"]))
    events = [orjson.loads(line) for line in (mlp_run / "events.jsonl").read_bytes().splitlines()]
    last_eval = [e for e in events if e["event"] == "eval"][-1]["metrics"]
    assert accuracy == pytest.approx(last_eval["test/accuracy"], abs=1e-6)
    code, _, err = sexpgpu(capsys, "predict", mlp_run, "--input", tmp_path / "x.npy",
                           "--out", tmp_path / "logits.npy")
    assert code == 0 and np.load(tmp_path / "logits.npy").shape == (len(test["x"]), 10)


def test_predict_refuses_rows_of_another_shape(capsys, mlp_run, tmp_path) -> None:
    np.save(tmp_path / "bad.npy", np.zeros((4, 39), np.float32))
    code, _, err = sexpgpu(capsys, "predict", mlp_run, "--input", tmp_path / "bad.npy")
    assert code == 1 and "error[E-DATA]" in err
    assert "(N, 40) of float32" in err and "(4, 39)" in err


def test_export_npz_names_tensors_by_parameter_path(capsys, gpt_run, tmp_path) -> None:
    run_dir, _ = gpt_run
    code, out = sexpgpu_json(capsys, "export", run_dir, "--out", tmp_path / "gpt.npz")
    assert code == 0
    saved = load_checkpoint(latest_valid(run_dir)).params
    with np.load(tmp_path / "gpt.npz") as archive:
        assert sorted(archive.files) == sorted(saved) and out["tensors"] == len(saved)
        for name in saved:
            np.testing.assert_array_equal(archive[name], saved[name])
    assert "lm-head/weight" not in saved  # tied to wte/weight: stored once


def test_export_safetensors_carries_the_aliases(capsys, gpt_run, tmp_path) -> None:
    pytest.importorskip("safetensors", reason="the safetensors package is not installed")
    from safetensors import safe_open

    run_dir, _ = gpt_run
    code, _, err = sexpgpu(capsys, "export", run_dir, "--format", "safetensors",
                           "--out", tmp_path / "gpt.safetensors")
    assert code == 0, err
    saved = load_checkpoint(latest_valid(run_dir)).params
    with safe_open(str(tmp_path / "gpt.safetensors"), "np") as f:
        assert sorted(f.keys()) == sorted(saved)
        np.testing.assert_array_equal(f.get_tensor("wte/weight"), saved["wte/weight"])
        assert orjson.loads(f.metadata()["sexpgpu.aliases"]) == {
            "lm-head/weight": "wte/weight"}


def _docs_python_blocks() -> list[str]:
    text = (ROOT / "docs" / "checkpoints.md").read_text()
    section = text.split("## Loading an export into PyTorch", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_export_gives_pytorch_the_same_logits(capsys, gpt_run, tmp_path) -> None:
    """The docs' PyTorch module and loading lines, run on this run's export: the
    logits equal load_run's forward."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("safetensors", reason="the safetensors package is not installed")
    run_dir, text = gpt_run
    out = tmp_path / "gpt.safetensors"
    assert sexpgpu(capsys, "export", run_dir, "--format", "safetensors", "--out", out)[0] == 0
    module, loading = _docs_python_blocks()
    scope: dict = {}
    exec(module, scope)  # noqa: S102 - the documented module, as a reader pastes it
    loading = loading.replace('"gpt.safetensors"', repr(str(out)))
    loading = re.sub(r"GPT\(.*?\)", f"GPT(vocab={len(set(text))}, context=16, d=32, "
                     "heads=2, layers=1)", loading)
    exec(loading, scope)  # noqa: S102
    x = np.random.default_rng(1).integers(0, len(set(text)), (2, 16))
    with torch.no_grad():
        theirs = scope["model"](torch.tensor(x)).numpy()
    ours = load_run(run_dir).forward(x=x)
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("args, message", [
    (("--tokens", "x"), "--tokens x: not an integer"),
    (("--temperature", "-1"), "--temperature -1: not a number >= 0"),
    (("--prompt", "thé"), "the prompt has characters the vocabulary lacks"),
])
def test_sample_usage_errors_are_exit_2(capsys, gpt_run, args, message) -> None:
    code, _, err = sexpgpu(capsys, "sample", gpt_run[0], *args)
    assert code == 2 and "error[E-USAGE]" in err and message in err


def test_export_refuses_an_unknown_format(capsys, gpt_run, tmp_path) -> None:
    code, _, err = sexpgpu(capsys, "export", gpt_run[0], "--format", "onnx",
                           "--out", tmp_path / "x")
    assert code == 2 and "npz or safetensors" in err and not (tmp_path / "x").exists()


def test_a_run_without_defpredict_says_how_to_add_one(capsys, mlp_run, tmp_path) -> None:
    """A run made before its file had a defpredict: E-PREDICT naming the copy to edit;
    export does not need one."""
    import shutil

    copy = tmp_path / mlp_run.name
    shutil.copytree(mlp_run, copy)
    source = copy / "source" / "mnist1d-mlp.sx"
    source.write_text(re.sub(r"\(defpredict.*?\n\n", "", source.read_text(), flags=re.S))
    np.save(tmp_path / "x.npy", np.zeros((2, 40), np.float32))
    code, _, err = sexpgpu(capsys, "predict", copy, "--input", tmp_path / "x.npy")
    assert code == 1 and "error[E-PREDICT]" in err and str(source) in err
    assert sexpgpu(capsys, "export", copy, "--out", tmp_path / "p.npz")[0] == 0


def test_forward_names_the_fields_it_takes(gpt_run) -> None:
    from sexpgpu.diagnostics import SexpError

    run = load_run(gpt_run[0])
    with pytest.raises(SexpError) as info:
        run.forward(idx=np.zeros((1, 16), np.int64))
    diag = info.value.diagnostic
    assert diag.code == "E-PREDICT" and diag.expected == "forward(x=<2-d i64>)"
    assert diag.actual == "forward(idx)"
