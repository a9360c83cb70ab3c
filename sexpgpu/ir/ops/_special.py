"""scipy.special for the ops' numpy references, imported on the first call: importing
scipy costs 0.1-0.5 s, which `check` and every compile (which never run a reference)
would otherwise pay when the op registry loads."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def special() -> ModuleType:
    # heavy, and only the references (tests, the reference interpreter) call it
    import scipy.special

    return scipy.special


def erf(x: Any) -> Any:
    return special().erf(x)
