"""The table's writer lock: at most one writer per table at a time (issue #14).

Local file system: ``.hoodie/.writer.lock`` is locked with the kernel's advisory
``flock(LOCK_EX | LOCK_NB)``. The kernel drops the lock when the holder's open file
description closes — on release, on exit, on SIGKILL — so a dead writer's lock is free
at once, with no guessing from pids, and the file's bytes never decide who holds it: an
empty or corrupt file (a crash mid-write, an older version) is simply taken. The bytes
only name the holder (host, pid, since) for the refusal message. Release unlinks the
file while still holding the lock; an acquirer that locked an inode which was unlinked
or replaced meanwhile sees it (fstat of its descriptor vs stat of the path) and retries
on the new file, so two processes never hold locks on two different files. flock
belongs to the open file description, so two ``Table`` objects in one process exclude
each other too. Mixing with a writer of an older version (O_EXCL files, no flock) is not
safe: stop old writers before upgrading.

Other file systems (S3, HDFS through pyarrow): pyarrow has no atomic create-or-fail, so
the lock there is best effort only — write our identity if the file is absent, then read
it back and compare our token, so two racing writers usually notice each other; a holder
on another host is never taken over, one on this host whose pid is dead is. Concurrent
writers on an object store need external coordination, just as Hudi's own multi-writer
mode needs a lock provider (ZooKeeper, DynamoDB, the Hive metastore).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pyarrow.fs as pafs

from tableformat import fs as tfs
from tableformat.errors import ConcurrentWriterError, IndexBenchError

LOCK = ".writer.lock"

# Retries when the locked inode is no longer the path's (a holder released meanwhile):
# each one means another writer came and went; running out is reported as a refusal.
ATTEMPTS = 20
# A refused acquirer waits this long at most for the holder to write its identity
# (it truncates and writes right after taking the lock) before calling it unknown.
HOLDER_WAIT_S = 0.1
# Non-local: time for a racing writer's identity to land before we read ours back.
SETTLE_S = 0.1

Identity = dict[str, Any]


class WriterLock:
    """The writer lock of one table, as held (or not) by one ``Table`` object."""

    def __init__(self, fs: pafs.FileSystem, path: str, uri: str):
        self.fs, self.path, self.uri = fs, path, uri
        self._local = isinstance(fs, pafs.LocalFileSystem)
        self._fd: int | None = None  # local: the descriptor that carries the flock
        self._identity: Identity | None = None
        self._owner_pid: int | None = None  # a forked child's copy does not hold it

    def __getstate__(self) -> dict[str, Any]:
        """A pickled copy holds nothing: its process has no such descriptor to close."""
        return {**self.__dict__, "_fd": None, "_identity": None, "_owner_pid": None}

    @property
    def held(self) -> bool:
        return self._identity is not None and self._owner_pid == os.getpid()

    def acquire(self) -> None:
        """Take the lock or raise ConcurrentWriterError naming the holder."""
        if self.held:
            raise ConcurrentWriterError(
                f"table {self.uri} is already being written through this Table object "
                f"(pid {os.getpid()}); concurrent writers are not supported")
        self._forget()  # state inherited through fork, if any
        identity = {"host": socket.gethostname(), "pid": os.getpid(), "t": time.time(),
                    "token": uuid.uuid4().hex}
        if self._local:
            self._fd = self._acquire_local(identity)
        else:
            self._acquire_remote(identity)
        self._identity, self._owner_pid = identity, os.getpid()

    def release(self) -> None:
        """Give the lock up; a no-op when not holding it."""
        if not self.held:
            self._forget()
            return
        if self._local:
            fd, self._fd = self._fd, None
            self._identity = self._owner_pid = None
            assert fd is not None
            try:  # unlink while still locked: nobody can have taken this inode meanwhile
                if _same_file(fd, self.path):
                    os.unlink(self.path)
            except OSError:
                pass  # a file left behind is harmless: the flock, not the file, is the lock
            finally:
                os.close(fd)  # releases the flock
            return
        token = self._identity["token"] if self._identity else None
        self._identity = self._owner_pid = None
        try:
            if (_parse(self._read_remote()) or {}).get("token") == token:
                self.fs.delete_file(self.path)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise IndexBenchError(
                f"could not remove the writer lock {self.path} of table {self.uri}: {e}; "
                "delete it by hand once no writer is running") from e

    def holder(self) -> Identity | None:
        """Who holds the lock, as its file says; None if nobody (or unknown)."""
        if self.held:
            return dict(self._identity or {})
        try:
            who = _parse(self._read_remote())
        except OSError:
            return None
        # a SIGKILLed local writer leaves its file behind: a dead pid holds nothing
        return None if who is None or _dead_here(who) else who

    # ---- local: flock --------------------------------------------------------------
    def _acquire_local(self, identity: Identity) -> int:
        data = json.dumps(identity).encode()
        for _ in range(ATTEMPTS):
            writable = True
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except PermissionError:
                # another user's killed writer left it: flock works on a read-only open,
                # only our identity cannot be written into it
                writable = False
                try:
                    fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
                except OSError as e:
                    raise IndexBenchError(
                        f"cannot open the writer lock {self.path}: {e.strerror}") from e
            except OSError as e:
                raise IndexBenchError(
                    f"cannot open the writer lock {self.path}: {e.strerror}") from e
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                busy = e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
                holder = self._wait_for_identity(fd) if busy else None
                os.close(fd)
                if busy:
                    raise ConcurrentWriterError(refusal(self.uri, holder)) from None
                raise IndexBenchError(
                    f"cannot lock the writer lock {self.path}: {e.strerror}") from e
            try:
                if _same_file(fd, self.path):
                    if writable:
                        os.ftruncate(fd, 0)
                        os.pwrite(fd, data, 0)
                    return fd
            except OSError as e:
                os.close(fd)
                raise IndexBenchError(
                    f"cannot write the writer lock {self.path}: {e.strerror}") from e
            os.close(fd)  # we locked an inode its holder unlinked on release: retry
        raise ConcurrentWriterError(refusal(self.uri, None))

    def _wait_for_identity(self, fd: int) -> Identity | None:
        """The holder's identity from the inode it locked, once written (or None)."""
        deadline = time.monotonic() + HOLDER_WAIT_S
        while True:
            try:
                who = _parse(os.pread(fd, 1 << 16, 0))
            except OSError:
                who = None
            # the previous, dead holder's bytes until the new one has written its own
            if who is not None and not _dead_here(who):
                return who
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.005)

    # ---- other file systems: best effort -------------------------------------------
    def _read_remote(self) -> bytes | None:
        """The lock file's bytes, None if absent (works on the local file system too)."""
        try:
            return tfs.read_bytes(self.fs, self.path)
        except FileNotFoundError:
            return None
        except OSError:
            if not tfs.exists(self.fs, self.path):
                return None
            raise

    def _acquire_remote(self, identity: Identity) -> None:
        data = json.dumps(identity).encode()
        hint = f" (if no writer is running, delete {self.path})"
        try:
            for _ in range(ATTEMPTS):
                raw = self._read_remote()
                if raw is not None:
                    who = _parse(raw)
                    if who is None:
                        raise ConcurrentWriterError(refusal(self.uri, None) + hint)
                    if not _dead_here(who):  # never take over another host's writer
                        raise ConcurrentWriterError(refusal(self.uri, who))
                # absent, or a dead writer's of this host: replace (never delete first)
                tfs.write_bytes_atomic(self.fs, self.path, data)
                time.sleep(SETTLE_S)
                back = self._read_remote()
                if back is None:
                    continue  # a racing writer's release or takeover: look again
                who = _parse(back)
                if who is not None and who.get("token") == identity["token"]:
                    return
                raise ConcurrentWriterError(refusal(self.uri, who))
        except OSError as e:
            raise IndexBenchError(f"cannot take the writer lock {self.path}: {e}") from e
        raise ConcurrentWriterError(refusal(self.uri, None))

    def _forget(self) -> None:
        """Drop state not held by this process (a forked copy of the holder's)."""
        if self._fd is not None:
            # our copy of the descriptor: closing it leaves the parent's flock in place
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._identity, self._owner_pid = None, None, None


def refusal(uri: str, holder: Identity | None) -> str:
    """The one-line message of a refused writer."""
    if holder is None:
        who = "another process (holder unknown)"
    else:
        who = f"pid {holder['pid']} on {holder['host']}"
        t = holder.get("t")
        if isinstance(t, int | float) and not isinstance(t, bool):
            since = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            who += f" (since {since})"
    return f"table {uri} is being written by {who}; concurrent writers are not supported"


def _parse(raw: bytes | None) -> Identity | None:
    """A holder's identity, or None for no file or bytes that do not name one."""
    if not raw:
        return None
    try:
        who = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(who, dict) or not isinstance(who.get("host"), str) or \
            not isinstance(who.get("pid"), int) or isinstance(who.get("pid"), bool):
        return None
    return who


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the inode ``fd`` is open on."""
    a = os.fstat(fd)
    try:
        b = os.stat(path)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _dead_here(holder: Identity) -> bool:
    """A holder on this host whose process is gone."""
    return holder["host"] == socket.gethostname() and not _pid_alive(holder["pid"])


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False  # kill(0 or -n) would signal process groups, not a pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
