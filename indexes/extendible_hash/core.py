"""extendible-hash core (no Spark): the directory, routing through it, and split plans.

Extendible hashing (Fagin, Nievergelt, Pippenger and Strong, 1979) over Hudi's bucket
hash. Per partition a **directory** of ``2^d`` pointers (``d``: its global depth) maps
the low ``d`` bits of ``h = List<String>.hashCode() & Integer.MAX_VALUE`` — the hash
simple-bucket uses (:mod:`indexes.hashing`) — to a bucket. A bucket of local depth
``l ≤ d`` holds exactly the keys whose low ``l`` bits are its id ``p < 2^l``, so the
``2^(d−l)`` entries ``i`` with ``i mod 2^l = p`` point at it and its id is the smallest
of them. Bucket ids are therefore unique in a partition, fit Hudi's 8-digit bucket file
id (RFC-29: the id is parsed back from the file name) and, with every local depth equal
to ``d``, are ``h % 2^d``: a simple-bucket table of ``N = 2^d`` buckets is the start.

A bucket over capacity **splits alone**: its local depth goes to ``l + 1``, the keys
with bit ``l`` set move to the new bucket ``p + 2^l`` (exactly multiple-rehash's
``% 2N`` rehash of one bucket, :func:`indexes.bucket.rescale.split_rows`), and the
directory doubles only when ``l = d`` (the new upper half repeats the lower one). Each
version of a partition's directory is recorded in the extraMetadata of the split's
replacecommit (:data:`DIRECTORY_KEY`), so the committed directory is a function of the
snapshot — the same on a real table and in the simulator's model table.
"""

from __future__ import annotations

import bisect
import heapq
import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from indexes.bucket.rescale import RescaleError, RescalePlan, wanted_partitions
from indexes.bucket.rescale_rows import rescale_figures
from indexes.bucket.routing import partition_codes
from indexes.hashing import INT32_MAX, java_list_hash
from tableformat.basefile import bucket_of_file_id
from tableformat.commit_metadata import SPARK_SCHEMA_KEY

INIT_INSTANT = "00000000000000000"  # Hudi's INIT_INSTANT_TS: a partition's first directory
# extraMetadata of a split's replacecommit: the partition's new directory (its JSON)
DIRECTORY_KEY = "indexbench.extendible.hashing.directory"
# extraMetadata of a split: what it did ({partition, bucket, newBucket, localDepth, ...})
SPLIT_KEY = "indexbench.extendible.hashing.split"
MAX_DEPTH = 26  # 2^26 < 10^8: every bucket id fits Hudi's 8-digit bucket file id
RECORDS, BYTES = "records", "bytes"
SPLIT = "split"  # the ``mode`` of a split's metrics row


def masked_hash(columns: Any) -> np.ndarray:
    """Hudi's bucket hash of every row, ``hashCode() & Integer.MAX_VALUE`` (int64)."""
    return (java_list_hash(columns).view(np.uint32) & np.uint32(INT32_MAX)).astype(np.int64)


def depth_of(num_buckets: int) -> int:
    """``log2`` of a power of two (the global depth of ``num_buckets`` entries)."""
    if num_buckets < 1 or num_buckets & (num_buckets - 1):
        raise ValueError(f"{num_buckets} is not a power of two")
    return num_buckets.bit_length() - 1


BUCKET_JSON = '{"bucketId":%d,"localDepth":%d}'  # one bucket of the stored directory
_ITEMS = "_split_json_items"  # where a directory made by a split keeps its JSON items


