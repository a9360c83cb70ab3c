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


E_DEVICE_UNAVAILABLE = define_code(
    "E-DEVICE-UNAVAILABLE", "the device asked for is not usable here",
    "`--device cuda` (or `(defrun :device :cuda)`) needs numba-cuda, which the `cuda` "
    "extra installs (`pip install 'sexpgpu[cuda]'`), and an NVIDIA GPU whose driver "
    "numba-cuda can open. The run is refused before any kernel is generated, with what "
    "was looked for and what was found; `sexpgpu doctor --device cuda` shows the same. "
    "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) counts as usable: it runs the CUDA "
    "kernels on the CPU, very slowly, for tests.",
)


def require_usable(device: str, span: Span | None = None) -> None:
    """E-DEVICE-UNAVAILABLE unless `device` can run a step here (the CPU always can)."""
    if device != "cuda":
        return
    from sexpgpu.kernels.cuda_backend import probe  # numba only when cuda is asked for

    found = probe()
    if not found.usable:
        raise error(E_DEVICE_UNAVAILABLE, "cuda is not usable on this machine", span,
                    expected=found.looked_for, actual=found.found, fix=found.fix)
