"""The table's own key-value server: a ``redis-server`` process on 127.0.0.1, started
when a command first needs it, stopped by PID when the command ends.

Its data lives under the table, in ``<table>/.hoodie/.aux/kv/`` (Hudi's auxiliary
folder): an append-only file (``appendonly yes``, ``appendfsync everysec``: what a
process that dies has acknowledged is in the file, as HBase's WAL keeps what a region
server acknowledged; a power cut may lose the last second), ``redis.log`` and, while it
runs, ``redis.pid``. No snapshot files (``save ""``).

The server dies with the process that started it: it is started with Linux's
parent-death signal (``setpriv --pdeathsig TERM``, util-linux), so a writer killed
with ``kill -9`` leaves no server
behind; on SIGTERM redis writes its append-only file and exits. A server left running by
a process that died before that took effect (its PID in ``redis.pid``, its working
folder this data folder) is stopped before a new one starts on the same files.
Nothing here imports pyspark.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from indexes.external_kv.store import ping
from tableformat.errors import IndexBenchError

BINARY = "redis-server"
DATA_DIR = (".hoodie", ".aux", "kv")  # under the table's root
PID_FILE = "redis.pid"
LOG_FILE = "redis.log"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


def binary() -> str | None:
    """The redis-server executable on PATH (None: not installed)."""
    return shutil.which(BINARY)


def data_dir(table_root: str) -> Path:
    """Where the table's own server keeps its files."""
    return Path(table_root, *DATA_DIR)


def _command(executable: str, args: list[str]) -> list[str]:
    """The server's command line, run through util-linux's ``setpriv --pdeathsig TERM``
    (it execs the server in its own process, so the parent-death signal is set without
    running Python between fork and exec, which a process with threads must not)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return [executable, *args]
    return [setpriv, "--pdeathsig", "TERM", "--", executable, *args]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that no one listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _is_our_server(pid: int, folder: Path) -> bool:
    """``pid`` is a live redis-server whose working folder is ``folder``."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return b"redis-server" in cmd and Path(cwd) == folder.resolve()


def _alive(pid: int) -> bool:
    """``pid`` runs (an exited process not yet reaped by its parent does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


class RedisServer:
    """One ``redis-server`` process over a data folder; :meth:`start`, :meth:`stop`."""

    def __init__(self, folder: str | os.PathLike, executable: str | None = None):
        self.folder = Path(folder)
        self.executable = executable or binary()
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> str:
        """Start the server and wait until it answers; returns its URL."""
        if self.executable is None:
            raise IndexBenchError(f"{BINARY} is not installed (apt-get install redis-server) "
                                  "and no indexbench.kv.url names a server")
        self.folder.mkdir(parents=True, exist_ok=True)
        self._stop_leftover()
        last = ""
        for _attempt in range(3):  # a port taken between free_port() and the bind: again
            self.port = free_port()
            self.proc = subprocess.Popen(
                _command(self.executable, [
                    "--bind", "127.0.0.1", "--port", str(self.port),
                    "--dir", str(self.folder.resolve()), "--appendonly", "yes",
                    "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
                    "--logfile", LOG_FILE, "--protected-mode", "yes"]),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, close_fds=True,
                process_group=0)  # its own group: a Ctrl-C is the command's to answer
            (self.folder / PID_FILE).write_text(f"{self.proc.pid}\n")
            last = self._wait_ready()
            if not last:
                return self.url
            self.stop()
        raise IndexBenchError(f"{BINARY} did not start in {self.folder}: {last} "
                              f"(its log: {self.folder / LOG_FILE})")

    def _wait_ready(self) -> str:
        """'' once the server answers; else why it never did."""
        deadline = time.monotonic() + START_TIMEOUT_S
        why = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return f"it exited with code {self.proc.returncode}"
            why = ping(self.url, timeout_s=1.0) or ""
            if not why:
                return ""
            if "LOADING" in why:  # replaying a long append-only file: keep waiting
                deadline = max(deadline, time.monotonic() + 1.0)
            time.sleep(0.02)
        return f"no answer within {START_TIMEOUT_S:.0f} s ({why})"

    def stop(self) -> None:
        """Stop it by PID: SIGTERM (redis writes its append-only file and exits), then
        SIGKILL if it has not exited in time. Safe to call twice, and after it died."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(STOP_TIMEOUT_S)
        with contextlib.suppress(FileNotFoundError):
            pid_file = self.folder / PID_FILE
            if pid_file.read_text().strip() == str(proc.pid):
                pid_file.unlink()

    def _stop_leftover(self) -> None:
        """A server an earlier process started on these files and never stopped."""
        try:
            pid = int((self.folder / PID_FILE).read_text().strip())
        except (FileNotFoundError, ValueError):
            return
        if _is_our_server(pid, self.folder):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            if not _wait_gone(pid, STOP_TIMEOUT_S):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                _wait_gone(pid, STOP_TIMEOUT_S)
        (self.folder / PID_FILE).unlink(missing_ok=True)
