"""512-bit vectors in numba's loops on CPUs with AVX-512.

LLVM tunes Intel's AVX-512 cores for 256-bit vectors (its `prefer-256-bit`, from the
Skylake servers whose clock dropped under 512-bit instructions), so numba's loops
(the elementwise, norm, softmax and attention kernels; vgemm's block is written in
vectors of its own) ran 8 lanes where 16 fit. With the preference off, the
char-GPT's kernels other than matmuls took 8.1 ms a step instead of 9.2 on a
Sapphire Rapids, in five alternating pairs of runs (docs/benchmarks.md).

numba fixes its CPU features when it creates its CPU target, at the first `njit` of
the process, and keys its cache by them: so they are set before that, in the
environment (NUMBA_CPU_FEATURES: the host's features and `-prefer-256-bit`), where
the compile workers inherit them. `before_numba()` (called by `sexpgpu.kernels` on
import, which numba itself must not be: `check` never loads it) does it when numba
is imported, by an import hook, or at once when numba is loaded but has not created
its target yet. After that it changes nothing: kernels compile as numba's target
is, and the workers are told its features. Nothing is changed either where
NUMBA_CPU_NAME or NUMBA_CPU_FEATURES are set (a cache built for other machines),
with SEXPGPU_VECTOR_BITS=256, or on a CPU without AVX-512.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import os
import sys

from sexpgpu import env

WIDE = "-prefer-256-bit"
OWNER = "SEXPGPU_CPU_FEATURES_OF"  # the fingerprint of the CPU NUMBA_CPU_FEATURES is for


def features(host: str, environ: dict[str, str]) -> str | None:
    """NUMBA_CPU_FEATURES for loops of 512-bit vectors on a CPU of `host` features
    (LLVM's flattened list), or None to leave numba's choice (or the user's, or
    that of the SexpGPU process this one's environment came from)."""
    if environ.get("NUMBA_CPU_NAME") or environ.get("NUMBA_CPU_FEATURES"):
        return None
    if environ.get("SEXPGPU_VECTOR_BITS", "").strip().lower() == "256":
        return None
    if "+avx512f" not in host.split(","):
        return None
    return f"{host},{WIDE}"


def fingerprint(host: str) -> str:
    """A short name for a CPU's features (LLVM's flattened list)."""
    return hashlib.sha256(host.encode()).hexdigest()[:16]


def configure() -> None:
    """Set NUMBA_CPU_FEATURES (`features`); where numba has created its CPU target
    already, to the features it has, so that compile workers match this process.
    Beside it, SEXPGPU_CPU_FEATURES_OF names the CPU it was set for: a process on
    another kind of CPU (a rank on another node, to which its launcher's environment
    was passed) sets its own instead of compiling for instructions it may lack."""
    from llvmlite import binding  # only as numba loads: `check` must not load LLVM

    host = binding.get_host_cpu_features().flatten()
    if os.environ.get(OWNER, fingerprint(host)) != fingerprint(host):
        os.environ.pop("NUMBA_CPU_FEATURES", None)
        del os.environ[OWNER]
    numba = sys.modules.get("numba")
    if numba is not None:
        from numba.core.registry import cpu_target  # loaded already: costs nothing

        if "_toplevel_target_context" in cpu_target.__dict__:
            if not os.environ.get("NUMBA_CPU_NAME"):
                _set(cpu_target.target_context.codegen()._tm_features, host)
            return
    wanted = features(host, dict(os.environ))
    if wanted is not None:
        _set(wanted, host)
    if numba is not None:
        # numba read its variables on import: it takes a change (set, or another
        # CPU's removed) when it reads them again
        numba.core.config.reload_config()


def _set(value: str, host: str) -> None:
    os.environ["NUMBA_CPU_FEATURES"] = value
    os.environ[OWNER] = fingerprint(host)


class _OnNumbaImport(importlib.abc.MetaPathFinder):
    """Runs `configure` when numba is first imported, then steps aside."""

    def find_spec(self, name: str, path: object, target: object = None) -> None:  # noqa: ARG002
        if name == "numba":
            sys.meta_path.remove(self)
            configure()


def before_numba() -> None:
    """Configure numba's vector width before it compiles anything (see above)."""
    if "numba" in sys.modules:
        configure()
    elif not any(isinstance(f, _OnNumbaImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _OnNumbaImport())


def describe() -> str:
    """What the `open` event records: the vector width of numba's loops."""
    env.vector_bits()  # a bad SEXPGPU_VECTOR_BITS is refused here, at a run's start
    if WIDE in os.environ.get("NUMBA_CPU_FEATURES", "").split(","):
        return "512-bit"
    return "LLVM's choice"
