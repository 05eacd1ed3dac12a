"""The per-partition ``key hash (int32) -> bucket`` cache, in compact numpy arrays.

Two layouts behind one interface, chosen by size; neither holds a Python object per key.

**Small maps** (under ``ROWS_MIN`` keys, ~1.4M): a sorted ``int32`` key array plus an
``int16`` value array, 6 bytes per key with no slack. They fit in the CPU cache, so a
lookup is one ``searchsorted`` over the batch (a large unsorted batch is radix-sorted
first: sorted queries walk the keys once); new keys go to a small sorted *delta*, merged
into the arrays when it passes 1/16 of them (an insert costs O(delta), not O(map)).

**Large maps**: rows of a hash-prefix directory. Why not the sorted arrays: at 10M keys a
random ``searchsorted`` pays ~24 dependent cache misses per key (≈1M lookups/s measured),
and a vectorized binary search over the whole batch misses again at every step, because
a batch of a million queries evicts each step's cache lines before the next step. What
numpy does fast is one gather of a short contiguous row per query, then compares on the
gathered copy. So:

* the hash, as an unsigned ``u`` in the same order, picks row ``u * R >> 32`` (monotone,
  any row count ``R``); the row stores only the 15 low bits of each of its keys, as
  ``uint16``. ``R >= 2**17`` keeps every row's hash range at most ``2**15`` wide, so those
  bits are unique within a row and ``0xFFFF`` can mark an empty slot;
* a row is ``W`` slots (16, widened by 8 up to 32; 16 slots are 32 bytes, the row size
  numpy gathers fastest); the buckets sit at the same slots of an ``(R, W)`` value array,
  ``uint8`` while every bucket id is below 256, else ``int16``; ``fill`` counts each row's
  used slots;
* a lookup gathers its row, compares the remainders, and reads the matching slot's
  bucket: two memory accesses per key whatever the map's size (at 10M keys on 2 cores,
  ~25-40M random or ~65-75M sorted lookups/s, one thread). A new key takes its row's
  next free slot: inserts cost O(batch), never move data, and rows need no order;
* rows are sized for ``LOAD`` (11) keys; keys whose row is full (~1% right after a
  layout, more as the map grows) go to a *stash* kept like a small map, which a lookup
  reads only for misses in rows that spilled. When the stash passes 1/32 of the keys the
  rows widen by 8 slots (one copy; the stash moves into the new slots); at 32 slots the
  map is laid out again for its size. Measured from 10M to 40M keys in batches of 1M:
  4.5 bytes per key after a layout and 3.6–5.6 while it grows with ``uint8`` buckets
  (6.0 and 4.7–7.5 with ``int16`` buckets).

Keys never change bucket: only their place in the arrays changes.
"""

from __future__ import annotations

import numpy as np

MISS = np.int16(-1)
MIN_DELTA = 4096  # keys the delta may hold before it is merged, whatever the base size
DELTA_SHIFT = 4  # merge when len(delta) > len(base) >> DELTA_SHIFT (1/16)
MIN_ROWS = 1 << 17  # rows' hash ranges at most 2**15 wide: 15-bit remainders are unique
LOAD = 11  # keys per row when the map is laid out (~1% of them spill to the stash)
ROWS_MIN = MIN_ROWS * LOAD  # below this many keys the sorted arrays are smaller
WIDTH, MAX_WIDTH, WIDEN = 16, 32, 8  # slots per row: at layout, at most, added per widening
STASH_SHIFT = 5  # widen (or lay out again) when the stash holds > 1/32 of the keys
MIN_STASH = 4096  # ... and more than this many keys
RELAYOUT_GROWTH = 1.25  # lay out again only after this much growth (clustered hashes)
BLOCK = 1 << 15  # keys per vectorized step: temporaries stay in cache, memory bounded
SORT_QUERIES = 1 << 12  # sorted arrays: sort a batch of this many unsorted queries first

