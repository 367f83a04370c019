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


def test_the_other_locations_a_message_names_are_shown_like_its_at_line(tmp_path, monkeypatch):
    """A second location in the message, details or fix (the other end of a pipe, the TPUSH a
    TPOP mismatches) reads as the ``at`` line does: relative below the working directory,
    resolved elsewhere; a path with no line is left as written."""
    (tmp_path / "w").mkdir()
    monkeypatch.chdir(tmp_path / "w")
    here, there = os.path.join(str(tmp_path), "w", "k.py"), os.path.join(str(tmp_path), "w", "..", "h.py")
    e = CompileError(f"disagrees with {here}:33:9", where=f"{here}:18:9", details=f"the other end: {there}:4",
                     fix=f"see {here}:33 (or {tmp_path}/notes.txt)")
    text = str(e)
    assert "disagrees with k.py:33:9\n  at k.py:18:9\n" in text
    assert f"the other end: {os.path.join(str(tmp_path), 'h.py')}:4" in text
    assert f"fix: see k.py:33 (or {tmp_path}/notes.txt)" in text
    assert e.what == f"disagrees with {here}:33:9"            # (the fields keep what was located)


def test_a_location_glued_to_other_text_is_left_whole(monkeypatch):
    monkeypatch.chdir("/")
    from ptopipe.errors import shown_locations
    assert shown_locations("the push at /tmp/run (2)/k.cpp:12") == "the push at /tmp/run (2)/k.cpp:12"
    assert shown_locations("at (/tmp/k.cpp:3)") == "at (tmp/k.cpp:3)"
