"""Options that commands share mean the same everywhere: every --protocol name (a pto-isa
release, the CPU simulator) is accepted by every command, --range reaches the static check in
front of a .pto run and is refused where nothing would read it, --depth below 1 is refused
whatever the exploration mode, a failing run's --report / trace shows the run up to the error,
a coverage gate with nothing measured does not pass, and every output path a command
would write is refused before the command does any work."""
import json
import os

import pytest

from ptopipe.cli import main as cli_main

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DSL = os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py")
S1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")
PARAMS = os.path.join(ROOT, "tests", "pto_corpus", "c_mm_param_offsets_a5.pto")
M1 = os.path.join(ROOT, "examples", "misuse", "m1_no_tfree.py")


@pytest.mark.parametrize("protocol", ["pto-isa@0a15e15c", "pto-isa-cpusim"])
@pytest.mark.parametrize("emit", ["cpp", "pto"])
def test_compile_takes_every_protocol_name(protocol, emit, tmp_path):
    out = tmp_path / f"k.{emit}"
    assert cli_main(["compile", DSL, "--protocol", protocol, "--emit", emit, "-o", str(out)]) == 0
    assert out.stat().st_size > 0


def test_an_unknown_version_lists_the_known_ones_in_sentences(capsys):
    with pytest.raises(SystemExit):
        cli_main(["run", S1, "--protocol", "pto-isa@zzzz"])
    err = capsys.readouterr().err
    assert "is not one of them; known versions, oldest first: " in err


def test_range_reaches_the_static_check_in_front_of_a_pto_run(capsys):
    assert cli_main(["check", PARAMS, "--schedules", "0"]) == 0
    cap = capsys.readouterr()      # (under the verdict, once: not also on stderr before the run)
    warned = [ln for ln in cap.out.splitlines() if ln.startswith("  warning: ")]
    assert "(--range NAME=LO..HI)" in cap.out and len(set(warned)) == len(warned) and "warning" not in cap.err
    assert cli_main(["check", PARAMS, "--schedules", "0", "--range", "row0=0..32", "--range", "nb=0..3"]) == 0
    cap = capsys.readouterr()
    assert "warning" not in cap.out + cap.err


def test_a_failing_check_of_a_pto_prints_its_static_warnings_once_under_the_verdict(capsys):
    """A .pto's static warnings (here ptoas 0.27's refusal of slot_num) are printed once, under
    check's verdict - a FAIL's too - not also on stderr before the run."""
    pto = os.path.join(ROOT, "tests", "pto", "c2v_split_a3.pto")
    code = cli_main(["check", pto, "--until-cycle", "10"])
    out, err = capsys.readouterr()
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("FAIL c2v_split_a3.pto[default] on a2a3/spec: BudgetError under the default "
                               "schedule, 2 warning(s):"), out
    assert all(ln.startswith("  warning: ptoas refuses slot_num on pto.a") for ln in lines[1:3]), out
    assert (out + err).count("ptoas refuses slot_num") == 2 and "error: BudgetError" in err


@pytest.mark.parametrize("command", ["run", "check"])
def test_range_on_a_python_kernel_run_is_refused(command, capsys):
    assert cli_main([command, S1, "--range", "n=0..3"]) == 1
    err = capsys.readouterr().err
    assert "--range is for .pto kernels" in err and "check --static" in err


@pytest.mark.parametrize("mode", ["mix", "random", "pct", "exhaustive"])
def test_a_depth_below_one_is_refused_in_every_mode(mode, capsys):
    assert cli_main(["check", S1, "--explore", mode, "--depth", "-3"]) == 1
    assert "--depth" in capsys.readouterr().err


