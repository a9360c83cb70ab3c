"""Checkpoints: atomic layout, verification, latest-that-verifies, pruning, the command."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from sexpgpu.commands import checkpoint as command
from sexpgpu.diagnostics import SexpError
from sexpgpu.runtime import checkpoint as ckpt


def _write(run_dir, step, value=1.0):
    params = {"w": np.full((2, 3), value), "b": np.arange(3.0)}
    state = {"t": np.array(float(step))}
    return ckpt.write_checkpoint(run_dir, step, params, state, {"plan_hash": "h", "loaders": {}})


def test_write_and_load_round_trip(tmp_path):
    path = _write(tmp_path, 7, value=2.5)
    assert path.name == "step-000007"
    assert sorted(p.name for p in path.iterdir()) == [
        "manifest.json", "meta.json", "params.npz", "state.npz"]
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith(".")]
    loaded = ckpt.load_checkpoint(path)
    assert loaded.step == 7 and loaded.meta["plan_hash"] == "h"
    np.testing.assert_array_equal(loaded.params["w"], np.full((2, 3), 2.5))


def test_truncated_file_fails_verification_and_latest_skips_it(tmp_path):
    _write(tmp_path, 10)
    newest = _write(tmp_path, 20)
    params = newest / "params.npz"
    params.write_bytes(params.read_bytes()[:40])
    assert "params.npz" in ckpt.verify(newest)
    skipped = []
    assert ckpt.latest_valid(tmp_path, on_skip=lambda p, why: skipped.append(p.name)).name == \
        "step-000010"
    assert skipped == ["step-000020"]
    with pytest.raises(SexpError) as info:
        ckpt.load_checkpoint(newest)
    assert info.value.diagnostic.code == "E-CHECKPOINT"


def test_directory_without_manifest_is_never_latest(tmp_path):
    _write(tmp_path, 10)
    torn = tmp_path / "checkpoints" / "step-000020"
    torn.mkdir()
    (torn / "params.npz").write_bytes(b"partial")
    assert ckpt.verify(torn).startswith("no manifest")
    assert ckpt.latest_valid(tmp_path).name == "step-000010"


def test_rewriting_a_step_replaces_it(tmp_path):
    _write(tmp_path, 5, value=1.0)
    _write(tmp_path, 5, value=3.0)
    np.testing.assert_array_equal(
        ckpt.load_checkpoint(tmp_path / "checkpoints" / "step-000005").params["w"], 3.0)


def test_a_replaced_step_left_behind_by_a_kill_is_cleared(tmp_path, monkeypatch):
    """The checkpoint a rewrite of its step swaps out is set aside under a .tmp- name:
    a kill before it is deleted leaves a folder the next run clears."""
    _write(tmp_path, 5, value=1.0)
    monkeypatch.setattr(ckpt.shutil, "rmtree", lambda path, **_: None)  # killed here
    _write(tmp_path, 5, value=3.0)
    monkeypatch.undo()
    root = tmp_path / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == [
        f".tmp-step-000005-old-{os.getpid()}", "step-000005"]
    ckpt.remove_stale_temps(tmp_path)
    assert [p.name for p in root.iterdir()] == ["step-000005"]


def test_prune_keeps_the_newest(tmp_path):
    paths = [_write(tmp_path, s) for s in (1, 2, 3, 4)]
    ckpt.prune(tmp_path, 2, protect=paths[-1])
    assert [s for s, _ in ckpt.list_checkpoints(tmp_path)] == [3, 4]


def test_prune_takes_a_checkpoint_away_whole_before_deleting_it(tmp_path, monkeypatch):
    """While a pruned checkpoint's files are deleted, its folder is no longer there
    (a reader sees all of it or none); a delete cut short leaves a .tmp- folder that
    the next run clears."""
    paths = [_write(tmp_path, s) for s in (1, 2, 3)]
    seen = []
    monkeypatch.setattr(ckpt.shutil, "rmtree", lambda path, **_: seen.append(
        (paths[0].exists(), Path(path).name)))
    ckpt.prune(tmp_path, 2, protect=paths[-1])
    assert seen == [(False, f".tmp-step-000001-pruned-{os.getpid()}")]
    assert [s for s, _ in ckpt.list_checkpoints(tmp_path)] == [2, 3]
    monkeypatch.undo()
    ckpt.remove_stale_temps(tmp_path)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "step-000002", "step-000003"]


def test_restore_arrays_in_place_and_mismatch(tmp_path):
    live = {"w": np.zeros((2, 3))}
    before = live["w"]
    ckpt.restore_arrays("params", live, {"w": np.ones((2, 3))}, tmp_path)
    assert live["w"] is before and before.sum() == 6
    with pytest.raises(SexpError) as info:
        ckpt.restore_arrays("params", live, {"w": np.ones((3, 2))}, tmp_path)
    assert info.value.diagnostic.code == "E-CHECKPOINT"


def test_checkpoint_command_ls_and_show(tmp_path, capsys):
    run = tmp_path / "runs" / "demo-1"
    _write(run, 10)
    bad = _write(run, 20)
    (bad / "state.npz").write_bytes(b"")
    assert command.main(["ls", str(run), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["step"], r["valid"], r["latest"]) for r in rows] == [(10, True, True),
                                                                    (20, False, False)]
    assert command.main(["show", "demo-1", "--runs", str(tmp_path / "runs"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["name"] == "step-000010"
    assert shown["params"]["w"] == {"shape": [2, 3], "dtype": "float64"}
    assert command.main(["ls", str(run)]) == 0
    assert "BAD" in capsys.readouterr().out
    with pytest.raises(SexpError):
        command.main(["show", str(run), "20"])
    with pytest.raises(SexpError):
        command.main(["ls", str(tmp_path / "missing")])