@dataclass(frozen=True, eq=False)
class Directory:
    """One partition's directory: ``2^d`` pointers and the local depth of each bucket.
    Immutable (its pointers are read-only): a split makes a new one."""

    partition: str
    global_depth: int
    pointers: np.ndarray  # int32, 2^d entries: the bucket id each entry points at
    local_depths: dict[int, int]  # bucket id -> its local depth
    seq_no: int = 0  # versions of this partition's directory before this one
    instant: str = INIT_INSTANT  # the split that made it (INIT: the initial directory)

    def __post_init__(self) -> None:
        self.pointers.setflags(write=False)

    @classmethod
    def initial(cls, partition: str, num_buckets: int) -> Directory:
        """``num_buckets = 2^d`` buckets of local depth ``d``, entry ``i`` → bucket ``i``:
        simple-bucket's ``h % N``."""
        d = depth_of(num_buckets)
        return cls(partition, d, np.arange(num_buckets, dtype=np.int32),
                   dict.fromkeys(range(num_buckets), d))

    @property
    def size(self) -> int:
        """Entries of the directory, ``2^d``."""
        return 1 << self.global_depth

    @property
    def num_buckets(self) -> int:
        return len(self.local_depths)

    def route(self, hashes: np.ndarray) -> np.ndarray:
        """Bucket of every masked hash: the entry of its low ``d`` bits."""
        return self.pointers[np.asarray(hashes, dtype=np.int64) & (self.size - 1)]

    def can_split(self, bucket: int, max_entries: int) -> bool:
        """Whether ``bucket`` may split without the directory outgrowing ``max_entries``
        (a split at ``l = d`` doubles it)."""
        return self.local_depths[bucket] < self.global_depth or self.size * 2 <= max_entries

    def split(self, bucket: int, instant: str = "") -> Directory:
        """The directory once ``bucket`` (``p``, depth ``l``) split: ``p`` and ``p + 2^l``
        at depth ``l + 1``; doubled first when ``l = d``. ``instant``: the split's."""
        depth = self.local_depths[bucket]
        pointers = self.pointers
        d = self.global_depth
        if depth == d:
            if d >= MAX_DEPTH:
                raise ValueError(f"partition {self.partition!r}: the directory is at its "
                                 f"largest (2^{MAX_DEPTH} entries)")
            pointers = np.concatenate([pointers, pointers])
            d += 1
        else:
            pointers = pointers.copy()
        entries = np.arange(len(pointers), dtype=np.int64)
        sibling = bucket + (1 << depth)
        moved = np.flatnonzero((pointers == bucket) & (((entries >> depth) & 1) == 1))
        pointers[moved] = sibling
        depths = {**self.local_depths, bucket: depth + 1, sibling: depth + 1}
        out = Directory(self.partition, d, pointers, depths, self.seq_no + 1, instant)
        # its stored form from this one's, edited where the split changed it (the edited
        # items stay with the new directory only: a chain of splits encodes each version
        # in one join, and directories read from the timeline hold no more than before)
        ids, buckets, entries_json = self._json_items()
        ids, buckets = ids.copy(), buckets.copy()
        buckets[bisect.bisect_left(ids, bucket)] = BUCKET_JSON % (bucket, depth + 1)
        at = bisect.bisect_left(ids, sibling)
        if at < len(ids) and ids[at] == sibling:  # (a malformed directory's)
            buckets[at] = BUCKET_JSON % (sibling, depth + 1)
        else:
            ids.insert(at, sibling)
            buckets.insert(at, BUCKET_JSON % (sibling, depth + 1))
        entries_json = entries_json * 2 if d > self.global_depth else entries_json.copy()
        for i in moved.tolist():
            entries_json[i] = str(sibling)
        out.__dict__[_ITEMS] = (ids, buckets, entries_json)
        return out

    def at(self, instant: str) -> Directory:
        """The same directory named after ``instant`` (a plan's, once executed). Its
        stored form differs only in the instant: the rest is encoded once, for both."""
        moved = Directory(self.partition, self.global_depth, self.pointers,
                          self.local_depths, self.seq_no, instant)
        moved.__dict__["_stored_tail"] = self._stored_tail  # the cached_property's slot
        if _ITEMS in self.__dict__:
            moved.__dict__[_ITEMS] = self.__dict__[_ITEMS]
        return moved

    # ---- stored form -------------------------------------------------------------
    def to_json(self) -> dict:
        """The directory as stored: every pointer, every bucket's local depth."""
        return {"version": 1, "partitionPath": self.partition, "instant": self.instant,
                "seqNo": self.seq_no, "globalDepth": self.global_depth,
                "buckets": [{"bucketId": b, "localDepth": d}
                            for b, d in sorted(self.local_depths.items())],
                "pointers": self.pointers.tolist()}

    @cached_property
    def stored(self) -> bytes:
        """The bytes of its ``.hashing_meta`` file (and of its extraMetadata value):
        compact JSON, so the bytes counted are the bytes written. Exactly
        ``json.dumps(self.to_json(), separators=(",", ":"))``, built without it: the
        simulator writes one directory of up to 2^26 entries per split, thousands of
        splits a run, so a split's directory is encoded from the one it split
        (:meth:`split` edits the JSON items it changed), else with one C-level ``%``."""
        head = (f'{{"version":1,"partitionPath":{json.dumps(self.partition)},'
                f'"instant":{json.dumps(self.instant)},').encode()
        return head + self._stored_tail

    @cached_property
    def _stored_tail(self) -> bytes:
        """The stored JSON after the instant: seqNo, globalDepth, buckets, pointers."""
        head = f'"seqNo":{int(self.seq_no)},"globalDepth":{int(self.global_depth)},'
        items = self.__dict__.get(_ITEMS)
        if items is not None:
            return (f'{head}"buckets":[{",".join(items[1])}],'
                    f'"pointers":[{",".join(items[2])}]}}').encode()
        ids = sorted(self.local_depths)
        values = [v for b in ids for v in (b, self.local_depths[b])]
        return (f'{head}"buckets":[{_template(BUCKET_JSON, len(ids))}],'
                f'"pointers":[{_template("%d", len(self.pointers))}]}}'
                % (*values, *self.pointers.tolist())).encode()

    def _json_items(self) -> tuple[list[int], list[str], list[str]]:
        """Bucket ids in order, each one's JSON object, each pointer's JSON: what a
        split edits to encode the new directory (held by directories a split made)."""
        if _ITEMS in self.__dict__:
            return self.__dict__[_ITEMS]
        ids = sorted(self.local_depths)
        return (ids, [BUCKET_JSON % (b, self.local_depths[b]) for b in ids],
                list(map(str, self.pointers.tolist())))

    @classmethod
    def from_json(cls, d: dict) -> Directory:
        return cls(d["partitionPath"], int(d["globalDepth"]),
                   np.asarray(d["pointers"], dtype=np.int32),
                   {int(b["bucketId"]): int(b["localDepth"]) for b in d["buckets"]},
                   int(d.get("seqNo", 0)), d.get("instant") or INIT_INSTANT)

    def problems(self) -> list[str]:
        """The directory's own invariants (``verify``): ``2^d`` entries; every bucket's
        depth ``≤ d`` and id ``< 2^depth``; entry ``i`` points at a bucket whose id is
        ``i mod 2^depth``; each bucket is pointed at by exactly ``2^(d − depth)``
        entries (pointer sharing matches the local depths)."""
        where = f"partition {self.partition!r}: directory version {self.seq_no}"
        d, n = self.global_depth, len(self.pointers)
        if n != self.size:
            return [f"{where} has {n} entries, not 2^{d} = {self.size}"]
        out = [f"{where}: bucket {b} has local depth {ld}, outside 0..{d}"
               for b, ld in sorted(self.local_depths.items()) if not 0 <= ld <= d]
        out += [f"{where}: bucket id {b} is not below 2^{ld}"
                for b, ld in sorted(self.local_depths.items()) if b >= 1 << ld]
        if out:
            return out
        ids = np.array(sorted(self.local_depths), dtype=np.int64)
        unknown = sorted(set(np.unique(self.pointers).tolist()) - set(ids.tolist()))
        if unknown:
            return [f"{where}: entries point at {unknown[:5]}, no bucket of it"]
        depth = np.array([self.local_depths[b] for b in ids.tolist()], dtype=np.int64)
        at = np.searchsorted(ids, self.pointers)
        entries = np.arange(n, dtype=np.int64)
        wrong = int((entries & ((1 << depth[at]) - 1) != self.pointers).sum())
        if wrong:
            out.append(f"{where}: {wrong} entries point at a bucket whose id is not their "
                       "low local-depth bits")
        shared = np.bincount(at, minlength=len(ids))
        want = 1 << (d - depth)
        bad = [int(b) for b, got, w in zip(ids, shared, want, strict=True) if got != w]
        if bad:
            out.append(f"{where}: buckets {bad[:5]} are not pointed at by 2^(d - local "
                       "depth) entries")
        return out




