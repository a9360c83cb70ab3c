"""Which trackers a run mirrors to: `--log-to` on the command line, else
SEXPGPU_LOG_TO; the event log asks `mirror_for` when it opens."""

from __future__ import annotations

from pathlib import Path

from sexpgpu import env
from sexpgpu.diagnostics import error
from sexpgpu.suggest import did_you_mean
from sexpgpu.trackers.mirror import Factory, Mirror
from sexpgpu.trackers.sinks import SINKS
from sexpgpu.usage import E_USAGE, UsageError

_selected: list[str] | None = None  # set by `sexpgpu run`; None: the environment decides
# more sinks for the runs of this process, beside the trackers: `--runs s3://...`
_extra: dict[str, tuple[Factory, str]] = {}


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
    """The command line's choice for the runs of this process (None: SEXPGPU_LOG_TO);
    it also forgets the sinks `also` added for an earlier run."""
    global _selected
    _selected = parse(raw) if raw is not None else None
    _extra.clear()


def also(name: str, factory: Factory, label: str) -> None:
    """One more sink for the runs of this process (the S3 mirror of `--runs s3://`)."""
    _extra[name] = (factory, label)


def selected() -> list[str]:
    if _selected is not None:
        return _selected
    return parse(env.log_to(), "SEXPGPU_LOG_TO")


def mirror_for(run_dir: Path) -> Mirror | None:
    """A Mirror to the selected sinks for the run in `run_dir`, or None when none is."""
    factories: dict[str, Factory] = {name: SINKS[name] for name in selected()}
    labels = {}
    for name, (factory, label) in _extra.items():
        factories[name], labels[name] = factory, label
    return Mirror(factories, run_dir, labels) if factories else None
