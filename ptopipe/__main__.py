"""``python -m ptopipe``: the ``ptopipe`` command (same as ``python -m ptopipe.cli``)."""
from .cli import entry

entry()
