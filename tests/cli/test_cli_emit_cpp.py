"""``ptopipe compile FILE --emit cpp [-o OUT]``: the C++ on stdout or in OUT, written
atomically (no partial file, no temporary left behind, the target's mode kept); a bad
output path is one clear error line and a non-zero exit, before anything is compiled."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.driver.programs import programs_of
from ptopipe.driver.loader import load_module
from ptopipe.codegen import write_cpp
from ptopipe.passes import compile_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S1 = os.path.join(ROOT, "examples", "mixed", "s1_cv_split.py")


def _want(platform: str, protocol: str = "pto-isa") -> str:
    """The C++ is pto-isa C++: --emit cpp compiles for the pto-isa protocol by default."""
    (prog,) = programs_of(load_module(S1))
    op = compile_program(prog, platform, protocol=protocol)
    return write_cpp(op, platform, protocol)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_emit_cpp_to_a_file(tmp_path, platform):
    out = tmp_path / "s1.cpp"
    assert cli_main(["compile", S1, "--emit", "cpp", "--platform", platform, "-o", str(out)]) == 0
    assert out.read_text() == _want(platform)
    assert os.listdir(tmp_path) == ["s1.cpp"]               # no temporary file left behind


def test_emit_cpp_to_stdout(capsys):
    assert cli_main(["compile", S1, "--emit", "cpp"]) == 0
    assert capsys.readouterr().out == _want("a2a3") + "\n"
    assert cli_main(["compile", S1, "--emit", "cpp", "--protocol", "spec"]) == 0
    assert capsys.readouterr().out == _want("a2a3", "spec") + "\n"


def test_emit_cpp_of_a_no_split_kernel_guards_the_one_lane_on_a5(capsys):
    """pto-isa C++ by default: A5's NO_SPLIT pipe has one lane and AIV1 runs nothing."""
    s2 = os.path.join(ROOT, "examples", "mixed", "s2_cv_nosplit.py")
    assert cli_main(["compile", s2, "--emit", "cpp", "--platform", "a5"]) == 0
    assert "if (get_subblockid() == 0) {" in capsys.readouterr().out


def test_emit_cpp_of_a_pto_file_follows_its_target(tmp_path, capsys):
    """A .pto file goes through the platform passes of its pto.target_arch to C++."""
    pto = os.path.join(ROOT, "tests", "pto", "nosplit_c2v_a5.pto")
    assert cli_main(["compile", pto, "--emit", "cpp"]) == 0
    out = capsys.readouterr().out
    assert "for a5" in out.splitlines()[0] and "TPipe<" in out