def test_a_failing_runs_report_and_trace_show_it_up_to_the_error(tmp_path, capsys):
    html = tmp_path / "r.html"
    assert cli_main(["run", M1, "--report", str(html)]) == 1
    cap = capsys.readouterr()
    assert "stopped with DeadlockError" in cap.err and html.exists()
    text = html.read_text()
    assert "stopped by DeadlockError" in text and "<svg" in text and "m1_no_tfree.py:" in text
    trace = tmp_path / "t.json"
    assert cli_main(["trace", M1, "-o", str(trace)]) == 1
    data = json.loads(trace.read_text())
    names = {e["name"] for e in data["traceEvents"] if e["ph"] == "X"}
    assert {"TPUSH", "TPOP"} <= names
    # and where it stopped: a global instant at its last cycle, and in otherData
    (stop,) = [e for e in data["traceEvents"] if e["ph"] == "i"]
    assert stop["name"] == "stopped: DeadlockError" and stop["ts"] == data["otherData"]["cycles"]
    assert data["otherData"]["stopped_by"]["error"] == "DeadlockError"
    assert "m1_no_tfree.py:" in data["otherData"]["stopped_by"]["where"]


RAISES = '''
import numpy as np
import ptopipe
from ptopipe.isa import *


def vec(x, out):
    t = Tile(TileType.Vec, float32, 1, 8, addr=0)
    TLOAD(t, x)
    TSTORE(out, t)
    raise ZeroDivisionError("the kernel's own")   # RAISE


SCENARIO = ptopipe.Scenario("raises", None, (vec, None), lambda rng: dict(x=np.ones((1, 8), np.float32),
                            out=np.zeros((1, 8), np.float32)), lambda a: {"out": a["x"]})
'''


def test_a_run_a_kernels_own_exception_stops_gets_its_report_and_trace_up_to_it(tmp_path, capsys):
    k = tmp_path / "k.py"
    k.write_text(RAISES)
    line = next(i for i, t in enumerate(RAISES.splitlines(), 1) if "# RAISE" in t)
    html = tmp_path / "r.html"
    assert cli_main(["run", str(k), "--report", str(html)]) == 1
    assert "stopped with ZeroDivisionError" in capsys.readouterr().err and html.exists()
    assert "stopped by ZeroDivisionError" in html.read_text()
    trace = tmp_path / "t.json"
    assert cli_main(["trace", str(k), "-o", str(trace)]) == 1
    stop = json.loads(trace.read_text())["otherData"]["stopped_by"]
    assert stop["error"] == "ZeroDivisionError" and stop["what"] == "the kernel's own"
    assert stop["where"].endswith(f"k.py:{line}")


SOFTMAX = os.path.join(ROOT, "tests", "pto_corpus", "v_softmax_rows_a3.pto")
TWO_SCENARIOS = '''
import numpy as np
import ptopipe
from ptopipe.isa import *


def vec(x, out):
    t = Tile(TileType.Vec, float32, 1, 8, addr=0)
    TLOAD(t, x)
    TSTORE(out, t)


def make_args(rng):
    return dict(x=rng.standard_normal((1, 8)).astype(np.float32), out=np.zeros((1, 8), np.float32))


SCENARIO = ptopipe.Scenario("first", None, (vec, None), make_args, lambda a: {"out": a["x"]})
OTHER = ptopipe.Scenario("second", None, (vec, None), make_args, lambda a: {"out": a["x"]})
'''


