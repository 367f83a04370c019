"""``python -m ptopipe.cli``: the command line (same as ``ptopipe`` and ``python -m ptopipe``)."""
import sys

from . import main

sys.exit(main())
