"""Tracing: tensor builtins called while the model, objective and optimizer are
evaluated do not compute; they add typed IR nodes to the graph being traced."""
