"""The ring protocol, below both the simulator and the compiler (imports only ``arch``):
``model`` - one ProtocolModel per model (spec; pto-isa per platform, per named release and
its CPU simulator): flag ids, credits, when a free is sent, teardown, SLOT_NUM defaults;
``versions`` - the pto-isa releases and the library bugs each had, as data; ``geometry`` - how a split tile maps onto a slot
(parts, offsets, the slot's layout) and the words the run and VerifyPipes use for it; ``slots`` -
where each model's TPUSH puts a tile's elements in a slot, where its TPOP reads them, and why a
read goes wrong; ``rings`` -
the LocalSlotNum of an init that leaves it out (pto-isa's default, and the TPipe ptoas builds
from each ``.pto`` pipe init)."""
