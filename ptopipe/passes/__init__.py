"""Compiler passes over the op IR (issue 11): each module is one pass with ``NAME``,
``REQUIRES``, ``PRODUCES`` and ``run(program, ctx) -> program``."""
from . import verify_pipes

__all__ = ["verify_pipes"]
