"""`sexpgpu bundle`: the directory holds what the run needs (sources, data, package,
requirements, launcher), its launcher trains and resumes after a preemption, data
paths from knobs are rebound to the copies, and the two refusals are diagnostics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from cmd_helpers import sexpgpu, sexpgpu_json

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "e2e" / "tiny.sx"

NPZ_RUN = TINY.read_text().replace(
    '(defloader train :source (synthetic :task :classes :n 800 :dim 8 :classes 4 :split :train)',
    '(defknob data "train.npz" "training arrays")\n'
    '(defloader train :source (npz :path data)')


def _launch(bundle: Path, cache: Path, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "SEXPGPU_PYTHON": sys.executable, "SEXPGPU_CACHE_DIR": str(cache)}
    env.pop("PYTHONPATH", None)  # the bundle's own lib/ must be what runs
    return subprocess.Popen(["sh", str(bundle / "run.sh"), *args], env=env, cwd=bundle.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _status(bundle: Path) -> dict:
    """The bundle's one run's status ({} before the run has written it)."""
    runs = bundle / "runs"
    for run in runs.iterdir() if runs.is_dir() else ():
        if (run / "status.json").is_file():
            return json.loads((run / "status.json").read_text())
    return {}


def test_bundle_trains_and_resumes_after_preemption(tmp_path: Path, capsys) -> None:
    bundle = tmp_path / "tiny-bundle"
    assert sexpgpu(capsys, "bundle", TINY, "--out", bundle, "--set", "steps=600")[0] == 0
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["file"] == "source/tiny.sx" and manifest["flags"] == ["--set", "steps=600"]
    assert (bundle / "lib" / "sexpgpu" / "cli.py").is_file()
    assert (bundle / "lib" / "sexpgpu" / "kernels" / "codegen.py").is_file()
    assert any(r.startswith("numba==") for r in manifest["requirements"])
    assert all((bundle / name).is_file() for name in manifest["files"])
    assert os.access(bundle / "run.sh", os.X_OK)

    first = _launch(bundle, tmp_path / "cache", "--checkpoint-every", "50", "--log-every", "1")
    deadline = time.time() + 300
    while time.time() < deadline:  # preempt it once it has a checkpoint
        if _status(bundle).get("latest_checkpoint") or first.poll() is not None:
            break
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=120)
    assert first.returncode == 75, "the launcher did not report a preemption"
    again = _launch(bundle, tmp_path / "cache", "--checkpoint-every", "50")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    status = _status(bundle)
    assert status["state"] == "done" and status["step"] == 600
    (run,) = (bundle / "runs").iterdir()  # the second launch continued the same run
    opens = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()
             if json.loads(line)["event"] == "open"]
    assert len(opens) == 2 and 0 < opens[1]["resumed_from"] < 600


def test_data_from_a_knob_is_copied_and_rebound(tmp_path: Path, capsys) -> None:
    work = tmp_path / "work"
    work.mkdir()
    r = np.random.default_rng(0)
    elsewhere = tmp_path / "datasets" / "train.npz"
    elsewhere.parent.mkdir()
    np.savez(elsewhere, x=r.standard_normal((400, 8)).astype(np.float32),
             y=r.integers(0, 4, 400))
    (work / "npz-run.sx").write_text(NPZ_RUN)
    bundle = tmp_path / "b"
    assert sexpgpu(capsys, "bundle", work / "npz-run.sx", "--out", bundle,
                   "--set", f"data={elsewhere}", "--set", "steps=5")[0] == 0
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert "--set" in manifest["flags"] and "data=../data/train.npz" in manifest["flags"]
    assert (bundle / "data" / "train.npz").read_bytes() == elsewhere.read_bytes()
    elsewhere.unlink()  # the bundle must not need the original any more
    run = _launch(bundle, tmp_path / "cache")
    _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    assert _status(bundle)["step"] == 5


def test_a_literal_data_path_outside_the_directory_is_refused(tmp_path: Path, capsys) -> None:
    outside = tmp_path / "elsewhere" / "train.npz"
    outside.parent.mkdir()
    np.savez(outside, x=np.zeros((8, 8), np.float32), y=np.zeros(8, np.int64))
    work = tmp_path / "work"
    work.mkdir()
    (work / "run.sx").write_text(NPZ_RUN.replace(":path data", f':path "{outside}"'))
    code, payload = sexpgpu_json(capsys, "bundle", work / "run.sx", "--out", tmp_path / "b")
    assert code == 1 and payload["diagnostics"][0]["code"] == "E-BUNDLE-DATA"
    assert str(outside) in payload["diagnostics"][0]["message"]
    assert not (tmp_path / "b").exists() and not (tmp_path / "b.partial").exists()


def test_an_existing_directory_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "b").mkdir()
    code, payload = sexpgpu_json(capsys, "bundle", TINY, "--out", tmp_path / "b")
    assert code == 1 and payload["diagnostics"][0]["code"] == "E-BUNDLE-EXISTS"


def _project(tmp_path: Path, require: str) -> Path:
    """proj/exp/run.sx reading d/train.npz through a knob and requiring a library."""
    exp = tmp_path / "proj" / "exp"
    (exp / "d").mkdir(parents=True)
    (tmp_path / "proj" / "lib").mkdir()
    r = np.random.default_rng(0)
    np.savez(exp / "d" / "train.npz", x=r.standard_normal((400, 8)).astype(np.float32),
             y=r.integers(0, 4, 400))
    (tmp_path / "proj" / "lib" / "blocks.sx").write_text(
        "(defun layer (i o) (sexpgpu/nn:linear i o))\n")
    text = (NPZ_RUN.replace('"train.npz"', '"d/train.npz"')
            .replace('(require "sexpgpu/optim" :as optim)',
                     f'(require "sexpgpu/optim" :as optim)\n(require "{require}" :as blk)')
            .replace("(nn:linear 8 16)", "(blk:layer 8 16)"))
    (exp / "run.sx").write_text(text)
    return exp / "run.sx"


def test_knob_data_and_a_library_above_keep_working_from_another_directory(
        tmp_path: Path, capsys, monkeypatch) -> None:
    run_file = _project(tmp_path, "../lib/blocks.sx")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the knob's path is relative to the run file, not here
    bundle = tmp_path / "b"
    # a library above the run file's directory is read only from a declared root
    code, _, err = sexpgpu(capsys, "bundle", run_file, "--out", tmp_path / "refused",
                           "--set", "steps=3")
    assert code == 1 and "E-REQUIRE" in err and "SEXPGPU_LIBRARY_PATH" in err
    monkeypatch.setenv("SEXPGPU_LIBRARY_PATH", str(tmp_path / "proj" / "lib"))
    code, _, err = sexpgpu(capsys, "bundle", run_file, "--out", bundle, "--set", "steps=3")
    assert code == 0, err
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["file"] == "source/exp/run.sx"
    assert "data=../../data/train.npz" in manifest["flags"]
    assert (bundle / "data" / "train.npz").is_file()
    assert (bundle / "source" / "lib" / "blocks.sx").is_file()
    (tmp_path / "proj").rename(tmp_path / "gone")  # the bundle needs none of the originals
    flags = manifest["flags"]
    monkeypatch.setenv("SEXPGPU_LIBRARY_PATH", str(bundle / "source"))  # as run.sh sets it
    assert 'SEXPGPU_LIBRARY_PATH="$here/source' in (bundle / "run.sh").read_text()
    code, _, err = sexpgpu(capsys, "check", bundle / manifest["file"], *flags)
    assert code == 0, err


def test_a_library_required_by_an_absolute_path_is_refused(tmp_path: Path, capsys,
                                                           monkeypatch) -> None:
    run_file = _project(tmp_path, str(tmp_path / "proj" / "lib" / "blocks.sx"))
    monkeypatch.setenv("SEXPGPU_LIBRARY_PATH", str(tmp_path / "proj" / "lib"))  # require may
    code, payload = sexpgpu_json(capsys, "bundle", run_file, "--out", tmp_path / "b")
    assert code == 1 and payload["diagnostics"][0]["code"] == "E-BUNDLE-SOURCE"
    assert "blocks.sx" in payload["diagnostics"][0]["message"]
    assert not (tmp_path / "b").exists() and not (tmp_path / "b.partial").exists()
