"""partition-bucket core: RFC-89's rule engine, its versions, and rescale planning.

Spark-free. A table's bucket count per partition comes from a *hashing config* (Hudi's
``PartitionBucketIndexHashingConfig``): ``expressions`` ``regex1,N1;regex2,N2`` (the
first rule whose regex matches the partition path wins), else ``defaultBucketNumber``
(``hoodie.bucket.index.num.buckets``). Version 0 is the table's own properties and is
written as
``.hoodie/.bucket_index/partition_bucket_index_meta/configs/00000000000000000.hashing_config``
at the first commit; every later version is made by one offline rescale, a replacecommit whose
instant names its ``<instant>.hashing_config``, so it takes effect exactly when that
replacecommit completes.

Matching follows Hudi's ``PartitionBucketIndexCalculator.RegexRuleEngine``, which calls
Java's ``Matcher.find()``: a rule matches when its regex matches *anywhere* in the
partition path (Python's :meth:`re.Pattern.search`, not ``fullmatch``); anchor with
``^…$`` for a whole-path match. The regexes are Python's ``re`` dialect, which agrees
with ``java.util.regex`` on the common syntax (classes, ``\\d``, ``{m}``, groups,
alternation, anchors). Expressions are split as Hudi splits them (``String.split``, so
trailing empty pieces are dropped and a regex cannot contain ``,`` or ``;``).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from indexes.bucket.rescale import BUCKET_COUNTS_KEY, RescaleError, RescalePlan
from tableformat import fs as tfs
from tableformat.commit_metadata import written_by_indexbench
from tableformat.errors import IndexBenchError, InvariantViolation

if TYPE_CHECKING:
    from tableformat.table import Snapshot, Table

EXPRESSIONS_KEY = "hoodie.bucket.index.partition.expressions"
RULE_TYPE_KEY = "hoodie.bucket.index.partition.rule.type"
NUM_BUCKETS_KEY = "hoodie.bucket.index.num.buckets"
RULE_TYPES = ("regex",)  # Hudi's PartitionBucketIndexRule (the only one so far)

INITIAL_INSTANT = "00000000000000000"  # Hudi's HoodieTimeline.INIT_INSTANT_TS
HASHING_META_DIR = ".hoodie/.bucket_index/partition_bucket_index_meta/configs"
HASHING_CONFIG_SUFFIX = ".hashing_config"
CONFIG_VERSION = 1  # PartitionBucketIndexHashingConfig.CURRENT_VERSION
MAX_BUCKETS = 99_999_999  # the bucket id is 8 digits of the file id

# extraMetadata (string → string): every commit names the rule version it routed with
# (and BUCKET_COUNTS_KEY the counts of the partitions it wrote); a rescale replacecommit
# also carries the whole new config, so the timeline alone (a snapshot, the simulator's
# model table) knows every version without reading .hashing_meta.
HASHING_INSTANT_KEY = "indexbench.bucket.index.hashing.config.instant"
HASHING_CONFIG_KEY = "indexbench.bucket.index.hashing.config"

_JAVA_INT = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt accepts


# ---------------------------------------------------------------- parsing (no Spark)
def bucket_count(value: Any, what: str) -> int:
    """A bucket count as an int in 1..99,999,999, or a refusal naming ``what``."""
    text = str(value).strip()
    if isinstance(value, bool) or not _JAVA_INT.fullmatch(text):
        raise IndexBenchError(f"{what}: bucket count must be an integer >= 1, not {value!r}")
    n = int(text)
    if n < 1:
        raise IndexBenchError(f"{what}: bucket count must be >= 1, not {n}")
    if n > MAX_BUCKETS:
        raise IndexBenchError(f"{what}: bucket count {n} does not fit the 8-digit bucket id "
                              f"of a file id (max {MAX_BUCKETS:,})")
    return n


def parse_expressions(text: str, key: str = EXPRESSIONS_KEY) -> tuple[tuple[str, int], ...]:
    """``regex1,N1;regex2,N2`` → ((regex, N), …) in priority order; empty text → ().

    Refused with one error naming ``key``: an empty rule (``a,2;;b,3``, or an empty
    regex, which would match every partition), a rule without exactly one ``,``, a count
    that is not an integer >= 1, a regex Python's ``re`` cannot compile."""
    if not text or not text.strip():
        return ()
    pieces = text.split(";")
    while pieces and pieces[-1] == "":  # Java's String.split drops trailing empty strings
        pieces.pop()
    rules = []
    for i, piece in enumerate(pieces, 1):
        rule = piece.strip()
        where = f"{key}: rule {i} ({rule!r})"
        if not rule:
            raise IndexBenchError(f"{key}: rule {i} is empty (rules are 'regex,N' separated "
                                  "by ';')")
        parts = rule.split(",")
        while len(parts) > 1 and parts[-1] == "":
            parts.pop()
        if len(parts) != 2:
            raise IndexBenchError(f"{where} must be 'regex,N' with exactly one ',' (Hudi "
                                  "splits rules on ',' and ';', so a regex cannot hold them)")
        regex = parts[0].strip()
        if not regex:
            raise IndexBenchError(f"{where} has an empty regex (it would match every "
                                  f"partition: use {NUM_BUCKETS_KEY} for the default)")
        n = bucket_count(parts[1], where)
        try:
            re.compile(regex)
        except re.error as exc:
            raise IndexBenchError(f"{where}: bad regex: {exc}") from None
        rules.append((regex, n))
    return tuple(rules)


