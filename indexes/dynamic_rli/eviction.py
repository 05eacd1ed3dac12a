"""Partition caches and the design's eviction flow, run at every checkpoint (= commit).

At ``snapshot(checkpoint, latest_successful)``, for every resident partition:
``updated`` -> ``lastUpdatedCheckpoint = checkpoint``; not updated and
``lastUpdatedCheckpoint <= latest_successful`` -> evict; otherwise keep (its new
mappings are not committed to the RLI yet); finally ``updated = False`` everywhere.
Checkpoint ids are instants (17-digit strings, so ``<=`` is time order); ``None`` means
never updated, which sorts before every checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _le(a: str | None, b: str | None) -> bool:
    """``a <= b`` with None as minus infinity."""
    return a is None or (b is not None and a <= b)


class PartitionCaches:
    """The resident partitions (``Partition -> {recordKeyHash -> bucketId}``).

    An entry is anything with the flow's flags (``updated``, ``accessed``,
    ``last_updated_checkpoint``) and ``nbytes``, ``num_keys``, ``collisions``: the
    partition's shares (:class:`~indexes.dynamic_rli.shares.PartitionShares`, the
    simulator) or the Spark driver's metadata of shares held by executor tasks
    (:class:`~indexes.dynamic_rli.ledger.PartitionMeta`).
    """

    def __init__(self, keep_accessed: bool = False):
        # keep_accessed: also keep partitions merely looked up in the interval (Paimon's
        # `accessed`); False follows the design document literally.
        self.keep_accessed = keep_accessed
        self._parts: dict[str, Any] = {}

    def __contains__(self, partition: str) -> bool:
        return partition in self._parts

    def __getitem__(self, partition: str) -> Any:
        return self._parts[partition]

    def __setitem__(self, partition: str, index: Any) -> None:
        self._parts[partition] = index

    def __len__(self) -> int:
        return len(self._parts)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._parts))

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self._parts.values())

    def keys(self) -> int:
        return sum(p.num_keys for p in self._parts.values())

    def snapshot(self, checkpoint: str, latest_successful: str | None) -> list[str]:
        """The eviction flow; returns the evicted partitions."""
        evicted = []
        for name, p in list(self._parts.items()):
            if p.updated:
                p.last_updated_checkpoint = checkpoint
            elif self.keep_accessed and p.accessed:
                pass
            elif _le(p.last_updated_checkpoint, latest_successful):
                del self._parts[name]
                evicted.append(name)
            # else: keep, mappings of an uncommitted checkpoint are only here
            p.updated = False
            p.accessed = False
        return sorted(evicted)

    def invalidate_uncommitted(self, latest_successful: str | None) -> list[str]:
        """After a failed commit: drop partitions holding mappings the RLI never got,
        so they are bootstrapped again from committed entries (a failover's restore)."""
        dropped = []
        for name, p in list(self._parts.items()):
            if p.updated or not _le(p.last_updated_checkpoint, latest_successful):
                del self._parts[name]
                dropped.append(name)
        return sorted(dropped)
