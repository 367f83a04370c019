"""Periodic fast-forward: a run's steady state recorded, not simulated (``engine="periodic"``).

A streaming kernel repeats itself: every ring period each core issues the same instructions
on the same tiles, its GM windows moved by a constant.  The exact engine simulates each one
(timing, scoreboard, flags, the instruction's own checks, its numpy work).  This engine
proves that the machine repeats with the kernel and from then on only records:

1. WARM-UP - the first hooked calls of a core (the hot instructions hand their calls to the
   engine first: :meth:`~.engine.FastForward.call`) are made exactly at no extra cost: a
   short run is not worth learning.
2. LEARN - every hooked call is made exactly and logged with what it did (:mod:`.calls`):
   the flags it waited for and set, what it returned, what it changed on its operands; the
   data work the cores queue is logged in the order they queue it.  Once every core's calls
   repeat (three periods in a row, and over at least the last PERIOD_WINDOW calls), the
   machine state (:mod:`.walk`) is taken at a block boundary and again at the end of each of
   the next three blocks.  A block is the first
   whole number of the reference core's periods after which every other core has made
   whole periods too and every ring is back in its phase (``phase()``: the same slots,
   SyncPeriod batch and staging slot next).  The state must move by the same amount each
   block - clocks and counters by a constant, memory views by a constant offset, everything
   else equal (:mod:`.values`) - and so must the calls and the data work between the
   boundaries: the timing model is a max-plus system, so the engine's step commutes with
   that move and every later block moves by it too.  A pipeline still filling up is tried
   again a few blocks later, then with longer blocks.
3. RECORD - a hooked call that is the learned call at its place (the same line, function
   and tiles - a tile made anew per call, as the ``pl`` DSL's TPOP makes one, a new one alike
   and at a later use the one given then (:class:`~.calls.Fresh`) -, scalars of the same
   value and sign, its GM windows and Events where the block puts them and inside their
   tensors) counts the flags it waits for and sets - a core still
   blocks while a count is zero, so the cores keep in step - sets on its operands what the
   learned call changed (a popped tile's address) and returns the learned result moved.
   Neither the rest of the machine state nor memory is touched.
4. MATERIALIZE - at a call that differs, any other use of the machine (an ISA call that is
   not hooked, ``Tile.array``, a pipe's status), a deadlock, the instruction budget in sight
   or the end of the run: the data work of every block all cores completed is applied -
   in batches (:mod:`.batch`) or block after block - the state is set to the last snapshot
   moved by those blocks, and the calls recorded after that cut are made exactly, in an
   order the flags allow.  The run goes on exactly, learning again after a call that
   differed (a loop's next phase).
5. TAKE WHOLE - a loop whose body is shift-equivariant (:mod:`.loops`) - an interpreter's
   (``pl.range``, PTO-AS ``scf.for``) or a Python kernel's ``range`` loop read from its
   source (:mod:`ptopipe.isa.skip`) - offers the engine each of its heads while it records:
   the cores park at one head each, and once all are parked every core skips whole blocks
   at once without running them, its loop and call count moved
   (:meth:`~.engine.FastForward.head`).

The timing model depends only on each core's instruction sequence and on which SET each
WAIT takes (flags are FIFO), not on the order the cores ran in; the data work runs in an
order the exact engine ran it.  So outputs, cycles, per-core counts and stalls, errors and
their lines are the exact engine's (tests/sim/test_periodic.py runs both).  The engine
applies to runs with the trace, exploration and the cycle bound off, automatic
synchronisation and timing on, the checkers off or a checker it can carry across recorded
blocks (:mod:`.checker`; :func:`applies`); every other run, and every
kernel that never settles, runs exactly.  docs/engine.md is the user's page.
"""
from .engine import FastForward, FastForwardReport, applies

__all__ = ["FastForward", "FastForwardReport", "applies"]
