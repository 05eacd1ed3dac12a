"""The consistent-hashing ring of one partition (RFC-42), over arrays: no Spark.

Hudi's ``HoodieConsistentHashingMetadata`` is a list of nodes ``(value, fileIdPrefix)``
on a ring over ``[0, Integer.MAX_VALUE]``; a key belongs to the first node whose value
is >= ``xxhash32(key) & Integer.MAX_VALUE`` (wrapping to the first node), and a node's
file group is ``fileIdPrefix + "-0"``. A split puts a node halfway between a node and
its predecessor (both halves get new file groups); a merge deletes all but the last
node of a run of neighbours (which gets a new file group). These are
``ConsistentBucketIdentifier``'s rules; :func:`locate` is its ``getBucket`` vectorized
(a ``searchsorted`` over the node values).

Where a ring lives: every resize's replacecommit records the new rings of the
partitions it changed in its extraMetadata (:data:`RINGS_KEY`), so the committed ring of
a partition is a function of the snapshot — the same on a real table and in the
simulator's model table; a partition no resize touched has Hudi's default ring. Real
tables also get Hudi's ``.hashing_meta`` files (:mod:`indexes.consistent_hashing.storage`).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tableformat.commit_metadata import written_by_indexbench
from tableformat.errors import TableConfigError

HASH_VALUE_MASK = 0x7FFFFFFF  # Integer.MAX_VALUE: the ring's upper bound
INIT_INSTANT = "00000000000000000"  # Hudi's INIT_INSTANT_TS: a partition's default ring
RINGS_KEY = "indexbench.consistent.hashing.rings"  # extraMetadata: {partition: ring JSON}
NORMAL, REPLACE, DELETE = "NORMAL", "REPLACE", "DELETE"  # ConsistentHashingNode.NodeTag


def locate(values: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Index of the first node value >= each hash, wrapping past the last to the first
    (``ConsistentBucketIdentifier.getBucket``), for sorted node ``values``."""
    values = np.asarray(values, dtype=np.int64)
    idx = np.searchsorted(values, np.asarray(hashes, dtype=np.int64), side="left")
    idx[idx == len(values)] = 0
    return idx


@dataclass(frozen=True)
class Node:
    """A ring node: upper bound of its hash range, and its file group's id prefix."""

    value: int
    file_id_prefix: str | None
    tag: str = NORMAL

    @property
    def file_id(self) -> str:
        """``FSUtils.createNewFileId(prefix, 0)``: one file group per bucket."""
        return f"{self.file_id_prefix}-0"

    def to_json(self) -> dict:
        return {"value": self.value, "fileIdPrefix": self.file_id_prefix, "tag": self.tag}

    @classmethod
    def from_json(cls, d: dict) -> Node:
        return cls(int(d["value"]), d.get("fileIdPrefix"), d.get("tag") or NORMAL)


def default_file_id_prefix(partition: str, start: int, end: int) -> str:
    """Hudi 1.2's ``HoodieConsistentHashingMetadata.generateUUID``: the name-based (MD5,
    version 3) uuid of the node's range ``start``, ``end`` (big-endian longs) followed by
    the partition path's UTF-8 bytes, so Hudi's writer, loading a partition no resize
    touched, builds the same ring with the same file groups as ours."""
    name = struct.pack(">qq", start, end) + partition.encode()
    return str(uuid.UUID(bytes=hashlib.md5(name).digest(), version=3))


def legacy_default_postfix(partition: str) -> str:
    """The default ring's names before 2026-11-28 were Hudi 0.14's ``%08d-`` + this: the
    partition path cut like a uuid's tail (``partitionPathToUuidPostfix``). Only to
    recognise a table made then, which Hudi 1.2's writer cannot continue."""
    tail = re.sub(r"[^0-9A-Za-z=.-]", "0", partition.replace("/", "")[-24:]).rjust(24, "0")
    return f"{tail[:4]}-{tail[4:8]}-{tail[8:12]}-{tail[12:24]}"


