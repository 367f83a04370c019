"""``check --static`` on a kernel file whose program does not build: a FAIL line per variant
names it, then the error; a TPOP whose dtype is not the one the rest of the kernel needs is
reported at the TPOP (where the slip is), naming the store that showed it.  A .pto file the
run refuses - an A5 file's inits on A2A3, where every ring is in GM - fails there too, with
the run's error at each init."""
import json
import os

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


A5_RING = os.path.join(os.path.dirname(__file__), "..", "pto_corpus", "x_c2v_loop_ring_a5.pto")


def test_an_a5_pto_file_checked_for_a2a3_fails_at_its_inits_with_the_runs_error(capsys):
    assert main(["run", A5_RING, "--platform", "a3"]) == 1
    ran = capsys.readouterr().err
    assert main(["check", "--static", A5_RING, "--platform", "a3", "--json"]) == 1
    v, = json.loads(capsys.readouterr().out)
    assert v["status"] == "failed" and v["platform"] == "a2a3", v
    assert [(f["error"], f["where"].rsplit(":", 2)[1:]) for f in v["findings"]] == [
        ("ConfigError", ["22", "5"]), ("ConfigError", ["54", "5"])]        # the aic / aiv inits
    first = v["findings"][0]
    assert f"error: ConfigError: {first['what']}" in ran and f"fix: {first['fix']}" in ran, ran
    assert "x_c2v_loop_ring_a5.pto:22:5" in ran
    assert not v["warnings"], v["warnings"]        # (not the compile's "no GM_SLOT_BUFFER" warning too)
    assert main(["check", "--static", A5_RING, "--platform", "a3"]) == 1
    shown = capsys.readouterr()
    assert shown.out.startswith("FAIL x_c2v_loop_ring_a5.pto on a2a3") and "GM_SLOT_BUFFER" not in shown.err
    assert main(["check", "--static", A5_RING]) == 0       # on its own platform it verifies
    assert capsys.readouterr().out.startswith("PASS x_c2v_loop_ring_a5.pto on a5")
