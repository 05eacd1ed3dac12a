"""external-kv's requests to the key-value server, each one counted and timed where it is
made (a Spark task or the driver): multi-gets, put batches, the rollback of an instant's
entries, and the server's own memory report.

The server is redis (the ``redis`` client library speaks its protocol): one request is
one round trip, as one ``HTable.get(List<Get>)`` or one ``BufferedMutator`` flush is in
Hudi's HBase index. Nothing here imports pyspark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pyarrow as pa
import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from tableformat.errors import IndexBenchError

# A request the server does not answer within this long fails the task (and the write).
SOCKET_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 5.0
# Connection errors are retried twice, quickly: a restart of the network stack is
# survived, a dead server fails the write within a second.
RETRY = Retry(ExponentialBackoff(cap=0.5, base=0.05), 2)

# Server-side rollback of one instant (Hudi's ``rollbackCommit`` with
# ``hoodie.index.hbase.rollback.sync=true``): every key the instant put, kept in its
# journal set, is deleted when its entry still names the instant (a later put of the
# key, by an instant that found this entry stale, is kept). One round trip.
ROLLBACK_LUA = """
local n = 0
local keys = redis.call('SMEMBERS', KEYS[1])
for i = 1, #keys do
  local v = redis.call('GET', keys[i])
  if v and string.sub(v, 1, 17) == ARGV[1] then
    redis.call('DEL', keys[i])
    n = n + 1
  end
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return n
"""


def check_url(url: str) -> str:
    """A ``redis://HOST:PORT[/DB]`` URL, refused in one line when it is not one."""
    parsed = urlparse(url)
    if parsed.scheme not in ("redis", "rediss") or not parsed.hostname:
        raise IndexBenchError(f"indexbench.kv.url={url!r}: expected redis://HOST:PORT")
    try:
        parsed.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise IndexBenchError(f"indexbench.kv.url={url!r}: the port is not a number") from None
    return url


def connect(url: str) -> redis.Redis:
    """A client of the server at ``url`` (one connection per process, made on demand)."""
    return redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT_S,
                                socket_connect_timeout=CONNECT_TIMEOUT_S, retry=RETRY)


def ping(url: str, timeout_s: float = 2.0) -> str | None:
    """None when the server at ``url`` answers, else why not (one line)."""
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout_s,
                                      socket_connect_timeout=timeout_s,
                                      retry=Retry(ExponentialBackoff(), 0))
        client.ping()
        client.close()
        return None
    except redis.RedisError as exc:
        return (str(exc).splitlines() or [type(exc).__name__])[0]


def journal_key(prefix: str, instant: str) -> str:
    """The set of keys one instant put (kept with ``rollback.sync``). A partition path
    never starts with '.', so no entry key can be named like it."""
    return f"{prefix}.journal{instant}"


def journals_key(prefix: str) -> str:
    """The set of instants that have a journal."""
    return f"{prefix}.journals"


@dataclass
class Counts:
    """What one process's requests did (summed into the batch's metrics row)."""

    gets: int = 0
    get_round_trips: int = 0
    puts: int = 0
    put_round_trips: int = 0
    other_round_trips: int = 0  # journals and rollbacks
    rollback_deletes: int = 0
    get_seconds: list[float] = field(default_factory=list)  # one per multi-get

    def as_dict(self) -> dict[str, float]:
        return {"kv_gets": self.gets, "kv_get_round_trips": self.get_round_trips,
                "kv_puts": self.puts, "kv_put_round_trips": self.put_round_trips,
                "kv_other_round_trips": self.other_round_trips,
                "kv_rollback_deletes": self.rollback_deletes}


class KvStore:
    """The requests of external-kv, over one client; ``counts`` says what they did."""

    def __init__(self, url: str, prefix: str = ""):
        self.url, self.prefix = url, prefix
        self.client = connect(url)
        self.counts = Counts()
        # connect now (no request is sent): a request's latency is its round trip, not
        # the TCP connect of a task's first request
        pool = self.client.connection_pool
        pool.release(pool.get_connection())

    def close(self) -> None:
        self.client.close()

    # ---- the index's work ---------------------------------------------------------
    def get(self, keys: pa.Array) -> pa.Array:
        """One multi-get of ``keys`` (binary): their values, null where none."""
        t0 = time.perf_counter()
        values = self.client.mget(keys.to_pylist())
        self.counts.get_seconds.append(time.perf_counter() - t0)
        self.counts.gets += len(keys)
        self.counts.get_round_trips += 1
        return pa.array(values, pa.binary())

    def put(self, keys: pa.Array, values: pa.Array, journal: str | None = None) -> None:
        """One batch of puts (a pipeline: one round trip); with ``journal``, each key is
        also added to that instant's journal in the same round trip."""
        pipe = self.client.pipeline(transaction=False)
        ks = keys.to_pylist()
        pipe.mset(dict(zip(ks, values.to_pylist(), strict=True)))
        if journal is not None:
            pipe.sadd(journal, *ks)
        pipe.execute()
        self.counts.puts += len(ks)
        self.counts.put_round_trips += 1

    # ---- rollback.sync: journals of instants that put entries ----------------------
    def open_journal(self, instant: str) -> str:
        """Register ``instant`` as one whose puts are journaled; the journal's key."""
        self.client.sadd(journals_key(self.prefix), instant)
        self.counts.other_round_trips += 1
        return journal_key(self.prefix, instant)

    def journaled(self) -> list[str]:
        """Instants with a journal (their puts not yet committed or rolled back)."""
        found = self.client.smembers(journals_key(self.prefix))
        self.counts.other_round_trips += 1
        return sorted(v.decode() for v in found)

    def close_journal(self, instant: str) -> None:
        """The instant completed: its entries stay, its journal goes."""
        pipe = self.client.pipeline(transaction=False)
        pipe.delete(journal_key(self.prefix, instant))
        pipe.srem(journals_key(self.prefix), instant)
        pipe.execute()
        self.counts.other_round_trips += 1

    def rollback(self, instant: str) -> int:
        """Delete the entries ``instant`` put that still name it; returns how many."""
        n = int(self.client.eval(ROLLBACK_LUA, 2, journal_key(self.prefix, instant),
                                 journals_key(self.prefix), instant))
        self.counts.other_round_trips += 1
        self.counts.rollback_deletes += n
        return n

    # ---- what the server reports (measurements, not the index's work) --------------
    def memory_bytes(self) -> int:
        """The server's own report of the memory it allocated (``INFO memory``)."""
        return int(self.client.info("memory")["used_memory"])

    def entries(self) -> int:
        """Keys in the server's database (``DBSIZE``): entries, and journals if any."""
        return int(self.client.dbsize())


