"""Op families; importing this package registers every op."""

from sexpgpu.ir.ops import (  # noqa: F401 - each import registers its ops
    binary,
    conv,
    creation,
    elementwise,
    indexing,
    linalg,
    random,
    reduce,
    shape,
)
