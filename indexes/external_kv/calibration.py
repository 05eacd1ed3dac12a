"""The key-value server's constants of the simulator's cost profile, from what a real
run of this index measured: the request latencies and the server's memory report. The
time model prices the index's requests with them (``kv_round_trip_s``, ``kv_key_s``,
``kv_tail_ratio``; memory ``kv_base_bytes`` + ``kv_entry_bytes`` per entry), so
``indexbench calibrate`` takes them from here, not from a fit of seconds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def fit_kv_constants(columns: Mapping[str, np.ndarray], base: Any
                     ) -> tuple[dict[str, float], dict[str, str]]:
    """The round trip and the cost per key from the p50 request latency
    (``kv_get_p50_ms``) against the keys per request (``kv_gets / kv_get_round_trips``;
    unless the sizes differ by 2x or more, as runs at several ``get.batch.size`` do, only
    the round trip is told apart), the p99/p50 ratio, and the memory as base + bytes per
    entry from ``kv_server_bytes`` against ``kv_entries``. Returns (fitted, why kept); a
    run without those columns (no key-value index) gives neither."""
    fitted: dict[str, float] = {}
    why: dict[str, str] = {}
    p50, p99 = columns.get("kv_get_p50_ms"), columns.get("kv_get_p99_ms")
    gets, rts = columns.get("kv_gets"), columns.get("kv_get_round_trips")
    if p50 is not None and gets is not None and rts is not None:  # a run with the index
        x = np.divide(gets, rts, out=np.full(len(gets), np.nan), where=rts > 0)
        y = p50 / 1000.0
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if not len(x):
            why.update(dict.fromkeys(("kv_round_trip_s", "kv_key_s", "kv_tail_ratio"),
                                     "no measured kv_get_p50_ms"))
        else:
            slope = base.kv_key_s
            if x.max() >= 2 * x.min():  # request sizes apart enough to tell a slope
                slope = max(0.0, float(np.polyfit(x, y, 1)[0]))
                fitted["kv_key_s"] = slope
            else:
                why["kv_key_s"] = "one request size only"
            fitted["kv_round_trip_s"] = max(0.0, float(np.median(y - slope * x)))
            if p99 is not None:
                r = p99[ok] / 1000.0 / np.maximum(y, 1e-12)
                r = r[np.isfinite(r)]
                if len(r):
                    fitted["kv_tail_ratio"] = max(1.0, float(np.median(r)))
    mem, entries = columns.get("kv_server_bytes"), columns.get("kv_entries")
    if mem is None or entries is None:  # no key-value index in the run: nothing to say
        return fitted, why
    ok = ~np.isnan(mem) & ~np.isnan(entries)
    if not ok.any():
        why.update(dict.fromkeys(("kv_base_bytes", "kv_entry_bytes"),
                                 "no measured kv_server_bytes"))
    else:
        m, e = mem[ok], entries[ok]
        if np.ptp(e) > 0:
            per, at0 = np.polyfit(e, m, 1)
            fitted["kv_entry_bytes"], fitted["kv_base_bytes"] = max(0.0, float(per)), \
                max(0.0, float(at0))
        else:
            why["kv_base_bytes"] = "one table size only"
            fitted["kv_entry_bytes"] = max(0.0, float(np.median(
                (m - base.kv_base_bytes) / np.maximum(e, 1.0))))
    return fitted, why
