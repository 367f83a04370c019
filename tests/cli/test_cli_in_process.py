"""A caller that runs the command in its own process again and again (a tool, the tests)
pays for the argument parser once: ``main`` builds it once per process, and each call
parses its own arguments afresh (nothing of one command reaches the next)."""
from ptopipe.cli import build_parser, main


def test_main_builds_its_parser_once_and_parses_each_command_afresh(monkeypatch, capsys):
    built = []
    monkeypatch.setattr("ptopipe.cli.build_parser", lambda: built.append(1) or build_parser())
    for _ in range(3):
        assert main(["--include"]) == 0
    assert len(built) <= 1, f"the parser was built {len(built)} times for 3 commands"
    capsys.readouterr()
    assert main([]) == 2                    # no command: the usage, not the --include of before
    assert capsys.readouterr().out.startswith("usage: ptopipe")
