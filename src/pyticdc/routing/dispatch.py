"""Partition dispatchers: which Kafka partition a row goes to, exactly as TiCDC computes it.

Implements reference §1.6 (tiflow ``cdc/sink/dmlsink/mq/dispatcher/{event_router.go,partition/*.go}``,
``pkg/hash/position_inertia.go``) and ``ColumnValueString`` (``cdc/model/sink.go``).
"""

from __future__ import annotations

import sys
import warnings
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from pyticdc.codec.jsontext import format_float_f
from pyticdc.errors import ConfigError
from pyticdc.model import ColumnFlag, ColumnInfo, IndexInfo, Row, RowChange, TableInfo, TypeCode, Value
from pyticdc.routing.tablefilter import TableFilter, parse_table_filter
from pyticdc.routing.topic import TopicDispatcher, make_topic_dispatcher

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

__all__ = [
    "PARTITION_RULES",
    "ColumnsDispatcher",
    "DispatchRule",
    "EventRouter",
    "IndexValueDispatcher",
    "PartitionDispatcher",
    "PositionInertia",
    "TableDispatcher",
    "TsDispatcher",
    "column_value_bytes",
    "column_value_string",
    "make_partition_dispatcher",
    "normalize_rule",
    "rules_from_toml",
]

#: Partition rule names TiCDC knows (matched case-insensitively); anything else falls back to ``default``.
PARTITION_RULES: Final = ("default", "table", "index-value", "rowid", "columns", "ts")


# --------------------------------------------------------------------------- hash
class PositionInertia:
    """TiCDC's order-independent hash: XOR over writes of CRC32-IEEE(concatenated parts) (§1.6)."""

    __slots__ = ("_sum",)

    def __init__(self) -> None:
        self._sum = 0

    def write(self, *parts: bytes | str) -> None:
        """One ``Write(a, b, …)``: a fresh CRC32 over the concatenation, XORed into the sum."""
        # No separator between parts: Write("ab", "c") == Write("a", "bc"), as in Go.
        data = b"".join(_to_bytes(part) for part in parts)
        self._sum ^= zlib.crc32(data) & 0xFFFFFFFF

    def sum32(self) -> int:
        """The accumulated 32-bit hash (Go ``Sum32``)."""
        return self._sum

    def reset(self) -> None:
        """Start over (Go ``Reset``)."""
        self._sum = 0


def _to_bytes(part: bytes | str) -> bytes:
    if isinstance(part, bytes):
        return part
    # surrogateescape lets a str made from non-UTF-8 bytes hash as those original bytes.
    return part.encode("utf-8", "surrogateescape")


# --------------------------------------------------------------------------- ColumnValueString
def column_value_bytes(value: Value, type_code: int | None = None) -> bytes:
    """Go ``ColumnValueString`` as the exact bytes TiCDC hashes and compares (§1.6).

    ``type_code`` tells a FLOAT column (formatted at 32 bits, as its Go value is a float32)
    from a DOUBLE; without it floats are formatted at 64 bits.
    """
    if isinstance(value, bytes):
        return value  # []byte: verbatim
    return column_value_string(value, type_code).encode("utf-8", "surrogateescape")


