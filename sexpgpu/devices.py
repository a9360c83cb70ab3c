"""The devices a training step can run on, and the one check of a device's name that
every entry point (`defrun :device`, `--device`, the Python API) goes through."""

from __future__ import annotations

from sexpgpu.diagnostics import Span, define_code, error
from sexpgpu.suggest import did_you_mean

DEVICES = ("cpu", "cuda")

E_DEVICE = define_code(
    "E-DEVICE", "unknown device",
    "A run trains on `cpu` (numba's njit kernels) or `cuda` (numba's CUDA kernels). "
    "`(defrun :device ...)`, `--device` and the Python API accept only these names; "
    "anything else is refused before the file is traced or a kernel compiled.",
)


def check_device(name: object, where: str, span: Span | None = None) -> str:
    """`name` as a device name, or E-DEVICE; `where` says who asked (`--device`, ...)."""
    text = str(name).lstrip(":").lower() if name is not None else ""
    if text in DEVICES:
        return text
    raise error(E_DEVICE, f"{where}: unknown device `{name}`", span,
                expected=" or ".join(DEVICES), actual=str(name), fix=did_you_mean(text, DEVICES))