def rule_type(value: str, key: str = RULE_TYPE_KEY) -> str:
    """The rule type in Hudi's spelling (``regex``); matched case-insensitively as Hudi's
    ``PartitionBucketIndexRule.valueOf(ruleType.toUpperCase())``."""
    name = str(value).strip().lower()
    if name not in RULE_TYPES:
        raise IndexBenchError(f"{key} must be one of {', '.join(RULE_TYPES)}, not {value!r}")
    return name


# ---------------------------------------------------------------- the calculator
@dataclass(frozen=True)
class BucketCalculator:
    """Partition path → bucket count: the first matching rule, else the default."""

    rules: tuple[tuple[re.Pattern, int], ...]
    default: int

    def num_buckets(self, partition: str) -> int:
        for pattern, n in self.rules:
            if pattern.search(partition):  # Java Matcher.find(): anywhere in the path
                return n
        return self.default

    def counts(self, partitions) -> dict[str, int]:
        """Per distinct partition (a batch's or a snapshot's: a short list, not rows)."""
        return {p: self.num_buckets(p) for p in partitions}


@functools.lru_cache(maxsize=256)
def make_calculator(expressions: str, default: int, rule: str = "regex") -> BucketCalculator:
    """The calculator of a config (cached: routing asks once per batch and per file)."""
    rule_type(rule)
    return BucketCalculator(tuple((re.compile(r), n) for r, n in parse_expressions(expressions)),
                            int(default))


# ---------------------------------------------------------------- versions
@dataclass(frozen=True)
class HashingConfig:
    """One version of the rule: Hudi's ``<instant>.hashing_config`` JSON fields."""

    expressions: str
    default_bucket_number: int
    rule: str = "regex"
    instant: str = INITIAL_INSTANT
    version: int = CONFIG_VERSION

    @property
    def calculator(self) -> BucketCalculator:
        return make_calculator(self.expressions, self.default_bucket_number, self.rule)

    def counts(self, partitions) -> dict[str, int]:
        return self.calculator.counts(partitions)

    def to_json(self) -> str:
        """Hudi's field names (``PartitionBucketIndexHashingConfig``)."""
        return json.dumps({"expressions": self.expressions,
                           "defaultBucketNumber": self.default_bucket_number,
                           "rule": self.rule, "version": self.version,
                           "instant": self.instant}, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes, where: str) -> HashingConfig:
        """Parse and check a stored config; a broken one is an invariant violation."""
        try:
            d = json.loads(text)
            cfg = cls(str(d.get("expressions") or ""), int(d["defaultBucketNumber"]),
                      str(d.get("rule") or "regex"), str(d["instant"]),
                      int(d.get("version", CONFIG_VERSION)))
            cfg.calculator  # noqa: B018 (parses the expressions and the rule type)
        except (ValueError, KeyError, TypeError, IndexBenchError) as exc:
            raise InvariantViolation(f"{where}: unreadable hashing config: {exc}") from None
        return cfg

    def with_instant(self, instant: str) -> HashingConfig:
        return HashingConfig(self.expressions, self.default_bucket_number, self.rule,
                             instant, self.version)


def config_in_force(snapshot: Snapshot, initial: HashingConfig,
                    at: str | None = None) -> HashingConfig:
    """The version in force (after ``at``, if given): the latest completed rescale
    replacecommit's config, else version 0 (the table's properties). Only completed
    instants are in a snapshot, so a pending or rolled-back rescale never counts."""
    for instant in reversed(snapshot.completed):
        if at is not None and instant > at:
            continue
        text = snapshot.extra.get(instant, {}).get(HASHING_CONFIG_KEY)
        if text:
            return HashingConfig.from_json(text, f"instant {instant}")
    return initial