def column_value_string(value: Value, type_code: int | None = None) -> str:
    """Go ``ColumnValueString``: nil → ``null``, ints decimal, floats ``'f', -1``, strings verbatim (§1.6).

    ``bytes`` are returned decoded with ``surrogateescape`` so invalid UTF-8 survives a round trip.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float_f(value, 32 if type_code == TypeCode.FLOAT else 64)
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)  # DECIMAL, date/time, JSON, VECTOR: the model string (Go %v of String())


# --------------------------------------------------------------------------- dispatchers
class PartitionDispatcher(Protocol):
    """Chooses a partition for a row (Go ``partition.Dispatcher``)."""

    def dispatch(self, row: RowChange, partition_num: int) -> tuple[int, str]:
        """(partition, partition key) of ``row`` among ``partition_num`` partitions."""

    def hashed_writes(self, row: RowChange) -> list[tuple[str, str]]:
        """The PositionInertia writes the dispatcher makes for ``row`` (empty when it does not hash)."""


def _check_partition_num(partition_num: int) -> None:
    if partition_num < 1:
        raise ConfigError(f"partition number must be >= 1, got {partition_num}")


def _dispatch_image(row: RowChange) -> Row:
    # Go: dispatchCols := row.Columns; if len(row.Columns) == 0 { dispatchCols = row.PreColumns }
    if row.columns:
        return row.columns
    return row.pre_columns or Row()


def _sum_writes(writes: Iterable[tuple[bytes | str, ...]]) -> int:
    hasher = PositionInertia()
    for parts in writes:
        hasher.write(*parts)
    return hasher.sum32()


def _require_table_info(row: RowChange, rule: str) -> TableInfo:
    if row.table_info is None:
        raise ConfigError(
            f"partition rule {rule!r} needs the row's table_info (column flags / indexes) "
            f"for {row.schema}.{row.table}"
        )
    return row.table_info


class TableDispatcher:
    """``table`` (and ``default``, tiflow ≥ Sept 2023): hash of schema and table name (§1.6)."""

    def hashed_writes(self, row: RowChange) -> list[tuple[str, str]]:
        """One write: (schema, table)."""
        return [(row.schema, row.table)]

    def dispatch(self, row: RowChange, partition_num: int) -> tuple[int, str]:
        """``Write(schema, table) % n``; partition key ``"schema.table"`` (Go ``TableName.String()``)."""
        _check_partition_num(partition_num)
        return _sum_writes(self.hashed_writes(row)) % partition_num, f"{row.schema}.{row.table}"


class TsDispatcher:
    """``ts``: the commit ts modulo the partition count (§1.6)."""

    def hashed_writes(self, row: RowChange) -> list[tuple[str, str]]:
        """No writes: ``ts`` does not hash."""
        return []

    def dispatch(self, row: RowChange, partition_num: int) -> tuple[int, str]:
        """``commit_ts % n``; partition key the decimal commit ts."""
        _check_partition_num(partition_num)
        return row.commit_ts % partition_num, str(row.commit_ts)


@dataclass(frozen=True)
class IndexValueDispatcher:
    """``index-value`` (alias ``rowid``): hash of the handle-key columns, or of a named index (§1.6)."""

    index_name: str = ""

    def hashed_writes(self, row: RowChange) -> list[tuple[str, str]]:
        """(schema, table), then (column name, ColumnValueString) per handle-key / index column."""
        writes: list[tuple[str, str]] = [(row.schema, row.table)]
        table = _require_table_info(row, "index-value")
        image = _dispatch_image(row)
        if not self.index_name:
            # Handle-key columns of the image, in column order (order is irrelevant to the XOR).
            for column in table.columns:
                if column.flags & ColumnFlag.HANDLE_KEY and column.name in image:
                    writes.append((column.name, column_value_string(image[column.name], column.type_code)))
            return writes
        index = find_index(table, self.index_name)
        if index is None:
            available = ", ".join(repr(i.name) for i in dispatchable_indexes(table)) or "none"
            raise ConfigError(
                f"index-value dispatcher: index {self.index_name!r} not found in table "
                f"{table.schema}.{table.table}; indexes: {available}"
            )
        for name in index.columns:
            index_column = _column_by_name(table, name)
            key = index_column.name if index_column is not None else name
            if key not in image:
                continue  # Go: a nil column of the image is skipped
            type_code = index_column.type_code if index_column is not None else None
            # Go hashes the index column's own spelling (IndexColumn.Name.O).
            writes.append((name, column_value_string(image[key], type_code)))
        return writes

    def dispatch(self, row: RowChange, partition_num: int) -> tuple[int, str]:
        """``sum32 % n``; partition key the decimal sum32."""
        _check_partition_num(partition_num)
        sum32 = _sum_writes(self.hashed_writes(row))
        return sum32 % partition_num, str(sum32)


@dataclass(frozen=True)
class ColumnsDispatcher:
    """``columns``: hash of the configured columns (names case-insensitive, table spelling hashed) (§1.6)."""

    columns: tuple[str, ...] = ()

    def resolve(self, table: TableInfo) -> list[ColumnInfo]:
        """The table's columns for the configured names; ConfigError for unknown or virtual ones."""
        visible = {c.name.lower(): c for c in table.columns if not c.virtual}
        virtual = {c.name.lower() for c in table.columns if c.virtual}
        resolved = []
        for name in self.columns:
            lowered = name.lower()
            if lowered in virtual:
                raise ConfigError(
                    f"columns dispatcher: column {name!r} of {table.schema}.{table.table} is a virtual "
                    "generated column, which TiCDC cannot dispatch by"
                )
            if lowered not in visible:
                names = ", ".join(c.name for c in visible.values()) or "none"
                raise ConfigError(
                    f"columns dispatcher: column {name!r} not found in {table.schema}.{table.table}; "
                    f"columns: {names}"
                )
            resolved.append(visible[lowered])
        return resolved

    def hashed_writes(self, row: RowChange) -> list[tuple[str, str]]:
        """(schema, table), then (table's column name, ColumnValueString) per configured column."""
        table = _require_table_info(row, "columns")
        image = _dispatch_image(row)
        writes: list[tuple[str, str]] = [(row.schema, row.table)]
        for column in self.resolve(table):
            if column.name not in image:
                continue  # Go: a nil column of the image is skipped
            writes.append((column.name, column_value_string(image[column.name], column.type_code)))
        return writes

    def dispatch(self, row: RowChange, partition_num: int) -> tuple[int, str]:
        """``sum32 % n``; partition key the decimal sum32."""
        _check_partition_num(partition_num)
        sum32 = _sum_writes(self.hashed_writes(row))
        return sum32 % partition_num, str(sum32)


