"""S3 against a local server (moto's server mode on 127.0.0.1, started here): `s3://`
data paths through the cache, `--runs s3://...` mirroring a run as it trains, and a run
killed while it uploads resumed on a fresh machine from what S3 holds."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from cmd_helpers import ROOT, SWEEP_TINY, sexpgpu

from sexpgpu.runtime.checkpoint import latest_valid, load_checkpoint

pytest.importorskip("boto3", reason="the boto3 package is not installed")
pytest.importorskip("moto.server", reason="the moto package (moto[server]) is not installed")
BUCKET = "sexpgpu-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory):
    """moto's S3 server (its own process, threaded) on 127.0.0.1 and the variables
    boto3 reads to reach it; one kernel cache for the module (the staging folders of
    `--runs s3://` live under it too)."""
    port = _free_port()
    moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                             "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "SEXPGPU_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        _wait_for(port)
        _client().create_bucket(Bucket=BUCKET)
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        moto.terminate()
        moto.wait()


def _wait_for(port: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("moto's server did not start")


def _client():
    import boto3

    return boto3.client("s3")


def _keys(prefix: str) -> list[str]:
    pages = _client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def _events(run_dir: Path) -> list[dict]:
    return [orjson.loads(x) for x in (run_dir / "events.jsonl").read_bytes().splitlines()]


def _staging(prefix: str) -> Path:
    return Path(os.environ["SEXPGPU_CACHE_DIR"]) / "s3-runs" / BUCKET / prefix


def test_a_data_path_on_s3_is_downloaded_once_and_verified(capsys, s3_env, tmp_path) -> None:
    from sexpgpu.s3.cache import cached_path, local_copy

    rows = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "rows.npy", rows)
    _client().upload_file(str(tmp_path / "rows.npy"), BUCKET, "data/rows.npy")
    url = f"s3://{BUCKET}/data/rows.npy"
    path = local_copy(url)
    assert path == cached_path(url) and np.array_equal(np.load(path), rows)
    stamp = path.stat().st_mtime_ns
    assert local_copy(url).stat().st_mtime_ns == stamp  # verified, not fetched again
    path.write_bytes(path.read_bytes()[:-4] + b"\0\0\0\0")  # same size, other bytes
    assert np.array_equal(np.load(local_copy(url)), rows)  # the ETag caught it


def test_a_missing_object_is_e_s3(capsys, s3_env, tmp_path) -> None:
    text = SWEEP_TINY.read_text().replace(
        "(synthetic :task :classes :n 64 :dim 4 :classes 2 :split :train)",
        f'(text "s3://{BUCKET}/no/such.txt" :vocab :char :context 4)')
    text = text.replace("(nn:linear 4 8)", "(nn:linear 4 8)")
    path = tmp_path / "remote.sx"
    path.write_text(text)
    code, _, err = sexpgpu(capsys, "check", path)
    assert code == 1 and "error[E-S3]" in err and f"s3://{BUCKET}/no/such.txt" in err


def test_runs_on_s3_are_mirrored_as_they_train(capsys, s3_env, tmp_path) -> None:
    code, _, err = sexpgpu(capsys, "run", SWEEP_TINY, "steps=20", "--checkpoint-every", "5",
                           "--runs", f"s3://{BUCKET}/mirrored")
    assert code == 0, err
    (run_dir,) = _staging("mirrored").iterdir()
    local = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                   if p.is_file() and p.name != ".lock")
    remote = sorted(k.removeprefix(f"mirrored/{run_dir.name}/") for k in _keys("mirrored/"))
    assert remote == local
    body = _client().get_object(Bucket=BUCKET, Key=f"mirrored/{run_dir.name}/events.jsonl")
    assert body["Body"].read() == (run_dir / "events.jsonl").read_bytes()


STEPS = 1000  # of the killed run


def test_a_run_killed_while_uploading_resumes_from_s3_elsewhere(capsys, s3_env,
                                                                tmp_path) -> None:
    """SIGKILL in the middle of mirroring checkpoints; then, with no local copy (a new
    machine), `--resume latest` pulls the complete checkpoints from S3 and ends with
    the parameters of a run never stopped."""
    runs = f"s3://{BUCKET}/killed"
    # 50 checkpoints kept: the mirror skips the ones pruned before their turn and
    # uploads the rest in order, so after the first whole one on S3 there are dozens
    # to go before the last (with the default 3 kept, a run that finished before the
    # mirror's first upload left three, and all three were up before the kill came:
    # nothing to resume from but the final step)
    source = tmp_path / "tiny.sx"
    source.write_text(SWEEP_TINY.read_text().replace(
        "(defrun :steps steps", "(defrun :keep-checkpoints 50 :steps steps"))
    # 200 checkpoints: training ends in a few seconds, the mirror uploads behind it,
    # and the kill comes as soon as S3 holds one whole checkpoint (with 40, a slow
    # start of the mirror on a busy machine let the last one be the first whole)
    args = [f"steps={STEPS}", "--checkpoint-every", "5", "--runs", runs]
    proc = subprocess.Popen([sys.executable, "-m", "sexpgpu", "run", str(source), *args],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300  # a loaded machine compiles and uploads slowly
    whole: list[str] = []
    while time.time() < deadline and proc.poll() is None and not whole:
        whole = [k for k in _keys("killed/") if k.endswith("manifest.json")]
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert whole, "no checkpoint reached S3 before the kill"
    (run_dir,) = _staging("killed").iterdir()
    name = run_dir.name
    shutil.rmtree(_staging("killed"))  # a fresh machine: nothing local
    # a checkpoint whose upload was cut before its manifest: on S3, never chosen
    _client().put_object(Bucket=BUCKET, Key=f"killed/{name}/checkpoints/step-999990/"
                         "params.npz", Body=b"torn")
    code, _, err = sexpgpu(capsys, "run", source, *args, "--resume", "latest")
    assert code == 0, err
    opens = [e for e in _events(_staging("killed") / name) if e["event"] == "open"]
    assert 0 < opens[-1]["resumed_from"] < STEPS  # from a checkpoint S3 had whole
    resumed = load_checkpoint(latest_valid(_staging("killed") / name))
    code, _, err = sexpgpu(capsys, "run", source, *args[:-1], tmp_path / "runs")
    assert code == 0, err
    (whole,) = (tmp_path / "runs").iterdir()
    straight = load_checkpoint(latest_valid(whole))
    assert resumed.step == straight.step == STEPS
    for key, value in straight.params.items():
        np.testing.assert_array_equal(resumed.params[key], value)


def test_a_bundle_goes_to_an_empty_prefix_run_sh_last(capsys, s3_env, tmp_path) -> None:
    code, _, err = sexpgpu(capsys, "bundle", SWEEP_TINY, "--out", f"s3://{BUCKET}/job")
    assert code == 0, err
    found = _keys("job/")
    assert "job/run.sh" in found and "job/source/tiny.sx" in found
    local = tmp_path / "local"
    assert sexpgpu(capsys, "bundle", SWEEP_TINY, "--out", local)[0] == 0
    files = sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file())
    assert sorted(k.removeprefix("job/") for k in found) == files
    code, _, err = sexpgpu(capsys, "bundle", SWEEP_TINY, "--out", f"s3://{BUCKET}/job")
    assert code == 1 and "error[E-BUNDLE-EXISTS]" in err


def test_a_run_reads_its_data_from_s3(capsys, s3_env, tmp_path) -> None:
    """The tiny classifier trained on an s3:// npz: the same losses as on the local file."""
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "train.npz", x=rng.normal(size=(64, 4)).astype(np.float32),
             y=rng.integers(0, 2, 64).astype(np.int64))
    _client().upload_file(str(tmp_path / "train.npz"), BUCKET, "data/train.npz")
    synthetic = "(synthetic :task :classes :n 64 :dim 4 :classes 2 :split :train)"
    losses = []
    for i, data in enumerate([f"s3://{BUCKET}/data/train.npz", str(tmp_path / "train.npz")]):
        path = tmp_path / f"remote{i}.sx"
        path.write_text(SWEEP_TINY.read_text().replace(synthetic, f'(npz "{data}")'))
        code, _, err = sexpgpu(capsys, "run", path, "steps=5", "--runs", tmp_path / f"r{i}")
        assert code == 0, err
        (run_dir,) = (tmp_path / f"r{i}").iterdir()
        losses.append([e["loss"] for e in _events(run_dir) if e["event"] == "step"])
    assert losses[0] == losses[1] and losses[0]
