"""``python -m ptopipe``: the ``ptopipe`` command (same as ``python -m ptopipe.cli``)."""
import sys

from .cli import main

sys.exit(main())
