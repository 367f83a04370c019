"""What a user sees is the same whatever the command: a --json command's stdout is its JSON
report only (the kernel's prints go to stderr)."""
import json
import os

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