def _template(item: str, n: int) -> str:
    """``n`` copies of a ``%``-template, comma-separated."""
    return ",".join([item] * n)


@lru_cache(maxsize=256)
def initial_directory(partition: str, num_buckets: int) -> Directory:
    return Directory.initial(partition, num_buckets)


@lru_cache(maxsize=1024)
def parse_directory(raw: str) -> Directory:
    """A directory from its extraMetadata value (cached: every snapshot re-reads them)."""
    return Directory.from_json(json.loads(raw))


_STORED_HEAD = '{"version":1,"partitionPath":'  # how Directory.stored begins
_JSON = json.JSONDecoder()


def directory_partition(raw: str) -> str:
    """The partition of a stored directory, read from its head: a timeline of thousands
    of splits is searched for one partition's latest without decoding every pointer
    of every version (a form not starting as :attr:`Directory.stored` does is decoded)."""
    if raw.startswith(_STORED_HEAD):
        try:
            value, _ = _JSON.raw_decode(raw, len(_STORED_HEAD))
        except ValueError:
            value = None
        if isinstance(value, str):
            return value
    return parse_directory(raw).partition


def directory_versions(snapshot) -> list[tuple[str, Directory]]:
    """Every directory version the completed timeline recorded, oldest first."""
    out = []
    for instant in snapshot.completed:
        raw = snapshot.extra.get(instant, {}).get(DIRECTORY_KEY)
        if raw:
            out.append((instant, parse_directory(raw)))
    return out


