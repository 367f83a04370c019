"""A reserve_buffer that is no popped ring, and a lone kernel, as pypto's compiler takes
them: a reserve no TPOP reads is a region the allocator keeps free (tiles placed around it;
two literal regions that overlap are an error at the second, naming the first); a pipe with
no traffic compiles and runs; a lone Cube or Vector kernel with a pipe compiles (its .pto
and C++ are written) and its run says, at the pipe's init, that the peer is missing."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, ConfigError
from ptopipe.codegen import write_cpp
from ptopipe.codegen.pto_writer import write_pto
from ptopipe.ir.layout import read_layout
from ptopipe.ir.opdefs import FuncOp
from ptopipe.passes import compile_program
from ptopipe.runtime import run

HEAD = "import ptopipe.language as pl\n\n"

REGIONS = HEAD + '''
@pl.aiv(split=pl.TILE_NO_SPLIT)
def main(x: pl.Tensor[[64, 64], pl.f32], out: pl.Tensor[[64, 64], pl.f32]):
    low = pl.reserve_buffer(name="low", size=4096, base=0)
    spare = pl.reserve_buffer(name="spare", size=1024, base=pl.AUTO)
    a = pl.load(x, [0, 0], [64, 64])
    pl.store(a + a, [0, 0], out)
'''


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_reserved_region_is_kept_free_and_the_kernel_runs(platform, protocol):
    prog = pl.parse(REGIONS)
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 91
    res = run(prog, dict(x=x, out=np.zeros_like(x)), platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], x + x)
    fn = next(f for f in compile_program(prog, platform).body if f.is_a(FuncOp))
    lay = read_layout(fn)
    regions = sorted(lay.by_name.values())
    assert regions[0] == (0, 4096)
    for _mem, addr in lay.tiles.values():       # 64x64 f32 tiles: 16 KiB each
        assert all(addr + 16384 <= lo or lo + n <= addr for lo, n in regions), (addr, regions)


OVERLAP = HEAD + '''
@pl.aiv(split=pl.TILE_NO_SPLIT)
def main(x: pl.Tensor[[64, 64], pl.f32]):
    first = pl.reserve_buffer(name="first", size=4096, base=0)
    again = pl.reserve_buffer(name="again", size=1024, base=2048)
    pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], x)
'''


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_overlapping_regions_are_reported_at_the_second(platform):
    with pytest.raises(CompileError) as ei:
        compile_program(pl.parse(OVERLAP), platform)
    e = ei.value
    assert e.what == ("reserve_buffer 'again' [0x800, 0xc00) overlaps reserve_buffer 'first' "
                      "[0x0, 0x1000) in UB")
    assert e.where.endswith(":7:5") and ":6:5" in e.details


QUIET_PIPE = HEAD + '''
@pl.aic
def cube(fifo: pl.Tensor[[4096], pl.u8], out: pl.Tensor[[16, 16], pl.f32]):
    buf = pl.reserve_buffer(name="ring", size=4096, base=pl.AUTO)
    pl.aic_initialize_pipe(pl.DIR_V2C, 512, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base)

@pl.aiv(split=pl.TILE_NO_SPLIT)
def vector(fifo: pl.Tensor[[4096], pl.u8], out: pl.Tensor[[16, 16], pl.f32]):
    peer = pl.import_peer_buffer(name="ring", peer_func=cube)
    pl.aiv_initialize_pipe(pl.DIR_V2C, 512, fifo, c2v_consumer_buf=0, v2c_consumer_buf=peer.base)
    pl.store(pl.full([16, 16], pl.f32, 3.0), [0, 0], out)
'''


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_pipe_no_one_pops_from_compiles_and_runs(platform, protocol):
    prog = pl.parse(QUIET_PIPE)          # the consumer reserves its ring and never TPOPs
    compile_program(prog, platform, protocol=protocol)
    res = run(prog, dict(fifo=ptopipe.gm_buffer(4096), out=np.zeros((16, 16), np.float32)),
              platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], np.full((16, 16), 3.0, np.float32))


LONE_CUBE = HEAD + '''
@pl.aic
def cube_consumer(fifo: pl.Tensor[[8192], pl.u8], out: pl.Tensor[[16, 16], pl.f32]):
    buf = pl.reserve_buffer(name="v2c_slot_buffer", size=4096, base=0x1000)
    pl.aic_initialize_pipe(pl.DIR_V2C, 512, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base)
    t = pl.TPOP(buf, pl.Tile[[16, 8], pl.f32, pl.Mat])
    pl.TFREE(buf)
'''

LONE_VECTOR = HEAD + '''
@pl.aiv(split=pl.TILE_NO_SPLIT)
def vector_consumer(fifo: pl.Tensor[[8192], pl.u8], out: pl.Tensor[[16, 16], pl.f32]):
    buf = pl.reserve_buffer(name="c2v_slot_buffer", size=8192, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, 1024, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0)
    t = pl.TPOP(buf, pl.Tile[[16, 16], pl.f32, pl.Vec])
    pl.store(t, [0, 0], out)
    pl.TFREE(buf)
'''


@pytest.mark.parametrize("src, me, peer", [(LONE_CUBE, "Cube", "Vector"),
                                           (LONE_VECTOR, "Vector", "Cube")])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_lone_kernel_compiles_and_its_run_names_the_missing_peer(platform, src, me, peer):
    prog = pl.parse(src)
    op = compile_program(prog, platform)
    init = next(o for o in op.walk() if o.name.endswith("initialize_pipe"))
    assert init.attributes["flag_id"] == 0          # numbered as the pipe's only end
    pto, cpp = write_pto(op, platform), write_cpp(op, platform)
    assert "tpop" in pto and "TPipe<" in cpp
    args = dict(fifo=ptopipe.gm_buffer(8192), out=np.zeros((16, 16), np.float32))
    with pytest.raises(ConfigError) as ei:
        run(prog, args, platform=platform)
    e = ei.value
    assert e.what.startswith(f"{me} kernel ") and f"has no {peer} kernel to be its peer" in e.what
    assert e.where.endswith(":7:5")                 # the pipe's init
