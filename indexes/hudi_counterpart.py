"""The Hudi counterpart role: what Hudi's own Spark writer runs for an index.

An index that Hudi has declares ``HUDI = HudiCounterpart(...)`` in its own folder: the
translation of its resolved parameters into Hudi's write options (Hudi's keys), and the
table types Hudi accepts it on. ``peers.hudi`` asks every index in a run for this role
and writes series ``hudi-<index>`` with the options it returns; generic code never
names an index. Indexes without it (Hudi has no such index) have ``HUDI = None``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from indexes.base import Price
from tableformat.table_type import COPY_ON_WRITE, MERGE_ON_READ

# what a metadata_figures entry reads of the metadata partition's write stats
METADATA_FIGURES = ("records", "files", "bytes")

# Hudi keys of the client-side file sizing (``HoodieWriteConfig``): a counterpart that
# sets them shares them with Hudi's default index series (``hudi-simple``), so both size
# files alike in one run.
FILE_SIZING_KEYS = (
    "hoodie.parquet.max.file.size", "hoodie.parquet.small.file.limit",
    "hoodie.copyonwrite.insert.split.size", "hoodie.copyonwrite.insert.auto.split",
    "hoodie.copyonwrite.record.size.estimate", "hoodie.record.size.estimation.threshold",
    "_hoodie.record.size.estimator.max.commits",
    "hoodie.record.size.estimator.average.metadata.size",
    "hoodie.merge.small.file.group.candidates.limit",
)


@dataclass(frozen=True)
class HudiCounterpart:
    """``options(index)``: Hudi's write options for the index's resolved parameters
    (``index.params``); ``table_types``: the types Hudi runs it on, ``refused`` why not
    on the others (one line, shown where the row is absent); ``note``: how Hudi's
    counterpart differs by design (docs and run.json); ``same_placement``: whether
    Hudi's writer must put each record where ours does; ``judged`` and ``explained``:
    what ``indexbench fidelity`` holds against Hudi's writer, and which misses
    docs/fidelity.md explains; ``metadata_figures``: where Hudi keeps the index in its
    metadata table, read into Hudi's rows under our counters' names; ``hudi_prices``:
    what Hudi's writer does for it beyond ours, priced on our counters by a profile of
    Hudi's writer."""

    options: Callable[[Any], dict[str, str]]
    table_types: tuple[str, ...] = (COPY_ON_WRITE, MERGE_ON_READ)
    refused: str = ""
    note: str = ""
    # Hudi settings the counterpart cannot run without (the record-level index lives in
    # the metadata table): a run's --set hudi:... that contradicts one leaves it out
    requires: tuple[tuple[str, str], ...] = ()
    requires_why: str = ""
    # Hudi puts every record in the same file group as ours by design (a bucket index:
    # the bucket is a function of the key): ``indexbench fidelity`` joins both tables on
    # the record key and wants every record placed alike
    same_placement: bool = False
    # the fidelity checks (reports.fidelity.CHECKS names) that compare like with like
    # for this counterpart (None: all); the others are shown, not judged, e.g. where
    # Hudi places records its own way by design
    judged: tuple[str, ...] | None = None
    # (check name, table type "cow"/"mor" or "" for both, why): a miss of that check
    # that docs/fidelity.md explains by a measurement; the verdict says "explained" and
    # gives the reason
    explained: tuple[tuple[str, str, str], ...] = ()
    # our parameters that make our figures bit-comparable to Hudi's where the default
    # differs only in a detail Hudi cannot change (bloom: Hudi's filter bit positions);
    # ``indexbench fidelity`` sets them unless the run sets them itself
    fidelity_params: tuple[tuple[str, str], ...] = ()
    # why Hudi's writer cannot continue a table of ours made with these parameters (the
    # index instance; "" or None: it can), said before Hudi writes anything
    continue_refusal: Callable[[Any], str | None] | None = None
    # Where Hudi's writer keeps this index in its metadata table, read for each batch by
    # ``peers.hudi`` from the metadata table's delta commit of the batch's instant:
    # (metadata partition, our column, what of its write stats: "records" their
    # numWrites, "files" how many, "bytes" their totalWriteBytes). Hudi's figures, under
    # the names of the counters ours counts for the same work.
    metadata_figures: tuple[tuple[str, str, str], ...] = ()
    # Work Hudi's writer does for this index beyond ours, priced on those counters when
    # a profile of Hudi's own writer models it (``CostProfile.writer``; the record-level
    # index: the metadata table's upsert, a Spark job of its own at the commit)
    hudi_prices: tuple[tuple[str, Price], ...] = ()

    def __post_init__(self) -> None:
        for entry in self.metadata_figures:
            if len(entry) != 3 or entry[2] not in METADATA_FIGURES:
                raise ValueError(f"a metadata figure is (partition, column, one of "
                                 f"{METADATA_FIGURES}), not {entry!r}")
        for entry in self.hudi_prices:
            if len(entry) != 2 or not isinstance(entry[1], Price):
                raise ValueError(f"a Hudi price is (counter, Price), not {entry!r}")

    def refusal(self, table_type: str, settings: Mapping[str, str] | None = None
                ) -> str | None:
        """Why Hudi has no such table with these settings (None: it has)."""
        if table_type not in self.table_types:
            return self.refused or f"Hudi does not run this index on {table_type}"
        for key, value in self.requires:
            given = (settings or {}).get(key)
            if given is not None and str(given).lower() != value:
                return f"{key}={given}: {self.requires_why or 'Hudi needs ' + value}"
        return None


def flag(value: Any) -> str:
    """A boolean as Hudi's configs spell it."""
    return "true" if value else "false"


__all__ = ["FILE_SIZING_KEYS", "METADATA_FIGURES", "HudiCounterpart", "flag"]
