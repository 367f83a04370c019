"""``check`` of a kernel library on its engines: a local process pool and a real Ray cluster
(``ray start --head`` on a free port plus a second worker node, reached with ``--address``)
give the same report as checking the files one by one in this process - and ``mutate``
the same coverage; a file whose worker dies is retried, then reported as lost while the
other files pass.

The Ray tests need the ``ray`` extra, which the test command leaves out (installing Ray and
starting its two-node cluster cost a tenth of the suite's CPU budget): they run after
``pip install -e ".[test,ray]"`` and skip without it, as the tests of the other optional tools
(ptoas, pto-isa) do without theirs."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from ptopipe.cli import main as cli_main

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
LIB = [os.path.join(ROOT, "examples", "scenarios", f) for f in
       ("s1_cv_split.py", "s3_vc_dequant.py")] + [os.path.join(ROOT, "examples", "misuse", "m1_no_tfree.py")]

DIES = '''import os, signal
from ptopipe import Scenario


def make_args(rng):
    os.kill(os.getpid(), signal.SIGKILL)        # the worker process dies


SCENARIO = Scenario("dies", lambda: None, None, make_args, lambda a, **_: {}, {"default": {}})
'''


def _check(argv, capsys):
    code = cli_main(["check", *LIB, "--schedules", "2", *argv])
    out = capsys.readouterr().out
    return code, out[out.index("file "):]


@pytest.fixture(scope="module")
def one_by_one():
    import io
    from contextlib import redirect_stdout, redirect_stderr
    buf = io.StringIO()
    with redirect_stdout(buf), redirect_stderr(io.StringIO()):
        code = cli_main(["check", *LIB, "--schedules", "2", "--workers", "1"])
    out = buf.getvalue()
    return code, out[out.index("file "):]


def test_a_process_pool_gives_the_one_by_one_report(one_by_one, capsys):
    assert one_by_one[0] == 1 and "1 of 3 failed" in one_by_one[1]
    assert _check(["--workers", "2"], capsys) == one_by_one


def test_a_dying_worker_is_retried_then_reported_and_the_rest_go_on(tmp_path, capsys):
    dies = tmp_path / "dies.py"
    dies.write_text(DIES)
    code = cli_main(["check", str(dies), LIB[0], "--schedules", "1", "--workers", "2"])
    captured = capsys.readouterr()
    table = captured.out[captured.out.index("file "):].splitlines()
    rows = {ln.split()[0]: ln for ln in table[1:-1]}
    assert code == 1 and "FAIL WorkerLost" in rows[str(dies)] and "PASS" in rows[LIB[0]]
    assert "died, and again when retried" in captured.err


# -- Ray -------------------------------------------------------------------------------
def test_a_check_too_short_for_ray_says_it_ran_here_and_did_not_contact_the_cluster(capsys, monkeypatch):
    """A single file's check whose schedules take less than a pool's start-up runs them in
    this process, whatever --engine says: with --engine ray it says so, naming the address
    it did not contact (nothing listens there); a local engine says nothing."""
    _ray_cli()                           # (without Ray, --engine ray is refused before any work)
    monkeypatch.delenv("PTOPIPE_ENGINE", raising=False)     # (the periodic run engine explores none)
    assert cli_main(["check", LIB[0], "--schedules", "3", "--engine", "ray", "--address", "127.0.0.1:1"]) == 0
    err = capsys.readouterr().err
    assert ("its 3 explored schedules ran in this process: too few to be worth the Ray cluster's start-up "
            "(--engine ray --address 127.0.0.1:1 was not contacted") in err
    assert cli_main(["check", LIB[0], "--schedules", "3"]) == 0
    assert "ran in this process" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["check", LIB[0], "--schedules", "3"], ["check", *LIB],
                                  ["mutate", LIB[0], "--schedules", "0"]])
def test_an_address_without_the_ray_engine_is_refused_before_any_work(argv, capsys):
    """``--address`` is the Ray cluster's: without ``--engine ray`` it was left unused when the
    work stayed in this process (a short check), silently."""
    assert cli_main([*argv, "--address", "127.0.0.1:1"]) == 1
    cap = capsys.readouterr()
    assert cap.err == ("error: ConfigError: --address names a Ray cluster: it needs --engine ray\n"
                       "  at option --address\n  fix: add --engine ray, or drop --address\n") and cap.out == ""


def _ray_cli():
    try:
        import ray  # noqa: F401
    except ImportError:
        pytest.skip('needs Ray: pip install -e ".[test,ray]"')
    exe = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes_of(tag: str) -> set:
    """The processes whose command line names ``tag`` (a Ray cluster's own temporary
    directory: its servers and workers) and their descendants (the agents that rename
    themselves), from /proc."""
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            procs[int(d)] = (cmd, ppid)
    mine = {p for p, (cmd, _) in procs.items() if tag in cmd and p != os.getpid()}
    while True:
        more = {p for p, (_, pp) in procs.items() if pp in mine and p not in mine}
        if not more:
            return mine
        mine |= more


def _stop_cluster(exe: str, env: dict, temp_dir: str) -> None:
    """Stop the Ray cluster started with ``temp_dir`` - only it (``ray stop`` would stop every
    Ray process of the machine's user, another program's cluster too)."""
    if not os.path.isdir("/proc"):
        subprocess.run([exe, "stop", "--force"], env=env, capture_output=True, timeout=120)
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        procs = _processes_of(temp_dir)
        if not procs:
            return
        for p in procs:                     # (killed at once, as ray stop --force does)
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _ray_version() -> tuple:
    """(major, minor) of the installed Ray, () without it."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return tuple(int(p) for p in version("ray").split(".")[:2] if p.isdigit())
    except PackageNotFoundError:
        return ()


