"""Tracing: tensor builtins called while the model, objective and optimizer are
evaluated do not compute; they add typed IR nodes to the graph being traced.

`tensor` holds TracedTensor and the Trace being built (with `site`, which finds the
user's form behind each node); `args` reads Lisp arguments; `builtins` is the table of
tensor builtins; `expect` the expect-shape/-dtype builtins library code states its
arguments with; `model` instantiates models and their parameters; `optimizer` traces
groups, schedules and update rules; `step.Tracer` puts these together into the step,
accumulate/apply and evaluate graphs; `health` traces the `--diag` diagnostics graph.
"""
