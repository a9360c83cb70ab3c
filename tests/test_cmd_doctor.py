"""`sexpgpu doctor`: the machine checks never crash, a run file's compile, data and memory
plan are checked, and any failing check makes the exit code 1."""

from __future__ import annotations

import pytest
from cmd_helpers import SWEEP_TINY, sexpgpu, sexpgpu_json

from sexpgpu.commands import doctor


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))


def _by_name(payload: dict) -> dict[str, dict]:
    return {c["name"]: c for c in payload["checks"]}


def test_doctor_reports_the_machine(capsys) -> None:
    code, payload = sexpgpu_json(capsys, "doctor")
    checks = _by_name(payload)
    assert {"python", "numpy", "numba", "llvmlite", "cpus", "cuda", "disk", "cache"} <= set(checks)
    assert code == 0 and payload["ok"] is True
    assert checks["cuda"]["status"] in ("ok", "warn")  # never a crash, never a failure
    assert checks["cache"]["status"] == "ok"


def test_doctor_with_a_file_checks_compile_data_and_memory(capsys) -> None:
    code, payload = sexpgpu_json(capsys, "doctor", SWEEP_TINY)
    checks = _by_name(payload)
    assert code == 0
    assert checks["compile"] == {"name": "compile", "status": "ok", "detail": "58 parameters"}
    assert checks["data train"]["status"] == "ok" and "generated" in checks["data train"]["detail"]
    assert checks["memory"]["status"] == "ok" and "peak activations" in checks["memory"]["detail"]
    code, out, _ = sexpgpu(capsys, "doctor", SWEEP_TINY)
    assert code == 0 and out.endswith("a run can start here\n")


def test_a_bad_environment_variable_fails_and_the_other_checks_still_run(
        monkeypatch, capsys) -> None:
    monkeypatch.setenv("SEXPGPU_THREADS", "two")
    monkeypatch.setenv("SEXPGPU_DENORMALS", "ieee")
    code, payload = sexpgpu_json(capsys, "doctor", SWEEP_TINY)
    checks = _by_name(payload)
    assert code == 1 and checks["env"]["status"] == "fail"
    assert "E-ENV" in checks["env"]["detail"] and "SEXPGPU_THREADS=two" in checks["env"]["detail"]
    assert "SEXPGPU_DENORMALS=ieee" in checks["env"]["detail"]
    assert checks["cpus"]["status"] == "ok" and checks["compile"]["status"] == "ok"


def test_unwritable_cache_fails(tmp_path, monkeypatch, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(blocker / "cache"))  # under a file: no dir
    code, payload = sexpgpu_json(capsys, "doctor")
    assert code == 1 and _by_name(payload)["cache"]["status"] == "fail"


def test_missing_data_file_fails_with_its_path(tmp_path, capsys) -> None:
    text = SWEEP_TINY.read_text(encoding="utf-8").replace(
        "(synthetic :task :classes :n 64 :dim 4 :classes 2 :split :train)",
        '(npz :path "missing.npz")')
    path = tmp_path / "npz.sx"
    path.write_text(text, encoding="utf-8")
    code, payload = sexpgpu_json(capsys, "doctor", path)
    checks = _by_name(payload)
    assert code == 1
    assert checks["compile"]["status"] == "fail" and "E-DATA" in checks["compile"]["detail"]
    assert checks["data train"]["status"] == "fail"
    assert str(tmp_path / "missing.npz") in checks["data train"]["detail"]
    assert checks["data test"]["status"] == "ok"


def test_a_plan_larger_than_free_memory_fails(monkeypatch) -> None:
    plan = {"memory": {"params_bytes": 400, "grads_bytes": 400, "optimizer_state_bytes": 800,
                       "peak_activation_bytes": 1000}}
    monkeypatch.setattr(doctor, "mem_available", lambda: 2000)
    assert doctor.memory_check(plan, "cpu", None).status == "fail"
    monkeypatch.setattr(doctor, "mem_available", lambda: 3000)
    assert doctor.memory_check(plan, "cpu", None).status == "warn"  # above 80% of free
    monkeypatch.setattr(doctor, "mem_available", lambda: 10_000)
    assert doctor.memory_check(plan, "cpu", None).status == "ok"
    assert doctor.memory_check(plan, "cuda", 1000).status == "fail"  # GPU memory for cuda


def test_cuda_asked_for_where_there_is_none(capsys) -> None:
    from numba import cuda

    if cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    code, payload = sexpgpu_json(capsys, "doctor", SWEEP_TINY, "--device", "cuda")
    assert code == 1 and _by_name(payload)["device"]["status"] == "fail"


@pytest.mark.cudasim
def test_cuda_under_numbas_simulator(tmp_path) -> None:
    import os
    import subprocess
    import sys

    import orjson
    from cmd_helpers import ROOT

    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT),
           "SEXPGPU_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "sexpgpu", "doctor", str(SWEEP_TINY),
                           "--device", "cuda", "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    checks = _by_name(orjson.loads(done.stdout))
    assert done.returncode == 0
    assert checks["cuda"]["status"] == "ok" and "simulator" in checks["cuda"]["detail"]
    assert checks["device"] == {"name": "device", "status": "ok", "detail": "cuda"}
    assert checks["memory"]["status"] == "warn"  # the simulator has no memory figures
    assert checks["nccl"]["status"] == "ok"  # with or without the nccl extra


def test_nccl_is_reported_never_required() -> None:
    missing = doctor.nccl_check(lambda: (None, "OSError: libnccl.so.2 not found"))
    assert missing.status == "ok" and "through host memory" in missing.detail
    assert "libnccl.so.2 not found" in missing.detail and "sexpgpu[nccl]" in missing.detail
    lib = type("Lib", (), {"path": "/x/libnccl.so.2"})()
    found = doctor.nccl_check(lambda: (lib, "2.32.3"))
    assert found.status == "ok" and found.detail.startswith("NCCL 2.32.3 (/x/libnccl.so.2)")


@pytest.mark.parametrize("load,blas,status", [(0.1, None, "ok"), (1.2, None, "ok"),
                                              (1.2, "1", "ok"), (1.2, "2", "warn"),
                                              (3.5, None, "ok"), (3.5, "2", "warn")])
def test_busy_cores_warn_with_the_threads_to_use(monkeypatch, load, blas, status) -> None:
    monkeypatch.setattr(doctor.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.delenv("SEXPGPU_NUM_THREADS", raising=False)
    monkeypatch.delenv("SEXPGPU_BLAS_THREADS", raising=False)
    if blas is None:
        monkeypatch.delenv("SEXPGPU_THREADS", raising=False)
    else:
        monkeypatch.setenv("SEXPGPU_THREADS", blas)
    check = doctor.cpus(load=load)
    assert check.status == status and f"load {load:.1f}" in check.detail
    if status == "warn":  # the advice: leave the step the cores nobody else holds
        assert "SEXPGPU_THREADS=1" in check.detail
