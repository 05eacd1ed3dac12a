"""The table writer lock under contention (issue #14 point 3; no Spark).

Exactly one holder whatever the lock file holds, a dead writer's lock free at once,
every refusal a one-line ConcurrentWriterError."""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing as mp
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pyarrow.fs as pafs
import pytest

from tableformat import lock as lk
from tableformat.errors import ConcurrentWriterError, IndexBenchError
from tableformat.table import LOCK, Table, TableConfig

PROCS = 4
TRIALS = 200  # every other one with a pre-seeded lock file, the four kinds in turn
SEEDS = ("empty", "corrupt", "dead", "foreign")
FOREIGN = {"host": "elsewhere.invalid", "pid": 1, "t": 0.0}
REFUSAL = re.compile(
    r"table \S+ is being written by (pid (?P<pid>\d+) on (?P<host>\S+) \(since "
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)|another process \(holder unknown\)); "
    r"concurrent writers are not supported")


def config() -> TableConfig:
    return TableConfig(name="t", record_key_field="key", partition_field="dt",
                       ordering_field="ts", index_name="bloom", index_type="BLOOM",
                       index_params={})


def lock_file(uri: str) -> str:
    return os.path.join(uri, ".hoodie", LOCK)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def seed(path: str, kind: str, dead: int) -> None:
    """Leave the lock file as a crash, an older version or another host would."""
    if kind == "none":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    data = {"empty": b"", "corrupt": b"\x00{not json",
            "dead": json.dumps({"host": socket.gethostname(), "pid": dead, "t": 0.0}).encode(),
            "foreign": json.dumps(FOREIGN).encode()}[kind]
    with open(path, "wb") as f:
        f.write(data)


def contend(i: int, uri: str, kinds: list[str], dead: int, barrier, results) -> None:
    """One racer: per trial (process 0 seeds the file) acquire once, wait for all, release."""
    table = Table(uri)
    out: list[tuple[str, str]] = []
    for kind in kinds:
        if i == 0:
            seed(lock_file(uri), kind, dead)
        barrier.wait()
        try:
            table.acquire_writer_lock()
            got = ("held", "")
        except Exception as e:  # the type is what the test checks
            got = (type(e).__name__, str(e))
        barrier.wait()
        try:
            table.release_writer_lock()
        except Exception as e:
            got = (f"{got[0]}, release: {type(e).__name__}", got[1])
        barrier.wait()
        out.append(got)
    results.put((i, os.getpid(), out))


