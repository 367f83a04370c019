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
    monkeypatch.setattr(build, "_fallback", {}, raising=False)
    return configured, tmp


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
    monkeypatch.setattr(build, "_fallback", {}, raising=False)
    assert build.cache_dir() == str(tmp_path / "c") and os.listdir(tmp_path / "c") == []
    assert capsys.readouterr().err == ""
