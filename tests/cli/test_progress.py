"""Progress of long commands: off a terminal a line every few seconds with done / total and
the ETA (a CI log is never silent for long); on a terminal a bar redrawn in place."""
import io

from ptopipe.cli.progress import Progress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_off_a_terminal_a_line_every_few_seconds_with_the_eta():
    out, clock = io.StringIO(), Clock()
    p = Progress("schedules", 10, stream=out, every=5.0, clock=clock)
    for done in range(10):
        clock.t = done * 2.0           # 2 s per unit of work
        p.step(done)
    p.close()
    lines = out.getvalue().splitlines()
    assert lines == ["  schedules: 3/10 done, 6 s, about 14 s left",
                     "  schedules: 6/10 done, 12 s, about 8 s left",
                     "  schedules: 9/10 done, 18 s, about 2 s left"]


def test_short_work_prints_nothing_off_a_terminal():
    out = io.StringIO()
    p = Progress("files", 3, stream=out, clock=Clock())
    for done in range(3):
        p.step(done)
    p.close()
    assert out.getvalue() == ""


def test_on_a_terminal_a_bar_redrawn_in_place_and_cleared():
    out = Tty()
    p = Progress("sweep", 4, stream=out, clock=Clock())
    p.step(2)
    assert out.getvalue().startswith("\r  sweep: [" + "#" * 12 + "." * 12 + "] 2/4")
    p.close()
    assert out.getvalue().endswith("\r\033[K")


def test_a_note_says_what_is_under_way_and_the_bar_the_time_it_has_taken():
    # a long unit of work (a mutant, the kernel's own check) showed no sign of life
    out, clock = io.StringIO(), Clock()
    p = Progress("mutants", 4, stream=out, every=5.0, clock=clock)
    clock.t = 6.0
    p.step(0, "line 44 reorder: variant default, run 7 of 21")
    assert out.getvalue() == "  mutants: 0/4 done, 6 s; line 44 reorder: variant default, run 7 of 21\n"
    tty = Tty()
    p = Progress("mutants", 4, stream=tty, clock=clock)
    clock.t = 9.0
    p.step(1, "under way: line 44 reorder")
    assert tty.getvalue().startswith("\r  mutants: [" + "#" * 6 + "." * 18 + "] 1/4, 3 s; under way: line 44 reorder")
