"""``ptopipe check PATH...`` over a kernel library: files and directories, one summary
table, JUnit XML, exit status 1 when anything failed, a file that cannot be read a failed
row while the rest go on."""
import os
import xml.etree.ElementTree as ET

from ptopipe.cli import main as cli_main

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CORPUS = os.path.join(ROOT, "tests", "pto_corpus")


_V = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
      "slayout=none_box, fractal=512, pad=0>")


def test_a_directory_and_files_give_one_table_and_junit(tmp_path, capsys):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "v_softmax_rows_a3.pto").write_text(open(os.path.join(CORPUS, "v_softmax_rows_a3.pto")).read())
    # a misuse: both Vector lanes push the whole NO_SPLIT tile into the one V2C slot, lane 1 other data
    # (identical data would be a warning: the work done twice)
    text = open(os.path.join(CORPUS, "x_v2c_nosplit_a3.pto")).read()
    push = "    pto.tpush_to_aic(%u_tile : " + _V
    assert text.count(push) == 1
    (lib / "x_v2c_nosplit_a3.pto").write_text(text.replace(push, (
        "    %sub_i64 = pto.get_subblock_idx\n"
        "    %sub = arith.index_cast %sub_i64 : i64 to index\n"
        "    %is1 = arith.cmpi eq, %sub, %c1 : index\n"
        "    %one = arith.constant 1.0 : f32\n"
        f"    scf.if %is1 {{\n      pto.tadds ins(%u_tile, %one : {_V}, f32) outs(%u_tile : {_V})\n    }}\n") + push))
    (lib / "_helper.py").write_text("SCENARIO = None\n")                  # not a kernel: skipped
    (lib / "broken.pto").write_text("module {\n  func.func @k() {\n    pto.tnope\n    return\n  }\n}\n")
    (lib / "leaks_a5.pto").write_text(open(os.path.join(ROOT, "tests", "pto_broken", "tfree_missing_then_a5.pto")).read())
    xml = tmp_path / "out.xml"
    code = cli_main(["check", str(lib), os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py"),
                     "--schedules", "1", "--junit", str(xml)])
    out = capsys.readouterr().out
    assert code == 1
    table = out[out.index("file "):].splitlines()
    rows = {ln.split()[0]: ln for ln in table[1:-1]}
    assert "PASS" in rows[str(lib / "v_softmax_rows_a3.pto")]
    assert "FAIL ProtocolError" in rows[str(lib / "x_v2c_nosplit_a3.pto")]
    assert "FAIL ParseError" in rows[str(lib / "broken.pto")]
    # refused before it ran (the static checks), on the platform the file names
    assert rows[str(lib / "leaks_a5.pto")].split()[2:4] == ["a5/spec", "FAIL"]
    assert "PASS" in rows[os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py")]
    assert table[-1] == "3 of 5 failed" and not any("_helper" in ln for ln in table)
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("tests") == "5" and suite.get("failures") == "3"
    failed = {c.get("classname"): c.find("failure") for c in suite}
    assert failed[str(lib / "broken.pto")].get("type") == "ParseError"
    assert "broken.pto:3:5" in failed[str(lib / "broken.pto")].get("message")
    assert failed[str(lib / "v_softmax_rows_a3.pto")] is None


def test_a_file_that_raises_at_import_is_one_failed_row_at_its_line(tmp_path, capsys):
    """A kernel file whose import raises (not a PtoPipeError) is a FAIL row located at the
    file's line, and the other files are still checked (table and JUnit)."""
    (tmp_path / "a_raises.py").write_text("raise RuntimeError('import boom')\nSCENARIO = None\n")
    (tmp_path / "b_ok.pto").write_text(open(os.path.join(CORPUS, "v_softmax_rows_a3.pto")).read())
    xml = tmp_path / "out.xml"
    assert cli_main(["check", str(tmp_path), "--schedules", "1", "--workers", "1", "--junit", str(xml)]) == 1
    cap = capsys.readouterr()
    table = cap.out[cap.out.index("file "):].splitlines()
    rows = {ln.split()[0]: ln for ln in table[1:-1]}
    assert "FAIL RuntimeError" in rows[str(tmp_path / "a_raises.py")]
    assert "PASS" in rows[str(tmp_path / "b_ok.pto")] and table[-1] == "1 of 2 failed"
    assert f"at {tmp_path / 'a_raises.py'}:1" in cap.err
    failed = {c.get("classname"): c.find("failure") for c in ET.parse(xml).getroot().find("testsuite")}
    assert failed[str(tmp_path / "a_raises.py")].get("message") == \
        f"RuntimeError: import boom at {tmp_path / 'a_raises.py'}:1"


def test_a_file_that_calls_sys_exit_is_one_failed_row_at_its_line(tmp_path, capsys):
    """sys.exit at a kernel file's import (or in its golden) is that file's FAIL row at the
    line that called it, not the end of the command: the other files' failures are still
    reported, in the table and the JUnit file, and the status is 1."""
    (tmp_path / "a_exits.py").write_text("import sys\nsys.exit(0)\nSCENARIO = None\n")
    (tmp_path / "broken.pto").write_text("module {\n  func.func @k() {\n    pto.tnope\n    return\n  }\n}\n")
    xml = tmp_path / "out.xml"
    assert cli_main(["check", str(tmp_path), "--schedules", "1", "--workers", "1", "--junit", str(xml)]) == 1
    cap = capsys.readouterr()
    table = cap.out[cap.out.index("file "):].splitlines()
    rows = {ln.split()[0]: ln for ln in table[1:-1]}
    assert "FAIL ConfigError" in rows[str(tmp_path / "a_exits.py")]
    assert "FAIL ParseError" in rows[str(tmp_path / "broken.pto")] and table[-1] == "2 of 2 failed"
    failed = {c.get("classname"): c.find("failure") for c in ET.parse(xml).getroot().find("testsuite")}
    assert failed[str(tmp_path / "a_exits.py")].get("message") == (
        f"ConfigError: loading {tmp_path / 'a_exits.py'} raised SystemExit(0) (sys.exit): a kernel file cannot "
        f"end the program at {tmp_path / 'a_exits.py'}:2")
    assert failed[str(tmp_path / "broken.pto")].get("type") == "ParseError"


def test_a_library_that_passes_exits_0(tmp_path, capsys):
    assert cli_main(["check", os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py"),
                     os.path.join(CORPUS, "v_softmax_rows_a3.pto"), "--schedules", "1"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("all 2 passed")


def test_a_pass_with_warnings_says_so_in_the_table_and_junit_and_stderr_names_each_file(tmp_path, capsys):
    """A file whose run warns (a tile read before anything wrote it) passes, and the table,
    the last line and JUnit's system-err say it; each file's messages follow its name."""
    good = open(os.path.join(CORPUS, "v_softmax_rows_a3.pto")).read()
    (tmp_path / "ok.pto").write_text(good)
    load = next(ln for ln in good.splitlines() if "pto.tload" in ln)
    (tmp_path / "warn.pto").write_text(good.replace(load, "", 1))      # the input tile never loaded
    xml = tmp_path / "out.xml"
    assert cli_main(["check", str(tmp_path), "--schedules", "1", "--junit", str(xml)]) == 0
    cap = capsys.readouterr()
    table = cap.out[cap.out.index("file "):].splitlines()
    rows = {ln.split()[0]: ln for ln in table[1:-1]}
    assert rows[str(tmp_path / "ok.pto")].split()[-2:] == ["PASS", "1"]      # one core: one schedule
    assert "PASS, 1 warning" in rows[str(tmp_path / "warn.pto")]
    assert table[-1] == "all 2 passed; 1 passed with warnings (see above)"
    cases = {c.get("classname"): c for c in ET.parse(xml).getroot().find("testsuite")}
    assert "before anything wrote" in cases[str(tmp_path / "warn.pto")].find("system-err").text
    assert cases[str(tmp_path / "ok.pto")].find("system-err") is None
    assert cap.err.index(f"-- {tmp_path / 'ok.pto'}") < cap.err.index(f"-- {tmp_path / 'warn.pto'}")


def test_the_commands_timeout_is_no_kernel_failure():
    """In a kernel library, a variant the command's --timeout stopped - after passing
    schedules, in its default schedule, or before it started - is TIMEOUT in the table (a
    JUnit error, not a failure), as README says; one stopped in its default schedule says a
    loop looks the same and how to tell.  A lone file's default schedule that --timeout
    stopped stays a BudgetError (as run and trace say), and so does a run's own timeout."""
    import xml.etree.ElementTree as ET
    from ptopipe.driver.check import TIMEOUT, out_of_time, variant_report
    from ptopipe.driver.library import junit, summary
    from ptopipe.errors import BudgetError
    from ptopipe.isa.explore import ExploreResult
    from ptopipe.sim.bounds import Deadline, expired_before
    before = expired_before(Deadline(2.0, scope="command"), "this run")
    under_way = BudgetError("the command did not finish within --timeout 2 s of wall-clock time",
                            findings=[{"kind": "budget", "bound": "timeout", "scope": "command",
                                       "limit": 2.0, "core": "AIV0", "where": "k.py:9"}])
    assert out_of_time(before, 0) == "not checked: --timeout 2 s ran out before this variant started"
    assert out_of_time(under_way, 5) == ("not finished: --timeout 2 s ran out after 5 passing "
                                         "schedule(s), no failure found in them; the schedule under "
                                         "way then did not finish (stopped at k.py:9)")
    assert out_of_time(under_way, 0) is None                      # a lone file: maybe a loop
    assert out_of_time(under_way, 0, library=True) == ("not finished: --timeout 2 s ran out in the default schedule "
                                         "(stopped at k.py:9); a kernel that loops forever and one that "
                                         "needs more time look alike here")
    per_run = expired_before(Deadline(2.0), "this run")           # timeout=2 of one run, not --timeout
    assert out_of_time(per_run, 3) is None
    rows = []
    for err, passed in ((under_way, 5), (before, 0), (under_way, 0)):
        res = ExploreResult(runs=passed + 1, passed=passed)
        res.failures.append((None if not passed else 7, err))
        rows.append(dict(variant_report("k", "default", "a2a3", "spec", res, library=True),
                         file=f"k{len(rows)}.py"))
    assert [r["failure"]["error"] for r in rows] == [TIMEOUT, TIMEOUT, TIMEOUT]
    assert [bool(r["failure"]["fix"]) for r in rows] == [False, False, True]   # (how to tell a loop)
    res = ExploreResult(runs=1, passed=0)
    res.failures.append((None, per_run))
    rows.append(dict(variant_report("k", "default", "a2a3", "spec", res, library=True), file="k3.py"))
    table = summary(rows).splitlines()
    assert all("TIMEOUT" in table[k] for k in (1, 2, 3)) and "FAIL BudgetError" in table[4]
    assert table[-1] == "1 of 4 failed; 3 not finished within --timeout"
    suite = ET.fromstring(junit(rows)).find("testsuite")
    assert [c[0].tag for c in suite] == ["error", "error", "error", "failure"]
    assert (suite.get("failures"), suite.get("errors")) == ("1", "3")


def test_a_file_named_twice_is_checked_once():
    from ptopipe.driver.library import kernel_files
    dsl = os.path.join(ROOT, "examples", "dsl")
    files = kernel_files([dsl, os.path.join(dsl, "s1_cv_split.py"), os.path.join(dsl, ".", "s1_cv_split.py")])
    assert len(files) == len({os.path.realpath(f) for f in files}) == len(kernel_files([dsl]))


def test_a_junit_failure_carries_the_whole_error_as_its_text():
    from ptopipe.driver.library import junit
    fail = {"error": "DeadlockError", "what": "every core waits", "where": "k.py:9",
            "details": "AIC   blocked in TPOP\nAIV0  blocked in WAIT", "fix": "free the slot", "seed": "pct:7:3:120"}
    row = {"scenario": "k", "variant": "default", "platform": "a2a3", "protocol": "spec", "failure": fail,
           "file": "k.py"}
    failure = ET.fromstring(junit([row])).find("testsuite")[0][0]
    assert failure.get("message") == "DeadlockError: every core waits at k.py:9"
    assert failure.text.splitlines() == ["DeadlockError: every core waits", "  at k.py:9", "  AIC   blocked in TPOP",
                                         "  AIV0  blocked in WAIT", "  fix: free the slot", "  schedule: pct:7:3:120"]


def test_the_table_says_when_one_schedule_stood_for_all(capsys):
    """Under the periodic engine a clean kernel's default schedule stands for every schedule
    (docs/schedules.md); one that warned (M1's no-op TFREE missing on A2A3/pto-isa) is explored."""
    files = [os.path.join(ROOT, "examples", "scenarios", "s4_both_ways.py"),
             os.path.join(ROOT, "examples", "misuse", "m1_no_tfree.py")]
    assert cli_main(["check", *files, "--protocol", "pto-isa", "--schedules", "4", "--workers", "1",
                     "--run-engine", "periodic"]) == 0
    out = capsys.readouterr().out
    rows = {ln.split()[1]: ln for ln in out[out.index("file "):].splitlines()[1:-1]}
    assert rows["s4_both_ways[default]"].split()[-4:] == ["PASS", "1", "(all", "alike)"], rows
    assert rows["m1_no_tfree[default]"].split()[-4:] == ["PASS,", "2", "warnings", "5"], rows
