"""Ctrl-C at several points of the tag and write phases: exactly one line on stderr —
nothing from the JVM, py4j, PySpark or the Python workers — exit 130, and the resumed run
completes with its progress bar full. In process, on the session's Spark (a SIGINT to
the main thread is what a terminal's Ctrl-C delivers), so no JVM starts per point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import indexbench.driver as driver
from indexbench import cli
from indexbench.interrupt import MESSAGE

SIZES = ["--initial-records", "4000", "--batches", "2", "--batch-size", "1500"]


def _interrupt_in(monkeypatch, name: str, delay: float, call: int = 2) -> None:
    """Ctrl-C ``delay`` seconds into the ``call``-th call of ``driver.<name>`` (batch 1's:
    its tag reads the base files batch 0 wrote)."""
    original = getattr(driver, name)
    calls: list[int] = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            main = threading.main_thread().ident
            threading.Timer(delay, signal.pthread_kill, (main, signal.SIGINT)).start()
        return original(*args, **kwargs)

    monkeypatch.setattr(driver, name, wrapper)


# new_counters: the start of the tag phase (then bloom's footer scan, its toPandas, the
# candidate files' key reads); write_file_groups: the write phase's merge tasks
@pytest.mark.parametrize("phase, delay, resume", [
    ("new_counters", 0.0, False), ("new_counters", 0.4, False),
    ("write_file_groups", 0.0, False), ("write_file_groups", 0.3, True),
])
def test_ctrl_c_in_the_tag_and_write_phases_prints_one_line(spark, tmp_path, capfd,
                                                            monkeypatch, phase, delay,
                                                            resume):
    out = str(tmp_path / "o")
    argv = ["run", "--index", "bloom", *SIZES, "--out", out]
    with monkeypatch.context() as m:
        _interrupt_in(m, phase, delay)
        assert cli.main(argv) == 130
    time.sleep(0.5)  # what the cancelled tasks would print has arrived by now
    err = capfd.readouterr().err
    assert err.strip().splitlines() == [MESSAGE]
    if resume:  # the session still works; batch 1 again (its instant rolled back by the
        # interrupted run, or by this one), and the bar counts batch 0 too: it ends full
        assert cli.main(argv) == 0
        got = capfd.readouterr()
        assert "resuming at batch 1" in got.out and "3/3" in got.out, got.out
        assert got.err == ""


def test_ctrl_c_while_parsing_is_the_one_line(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [MESSAGE]


def _children(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            with open(f"/proc/{entry}/stat") as f:
                if entry.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return out


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_ctrl_c_reaching_sim_workers_is_the_one_line(tmp_path):
    """``sim --jobs 2``: the terminal's Ctrl-C reaches the workers too (one process
    group); they ignore it, the command terminates them and prints the one line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexbench", "sim", "--indexes", "bloom,simple-bucket",
         "--jobs", "2", "--initial-records", "20000000", "--batches", "1", "--batch-size",
         "1000", "--out", str(tmp_path / "o")], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 30
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # until both workers exist (spawn: a fresh interpreter each)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 10  # terminated, not waited for
    assert proc.returncode == 130
    assert err.decode().strip().splitlines() == [MESSAGE]


def _processes_with(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (the command and its children:
    the Spark JVM, its Python workers)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if marker.encode() in f.read():
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def _jvm_of(marker: str) -> bool:
    for pid in _processes_with(marker):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"java" in f.read().split(b"\0")[0]:
                    return True
        except OSError:
            pass
    return False


@pytest.mark.spark
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_ctrl_c_while_the_jvm_starts_leaves_no_jvm_behind(tmp_path):
    """A terminal's Ctrl-C (the whole process group) as soon as the JVM process exists,
    while it starts: held until it has started, then the one line; no JVM outlives the
    command."""
    import uuid

    marker = f"INDEXBENCH_TEST_MARKER=jvm-start-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if k != "INDEXBENCH_VERBOSE"}
    env[marker.split("=")[0]] = marker.split("=")[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexbench", "run", "--index", "simple-bucket",
         "--initial-records", "500", "--batches", "1", "--batch-size", "100",
         "--out", str(tmp_path / "o")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while not _jvm_of(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _jvm_of(marker), "the JVM did not start"
    os.killpg(proc.pid, signal.SIGINT)  # before it is up: its start takes seconds
    try:
        _, err = proc.communicate(timeout=120)  # an orphan JVM would hold the pipes open
        assert proc.returncode == 130
        assert err.decode().strip().splitlines() == [MESSAGE]
        deadline = time.monotonic() + 20
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.5)  # the JVM exits once it reads its stdin's end
        assert _processes_with(marker) == []
    finally:
        for pid in _processes_with(marker):  # this test's processes only
            os.kill(pid, signal.SIGKILL)
