"""`sexpgpu sweep FILE NAME --emit slurm`: a job-array script for a Slurm cluster, one
array task per point. A task that is requeued (preempted, or its node failed) runs its
point again with `--resume latest`, continuing from the last checkpoint."""

from __future__ import annotations

import shlex
from pathlib import Path

from sexpgpu.diagnostics import error
from sexpgpu.selection import E_RUN_FLAG


def emit(kind: str, file: str, sweep: str, argvs: list[list[str]], runs: str) -> str:
    """The script's text; `kind` must be `slurm`."""
    if kind != "slurm":
        raise error(E_RUN_FLAG, f"--emit {kind}: not a script this sweep can write",
                    expected="--emit slurm", actual=f"--emit {kind}", fix="--emit slurm")
    name = f"{Path(file).stem}-{sweep}"
    points = "\n".join(f"  {shlex.quote(shlex.join(argv))}  # point {i}"
                       for i, argv in enumerate(argvs))
    return f"""#!/bin/bash
# sexpgpu sweep {shlex.quote(file)} {sweep}: {len(argvs)} points, one array task each.
# Submit from the directory you ran `sexpgpu sweep` in: sbatch THIS_FILE
#SBATCH --job-name={shlex.quote(name)}
#SBATCH --array=0-{len(argvs) - 1}
#SBATCH --output={shlex.quote(runs)}/slurm-%A_%a.out
#SBATCH --requeue
#SBATCH --signal=B:TERM@120
set -uo pipefail
mkdir -p {shlex.quote(runs)}

POINTS=(
{points}
)

# a requeued task continues its point's run from the last checkpoint
resume=()
if [ "${{SLURM_RESTART_COUNT:-0}}" -gt 0 ]; then
  resume=(--resume latest)
fi
eval "set -- ${{POINTS[$SLURM_ARRAY_TASK_ID]}}"
sexpgpu run "$@" ${{resume[@]+"${{resume[@]}}"}} &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM  # Slurm's warning, passed on to the run
wait "$child"
code=$?
if [ "$code" -gt 128 ]; then  # the trap interrupted the wait: wait for the run's own code
  wait "$child"
  code=$?
fi
if [ "$code" -eq 75 ]; then  # stopped after a checkpoint: run the rest later
  scontrol requeue "${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"
fi
exit "$code"
"""
