"""numba's loops get 512-bit vectors on AVX-512 CPUs (kernels/vectorwidth.py): the
features are set before numba creates its CPU target, in the environment its compile
workers inherit, and never where the user chose numba's CPU or features."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sexpgpu.kernels import vectorwidth

from sexpgpu.diagnostics import SexpError

HOST = "+sse4.2,+avx,+avx2,+fma,+avx512f,+avx512bw,-amx-tile"


@pytest.mark.parametrize(("host", "environ", "want"), [
    (HOST, {}, HOST + ",-prefer-256-bit"),
    ("+sse4.2,+avx2,+fma,-avx512f", {}, None),
    (HOST, {"NUMBA_CPU_NAME": "generic"}, None),
    (HOST, {"NUMBA_CPU_FEATURES": "+avx2"}, None),
    (HOST, {"SEXPGPU_VECTOR_BITS": "256"}, None),
    (HOST, {"SEXPGPU_VECTOR_BITS": "auto"}, HOST + ",-prefer-256-bit"),
])
def test_the_features_numba_is_given(host, environ, want) -> None:
    assert vectorwidth.features(host, environ) == want


# a fresh process: what numba's CPU target was created with, and whether the host
# has AVX-512, after `first` ran; the environment its compile workers inherit names
# the same features (or none, where the process has LLVM's choice)
PROBE = """
import sys
{first}
import numba, numpy as np
from llvmlite import binding
@numba.njit
def total(a):
    return a.sum()
total(np.ones(4))
from numba.core.registry import cpu_target
tm = cpu_target.target_context.codegen()._tm_features.split(",")
import os
assert os.environ.get("NUMBA_CPU_FEATURES", ",".join(tm)).split(",") == tm
print("-prefer-256-bit" in tm, "+avx512f" in binding.get_host_cpu_features().flatten().split(","))
"""


def _probe(first: str, **environ: str) -> tuple[bool, bool]:
    import os

    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME", "SEXPGPU_VECTOR_BITS",
                        vectorwidth.OWNER)}
    out = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], check=True,
                         capture_output=True, text=True, env=env | environ).stdout.split()
    return out[0] == "True", out[1] == "True"


@pytest.mark.parametrize("first", [
    "import sexpgpu.kernels",                   # before numba: the import hook
    "import numba\nimport sexpgpu.kernels",     # numba loaded, its target not created
])
def test_numba_compiles_for_wide_vectors_where_the_cpu_has_them(first) -> None:
    wide, avx512 = _probe(first)
    assert wide == avx512


def test_nothing_changes_once_numba_has_its_target_or_when_told_not_to() -> None:
    after = "import numba\nnumba.njit(lambda: 1)()\nimport sexpgpu.kernels"
    assert _probe(after)[0] is False
    assert _probe("import sexpgpu.kernels", SEXPGPU_VECTOR_BITS="256")[0] is False


def test_a_bad_width_is_refused_when_the_run_records_it(monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_VECTOR_BITS", "wide")
    with pytest.raises(SexpError) as caught:
        vectorwidth.describe()
    assert caught.value.diagnostic.code == "E-ENV"


def test_features_set_for_another_cpu_are_set_again_for_this_one() -> None:
    """A rank on another node may inherit its launcher's NUMBA_CPU_FEATURES: set by
    SexpGPU for another CPU (its fingerprint differs), they are replaced; set for
    this CPU (a compile worker's), they are kept."""
    other = {"NUMBA_CPU_FEATURES": "+sse2,+avx2,-avx512f", vectorwidth.OWNER: "0" * 16}
    wide, avx512 = _probe("import sexpgpu.kernels", **other)
    assert wide == avx512
    from llvmlite import binding

    mine = vectorwidth.fingerprint(binding.get_host_cpu_features().flatten())
    kept = {"NUMBA_CPU_FEATURES": binding.get_host_cpu_features().flatten(),
            vectorwidth.OWNER: mine}
    assert _probe("import sexpgpu.kernels", **kept)[0] is False


def test_another_cpus_features_are_dropped_when_numba_was_imported_first() -> None:
    """numba reads NUMBA_CPU_FEATURES on import: with another CPU's removed and none
    set instead (SEXPGPU_VECTOR_BITS=256), it compiles for this CPU's own features."""
    code = ("import numba\nimport sexpgpu.kernels\nfrom llvmlite import binding\n"
            "numba.njit(lambda: 1)()\n"
            "from numba.core.registry import cpu_target\n"
            "print(cpu_target.target_context.codegen()._tm_features == "
            "binding.get_host_cpu_features().flatten())")
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME",)}
    env |= {"NUMBA_CPU_FEATURES": "+sse2,+avx2,-avx512f", vectorwidth.OWNER: "0" * 16,
            "SEXPGPU_VECTOR_BITS": "256"}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=env).stdout.split()
    assert out == ["True"]
