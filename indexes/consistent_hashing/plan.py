"""Which buckets a resize splits and merges: Hudi's consistent-bucket clustering plan.

A port of ``SparkConsistentBucketClusteringPlanStrategy`` over file sizes (no Spark):
per partition, every file group larger than ``split.threshold × max file size`` is split
in two while the ring stays under ``max.num.buckets``; then runs of ring neighbours
each smaller than ``merge.threshold × max file size`` (and together too) are merged
while the ring stays above ``min.num.buckets``. Hudi also rewrites every other file
group of the partition when clustering sorts; this plan has no sort columns, so only
split and merge groups are planned. A partition with a resize pending is skipped
(Hudi: one clustering per partition at a time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from indexes.consistent_hashing.ring import Node, Ring

SPLIT, MERGE = "split", "merge"
# the replacecommit's clustering strategy, as Hudi's plan names it
EXECUTION_STRATEGY = ("org.apache.hudi.client.clustering.run.strategy."
                      "SparkConsistentBucketClusteringExecutionStrategy")


@dataclass(frozen=True)
class ResizeGroup:
    """One clustering group: input file groups and the child nodes that replace them."""

    partition: str
    kind: str  # split | merge
    file_ids: tuple[str, ...]
    children: tuple[Node, ...]


@dataclass
class ResizePlan:
    """A resize of some partitions' rings: the groups, and each partition's new ring."""

    instant: str
    groups: list[ResizeGroup] = field(default_factory=list)
    rings_before: dict[str, Ring] = field(default_factory=dict)
    rings_after: dict[str, Ring] = field(default_factory=dict)

    @property
    def splits(self) -> int:
        return sum(g.kind == SPLIT for g in self.groups)

    @property
    def merges(self) -> int:
        return sum(g.kind == MERGE for g in self.groups)

    def input_file_ids(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for g in self.groups:
            out.setdefault(g.partition, set()).update(g.file_ids)
        return out

    def to_json(self) -> dict:
        """The requested replacecommit's body: Hudi's clustering plan fields, each
        group's child nodes in ``clustering.group.child.node`` as Hudi's plan has them."""
        return {
            "operationType": "CLUSTER",
            "clusteringPlan": {
                "inputGroups": [{
                    "slices": [{"partitionPath": g.partition, "fileId": f}
                               for f in g.file_ids],
                    "numOutputFileGroups": 2 if g.kind == SPLIT else 1,
                    "extraMetadata": {
                        "clustering.group.partition": g.partition,
                        "clustering.group.child.node": json.dumps(
                            [c.to_json() for c in g.children]),
                        "clustering.group.sequence.no": str(
                            self.rings_before[g.partition].seq_no),
                        "indexbench.resize.kind": g.kind,
                    }} for g in self.groups],
                "strategy": {"strategyClassName": EXECUTION_STRATEGY},
            },
            "indexbench.rings.before": {p: r.to_json() for p, r in self.rings_before.items()},
        }

    @classmethod
    def from_json(cls, instant: str, body: dict) -> ResizePlan:
        before = {p: Ring.from_json(r) for p, r in body["indexbench.rings.before"].items()}
        groups = []
        for g in body["clusteringPlan"]["inputGroups"]:
            meta = g["extraMetadata"]
            groups.append(ResizeGroup(
                meta["clustering.group.partition"], meta["indexbench.resize.kind"],
                tuple(s["fileId"] for s in g["slices"]),
                tuple(Node.from_json(n) for n in json.loads(meta["clustering.group.child.node"]))))
        return with_rings(cls(instant, groups, before))


def is_resize_plan(body: dict) -> bool:
    return "indexbench.rings.before" in body and "clusteringPlan" in body


def with_rings(plan: ResizePlan) -> ResizePlan:
    """Fill each partition's ring after the resize from its groups' children."""
    children: dict[str, list[Node]] = {}
    for g in plan.groups:
        children.setdefault(g.partition, []).extend(g.children)
    plan.rings_after = {p: plan.rings_before[p].apply(c, plan.instant)
                        for p, c in sorted(children.items())}
    return plan


def plan_partition(ring: Ring, sizes: dict[str, int], split_size: int,
                   merge_size: int, max_buckets: int, min_buckets: int) -> list[ResizeGroup]:
    """Split and merge groups of one partition (``sizes``: bytes per file group that has
    a base file; nodes without one are never planned, as Hudi plans file slices)."""
    # file slices in ring order (Hudi sorts them for the merge pass)
    slices = sorted((i, fid) for fid in sizes
                    if (i := ring.node_of_file(fid)) is not None)
    groups: list[ResizeGroup] = []
    split_slot = max_buckets - ring.num_buckets
    untouched = []
    for i, fid in slices:
        children = ring.split_children(i) \
            if sizes[fid] > split_size and split_slot > 0 else None
        if children is None:
            untouched.append((i, fid))
            continue
        split_slot -= 1
        groups.append(ResizeGroup(ring.partition, SPLIT, (fid,), tuple(children)))
    splits = (max_buckets - ring.num_buckets) - split_slot
    merge_slot = ring.num_buckets - min_buckets + splits
    groups += _merge_groups(ring, untouched, sizes, merge_size, merge_slot)
    return groups


def _merge_groups(ring: Ring, slices: list[tuple[int, str]], sizes: dict[str, int],
                  merge_size: int, slot: int) -> list[ResizeGroup]:
    """``buildMergeClusteringGroup``: grow a run backwards then forwards from each small
    file group over ring neighbours that are small too, while the slot lasts."""
    n = len(slices)
    if n <= 1:
        return []
    added = [False] * n
    groups = []
    for i in range(n):
        if added[i] or sizes[slices[i][1]] > merge_size:
            continue
        rng = [i, i]
        total = sizes[slices[i][1]]
        for k, forward in ((0, False), (1, True)):
            while True:
                nxt = (rng[k] + 1) % n if forward else (rng[k] - 1) % n
                # neighbours: the earlier slice's node is the later one's ring predecessor
                a, b = (rng[k], nxt) if forward else (nxt, rng[k])
                neighbour = ring.former(slices[b][0]) == slices[a][0]
                if (slot == 0 or added[nxt] or nxt == rng[1 - k] or not neighbour
                        or total > merge_size
                        or sizes[slices[nxt][1]] > merge_size):
                    break
                total += sizes[slices[nxt][1]]
                rng[k] = nxt
                slot -= 1
                if rng[k] == i:
                    break
        start, end = rng
        if start == i and end == i:
            continue
        members = []
        while True:
            added[start] = True
            members.append(slices[start])
            if start == end:
                break
            start = (start + 1) % n
        groups.append(ResizeGroup(ring.partition, MERGE, tuple(f for _, f in members),
                                  tuple(ring.merge_children([j for j, _ in members]))))
    return groups


def plan_resize(snapshot, rings: dict[str, Ring], split_size: int, merge_size: int,
                max_buckets: int, min_buckets: int, instant: str = "") -> ResizePlan | None:
    """A resize of every partition in ``rings`` that needs one (None: nothing to do).
    ``instant`` may be set later (:func:`with_rings` again): names do not depend on it."""
    sizes: dict[str, dict[str, int]] = {}
    for s in snapshot.in_partitions(rings):
        sizes.setdefault(s.partition, {})[s.file_id] = s.size_bytes
    plan = ResizePlan(instant)
    for p, ring in sorted(rings.items()):
        groups = plan_partition(ring, sizes.get(p, {}), split_size, merge_size,
                                max_buckets, min_buckets)
        if groups:
            plan.groups += groups
            plan.rings_before[p] = ring
    return with_rings(plan) if plan.groups else None
