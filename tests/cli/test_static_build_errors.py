"""``check --static`` on a kernel file whose program does not build: a FAIL line per variant
names it, then the error; a TPOP whose dtype is not the one the rest of the kernel needs is
reported at the TPOP (where the slip is), naming the store that showed it."""
import json

from ptopipe.cli import main

KERNEL = '''
import numpy as np
import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet

SLOT = 16 * 32 * 4


def build(DT):
    @pl.aiv
    def vector(out: pl.Tensor[[32, 32], pl.f32], fifo: pl.Tensor[[2 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=2 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(2):
            t = pl.TPOP(buf, pl.Tile[[8, 32], DT, pl.Vec], split=pl.TILE_UP_DOWN)  # POP
            u = pl.adds(t, 1.0)
            pl.TFREE(buf)
            pl.store(u, [i * 16 + sub * 8, 0], out)  # STORE

    @pl.aic
    def cube(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32], fifo: pl.Tensor[[2 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=2)
        a0 = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="pair")


KERNELS = KernelSet(build)


def make_args(rng, DT=pl.f32):
    return dict(a=np.ones((16, 32), np.float32), b=np.ones((32, 32), np.float32), out=np.zeros((32, 32), np.float32),
                fifo=ptopipe.gm_buffer(2 * SLOT), DT=DT)


SCENARIO = ptopipe.Scenario("pair", KERNELS.aic, KERNELS.aiv, make_args, lambda a, **_: {},
                            {"default": dict(), "half": dict(DT=pl.f16)})
'''


def _line(marker):
    return next(k for k, ln in enumerate(KERNEL.splitlines(), 1) if f"# {marker}" in ln)


def test_a_variant_that_does_not_build_is_a_fail_line_and_its_error_at_the_tpop(tmp_path, capsys):
    f = tmp_path / "pair.py"
    f.write_text(KERNEL)
    assert main(["check", "--static", str(f), "--variant", "half"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("FAIL pair[half] on a2a3/spec: CompileError building the program"), out
    assert f"at {f}:{_line('POP')}:13" in err, err
    assert f"this pl.TPOP pops its slot as f16, and the pl.store at line {_line('STORE')} stores what is " \
           "computed from it (f16) into an f32 tensor" in err, err
    assert "pl.Tile[[...], pl.f32, ...]" in err
    assert main(["check", "--static", str(f), "--variant", "all", "--json"]) == 1
    rep = {r["program"]: r for r in json.loads(capsys.readouterr().out)}
    assert rep["pair[default]"]["status"] == "verified" and rep["pair[half]"]["status"] == "failed"
    assert rep["pair[half]"]["findings"][0]["where"].endswith(f":{_line('POP')}:13")