_LOW = 0x7FFF  # the remainder bits a row stores
_EMPTY = np.uint16(0xFFFF)  # an empty slot (no remainder has bit 15)
_SIGN = np.uint32(0x80000000)
# The slot of the one set byte of word ``k`` (64 bits) of a row's match mask: multiplying
# ``1 << 8p`` by this constant puts ``8k + p`` in the top byte (no carries: it is a shift).
_SLOT_OF_BYTE = [np.uint64(sum((8 * k + 7 - i) << (8 * i) for i in range(8)))
                 for k in range(MAX_WIDTH // 8)]
_NO_KEYS, _NO_VALS = np.empty(0, np.int32), np.empty(0, np.int16)


def _unsigned(h: np.ndarray) -> np.ndarray:
    """``int32`` hashes as ``uint32`` in the same order (the sign bit flipped)."""
    return np.asarray(h, np.int32).view(np.uint32) ^ _SIGN


def _row_of(u: np.ndarray, nrows: int) -> np.ndarray:
    """Row of each unsigned hash: ``u * nrows >> 32`` (order-preserving)."""
    t = np.multiply(u, np.uint64(nrows), dtype=np.uint64)
    t >>= np.uint64(32)
    return t.view(np.int64)


def _row_start(rows: np.ndarray, nrows: int) -> np.ndarray:
    """Smallest unsigned hash of each row: ``ceil(row * 2**32 / nrows)``."""
    r = rows.astype(np.uint64)
    return (((r << np.uint64(32)) + np.uint64(nrows - 1)) // np.uint64(nrows)).astype(np.uint32)


def hash_order(hashes: np.ndarray) -> np.ndarray:
    """Stable argsort of ``int32`` hashes: two stable passes over 16-bit halves, which
    numpy radix-sorts (~3x its stable argsort of 32-bit values)."""
    u = _unsigned(hashes)
    order = np.argsort(u.astype(np.uint16), kind="stable")
    high = (u >> np.uint32(16)).astype(np.uint16).take(order)
    del u
    return order.take(np.argsort(high, kind="stable"))


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by sort and compare: numpy 2.4's hash-based unique is ~20x slower
    on a million int32 hashes."""
    s = np.sort(values)
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def _ascending(values: np.ndarray) -> bool:
    """Strictly increasing (unique and sorted)."""
    return bool(len(values) < 2 or (values[1:] > values[:-1]).all())


def _find(keys: np.ndarray, vals: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out[i]`` with the value of ``q[i]`` where ``q[i]`` is in sorted ``keys``."""
    if len(keys) == 0 or len(q) == 0:
        return
    pos = np.searchsorted(keys, q)
    np.minimum(pos, len(keys) - 1, out=pos)
    hit = keys[pos] == q
    out[hit] = vals[pos[hit]]


def _merge(keys: np.ndarray, vals: np.ndarray, new_keys: np.ndarray, new_vals: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ``keys`` with sorted, absent ``new_keys`` inserted. A stable argsort of the
    two runs one after the other is one linear merge (timsort), ~4x ``np.insert``."""
    if not len(keys):
        return np.array(new_keys, np.int32), np.array(new_vals, np.int16)
    both = np.concatenate([keys, new_keys])
    order = np.argsort(both, kind="stable")
    return both[order], np.concatenate([vals, new_vals.astype(np.int16)])[order]


def _value_dtype(buckets: np.ndarray) -> type:
    """One byte per bucket id while they all fit, else two."""
    fits = not len(buckets) or (buckets.min() >= 0 and buckets.max() < 256)
    return np.uint8 if fits else np.int16


class HashBucketMap:
    """Map from 32-bit key hash to 16-bit bucket id (no Python objects per key)."""

    __slots__ = ("_keys", "_vals", "_dkeys", "_dvals", "_rows", "_rvals", "_fill",
                 "_in_rows", "_laid_out")

    def __init__(self) -> None:
        # sorted base and delta: the whole map (small layout) or the rows' stash
        self._keys, self._vals = _NO_KEYS, _NO_VALS
        self._dkeys, self._dvals = _NO_KEYS, _NO_VALS
        # (R + 1, W) uint16 remainders, the last row a scratch target for keys that spill
        # (so writes need no mask); None: the small layout
        self._rows: np.ndarray | None = None
        self._rvals = np.empty((0, 0), np.uint8)  # (R + 1, W) buckets
        self._fill = np.empty(0, np.uint8)  # used slots per row; W + 1: it spilled
        self._in_rows = 0  # keys held by the rows
        self._laid_out = 0  # keys when the rows were last laid out

    @classmethod
    def from_entries(cls, hashes: np.ndarray, buckets: np.ndarray) -> tuple[HashBucketMap, int]:
        """Build from RLI entries; returns the map and how many entries repeated a hash
        (two keys sharing a 32-bit hash share the first one's bucket: the design's choice)."""
        h = np.asarray(hashes, dtype=np.int32)
        b = np.asarray(buckets, dtype=np.int16)
        order = hash_order(h)
        hs, bs = h.take(order), b.take(order)
        del order
        keep = np.ones(len(hs), dtype=bool)
        if len(hs) > 1:
            np.not_equal(hs[1:], hs[:-1], out=keep[1:])
        dup = int(len(hs) - np.count_nonzero(keep))
        m = cls()
        if dup:
            hs, bs = hs[keep], bs[keep]
        m._layout(hs, bs)
        return m, dup

    def __len__(self) -> int:
        return self._in_rows + len(self._keys) + len(self._dkeys)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (what ``index_mem_bytes`` reports)."""
        n = self._keys.nbytes + self._vals.nbytes + self._dkeys.nbytes + self._dvals.nbytes
        if self._rows is not None:
            n += self._rows.nbytes + self._rvals.nbytes + self._fill.nbytes
        return int(n)

    # ---- lookups ------------------------------------------------------------------
    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Bucket of every hash, ``-1`` where the hash is not in the map."""
        q = np.asarray(hashes, dtype=np.int32)
        out = np.full(len(q), MISS, dtype=np.int16)
        if self._rows is None:
            self._find_sorted(q, out)
            return out
        asks = [lo + self._lookup_rows(q[lo:lo + BLOCK], out[lo:lo + BLOCK])
                for lo in range(0, len(q), BLOCK)]
        ask = np.concatenate(asks) if asks else np.empty(0, np.int64)
        if len(ask):  # misses in rows that spilled: the stash, in one call
            sub = out[ask]
            self._find_sorted(q.take(ask), sub)
            out[ask] = sub
        return out

    def _find_sorted(self, q: np.ndarray, out: np.ndarray) -> None:
        """Lookups in the sorted base, then in the delta for what the base misses (``out``
        is all ``MISS`` on entry). A large unsorted batch is sorted first: ``searchsorted``
        of sorted queries walks the keys once instead of missing the cache ~20 times a
        key (the radix sort costs less than those misses)."""
        if len(q) >= SORT_QUERIES and not (q[1:] >= q[:-1]).all():
            order = hash_order(q)
            found = np.full(len(q), MISS, np.int16)
            self._find_sorted(q.take(order), found)
            out[order] = found
            return
        _find(self._keys, self._vals, q, out)
        if len(self._dkeys):
            miss = np.flatnonzero(out < 0)
            if len(miss):
                sub = out[miss]
                _find(self._dkeys, self._dvals, q[miss], sub)
                out[miss] = sub

    def _lookup_rows(self, q: np.ndarray, out: np.ndarray) -> np.ndarray:
        """One block of queries against the rows; returns which of them the stash may
        hold (misses in rows that spilled)."""
        rows = self._rows
        width = rows.shape[1]
        u = _unsigned(q)
        c = _row_of(u, len(rows) - 1)
        got = rows.take(c, axis=0)  # (n, W): one short contiguous row per query
        r = u.astype(np.uint16)
        r &= np.uint16(_LOW)
        words = (got == r[:, None]).view(np.uint64)  # at most one byte set: remainders unique
        hit = words[:, 0] != 0
        for k in range(1, width // 8):
            hit |= words[:, k] != 0
        if hit.any():
            # the set byte's slot: only one word is nonzero, so the sum's top byte
            slot = words[:, 0] * _SLOT_OF_BYTE[0]
            for k in range(1, width // 8):
                slot += words[:, k] * _SLOT_OF_BYTE[k]
            slot >>= np.uint64(56)
            at = c * width
            at += slot.view(np.int64)
            at *= hit  # misses read slot 0 of row 0: dense, no masked gathers
            out[:] = np.where(hit, self._rvals.reshape(-1).take(at), MISS)
        if not (len(self._keys) or len(self._dkeys)):
            return np.empty(0, np.int64)
        ask = np.flatnonzero(got[:, -1] != _EMPTY)  # misses in full rows that spilled
        ask = ask[~hit.take(ask)]
        return ask[self._fill.take(c.take(ask)) > width]

    # ---- inserts ------------------------------------------------------------------
    def insert(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Add new hashes (unique, absent from the map); existing entries never change."""
        h = np.asarray(hashes, dtype=np.int32)
        if len(h) == 0:
            return
        b = np.asarray(buckets, dtype=np.int16)
        if not _ascending(h):
            order = hash_order(h)
            h, b = h.take(order), b.take(order)
        if self._rows is None:
            if not len(self):  # empty (a bulk load): h is the map, no copy
                self._layout(h, b)
                return
            self._add_sorted(h, b)
            if len(self) >= ROWS_MIN:
                self._layout(*self._take_sorted())
            return
        self._add_to_rows(h, b)
        if len(self._keys) + len(self._dkeys) > max(MIN_STASH, len(self) >> STASH_SHIFT):
            self._grow()

    def _add_sorted(self, h: np.ndarray, b: np.ndarray) -> None:
        """Sorted new keys into the delta; the delta into the base once it is 1/16 of it."""
        self._dkeys, self._dvals = _merge(self._dkeys, self._dvals, h, b)
        if len(self._dkeys) > max(MIN_DELTA, len(self._keys) >> DELTA_SHIFT):
            self._keys, self._vals = _merge(self._keys, self._vals, self._dkeys, self._dvals)
            self._dkeys, self._dvals = _NO_KEYS, _NO_VALS

    def _take_sorted(self) -> tuple[np.ndarray, np.ndarray]:
        """Remove and return the sorted base and delta as one sorted pair of arrays."""
        keys, vals = _merge(self._keys, self._vals, self._dkeys, self._dvals) \
            if len(self._dkeys) else (self._keys, self._vals)
        self._keys, self._vals = _NO_KEYS, _NO_VALS
        self._dkeys, self._dvals = _NO_KEYS, _NO_VALS
        return keys, vals

    def _add_to_rows(self, h: np.ndarray, b: np.ndarray) -> None:
        """Put sorted new hashes in their rows' free slots; the rest go to the stash."""
        if self._rvals.dtype == np.uint8 and _value_dtype(b) is not np.uint8:
            self._rvals = self._rvals.astype(np.int16)
        b = b.astype(self._rvals.dtype, copy=False)
        rows_plus_one, width = self._rows.shape
        nrows = rows_plus_one - 1
        flat_r, flat_v = self._rows.reshape(-1), self._rvals.reshape(-1)
        spill_h, spill_b = [], []
        for lo in range(0, len(h), BLOCK):
            hb, bb = h[lo:lo + BLOCK], b[lo:lo + BLOCK]
            n = len(hb)
            u = _unsigned(hb)
            c = _row_of(u, nrows)
            first = np.empty(n, bool)  # sorted input: each row's new keys are one run
            first[0] = True
            np.not_equal(c[1:], c[:-1], out=first[1:])
            start = np.flatnonzero(first)
            runs = np.empty_like(start)
            np.subtract(start[1:], start[:-1], out=runs[:-1])
            runs[-1] = n - start[-1]
            touched = c.take(start)
            fill = self._fill.take(touched)
            np.minimum(fill, width, out=fill)  # a spilled row is full
            slot = np.repeat(fill - start, runs)  # key i takes slot i - start + fill
            slot += np.arange(n)
            pos = c * width
            pos += slot
            spill = np.flatnonzero(slot >= width)
            if len(spill):
                pos[spill] = nrows * width  # the scratch row: written, never read
                spill_h.append(hb.take(spill))
                spill_b.append(bb.take(spill))
            r = u.astype(np.uint16)
            r &= np.uint16(_LOW)
            flat_r[pos] = r
            flat_v[pos] = bb
            fill = np.minimum(fill + runs, width + 1)  # width + 1: the row spilled
            self._fill[touched] = fill.astype(np.uint8)
            self._in_rows += n - len(spill)
        if spill_h:
            self._add_sorted(np.concatenate(spill_h), np.concatenate(spill_b))

    def _grow(self) -> None:
        """Too many keys in the stash: widen the rows and move the stash into them, or,
        at the widest rows, lay the map out again (only once it grew since the last
        layout: with clustered hashes a new layout would spill the same keys)."""
        rows_plus_one, width = self._rows.shape
        if width < MAX_WIDTH:
            rows = np.full((rows_plus_one, width + WIDEN), _EMPTY, np.uint16)
            rows[:, :width] = self._rows
            vals = np.zeros((rows_plus_one, width + WIDEN), self._rvals.dtype)
            vals[:, :width] = self._rvals
            self._rows, self._rvals = rows, vals
            np.minimum(self._fill, width, out=self._fill)  # spilled rows: full, not spilled
            self._add_to_rows(*self._take_sorted())
        elif len(self) >= RELAYOUT_GROWTH * self._laid_out:
            self.compact()

    def compact(self) -> None:
        """Fold pending inserts into the compact form: the small layout's delta into its
        sorted arrays; a large map laid out again for its size (rows of ``LOAD`` keys,
        the stash moved into them as far as it fits), streaming the old rows."""
        if self._rows is None:
            self._keys, self._vals = self._take_sorted()
            return
        old_rows, old_vals = self._rows, self._rvals
        stash = self._take_sorted()
        self._start_rows(self._in_rows + len(stash[0]), old_vals.dtype)
        step = max(1, BLOCK // old_rows.shape[1])
        for lo in range(0, len(old_rows) - 1, step):
            self._add_to_rows(*_rows_items(old_rows, old_vals, lo, lo + step))
        del old_rows, old_vals
        self._add_to_rows(*stash)

    def _start_rows(self, n: int, dtype: type) -> None:
        """Empty rows for ``n`` keys."""
        nrows = max(MIN_ROWS, -(-n // LOAD))
        self._rows = np.full((nrows + 1, WIDTH), _EMPTY, np.uint16)
        self._rvals = np.zeros((nrows + 1, WIDTH), dtype)
        self._fill = np.zeros(nrows, np.uint8)
        self._in_rows, self._laid_out = 0, n

    def _layout(self, h: np.ndarray, b: np.ndarray) -> None:
        """Make the (empty) map hold sorted unique ``h`` -> ``b``: the arrays themselves
        when small, rows otherwise."""
        if len(h) < ROWS_MIN:
            self._keys, self._vals = np.ascontiguousarray(h), np.ascontiguousarray(b)
            return
        self._start_rows(len(h), _value_dtype(b))
        self._add_to_rows(h, b)

    # ---- reading it all -----------------------------------------------------------
    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """All (hash, bucket) pairs sorted by hash (tests, restart comparisons)."""
        keys, vals = (_merge(self._keys, self._vals, self._dkeys, self._dvals)
                      if len(self._dkeys) else (self._keys.copy(), self._vals.copy()))
        if self._rows is None:
            return keys, vals
        parts = [_rows_items(self._rows, self._rvals, lo, lo + (1 << 16))
                 for lo in range(0, len(self._rows) - 1, 1 << 16)]
        return _merge(np.concatenate([p[0] for p in parts]),
                      np.concatenate([p[1] for p in parts]), keys, vals)


def _rows_items(rows: np.ndarray, rvals: np.ndarray, lo: int, hi: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (hash, bucket) pairs held by rows ``lo:hi`` (the scratch row excluded)."""
    nrows, width = rows.shape[0] - 1, rows.shape[1]
    hi = min(hi, nrows)
    start = _row_start(np.arange(lo, hi), nrows)
    got = rows[lo:hi]
    # a row's keys in hash order: by offset from the row's first hash (mod 2**15)
    off = (got - (start.astype(np.uint16) & np.uint16(_LOW))[:, None]) & np.uint16(_LOW)
    off[got == _EMPTY] = _EMPTY  # sorts last
    # sort (offset, slot) pairs packed in one word: a row sort of uint32 is ~2x argsort's speed
    packed = (off.astype(np.uint32) << np.uint32(8)) | np.arange(width, dtype=np.uint32)
    packed.sort(axis=1)
    order = (packed & np.uint32(0xFF)).astype(np.intp)
    off = packed >> np.uint32(8)
    used = off != _EMPTY
    keys = (start[:, None] + off)[used] ^ _SIGN
    vals = np.take_along_axis(rvals[lo:hi], order, axis=1)[used].astype(np.int16)
    return keys.view(np.int32), vals
