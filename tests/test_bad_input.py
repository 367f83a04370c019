"""Bad input to the API and the DSL gets a located PtoPipeError (what, where, fix), never a
raw Python exception: TASSIGN / SetValid arguments, unknown element types, non-numeric
run arguments, DSL ring buffers of the wrong size, out-of-tensor DSL loads, loop step 0
and division by zero in DSL index arithmetic."""
from __future__ import annotations

import inspect
import os
import stat

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, ConfigError, KernelError, MemoryConflictError
from ptopipe.isa import (TASSIGN, TLOAD, TSTORE, GlobalTensor, Tile, TileType, float32,
                         get_subblockid)
from ptopipe.runtime import run as dsl_run

PLATFORMS = ["a2a3", "a5"]


def _line(fn, marker: str) -> tuple:
    """(file, line) of the source line of ``fn`` carrying ``marker``."""
    fn = getattr(fn, "pyfunc", fn)
    src, start = inspect.getsourcelines(fn)
    (i,) = [k for k, t in enumerate(src) if marker in t]
    return os.path.abspath(inspect.getsourcefile(fn)), start + i


def _at(where: str) -> tuple:
    """(file, line) of a reported ``file:line`` or DSL ``file:line:col``."""
    parts = where.split(":")
    if len(parts) > 2 and parts[-1].isdigit() and parts[-2].isdigit():
        parts = parts[:-1]
    return os.path.abspath(":".join(parts[:-1])), int(parts[-1])


def _run_vec(kernel, platform="a2a3", **extra):
    args = dict(x=np.arange(16, dtype=np.float32).reshape(2, 8), y=np.zeros(16, np.int32), **extra)
    return ptopipe.run(None, (kernel, None), args, platform=platform)


# --- TASSIGN / SetValid ------------------------------------------------------------------
def k_tassign_float(x):
    t = Tile(TileType.Vec, float32, 1, 8)
    TASSIGN(t, 32.5)                                     # FLOAT-ADDR


def k_tassign_gt_int(x):
    TASSIGN(x, 0x100)                                    # GT-INT


def k_tassign_gt_dtype(x, y):
    TASSIGN(x, y.data())                                 # GT-DTYPE


def k_setvalid_big(x):
    t = Tile(TileType.Vec, float32, 4, 8, addr=0)
    t.SetValid(5, 8)                                     # VALID-BIG


def k_setvalid_negative(x):
    t = Tile(TileType.Vec, float32, 4, 8, addr=0)
    t.SetValid(4, -1)                                    # VALID-NEG


def k_tile_fractional(x):
    Tile(TileType.Vec, float32, 8.5, 32, addr=0)         # TILE-FRAC


def k_tile_negative(x):
    Tile(TileType.Vec, float32, 8, -32)                  # TILE-NEG


def k_tile_valid_fractional(x):
    Tile(TileType.Vec, float32, 8, 32, valid_rows=7.5)   # TILE-VALID


def k_unknown_dtype(x):
    Tile(TileType.Vec, "f33", 4, 8, addr=0)              # BAD-DTYPE


def k_unknown_dtype_gt(x):
    GlobalTensor("float33", (4, 8))                      # BAD-DTYPE-GT


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kernel, marker, text", [
    (k_tassign_float, "# FLOAT-ADDR", "TASSIGN address 32.5 of Vec tile float32 1x8 is not a byte address"),
    (k_tassign_gt_int, "# GT-INT", "needs a GM pointer, got 256"),
    (k_tassign_gt_dtype, "# GT-DTYPE", "to an int32 pointer: the element types differ"),
    (k_setvalid_big, "# VALID-BIG", "SetValid(5, 8) on Vec tile float32 4x8"),
    (k_setvalid_negative, "# VALID-NEG", "SetValid(4, -1)"),
    (k_unknown_dtype, "# BAD-DTYPE", "unknown element type 'f33'"),
    (k_tile_fractional, "# TILE-FRAC", "Tile shape 8.5x32: a tile's rows and cols are positive integers"),
    (k_tile_negative, "# TILE-NEG", "Tile shape 8x-32: a tile's rows and cols are positive integers"),
    (k_tile_valid_fractional, "# TILE-VALID", "valid region 7.5x32 does not fit tile 8x32"),
    (k_unknown_dtype_gt, "# BAD-DTYPE-GT", "unknown element type 'float33'"),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
def test_isa_misuse_is_a_located_kernel_error(kernel, marker, text, platform):
    with pytest.raises(KernelError) as ei:
        _run_vec(kernel, platform)
    assert text in ei.value.what and ei.value.fix
    assert _at(ei.value.where) == _line(kernel, marker)


def k_tassign_gt_ptr(x, out):
    v = GlobalTensor(x.data(), (1, 8))
    TASSIGN(v, x.data() + 8)                             # pto-isa: TASSIGN(GlobalTensor, ptr)
    t = Tile(TileType.Vec, float32, 1, 8, addr=0)
    TLOAD(t, v)
    TSTORE(GlobalTensor(out.data() + get_subblockid() * 8, (1, 8)), t)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tassign_global_tensor_to_a_pointer_rebinds_it(platform):
    x = np.arange(16, dtype=np.float32)
    res = ptopipe.run(None, k_tassign_gt_ptr, dict(x=x, out=np.zeros(16, np.float32)), platform=platform)
    assert np.array_equal(res.outputs["out"], np.tile(x[8:], 2))


def test_unknown_dtype_name_outside_a_kernel_is_a_config_error():
    from ptopipe.arch.dtypes import as_dtype
    with pytest.raises(ConfigError, match="unknown element type 'f33'"):
        as_dtype("f33")
    with pytest.raises(ConfigError, match="unknown element type"):
        as_dtype(object)
    assert as_dtype("bf16").itemsize == 2


@pytest.mark.parametrize("bad", [np.array([1, "a", None], dtype=object), np.array(["ab", "cd"]),
                                 np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f4")])],
                         ids=["object", "str", "structured"])
def test_non_numeric_argument_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="argument 'x' is a numpy array of dtype") as ei:
        ptopipe.run(None, lambda x: None, dict(x=bad))
    assert ei.value.where == "args['x']" and "np.asarray" in ei.value.fix


# --- DSL: reserve_buffer sizes --------------------------------------------------------------
TM, KT, N = 16, 32, 32
SLOT = TM * N * 4


