"""The scalar helpers of CPU kernels (kernels/scalars.py): compiled once and imported
by the kernel modules that call them, which copy none of their text; LLVM inlines
them into a kernel's loop and vectorises it, also when a helper comes from numba's
disk cache in a fresh process; the kernels' results match the reference with
special values; and the kernel cache's keys change with the helpers' text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from sexpgpu.kernels import cache, executor, scalars

from sexpgpu import kernels
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 88.5, -104.0, 30.0],
                   np.float32)


def _graph() -> Graph:
    """Ops whose kernels call helpers (the exact GELU's erf, tanh, sigmoid, exp, log)
    on rows long enough for vector loops."""
    g = Graph("scalars")
    x = g.input("x", (4, 256))
    g.output("gelu", g.apply("gelu", x, approximate="none"))
    g.output("tanh", g.apply("tanh", x))
    g.output("sigmoid", g.apply("sigmoid", x))
    g.output("log", g.apply("log", g.apply("exp", x)))
    return g


def _inputs() -> dict[str, np.ndarray]:
    x = np.random.default_rng(3).standard_normal((4, 256)).astype(np.float32) * 4
    x[0, :len(SPECIAL)] = SPECIAL
    return {"x": x}


def _helper_calls(ir: str) -> list[str]:
    """The calls of a compiled-once helper left in a function's LLVM IR."""
    return [line for line in ir.splitlines()
            if re.search(r"\bcall\b", line) and any(name in line for name in scalars.NAMES)]


def test_kernels_import_the_helpers_they_call_and_copy_none(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    sources = kernels.compile(_graph()).generated.kernel_sources
    imported = {name for s in sources
                for line in re.findall(r"^from sexpgpu\.kernels\.scalars import (.*)$", s, re.M)
                for name in line.split(", ")}
    assert {"fast_erf32", "fast_tanh32", "fast_sigmoid32", "fast_exp32", "fast_log"} <= imported
    assert not any(re.search(rf"^def {name}\(", s, re.M) for s in sources
                   for name in scalars.NAMES)


def _fresh_ir(fn: Any, signature: tuple) -> str:
    """The LLVM IR of kernel `fn` compiled anew from its module's text (a kernel that
    an earlier test or run left in numba's cache loads with no IR to show)."""
    path = fn.py_func.__code__.co_filename
    with open(path, encoding="utf-8") as fh:
        source = fh.read().replace("cache=True", "cache=False")
    namespace = {"__name__": "fresh_kernel", "__file__": path}
    exec(compile(source, path, "exec"), namespace)  # noqa: S102 - a generated kernel
    fresh = namespace[fn.py_func.__name__]
    fresh.compile(signature)
    return fresh.inspect_llvm(signature)


def test_llvm_inlines_the_helpers_into_vector_loops() -> None:
    compiled = kernels.compile(_graph())
    compiled.run(_inputs())
    checked = 0
    for fn in executor.kernel_functions(compiled).values():
        with open(fn.py_func.__code__.co_filename, encoding="utf-8") as fh:
            if "scalars import" not in fh.read():
                continue
        for signature in fn.signatures:
            ir = _fresh_ir(fn, signature)
            assert not _helper_calls(ir), _helper_calls(ir)[:3]
            assert re.search(r"<(4|8|16) x float>", ir), "the helper's loop is not vectorised"
            checked += 1
    assert checked


def test_the_kernels_match_the_reference_on_special_values() -> None:
    g = _graph()
    got = kernels.compile(g).run(_inputs())
    want = run_reference(g, _inputs())
    for name in ("gelu", "tanh", "sigmoid", "log"):
        np.testing.assert_allclose(got[name], want[name], rtol=2e-6, atol=1e-6,
                                   equal_nan=True, err_msg=name)
        numbers = ~np.isnan(want[name])
        assert np.array_equal(np.signbit(got[name][numbers]), np.signbit(want[name][numbers]))


# a fresh process: the helpers come from numba's disk cache (filled by this one), and a
# new kernel that calls them, compiled in an empty kernel cache, still inlines them
_FRESH = textwrap.dedent("""
    import re, sys
    import numpy as np
    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph
    from sexpgpu.kernels import executor, scalars
    g = Graph("fresh")
    x = g.input("x", (3, 200))
    g.output("y", g.apply("gelu", x, approximate="none"))
    compiled = kernels.compile(g)
    compiled.run({"x": np.ones((3, 200), np.float32)})
    hits = sum(scalars.fast_erf32.stats.cache_hits.values())
    irs = [fn.inspect_llvm(s) for fn in executor.kernel_functions(compiled).values()
           for s in fn.signatures]
    calls = [l for ir in irs for l in ir.splitlines() if " call " in l and "fast_erf32" in l]
    vector = any(re.search(r"<(4|8|16) x float>", ir) for ir in irs)
    print(hits, len(calls), vector)
""")


def test_a_cached_helper_is_inlined_in_a_new_process(tmp_path) -> None:
    from sexpgpu.kernels import scalars as compiled_once

    compiled_once.fast_erf32(np.float32(0.5))   # in numba's cache beside kernels/mathfn.py
    env = {**os.environ, "SEXPGPU_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _FRESH], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    hits, calls, vector = done.stdout.split()
    assert int(hits) >= 1, "the helper was compiled again, not loaded from the cache"
    assert int(calls) == 0 and vector == "True"


def test_the_kernel_cache_key_holds_the_helpers_text() -> None:
    # numba checks a kernel file's own timestamp only: a kernel compiled with an older
    # helper must not be served after the helper changed
    assert {"sexpgpu.kernels.scalars", "sexpgpu.kernels.mathfn", "sexpgpu.ir.rng"} \
        <= set(cache._COMPILED_IN)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        scalars.fast_cosh32  # noqa: B018 - the lookup is the test