def new_file_id_prefix(partition: str, seq_no: int, value: int) -> str:
    """A child node's file id prefix. Hudi draws a random uuid; here it is a pure
    function of (partition, the ring version it enters, node value), so a retried
    resize and the simulator name it alike, and no two versions reuse a name."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"consistent-hashing/{partition}/{seq_no}/{value}"))


@dataclass(frozen=True)
class Ring:
    """The committed ring of one partition (nodes sorted by value, all ``NORMAL``)."""

    partition: str
    instant: str
    seq_no: int
    nodes: tuple[Node, ...]
    values: np.ndarray = field(init=False, repr=False, compare=False)
    _by_file: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        vals = np.array([n.value for n in self.nodes], dtype=np.int64)
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "_by_file", {n.file_id: i for i, n in enumerate(self.nodes)})

    @classmethod
    def default(cls, partition: str, num_buckets: int) -> Ring:
        """Hudi 1.2's ``constructDefaultHashingNodes``: ``num_buckets`` equal ranges,
        node ``i`` (from 0) at ``min(step·(i+1), MAX)``, its prefix the uuid of its range
        (:func:`default_file_id_prefix`)."""
        step = (HASH_VALUE_MASK + num_buckets - 1) // num_buckets
        ends = [min(step * i, HASH_VALUE_MASK) for i in range(1, num_buckets + 1)]
        nodes = tuple(Node(end, default_file_id_prefix(partition, start, end))
                      for start, end in zip([0, *ends[:-1]], ends, strict=True))
        return cls(partition, INIT_INSTANT, 0, nodes)

    @property
    def num_buckets(self) -> int:
        return len(self.nodes)

    @property
    def file_ids(self) -> list[str]:
        return [n.file_id for n in self.nodes]

    def locate(self, hashes: np.ndarray) -> np.ndarray:
        """Node index of every hash (``ring.tailMap(h)``'s first node, else the first)."""
        return locate(self.values, hashes)

    def node_of_file(self, file_id: str) -> int | None:
        """The node whose file group ``file_id`` is (``getBucketByFileId``)."""
        return self._by_file.get(file_id)

    def former(self, i: int) -> int:
        """The predecessor of node ``i`` on the ring (wrapping)."""
        return (i - 1) % len(self.nodes)

    def split_children(self, i: int) -> list[Node] | None:
        """``splitBucket``: two REPLACE nodes, at the middle of node ``i``'s range and at
        its value, each with a new file group; None when the range cannot be halved."""
        prev, cur = self.nodes[self.former(i)].value, self.nodes[i].value
        mid = prev + cur + (0 if prev < cur else HASH_VALUE_MASK + 1)
        mid = (mid >> 1) & HASH_VALUE_MASK
        if mid in (prev, cur):
            return None
        seq = self.seq_no + 1
        return [Node(mid, new_file_id_prefix(self.partition, seq, mid), REPLACE),
                Node(cur, new_file_id_prefix(self.partition, seq, cur), REPLACE)]

    def merge_children(self, idxs: list[int]) -> list[Node]:
        """``mergeBucket``: DELETE every node of a run of neighbours but the last, which
        is REPLACEd by a node with a new file group."""
        for a, b in zip(idxs, idxs[1:], strict=False):
            if self.former(b) != a:
                raise ValueError("cannot merge a discontinuous hash range")
        last = self.nodes[idxs[-1]].value
        return [Node(self.nodes[i].value, None, DELETE) for i in idxs[:-1]] + \
            [Node(last, new_file_id_prefix(self.partition, self.seq_no + 1, last), REPLACE)]

    def apply(self, children: Iterable[Node], instant: str) -> Ring:
        """The ring once a resize's children take effect (Hudi's ``initialize`` with
        children nodes): REPLACE puts a node at its value, DELETE removes it."""
        by_value = {n.value: n for n in self.nodes}
        for c in children:
            if c.tag == REPLACE:
                by_value[c.value] = Node(c.value, c.file_id_prefix)
            elif c.tag == DELETE:
                by_value.pop(c.value, None)
            else:
                raise ValueError(f"child node tagged {c.tag}")
        return Ring(self.partition, instant, self.seq_no + 1,
                    tuple(by_value[v] for v in sorted(by_value)))

    # ---- Hudi's JSON ------------------------------------------------------
    def to_json(self) -> dict:
        """``HoodieConsistentHashingMetadata``'s fields."""
        return {"version": 0, "partitionPath": self.partition, "instant": self.instant,
                "numBuckets": self.num_buckets, "seqNo": self.seq_no,
                "nodes": [n.to_json() for n in self.nodes]}

    @classmethod
    def from_json(cls, d: dict) -> Ring:
        return cls(d["partitionPath"], d["instant"], int(d.get("seqNo", 0)),
                   tuple(Node.from_json(n) for n in d["nodes"]))

    def problems(self) -> list[str]:
        """A ring's own invariants (``verify``)."""
        out = []
        if not self.nodes:
            out.append(f"partition {self.partition!r}: the ring has no node")
        if len(self.values) and ((np.diff(self.values) <= 0).any() or self.values[0] < 0
                                 or self.values[-1] > HASH_VALUE_MASK):
            out.append(f"partition {self.partition!r}: ring node values are not strictly "
                       f"increasing within [0, {HASH_VALUE_MASK}]")
        if len({n.file_id for n in self.nodes}) != len(self.nodes):
            out.append(f"partition {self.partition!r}: two ring nodes share a file group")
        return out


def committed_rings(snapshot, partitions: Iterable[str], num_buckets: int) -> dict[str, Ring]:
    """Each partition's ring as of the snapshot: the latest completed resize that set it
    (:data:`RINGS_KEY`), else Hudi's default ring of ``num_buckets`` nodes."""
    wanted = set(partitions)
    found: dict[str, Ring] = {}
    for instant in reversed(snapshot.completed):
        extra = snapshot.extra.get(instant, {})
        raw = extra.get(RINGS_KEY)
        if not raw and snapshot.operations.get(instant) == "CLUSTER" and \
                not written_by_indexbench(extra):
            raise TableConfigError(
                f"instant {instant} is a clustering by Hudi's own writer: it changed rings "
                "that only its .hashing_meta files record, and this harness reads rings from "
                "its own replacecommits; continue the table with Hudi's writer, or have it "
                "write with hoodie.clustering.inline=false")
        if not raw:
            continue
        for p, ring in json.loads(raw).items():
            if p in wanted and p not in found:
                found[p] = Ring.from_json(ring)
        if len(found) == len(wanted):
            break
    rings = {p: found.get(p) or Ring.default(p, num_buckets) for p in sorted(wanted)}
    for p in rings.keys() - found.keys():  # a default ring: its 0.14 names, looked up
        post = legacy_default_postfix(p)
        legacy = (f"{i:08d}-{post}-0" for i in range(num_buckets))
        if (old := next((f for f in legacy if (p, f) in snapshot.slices), None)) is not None:
            raise TableConfigError(
                f"partition {p!r} holds file group {old}, named by Hudi 0.14's default "
                "ring (made before 2026-11-28); Hudi 1.2 and this harness name it by the "
                "uuid of its range: write the table again")
    return rings


def rings_metadata(rings: Iterable[Ring]) -> str:
    """The :data:`RINGS_KEY` value of a resize: the new rings of the partitions it changed."""
    return json.dumps({r.partition: r.to_json() for r in rings}, separators=(",", ":"))