@pytest.mark.parametrize("kind", ["py", "variants", "pto"])
def test_each_run_of_a_command_writes_its_own_report(kind, tmp_path, capsys, monkeypatch):
    """A file of two Scenarios (or a .pto of two top-level functions, run in turn) gets a report
    per run, named as --variant all names them - not one report each written over the last -
    and ``trace`` of such a .pto writes a trace per function instead of refusing its ``-o``
    as if it were ``--output NAME=FILE.npy``.  ``run`` and ``trace`` name the files of one
    run alike (``trace`` left the scenario out of a lone Scenario's, ``run --report`` not)."""
    if kind == "py":
        k = tmp_path / "k.py"
        k.write_text(TWO_SCENARIOS)
        cmds, want = [["run", str(k), "--report", "r.html"]], ["r.first.default.html", "r.second.default.html"]
    elif kind == "variants":
        k = tmp_path / "k.py"
        k.write_text(TWO_SCENARIOS.split("OTHER =")[0].replace('lambda a: {"out": a["x"]})',
                                                              'lambda a: {"out": a["x"]}, {"u": {}, "w": {}})'))
        cmds = [["run", str(k), "--variant", "all", "--report", "r.html"],
                ["trace", str(k), "--variant", "all", "-o", "t.json", "--report", "q.html"]]
        want = [f"{f}.first.{v}.{ext}" for f, ext in (("r", "html"), ("t", "json"), ("q", "html")) for v in "uw"]
    else:
        text = open(SOFTMAX).read()
        start, end = text.index("  func.func"), text.rindex("}")
        k = tmp_path / "k.pto"
        k.write_text(text[:end] + text[start:end].replace("@softmax_rows", "@softmax_again") + "}\n")
        cmds = [["run", str(k), "--report", "r.html"], ["trace", str(k), "-o", "t.json", "--report", "q.html"]]
        want = ["r.softmax_rows.html", "r.softmax_again.html", "t.softmax_rows.json", "t.softmax_again.json",
                "q.softmax_rows.html", "q.softmax_again.html"]
    monkeypatch.chdir(tmp_path)         # (the reports' names are relative: they go where the command runs)
    for cmd in cmds:
        code = cli_main(cmd)
        out, err = capsys.readouterr()
        assert code == 0, out + err
    assert sorted(os.listdir(tmp_path)) == sorted(want + [k.name]), os.listdir(tmp_path)


def test_a_coverage_gate_with_no_mutant_fails(capsys):
    mixed = os.path.join(ROOT, "examples", "mixed", "s1_cv_split.py")
    assert cli_main(["mutate", mixed, "--fail-under", "90", "--workers", "1", "--schedules", "0"]) == 1
    assert "no protocol statement to mutate" in capsys.readouterr().out
    assert cli_main(["mutate", mixed, "--workers", "1", "--schedules", "0"]) == 0


def test_mutate_of_a_file_importing_its_kernels_names_the_file_that_defines_them(tmp_path, capsys):
    # the Scenario here, its kernels in the example: no statement of this file to mutate, and
    # the message says where the kernels are, not that they have no TPUSH
    wrapper = tmp_path / "wrap.py"
    wrapper.write_text(f"import sys\nsys.path.insert(0, {os.path.dirname(S1)!r})\n"
                       "from s1_cv_split import SCENARIO\n")
    assert cli_main(["mutate", str(wrapper), "--workers", "1", "--schedules", "0"]) == 0
    out = capsys.readouterr().out
    assert "its Scenario's kernels are defined in " in out and "s1_cv_split.py, and mutate edits" in out


@pytest.mark.parametrize("command", ["run", "check", "compile", "sweep", "mutate"])
def test_platform_takes_ptoas_spelling_a3(command, capsys):
    from ptopipe.cli import build_parser
    args = build_parser().parse_args([command, S1, "--platform", "a3"])
    assert args.platform == "a2a3"
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    assert "{a2a3,a3,a5}" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["check", "mutate"])
def test_runs_engine_given_to_a_checking_commands_engine_names_run_engine(command, capsys):
    # (it was "invalid choice: 'periodic' (choose from 'local', 'ray')", where run takes --engine periodic)
    with pytest.raises(SystemExit) as e:
        cli_main([command, S1, "--engine", "periodic"])
    assert e.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "argument --engine: 'periodic' is an execution engine, which this command takes as --run-engine "
        "periodic (its --engine is where the work runs: local or ray)")


