"""What the Spark driver keeps about the caches its assigner tasks hold: no key state.

Per resident partition the eviction flow's flags; per (partition, assigner) share the
token (tag of its committed state, which a worker's copy must carry to be trusted) and
the share's bytes, keys and collisions as its task last reported them. These entries
stand in :class:`~indexes.dynamic_rli.eviction.PartitionCaches` where the simulator
keeps the shares themselves, so the same core runs the seed's flow over them and
reports the same logical figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from indexes.dynamic_rli.core import DynamicRliCore
from indexes.dynamic_rli.shares import PartitionShares


@dataclass
class ShareMeta:
    token: str | None = None
    nbytes: int = 0
    keys: int = 0
    collisions: int = 0


@dataclass
class PartitionMeta:
    """A resident partition as the driver sees it: flags and per-share figures."""

    num_assigners: int
    shares: dict[int, ShareMeta] = field(default_factory=dict)
    updated: bool = False
    last_updated_checkpoint: str | None = None
    accessed: bool = False

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.shares.values())

    @property
    def num_keys(self) -> int:
        return sum(s.keys for s in self.shares.values())

    @property
    def collisions(self) -> int:
        return sum(s.collisions for s in self.shares.values())

    def tokens(self) -> tuple[str | None, ...]:
        return tuple(self.shares[a].token if a in self.shares else None
                     for a in range(self.num_assigners))


def driver_key_bytes(core: DynamicRliCore) -> int:
    """Bytes of key -> bucket state the driver's core holds (arrays of the batch's new
    keys, caches holding maps): measured, 0 when the caches live in the tasks."""
    arrays = [*core.new.values(), *core.new_buckets.values()]
    held = sum(int(a.nbytes) for a in arrays if isinstance(a, np.ndarray))
    return held + sum(core.caches[p].nbytes for p in core.caches
                      if isinstance(core.caches[p], PartitionShares))


def apply_task_stats(core: DynamicRliCore, stats: list[dict], instant: str
                     ) -> tuple[dict[tuple[str, int], str], list[dict]]:
    """Fold the assigner tasks' reports into the core's logical figures and flags.

    Returns the tags the shares will have once ``instant`` commits and the RLI files
    the tasks wrote (partition, path, bytes, entries, hashes, per_bucket)."""
    tags: dict[tuple[str, int], str] = {}
    written: list[dict] = []
    booted: set[str] = set()
    P = core.num_assigners
    for task in stats:
        a = int(task["assigner"])
        for p, r in sorted(task["parts"].items()):
            if p not in core.caches:
                core.caches[p] = PartitionMeta(P)
            meta = core.caches[p]
            meta.accessed = True
            meta.updated |= r["new"] > 0
            meta.shares[a] = ShareMeta(meta.shares.get(a, ShareMeta()).token, r["nbytes"],
                                       r["keys"], r["collisions"])
            tags[(p, a)] = r["tag"]
            if r["fresh"] and r["loaded"]:  # the logical bootstrap of the partition
                booted.add(p)
                core.count(keys_bootstrapped=r["keys_loaded"], rli_bytes_read=r["bytes_read"],
                           bootstrap_s=r["load_s"])
            core.count(buckets_created=len(r["created"]),
                       hash_collisions=r["entries"] - r["new"],
                       rli_entries_written=r["entries"])
            if r["rli"]:
                written.append({"partition": p, **r["rli"]})
    for p in booted:  # files read: each share reads its own files of the partition
        core.count(partitions_bootstrapped=1, rli_files_read=sum(
            t["parts"][p]["files_read"] for t in stats if p in t["parts"]))
    return tags, written


def record_collided(core: DynamicRliCore, partition: str, assigner: int, entries: int,
                    tags: dict[tuple[str, int], str], instant: str) -> None:
    """RLI entries of new keys whose hash an existing key had (found after the write):
    the share's collisions grow, and its workers' copies (which never saw these keys'
    bucket counts) must reload once the instant commits."""
    core.count(hash_collisions=entries, rli_entries_written=entries)
    if partition in core.caches:
        share = core.caches[partition].shares.setdefault(assigner, ShareMeta())
        share.collisions += entries
        tags[(partition, assigner)] = f"{instant}.reload"


def commit_tags(core: DynamicRliCore, tags: dict[tuple[str, int], str]) -> None:
    """The instant committed: its tags become the shares' tokens (resident ones)."""
    for (p, a), tag in tags.items():
        if p in core.caches:
            core.caches[p].shares.setdefault(a, ShareMeta()).token = tag


def distrust(core: DynamicRliCore, partitions: list[str]) -> None:
    """A failed instant: no worker copy of these partitions' shares is trusted again."""
    for p in partitions:
        if p in core.caches:
            for s in core.caches[p].shares.values():
                s.token = None
