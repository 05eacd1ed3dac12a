"""Which row of a filter each add goes to: Hudi's SIMPLE vs DYNAMIC_V0 filter types.

SIMPLE is one row forever. DYNAMIC_V0 (``HoodieDynamicBoundedBloomFilter`` on
``InternalDynamicBloomFilter``) is a matrix of rows: a new row every ``num_entries`` adds
until ``rows * num_entries >= max_entries``, then round-robin over the existing rows, with
Hudi's quirk that the add which hits the bound and the one after it both go to row 0.
Membership is any row saying yes; adds beyond ``num_entries`` are accepted (fpp rises).
The row counts drive both the filter's bits and its theoretical fpp, so this state machine
is kept apart from hashing and bytes and reproduced add for add.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indexes.bloom_filter.formulas import JAVA_INT_MAX

__all__ = [
    "DYNAMIC_V0",
    "SIMPLE",
    "TYPE_CODES",
    "DynamicPolicy",
    "counts_after",
    "new_policy",
    "parse_type_code",
    "simple_policy",
]

# BloomFilterTypeCode names (enum order matters to Hudi: SIMPLE=0, DYNAMIC_V0=1).
SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"
TYPE_CODES = (SIMPLE, DYNAMIC_V0)


def parse_type_code(type_code: str) -> str:
    """A type code as Hudi reads it (``equalsIgnoreCase``); refuses unknown ones."""
    code = type_code.upper()
    if code not in TYPE_CODES:
        raise ValueError(f"Bloom Filter type code not recognizable {type_code!r}")
    return code


@dataclass
class DynamicPolicy:
    """Which row each add goes to: ``InternalDynamicBloomFilter.add/getActiveStandardBF``.

    Java, per add: if ``reachedMax`` -> ``matrix[curMatrixIndex++ % rows]``; else if
    ``currentNbRecord >= nr`` and ``rows * nr < maxNr`` -> new row, ``currentNbRecord = 0``;
    else if ``currentNbRecord >= nr`` -> ``reachedMax = true`` and ``matrix[0]`` (cursor not
    advanced, so row 0 also takes the next add); else the last row. Then
    ``currentNbRecord++``. Computed here segment by segment, not per key.
    """

    nr: int
    max_nr: int
    rows: int = 1
    current: int = 0  # currentNbRecord (keeps counting after reachedMax, as in Java)
    reached: bool = False  # reachedMax
    cursor: int = 0  # curMatrixIndex

    def assign(self, n: int) -> np.ndarray:
        """Row index of each of the next ``n`` adds, advancing the state."""
        out = np.empty(n, dtype=np.int64)
        pos = 0
        while pos < n:
            if self.reached:
                rest = n - pos
                out[pos:] = (self.cursor + np.arange(rest, dtype=np.int64)) % self.rows
                self.cursor += rest
                self.current += rest
                break
            if self.current >= self.nr:
                if self.rows * self.nr < self.max_nr:
                    self.rows += 1
                    self.current = 0
                else:
                    self.reached = True
                    out[pos] = 0
                    self.current += 1
                    pos += 1
                    continue
            take = min(n - pos, self.nr - self.current)
            out[pos : pos + take] = self.rows - 1
            self.current += take
            pos += take
        return out

    def counts(self, n: int) -> list[int]:
        """Adds per row after the next ``n`` adds, as ``bincount(assign(n))`` on a fresh
        policy, without a per-add array (a theory curve asks for n up to billions)."""
        rows = [0] * self.rows
        pos = 0
        while pos < n:
            if self.reached:
                q, r = divmod(n - pos, self.rows)
                rows = [c + q for c in rows]
                for i in range(r):
                    rows[(self.cursor + i) % self.rows] += 1
                self.cursor += n - pos
                self.current += n - pos
                break
            if self.current >= self.nr:
                if self.rows * self.nr < self.max_nr:
                    self.rows += 1
                    rows.append(0)
                    self.current = 0
                else:
                    self.reached = True
                    rows[0] += 1
                    self.current += 1
                    pos += 1
                    continue
            take = min(n - pos, self.nr - self.current)
            rows[self.rows - 1] += take
            self.current += take
            pos += take
        return rows


def simple_policy(current: int = 0) -> DynamicPolicy:
    """SIMPLE's policy: a single row forever, a policy that never grows past row 0."""
    return DynamicPolicy(nr=JAVA_INT_MAX, max_nr=0, rows=1, current=current)


def new_policy(type_code: str, num_entries: int, max_entries: int) -> DynamicPolicy:
    """The policy of an empty filter of ``type_code`` (a code :func:`parse_type_code` read)."""
    if type_code == SIMPLE:
        return simple_policy()
    return DynamicPolicy(nr=num_entries, max_nr=max_entries)


def counts_after(type_code: str, num_entries: int, max_entries: int, n: int) -> list[int]:
    """Keys each row would hold after ``n`` adds to an empty filter of this shape."""
    if type_code == SIMPLE:
        return [int(n)]
    if n <= 0:
        return [0]
    return DynamicPolicy(nr=num_entries, max_nr=max_entries).counts(int(n))