def config_path(table: Table, instant: str) -> str:
    return table.abs_path(f"{HASHING_META_DIR}/{instant}{HASHING_CONFIG_SUFFIX}")


def stored_configs(table: Table) -> dict[str, str]:
    """instant → path of every ``<instant>.hashing_config`` under
    ``.hoodie/.bucket_index/partition_bucket_index_meta/configs``
    (temporary names of an unfinished atomic write are not configs)."""
    out = {}
    for info in tfs.list_files(table.fs, table.abs_path(HASHING_META_DIR)):
        stem, suffix = info.base_name[:17], info.base_name[17:]
        if suffix == HASHING_CONFIG_SUFFIX and stem.isdigit() and len(stem) == 17:
            out[stem] = info.path
    return out


def load_hashing_config(table: Table, completed) -> HashingConfig | None:
    """Hudi's loader: the latest stored config whose instant is a *completed* instant
    (or version 0); None when none is stored yet. Unlike Hudi, which skips only pending
    replacecommits, a config whose instant is not completed is ignored whatever the
    reason (a crash, a rollback that left the file)."""
    done = set(completed) | {INITIAL_INSTANT}
    usable = sorted(i for i in stored_configs(table) if i in done)
    if not usable:
        return None
    path = config_path(table, usable[-1])
    return HashingConfig.from_json(tfs.read_bytes(table.fs, path), path)


def write_hashing_config(table: Table, config: HashingConfig) -> bool:
    """Write ``<instant>.hashing_config`` atomically unless it is already there with the
    same content (idempotent); returns whether it wrote. Another content is refused."""
    path = config_path(table, config.instant)
    if tfs.exists(table.fs, path):
        have = HashingConfig.from_json(tfs.read_bytes(table.fs, path), path)
        if have != config:
            raise InvariantViolation(f"{path} already holds another hashing config; "
                                     "run indexbench verify")
        return False
    table.fs.create_dir(table.abs_path(HASHING_META_DIR), recursive=True)
    tfs.write_bytes_atomic(table.fs, path, config.to_json().encode())
    return True


def write_initial_config(table: Table, initial: HashingConfig) -> bool:
    """Version 0's file, as Hudi's writer stores it: only when the table has rules. With
    none Hudi writes no ``.hashing_meta`` (the table is a simple bucket index's), and its
    reader refuses a stored config whose expressions are empty ("Invalid regex
    expression format", found when Hudi's reader first read our tables)."""
    return bool(initial.expressions) and write_hashing_config(table, initial)


def checked_config(table: Table, snapshot: Snapshot, initial: HashingConfig) -> HashingConfig:
    """The version to route with, as Hudi's writer loads it from ``.hashing_meta``, after
    checking it is the one the timeline says (a disagreement would misroute: refused)."""
    timeline = config_in_force(snapshot, initial)
    stored = load_hashing_config(table, snapshot.completed)
    if stored is None and timeline.instant == INITIAL_INSTANT:
        return timeline  # version 0 is written lazily, at the first commit
    if stored != timeline:
        raise InvariantViolation(
            f"the hashing config in force on the timeline is version {timeline.instant}, but "
            f"{HASHING_META_DIR} gives {stored.instant if stored else 'none'}"
            f"{'' if stored is None or stored.instant != timeline.instant else ' (other content)'}"
            "; run indexbench verify")
    return timeline


def commit_metadata(config: HashingConfig, written_partitions) -> dict[str, str]:
    """extraMetadata of a commit: the rule version it routed with and the bucket count of
    every partition it wrote."""
    return {HASHING_INSTANT_KEY: config.instant,
            BUCKET_COUNTS_KEY: json.dumps(config.counts(sorted(set(written_partitions))),
                                          sort_keys=True)}


