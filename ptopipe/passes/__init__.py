"""passes: the compiler passes over the op IR (one module per pass; each has ``run(program,
ctx)``, ``NAME``, ``REQUIRES`` and ``PRODUCES``)."""
from . import expand_mixed, insert_tfree, skew_push_ahead  # noqa: F401
