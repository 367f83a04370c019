"""M19: protocol="pto-isa" with a control pipe built as TPipe(DIR_V2C_CTRL).  pto-isa's
TPipe does not compile for DIR_V2C_CTRL (its Consumer::pop calls popCtrlFromCtrlFiFo(fifo,
tile), which takes only the FIFO); control words go through a TMPipe with a CTRL_FIFO.  The
binding is rejected with a ConfigError that says so.

Run:  ptopipe check examples/misuse/m19_tpipe_ctrl_pto_isa.py --protocol pto-isa [--platform a5]
"""
from ptopipe.isa import *
from _common import scenario


def _ctrl(fifo):
    return TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(fifo)   # M19: not compilable in pto-isa  <- where


def cube(fifo, tiles):
    pipe = _ctrl(fifo)
    for i in range(tiles):
        TPOP(pipe)


def vector(fifo, tiles):
    pipe = _ctrl(fifo)
    word = Tile(TileType.Vec, int32, 1, 8, addr=0)
    for i in range(tiles):
        TEXPANDS(word, i)
        TPUSH(pipe, word)


SCENARIO = scenario("m19_tpipe_ctrl_pto_isa", cube, (vector, None), __doc__, protocol="pto-isa")
