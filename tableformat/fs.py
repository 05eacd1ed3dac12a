"""The table's file system: pyarrow.fs for every byte, so a table may live on any
file system pyarrow reaches (local, HDFS, S3) and executors write to it directly."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

import pyarrow.fs as pafs


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """Return the file system and root path of a table URI or local path."""
    if "://" not in uri:
        uri = os.path.abspath(uri)
        return pafs.LocalFileSystem(), uri
    return pafs.FileSystem.from_uri(uri)


def join(*parts: str) -> str:
    return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts) if p)


def exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def list_files(fs: pafs.FileSystem, path: str, recursive: bool = False) -> list[pafs.FileInfo]:
    """Files below ``path`` (empty list if it does not exist)."""
    if not exists(fs, path):
        return []
    sel = pafs.FileSelector(path, recursive=recursive, allow_not_found=True)
    return [i for i in fs.get_file_info(sel) if i.type == pafs.FileType.File]


def write_bytes_atomic(fs: pafs.FileSystem, path: str, data: bytes,
                       mtime: float | None = None) -> None:
    """Write to a temporary name, then rename: readers see all of it or nothing.
    ``mtime`` (seconds since the epoch): the file's modification time, set before the
    rename where the file system lets a writer set it (:func:`set_mtime`)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with fs.open_output_stream(tmp) as out:
        out.write(data)
    if mtime is not None:
        set_mtime(fs, tmp, mtime)
    fs.move(tmp, path)


def set_mtime(fs: pafs.FileSystem, path: str, seconds: float) -> bool:
    """Set a file's modification time where the file system allows it (a local one, also
    under a sub-tree); returns whether it did. Object stores stamp their own."""
    while isinstance(fs, pafs.SubTreeFileSystem):
        path, fs = f"{fs.base_path.rstrip('/')}/{path.lstrip('/')}", fs.base_fs
    if not isinstance(fs, pafs.LocalFileSystem):
        return False
    os.utime(path, (seconds, seconds))
    return True


def read_bytes(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


@dataclass
class IOStats:
    """Bytes and files actually pulled from storage, counted by the reader itself."""

    files_read: int = 0
    footers_read: int = 0
    bytes_read: int = 0
    paths: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {
            "files_read": self.files_read,
            "footers_read": self.footers_read,
            "bytes_read": self.bytes_read,
        }


class CountingReader(io.RawIOBase):
    """A read-only file that counts every byte handed to its caller (pyarrow included)."""

    def __init__(self, raw: pafs.NativeFile):
        self._raw = raw
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def size(self) -> int:
        return self._raw.size()

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read() if n is None or n < 0 else self._raw.read(n)
        self.bytes_read += len(data)
        return data

    def readinto(self, b) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()