def committed_directories(snapshot, partitions, num_buckets: int) -> dict[str, Directory]:
    """Each partition's directory as of the snapshot: the latest completed split's,
    else the initial one of ``num_buckets`` entries."""
    wanted = set(partitions)
    found: dict[str, Directory] = {}
    for instant in reversed(snapshot.completed):
        raw = snapshot.extra.get(instant, {}).get(DIRECTORY_KEY)
        if not raw:
            continue
        p = directory_partition(raw)
        if p in wanted and p not in found:
            found[p] = parse_directory(raw)
            if len(found) == len(wanted):
                break
    return {p: found.get(p) or initial_directory(p, num_buckets) for p in sorted(wanted)}


def history_problems(snapshot, num_buckets: int) -> list[str]:
    """Each recorded version is the one before it with the recorded bucket split
    (``verify``): the directory's history on the timeline is coherent."""
    current: dict[str, Directory] = {}
    out = []
    for instant, d in directory_versions(snapshot):
        before = current.get(d.partition) or initial_directory(d.partition, num_buckets)
        split = json.loads(snapshot.extra[instant].get(SPLIT_KEY, "{}"))
        bucket = split.get("bucket")
        if bucket not in before.local_depths:
            out.append(f"instant {instant}: split of {d.partition!r} names bucket {bucket}, "
                       f"no bucket of directory version {before.seq_no}")
        elif before.split(int(bucket), instant).stored != d.stored:
            out.append(f"instant {instant}: directory of {d.partition!r} is not version "
                       f"{before.seq_no} with bucket {bucket} split")
        current[d.partition] = d
    return out


