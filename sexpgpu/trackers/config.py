"""Which trackers a run mirrors to: `--log-to` on the command line, else
SEXPGPU_LOG_TO; the event log asks `mirror_for` when it opens."""

from __future__ import annotations

from pathlib import Path

from sexpgpu import env
from sexpgpu.diagnostics import error
from sexpgpu.suggest import did_you_mean
from sexpgpu.trackers.mirror import Mirror
from sexpgpu.trackers.sinks import SINKS
from sexpgpu.usage import E_USAGE, UsageError

_selected: list[str] | None = None  # set by `sexpgpu run`; None: the environment decides


def parse(raw: str | None, where: str = "--log-to") -> list[str]:
    """`tensorboard,wandb` -> the sink names, each known (E-USAGE otherwise)."""
    names = [n.strip().lower() for n in (raw or "").split(",") if n.strip()]
    for name in names:
        if name not in SINKS:
            raise UsageError(*error(E_USAGE, f"{where} {raw}: no tracker `{name}`",
                                    expected="a comma-separated list of: " + ", ".join(SINKS),
                                    actual=name, fix=did_you_mean(name, list(SINKS))
                                    or f"{where} tensorboard").diagnostics)
    return list(dict.fromkeys(names))


def select(raw: str | None) -> None:
    """The command line's choice for the runs of this process (None: SEXPGPU_LOG_TO)."""
    global _selected
    _selected = parse(raw) if raw is not None else None


def selected() -> list[str]:
    if _selected is not None:
        return _selected
    return parse(env.log_to(), "SEXPGPU_LOG_TO")


def mirror_for(run_dir: Path) -> Mirror | None:
    """A Mirror to the selected sinks for the run in `run_dir`, or None when none is."""
    names = selected()
    return Mirror(names, run_dir) if names else None