# ---------------------------------------------------------------- verify
def history_problems(snapshot: Snapshot, initial: HashingConfig) -> list[str]:
    """Every instant's recorded rule version is the one in force when it completed, and
    its recorded counts are that version's (``verify``)."""
    problems = []
    current = initial
    compactions = snapshot.compactions()
    for instant in snapshot.completed:
        if instant in compactions:
            continue  # a compaction keeps every file group where it is: it routes nothing
        extra = snapshot.extra.get(instant, {})
        if extra.get(HASHING_CONFIG_KEY):
            try:
                cfg = HashingConfig.from_json(extra[HASHING_CONFIG_KEY], f"instant {instant}")
            except InvariantViolation as exc:
                problems.append(str(exc))
                continue
            if cfg.instant != instant:
                problems.append(f"instant {instant} introduces the hashing config of instant "
                                f"{cfg.instant}")
            current = cfg
        version = extra.get(HASHING_INSTANT_KEY)
        if version is None and not written_by_indexbench(extra):
            continue  # Hudi's writer routes by the version in force, records none
        if version is None:
            problems.append(f"instant {instant} records no hashing config version")
            continue
        if version != current.instant:
            problems.append(f"instant {instant} routed with hashing config {version}, but "
                            f"{current.instant} was in force")
            continue
        recorded = json.loads(extra.get(BUCKET_COUNTS_KEY, "{}"))
        wrong = {p: n for p, n in recorded.items() if current.calculator.num_buckets(p) != n}
        for p, n in sorted(wrong.items()):
            problems.append(f"instant {instant} recorded {n} buckets for {p!r}; hashing config "
                            f"{current.instant} gives {current.calculator.num_buckets(p)}")
    return problems


def stored_config_problems(table: Table, snapshot: Snapshot,
                           initial: HashingConfig) -> list[str]:
    """``.hashing_meta`` agrees with the timeline: every version in force has its file
    with the same content, and no file belongs to an instant that is neither completed
    nor pending (Hudi's loader, which skips only pending instants, would load it)."""
    problems = []
    stored = stored_configs(table)
    versions = {i: HashingConfig.from_json(snapshot.extra[i][HASHING_CONFIG_KEY], i)
                for i in snapshot.completed if snapshot.extra.get(i, {}).get(HASHING_CONFIG_KEY)}
    if snapshot.completed and initial.expressions:  # else none is stored (above)
        versions[INITIAL_INSTANT] = initial
    pending = set(table.pending_instants())
    for instant, want in sorted(versions.items()):
        if instant not in stored:
            problems.append(f"{HASHING_META_DIR}/{instant}{HASHING_CONFIG_SUFFIX} is missing")
            continue
        try:
            have = HashingConfig.from_json(tfs.read_bytes(table.fs, stored[instant]),
                                           stored[instant])
        except InvariantViolation as exc:
            problems.append(str(exc))
            continue
        if have != want:
            problems.append(f"{HASHING_META_DIR}/{instant}{HASHING_CONFIG_SUFFIX} differs from "
                            "the version the timeline records")
    for instant in sorted(set(stored) - set(versions) - pending - {INITIAL_INSTANT}):
        problems.append(f"{HASHING_META_DIR}/{instant}{HASHING_CONFIG_SUFFIX} belongs to no "
                        "completed rescale (Hudi would load it)")
    return problems


# ---------------------------------------------------------------- rescale planning
def new_config(current: HashingConfig, expressions: str | None,
               num_buckets: Any = None) -> HashingConfig:
    """The next version: new expressions (required) and optionally a new default; the
    rule type stays. Checked here, before anything is written."""
    if expressions is None:
        raise RescaleError("a partition-bucket rescale needs --expressions 'regex,N;...' "
                           "(the new rules; '' for none)")
    expressions = expressions.strip()
    parse_expressions(expressions, f"{EXPRESSIONS_KEY} (--expressions)")
    default = current.default_bucket_number if num_buckets is None else \
        bucket_count(num_buckets, f"{NUM_BUCKETS_KEY} (--buckets)")
    return HashingConfig(expressions, default, current.rule, "pending", current.version)


@dataclass
class RulesRescalePlan(RescalePlan):
    """A rescale that makes new rules (``config``) the version in force."""

    config: HashingConfig | None = None


def plan_partition_rescale(snapshot: Snapshot, current: HashingConfig,
                           new: HashingConfig) -> RulesRescalePlan:
    """Overwrite exactly the snapshot's partitions whose count changes (RFC-89's insert
    overwrite); an empty plan still makes the new version effective."""
    partitions = snapshot.partitions()
    old, now = current.counts(partitions), new.counts(partitions)
    counts = {p: (old[p], now[p]) for p in partitions if old[p] != now[p]}
    before, after = sum(f for f, _ in counts.values()), sum(t for _, t in counts.values())
    return RulesRescalePlan("overwrite", after / before if before else 1.0, counts,
                            snapshot.in_partitions(counts), config=new)


def rescale_extra(config: HashingConfig) -> dict[str, str]:
    """extraMetadata a rescale adds to the multiple-rehash one (new counts, from, mode):
    the new version's instant and the whole config."""
    return {HASHING_INSTANT_KEY: config.instant, HASHING_CONFIG_KEY: config.to_json()}