#: each node without a log monitor where the installed Ray can leave it out (``ray start
#: --include-log-monitor``, Ray 2.41 on): it streams the workers' output to the drivers, which
#: here ask for none (log_to_driver=False); each was a Python process of its own, about a
#: second of CPU for the two
_QUIET_NODE = ["--include-log-monitor=false"] if _ray_version() >= (2, 41) else []


@pytest.fixture(scope="module")
def ray_cluster():
    """A two-node Ray cluster on this machine: a head and a worker node, one CPU each, in a
    temporary directory of its own (by which it is stopped)."""
    exe = _ray_cli()
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    old = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"            # (the driver: this process)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    temp_dir = tempfile.mkdtemp(prefix="rayt", dir="/tmp" if os.path.isdir("/tmp") else None)  # (short: socket paths)
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats", f"--temp-dir={temp_dir}",
              *_QUIET_NODE]
    try:
        # (no autoscaler monitor either: the cluster's two nodes are all it ever has)
        subprocess.run([exe, "start", "--head", f"--port={port}", "--include-dashboard=false", "--no-monitor", *common],
                       env=env, check=True, capture_output=True, timeout=180)
        subprocess.run([exe, "start", f"--address={address}", *common], env=env, check=True,
                       capture_output=True, timeout=180)
        yield address
    finally:
        _stop_cluster(exe, env, temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        if old is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old


def test_ray_gives_the_one_by_one_report(ray_cluster, one_by_one, capsys):
    assert _check(["--engine", "ray", "--address", ray_cluster], capsys) == one_by_one


def test_ray_reports_a_dying_worker_after_its_retry(ray_cluster, tmp_path, capsys):
    dies = tmp_path / "dies.py"
    dies.write_text(DIES)
    t = time.monotonic()
    code = cli_main(["check", str(dies), LIB[0], "--schedules", "1", "--engine", "ray",
                     "--address", ray_cluster])
    captured = capsys.readouterr()
    rows = {ln.split()[0]: ln for ln in captured.out[captured.out.index("file "):].splitlines()[1:-1]}
    assert code == 1 and "FAIL WorkerLost" in rows[str(dies)] and "PASS" in rows[LIB[0]], \
        (captured.out, captured.err, time.monotonic() - t)


def test_mutate_on_ray_gives_the_local_report(ray_cluster, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    s1 = os.path.join("examples", "scenarios", "s1_cv_split.py")
    argv = ["mutate", s1, "--variant", "default", "--schedules", "1", "--json"]
    assert cli_main([*argv, "--workers", "1"]) == 0
    local = capsys.readouterr().out
    assert cli_main([*argv, "--engine", "ray", "--address", ray_cluster]) == 0
    assert capsys.readouterr().out == local and '"caught": 11' in local


def test_an_unreachable_cluster_is_one_clear_error(capsys):
    _ray_cli()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    code = cli_main(["check", *LIB[:2], "--engine", "ray", "--address", f"127.0.0.1:{_free_port()}"])
    err = capsys.readouterr().err
    assert code == 1 and "cannot reach the Ray cluster" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["check", os.path.join("examples", "scenarios", "s1_cv_split.py")],
                                  ["check", *LIB[:2]]])
def test_engine_ray_without_ray_is_refused_before_any_run(argv, capsys, monkeypatch):
    """Whether or not the command has units enough to hand to Ray, asking for it without it
    installed is the same ConfigError, before anything runs."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert cli_main([*argv, "--engine", "ray"]) == 1
    out = capsys.readouterr()
    assert "--engine ray needs Ray, which is not installed" in out.err and "PASS" not in out.out + out.err