@pytest.mark.parametrize("command", ["run", "check", "trace", "sweep"])
def test_every_command_that_makes_inputs_takes_data_seed(command):
    # (the README's `--data-seed` changes make_args' rng; trace's help called --seed "the same as
    # --data-seed" and trace and sweep refused it)
    from ptopipe.cli import build_parser
    args = build_parser().parse_args([command, S1, "--data-seed", "7"])
    assert (args.data_seed if command == "check" else args.seed) == 7


@pytest.mark.parametrize("argv,option", [
    (["check", "{boom}", "--junit", "{missing}/j.xml"], "--junit"),
    (["check", "{boom}", "{boom}", "--junit", "{missing}/j.xml"], "--junit"),
    (["trace", "{boom}", "--variant", "all", "-o", "{missing}/t.json"], "--output"),
    (["trace", "{boom}", "--report", "{missing}/r.html"], "--report"),
    (["run", "{boom}", "--png", "{missing}/r.png"], "--png"),
    (["sweep", "{boom}", "--param", "depth=1,2", "--plot", "{readonly}"], "--plot"),
    (["run", "{pto}", "--output", "p={missing}/p.npy"], "--output"),
])
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(argv, option, tmp_path, capsys):
    """(a kernel file that raises at import: any work before the refusal would end in that)"""
    boom = tmp_path / "boom.py"
    boom.write_text("raise RuntimeError('the kernel file was loaded')\nSCENARIO = None\n")
    readonly = tmp_path / "plot.png"
    readonly.write_text("")
    readonly.chmod(0o444)
    pto = os.path.join(ROOT, "tests", "pto_corpus", "v_softmax_rows_a3.pto")
    fill = dict(boom=boom, missing=tmp_path / "no_such_dir", readonly=readonly, pto=pto)
    assert cli_main([a.format(**fill) for a in argv]) == 1
    out = capsys.readouterr()
    assert out.err.startswith("error: ConfigError: cannot write ") and f"at option {option}" in out.err, out.err
    assert out.out == "" and "RuntimeError" not in out.err