# ---------------------------------------------------------------- routing
@dataclass(frozen=True)
class Router:
    """The directories of some partitions laid end to end, to route rows in numpy."""

    partitions: tuple[str, ...]
    flat: np.ndarray  # every directory's pointers, one after the other
    offset: np.ndarray  # where each partition's directory starts
    mask: np.ndarray  # 2^d − 1 per partition

    @classmethod
    def of(cls, directories: dict[str, Directory]) -> Router:
        parts = tuple(sorted(directories))
        dirs = [directories[p] for p in parts]
        sizes = np.array([d.size for d in dirs], dtype=np.int64)
        flat = np.concatenate([d.pointers for d in dirs]) if dirs else np.empty(0, np.int32)
        offset = np.concatenate([[0], np.cumsum(sizes)])[:-1].astype(np.int64)
        return cls(parts, flat, offset, sizes - 1)

    def sizes(self, partitions: list[str]) -> np.ndarray:
        """Directory entries of each of ``partitions``."""
        at = [self.partitions.index(p) for p in partitions]
        return self.mask[at] + 1

    def route_codes(self, hashes: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Bucket of every masked hash, ``codes`` indexing :attr:`partitions`."""
        codes = np.asarray(codes, dtype=np.int64)
        if not len(codes):
            return np.empty(0, np.int32)
        return self.flat[self.offset[codes] + (hashes & self.mask[codes])].astype(np.int32)

    def route(self, columns, partitions) -> np.ndarray:
        """Bucket of every row (its index-key ``columns``, its partition value)."""
        codes, values = partition_codes(partitions)
        at = np.array([self.partitions.index(v) for v in values], dtype=np.int64)
        return self.route_codes(masked_hash(columns), at[codes] if len(codes) else codes)


# ---------------------------------------------------------------- capacity and plans
@dataclass(frozen=True)
class Capacity:
    """When a bucket is over capacity: its records (a file slice's records, logs
    included, as Hudi sizes slices), or the bytes of its latest base file."""

    mode: str = RECORDS
    max_records: int = 2000
    max_bytes: int = 120 * 1024 * 1024

    def load(self, file_slice) -> int:
        return file_slice.num_records if self.mode == RECORDS else file_slice.size_bytes

    @property
    def limit(self) -> int:
        return self.max_records if self.mode == RECORDS else self.max_bytes

    def over(self, file_slice) -> bool:
        return self.load(file_slice) > self.limit


@dataclass
class SplitPlan(RescalePlan):
    """One bucket's split: the shared rescale plan's fields (``counts``: the partition's
    buckets before and after, ``slices``: the one file slice it rewrites) and the
    directory before and after. ``indexbench rescale --dry-run`` shows it as a rescale."""

    partition: str = ""
    bucket: int = 0
    local_depth: int = 0  # the bucket's, before
    before: Directory | None = None
    after: Directory | None = None

    @property
    def new_bucket(self) -> int:
        """The bucket the records with bit ``local_depth`` set move to."""
        return self.bucket + (1 << self.local_depth)

    @property
    def doubled(self) -> bool:
        return self.after.global_depth > self.before.global_depth


def split_plan(directory: Directory, file_slice) -> SplitPlan:
    """The plan of splitting ``file_slice``'s bucket under ``directory``."""
    bucket = bucket_of_file_id(file_slice.file_id)
    after = directory.split(bucket)
    n = directory.num_buckets
    return SplitPlan(SPLIT, float("nan"), {directory.partition: (n, n + 1)}, [file_slice],
                     partition=directory.partition, bucket=bucket,
                     local_depth=directory.local_depths[bucket], before=directory, after=after)


def plan_split(snapshot, directories: dict[str, Directory], capacity: Capacity,
               max_entries: int) -> SplitPlan | None:
    """The after-commit policy: the bucket most over capacity that may split (ties: by
    partition, then bucket id), or None. One split at a time: each is its own
    replacecommit, and its children are judged again by the next plan."""
    best = None
    for s in snapshot.slices.values():
        if not capacity.over(s):
            continue
        d = directories[s.partition]
        bucket = bucket_of_file_id(s.file_id)
        if bucket not in d.local_depths or not d.can_split(bucket, max_entries):
            continue
        key = (-capacity.load(s), s.partition, bucket)
        if best is None or key < best[0]:
            best = (key, s, d)
    return None if best is None else split_plan(best[2], best[1])


class SplitPlanner:
    """:func:`plan_split`, one split after another, without a pass over every slice per
    plan: the same plans in the same order. Built from a snapshot and its directories,
    then told of each split it planned (:meth:`done`); nothing else may change the
    snapshot meanwhile (the inline service's loop: only its own splits commit).

    Slices over capacity wait in a heap keyed as :func:`plan_split` ranks them (records
    or bytes, descending; then partition, bucket id) and, for equal keys, by their place
    in the snapshot's order (a dict's: a new file group comes last), so the first one of
    the heap that may split is the one the scan would pick. A slice split or replaced
    leaves the heap when it surfaces; a bucket that may not split now never may (its
    local depth is its directory's, which can no longer double) and leaves too; a
    slice whose bucket its directory does not hold (a malformed table) waits."""

    def __init__(self, snapshot, directories: dict[str, Directory], capacity: Capacity,
                 max_entries: int):
        self.directories = dict(directories)
        self.capacity, self.max_entries = capacity, max_entries
        self._live: dict[tuple[str, str], tuple] = {}  # (partition, file id) -> its entry
        self._heap: list[tuple] = []
        self._order = 0
        for s in snapshot.slices.values():
            self._offer(s)
        heapq.heapify(self._heap)

    def _offer(self, s, push: bool = False) -> None:
        self._live.pop((s.partition, s.file_id), None)
        if not self.capacity.over(s):
            return
        entry = (-self.capacity.load(s), s.partition, bucket_of_file_id(s.file_id),
                 self._order, s)
        self._order += 1
        self._live[(s.partition, s.file_id)] = entry
        if push:
            heapq.heappush(self._heap, entry)
        else:
            self._heap.append(entry)

    def next(self) -> SplitPlan | None:
        """The plan :func:`plan_split` would make now (None: nothing may split)."""
        heap, waiting, plan = self._heap, [], None
        while heap:
            entry = heap[0]
            s = entry[-1]
            if self._live.get((s.partition, s.file_id)) is not entry:  # split, replaced
                heapq.heappop(heap)
                continue
            d = self.directories[s.partition]
            bucket = entry[2]
            if bucket not in d.local_depths:
                waiting.append(heapq.heappop(heap))
                continue
            if not d.can_split(bucket, self.max_entries):
                heapq.heappop(heap)
                del self._live[(s.partition, s.file_id)]
                continue
            plan = split_plan(d, s)
            break
        for entry in waiting:
            heapq.heappush(heap, entry)
        return plan

    def done(self, plan: SplitPlan, directory: Directory, written) -> None:
        """``plan`` committed: its partition's directory is now ``directory``, its slice
        was replaced by the ``written`` ones (in the order they joined the snapshot)."""
        self.directories[plan.partition] = directory
        for s in plan.slices:
            self._live.pop((s.partition, s.file_id), None)
        for s in written:
            self._offer(s, push=True)


def plan_requested_split(snapshot, directories: dict[str, Directory],
                         partitions: list[str] | None, bucket: int | None,
                         max_entries: int) -> SplitPlan:
    """``indexbench rescale``: split ``bucket`` of the one partition given, or the
    largest file group (by records) of the partitions given (default: all) that may
    split; every refusal before anything is written."""
    wanted = wanted_partitions(snapshot, partitions, "split")
    slices = snapshot.in_partitions(wanted)
    if bucket is not None:
        if len(wanted) != 1:
            raise RescaleError("--bucket names a bucket of one partition: give exactly one "
                               "--partition")
        d = directories[wanted[0]]
        if bucket not in d.local_depths:
            raise RescaleError(f"bucket {bucket} is no bucket of {wanted[0]!r}'s directory "
                               f"(buckets: {', '.join(map(str, sorted(d.local_depths)[:10]))}"
                               f"{' …' if d.num_buckets > 10 else ''})")
        mine = [s for s in slices if bucket_of_file_id(s.file_id) == bucket]
        if not mine:
            raise RescaleError(f"bucket {bucket} of {wanted[0]!r} has no file group: "
                               "nothing to split")
        if not d.can_split(bucket, max_entries):
            raise RescaleError(f"bucket {bucket} of {wanted[0]!r} cannot split: its directory "
                               f"would outgrow hoodie.bucket.index.max.num.buckets={max_entries}")
        return split_plan(d, mine[0])
    ok = [s for s in slices
          if directories[s.partition].can_split(bucket_of_file_id(s.file_id), max_entries)]
    if not ok:
        raise RescaleError("no bucket can split: every directory is at "
                           f"hoodie.bucket.index.max.num.buckets={max_entries}")
    s = min(ok, key=lambda s: (-s.num_records, s.partition, bucket_of_file_id(s.file_id)))
    return split_plan(directories[s.partition], s)


def split_metadata(plan: SplitPlan, after: Directory, records_moved: int,
                   schema: str | None) -> dict[str, str]:
    """extraMetadata of a split's replacecommit: the new directory, what split, the
    table's schema (Hudi readers take it from the latest completed instant)."""
    return {
        SPARK_SCHEMA_KEY: schema,
        DIRECTORY_KEY: after.stored.decode(),
        SPLIT_KEY: json.dumps({"partition": plan.partition, "bucket": plan.bucket,
                               "newBucket": plan.new_bucket,
                               "localDepth": plan.local_depth + 1,
                               "doubled": plan.doubled, "recordsMoved": records_moved},
                              separators=(",", ":")),
    }


def split_figures(plan: SplitPlan, records_moved: int,
                  fill_before: dict[str, float]) -> dict[str, Any]:
    """A split's own row columns (the Spark adapter's and the simulator's alike)."""
    return {
        **rescale_figures(mode=SPLIT, factor=float("nan"), from_buckets=plan.from_buckets,
                          to_buckets=plan.to_buckets, partitions_touched=1,
                          fill_before=fill_before, fill_after={}),
        "splits": 1, "directory_doublings": int(plan.doubled),
        "records_moved": int(records_moved), "directory_bytes": len(plan.after.stored),
        "global_depth": plan.after.global_depth, "local_depth": plan.local_depth + 1,
    }


def split_children(hashes: np.ndarray, bucket: int, depth: int) -> np.ndarray:
    """Whether each record of ``bucket`` (local depth ``depth``) moves to its new
    sibling: bit ``depth`` of its masked hash."""
    return ((np.asarray(hashes, dtype=np.int64) >> depth) & 1).astype(bool)


def split_order(hashes: np.ndarray) -> np.ndarray:
    """A sort key of masked hashes under which every bucket of any directory is one run
    and its two children (:func:`split_children`) are the run's two halves: the low
    :data:`MAX_DEPTH` bits reversed (bucket ids are low bits; a split reads the next
    one). Sorted once, a whole round of splits is counted by bisection
    (:func:`split_point`) instead of a pass over each bucket's records."""
    x = (np.asarray(hashes, dtype=np.int64) & ((1 << MAX_DEPTH) - 1)).astype(np.uint32)
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF)):
        x = ((x >> shift) & np.uint32(mask)) | ((x & np.uint32(mask)) << np.uint32(shift))
    x = (x >> np.uint32(16)) | (x << np.uint32(16))  # bit i is now bit 31 - i
    return (x >> np.uint32(32 - MAX_DEPTH)).astype(np.int64)


def split_point(keys: np.ndarray, depth: int) -> int:
    """Of one bucket's records (local depth ``depth``) as :func:`split_order` keys,
    sorted (higher bits, e.g. a partition's, may be added above them): how many stay,
    the ones that do not move (:func:`split_children`) coming first."""
    if not len(keys):
        return 0
    low = MAX_DEPTH - depth  # the bits below the bucket's own (reversed) ones
    first = (int(keys[0]) >> low) << low
    return int(np.searchsorted(keys, first | (1 << (low - 1))))


__all__ = ["BYTES", "DIRECTORY_KEY", "INIT_INSTANT", "MAX_DEPTH", "RECORDS", "SPLIT",
           "SPLIT_KEY", "Capacity", "Directory", "Router", "SplitPlan", "SplitPlanner",
           "committed_directories", "depth_of", "directory_partition", "directory_versions",
           "history_problems", "initial_directory", "masked_hash", "plan_requested_split",
           "plan_split", "split_children", "split_figures", "split_metadata", "split_order",
           "split_plan", "split_point"]
