"""Hudi base files: names, meta columns, footer metadata, and counted reads.

Spark-free: the writer tasks, the bloom index tasks and ``verify`` all call these, and
every read goes through :class:`~tableformat.fs.CountingReader`, so the bytes and files
a metric reports are the ones this code pulled from storage.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tableformat.fs import CountingReader, IOStats

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
META_COLUMNS = [COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME]
# Hudi's delete marker (HoodieRecord.HOODIE_IS_DELETED_FIELD): a batch row with it true
# deletes its record. A batch column only: the writer never stores it.
IS_DELETED = "_hoodie_is_deleted"

MIN_KEY_FOOTER = "hoodie_min_record_key"
MAX_KEY_FOOTER = "hoodie_max_record_key"
# ``hoodie.parquet.compression.codec`` of our base files: snappy, where Hudi's default
# is gzip (about 15x the CPU per byte written); the Hudi peer writes snappy too
# (docs/fidelity.md, "Bytes written")
BASE_FILE_CODEC = "snappy"

_NAME_RE = re.compile(r"^(?P<file_id>.+)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d{17})\.parquet$")


@dataclass(frozen=True)
class BaseFileName:
    """``{fileId}_{writeToken}_{instant}.parquet`` parsed back into its parts."""

    file_id: str
    write_token: str
    instant: str

    @property
    def name(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}.parquet"

    @classmethod
    def parse(cls, name: str) -> BaseFileName:
        m = _NAME_RE.match(name.rsplit("/", 1)[-1])
        if not m:
            raise ValueError(f"not a base file name: {name!r}")
        return cls(m["file_id"], m["token"], m["instant"])


def task_write_token(task_context) -> str:
    """A write task's token, ``{partitionId}-0-{attemptNumber}`` from its Spark
    ``TaskContext`` (duck-typed: no pyspark import here).

    Hudi's is ``{partitionId}-{stageId}-{taskAttemptId}``: the same three numeric fields,
    which Hudi's file-name parsing accepts. The middle one is 0 here, not Spark's stage
    id, and the last the task's attempt number, not its application-wide attempt id: the
    token is part of ``_hoodie_file_name`` in every row, so a number that grows with the
    jobs the Spark application ran before would change a file's compressed bytes and,
    through Hudi's byte-based file sizing, every count after it (docs/results.md,
    "Repeatable counters"). The attempt number still keeps a retried task's file apart
    from the failed attempt's, which is what the token is for."""
    return f"{task_context.partitionId()}-0-{task_context.attemptNumber()}"


def new_file_id() -> str:
    """A non-bucket file group id, as Hudi makes them: a random uuid + ``-0``."""
    return f"{uuid.uuid4()}-0"


def bucket_file_id(bucket: int, tail_seed: str | None = None) -> str:
    """Hudi's bucket file id: 8-digit bucket, the uuid minus its first 8 chars, ``-0``."""
    u = uuid.uuid5(uuid.NAMESPACE_URL, tail_seed) if tail_seed is not None else uuid.uuid4()
    return f"{bucket:08d}{str(u)[8:]}-0"


def bucket_of_file_id(file_id: str) -> int:
    """Parse the bucket id back from a bucket file id (RFC-29: no mapping is stored)."""
    head = file_id[:8]
    if len(file_id) < 9 or not head.isdigit() or file_id[8] != "-":
        raise ValueError(f"file id {file_id!r} does not start with an 8-digit bucket id")
    return int(head)


def write_base_file(
    fs: pafs.FileSystem, path: str, table: pa.Table, footer: dict[str, str]
) -> int:
    """Write one base file with ``footer`` as Parquet key-value metadata; returns its size.

    The Arrow schema blob is not stored: it would repeat the footer metadata (the bloom
    filter) a second time, base64-encoded; Hudi footers hold it once.
    """
    with fs.open_output_stream(path) as out:
        encode_base_file(out, table, footer)
    return fs.get_file_info(path).size


def encode_base_file(sink, table: pa.Table, footer: dict[str, str]) -> None:
    """A base file's bytes into ``sink`` (a pyarrow output stream): the one encoding of
    the writers and of the simulator's record-size sample (``indexbench.sim.record_size``),
    so a modelled size is one of these bytes, not a guess."""
    table = table.replace_schema_metadata(None)
    with pq.ParquetWriter(sink, table.schema, compression=BASE_FILE_CODEC,
                          store_schema=False) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata(footer)


def _open(fs: pafs.FileSystem, path: str) -> CountingReader:
    return CountingReader(fs.open_input_file(path))


# Parquet's created_by, which read_footer adds: Hudi's writer (parquet-mr, through its
# Avro write support or Spark's row writer in a compaction) says "parquet-mr version
# ..."; this project's (pyarrow) "parquet-cpp-arrow version ..."
CREATED_BY = "_created_by"


def written_by_hudi(footer: dict[str, str]) -> bool:
    """Whether Hudi's own writer wrote a base file (its footer, :func:`read_footer`)."""
    return footer.get(CREATED_BY, "").startswith("parquet-mr")


def read_footer(fs: pafs.FileSystem, path: str, stats: IOStats | None = None) -> dict[str, str]:
    """Footer key-value metadata of a base file (reads the footer only)."""
    reader = _open(fs, path)
    try:
        md = pq.ParquetFile(reader).metadata
        kv = {k.decode(): v.decode() for k, v in (md.metadata or {}).items()
              if k != b"ARROW:schema"}
        kv["_num_rows"] = str(md.num_rows)
        kv[CREATED_BY] = md.created_by or ""
    finally:
        reader.close()
    if stats is not None:
        stats.footers_read += 1
        stats.bytes_read += reader.bytes_read
    return kv


def read_parquet(fs: pafs.FileSystem, path: str, stats: IOStats | None = None,
                 columns: list[str] | None = None) -> pa.Table:
    """Read (some columns of) a Parquet file, counting the file and every byte pulled."""
    reader = _open(fs, path)
    try:
        table = pq.ParquetFile(reader).read(columns=columns)
    finally:
        reader.close()
    if stats is not None:
        stats.files_read += 1
        stats.bytes_read += reader.bytes_read
        stats.paths.append(path)
    return table.replace_schema_metadata(None)


def read_record_keys(fs: pafs.FileSystem, path: str, stats: IOStats | None = None) -> pa.Array:
    """Only the record-key column of a base file: what Hudi reads to confirm a bloom hit."""
    return read_parquet(fs, path, stats, [RECORD_KEY]).column(0).combine_chunks()


def read_base_file(
    fs: pafs.FileSystem, path: str, stats: IOStats | None = None, columns: list[str] | None = None
) -> pa.Table:
    """A whole base file (copy-on-write merge, verify)."""
    return read_parquet(fs, path, stats, columns)