def _column_by_name(table: TableInfo, name: str) -> ColumnInfo | None:
    column = table.column(name)
    if column is not None:
        return column
    lowered = name.lower()
    return next((c for c in table.columns if c.name.lower() == lowered), None)


def dispatchable_indexes(table: TableInfo) -> list[IndexInfo]:
    """The indexes TiDB lists in ``TableInfo.Indices``: an int-handle primary key is not one of them."""
    return [i for i in table.indexes if not (i.primary and table.pk_is_handle)]


def find_index(table: TableInfo, name: str) -> IndexInfo | None:
    """Go ``TableInfo.GetIndex``: the index named ``name`` (case-insensitive), or None."""
    lowered = name.lower()
    return next((i for i in dispatchable_indexes(table) if i.name.lower() == lowered), None)


def make_partition_dispatcher(
    rule: str, *, index_name: str = "", columns: Sequence[str] = ()
) -> PartitionDispatcher:
    """The dispatcher for a partition rule name (Go ``getPartitionDispatcher``, Kafka scheme).

    Unknown names fall back to ``default`` with a warning, as TiCDC does for Kafka sinks.
    """
    name = rule.lower()
    # An empty rule (a dispatcher entry that only sets a topic) is the default; TiCDC gets there via a warning.
    if name in ("", "default", "table"):
        return TableDispatcher()
    if name == "ts":
        return TsDispatcher()
    if name in ("index-value", "rowid"):
        return IndexValueDispatcher(index_name)
    if name == "columns":
        return ColumnsDispatcher(tuple(columns))
    warnings.warn(
        f"partition rule {rule!r} is not one of {', '.join(PARTITION_RULES)}; TiCDC uses 'default' instead",
        UserWarning, stacklevel=3,
    )
    return TableDispatcher()


# --------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class DispatchRule:
    """One ``[[sink.dispatchers]]`` entry: table matcher, partition rule and topic expression."""

    matcher: tuple[str, ...] = ("*.*",)
    partition: str = "default"
    topic: str = ""
    #: ``index = "name"`` for the index-value rule.
    index: str = ""
    #: ``columns = [...]`` for the columns rule.
    columns: tuple[str, ...] = ()
    #: The changefeed's top-level ``case-sensitive`` (default false).
    case_sensitive: bool = False


_RULE_KEYS: Final = frozenset({"matcher", "partition", "dispatcher", "topic", "index", "columns", "case_sensitive",
                               "case-sensitive"})


def normalize_rule(rule: DispatchRule | Mapping[str, Any]) -> DispatchRule:
    """A DispatchRule from a rule object or a mapping with TiCDC's keys (legacy ``dispatcher`` accepted)."""
    if isinstance(rule, DispatchRule):
        return rule
    if not isinstance(rule, Mapping):
        raise ConfigError(f"a dispatch rule must be a mapping or DispatchRule, got {type(rule).__name__}")
    unknown = set(rule) - _RULE_KEYS
    if unknown:
        raise ConfigError(
            f"unknown dispatch rule key(s) {sorted(unknown)}; valid keys: matcher, partition, dispatcher, topic, "
            "index, columns"
        )
    partition = rule.get("partition") or ""
    legacy = rule.get("dispatcher") or ""
    if partition and legacy:
        # pkg/config/sink.go validateAndAdjust rejects both spellings together.
        raise ConfigError(f"dispatcher and partition cannot be configured both for rule: {dict(rule)}")
    matcher = rule.get("matcher", ())
    if isinstance(matcher, str):
        matcher = (matcher,)
    columns = rule.get("columns") or ()
    if isinstance(columns, str):
        columns = (columns,)
    case_sensitive = rule.get("case_sensitive", rule.get("case-sensitive", False))
    return DispatchRule(
        matcher=tuple(str(m) for m in matcher), partition=str(partition or legacy), topic=str(rule.get("topic") or ""),
        index=str(rule.get("index") or ""), columns=tuple(str(c) for c in columns), case_sensitive=bool(case_sensitive),
    )


