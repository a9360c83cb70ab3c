"""The contract: a run file's forms (knobs, loaders, model, objective, optimizer, evals,
targets, run) checked, evaluated into an Experiment and traced into graphs.

`forms` reads the file and checks its shape before evaluation; `collect` holds the
%-builtins the contract macros of `forms.sx` expand into, filling an
`experiment.Experiment` (`values` converts Lisp values); `fields` works out each loader's
batch fields; `compile.compile_file(path, selection)` is the entry point and returns a
`compiled.CompiledExperiment`; `plan` turns that into plan.json and the RunPlan.
"""
