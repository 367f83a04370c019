"""The environment a C++ kernel build takes from the user: the build cache directory
(``PTOPIPE_CACHE_DIR`` / ``~/.cache``, with a private fallback when it cannot be written)
and the compiler (``CXX``, which may carry flags, and ``CXXFLAGS``)."""
from __future__ import annotations

import os

import pytest

from ptopipe.cpp import build
from ptopipe.errors import ConfigError


@pytest.fixture
def unwritable_cache(tmp_path, monkeypatch):
    """PTOPIPE_CACHE_DIR below a regular file (no user, root included, can create it) and a
    fresh temporary directory; returns (the configured directory, the temporary directory)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    configured = str(blocker / "cache")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("PTOPIPE_CACHE_DIR", configured)
    monkeypatch.setattr(build.tempfile, "tempdir", str(tmp))
    _forget_fallbacks()
    yield configured, tmp
    _forget_fallbacks()


def _forget_fallbacks():
    """The fallbacks this process said notes for, forgotten (each test starts afresh)."""
    clear = getattr(getattr(build, "_fallback", None), "cache_clear", None)
    if clear is not None:
        clear()


def test_an_unwritable_cache_falls_back_to_a_private_temporary_directory_with_one_note(unwritable_cache, capsys):
    configured, tmp = unwritable_cache
    d = build.cache_dir()
    assert d == str(tmp / f"ptopipe-cpp-{os.getuid()}") and os.path.isdir(d)
    assert oct(os.stat(d).st_mode & 0o777) == oct(0o700)
    err = capsys.readouterr().err
    assert err.startswith(f"note: cannot write the C++ build cache {configured} (Not a directory): "
                          f"building in {d}") and err.count("\n") == 1
    assert build.cache_dir() == d and capsys.readouterr().err == ""     # said once


def test_a_cache_that_cannot_be_written_anywhere_is_a_config_error_naming_it(unwritable_cache):
    configured, tmp = unwritable_cache
    (tmp / f"ptopipe-cpp-{os.getuid()}").write_text("")         # the fallback is taken by a file
    with pytest.raises(ConfigError) as ei:
        build.cache_dir()
    assert configured in ei.value.what and "PTOPIPE_CACHE_DIR=" in ei.value.fix


def test_a_writable_cache_is_used_as_it_is(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PTOPIPE_CACHE_DIR", str(tmp_path / "c"))
    assert build.cache_dir() == str(tmp_path / "c") and os.listdir(tmp_path / "c") == []
    assert capsys.readouterr().err == ""


C2V = os.path.join(os.path.dirname(__file__), "cpp_kernels", "c2v_add.cpp")


@pytest.fixture
def fake_cxx(tmp_path, monkeypatch):
    """A compiler that logs its arguments and refuses ``-fbogus`` as clang does (``--version``:
    a version); the build cache in ``tmp_path``.  Returns (its path, the log)."""
    log = tmp_path / "argv.log"
    cxx = tmp_path / "fake++"
    cxx.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'fake++ 1.0'; exit 0; }\n"
                   f"echo \"$@\" >> {log}\n"
                   "for a; do [ \"$a\" = -fbogus ] && { echo \"fake++: error: unknown argument: '-fbogus'\" >&2; "
                   "exit 1; }; done\necho 'fake++: error: no output' >&2; exit 1\n")
    cxx.chmod(0o755)
    monkeypatch.setenv("PTOPIPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CXXFLAGS", raising=False)
    return str(cxx), log


def test_cxx_with_flags_runs_its_first_word_with_the_rest_first(fake_cxx, monkeypatch):
    from ptopipe.errors import CompileError
    cxx, log = fake_cxx
    monkeypatch.setenv("CXX", f"{cxx} -Wfoo '-DA=1 2'")
    assert build.find_compiler() == (cxx, "fake++ 1.0") and build.compiler_args() == ["-Wfoo", "-DA=1 2"]
    with pytest.raises(CompileError):
        build.build(build.find_kernels(C2V))
    assert log.read_text().splitlines()[-1].startswith("-Wfoo -DA=1 2 -std=")    # (the same split)


@pytest.mark.parametrize("var", ["CXXFLAGS", "CXX"])
def test_a_flag_the_compiler_refuses_names_the_variable_that_gave_it(fake_cxx, monkeypatch, var):
    from ptopipe.errors import CompileError
    cxx, _ = fake_cxx
    monkeypatch.setenv("CXX", cxx + (" -fbogus" if var == "CXX" else ""))
    if var == "CXXFLAGS":
        monkeypatch.setenv("CXXFLAGS", "-O0 -fbogus")
    with pytest.raises(CompileError) as ei:
        build.build(build.find_kernels(C2V))
    assert ei.value.fix.startswith(f"the compiler (fake++) refuses -fbogus, which ${var} gives it: correct or "
                                   f"remove it in ${var}")
    assert ei.value.where == f"${var}"


def test_a_cxx_no_shell_could_split_is_a_config_error(monkeypatch):
    monkeypatch.setenv("CXX", "g++ 'unclosed")
    with pytest.raises(ConfigError) as ei:
        build.find_compiler()
    assert ei.value.what.startswith("CXX=g++ 'unclosed: cannot split it into words") and ei.value.where == "$CXX"
