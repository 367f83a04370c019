"""Output files: a directory or a read-only file as the target is
a ConfigError naming it (never a raw OSError with a temp-file name, never a silent
replace); new files honour the umask, existing files keep their mode; writes stay atomic."""
import os
import stat

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.errors import ConfigError
from ptopipe.report._io import atomic_open, write_atomic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S4 = os.path.join(ROOT, "examples", "scenarios", "s4_both_ways.py")


def _leftovers(d):
    return [n for n in os.listdir(d) if n.endswith(".tmp")]


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


def test_directory_target_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as ei:
        write_atomic(str(tmp_path), "x")
    assert "is a directory" in ei.value.what and str(tmp_path) in ei.value.what
    assert ei.value.fix
    assert _leftovers(tmp_path) == []


def test_cli_trace_to_a_directory_exits_with_a_message(tmp_path, capsys):
    assert cli_main(["trace", S4, "-o", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "ConfigError" in err and "is a directory" in err and str(tmp_path) in err
    assert "Traceback" not in err and ".tmp" not in err
    assert os.listdir(tmp_path) == []


def test_read_only_target_is_refused_not_replaced(tmp_path, capsys):
    out = tmp_path / "t.json"
    out.write_text("keep me")
    out.chmod(0o444)
    with pytest.raises(ConfigError) as ei:
        write_atomic(str(out), "new")
    assert "read-only" in ei.value.what and "chmod" in ei.value.fix
    assert out.read_text() == "keep me" and stat.S_IMODE(out.stat().st_mode) == 0o444
    # through the CLI: exit 1, the message, no traceback, the file untouched
    assert cli_main(["trace", S4, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "read-only" in err and str(out) in err and "Traceback" not in err
    assert out.read_text() == "keep me" and _leftovers(tmp_path) == []


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_new_file_honours_the_umask(tmp_path, umask, mask):
    umask(mask)
    p = tmp_path / "new.html"
    write_atomic(str(p), "x")
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask


def test_existing_file_keeps_its_mode(tmp_path, umask):
    umask(0o077)
    p = tmp_path / "old.json"
    p.write_text("old")
    p.chmod(0o664)
    write_atomic(str(p), "new")
    assert p.read_text() == "new" and stat.S_IMODE(p.stat().st_mode) == 0o664


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_streamed_write_is_atomic(tmp_path, exc):
    p = tmp_path / "t.json"
    p.write_text("previous")
    with pytest.raises(exc):
        with atomic_open(str(p)) as f:
            f.write("half of a ")
            f.flush()
            raise exc()
    assert p.read_text() == "previous" and _leftovers(tmp_path) == []
    with atomic_open(str(p)) as f:
        f.write("complete")
    assert p.read_text() == "complete" and _leftovers(tmp_path) == []


def test_missing_directory(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        write_atomic(str(tmp_path / "nope" / "t.json"), "x")
    (tmp_path / "afile").write_text("x")           # a file where a directory should be
    with pytest.raises(ConfigError, match="afile is a file, not a directory"):
        write_atomic(str(tmp_path / "afile" / "deeper" / "t.json"), "x")


def test_unwritable_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):          # root writes anywhere: nothing to check
            pytest.skip("running as root")
        with pytest.raises(ConfigError, match="cannot create a file"):
            write_atomic(str(ro / "t.json"), "x")
    finally:
        ro.chmod(0o755)


def test_check_output_refuses_a_directory_it_cannot_create_a_file_in(tmp_path, monkeypatch):
    """(as write_atomic would, at mkstemp: the directory's permission read as os.access says,
    which a test run as root cannot take away for real)"""
    from ptopipe.report import _io
    ro = str(tmp_path / "ro")
    os.mkdir(ro)
    real = os.access
    monkeypatch.setattr(_io.os, "access", lambda p, mode: False if os.fspath(p) == ro else real(p, mode))
    with pytest.raises(ConfigError, match="cannot create a file in directory"):
        _io.check_output(os.path.join(ro, "t.json"))
    _io.check_output(str(tmp_path / "t.json"))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_check_output_refuses_a_directory_whose_bits_allow_it_but_that_takes_no_file(tmp_path):
    """/proc grants root (and its bits anyone) write access yet takes no new file: refused
    before the run, as the write after it would be - not after a long check's table."""
    from ptopipe.report import _io
    with pytest.raises(ConfigError, match=r"cannot create a file in directory /proc \("):
        _io.check_output("/proc/ptopipe-out.xml")
    _io.check_output(str(tmp_path / "t.json"))
    assert os.listdir(tmp_path) == []            # the trial file is gone


def test_cli_check_junit_into_proc_is_refused_before_the_check(capsys):
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs Linux's /proc")
    assert cli_main(["check", S4, "--schedules", "0", "--junit", "/proc/ptopipe-out.xml"]) == 1
    cap = capsys.readouterr()
    assert "cannot create a file in directory /proc" in cap.err and "Traceback" not in cap.err
    assert "PASS" not in cap.out + cap.err                   # nothing ran


def test_cli_run_report_to_a_directory(tmp_path, capsys):
    assert cli_main(["run", S4, "--quiet", "--report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "ConfigError" in err and "is a directory" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_a_named_pipe_is_written_in_place_not_replaced(tmp_path):
    """A FIFO a reader waits on (or /dev/null, /dev/stdout): its data streams into it, and it
    stays a pipe - a rename over it would leave the reader with nothing and destroy it."""
    import threading
    fifo = tmp_path / "out.pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    write_atomic(str(fifo), b"trace bytes")
    reader.join(timeout=10)
    assert got == [b"trace bytes"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert _leftovers(tmp_path) == []
    write_atomic(os.devnull, "nothing")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_cli_compile_to_dev_null_keeps_the_device(capsys):
    mixed = os.path.join(ROOT, "examples", "mixed", "s1_cv_split.py")
    assert cli_main(["compile", mixed, "--emit", "pto", "-o", os.devnull]) == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and "Traceback" not in capsys.readouterr().err


def test_a_full_device_is_a_config_error_naming_it():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with pytest.raises(ConfigError, match="cannot write /dev/full: No space left on device"):
        write_atomic("/dev/full", "x" * 100000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
