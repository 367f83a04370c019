"""The pto-isa C++ kernel c2v_bias.cpp as a ptopipe Scenario: its kernels built with the system
C++ compiler against ptopipe's headers (ptopipe.cpp.kernels), run with numpy inputs and checked
against the numpy golden - like any Python kernel, every report at the C++ line.
out = A @ B + bias.

Run:  ptopipe run examples/cpp/c2v_bias.py [--platform a5] [--protocol pto-isa] [--variant m64]
      ptopipe check examples/cpp/c2v_bias.py --schedules 50
(For crash isolation - the native code in a child process - run the .cpp itself:
 ptopipe run examples/cpp/c2v_bias.cpp --input a=a.npy ...)
"""
import os

import numpy as np

import ptopipe
from ptopipe.cpp import kernels

AIC, AIV = kernels(os.path.join(os.path.dirname(os.path.abspath(__file__)), "c2v_bias.cpp"))


def make_args(rng, M=32):
    return dict(a=rng.integers(-3, 4, (M, 32)).astype(np.float32), b=rng.integers(-3, 4, (32, 32)).astype(np.float32),
                bias=rng.integers(-8, 9, (M, 32)).astype(np.float32), out=np.zeros((M, 32), np.float32),
                fifo=ptopipe.gm_buffer(4 * 16 * 32 * 4), M=M)


def golden(args, **_):
    return {"out": args["a"] @ args["b"] + args["bias"]}


SCENARIO = ptopipe.Scenario("cpp_c2v_bias", AIC, AIV, make_args, golden,
                            {"default": dict(M=32), "m64": dict(M=64)}, doc=__doc__)