def race(uri: str, kinds: list[str]) -> tuple[list[int], list[list[tuple[str, str]]]]:
    """Run the trials in PROCS spawned processes: (pids, outcomes[trial][process])."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(PROCS, timeout=60), ctx.Queue()
    dead = dead_pid()
    procs = [ctx.Process(target=contend, args=(i, uri, kinds, dead, barrier, results))
             for i in range(PROCS)]
    for p in procs:
        p.start()
    try:
        got = sorted(results.get(timeout=120) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    pids = [pid for _, pid, _ in got]
    return pids, [[out[k] for _, _, out in got] for k in range(len(kinds))]


def trial_kinds(n: int) -> list[str]:
    return ["none" if k % 2 == 0 else SEEDS[(k // 2) % len(SEEDS)] for k in range(n)]


def test_exactly_one_holder_under_contention(tmp_path):
    uri = str(tmp_path / "t")
    Table.create_or_open(uri, config())
    kinds = trial_kinds(TRIALS)
    pids, trials = race(uri, kinds)
    wrong = Counter((kind, sum(o == "held" for o, _ in outs))
                    for kind, outs in zip(kinds, trials, strict=True)
                    if sum(o == "held" for o, _ in outs) != 1)
    refusals = Counter(o for outs in trials for o, _ in outs if o != "held")
    assert not wrong, f"(seed, holders) of trials without exactly one holder: {wrong}"
    assert set(refusals) == {"ConcurrentWriterError"}, refusals
    assert sum(refusals.values()) == TRIALS * (PROCS - 1)
    for kind, outs in zip(kinds, trials, strict=True):
        holder = pids[[o for o, _ in outs].index("held")]
        for o, msg in outs:
            if o == "held":
                continue
            m = REFUSAL.fullmatch(msg)
            assert m, msg
            # the holder, or (just before it overwrote them) the foreign bytes; never the
            # dead pid of a stale file
            assert m["pid"] is None or int(m["pid"]) == holder or \
                (kind == "foreign" and m["host"] == FOREIGN["host"]), (kind, msg)
    assert not os.path.exists(lock_file(uri))  # released: nobody holds it, no file


def churn(uri: str, seconds: float, inside, overlaps, barrier, results) -> None:
    """One racer of many taking and giving up the lock as fast as it can."""
    table, held, errors = Table(uri), 0, Counter()
    barrier.wait()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            table.acquire_writer_lock()
        except Exception as e:  # the type is what the test checks
            errors[type(e).__name__] += 1
            continue
        with inside.get_lock():
            inside.value += 1
            overlaps.value += inside.value > 1
        time.sleep(0.0002)
        with inside.get_lock():
            inside.value -= 1
        table.release_writer_lock()  # unlinks the file while others open and lock it
        held += 1
    results.put((held, dict(errors)))


def test_no_two_holders_while_holders_come_and_go(tmp_path):
    """Acquirers racing a releasing holder: whoever locked the unlinked inode retries."""
    uri = str(tmp_path / "t")
    Table.create_or_open(uri, config())
    ctx = mp.get_context("spawn")
    inside, overlaps = ctx.Value("i", 0), ctx.Value("i", 0)
    barrier, results = ctx.Barrier(PROCS, timeout=60), ctx.Queue()
    procs = [ctx.Process(target=churn, args=(uri, 1.0, inside, overlaps, barrier, results))
             for _ in range(PROCS)]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=60) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    errors = sum((Counter(e) for _, e in got), Counter())
    assert overlaps.value == 0
    assert set(errors) <= {"ConcurrentWriterError"}, errors
    assert sum(h for h, _ in got) > 20  # it did come and go (hundreds when idle)
    assert not os.path.exists(lock_file(uri))


HOLDER = """
import sys, time
from tableformat.table import Table
Table(sys.argv[1]).acquire_writer_lock()
print("held", flush=True)
time.sleep(120)
"""


def test_a_killed_writers_lock_is_taken_over_at_once(tmp_path):
    uri = str(tmp_path / "t")
    Table.create_or_open(uri, config())
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, uri], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(ConcurrentWriterError,
                           match=rf"by pid {proc.pid} on {re.escape(socket.gethostname())} "):
            Table(uri).acquire_writer_lock()
        assert Table(uri).lock_holder()["pid"] == proc.pid
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert json.loads(open(lock_file(uri)).read())["pid"] == proc.pid  # left behind
    assert Table(uri).lock_holder() is None  # a dead pid holds nothing
    t = Table(uri)
    start = time.monotonic()
    with t:
        assert time.monotonic() - start < 1.0
        assert t.lock_holder()["pid"] == os.getpid()
        assert json.loads(open(lock_file(uri)).read())["pid"] == os.getpid()
    assert not os.path.exists(lock_file(uri))


def test_tables_in_one_process_exclude_each_other(tmp_path):
    uri = str(tmp_path / "t")
    a, b = Table.create_or_open(uri, config()), Table(uri)
    a.acquire_writer_lock()
    fd = a._lock._fd
    assert fd is not None and fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    me = rf"by pid {os.getpid()} on {re.escape(socket.gethostname())} \(since .* UTC\); "
    with pytest.raises(ConcurrentWriterError, match=me):
        b.acquire_writer_lock()
    with pytest.raises(ConcurrentWriterError, match="concurrent writers"), Table(uri):
        pass
    with pytest.raises(ConcurrentWriterError, match="already"):
        a.acquire_writer_lock()  # not re-entrant: an inner release would free the outer
    b.release_writer_lock()  # not holding: a no-op that leaves a's lock alone
    copy = pickle.loads(pickle.dumps(a))  # as if shipped to a task: holds nothing
    assert not copy._lock.held and copy._lock._fd is None
    copy.release_writer_lock()
    with pytest.raises(ConcurrentWriterError):
        b.acquire_writer_lock()
    assert b.lock_holder()["pid"] == os.getpid()
    a.release_writer_lock()
    assert not os.path.exists(lock_file(uri))
    a.release_writer_lock()  # twice: still a no-op
    assert b.lock_holder() is None
    b.acquire_writer_lock()  # re-acquire after release, by either object
    b.release_writer_lock()
    with a:
        with pytest.raises(ConcurrentWriterError):
            b.acquire_writer_lock()
    assert not os.path.exists(lock_file(uri))
    with pytest.raises(IndexBenchError, match="timeline without the writer lock"):
        a.start_instant()


def test_a_forked_child_neither_holds_nor_frees_the_lock(tmp_path):
    uri = str(tmp_path / "t")
    t = Table.create_or_open(uri, config())
    with t:
        child = os.fork()
        if child == 0:  # only os calls here, then _exit
            code = 1
            try:
                t.release_writer_lock()  # the parent's lock: a no-op here
                try:
                    t.acquire_writer_lock()
                except ConcurrentWriterError as e:
                    code = 0 if f"pid {os.getppid()} " in str(e) else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert os.path.exists(lock_file(uri))
        with pytest.raises(ConcurrentWriterError):
            Table(uri).acquire_writer_lock()
    assert not os.path.exists(lock_file(uri))


def test_refusal_messages():
    assert lk.refusal("/x/t", {"host": "h1", "pid": 7, "t": 86400.0}) == (
        "table /x/t is being written by pid 7 on h1 (since 1970-01-02 00:00:00 UTC); "
        "concurrent writers are not supported")
    assert lk.refusal("/x/t", None) == (
        "table /x/t is being written by another process (holder unknown); "
        "concurrent writers are not supported")


@pytest.mark.parametrize("content", [b"", b"\xff garbage", b'{"host": "h"}'])
def test_a_holder_that_wrote_nothing_usable_is_unknown(tmp_path, content):
    """A holder killed (or still) between taking the lock and writing its identity."""
    uri = str(tmp_path / "t")
    Table.create_or_open(uri, config())
    fd = os.open(lock_file(uri), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, content)
        with pytest.raises(ConcurrentWriterError) as e:
            Table(uri).acquire_writer_lock()
        assert REFUSAL.fullmatch(str(e.value)) and "holder unknown" in str(e.value)
    finally:
        os.close(fd)
    with Table(uri):  # the same bytes, nobody holding them: taken
        pass


def test_no_bare_os_error(tmp_path):
    t = Table(str(tmp_path / "missing"))  # no .hoodie: the lock file cannot be created
    with pytest.raises(IndexBenchError, match=r"writer lock .*\.writer\.lock") as e:
        t.acquire_writer_lock()
    assert not isinstance(e.value, ConcurrentWriterError)


def test_best_effort_lock_on_other_file_systems(tmp_path, monkeypatch):
    """Not a LocalFileSystem (as S3 or HDFS): write-if-absent and read back."""
    monkeypatch.setattr(lk, "SETTLE_S", 0.0)
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    fs.create_dir("t/.hoodie")
    path = "t/.hoodie/" + LOCK
    a, b = lk.WriterLock(fs, path, "s3://b/t"), lk.WriterLock(fs, path, "s3://b/t")
    a.acquire()
    with pytest.raises(ConcurrentWriterError, match=f"by pid {os.getpid()} on "):
        b.acquire()
    b.release()  # not holding: no-op
    assert a.held and b.holder()["pid"] == os.getpid()
    a.release()
    assert not (tmp_path / path).exists()
    lock = tmp_path / path
    lock.write_text(json.dumps({"host": socket.gethostname(), "pid": dead_pid(), "t": 0}))
    b.acquire()  # a dead writer on this host: taken over
    b.release()
    lock.write_text(json.dumps(FOREIGN))
    with pytest.raises(ConcurrentWriterError, match="by pid 1 on elsewhere.invalid"):
        b.acquire()  # another host's writer: never taken over
    lock.write_bytes(b"")
    with pytest.raises(ConcurrentWriterError, match=f"holder unknown.*delete {path}"):
        b.acquire()
    lock.unlink()
    b.acquire()
    b.release()
    assert not lock.exists()