def test_an_existing_target_keeps_its_mode_and_is_replaced_whole(tmp_path):
    out = tmp_path / "k.cpp"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    assert cli_main(["compile", S1, "--emit", "cpp", "-o", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    assert out.read_text().startswith("// pto-isa C++ of program 's1_mixed_m64' for a2a3")


def test_a_failing_write_leaves_the_old_file(tmp_path, monkeypatch, capsys):
    """The writer fails after the compile: the target keeps its old content, no temp file."""
    import ptopipe.codegen as codegen
    from ptopipe.errors import CompileError

    def boom(op, platform, protocol=None):
        raise CompileError("pl.call has no pto-isa C++ form in the C++ writer", where="k.py:3:5")
    monkeypatch.setattr(codegen, "write_cpp", boom)
    out = tmp_path / "k.cpp"
    out.write_text("old\n")
    assert cli_main(["compile", S1, "--emit", "cpp", "-o", str(out)]) != 0
    assert out.read_text() == "old\n" and os.listdir(tmp_path) == ["k.cpp"]
    assert "pl.call has no pto-isa C++ form" in capsys.readouterr().err


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ptopipe", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_a_missing_directory_is_one_clear_error(tmp_path, capsys):
    out = tmp_path / "nope" / "k.cpp"
    assert cli_main(["compile", S1, "--emit", "cpp", "-o", str(out)]) != 0
    r = capsys.readouterr()
    assert "Traceback" not in r.err
    first = r.err.strip().splitlines()[0]
    assert first == f"error: ConfigError: cannot write {out}: directory {out.parent} does not exist"
    assert r.out == "" and not out.parent.exists()


def test_an_unwritable_directory_is_one_clear_error(tmp_path, monkeypatch, capsys):
    """mkstemp refused (what a read-only directory does; root may write anywhere, so the
    refusal is simulated): a clear error naming the directory, exit 1, no file."""
    import tempfile

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    out = tmp_path / "k.cpp"
    assert cli_main(["compile", S1, "--emit", "cpp", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"cannot write {out}: cannot create a file in directory {tmp_path} (Permission denied)" in err
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_refused(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    os.chmod(d, 0o555)
    r = _cli("compile", S1, "--emit", "cpp", "-o", str(d / "k.cpp"))
    assert r.returncode != 0 and "cannot create a file in directory" in r.stderr
    assert os.listdir(d) == []


def test_a_directory_target_is_refused_before_compiling(tmp_path, monkeypatch, capsys):
    import ptopipe.passes as passes
    monkeypatch.setattr(passes, "compile_program", lambda *a, **k: pytest.fail("compiled"))
    assert cli_main(["compile", S1, "--emit", "cpp", "-o", str(tmp_path)]) == 1
    assert f"cannot write {tmp_path}: it is a directory, not a file" in capsys.readouterr().err


def test_the_file_appears_only_whole(tmp_path, monkeypatch):
    """Interrupted at the last step (the rename): the old file is untouched and no
    temporary is left - the C++ goes to a temporary first, then replaces the target."""
    seen = []

    def interrupted(src, dst):
        seen.append(open(src).read())
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    out = tmp_path / "k.cpp"
    out.write_text("old\n")
    assert cli_main(["compile", S1, "--emit", "cpp", "-o", str(out)]) == 130
    assert out.read_text() == "old\n" and os.listdir(tmp_path) == ["k.cpp"]
    assert seen == [_want("a2a3")]                      # the temporary held the whole C++


def test_no_verify_writes_a_kernel_the_static_proof_refuses(tmp_path, capsys):
    """--no-verify leaves verify-pipes out: the kernel it refuses (a TFREE whose split is not
    its TPOP's, tests/cpp/dsl_misuse.py) is written out, each statement naming its DSL line."""
    k = tmp_path / "k.py"
    k.write_text("from dsl_misuse import m25_free_split\nPROGRAM = m25_free_split()\n")
    out = tmp_path / "k.cpp"
    assert cli_main(["compile", str(k), "--emit", "cpp", "-o", str(out)]) == 1
    assert "TFREE gives split TILE_NO_SPLIT" in capsys.readouterr().err and not out.exists()
    assert cli_main(["compile", str(k), "--emit", "cpp", "--no-verify", "-o", str(out)]) == 0
    (free,) = [ln for ln in out.read_text().splitlines() if "TFREE<" in ln]
    assert "TileSplitAxis::TILE_NO_SPLIT>(pipe);" in free and "dsl_misuse.py:" in free
    pto = os.path.join(ROOT, "tests", "pto", "nosplit_c2v_a5.pto")
    assert cli_main(["compile", pto, "--emit", "cpp", "--no-verify"]) == 1
    assert "--no-verify is for DSL kernel files" in capsys.readouterr().err


def test_passes_of_a_pto_file_is_refused_not_ignored(tmp_path, capsys):
    """A .pto goes through the one pipeline its run uses (pto_load.PTO_PASSES): a --passes
    list, which would pick a DSL file's passes, is refused at the option before anything is
    read or written."""
    pto = os.path.join(ROOT, "tests", "pto", "nosplit_c2v_a5.pto")
    out = tmp_path / "k.cpp"
    assert cli_main(["compile", pto, "--passes", "verify-pipes", "--emit", "cpp", "-o", str(out)]) == 1
    shown = capsys.readouterr()
    assert shown.err.startswith("error: ConfigError: --passes is for DSL kernel files: a .pto file is "
                                "already split into its kernels"), shown.err
    assert "  at option --passes\n" in shown.err and "fix: leave --passes out for a .pto file" in shown.err
    assert not shown.out and not out.exists()


def test_emit_pto_is_device_code_for_pto_isa_by_default(capsys):
    """A .pto is ptoas's input, device code: --emit pto compiles for pto-isa as --emit cpp does.
    On A5 the NO_SPLIT pipe has one lane (``ptopipe.lanes = 1``; no lane-1 replay) under either
    protocol; on A2A3 both lanes take part (the lane-1 replay, ``ptopipe.data_lane``)."""
    from ptopipe.codegen import write_pto
    s2 = os.path.join(ROOT, "examples", "mixed", "s2_cv_nosplit.py")
    (prog,) = programs_of(load_module(s2))
    assert cli_main(["compile", s2, "--emit", "pto", "--platform", "a5"]) == 0
    text = capsys.readouterr().out
    assert text == write_pto(compile_program(prog, "a5", protocol="pto-isa"), "a5") + "\n"
    assert "ptopipe.lanes = 1" in text and "ptopipe.data_lane" not in text
    assert cli_main(["compile", s2, "--emit", "pto", "--platform", "a5", "--protocol", "spec"]) == 0
    assert "ptopipe.lanes = 1" in capsys.readouterr().out
    assert cli_main(["compile", s2, "--emit", "pto", "--platform", "a2a3"]) == 0
    assert "ptopipe.data_lane" in capsys.readouterr().out


def test_run_of_the_written_cpp_takes_the_platform_and_protocol_it_was_compiled_for(tmp_path):
    """The first line of the C++ says what the program was compiled for; `run` / `check` / `trace`
    of the file take it unless --platform / --protocol say otherwise (a note says so)."""
    from ptopipe.codegen.cpp_writer import written_for
    from ptopipe.driver.cpp import run_target
    out = tmp_path / "s2.cpp"
    s2 = os.path.join(ROOT, "examples", "mixed", "s2_cv_nosplit.py")
    assert cli_main(["compile", s2, "--emit", "cpp", "--platform", "a5", "-o", str(out)]) == 0
    assert written_for(out.read_text().splitlines()[0]) == ("a5", "pto-isa")
    assert written_for(_want("a2a3", "spec").splitlines()[0]) == ("a2a3", "spec")
    platform, protocol, note = run_target(str(out), None, None)
    assert (platform, protocol) == ("a5", "pto-isa")
    assert note.startswith("platform a5 and protocol pto-isa: what ptopipe compiled the file for")
    assert run_target(str(out), None, "spec")[:2] == ("a5", "spec")
    assert run_target(str(out), "a5", "spec") == ("a5", "spec", None)
    # another platform given: said, as the platform taken from the file would be
    assert run_target(str(out), "a2a3", "spec") == ("a2a3", "spec", "platform a2a3: given, while ptopipe "
                                                                     "compiled the file for a5")
    assert run_target(str(out), "a3", None)[2] == ("protocol pto-isa: what ptopipe compiled the file for (its first "
                                                   "line; --protocol to choose another); platform a2a3: given, "
                                                   "while ptopipe compiled the file for a5")
    other = tmp_path / "hand.cpp"
    other.write_text("// a kernel\n")
    assert run_target(str(other), None, None) == (None, None, None)
