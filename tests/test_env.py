"""Environment variables (sexpgpu/env.py): a value outside its kind is E-ENV, named
with what it expects, never an internal error; unset or empty is the default."""

from __future__ import annotations

from pathlib import Path

import pytest
from sexpgpu.kernels import threads

from sexpgpu import env
from sexpgpu.api import load_program
from sexpgpu.diagnostics import SexpError


@pytest.mark.parametrize(("name", "read", "value"), [
    ("SEXPGPU_THREADS", env.threads_fixed, "two"),
    ("SEXPGPU_BLAS_THREADS", env.threads_fixed, "0"),
    ("SEXPGPU_NUM_THREADS", env.num_threads, "-1"),
    ("SEXPGPU_COMPILE_JOBS", env.compile_jobs, "1.5"),
    ("SEXPGPU_COLLECTIVE_TIMEOUT", env.collective_timeout_s, "soon"),
    ("SEXPGPU_COLLECTIVE_TIMEOUT", env.collective_timeout_s, "-3"),
    ("SEXPGPU_DENORMALS", env.flush_denormals, "ieee"),
    ("SEXPGPU_VECTOR_BITS", env.vector_bits, "wide"),
])
def test_a_value_outside_its_kind_is_refused(monkeypatch, name, read, value) -> None:
    monkeypatch.delenv("SEXPGPU_THREADS", raising=False)
    monkeypatch.setenv(name, value)
    with pytest.raises(SexpError) as caught:
        read()
    diag = caught.value.diagnostic
    assert diag.code == "E-ENV" and name in diag.message and diag.actual == value
    assert diag.expected and diag.fix.startswith(f"{name}=")


@pytest.mark.parametrize(("name", "read", "value", "want"), [
    ("SEXPGPU_THREADS", env.threads_fixed, " 3 ", 3),
    ("SEXPGPU_NUM_THREADS", env.num_threads, "", None),
    ("SEXPGPU_COLLECTIVE_TIMEOUT", env.collective_timeout_s, "2.5", 2.5),
    ("SEXPGPU_COLLECTIVE_TIMEOUT", env.collective_timeout_s, "", 20.0),
    ("SEXPGPU_DENORMALS", env.flush_denormals, "KEEP", False),
    ("SEXPGPU_DENORMALS", env.flush_denormals, "", True),
    ("SEXPGPU_VECTOR_BITS", env.vector_bits, "", "auto"),
    ("SEXPGPU_VECTOR_BITS", env.vector_bits, "256", "256"),
])
def test_values_of_the_kind_and_defaults(monkeypatch, name, read, value, want) -> None:
    monkeypatch.setenv(name, value)
    assert read() == want


TINY_RUN = Path(__file__).parent / "e2e" / "tiny.sx"  # a small run with an eval


def test_a_run_with_a_bad_thread_count_says_so(monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_THREADS", "two")
    threads.reset()
    try:
        with pytest.raises(SexpError) as caught:
            load_program(str(TINY_RUN))
    finally:
        threads.reset()
    assert caught.value.diagnostic.code == "E-ENV"
