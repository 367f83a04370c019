"""How an error shows a kernel path (ptopipe.errors.shown_path / shown_where): relative to
the working directory below it; elsewhere absolute with ``..`` resolved, as a user who ran
``check ../k/f.py`` from a checkout expects to read it."""
import os

from ptopipe.errors import CompileError, shown_path, shown_where


def test_a_path_outside_the_working_directory_is_shown_resolved(tmp_path, monkeypatch):
    (tmp_path / "checkout").mkdir()
    (tmp_path / "k").mkdir()
    monkeypatch.chdir(tmp_path / "checkout")
    typed = os.path.join(str(tmp_path), "checkout", "..", "k", "f.py")
    assert shown_path(typed) == os.path.join(str(tmp_path), "k", "f.py")
    assert shown_where(f"{typed}:39") == f"{os.path.join(str(tmp_path), 'k', 'f.py')}:39"
    assert shown_path(os.path.join(str(tmp_path), "checkout", "a", "..", "g.py")) == "g.py"
    e = CompileError("bad", where=f"{typed}:39:5")
    assert f"at {tmp_path}{os.sep}k{os.sep}f.py:39:5" in str(e) and ".." not in str(e)
