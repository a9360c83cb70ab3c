"""The sinks by name: each opens lazily on the run's `open` event (inside the mirror's
thread) and takes every event after it. Each package is an optional extra."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# sink name -> (module to import, the extra that installs it)
PACKAGES = {"tensorboard": ("tensorboardX", "tensorboard"), "wandb": ("wandb", "wandb"),
            "mlflow": ("mlflow", "mlflow")}
SKIP = ("event", "time", "step")


def scalars(record: dict[str, Any]) -> dict[str, float]:
    """The numbers an event reports, by the name a tracker shows: a step's `loss`,
    `lr`, ... as `train/loss`; an eval's `val/loss` as it is; a diag's values as
    `diag/NAME`."""
    kind = record.get("event")
    if kind == "step":
        items = {f"train/{k}": v for k, v in record.items() if k not in SKIP}
    elif kind == "eval":
        items = dict(record.get("metrics") or {})
    elif kind == "diag":
        items = {f"diag/{k}": v for k, v in (record.get("values") or {}).items()}
    else:
        return {}
    return {k: float(v) for k, v in items.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


class TensorBoard:
    """Event files under RUN/tensorboard/ (tensorboardX's writer: no torch, no TF)."""

    def __init__(self, run_dir: Path, opened: dict[str, Any]):
        # an optional extra, imported only when selected
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(str(run_dir / "tensorboard"))
        self.writer.add_text("run/selection", str(opened.get("selection")), 0)

    def write(self, record: dict[str, Any]) -> None:
        step = int(record.get("step") or 0)
        for name, value in scalars(record).items():
            self.writer.add_scalar(name, value, step)
        if record.get("event") == "warn":
            self.writer.add_text("run/warn", str(record.get("message")), step)

    def close(self) -> None:
        self.writer.close()


class Wandb:
    """A W&B run named after the run directory (WANDB_MODE, WANDB_PROJECT and the
    other WANDB_* variables as wandb reads them; files under RUN/wandb/)."""

    def __init__(self, run_dir: Path, opened: dict[str, Any]):
        # an optional extra, imported only when selected
        import wandb

        self.run = wandb.init(project=None, name=run_dir.name, dir=str(run_dir),
                              config=opened.get("selection") or {}, reinit=True)

    def write(self, record: dict[str, Any]) -> None:
        values = scalars(record)
        if values:
            self.run.log(values, step=int(record.get("step") or 0))

    def close(self) -> None:
        self.run.finish()


class Mlflow:
    """An MLflow run named after the run directory, in the tracking store
    MLFLOW_TRACKING_URI names (mlflow's own default: ./mlruns)."""

    def __init__(self, run_dir: Path, opened: dict[str, Any]):
        # an optional extra, imported only when selected
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient()
        experiment = self.client.get_experiment_by_name("sexpgpu")
        exp_id = (experiment.experiment_id if experiment is not None
                  else self.client.create_experiment("sexpgpu"))
        self.run_id = self.client.create_run(exp_id, run_name=run_dir.name).info.run_id
        for key, value in (opened.get("selection") or {}).items():
            self.client.log_param(self.run_id, key, value)

    def write(self, record: dict[str, Any]) -> None:
        step = int(record.get("step") or 0)
        for name, value in scalars(record).items():
            self.client.log_metric(self.run_id, name, value, step=step)

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


SINKS = {"tensorboard": TensorBoard, "wandb": Wandb, "mlflow": Mlflow}
