"""Errors a user can act on; the CLI prints their message without a traceback."""


class IndexBenchError(Exception):
    """Base class of every error the CLI reports as a one-line message."""


class InvalidBatchError(IndexBenchError):
    """The input batch is refused before anything is written."""


class TableConfigError(IndexBenchError):
    """The table was created with other settings than the ones asked for."""


class ConcurrentWriterError(IndexBenchError):
    """Another writer holds the table's writer lock."""


class InvariantViolation(IndexBenchError):
    """A table invariant does not hold (raised by ``verify`` and by the writer)."""


class WriteFailedError(IndexBenchError):
    """A write failed after it started (e.g. in a Spark task) and was undone: the table
    is as it was before. The CLI reports it as a failed run (exit 1), not bad input."""
