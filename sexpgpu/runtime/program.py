"""The TrainingProgram: the one interface between a compiled training step and the runtime.

The compiler produces a RunPlan (spec.py) and an object with these methods; the
loop (loop.py) drives it and never looks inside. `numpy_program.py` is a small
implementation in plain numpy, used as the test double and as a reference.

ctx, the dict every call receives (see docs/data.md, "ctx"):
  step       steps completed before this one (0 on the first step)
  microstep  index of the microbatch within the step (0 .. microbatches-1)
  microbatches  how many microbatches this step has
  epoch      epochs the training loader's current stage has completed
  samples    samples the training loader delivered before this step
  tokens     target tokens delivered before this step (token sources; else 0)
  stage      index of the training loader's curriculum stage (0 without stages)
  seed       the run's seed (for counter-based randomness such as dropout)
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

Batch = dict[str, np.ndarray]
CTX_KEYS = ("step", "microstep", "microbatches", "epoch", "samples", "tokens", "stage", "seed")


@runtime_checkable
class TrainingProgram(Protocol):
    """A compiled experiment, as the runtime sees it."""

    def params(self) -> dict[str, np.ndarray]:
        """The parameters by path. The program updates these arrays in place; a
        checkpoint saves them and a resume writes the saved values back into them."""
        ...

    def state(self) -> dict[str, np.ndarray]:
        """Optimizer state by name (moments, step counters), updated in place like params."""
        ...

    def train_step(self, microbatches: list[Batch], ctx: dict[str, Any]) -> dict[str, float]:
        """One optimizer step over the microbatches (gradient accumulation is the
        program's job: the result must equal one batch of their union up to rounding).
        Schedules are evaluated from ctx. Returns at least loss, grad_norm and lr; any
        other numeric entries are logged with the step."""
        ...

    def evaluate(self, batch: Batch, ctx: dict[str, Any], name: str | None = None
                 ) -> dict[str, float]:
        """Metrics of one batch of the evaluation pass `name` (a `defeval`); the loop
        averages them over the pass, weighted by rows."""
        ...


def first_nonfinite(program: Any) -> str | None:
    """Which tensor went non-finite first: the program's own answer when it has one
    (an optional `first_nonfinite()` method), else the first parameter or state
    array holding a NaN or an infinity."""
    ask = getattr(program, "first_nonfinite", None)
    if callable(ask):
        name = ask()
        if name:
            return str(name)
    for kind, arrays in (("param", program.params()), ("state", program.state())):
        for name, array in arrays.items():
            if not np.all(np.isfinite(array)):
                return f"{kind} {name}"
    return None


def rng_state_of(program: Any) -> Any:
    """The optional `rng_state()` of a program (JSON-able; restored with `set_rng_state`).

    Programs that draw randomness from counters in ctx (seed, step, microstep) need neither.
    """
    get = getattr(program, "rng_state", None)
    return get() if callable(get) else None


def state_step_of(program: Any) -> int | None:
    """The optional `state_step()` of a program: how many optimizer steps its state
    arrays have counted (an Adam step counter), or None when they count none. A resumed
    checkpoint whose meta step disagrees with it is refused (E-CHECKPOINT)."""
    count = getattr(program, "state_step", None)
    return count() if callable(count) else None


def diagnostics_of(program: Any, ctx: dict[str, Any]) -> dict[str, float]:
    """The optional `diagnostics(ctx)` of a program: sampled values, or nothing."""
    sample = getattr(program, "diagnostics", None)
    return dict(sample(ctx)) if callable(sample) else {}