@dataclass
class _CompiledRule:
    filter: TableFilter
    partition: PartitionDispatcher
    topic: TopicDispatcher
    rule: DispatchRule


@dataclass
class EventRouter:
    """TiCDC's ``EventRouter``: first matching rule gives a row's topic and partition dispatcher (§1.6).

    An implicit last rule ``{matcher = ["*.*"], partition = "default", topic = ""}`` covers every table.
    """

    default_topic: str
    rules: Sequence[DispatchRule | Mapping[str, Any]] = ()
    _compiled: list[_CompiledRule] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        compiled = []
        # The implicit last rule of tiflow's NewEventRouter: every table, default partition, default topic.
        for rule in [*(normalize_rule(r) for r in self.rules), DispatchRule()]:
            table_filter = parse_table_filter(rule.matcher, case_sensitive=rule.case_sensitive)
            dispatcher = make_partition_dispatcher(rule.partition, index_name=rule.index, columns=rule.columns)
            compiled.append(_CompiledRule(table_filter, dispatcher,
                                          make_topic_dispatcher(rule.topic, self.default_topic), rule))
        self._compiled = compiled

    def match(self, schema: str, table: str) -> tuple[TopicDispatcher, PartitionDispatcher]:
        """The (topic, partition) dispatchers of the first rule matching ``schema.table``."""
        for rule in self._compiled:
            if rule.filter.match_table(schema, table):
                return rule.topic, rule.partition
        raise AssertionError("unreachable: the implicit *.* rule matches every table")

    def topic_for_row(self, row: RowChange) -> str:
        """The topic of a row (Go ``GetTopicForRowChange``)."""
        return self.match(row.schema, row.table)[0].substitute(row.schema, row.table)

    def topic_for_table(self, schema: str, table: str) -> str:
        """The topic of a table's events."""
        return self.match(schema, table)[0].substitute(schema, table)

    def partition_for_row(self, row: RowChange, partition_num: int) -> tuple[int, str]:
        """(partition, partition key) of a row (Go ``GetPartitionForRowChange``)."""
        return self.match(row.schema, row.table)[1].dispatch(row, partition_num)

    def active_topics(self, tables: Iterable[tuple[str, str]]) -> list[str]:
        """Topics of ``tables`` in first-seen order, then the default topic (Go ``GetActiveTopics``)."""
        topics: list[str] = []
        for schema, table in tables:
            topic = self.topic_for_table(schema, table)
            if topic not in topics:
                topics.append(topic)
        if self.default_topic not in topics:
            topics.append(self.default_topic)
        return topics

    def verify_table(self, table: TableInfo) -> None:
        """Go ``VerifyTables``: a named index must exist and be unique; columns must exist (ConfigError)."""
        dispatcher = self.match(table.schema, table.table)[1]
        if isinstance(dispatcher, IndexValueDispatcher) and dispatcher.index_name:
            index = find_index(table, dispatcher.index_name)
            if index is None:
                available = ", ".join(repr(i.name) for i in dispatchable_indexes(table)) or "none"
                raise ConfigError(
                    f"index {dispatcher.index_name!r} not found when verifying table "
                    f"{table.schema}.{table.table}; indexes: {available}"
                )
            if not index.unique and not index.primary:
                raise ConfigError(
                    f"index {dispatcher.index_name!r} of {table.schema}.{table.table} is not unique; "
                    "index-value dispatch needs a unique index"
                )
        elif isinstance(dispatcher, ColumnsDispatcher):
            dispatcher.resolve(table)


def rules_from_toml(text: str) -> list[DispatchRule]:
    """The ``[[sink.dispatchers]]`` rules of a TiCDC changefeed config file, with its ``case-sensitive``.

    Accepts the whole changefeed TOML as TiCDC reads it (``matcher``, ``partition`` or the legacy
    ``dispatcher``, ``topic``, ``index``, ``columns``); other sections are ignored.
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"changefeed config is not valid TOML: {exc}") from None
    case_sensitive = document.get("case-sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise ConfigError(f"case-sensitive must be true or false, got {case_sensitive!r}")
    sink = document.get("sink", {})
    if not isinstance(sink, Mapping):
        raise ConfigError("[sink] must be a table")
    entries = sink.get("dispatchers", [])
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise ConfigError("sink.dispatchers must be an array of tables ([[sink.dispatchers]])")
    rules = []
    for entry in entries:
        if "case-sensitive" in entry or "case_sensitive" in entry:
            raise ConfigError("case-sensitive is a changefeed-level option, not a dispatcher key")
        rules.append(normalize_rule({**entry, "case_sensitive": case_sensitive}))
    return rules
