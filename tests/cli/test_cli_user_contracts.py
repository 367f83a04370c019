"""What a user sees is the same whatever the command: a --json command's stdout is its JSON
report only (the kernel's prints go to stderr)."""
import json
import os

import pytest

from ptopipe.cli import main as cli_main


ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
S1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")


def _printing_kernel(tmp_path) -> str:
    """examples' s1 with a Vector core that prints."""
    src = open(S1).read().replace("    sub = get_subblockid()\n",
                                  "    print('hello from vector')\n    sub = get_subblockid()\n", 1)
    assert "hello from vector" in src
    path = tmp_path / "printer.py"
    path.write_text(src)
    return str(path)


def test_mutate_json_stdout_is_the_report_only(tmp_path, capsys):
    k = _printing_kernel(tmp_path)
    assert cli_main(["mutate", k, "--json", "--workers", "1", "--schedules", "0", "--variant", "f32_ud_d1_m16"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["verdicts"]
    assert "hello from vector" in cap.err


PARAMS = os.path.join(ROOT, "tests", "pto_corpus", "c_mm_param_offsets_a5.pto")   # 3 not-proven warnings
ITER = os.path.join(ROOT, "tests", "pto_corpus", "c_mm_iter_args_a3.pto")   # a static and a run warning
M1 = os.path.join(ROOT, "examples", "misuse", "m1_no_tfree.py")   # (pto-isa: a portability warning)


@pytest.mark.parametrize("kernel,extra", [(PARAMS, []), (ITER, []), (M1, ["--protocol", "pto-isa"])])
@pytest.mark.parametrize("command", ["run", "check", "trace"])
def test_every_warning_shown_fails_under_werror(command, kernel, extra, tmp_path, capsys):
    cmd = [command, kernel, *extra] + (["-o", str(tmp_path / "t.json")] if command == "trace" else []) \
        + (["--schedules", "0"] if command == "check" else [])
    assert cli_main(cmd) == 0
    shown = capsys.readouterr()
    n = (shown.out + shown.err).count("warning: ")
    assert n
    assert cli_main(cmd + ["--werror"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "--werror" in out


def test_static_check_warnings_fail_under_werror_and_count_in_the_library_summary(tmp_path, capsys):
    assert cli_main(["check", "--static", PARAMS]) == 0
    # no pipes, but the bounds were checked: the verdict says they are not proven, not "nothing to verify"
    out = capsys.readouterr().out
    assert "no cross-core pipes; not proven for all values (the warnings above)" in out
    assert "nothing to verify statically" not in out
    assert cli_main(["check", "--static", PARAMS, "--range", "row0=0..32", "--range", "nb=0..3"]) == 0
    out = capsys.readouterr().out
    assert "warning" not in out and "its GM accesses are in bounds with row0 in 0..32, nb in 0..3" in out
    assert cli_main(["check", "--static", PARAMS, "--werror"]) == 1
    assert "errors under --werror" in capsys.readouterr().out
    assert cli_main(["check", PARAMS, "--schedules", "0", "--junit", str(tmp_path / "j.xml")]) == 0
    assert "1 passed with warnings" in capsys.readouterr().out


def test_a_dsl_kernels_static_warnings_are_warnings_and_fail_under_werror(tmp_path, capsys, monkeypatch):
    # (a DSL file's were printed as notes, at the absolute path, and --werror let them pass)
    with open(os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py"), encoding="utf-8") as f:
        src = f.read()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(src.replace("            pl.TFREE(pipe_buf)\n", ""))
    pop = next(k for k, line in enumerate(src.splitlines(), 1) if "pl.TPOP(" in line)
    assert cli_main(["check", "--static", "k.py", "--protocol", "pto-isa"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(e.startswith(f"warning: k.py:{pop}:13: the TPOP at line {pop} ") for e in err), err
    assert cli_main(["check", "--static", "k.py", "--protocol", "pto-isa", "--werror"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL ") and out.rstrip().endswith("1 warning(s), errors under --werror"), out


@pytest.mark.parametrize("kernel,option", [
    ("tests/pto/c2v_split_a3.pto", ["--input", "zz=5"]),
    ("tests/pto/c2v_split_a3.pto", ["--range", "zz=1..5"]),
    ("examples/dsl/s4_both_ways.py", ["--range", "zz=1..64"]),
])
def test_static_check_refuses_a_parameter_the_kernel_does_not_have(kernel, option, capsys):
    assert cli_main(["check", "--static", os.path.join(ROOT, kernel), *option]) == 1
    cap = capsys.readouterr()
    assert f"{option[0]} zz: the kernel has no parameter 'zz'" in cap.err and "PASS" not in cap.out


CPP_ADD = os.path.join(ROOT, "tests", "cpp", "cpp_kernels", "c2v_add.cpp")


@pytest.mark.parametrize("command", ["run", "check", "trace"])
def test_a_cpp_kernel_refuses_an_input_it_has_no_parameter_for(command, tmp_path, capsys):
    """As a .pto kernel does: a misspelt name is refused before the build, not left unused."""
    import numpy as np
    np.save(tmp_path / "b.npy", np.zeros((32, 32), np.float32))
    extra = ["-o", str(tmp_path / "t.json")] if command == "trace" else []
    assert cli_main([command, CPP_ADD, "--input", f"bais={tmp_path / 'b.npy'}", *extra]) == 1
    err = capsys.readouterr().err
    assert "error: ConfigError: --input bais: the kernel has no parameter 'bais'" in err
    assert "fix: parameters: a, b, bias, fifo, out" in err


@pytest.mark.parametrize("command", ["run", "check", "trace"])
def test_a_cpp_kernel_names_every_parameter_without_an_input_at_once(command, tmp_path, capsys):
    """Before the build, as one error - not one parameter per attempt, each after a build and
    the first instructions of a run (a C++ pointer has no shape to make seeded data of)."""
    import numpy as np
    np.save(tmp_path / "a.npy", np.zeros((32, 32), np.float32))
    extra = ["-o", str(tmp_path / "t.json")] if command == "trace" else []
    assert cli_main([command, CPP_ADD, "--input", f"a={tmp_path / 'a.npy'}", "--input", "b=7", *extra]) == 1
    err = capsys.readouterr().err
    assert ("error: ConfigError: no --input for the kernel parameters fifo, bias, out of c2v_add.cpp: a C++ "
            "kernel's parameters take the arrays and numbers given\n  at option --input\n  fix: give --input "
            "fifo=FILE.npy --input bias=FILE.npy --input out=FILE.npy\n") in err, err


@pytest.mark.parametrize("kernel", ["tests/pto/c2v_split_a3.pto", CPP_ADD])
def test_an_input_given_twice_is_refused(kernel, tmp_path, capsys):
    assert cli_main(["run", os.path.join(ROOT, kernel), "--input", "a=1", "--input", "a=2"]) == 1
    err = capsys.readouterr().err
    assert "error: ConfigError: --input a is given twice (a=1, a=2)" in err and "fix: give --input a=... once" in err


def test_run_refuses_a_range_of_a_parameter_the_kernel_does_not_have(capsys):
    assert cli_main(["run", os.path.join(ROOT, "tests/pto/c2v_split_a3.pto"), "--range", "zz=1..5"]) == 1
    assert "--range zz: the kernel has no parameter 'zz'" in capsys.readouterr().err


@pytest.mark.parametrize("command,option", [
    *((c, ["--timeout", t]) for c in ("run", "mutate") for t in ("0", "-1", "nan")),
    ("run", ["--until-cycle", "0"])])
def test_a_bound_no_run_can_use_is_refused_naming_its_option(command, option, capsys):
    assert cli_main([command, S1, *option]) == 1
    err = capsys.readouterr().err
    assert f"at option {option[0]}" in err and "math.inf" not in err and "timeout=" not in err


def test_check_of_a_cpp_kernel_missing_an_input_fails_before_it_ran(capfd):
    """(refused before the build and any run: no schedule's finding)"""
    assert cli_main(["check", os.path.join(ROOT, "tests/cpp/cpp_kernels/c2v_add.cpp"), "--schedules", "0"]) == 1
    cap = capfd.readouterr()
    assert cap.err.startswith("error: ConfigError: no --input for the kernel parameters a, b, fifo, bias, out")
    assert "under the default schedule" not in cap.out + cap.err and "every run reproduces it" not in cap.err


@pytest.mark.parametrize("extra", [[], ["--static"], ["--variant", "no_such_variant"]])
def test_single_file_check_json_entries_name_their_file_as_a_librarys_do(extra, capsys):
    cli_main(["check", S1, "--schedules", "0", "--variant", "f32_ud_d1_m16", "--json", *extra])
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["file"] == S1 for r in rows)


@pytest.mark.parametrize("kernel", ["tests/pto/c2v_split_a3.pto", "examples/dsl/s1_cv_split.py"])
def test_print_after_all_prints_each_pass_on_stdout_and_o_gets_the_result_only(kernel, tmp_path, capsys):
    out = tmp_path / "r.txt"
    assert cli_main(["compile", os.path.join(ROOT, kernel), "--print-after-all", "-o", str(out)]) == 0
    assert "IR Dump After verify-pipes" in capsys.readouterr().out
    assert "IR Dump After" not in out.read_text() and out.read_text()
