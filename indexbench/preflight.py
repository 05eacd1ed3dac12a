"""Where a command will write, checked before Spark starts.

Why: a Spark start costs seconds, and a path that cannot be written (a file given as
``--out``, a table of another index) used to fail only once the first batch was
written, with a Python exception name and a progress bar on stdout. Each check here
raises :class:`~tableformat.errors.IndexBenchError` naming the flag the user typed, so
the command line prints one ``error:`` line and exits 2 with stdout empty.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow.fs as pafs

from indexes import roles
from tableformat import fs as tfs
from tableformat.errors import IndexBenchError


def check_out_dir(path: str, flag: str = "--out") -> None:
    """``path`` is, or can be created as, a writable local directory. A missing one is
    created and removed again: the one test every file system answers truthfully (a
    read-only mount, ``/proc``), and a command refused later leaves nothing behind."""
    _check_local(path, flag, want_dir=True)
    full = os.path.abspath(path)
    missing = []
    while not os.path.exists(full):
        missing.append(full)
        full = os.path.dirname(full)
    try:
        for folder in reversed(missing):
            os.mkdir(folder)
    except OSError as exc:
        raise IndexBenchError(f"{flag} {path}: cannot create it ({exc.strerror or exc})"
                              ) from None
    finally:
        for folder in missing:  # deepest first
            try:
                os.rmdir(folder)
            except OSError:
                pass


def check_out_file(path: str, flag: str = "--out") -> None:
    """``path`` is, or can be created as, a writable local file (not a directory)."""
    _check_local(path, flag, want_dir=False)


def _check_local(path: str, flag: str, want_dir: bool) -> None:
    full = os.path.abspath(path)
    if os.path.exists(full):
        if want_dir and not os.path.isdir(full):
            what = "the metrics, e.g. out/my-run" if flag == "--out" else "the table"
            raise IndexBenchError(f"{flag} {path}: a file, not a directory (give a directory "
                                  f"for {what})")
        if not want_dir and os.path.isdir(full):
            raise IndexBenchError(f"{flag} {path}: a directory, not a file")
    parent = full if want_dir and os.path.isdir(full) else os.path.dirname(full)
    while not os.path.exists(parent):  # the nearest ancestor that exists must be a folder
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise IndexBenchError(f"{flag} {path}: {parent} is a file, so nothing can be "
                              "created below it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise IndexBenchError(f"{flag} {path}: {parent} is not writable")


def check_table(uri: str, index_name: str, params: dict[str, Any] | None = None,
                flag: str = "--table") -> None:
    """A table location the run can create or reopen with ``index_name`` and ``params``.

    A local path must be creatable; a URI's file system must be reachable and say the
    location is not a file (what it can say without writing). An existing table must
    have been created by this index with these parameters (:func:`check_table_identity`).
    What the index needs running for the table must be available
    (:meth:`~indexes.roles.ExternalResources.check_resources`: an external server's program or
    URL).
    """
    from tableformat.table import Table

    if "://" not in uri:
        _check_local(uri, flag, want_dir=True)
    else:
        try:
            fs, root = tfs.resolve(uri)
            info = fs.get_file_info(root)
        except Exception as exc:  # noqa: BLE001 (pyarrow: ArrowInvalid, OSError, ...)
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise IndexBenchError(f"{flag} {uri}: cannot reach its file system: "
                                  f"{first}") from None
        if info.type == pafs.FileType.File:
            raise IndexBenchError(f"{flag} {uri}: a file, not a table directory")
    table = Table(uri)
    if table.exists():
        index = check_table_identity(table, index_name, params)
    else:
        from indexes import get
        from tableformat.write_config import WriteConfig

        given = dict(params or {})
        WriteConfig.pop_from(given)  # the table's write configs are not the index's
        index = get(index_name, **given)
    roles.check_resources(index, uri)  # what the index needs running can run (its server)


def check_table_identity(table: Any, index_name: str,
                         explicit: dict[str, Any] | None = None,
                         table_type: str | None = None) -> Any:
    """The index an existing ``table`` reopens with: its stored parameters, unless one is
    given explicitly with another value, which is refused as is another index or
    another table type (``table_type``, or ``hoodie.table.type`` among ``explicit``).
    Returns the index instance (:func:`indexbench.driver.open_table` builds on it)."""
    from indexes import index_class
    from tableformat.errors import TableConfigError
    from tableformat.table_type import TABLE_TYPE
    from tableformat.write_config import WriteConfig

    explicit = dict(explicit or {})
    table_type = WriteConfig.pop_from(explicit).table_type or table_type
    cls = index_class(index_name)
    have = table.config
    if table_type not in (None, have.table_type):
        raise TableConfigError(
            f"table {table.uri} was created with {TABLE_TYPE}={have.table_type}; it cannot "
            f"be changed to {table_type}; use another --table path")
    if have.written_by_hudi:
        raise TableConfigError(
            f"table {table.uri} was written by Hudi's own writer: its hoodie.properties "
            "names no indexbench index and keeps no index parameters, which this writer "
            f"needs to place records as {index_name} does; Hudi's writer continues "
            "tables of ours (docs/fidelity.md#hudi-continues-our-tables), not the reverse")
    if have.index_name != index_name:
        raise TableConfigError(
            f"table {table.uri} was created with index {have.index_name!r}, not "
            f"{index_name!r}; use another --table path")
    stored = {k: v for k, v in have.index_params.items() if k in cls.param_keys()}
    want = cls(**{**stored, **explicit}).table_params()
    for key, value in want.items():
        if stored.get(key) != value:
            raise TableConfigError(
                f"table {table.uri} was created with {key}={stored.get(key)!r}; "
                f"it cannot be changed to {value!r}")
    return cls(**stored)
