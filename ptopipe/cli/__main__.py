"""``python -m ptopipe.cli``: the command line (same as ``ptopipe`` and ``python -m ptopipe``)."""
from . import entry

entry()
