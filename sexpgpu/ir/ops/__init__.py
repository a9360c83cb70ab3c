"""The op set. `opdef.py` says what an op is; each family module (binary, conv,
creation, elementwise, indexing, linalg, random, reduce, shape) defines its ops in
an `OPS` list; `registry.py` imports the families and gathers them by name."""
