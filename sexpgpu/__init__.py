"""SexpGPU: one Common Lisp file states one ML experiment.

Importing this package is cheap on purpose: `check` and `eval` must not pay for
numpy or numba. Stages import their heavy dependencies themselves.
"""

__version__ = "0.1.0"
