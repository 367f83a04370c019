"""Shared pieces of the misuse examples: a C2V ring of 16x16 f32 tiles from the Cube to
AIV0, and a Scenario with no golden outputs (the point of each example is the report)."""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

T = 16
SLOT = T * T * 4
DEPTH = 4
RING_UB = 0x8000     # A5: the C2V ring in AIV0's UB (A2A3: local staging of popped tiles)


def make_args(rng, tiles=64):
    return dict(x=rng.integers(-8, 8, (T, T)).astype(np.float32), out=np.zeros((T, T), np.float32),
                fifo=gm_buffer(2 * 8 * SLOT), tiles=tiles)


def no_golden(args, **_):
    return {}


def scenario(name, cube, vector, doc, **kw):
    return Scenario(name, cube, vector, make_args, no_golden, {"default": {}}, doc=doc, **kw)
