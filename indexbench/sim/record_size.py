"""Bytes of a workload's records as the writers store them, measured on a sample.

The simulator writes no files, yet bloom's file sizing (which small files get inserts,
how many) and every ``model_*`` byte figure read file sizes. A column-width guess was
40% over real Parquet (dictionary pages, snappy, the meta columns' repeats), and
bloom's top-up, hence its false positives, followed the guess. Here a sample of the
workload's own rows (the generator's, keys sorted as a file holds them, one partition)
gets Hudi's meta columns and is encoded by the writers' own encoders: a base file by
:func:`tableformat.basefile.encode_base_file` (snappy Parquet, no Arrow schema blob), a
log data block by :func:`tableformat.hudi_log.encode_data_block`. Two sample sizes give
a line, bytes = per file + records × per record, so small files keep their footers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

import workloads
from indexbench.writer import MergeSpec, meta_columns
from tableformat import hudi_log
from tableformat.avro_schema import avro_schema_json
from tableformat.basefile import MAX_KEY_FOOTER, MIN_KEY_FOOTER, BaseFileName, encode_base_file
from workloads import generator as G
from writeclient.create_handle import raw_bytes

SAMPLE_ROWS = (128, 1024)  # two file sizes: the line through them (small files fit best)
_INSTANT = "20260101000000000"
_FILE_ID = "00000000-0000-0000-0000-000000000000-0"  # a file id's length (uuid + "-0")
_SPARK_TYPES = {pa.string(): "string", pa.int64(): "long", pa.int32(): "integer",
                pa.bool_(): "boolean", pa.float64(): "double"}


@dataclass(frozen=True)
class RecordBytes:
    """Modelled bytes of a workload's records: a base file of n records is ``base_file
    + n × base_record`` bytes (before the index's footer), a log file ``log_file + n ×
    log_record``; ``arrow_record`` is one pre-combined record handed to a writer (the
    denominator of write amplification); ``raw_record`` one record in Hudi's Parquet
    writer's size estimate, which its create handle rolls over by
    (:func:`writeclient.create_handle.raw_bytes`, the sequence number's record digits
    left out; the sample's mean, exact where the records are of one width)."""

    base_record: float
    base_file: float = 0.0
    log_record: float = 0.0
    log_file: float = 0.0
    arrow_record: float = 0.0
    raw_record: int = 0

    def scaled(self, ratio: float) -> RecordBytes:
        """File bytes times a calibrated ratio (``record_bytes_ratio``: a real run's
        base-file bytes over this model's); 0 leaves the model as measured."""
        if not ratio or ratio == 1.0:
            return self
        return RecordBytes(self.base_record * ratio, self.base_file * ratio,
                           self.log_record * ratio, self.log_file * ratio, self.arrow_record,
                           self.raw_record)


def _spark_schema_json(schema: pa.Schema) -> str:
    """The data columns' Spark StructType JSON (nullable, as a batch's columns are):
    what the commit's Avro schema, and so a log block's header, is derived from."""
    return json.dumps({"type": "struct", "fields": [
        {"name": f.name, "type": _SPARK_TYPES.get(f.type, "string"), "nullable": True,
         "metadata": {}} for f in schema]})


def sample_records(w: workloads.Workload, n: int) -> pa.Table:
    """``n`` records of the workload's initial load as one file holds them: one
    partition (its value repeated), sorted by record key."""
    w = w.with_overrides(initial_records=max(w.initial_records, n))
    rows = G.batch_table(w, 0, 0, n).select(list(G.columns(w)))
    rows = rows.set_column(rows.schema.get_field_index("dt"), "dt",
                           pa.repeat(rows.column("dt")[0], n))
    return rows.take(pc.sort_indices(rows.column("key")))


def _raw_record(w: workloads.Workload) -> int:
    """A record's raw bytes in a new base file, as the Spark planner counts them."""
    data = sample_records(w, SAMPLE_ROWS[1])
    raw = raw_bytes(data, "key", data.column("dt")[0].as_py(), _INSTANT, _FILE_ID,
                    data.column_names)
    return round(float(raw.mean()))


def _sizes(w: workloads.Workload, n: int, block_format: str) -> tuple[int, int, int]:
    """(base file bytes, log file bytes, Arrow bytes) of ``n`` sampled records."""
    data = sample_records(w, n)
    spec = MergeSpec("", _INSTANT, "key", "dt", "ts", data.schema)
    name = BaseFileName(_FILE_ID, "0-1-0", _INSTANT).name
    partition = data.column("dt")[0].as_py()
    base = meta_columns(spec, data, partition, name, "0")
    keys = base.column("_hoodie_record_key")
    sink = pa.BufferOutputStream()
    encode_base_file(sink, base, {MIN_KEY_FOOTER: keys[0].as_py(),
                                  MAX_KEY_FOOTER: keys[-1].as_py()})
    log = meta_columns(spec, data, partition, _FILE_ID, "0")
    schema = avro_schema_json(_spark_schema_json(data.schema), "indexbench")
    block = hudi_log.encode_data_block(log, schema, _INSTANT, block_format)
    return sink.tell(), len(block), data.nbytes


@lru_cache(maxsize=64)
def measure(w: workloads.Workload, block_format: str = "avro") -> RecordBytes:
    """The workload's :class:`RecordBytes` (about 0.1 s; cached per workload)."""
    (b1, l1, a1), (b2, l2, a2) = (_sizes(w, n, block_format) for n in SAMPLE_ROWS)
    d = SAMPLE_ROWS[1] - SAMPLE_ROWS[0]
    base, log = (b2 - b1) / d, (l2 - l1) / d
    return RecordBytes(base_record=base, base_file=max(0.0, b1 - SAMPLE_ROWS[0] * base),
                       log_record=log, log_file=max(0.0, l1 - SAMPLE_ROWS[0] * log),
                       arrow_record=a2 / SAMPLE_ROWS[1], raw_record=_raw_record(w))
