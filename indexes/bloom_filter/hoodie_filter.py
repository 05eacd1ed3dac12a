"""The bloom filter Hudi writes into every base file's footer, as the bloom index probes it.

Hudi's bloom index decides which files must be read by probing one bloom filter of record
keys per base file; reproducing that work (and its false positives) needs Hudi's *structure*
exactly: sizing (:mod:`.formulas`), the SIMPLE / DYNAMIC_V0 rows (:mod:`.policy`), the
footer bytes (:mod:`.serialization`). This module ties them to a hashing, pybloom-live's
(:mod:`.pybloom_hash`, the default) or Hudi's own (:mod:`.hudi_hash`), behind one class
with Hudi's ``BloomFilter`` interface plus the batch adds, prehashed probes and
theoretical fpp the benchmark needs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from indexes.bloom_filter.bits import bits_all_set, set_bits, slices_all_set
from indexes.bloom_filter.formulas import (
    hudi_bit_size,
    hudi_num_hashes,
    theoretical_fpp,
    theoretical_fpp_unpartitioned,
)
from indexes.bloom_filter.hudi_hash import HUDI, HadoopRow, HudiHasher
from indexes.bloom_filter.policy import (
    DYNAMIC_V0,
    DynamicPolicy,
    counts_after,
    new_policy,
    parse_type_code,
)
from indexes.bloom_filter.pybloom_hash import PYBLOOM, PybloomHasher, PybloomRow
from indexes.bloom_filter.serialization import (
    filter_bytes,
    footer_entries,
    footer_filter,
    read_filter,
    to_text,
)

__all__ = [
    "DEFAULT_FPP",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_NUM_ENTRIES",
    "HASHINGS",
    "HoodieBloomFilter",
]

# Bit positions: pybloom-live's (the default) or Hudi's own (Hadoop's murmur).
HASHINGS = (PYBLOOM, HUDI)

# Hudi defaults: hoodie.index.bloom.num_entries, .fpp, hoodie.bloom.index.filter.type,
# hoodie.bloom.index.filter.dynamic.max.entries.
DEFAULT_NUM_ENTRIES = 60000
DEFAULT_FPP = 1e-9
DEFAULT_MAX_ENTRIES = 100000


class HoodieBloomFilter:
    """Hudi's SIMPLE / DYNAMIC_V0 bloom filter over record keys: pybloom-live rows (the
    default ``hashing``) or Hadoop's bits and murmur hashing (``hashing="hudi"``)."""

    def __init__(
        self,
        type_code: str,
        num_entries: int,
        fpp: float,
        max_entries: int,
        *,
        hashing: str = PYBLOOM,
        _rows: list[PybloomRow] | list[HadoopRow] | None = None,
        _policy: DynamicPolicy | None = None,
    ):
        code = parse_type_code(type_code)  # Hudi compares with equalsIgnoreCase
        if hashing not in HASHINGS:
            raise ValueError(f"bloom hashing must be one of {', '.join(HASHINGS)}, "
                             f"not {hashing!r}")
        if num_entries <= 0:
            raise ValueError("num_entries must be positive")
        if not 0.0 < fpp < 1.0:
            raise ValueError("fpp must be in (0, 1)")
        self._type_code = code
        self._num_entries = int(num_entries)
        self._fpp = float(fpp)
        self._max_entries = int(max_entries)
        self._hashing = hashing
        if _rows is None:
            m = hudi_bit_size(self._num_entries, self._fpp)
            k = hudi_num_hashes(m, self._num_entries)
            if hashing == PYBLOOM:
                _rows = [PybloomRow(k, -(-m // k), self._num_entries, self._fpp)]
            else:
                _rows = [HadoopRow(m, k, self._num_entries, self._fpp)]
        self._rows = _rows
        self._policy = _policy or new_policy(code, self._num_entries, max_entries)
        r0 = self._rows[0]
        self._hasher: PybloomHasher | HudiHasher = (
            PybloomHasher(r0) if hashing == PYBLOOM else HudiHasher(r0.num_hashes, r0.num_bits))

    @classmethod
    def create(
        cls,
        type_code: str = DYNAMIC_V0,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        hashing: str = PYBLOOM,
    ) -> HoodieBloomFilter:
        """``BloomFilterFactory.createBloomFilter`` with Hudi's defaults; ``hashing``:
        ``pybloom`` (default) or ``hudi`` (Hudi's own bits, hash type 1)."""
        return cls(type_code, num_entries, fpp, max_entries, hashing=hashing)

    # -- properties -----------------------------------------------------------------------
    @property
    def type_code(self) -> str:
        """``SIMPLE`` or ``DYNAMIC_V0``. Only a DYNAMIC code is written under
        ``TYPE_CODE_KEY`` (:meth:`footer_entries`); a footer without it is SIMPLE."""
        return self._type_code

    @property
    def hashing(self) -> str:
        """``pybloom`` or ``hudi``: whose bit positions the rows hold."""
        return self._hashing

    @property
    def num_entries(self) -> int:
        return self._num_entries

    @property
    def fpp(self) -> float:
        return self._fpp

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def rows(self) -> int:
        """Rows in the matrix (always 1 for SIMPLE)."""
        return len(self._rows)

    @property
    def bits_per_row(self) -> int:
        """m actually allocated: ``k * ceil(m_hudi / k)`` with pybloom (its slices are
        equal), exactly Hudi's m with Hudi's hashing."""
        return self._rows[0].num_bits

    @property
    def hashes_per_row(self) -> int:
        """k (pybloom slices, or Hadoop's chained murmur rounds)."""
        return self._rows[0].num_hashes

    @property
    def count(self) -> int:
        """Keys added in total (duplicates included, as Hudi counts)."""
        return int(sum(r.count for r in self._rows))

    @property
    def row_counts(self) -> list[int]:
        """Adds that went to each row, in row order."""
        return [int(r.count) for r in self._rows]

    @property
    def size_bytes(self) -> int:
        """Bytes of the serialized filter before base64: Hudi's layout plus our trailer.

        The footer value (base64 text) is ``4 * ceil(size_bytes / 3)`` characters.
        """
        return len(self._to_bytes())

    # -- adding and probing ---------------------------------------------------------------
    def add(self, key: str) -> None:
        """Add one key (Hudi: ``BloomFilter.add(String)``)."""
        self.add_keys([key])

    def add_keys(self, keys: Iterable[str]) -> None:
        """Add keys in order; each goes to the row Hudi's add policy picks."""
        col = self._hasher.column(keys)  # refuses bad keys before the policy moves
        n = len(col)
        if not n:
            return
        targets = self._policy.assign(n)
        while len(self._rows) < self._policy.rows:
            self._rows.append(self._rows[0].empty_like())
        pos = self._hasher.positions(col)
        if len(self._rows) == 1:
            set_bits(self._rows[0], pos)
            self._rows[0].count += n
            return
        counts = np.bincount(targets, minlength=len(self._rows))
        for r, row in enumerate(self._rows):
            if counts[r]:
                set_bits(row, pos[targets == r])
                row.count += int(counts[r])

    def might_contain(self, key: str) -> bool:
        """Membership: False means certainly absent; True may be a false positive."""
        return bool(self.might_contain_many([key])[0])

    @property
    def hash_family(self) -> tuple[Any, ...]:
        """Filters with equal families give a key the same bit positions
        (:meth:`prehash`), so one prehash serves every file of a table."""
        return self._hasher.family

    def prehash(self, keys: Iterable[str], all_slices: bool = False) -> np.ndarray:
        """The keys' bit positions, to pass to :meth:`might_contain_many` for every filter
        of the same :attr:`hash_family`: a batch's keys are hashed once, however many
        files they are probed against. Shape (slices, len(keys)), uint32, one row per
        slice (a probe reads a slice's positions for all keys contiguously): the first
        salt's slices (one digest per key; keys that pass them are hashed again at probe
        time), or all ``k`` with ``all_slices`` (every digest now, none later). The
        positions of keys ``lo:hi`` are ``prehashed[:, lo:hi]``. With Hudi's hashing the
        first stage is the first few chained murmur rounds."""
        h = self._hasher
        return h.prehash(h.column(keys), all_slices, self.position_dtype)

    @property
    def position_dtype(self) -> type:
        """The dtype of :meth:`prehash` positions (uint32 unless a row has 2**32 bits)."""
        return np.uint32 if self.bits_per_row < 2**32 else np.uint64

    @property
    def first_salt_slices(self) -> int:
        """Rows of ``prehash(keys)``: the slices the first salt's digest covers (pybloom)
        or the first stage's murmur rounds (Hudi's hashing)."""
        return self._hasher.first_stage_slices

    def might_contain_many(self, keys: Iterable[str], prehashed: np.ndarray | None = None
                           ) -> np.ndarray:
        """Vectorized ``might_contain``: bool array aligned with ``keys``.

        Hashes salt by salt, as pybloom's lazy ``make_hashes`` does, so a key already ruled out
        by every row after the first salt's slices never pays for the second hash (Hudi's
        hashing: stage by stage of murmur rounds, likewise). ``prehashed``: the keys'
        :meth:`prehash` positions from a filter of the same :attr:`hash_family`; then the
        first salt (stage) costs no hashing at all.
        """
        if prehashed is not None and prehashed.shape[0] == self.hashes_per_row:
            return self._probe_positions(np.ascontiguousarray(prehashed), len(keys))
        h = self._hasher
        col = h.column(keys)
        n = len(col)
        alive = np.ones((len(self._rows), n), dtype=bool)
        cand = np.arange(n)
        for stage in range(h.stages):
            if cand.size == 0:
                break
            if stage == 0 and prehashed is not None:
                if prehashed.shape[1] != n:
                    raise ValueError("prehashed positions do not match the keys")
                pos_t = np.ascontiguousarray(prehashed)
                for r, row in enumerate(self._rows):
                    alive[r] = slices_all_set(row, pos_t)
                cand = cand[alive.any(axis=0)]
                continue
            # hash only the keys still alive
            sub = col if cand.size == n else h.subset(col, cand)
            pos = h.stage_positions(h.encode(sub), stage)
            for r, row in enumerate(self._rows):
                live = alive[r, cand]
                if live.any():
                    alive[r, cand[live]] = bits_all_set(row, pos[live])
            cand = cand[alive[:, cand].any(axis=0)]
        return alive.any(axis=0)

    def _probe_positions(self, pos_t: np.ndarray, n: int) -> np.ndarray:
        """Membership from all k positions of every key (no hashing): any row says yes."""
        if pos_t.shape[1] != n:
            raise ValueError("prehashed positions do not match the keys")
        out = np.zeros(n, dtype=bool)
        for row in self._rows:
            out |= slices_all_set(row, pos_t)
        return out

    def __contains__(self, key: str) -> bool:
        return self.might_contain(key)

    def __len__(self) -> int:
        return self.count

    # -- false-positive model -------------------------------------------------------------
    def theoretical_fpp(self, n: int | None = None) -> float:
        """Expected fpp of a non-member probe: ``1 - prod(1 - fp_row(n_row))``.

        With ``n=None`` the rows' actual add counts are used; otherwise the counts Hudi's add
        policy would give an empty filter of this configuration after ``n`` adds.
        """
        counts = self.row_counts if n is None else self.row_counts_after(int(n))
        m, k = self.bits_per_row, self.hashes_per_row
        rate = theoretical_fpp if self._hashing == PYBLOOM else theoretical_fpp_unpartitioned
        rows = [rate(m, k, c) for c in counts]
        if any(p >= 1.0 for p in rows):
            return 1.0
        # log1p/expm1: the default sizing's rates (~1e-20) must not round to 0
        return -math.expm1(sum(math.log1p(-p) for p in rows))

    def row_counts_after(self, n: int) -> list[int]:
        """Keys each row would hold after ``n`` adds to an empty filter of this shape."""
        return counts_after(self._type_code, self._num_entries, self._max_entries, n)

    # -- serialization --------------------------------------------------------------------
    def _to_bytes(self) -> bytes:
        return filter_bytes(self._type_code, self._rows, self._hasher.hash_type, self._policy,
                            self._fpp, self._num_entries, self._max_entries)

    def serialize(self) -> str:
        """Base64 text for the Parquet footer under ``FOOTER_KEY`` (Hudi's serializeToString)."""
        return to_text(self._to_bytes())

    @classmethod
    def deserialize(cls, text: str, type_code: str | None = None) -> HoodieBloomFilter:
        """Inverse of :meth:`serialize` (Hudi's ``BloomFilterFactory.fromString``).

        ``type_code``: the footer's ``TYPE_CODE_KEY`` value; ``None`` (no such key, as
        Hudi writes SIMPLE filters) reads a SIMPLE filter, as Hudi's
        ``readBloomFilterFromMetadata`` does. The hashing is the one the header's hash-type
        byte names (pybloom-live's or Hudi's murmur)."""
        d = read_filter(text, type_code)
        return cls(d.type_code, d.num_entries, d.fpp, d.max_entries, hashing=d.hashing,
                   _rows=d.rows, _policy=d.policy)

    def footer_entries(self) -> dict[str, str]:
        """The footer key-values Hudi's ``HoodieBloomFilterWriteSupport`` writes for this
        filter: the filter text, plus the type code only for a DYNAMIC type (a reader that
        finds no type code reads SIMPLE)."""
        return footer_entries(self._type_code, self.serialize())

    @classmethod
    def from_footer(cls, footer: Any) -> HoodieBloomFilter | None:
        """The filter of a footer's key-values (Hudi's ``readBloomFilterFromMetadata``):
        ``FOOTER_KEY`` (or Hudi's old key), read as the ``TYPE_CODE_KEY`` says or as
        SIMPLE without one; ``None`` if the footer holds no filter."""
        found = footer_filter(footer)
        if found is None:
            return None
        return cls.deserialize(*found)

    def __repr__(self) -> str:
        return (
            f"HoodieBloomFilter({self._type_code}, num_entries={self._num_entries}, "
            f"fpp={self._fpp:g}, max_entries={self._max_entries}, rows={self.rows}, "
            f"count={self.count}, m={self.bits_per_row}, k={self.hashes_per_row}, "
            f"hashing={self._hashing})"
        )