@pytest.mark.parametrize("argv,option", [
    (["run", "{boom}", "--report", "{boom}"], "--report"),
    (["run", "{boom}", "--png", "{boom}"], "--png"),
    (["trace", "{boom}", "-o", "{boom}"], "--output"),
    (["check", "{boom}", "--junit", "{boom}"], "--junit"),
    (["check", "{tmp}", "{boom}", "--junit", "{boom}"], "--junit"),
    (["compile", "{boom}", "-o", "{boom}"], "--output"),
])
def test_an_output_naming_the_kernel_file_is_refused_and_the_source_kept(argv, option, tmp_path, capsys):
    # `run k.py --report k.py` wrote the HTML report over the kernel's source
    boom = tmp_path / "boom.py"
    src = "raise RuntimeError('the kernel file was loaded')\nSCENARIO = None\n"
    boom.write_text(src)
    assert cli_main([a.format(boom=boom, tmp=tmp_path) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: ConfigError: {option} {boom} is the input file ") and f"at option {option}" in err, err
    assert boom.read_text() == src


@pytest.mark.parametrize("command", ["run", "check", "trace"])
def test_a_misspelled_option_is_refused_by_its_command_with_the_option_it_resembles(command, capsys):
    with pytest.raises(SystemExit) as e:
        cli_main([command, S1, "--platfrom", "a5"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: ptopipe {command} " in err
    assert "unrecognized arguments: --platfrom a5; --platfrom: did you mean --platform?" in err


@pytest.mark.parametrize("argv,said", [
    (["check", S1, "--output", "out=o.npy"], "--output is an option of run, trace and compile, not of check"),
    (["run", S1, "--schedules", "5"], "--schedules is an option of check and mutate, not of run"),
    (["mutate", S1, "--input", "a=a.npy", "--input", "b=b.npy"], "--input is an option of run, check and trace, not of mutate"),
])
def test_another_commands_option_is_said_to_be_that_commands(argv, said, capsys):
    # it was "--output: did you mean --input?", and "--input: did you mean --variant?" once per --input
    with pytest.raises(SystemExit) as e:
        cli_main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith(said) and err.count(said) == 1 and "did you mean" not in err, err


@pytest.mark.parametrize("before", [["--werror"], ["--platform", "a5"], ["--timeout=5"]])
def test_a_commands_option_given_before_the_command_word_is_said_to_go_after_it(capsys, before):
    # (with a value, the top level would take the value for the command word: "invalid choice: 'a5'")
    with pytest.raises(SystemExit) as e:
        cli_main([*before, "run", S1])
    assert e.value.code == 2
    err = capsys.readouterr().err
    name = before[0].split("=")[0]
    assert "usage: ptopipe [-h]" in err and f"{name} is run's: put it after 'run'" in err, err
    assert "did you mean" not in err and "invalid choice" not in err


@pytest.mark.parametrize("argv,option,what", [
    (["trace", "{boom}", "-o", "-"], "--output -", "trace does not write the Chrome trace"),
    (["trace", "{boom}", "--report", "-"], "--report -", "trace does not write the HTML report"),
    (["run", "{boom}", "--report", "-"], "--report -", "run does not write the HTML report"),
    (["run", "{boom}", "--png", "-"], "--png -", "run does not write the PNG swimlane"),
    (["run", "{pto}", "--output", "out=-"], "--output out=-", "run does not write the arrays"),
    (["check", "{boom}", "--junit", "-"], "--junit -", "check does not write the JUnit XML"),
    (["sweep", "{boom}", "--param", "depth=1,2", "--plot", "-"], "--plot -", "sweep does not write the plot"),
])
def test_an_output_named_dash_is_refused_where_stdout_is_the_commands_report(argv, option, what, tmp_path,
                                                                              capsys, monkeypatch):
    # `-o -` wrote a file named '-' in the working directory
    monkeypatch.chdir(tmp_path)
    boom = tmp_path / "boom.py"
    boom.write_text("raise RuntimeError('the kernel file was loaded')\nSCENARIO = None\n")
    pto = os.path.join(ROOT, "tests", "pto_corpus", "v_softmax_rows_a3.pto")
    assert cli_main([a.format(boom=boom, pto=pto) for a in argv]) == 1
    out = capsys.readouterr()
    name = option.split()[0]
    assert out.err.splitlines()[:2] == [f"error: ConfigError: {option}: {what} to stdout (its stdout is the "
                                        "command's own report)", f"  at option {name}"], out.err
    assert out.out == "" and not (tmp_path / "-").exists()


def test_compile_output_dash_is_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli_main(["compile", DSL, "--emit", "pto", "-o", "-"]) == 0
    printed = capsys.readouterr().out
    assert not (tmp_path / "-").exists()
    assert cli_main(["compile", DSL, "--emit", "pto"]) == 0
    assert printed == capsys.readouterr().out and "pto.tpush" in printed


@pytest.mark.parametrize("options,named", [
    (["--schedules", "50", "--seed", "3"], "--schedules, --seed"),
    (["--schedules", "20"], "--schedules"),              # (the default, given: still not used)
    (["--explore", "pct", "--depth", "2"], "--explore, --depth"),
    (["--data-seed", "1", "--launches", "2", "--until-cycle", "100"], "--data-seed, --launches, --until-cycle"),
    (["--replay", "pct:7:3:120"], "--replay"),
])
def test_check_static_refuses_the_options_of_a_run(options, named, capsys):
    # they were silently ignored: a PASS that looked like it honoured --schedules 50
    assert cli_main(["check", "--static", DSL, *options]) == 1
    out = capsys.readouterr()
    assert out.err.splitlines() == [
        f"error: ConfigError: {named}: check --static does not run the kernel, so no schedule, input data "
        "or run option applies", f"  at option {options[0]}",
        f"  fix: drop {named}, or drop --static to run the kernel under explored schedules"], out.err
    assert out.out == ""
