"""What the simulator hands an index's sim adapter, and what the adapter hands back.

The simulator is the second engine adapter (the Spark one is ``index.spark``): it feeds
an index the same batches as a real run — distinct records of a batch as key ordinals,
their partitions and whether each key is new — in chunks, so a billion-key initial load
never sits in memory at once. The adapter routes them with the index's own core and
returns, per file group written, how many inserts and updates it received, plus the
work counters its core incremented. Spark-free; nothing here imports pyspark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from indexes.roles import SimOption, SimulatorOptions, plays


class KeySource(Protocol):
    """Record keys of key ordinals (a workload's keys are pure functions of them)."""

    def record_keys(self, ordinals: np.ndarray) -> pa.Array: ...

    def order_codes(self, ordinals: np.ndarray) -> np.ndarray: ...

    def column(self, name: str, ordinals: np.ndarray) -> pa.Array: ...


@dataclass
class SimChunk:
    """Distinct records of a batch (a slice of them): one per key ordinal."""

    ordinals: np.ndarray  # int64, distinct
    part: np.ndarray  # int32 index into SimBatch.partitions
    is_new: np.ndarray  # bool: the key did not exist before this batch

    def parts(self) -> np.ndarray:
        """Partition indices present in the chunk (a count, not a hash-unique)."""
        return np.flatnonzero(np.bincount(self.part))


@dataclass
class SimBatch:
    """One upsert batch as the simulator sees it (after the pre-combine)."""

    batch_no: int
    instant: str
    partitions: list[str]  # partition names, indexed by SimChunk.part
    keys: KeySource
    key_field: str = "key"
    records: int = 0
    inserts_before: int = 0  # keys that existed before this batch (ordinals below it)
    latest_successful: str | None = None  # last completed instant before this one
    # every record of the table in these partitions once this batch is committed
    existing: Callable[[list[str]], Iterator[SimChunk]] | None = None

    @property
    def bulk(self) -> bool:
        """A bulk load: nothing existed before, every record is new, so an adapter may
        skip holding the batch and read one partition's records at a time in ``finish``
        (``partition_records``): a billion-key load then holds one partition, not all."""
        return self.inserts_before == 0 and self.existing is not None

    def partition_records(self, partition: str) -> Iterator[SimChunk]:
        """A bulk load's records of one partition (regenerated: keys are pure functions
        of their ordinals)."""
        for chunk in self.existing([partition]):
            yield SimChunk(chunk.ordinals, chunk.part, np.ones(len(chunk.ordinals), bool))


@dataclass
class GroupWrites:
    """Per file group written by one commit: the records it received."""

    partition: list[str] = field(default_factory=list)
    file_id: list[str] = field(default_factory=list)
    bucket: list[int | None] = field(default_factory=list)
    inserts: list[int] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)
    # (partition, file id) the insert plan chose (the driver's ``base_writes``: the
    # planner's small files and new groups, or an index's own ``insert_groups``): on
    # merge-on-read they get a base file, not a log
    planned: set[tuple[str, str]] = field(default_factory=set)

    def add(self, partition: str, file_id: str, bucket: int | None, inserts: int,
            updates: int) -> None:
        self.partition.append(partition)
        self.file_id.append(file_id)
        self.bucket.append(bucket)
        self.inserts.append(int(inserts))
        self.updates.append(int(updates))

    def __len__(self) -> int:
        return len(self.file_id)


@dataclass(frozen=True)
class SimOptions:
    """Simulator settings an adapter may use (each takes what applies to it)."""

    seed: int = 0  # seeds modelled draws (bloom false positives)
    table_keys: int = 0  # keys the table will hold at the end of the run
    parallelism: int = 1  # what Spark's default parallelism would be (dynamic-rli's P)
    # the run's cost profile (indexbench.sim.profiles.CostProfile), for an adapter that
    # models a figure of its own from the profile's constants (a request latency)
    cost_profile: Any = None
    # values of the options indexes declare (indexes.roles.SimOption), by name
    index_options: Mapping[str, Any] = field(default_factory=dict)
    # the options the adapter's index declares (its SIM_OPTIONS; SimAdapter sets them)
    declared: tuple[SimOption, ...] = ()

    def option(self, name: str) -> Any:
        """The value of the option ``name`` the index declares: as given in
        ``index_options``, else the declaration's default."""
        for opt in self.declared:
            if opt.name == name:
                return self.index_options.get(name, opt.default)
        raise KeyError(f"the index declares no simulator option {name!r} (its options: "
                       f"{', '.join(o.name for o in self.declared) or 'none'})")

    def declaring(self, options: Sequence[SimOption]) -> SimOptions:
        """These settings for an index declaring ``options``."""
        return replace(self, declared=tuple(options))


class SimAdapter:
    """The simulator side of an index: ``begin`` → ``add`` per chunk → ``finish``, then
    ``after_commit``: the core. Footer bytes, commit metadata, dual writes and inline
    table services are roles (:data:`indexes.roles.SIM_ROLES`)."""

    def __init__(self, index: Any, model: Any, options: SimOptions | None = None):
        self.index = index
        self.model = model
        declared = index.SIM_OPTIONS if plays(index, SimulatorOptions) else ()
        self.options = (options or SimOptions()).declaring(declared)
        self.counts: Counter = Counter()

    def begin(self, batch: SimBatch) -> None:
        """A new batch starts (its counters too)."""
        self.batch = batch
        self.counts = Counter()

    def add(self, chunk: SimChunk) -> None:
        raise NotImplementedError

    def finish(self) -> GroupWrites:
        """Route what ``add`` collected; the file groups to write (counters in ``counts``)."""
        raise NotImplementedError

    def after_commit(self, ok: bool) -> dict[str, float]:
        """The checkpoint completed (or failed); index figures of this batch."""
        return {}
