"""Run settings as plain records (sexpgpu/record.py): what the compiler hands the
runtime (a RunPlan).

Everything here is data; nothing computes. `to_json` gives the form stored in
`plan.json` and checkpoints, so a plan can be compared with the one a checkpoint
was written under.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.data.spec import FieldBound, LoaderSpec
from sexpgpu.record import asdict, factory, record


@record
class EvalSpec:
    """`(defeval NAME :loader L :every N :batches B)`; batches None = one full pass."""

    name: str
    loader: str
    every: int = 0
    batches: int | None = None


@record
class TargetSpec:
    """`(deftarget METRIC :>= VALUE :note ...)`; metric is `eval/metric` or a step metric."""

    metric: str
    op: str
    value: float
    note: str = ""


@record
class RunSpec:
    """`(defrun ...)`. checkpoint_every, keep_checkpoints, log_every, device and diag_every
    do not change results."""

    steps: int
    microbatches: int = 1
    seed: int = 0
    precision: str = "f32"
    checkpoint_every: int = 0
    keep_checkpoints: int = 3
    log_every: int = 10
    device: str = "cpu"
    train_loader: str = "train"
    diag_every: int = 0  # sample the program's diagnostics every N steps (0: never)
    # data-parallel processes: each takes batch/procs rows of every step's batch and the
    # gradients are averaged across them (docs/devices.md, "Several processes")
    procs: int = 1


# the RunSpec fields that do not change results: left out of the slug and plan hash, so a
# run resumes under another --device or cadence
# (procs as device: the same numbers up to rounding, and the same run to resume)
RESULT_FREE = ("checkpoint_every", "keep_checkpoints", "log_every", "device", "diag_every",
               "procs")


@record
class RunPlan:
    """The compiler's description of one run (the TrainingProgram is handed over beside it).

    file: the run file's path; its directory anchors relative data paths.
    bounds: the batch fields the model uses as indices, which each loader checks.
    selection: every knob's value in this run, in the file's order (`{"lr": 0.01, ...}`);
    defaults: each knob's declared default.
    source_files: every file the compilation read, path -> text (copied to `source/`).
    plan_json: what `explain` prints (stored as plan.json); plan_hash: its hash, which a
    checkpoint must match to be resumed (masters_hash: the same without the precision,
    which a checkpoint continued in another precision must match).
    """

    file: str
    selection: dict[str, Any]
    source_files: dict[str, str]
    loaders: list[LoaderSpec]
    evals: list[EvalSpec]
    targets: list[TargetSpec]
    run: RunSpec
    plan_json: dict[str, Any] = factory(dict)
    plan_hash: str = ""
    # the plan hash without the precision: a checkpoint holds f32 masters and f32
    # optimizer state whatever the precision, so a run of the same plan in another
    # precision may continue it (`--resume PATH --precision f32`)
    masters_hash: str = ""
    # loader -> batch field -> the values the model indexes with it (class ids, token ids)
    bounds: dict[str, dict[str, FieldBound]] = factory(dict)
    # each knob's default as the file declares it: a run's name shows the knobs that differ
    defaults: dict[str, Any] = factory(dict)

    def loader(self, name: str) -> LoaderSpec:
        for spec in self.loaders:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """Everything but the source texts (those go to `source/`)."""
        out = asdict(self)
        out["source_files"] = sorted(self.source_files)
        return out
