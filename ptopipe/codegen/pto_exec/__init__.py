"""Run PTO-AS (``.pto``) as ptoas reads it: buffer semantics, on the simulated cluster.

A ``pto.alloc_tile`` (``declare_tile``, ``memref.alloc``) is a buffer at an address - the
one it names (``addr = %c``) or one this executor places; identical ``declare_tile`` ops that
ptoas folds are one tile (:func:`.tile_ops.declare_folds`) - and every op reads and writes
buffers through :mod:`ptopipe.isa`, exactly as the pto-isa C++ that ptoas emits does.  So
tiles that overlap alias as on the device, an accumulator read before anything wrote it
holds what its memory holds, and every checker of the ISA layer (deadlocks, protocol
misuse, slot use-after-free, races, leaks) runs on the file, reported at its line:col.

The file is read by :mod:`ptopipe.codegen.pto_tree` (syntax only) and checked here before
anything runs: every op must be one this executor knows (else a ParseError naming it at
its line), every value defined before use.  What runs where:

- a function with ``pto.kernel_kind`` runs on its core (vector: AIV0, and AIV1 too when the
  program has a cross-core pipe that is not one-lane); an entry (``pto.entry``, or a
  function calling kernels) runs on every core, each ``func.call`` of a kernel on that
  kernel's cores only, as ptoas's ``#if defined(__DAV_CUBE__)`` guards do;
- a function without a kind runs on the core its tiles imply (Vec -> a Vector core, Mat /
  Left / Right / Acc / Bias -> the Cube); one that needs both is refused, naming a tile of
  each (the device has no core that holds both).

Ops of the op catalogue run generically: ``pto.tX ins(a, b, s) outs(d) {attrs}`` is
``isa.TX(d, a, b, s)``.  Scalars follow MLIR: ``iN`` arithmetic wraps at N bits, ``index``
is 64-bit, comparisons and divisions are signed unless the op says ``u``.

Modules: :mod:`.types` (types), :mod:`.program` and :mod:`.reader` (the program), :mod:`.placement`
(tile addresses), :mod:`.executor` with the op handlers (:mod:`.scalar_ops`, :mod:`.control_ops`,
:mod:`.tile_ops`, :mod:`.sync_ops`, :mod:`.pipe_ops`), :mod:`.launch` (arguments, cores, the run).
"""
from .launch import PtoLaunch, PtoRun, prepare, run_pto
from .placement import Layout, alias_notes, live_ranges, plan_layout
from .program import MIXED, Program, choose_top, has_pipes, read_text, top_functions
from .reader import read_program
from .types import ScalarT, TileSpec, wrap

__all__ = ["Layout", "MIXED", "Program", "PtoLaunch", "PtoRun", "ScalarT", "TileSpec", "alias_notes",
           "choose_top", "has_pipes", "live_ranges", "plan_layout", "prepare", "read_program", "read_text",
           "run_pto", "top_functions", "wrap"]
