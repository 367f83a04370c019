"""Shared pieces of the event-flag misuse examples (M11-M14): one Vector core (AIV0) that
streams ``tiles`` 16x16 f32 tiles of ``x`` through UB (TLOAD on MTE2, a vector op on V,
TSTORE on MTE3), run in the manual synchronisation mode, where only set_flag / wait_flag
order the pipes of a core.  No golden: the point of each example is the report."""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import GlobalTensor

T = 16


def make_args(rng, tiles=4):
    return dict(x=rng.integers(-8, 8, (tiles + 1, T, T)).astype(np.float32),
                y=np.zeros((tiles + 1, T, T), np.float32), tiles=tiles)


def tile(gt, i):
    """The i-th 16x16 tile of a (tiles + 1, 16, 16) GM tensor."""
    return GlobalTensor(gt.data() + i * T * T, (T, T))


def no_golden(args, **_):
    return {}


def scenario(name, vector, doc, variants=None, golden=no_golden):
    return Scenario(name, None, (vector, None), make_args, golden, variants or {"default": {}},
                    doc=doc, sync="manual")
