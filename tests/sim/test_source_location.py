"""Errors name the kernel's line: ``sim.location`` tells ptopipe's own frames from the
user's by the real path of their file, so a package imported through an unnormalised path
(``benchmarks/..``, a symlink) is still internal, and a user directory whose name merely
starts like the package's (``ptopipe_kernels/``) is not."""
import os

import ptopipe
from ptopipe.sim import location


def _code(path: str):
    return compile("x = 1", path, "exec")


def test_package_files_reached_through_dot_dot_are_internal():
    pkg = os.path.dirname(os.path.realpath(ptopipe.__file__))
    via = os.path.join(pkg, "sim", "..", "isa", "ops.py")
    assert location.is_internal(_code(via))
    assert location.is_internal(_code(os.path.join(pkg, "sim", "core.py")))


def test_a_user_directory_named_like_the_package_is_not_internal():
    pkg = os.path.dirname(os.path.realpath(ptopipe.__file__))
    assert not location.is_internal(_code(pkg + "_kernels" + os.sep + "k.py"))
    assert not location.is_internal(_code("/tmp/ptopipe-fuzz-x/k.py"))


def test_a_kernel_error_names_the_kernel_line_when_ptopipe_is_imported_via_dot_dot(tmp_path):
    """End to end: a subprocess imports ptopipe through ``<repo>/tests/..`` and runs a
    kernel with a double TFREE; the error's location is the kernel file's line."""
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.realpath(ptopipe.__file__)))
    k = tmp_path / "k.py"
    k.write_text(
        "import sys\n"
        f"sys.path.insert(0, {os.path.join(repo, 'tests', '..')!r})\n"
        "import ptopipe\n"
        "from ptopipe.isa import *\n"
        "def cube(fifo):\n"
        "    pipe = TPipe(0, DIR_C2V, 2048, 2)(fifo, 0x8000)\n"
        "    acc = Tile(TileType.Acc, float32, 16, 32, addr=0)\n"
        "    TPUSH(pipe, acc, TileSplitAxis.TILE_UP_DOWN)\n"
        "def vector(fifo):\n"
        "    pipe = TPipe(0, DIR_C2V, 2048, 2)(fifo, 0x8000)\n"
        "    t = Tile(TileType.Vec, float32, 8, 32)\n"
        "    TPOP(pipe, t, TileSplitAxis.TILE_UP_DOWN)\n"
        "    TFREE(pipe)\n"
        "    TFREE(pipe)  # SECOND\n"
        "try:\n"
        "    ptopipe.run(cube, vector, dict(fifo=ptopipe.gm_buffer(4096)))\n"
        "except ptopipe.PtoPipeError as e:\n"
        "    print('WHERE', e.where)\n")
    r = subprocess.run([sys.executable, str(k)], capture_output=True, text=True, timeout=60,
                       cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ""})
    assert "WHERE" in r.stdout, r.stdout + r.stderr
    assert r.stdout.strip().endswith("k.py:14"), r.stdout


def test_tuple_valued_records_survive_pickling():
    """A C++ run and a spread check return their results from another process: the
    tuple-based records (a source location, an event, a ring key) round-trip as themselves."""
    import pickle
    from ptopipe.ir.ops import Ring
    from ptopipe.isa.events import Event
    for value in (location.SourceLoc("k.py", 3, 4, "cube"), Event("TADD", None, 7), Ring(2, 1)):
        back = pickle.loads(pickle.dumps(value))
        assert type(back) is type(value) and back == value


def test_code_a_library_made_from_text_is_not_the_kernel_files():
    """A frame of ``<string>`` code (a namedtuple's ``__new__``, which ptopipe's own planning
    calls) is no kernel line: the command's watch named "<string>:7" as the kernel file's
    code that would not stop.  The walk goes on to the frame that called it."""
    import sys
    seen = []

    def see():                      # (what the watch sees from its thread: the <string> frame inward)
        seen.append(location.running_user_code(sys._getframe(1)))
    exec(compile("see()", "<string>", "exec"), {"see": see})            # CALLER
    loc, = seen
    with open(__file__) as f:
        caller = next(i for i, ln in enumerate(f, 1) if "# CALLER" in ln and "exec(" in ln)
    assert loc is not None and (os.path.realpath(loc.file), loc.line) == (os.path.realpath(__file__), caller)