def _ring_program(size: int, slot_num=None):

    @pl.aiv
    def vec(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=size, base=pl.AUTO)   # RESERVE
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=slot_num)                        # INIT
        t = pl.TPOP(buf, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        o = t * 2.0
        pl.TFREE(buf)
        pl.store(o, [pl.get_subblockid() * (TM // 2), 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[TM, KT], pl.f32], b: pl.Tensor[[KT, N], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=slot_num)
        a0 = pl.move(pl.load(a, [0, 0], [TM, KT], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [KT, N], space=pl.Mat), space=pl.Right)
        acc = pl.matmul(a0, b0)
        pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)

    return pl.program(cube, vec, name="ring"), vec


def _ring_args():
    return dict(a=np.ones((TM, KT), np.float32), b=np.ones((KT, N), np.float32),
                out=np.zeros((TM, N), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("size, text", [
    (16, "reserve_buffer 'ring' has 16 bytes but the pipe that uses it needs SLOT_NUM * SLOT_SIZE = "
         "8 * 2048 = 16384"),
    (4 * SLOT, "has 8192 bytes"),
    (1 << 30, "reserve_buffer 'ring' of 1073741824 bytes at"),
])
def test_reserve_buffer_of_the_wrong_size_is_an_error_at_its_line(size, text, platform):
    prog, vec = _ring_program(size)
    with pytest.raises(ConfigError) as ei:
        dsl_run(prog, _ring_args(), platform=platform)
    assert text in ei.value.what
    assert _at(ei.value.where) == _line(vec, "# RESERVE")
    if size == 4 * SLOT:
        assert "slot_num=4" in ei.value.fix
        assert _at(ei.value.details.removeprefix("pipe initialised at ")) == _line(vec, "# INIT")[:1] + \
            (_line(vec, "# INIT")[1] - 1,)           # the call starts on the line before # INIT


@pytest.mark.parametrize("platform", PLATFORMS)
def test_reserve_buffer_matching_the_pipe_runs(platform):
    for size, n in ((8 * SLOT, None), (4 * SLOT, 4)):
        prog, _ = _ring_program(size, n)
        res = dsl_run(prog, _ring_args(), platform=platform)
        assert np.array_equal(res.outputs["out"], np.full((TM, N), 2.0 * KT, np.float32))


# --- DSL: out-of-tensor load, step 0, division by zero -------------------------------------
@pl.aic
def nop_cube(x: pl.Tensor[[16, 32], pl.f32]):
    pass


@pl.aiv
def oob_vec(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[32, 32], pl.f32], r: pl.Scalar[pl.index]):
    t = pl.load(x, [r, 0], [16, 32])                     # OOB
    pl.store(t, [pl.get_subblockid() * 16, 0], y)


@pl.aiv
def oob_store_vec(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[32, 32], pl.f32], r: pl.Scalar[pl.index]):
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(t, [r, 0], y)                               # OOB-STORE


@pl.aiv
def step_vec(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[32, 32], pl.f32], r: pl.Scalar[pl.index]):
    for i in pl.range(0, 4, r):                          # STEP
        t = pl.load(x, [0, 0], [16, 32])
        pl.store(t, [pl.get_subblockid() * 16, 0], y)


@pl.aiv
def div_vec(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[32, 32], pl.f32], r: pl.Scalar[pl.index]):
    k = 16 // r                                          # DIV
    t = pl.load(x, [k, 0], [16, 32])
    pl.store(t, [pl.get_subblockid() * 16, 0], y)


def _dsl_args(r):
    return dict(x=np.ones((16, 32), np.float32), y=np.zeros((32, 32), np.float32), r=r)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("vec, r, err, marker, text", [
    (oob_vec, 8, MemoryConflictError, "# OOB",
     "access out of bounds: offsets [8, 0] + window [16, 32] exceed 'x' of shape [16, 32]"),
    (oob_vec, -1, MemoryConflictError, "# OOB", "offsets [-1, 0]"),
    (oob_store_vec, 24, MemoryConflictError, "# OOB-STORE",
     "offsets [24, 0] + window [16, 32] exceed 'y' of shape [32, 32]"),
    (step_vec, 0, KernelError, "# STEP", "pl.range(0, 4, 0): a loop with step 0 never ends"),
    (div_vec, 0, KernelError, "# DIV", "division by zero: 16 // 0"),
], ids=["oob", "oob_negative", "oob_store", "step0", "div0"])
def test_dsl_runtime_errors_name_the_dsl_line(vec, r, err, marker, text, platform):
    prog = pl.program(nop_cube, vec, name="p")
    with pytest.raises(err) as ei:
        dsl_run(prog, _dsl_args(r), platform=platform)
    assert type(ei.value) is err and text in ei.value.what and ei.value.fix
    assert _at(ei.value.where) == _line(vec, marker)


def test_dsl_in_bounds_variants_run():
    for vec, r in ((oob_vec, 0), (step_vec, 1), (div_vec, 32)):      # 16 // 32 == 0
        res = dsl_run(pl.program(nop_cube, vec, name="p"), _dsl_args(r))
        assert np.array_equal(res.outputs["y"], np.ones((32, 32), np.float32))


# -- a scenario's own mistakes: a ConfigError at the user's def / Scenario line --
SCENARIO_SRC = '''
import numpy as np
import ptopipe


def cube(x, out):
    pass


def make_args(rng, n=1):
    return {ARGS}


def golden(args, **_):
    return {GOLDEN}


SCENARIO = ptopipe.Scenario("sc", {AIC}, None, make_args, golden, {VARIANTS})
'''
_OK = dict(ARGS="dict(x=np.ones(4, np.float32), out=np.zeros(4, np.float32))", GOLDEN="{'out': args['out']}",
           AIC="cube", VARIANTS="{'default': {}}")


@pytest.mark.parametrize("edit,text,marker", [
    (dict(AIC="42"), "scenario 'sc': aic is 42, not a kernel function", "SCENARIO ="),
    (dict(ARGS="[1, 2]"), "make_args returned a list, not the dict of kernel arguments", "def make_args"),
    (dict(GOLDEN="None"), "golden returned a NoneType, not the dict of expected outputs", "def golden"),
    (dict(GOLDEN="{'outt': args['out']}"), "golden names 'outt', which make_args does not give", "def golden"),
    (dict(GOLDEN="{'out': args['y']}"), "golden raised KeyError: 'y'", "    return {'out': args['y']}"),
    (dict(GOLDEN="{'out': 'zeros'}"), "golden's 'out' is a str, not an array of numbers", "def golden"),
    (dict(GOLDEN="{'out': args['out'][:2]}"), "golden's 'out' has shape (2,), but the argument 'out' make_args "
     "gives has shape (4,)", "def golden"),
    (dict(ARGS="dict(x=undefined_name)"), "make_args raised NameError: name 'undefined_name' is not defined",
     "    return dict(x=undefined_name)"),
    (dict(ARGS="dict(x=np.onse(4, np.float32), out=np.zeros(4, np.float32))"),
     "make_args raised AttributeError: module 'numpy' has no attribute 'onse'. Did you mean: 'ones'?",
     "    return dict(x=np.onse("),
    # sys.exit would end the command silently, with its status and no report
    (dict(GOLDEN="__import__('sys').exit(0)"), "golden raised SystemExit(0) (sys.exit): a scenario function "
     "cannot end the program", "    return __import__('sys').exit(0)"),
    (dict(ARGS="__import__('sys').exit('no data')"), "make_args raised SystemExit('no data') (sys.exit)",
     "    return __import__('sys').exit('no data')"),
    (dict(VARIANTS="{'all': {'n': 2}}"), "scenario 'sc': a variant is named 'all', which `--variant all` "
     "cannot choose: it runs every variant", "SCENARIO ="),
    (dict(VARIANTS="{'default': {'m': 2}}"),
     "variant 'default' of scenario 'sc' gives make_args ['m']: got an unexpected keyword argument 'm'",
     "def make_args")])
def test_a_scenario_mistake_is_a_config_error_at_its_line(tmp_path, capsys, edit, text, marker):
    from ptopipe.cli import main
    src = _fill({**_OK, **edit})
    f = tmp_path / "sc.py"
    f.write_text(src)
    assert main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    line = next(i + 1 for i, ln in enumerate(src.splitlines()) if ln.startswith(marker))
    assert "error: ConfigError: " in err and text in err and f"at {f}:{line}\n" in err, err
    f.write_text(_fill(_OK))                              # the same file, correct: runs
    assert main(["run", str(f)]) == 0


def test_a_make_args_without_rng_is_told_that_a_run_passes_one(tmp_path, capsys):
    from ptopipe.cli import main
    src = _fill(_OK).replace("def make_args(rng, n=1):", "def make_args(*, n=1):")
    f = tmp_path / "sc.py"
    f.write_text(src)
    assert main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    line = next(i + 1 for i, ln in enumerate(src.splitlines()) if ln.startswith("def make_args"))
    assert "make_args(*, n=1) takes no rng: a run calls make_args(rng, **params)" in err, err
    assert f"at {f}:{line}\n" in err and "fix: def make_args(rng, ...)" in err


def test_a_make_args_parameter_without_a_value_says_how_to_give_one(tmp_path, capsys):
    # `def make_args(rng, M)` with no variant giving M: the fix says where M comes from, not to
    # give the variant fewer parameters
    from ptopipe.cli import main
    src = _fill(_OK).replace("def make_args(rng, n=1):", "def make_args(rng, n, m=2):")
    f = tmp_path / "sc.py"
    f.write_text(src)
    assert main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    assert "gives make_args []: missing a required argument: 'n'" in err, err
    assert ("fix: give make_args a default (def make_args(rng, n=...)), or each variant a value "
            "(Scenario(..., variants={'default': dict(n=...)}))") in err, err


def test_a_golden_naming_no_output_says_it_compared_nothing(tmp_path, capsys):
    from ptopipe.cli import main
    f = tmp_path / "sc.py"
    f.write_text(_fill({**_OK, "GOLDEN": "{}"}))
    assert main(["run", str(f)]) == 0
    out = capsys.readouterr().out
    assert "its golden names no output: nothing was compared" in out and "matches numpy golden" not in out


def _fill(values):
    src = SCENARIO_SRC
    for k, v in values.items():
        src = src.replace("{" + k + "}", v)
    return src


# -- the command line: what a new user may type ---------------------------------------------
COMMANDS = ["run", "check", "trace", "sweep", "compile"]


def _cli(argv, capsys) -> tuple:
    """(exit status, stdout, stderr) of the CLI run in-process; never a traceback."""
    from ptopipe.cli import main
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _error(err: str, cls: str = "ConfigError") -> tuple:
    """(what, where) of the one error the CLI printed on stderr."""
    head, *rest = err.splitlines()
    assert head.startswith(f"error: {cls}: "), err
    where = next((ln.removeprefix("  at ") for ln in rest if ln.startswith("  at ")), None)
    assert any(ln.startswith("  fix: ") for ln in rest), err
    return head.removeprefix(f"error: {cls}: "), where


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("name", ["kernels", "k.py", "k.pto"])
def test_a_directory_as_the_kernel_is_a_config_error(cmd, name, tmp_path, capsys):
    d = tmp_path / name
    d.mkdir()
    (d / "s1.py").write_text("")
    code, out, err = _cli([cmd, d], capsys)
    what, where = _error(err)
    if cmd == "check":                  # check takes a kernel library: one with no kernel in it
        assert code == 1 and what == f"{d} holds no kernel file (.pto, or .py defining SCENARIO)"
        assert where == "argument PATH"
        return
    assert code == 1 and what == f"{d} is a directory, not a kernel file" and where == "argument FILE"
    assert "e.g." not in err, err       # (s1.py defines no kernel: not one to suggest)
    (d / "api.py").write_text("import ptopipe\n")         # a script beside the kernels
    (d / "s1.py").write_text("SCENARIO = None\n")
    code, out, err = _cli([cmd, d], capsys)
    assert code == 1 and f"fix: give one kernel file, e.g. {d / 's1.py'}\n" in err, err


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("data, text, line", [
    (b"import numpy\n\x00\x01\x02", "it holds binary data (a NUL byte at offset 13)", 2),
    (b"\xb1\x9c\xff\x00", "it holds binary data (a NUL byte at offset 3)", 1),
    (b"\xb1\x9cz = 1\n", "byte 0xb1 at offset 0 is not utf-8 text", 1),
    (b"x = 1\ny = 2\n\xe9t\xe9 = 3\n", "byte 0xe9 at offset 12 is not utf-8 text", 3),
], ids=["nul", "nul_first_line", "not_utf8_first_line", "latin1"])
def test_a_binary_file_as_the_kernel_is_a_config_error_at_its_line(cmd, data, text, line, tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_bytes(data)
    code, out, err = _cli([cmd, f], capsys)
    what, where = _error(err)
    assert code == 1 and what == f"{f} is not Python source: {text}" and where == f"{f}:{line}"


S1 = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                  "examples", "scenarios", "s1_cv_split.py")


def _src_line(path, marker: str) -> int:
    with open(path, encoding="utf-8") as f:
        return next(i for i, t in enumerate(f, 1) if marker in t)


def _note(out: str, k: int) -> tuple:
    """(text, (file, line)) of note [k] under a sweep table: 'ERROR: what at file:line'."""
    line = next(ln for ln in out.splitlines() if ln.startswith(f"[{k}] "))
    text, _, where = line.rpartition(" at ")
    return text, _at(where)


def test_sweep_of_a_negative_depth_names_the_gm_buffer_line(capsys):
    code, out, err = _cli(["sweep", S1, "--param", "depth=-1,2", "--workers", "1"], capsys)
    assert code == 1 and "FAILED [1]" in out and "* best: depth=2" in out
    text, at = _note(out, 1)
    assert text == "[1] depth=-1: ConfigError: gm_buffer(-2048): a buffer size is a non-negative " \
                   "integer number of bytes"
    assert at == (S1, _src_line(S1, "fifo=gm_buffer(depth * SLOT)"))


@pytest.mark.parametrize("n", [-1, 2.5, True, "64", 10 ** 20])
def test_gm_buffer_of_a_bad_size_is_a_config_error_at_its_line(n):
    with pytest.raises(ConfigError) as ei:
        ptopipe.gm_buffer(n)                             # GM-BUFFER
    assert ei.value.what.startswith(f"gm_buffer({n!r}): a buffer size is") and ei.value.fix
    marker = "# GM" + "-BUFFER"                          # (this line must not match itself)
    assert _at(ei.value.where) == _line(test_gm_buffer_of_a_bad_size_is_a_config_error_at_its_line, marker)
    assert ptopipe.gm_buffer(np.int64(0)).shape == (0,) and ptopipe.gm_buffer(8).nbytes == 8


def test_a_kernel_calling_os_exit_is_a_kernel_error_not_a_silent_exit_0(tmp_path):
    """os._exit(0) in a kernel ends no command silently with status 0: a KernelError at its line
    (in a process of its own: the command's own guard is what is tested)."""
    import subprocess
    import sys
    f = tmp_path / "k.py"
    f.write_text(_fill({**_OK, "AIC": "lambda x, out: __import__('os')._exit(0)"}))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, "-m", "ptopipe.cli", "run", str(f)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "KernelError: the kernel file called os._exit(0)" in p.stderr
    line = next(i + 1 for i, ln in enumerate(f.read_text().splitlines()) if "_exit(0)" in ln)
    assert f"at {f}:{line}" in p.stderr, p.stderr


def test_a_thread_the_kernel_file_leaves_running_does_not_keep_the_command_alive(tmp_path):
    """A thread (not a daemon) the kernel file starts and never ends would keep the process
    alive after the report, for ever: the command ends with the run's status, saying so."""
    import subprocess
    import sys
    f = tmp_path / "k.py"
    f.write_text("import threading, time\nthreading.Thread(target=time.sleep, args=(10000,), name='idle').start()\n"
                 + _fill(_OK))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, "-m", "ptopipe", "run", str(f)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0 and "PASS" in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.endswith("note: the kernel file left 1 thread running (idle): ptopipe ends without waiting "
                             "for it\n"), p.stderr


def test_a_library_file_calling_os_exit_in_a_worker_is_its_row(tmp_path, capsys):
    """In a kernel library checked by worker processes, a file whose import calls os._exit is
    a KernelError row at that line, as with one worker - not a lost worker."""
    from ptopipe.cli import main
    (tmp_path / "a_exits.py").write_text("import os\nimport ptopipe\nos._exit(0)\nSCENARIO = None\n")
    (tmp_path / "b_ok.py").write_text(_fill(_OK))
    assert main(["check", str(tmp_path), "--workers", "2", "--json"]) == 1
    rows = {os.path.basename(r["file"]): r for r in __import__("json").loads(capsys.readouterr().out)}
    fail = rows["a_exits.py"]["failure"]
    assert fail["error"] == "KernelError" and fail["where"].endswith("a_exits.py:3"), fail
    assert rows["b_ok.py"]["failure"] is None


def test_sweep_rows_whose_worker_process_ends_are_failed_rows(tmp_path, capsys):
    """A configuration whose make_args ends its worker process (os._exit) is a failed row - the
    sweep's table still comes - not a raw BrokenProcessPool."""
    from ptopipe.cli import main
    f = tmp_path / "k.py"
    f.write_text(_fill({**_OK, "ARGS": "__import__('os')._exit(0) if n == 2 else dict(x=np.ones(4, np.float32), "
                                       "out=np.zeros(4, np.float32))"}))
    assert main(["sweep", str(f), "--param", "n=1,2", "--workers", "2"]) == 1
    out = capsys.readouterr().out
    assert "WorkerLost: its worker process ended" in out and "n=2" in out, out


def test_sweep_row_of_a_python_error_in_make_args_names_its_line(tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_text(_fill({**_OK, "ARGS": "dict(x=np.zeros(n, np.float32), out=np.zeros(4, np.float32))"}))
    code, out, _ = _cli(["sweep", f, "--param", "n=-1,4", "--workers", "1"], capsys)
    assert code == 1
    text, at = _note(out, 1)
    assert text.startswith("[1] n=-1: ConfigError: scenario 'sc': make_args raised ValueError: negative dim"), text
    assert at == (str(f), _src_line(f, "return dict(x=np.zeros(n"))      # kept whole when the message is cut


@pytest.mark.parametrize("argv, option", [
    (["run", "--input", "a=a.npy"], "--input"),
    (["run", "--output", "out=out.npy"], "--output"),
    (["check", "--input", "a=a.npy", "--schedules", "1"], "--input"),
    (["check", "--static", "--input", "a=a.npy"], "--input"),
], ids=["run_input", "run_output", "check_input", "check_static_input"])
def test_pto_parameter_options_for_a_python_kernel_are_a_config_error(argv, option, capsys):
    code, out, err = _cli([argv[0], S1, *argv[1:]], capsys)
    what, where = _error(err)
    assert code == 1 and "PASS" not in out
    assert what == f"{option} is for .pto and C++ kernels, and {S1} is a Python kernel"
    assert where == f"option {option}"


_TESTS = os.path.dirname(os.path.abspath(__file__))
PTO_K = os.path.join(_TESTS, "pto", "c2v_split_a3.pto")
CPP_K = os.path.join(_TESTS, "cpp", "cpp_kernels", "c2v_add.cpp")


@pytest.mark.parametrize("argv, option, kind, fix", [
    (["run", CPP_K, "--func", "k"], "--func", ".pto kernels", "name the C++ kernel functions with --aic"),
    (["check", CPP_K, "--range", "n=1..2"], "--range", ".pto kernels", "drop --range"),
    (["run", PTO_K, "--aic", "k"], "--aic", "C++ kernels", "drop --aic"),
    (["trace", PTO_K, "--aiv", "k", "-o", "{tmp}/t.json"], "--aiv", "C++ kernels", "drop --aiv"),
    (["trace", S1, "--input", "a=1", "-o", "{tmp}/t.json"], "--input", ".pto and C++ kernels", "drop --input"),
    (["check", S1, "--aic", "k"], "--aic", "C++ kernels", "drop --aic"),
], ids=["cpp_func", "cpp_range", "pto_aic", "pto_trace_aiv", "py_trace_input", "py_check_aic"])
def test_an_option_for_another_kind_of_kernel_is_a_config_error(argv, option, kind, fix, tmp_path, capsys):
    code, out, err = _cli([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    what, where = _error(err)
    assert code == 1 and what.startswith(f"{option} is for {kind}, and {argv[1]} is a") and where == f"option {option}"
    assert f"  fix: {fix}" in err and not os.path.exists(tmp_path / "t.json")


def test_a_tile_made_outside_a_kernel_with_a_bad_shape_names_the_line():
    with pytest.raises(KernelError, match=r"Tile shape 0x16: a tile's rows and cols") as ei:
        Tile(TileType.Vec, float32, 0, 16)               # OUTSIDE
    marker = "# OUT" + "SIDE"                            # (this line must not match itself)
    test = test_a_tile_made_outside_a_kernel_with_a_bad_shape_names_the_line
    assert _at(ei.value.where) == _line(test, marker)


DECORATED = '''
import ptopipe.language as pl


@pl.incore({OPTIONS})
def mixed(x: pl.Tensor[[16, 32], pl.f32]):
    pass
'''


@pytest.mark.parametrize("options, text", [
    ("slot_num=0", "@pl.incore(slot_num=0) must be a positive integer"),
    ("slot_num=2.5", "@pl.incore(slot_num=2.5) must be a positive integer"),
    ("split=7", "@pl.incore(split=7) is not a split mode"),
    ("split=3", "@pl.incore(split=TILE_UP_DOWN_ODD): the mixed-kernel compiler splits tiles into two equal "
                "halves; it has no odd split"),
    ("core='cube'", "unknown core 'cube' in @pl.incore(core=...)"),
])
def test_a_bad_dsl_decorator_option_is_a_compile_error_at_its_line(options, text, tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_text(DECORATED.replace("{OPTIONS}", options))
    code, _, err = _cli(["compile", f], capsys)
    what, where = _error(err, "CompileError")
    assert code == 1 and what == text and where == f"{f}:{_src_line(f, '@pl.incore')}"
    with pytest.raises(CompileError) as ei:              # the DSL text reader: the same message
        pl.parse(DECORATED.replace("{OPTIONS}", options))
    assert ei.value.what == text and ei.value.where == "<dsl>:5:2"


PTO_KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pto", "c2v_split_a3.pto")


def test_a_text_file_given_as_npy_input_names_the_file(tmp_path, capsys):
    f = tmp_path / "a.npy"
    f.write_text("1.0 2.0 3.0\n4.0 5.0 6.0\n")
    code, out, err = _cli(["run", PTO_KERNEL, "--input", f"a={f}"], capsys)
    what, where = _error(err)
    assert code == 1 and "PASS" not in out and where == "option --input"
    assert what == f"cannot load {f}: it is a text file (it starts with '1.0 2.0 3.0'), not a .npy file"
    assert "pickle" not in err and "numpy.loadtxt" in err


@pytest.mark.parametrize("make, why", [
    (lambda f: np.save(f, np.array([1, "a", None], dtype=object), allow_pickle=True),
     "it holds Python objects (a pickled object array), not numbers"),
    (lambda f: open(f, "wb").write(b""), "the file is empty"),
    (lambda f: open(f, "wb").write(bytes(range(256))), "it is not a .npy file (no NUMPY header)"),
    (lambda f: open(f, "wb").write("é".encode() * 40),
     "it is a text file (it starts with '" + "é" * 32 + "')"),
    (lambda f: (np.savez(f, a=np.zeros(2)), os.replace(f + ".npz", f)),
     "it is a .npz archive (several arrays), not a .npy file"),
    (lambda f: (np.save(f, np.zeros(4)), os.truncate(f, os.path.getsize(f) - 8)),
     "the .npy data is damaged"),
], ids=["pickled", "empty", "binary", "text_cut_char", "npz", "truncated"])
def test_a_file_that_is_not_a_numeric_npy_is_a_config_error_saying_what_it_is(make, why, tmp_path):
    from ptopipe.driver.pto import read_npy
    f = str(tmp_path / "x.npy")
    make(f)
    with pytest.raises(ConfigError) as ei:
        read_npy(f, "--input")
    assert ei.value.what.startswith(f"cannot load {f}: {why}") and ei.value.where == "option --input"
    assert "pickle=" not in str(ei.value)
    np.save(f, np.arange(3.0))
    assert np.array_equal(read_npy(f, "--input"), np.arange(3.0))


NESTED = '''
import numpy as np
import ptopipe
from ptopipe.isa import *


def copy(x, out):
    sub = get_subblockid()
    t = Tile(TileType.Vec, float32, 1, 8, addr=0)
    TLOAD(t, GlobalTensor(x.data() + sub * 8, (1, 8)))
    TSTORE(GlobalTensor(out.data() + sub * 8, (1, 8)), t)


def outer(x, out):
    ptopipe.run(None, copy, dict(x=np.ones(16, np.float32), out=np.zeros(16, np.float32)))   # INNER
    copy(x, out)


def make_args(rng):
    return dict(x=rng.standard_normal(16).astype(np.float32), out=np.zeros(16, np.float32))


SCENARIO = ptopipe.Scenario("nested", None, outer, make_args, lambda args: {"out": args["x"]})
'''


@pytest.mark.parametrize("cmd", ["run", "check"])
def test_a_run_started_inside_a_kernel_is_a_config_error_at_the_inner_call(cmd, tmp_path, capsys):
    f = tmp_path / "k.py"
    f.write_text(NESTED)
    code, out, err = _cli([cmd, f, "--schedules", "2"] if cmd == "check" else [cmd, f], capsys)
    what, where = _error(err)
    assert code == 1 and "PASS" not in out
    assert what == "ptopipe.run was called inside a running kernel (on AIV0)"
    assert where == f"{f}:{_src_line(f, '# INNER')}"
    f.write_text(NESTED.replace("    ptopipe.run(None, copy", "    (None, copy"))    # no nested run: passes
    assert _cli([cmd, f], capsys)[0] == 0


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# imported while ptopipe starts up (numpy's dtypes for bf16 / fp8): here it presses Ctrl-C
SIGINT_AT_IMPORT = '''
import os, signal, time
os.kill(os.getpid(), signal.SIGINT)
time.sleep(30)
raise RuntimeError("SIGINT did not stop the import")
'''
CONSOLE_SCRIPT = "import sys\nfrom ptopipe.cli import main\nsys.exit(main())\n"   # as pip writes it


def _interrupting_env(tmp_path) -> dict:
    (tmp_path / "ml_dtypes.py").write_text(SIGINT_AT_IMPORT)
    (tmp_path / "ptopipe").write_text(CONSOLE_SCRIPT)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))


@pytest.mark.parametrize("how", [["-m", "ptopipe"], ["-m", "ptopipe.cli"], ["{script}"]],
                         ids=["python_m_ptopipe", "python_m_ptopipe_cli", "console_script"])
def test_ctrl_c_while_the_command_starts_up_is_one_line_and_exit_130(how, tmp_path):
    import subprocess
    import sys
    env = _interrupting_env(tmp_path)
    argv = [a.replace("{script}", str(tmp_path / "ptopipe")) for a in how]
    r = subprocess.run([sys.executable, *argv, "run", S1], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (130, "", "interrupted\n")


def test_importing_ptopipe_as_a_library_leaves_ctrl_c_alone(tmp_path):
    import subprocess
    import sys
    env = _interrupting_env(tmp_path)
    # ptopipe.isa: a plain ``import ptopipe`` loads no layer, so it does not reach ml_dtypes
    r = subprocess.run([sys.executable, "-c", "import ptopipe.isa"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 130 and r.stderr.rstrip().endswith("KeyboardInterrupt")
    probe = "import signal, ptopipe; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.stdout == "True\n"


# -- -o / --output on a symbolic link: the link stays, its target is written --------------
DSL_S1 = os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py")


def _tmp_files(*dirs) -> list:
    return [n for d in dirs for n in os.listdir(d) if n.endswith(".tmp")]


def test_output_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "out.ir"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "out.ir"
    link.symlink_to(os.path.join("real", "out.ir"))            # a relative link
    code, _, err = _cli(["compile", DSL_S1, "-o", link], capsys)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "out.ir")
    assert target.read_text().startswith("pl.program()")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _tmp_files(tmp_path, real) == []
    from ptopipe.report._io import write_atomic                 # the library call: the same
    write_atomic(str(link), b"bytes")
    assert link.is_symlink() and target.read_bytes() == b"bytes"


def test_two_outputs_naming_one_file_are_refused_before_the_run(tmp_path, capsys):
    """``--output out=o.npy --output a=./o.npy``: one of the two results would be lost, silently."""
    pto = os.path.join(os.path.dirname(__file__), "pto", "both_ways_a5.pto")
    code, _, err = _cli(["run", pto, "--output", f"out={tmp_path / 'o.npy'}",
                         "--output", f"a={tmp_path / '.' / 'o.npy'}"], capsys)
    assert code == 1 and "ConfigError" in err and "one of them would be lost" in err, err
    assert not (tmp_path / "o.npy").exists()


def test_an_output_over_another_parameters_input_is_refused_before_the_run(tmp_path, capsys):
    """``--input x=x.npy --output out=x.npy`` would replace x's array by out's, silently; a
    parameter's own input file may take its result (``--input out=o.npy --output out=o.npy``)."""
    import numpy as np
    pto = os.path.join(os.path.dirname(__file__), "pto", "both_ways_a5.pto")
    x = tmp_path / "x.npy"
    np.save(x, np.ones((16, 16), np.float32))
    before = x.read_bytes()
    code, _, err = _cli(["run", pto, "--input", f"x={x}", "--output", f"out={x}"], capsys)
    assert _error(err) == (f"--output out={x} would overwrite {x}, the --input of parameter x: that array "
                           "would be lost", "option --output")
    assert code == 1 and x.read_bytes() == before
    o = tmp_path / "o.npy"
    np.save(o, np.zeros((16, 16), np.float32))
    code, out, err = _cli(["run", pto, "--input", f"out={o}", "--output", f"out={o}"], capsys)
    assert code == 0 and "PASS" in out, err


def test_an_input_array_piped_in_is_read_once_and_run(tmp_path, capsys):
    """``--input x=/dev/stdin`` (or ``<(...)``): the command reads its inputs more than once
    (the static check's scalars, then the run), and a pipe gives its bytes once - the second
    read said "the .npy data is damaged (... not seekable)", or "the file is empty"."""
    import io
    import numpy as np
    pto = os.path.join(os.path.dirname(__file__), "pto", "both_ways_a5.pto")
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    np.save(tmp_path / "x.npy", x)
    saved = io.BytesIO()
    np.save(saved, x)
    r, w = os.pipe()
    os.write(w, saved.getvalue())          # (smaller than a pipe's buffer)
    os.close(w)
    try:
        code, out, err = _cli(["run", pto, "--input", f"x=/dev/fd/{r}", "--output", f"out={tmp_path / 'p.npy'}"],
                              capsys)
    finally:
        os.close(r)
    assert code == 0 and "PASS" in out, err
    assert _cli(["run", pto, "--input", f"x={tmp_path / 'x.npy'}", "--output", f"out={tmp_path / 'f.npy'}"],
                capsys)[0] == 0
    assert np.array_equal(np.load(tmp_path / "p.npy"), np.load(tmp_path / "f.npy"))


def test_an_input_named_dash_is_the_standard_input(tmp_path, capsys, monkeypatch):
    # `--input x=-` was "cannot load -: No such file or directory", though `-o -` is stdout
    import io
    pto = os.path.join(os.path.dirname(__file__), "pto", "both_ways_a5.pto")
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    saved = io.BytesIO()
    np.save(saved, x)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(saved.getvalue())))
    code, out, err = _cli(["run", pto, "--input", "x=-", "--output", f"out={tmp_path / 'd.npy'}"], capsys)
    assert code == 0 and "PASS" in out, err
    np.save(tmp_path / "x.npy", x)
    assert _cli(["run", pto, "--input", f"x={tmp_path / 'x.npy'}", "--output", f"out={tmp_path / 'f.npy'}"],
                capsys)[0] == 0
    assert np.array_equal(np.load(tmp_path / "d.npy"), np.load(tmp_path / "f.npy"))
    code, _, err = _cli(["run", pto, "--input", "x=-", "--input", "b=-"], capsys)
    assert _error(err) == ("--input b=-: the standard input is another parameter's already (it gives its "
                           "bytes once)", "option --input")


def test_an_output_naming_no_parameter_is_refused_before_the_run(tmp_path, capsys):
    # it was refused after the run, which a long kernel had to finish first
    pto = os.path.join(os.path.dirname(__file__), "pto_corpus", "v_softmax_rows_a3.pto")
    code, out, err = _cli(["run", pto, "--output", f"outt={tmp_path / 'o.npy'}", "--report", str(tmp_path / "r.html")],
                          capsys)
    assert _error(err) == (f"--output 'outt={tmp_path / 'o.npy'}': expected NAME=FILE.npy with NAME a tensor "
                           "parameter", "option --output")
    assert code == 1 and out == "" and os.listdir(tmp_path) == []      # (no run: no report of it)


def test_a_named_pipe_given_to_a_second_command_is_read_again(tmp_path, capsys):
    """Two commands in one process (a tool calling ``ptopipe.cli.main``) given the same named
    pipe get each the bytes written for it: the second got the first one's array back from a
    cache of piped inputs keyed by the pipe's inode, and never opened the pipe."""
    import io
    import threading
    pto = os.path.join(os.path.dirname(__file__), "pto", "both_ways_a5.pto")
    fifo = tmp_path / "x.fifo"
    os.mkfifo(fifo)
    outs = []
    for k in (1, 2):
        saved = io.BytesIO()
        np.save(saved, np.full((16, 16), k, np.float32))

        def write(data=saved.getvalue()):
            with open(fifo, "wb") as f:         # (blocks until a reader opens the pipe)
                f.write(data)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        code, out, err = _cli(["run", pto, "--input", f"x={fifo}", "--output", f"out={tmp_path / f'o{k}.npy'}"],
                              capsys)
        writer.join(2)
        if writer.is_alive():                   # the command never opened the pipe: let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            writer.join(2)
        assert code == 0 and "PASS" in out, err
        outs.append(np.load(tmp_path / f"o{k}.npy"))
    assert not np.array_equal(*outs)


def test_output_through_a_symlink_to_a_read_only_file_is_refused(tmp_path, capsys):
    target = tmp_path / "keep.ir"
    target.write_text("keep me")
    target.chmod(0o444)
    link = tmp_path / "out.ir"
    link.symlink_to(target)
    code, out, err = _cli(["compile", DSL_S1, "-o", link], capsys)
    what, _ = _error(err)
    assert code == 1 and out == ""
    assert what == f"cannot write {link} (a link to {target}): the file exists and is read-only"
    assert f"chmod u+w {target}" in err
    assert link.is_symlink() and target.read_text() == "keep me" and _tmp_files(tmp_path) == []


def test_output_through_a_dangling_or_looping_symlink(tmp_path):
    from ptopipe.report._io import write_atomic
    link = tmp_path / "new.ir"
    link.symlink_to(tmp_path / "made.ir")                       # no target yet: it is created
    write_atomic(str(link), "x")
    assert link.is_symlink() and (tmp_path / "made.ir").read_text() == "x"
    loop = tmp_path / "loop.ir"
    loop.symlink_to(loop)
    with pytest.raises(ConfigError, match=f"cannot write {loop}"):
        write_atomic(str(loop), "x")
    gone = tmp_path / "gone.ir"
    gone.symlink_to(tmp_path / "nodir" / "x.ir")
    with pytest.raises(ConfigError, match=r"\(a link to .*x\.ir\): directory .*nodir does not exist"):
        write_atomic(str(gone), "x")
    with pytest.raises(ConfigError) as ei:                      # (not the link's fix)
        write_atomic(str(tmp_path / ("x" * 300 + ".ir")), "x")
    assert ei.value.fix == "choose a shorter file name"


@pytest.mark.parametrize("argv, option, text", [
    (["--seed", "-1"], "--seed", "--seed -1 is not a seed"),
    (["--replay", "random:-1"], "--replay", "bad schedule 'random:-1': the seed -1 is negative"),
    (["--replay", "pct:-2:3:10"], "--replay", "bad schedule 'pct:-2:3:10': the seed -2 is negative"),
    (["--replay", "pct:1:0:10"], "--replay", "bad schedule 'pct:1:0:10': the depth 0 is not >= 1"),
    (["--replay", "pct:1:3:-1"], "--replay", "bad schedule 'pct:1:3:-1': the event count -1 is negative"),
], ids=["seed", "replay_random", "replay_pct_seed", "replay_pct_depth", "replay_pct_k"])
def test_a_negative_schedule_seed_is_refused_however_it_is_given(argv, option, text, capsys):
    code, out, err = _cli(["check", S1, *argv], capsys)
    what, where = _error(err)
    assert code == 1 and "PASS" not in out and what == text and where == f"option {option}"


@pytest.mark.parametrize("argv, text", [
    ([], "nothing to sweep: no --param given"),
    (["--param", "depth=,"], "bad --param 'depth=,'"),
], ids=["no_param", "no_values"])
def test_a_sweep_with_nothing_to_vary_is_a_config_error(argv, text, capsys):
    code, out, err = _cli(["sweep", S1, *argv, "--workers", "1"], capsys)
    what, where = _error(err)
    assert code == 1 and out == "" and what == text and where == "option --param"
    if not argv:
        assert "--param M=V1,V2 (its parameters: M, depth, split, dtype)" in err


# -- the docs name only commands the CLI has ------------------------------------------------
def _doc_files() -> list:
    import glob
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                               recursive=True))


def test_the_docs_name_only_real_subcommands():
    """`ptopipe X` in code, and a bare `x` listed with one (`ptopipe check` / `x`), is a
    subcommand; an API is written as one (`explore()`, `ptopipe.run`)."""
    import re
    from ptopipe.cli import SUBCOMMANDS
    bad = []
    listed = re.compile(r"`ptopipe [a-z][^`]*`((?:\s*(?:/|,|\(and|\(or|and|or)\s*`[^`]+`)+)")
    for path in _doc_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        code = re.findall(r"`([^`\n]+)`", text) + [ln for b in re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
                                                   for ln in b.splitlines()]
        for snippet in code:
            m = re.match(r"\s*(?:\$\s+)?ptopipe\s+([a-z][\w-]*)", snippet)
            if m and m.group(1) not in SUBCOMMANDS:
                bad.append(f"{os.path.relpath(path, ROOT)}: `{snippet}`")
        for m in listed.finditer(text):
            for word in re.findall(r"`([^`]+)`", m.group(1)):
                if re.fullmatch(r"[a-z][\w-]*", word) and word not in SUBCOMMANDS:
                    bad.append(f"{os.path.relpath(path, ROOT)}: `{word}` listed as a command")
    assert not bad, bad


@pytest.mark.usefixtures("every_schedule")
def test_explore_is_an_option_of_check_not_a_command(capsys):
    with pytest.raises(SystemExit) as ei:
        _cli(["explore", S1], capsys)
    assert ei.value.code == 2 and "invalid choice: 'explore'" in capsys.readouterr().err
    code, out, _ = _cli(["check", S1, "--explore", "pct", "--schedules", "2"], capsys)
    assert code == 0 and "2 explored schedules (pct" in out


def test_an_exception_a_kernel_raises_names_the_core_that_raised_it(tmp_path, capsys):
    from ptopipe.cli import main as cli_main
    k = tmp_path / "k_raise.py"
    k.write_text("from ptopipe import Scenario\nfrom ptopipe.isa import *\n\n\n"
                 "def vector(x):\n    if get_subblockid() == 1:\n        raise ValueError('bad')\n\n\n"
                 "SCENARIO = Scenario('k', None, vector, lambda rng: {'x': 1}, lambda a, **_: {}, {'default': {}})\n")
    assert cli_main(["run", str(k)]) == 1
    err = capsys.readouterr().err
    assert "error: ValueError: bad" in err and f"at {k}:7" in err
    assert "raised by the kernel vector on AIV1" in err and "Traceback" not in err


def test_a_misspelt_instruction_in_a_kernel_is_told_the_closest_one(tmp_path, capsys):
    # (Python's own "Did you mean" is printed under a traceback, which the command line does not show)
    from ptopipe.cli import main as cli_main
    k = tmp_path / "k_typo.py"
    k.write_text("from ptopipe import Scenario\nfrom ptopipe.isa import *\n\n\n"
                 "def vector(x):\n    t = Tile(TileType.Vec, float32, 8, 8)\n    TADDD(t, t, t)\n\n\n"
                 "SCENARIO = Scenario('k', None, vector, lambda rng: {'x': 1}, lambda a, **_: {}, {'default': {}})\n")
    assert cli_main(["run", str(k)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: NameError: name 'TADDD' is not defined. Did you mean: 'TADD'?\n"
                          f"  at {k}:7\n"), err


def test_an_exception_a_kernel_raises_keeps_its_type_with_a_note_naming_the_kernel():
    """ptopipe.run: the kernel's own exception propagates as itself (its traceback is the user's
    to read), noted with the kernel and the core that raised it."""
    import sys

    def vector(x):
        [0][get_subblockid() + 1]
    with pytest.raises(IndexError) as ei:
        ptopipe.run(None, vector, dict(x=np.zeros(4, np.float32)))
    assert ei.value.ptopipe_raised_by == "the kernel vector on AIV0"
    if sys.version_info >= (3, 11):
        assert ei.value.__notes__ == ["(raised by the kernel vector on AIV0 in a ptopipe run)"]


def test_a_slot_buffer_smaller_than_one_ends_ring_names_the_agreement_too():
    """One end binds SlotNum 4 over a buffer sized for the other end's 2: the size error (the
    first that can be seen) also says the two ends must agree."""
    from ptopipe.isa import DIR_C2V, TPipe
    slot = 2048

    def vector(fifo):
        TPipe(0, DIR_C2V, slot, 4)(fifo, 0x10000, 0)

    with pytest.raises(ConfigError) as e:
        ptopipe.run(aiv=(vector, None), args={"fifo": ptopipe.gm_buffer(2 * slot)})
    assert "GM_SLOT_BUFFER holds 4096 bytes but the ring needs 8192" in e.value.what
    assert "same SlotNum and SlotSize" in e.value.fix and e.value.where.endswith(
        f":{inspect.getsourcelines(vector)[1] + 1}")


ANY = "a kernel .py, .pto or pto-isa .cpp file"


@pytest.mark.parametrize("cmd, takes", [("run", ANY), ("check", ANY), ("trace", ANY),
                                        ("compile", "a kernel .py (pl.program, @pl kernels) or .pto file"),
                                        ("sweep", "a kernel .py file defining SCENARIO"),
                                        ("mutate", "a Python kernel .py file (raw ISA or pl DSL)")])
def test_a_missing_kernel_file_names_the_files_the_command_takes(cmd, takes, tmp_path, capsys):
    f = tmp_path / "missing.cpp"
    code, out, err = _cli([cmd, f], capsys)
    what, where = _error(err)
    assert code == 1 and what == f"no such file: {f}" and where == "argument FILE"
    assert f"  fix: give the path of {takes}\n" in err, err


@pytest.mark.parametrize("cmd, name, takes", [("run", "k.txt", ANY), ("check", "k.txt", ANY), ("trace", "k.txt", ANY),
                                              ("sweep", "k.pto", "a kernel .py file defining SCENARIO")])
def test_a_file_of_a_kind_the_command_does_not_run_names_the_files_it_takes(cmd, name, takes, tmp_path, capsys):
    # (it was "give a .py file defining SCENARIO (the command also takes a .pto or a .cpp kernel where
    # it says so in --help)", sweep's too, which takes no .pto)
    f = tmp_path / name
    f.write_text("")
    code, out, err = _cli([cmd, f], capsys)
    assert code == 1 and _error(err) == (f"{f} is not a Python file", "argument FILE")
    assert f"  fix: give {takes}\n" in err, err


@pytest.mark.parametrize("dsl", [False, True])
def test_a_file_without_a_scenario_is_told_how_to_run_its_pl_kernels(dsl, tmp_path, capsys):
    # (what `compile --emit dsl` writes: pl kernels and a pl.program, no Scenario to run them with)
    f = tmp_path / "k.py"
    f.write_text("import ptopipe.language as pl\n\n\n@pl.aiv\ndef k(x: pl.Tensor[[16, 32], pl.f32]):\n"
                 "    pl.store(pl.adds(pl.load(x, [0, 0], [16, 32]), 1.0), [0, 0], x)\n" if dsl else "X = 1\n")
    code, out, err = _cli(["run", f], capsys)
    assert code == 1 and _error(err) == (f"{f} defines no ptopipe.Scenario", None)
    told = f"  fix: it defines pl kernels but no Scenario (the arguments and golden a run needs): `ptopipe check --static {f}`"
    assert (told in err) == dsl and "define SCENARIO = ptopipe.Scenario(" in err, err


@pytest.mark.parametrize("name", ["k.cpp", "k.txt"])
def test_compile_of_a_file_that_is_no_python_names_the_files_compile_takes(name, tmp_path, capsys):
    f = tmp_path / name
    f.write_text("")
    code, out, err = _cli(["compile", f], capsys)
    assert code == 1 and _error(err) == (f"{f} is not a Python file", "argument FILE")
    assert "  fix: give a kernel .py (pl.program, @pl kernels) or .pto file\n" in err, err


def test_an_error_in_a_function_make_args_calls_is_fixed_in_that_function():
    """A kernel builder make_args calls (KernelSet's build, a bad annotation in it) raised: the
    line is the builder's, and so is the fix - not make_args, whose own line is fine."""
    def build(n):
        return np.onse(n)           # the builder's line

    def make_args(rng, n=4):
        return dict(x=build(n))
    sc = ptopipe.Scenario("sc", lambda x: None, None, make_args, lambda args, **_: {})
    with pytest.raises(ConfigError) as ei:
        sc.args("default")
    line = inspect.getsourcelines(build)[1] + 1
    assert ei.value.where == f"{__file__}:{line}", ei.value.where
    assert ei.value.fix == ("fix build() at that line: make_args(rng, **params) calls it, before the kernel runs, "
                            "with the variant's parameters"), ei.value.fix
