"""The training runtime: drives a compiled TrainingProgram through a RunPlan.

`spec` holds the run settings (RunSpec, EvalSpec, TargetSpec, RunPlan); `program` the
TrainingProgram interface, implemented by `compiled.KernelProgram` (the compiled kernels)
and `numpy_program` (a plain-numpy test double); `loop` is the training loop, with
`evals` (evals and targets), `health` (sampling `--diag` diagnostics) and `signals`;
`rundir`, `events`, `status` and `checkpoint` are what a run writes, `schema` checks it.
"""
