"""Platform descriptions: memory sizes, cross-core flag resources and ring defaults.

Pure data (frozen dataclasses).  ``A2A3`` is the Ascend 910B-class model (ring buffers in
GM), ``A5`` the 950-class model (ring buffers in the consumer's UB or L1).  Every number
is overridable with :meth:`Platform.replace`.  Numbers come from ``shared/PLATFORMS.md``
and the seeds; assumptions are marked.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..errors import ConfigError
from .costs import CostTable
from .vocab import ALIGNMENT, MemSpace, PlatformID  # noqa: F401  (PlatformID re-exported)

KiB = 1024


@dataclass(frozen=True)
class Platform:
    name: str
    id: PlatformID
    mem_sizes: dict = field(default_factory=dict)   # MemSpace -> bytes (local memories)
    alignment: int = ALIGNMENT                       # all buffers 32-byte aligned
    # Cross-core flags (seed 003): 8 per direction per Vector-Cube peer for the spec
    # protocol's per-tag flags (16 on A5, below); the hardware has 16 flag ids (pto-isa:
    # FlagID+1 < 16), each a counter of at most ``flag_counter_max``.
    flags_per_direction: int = 8
    hw_flag_ids: int = 16
    flag_counter_max: int = 15                       # assumption: 4-bit FFTS counters
    slot_num_unidirectional: int = 8
    slot_num_bidirectional: int = 4
    max_fifo_depth: int = 8                          # TMPipe FiFoDepth 2..8 (A2A3), 16 (A5)
    ring_in_gm: bool = True                          # A2A3: GM; A5: consumer UB/L1
    gm_directions: bool = False                      # *_GM directions (A5 only)
    cross_core_latency: int = 220                    # cycles for a SET to reach the peer
    # A2A3's cross-core WAIT (``wait_flag_dev``, pto-isa a2a3/TPush.hpp) is a scalar
    # instruction that holds the core's whole instruction issue, and its SET
    # (``ffts_cross_core_sync(pipe, ...)``) fires from a pipe's queue after that pipe's earlier
    # work: a round trip through another core orders this core's pipes.  A5's
    # (``wait_intra_block(pipe, ...)``) holds one pipe only.
    cross_core_wait_holds_issue: bool = True
    # pto-isa's TMP_UB_OFFSET (include/pto/common/constants.hpp:30: 184 KiB, TMP_UB_SIZE 8 KiB):
    # UB from here to its end is the implicit scratch A2A3's TROWEXPAND* with a column-major
    # [M, 1] operand (a2a3/TRowExpandBinOp.hpp:208) and TEXTRACT's ND -> NZ widening
    # (a2a3/TExtract.hpp:348) overwrite, so the compiler places no Vec tile there (pypto caps
    # Vec UB at it too: src/backend/common/soc.cpp:139).  None: no such scratch (A5).
    ub_scratch_base: int | None = None
    clock_ghz: float = 1.85
    costs: CostTable = field(default_factory=CostTable)
    # the device compiler's target (bisheng's --cce-aicore-arch=dav-c220-cube / -vec: pto-isa's
    # kernels/*/CMakeLists.txt) and its __NPU_ARCH__ (pto-isa's common/arch_macro.hpp): what a
    # kernel's #if tests, as __DAV_C220_VEC__ or __CCE_AICORE__ == 220
    dav_arch: str = "c220"
    npu_arch: int = 2201

    def replace(self, **changes) -> "Platform":
        """A copy with some fields changed (``mem_sizes`` entries may be given by name)."""
        sizes = changes.pop("mem_sizes", None)
        if sizes is not None:
            merged = dict(self.mem_sizes)
            for k, v in sizes.items():
                merged[MemSpace(k) if isinstance(k, str) else k] = int(v)
            changes["mem_sizes"] = merged
        try:
            return dataclasses.replace(self, **changes)
        except TypeError as e:
            raise ConfigError(f"unknown platform field: {e}",
                              fix=f"valid fields: {', '.join(f.name for f in dataclasses.fields(Platform))}")

    def mem_size(self, space: MemSpace) -> int:
        return self.mem_sizes[space]

    def tile_space(self, space: MemSpace) -> int:
        """The bytes of ``space`` the compiler places tiles in: all of it, but UB below
        pto-isa's implicit scratch (``ub_scratch_base``) where the platform has one."""
        have = self.mem_sizes[space]
        if space is MemSpace.UB and self.ub_scratch_base is not None:
            return min(have, self.ub_scratch_base)
        return have

    def slot_num_for(self, bidirectional: bool) -> int:
        return self.slot_num_bidirectional if bidirectional else self.slot_num_unidirectional


A2A3 = Platform(
    name="a2a3",
    id=PlatformID.PLATFORM_A2A3,
    mem_sizes={MemSpace.UB: 192 * KiB, MemSpace.L1: 512 * KiB, MemSpace.L0A: 64 * KiB,
               MemSpace.L0B: 64 * KiB, MemSpace.L0C: 128 * KiB, MemSpace.BIAS: 1 * KiB,
               MemSpace.FB: 2 * KiB, MemSpace.L0A_SCALE: 0, MemSpace.L0B_SCALE: 0},
    ring_in_gm=True,
    gm_directions=False,
    max_fifo_depth=8,
    ub_scratch_base=184 * KiB,
)

A5 = Platform(
    name="a5",
    id=PlatformID.PLATFORM_A5,
    mem_sizes={MemSpace.UB: 256 * KiB, MemSpace.L1: 512 * KiB, MemSpace.L0A: 64 * KiB,
               MemSpace.L0B: 64 * KiB, MemSpace.L0C: 256 * KiB, MemSpace.BIAS: 4 * KiB,
               MemSpace.FB: 4 * KiB, MemSpace.L0A_SCALE: 4 * KiB, MemSpace.L0B_SCALE: 4 * KiB},
    ring_in_gm=False,
    gm_directions=True,
    max_fifo_depth=16,
    cross_core_wait_holds_issue=False,
    # seed 001: FlagID 0-7 per pipe type on A2/A3, 0-15 on A5 with intra-block flags - so
    # the spec protocol's per-slot flags allow a 16-deep ring one way on A5
    flags_per_direction=16,
    dav_arch="c310",
    npu_arch=3510,
)

#: every spelling of a platform: ``a3`` is how ptoas (``--pto-arch=a3``) and a ``.pto`` file
#: (``pto.target_arch = "a3"``) name the A2/A3 model
PLATFORMS = {"a2a3": A2A3, "a3": A2A3, "a5": A5}


def get_platform(p: "str | Platform") -> Platform:
    """Resolve ``"a2a3"`` (alias ``"a3"``) / ``"a5"`` (or a Platform) to a Platform."""
    if isinstance(p, Platform):
        return p
    try:
        return PLATFORMS[str(p).lower()]
    except KeyError:
        raise ConfigError(f"unknown platform {p!r}",
                          fix=f"use one of {', '.join(repr(n) for n in PLATFORMS)}") from None


def platform_name(p: "str | Platform") -> str:
    """The canonical name (``a2a3`` / ``a5``) of any spelling of a platform."""
    return get_platform(p).name
