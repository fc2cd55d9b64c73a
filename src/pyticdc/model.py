"""The event model: the one vocabulary every layer of pyticdc speaks.

Values follow TiCDC's internal row model (ticdc-reference.md §1.1), not SQL text:

=================================  =====================================================
TiDB type                          Python value
=================================  =====================================================
TINYINT..BIGINT, YEAR              ``int`` (unsigned columns up to 2**64-1, exact)
FLOAT / DOUBLE                     ``float`` (FLOAT holds the nearest float32)
DECIMAL                            ``str`` with the column scale (``"153.12"``)
DATE/DATETIME/TIMESTAMP/TIME       ``str`` as TiDB prints it (TIMESTAMP in the server zone)
JSON, VECTOR                       ``str`` (``{"k": "v"}``, ``[1,2,3]``)
ENUM / SET / BIT                   ``int`` (1-based index / bitmask / bit value)
CHAR..BLOB, TEXT                   ``bytes`` (TiCDC carries every string type as []byte)
NULL                               ``None``
=================================  =====================================================
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any, NoReturn, Union

import msgspec

__all__ = [
    "ActionType",
    "Bootstrap",
    "ColumnFlag",
    "ColumnInfo",
    "DDLEvent",
    "Event",
    "IndexInfo",
    "KafkaRecord",
    "Op",
    "Row",
    "RowChange",
    "TableInfo",
    "TypeCode",
    "Value",
    "Watermark",
    "physical_ms",
]

#: A column value in TiCDC's internal row model (see module docstring).
Value = Union[int, float, str, bytes, None]


# --------------------------------------------------------------------------- codes
class TypeCode(enum.IntEnum):
    """TiDB/MySQL protocol column type byte (reference §1.1, vectors README)."""

    DECIMAL_OLD = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIDB_VECTOR = 225
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


class ColumnFlag(enum.IntFlag):
    """TiCDC column flag bits (cdc/model/sink.go ColumnFlagType, reference §1.2)."""

    BINARY = 0x01
    HANDLE_KEY = 0x02
    GENERATED = 0x04
    PRIMARY_KEY = 0x08
    UNIQUE_KEY = 0x10
    MULTIPLE_KEY = 0x20
    NULLABLE = 0x40
    UNSIGNED = 0x80


class ActionType(enum.IntEnum):
    """TiDB DDL ActionType codes (pingcap/tidb pkg/meta/model/job.go)."""

    NONE = 0
    CREATE_SCHEMA = 1
    DROP_SCHEMA = 2
    CREATE_TABLE = 3
    DROP_TABLE = 4
    ADD_COLUMN = 5
    DROP_COLUMN = 6
    ADD_INDEX = 7
    DROP_INDEX = 8
    ADD_FOREIGN_KEY = 9
    DROP_FOREIGN_KEY = 10
    TRUNCATE_TABLE = 11
    MODIFY_COLUMN = 12
    REBASE_AUTO_ID = 13
    RENAME_TABLE = 14
    SET_DEFAULT_VALUE = 15
    SHARD_ROW_ID = 16
    MODIFY_TABLE_COMMENT = 17
    RENAME_INDEX = 18
    ADD_TABLE_PARTITION = 19
    DROP_TABLE_PARTITION = 20
    CREATE_VIEW = 21
    MODIFY_TABLE_CHARSET_AND_COLLATE = 22
    TRUNCATE_TABLE_PARTITION = 23
    DROP_VIEW = 24
    RECOVER_TABLE = 25
    MODIFY_SCHEMA_CHARSET_AND_COLLATE = 26
    LOCK_TABLE = 27
    UNLOCK_TABLE = 28
    REPAIR_TABLE = 29
    SET_TIFLASH_REPLICA = 30
    UPDATE_TIFLASH_REPLICA_STATUS = 31
    ADD_PRIMARY_KEY = 32
    DROP_PRIMARY_KEY = 33
    CREATE_SEQUENCE = 34
    ALTER_SEQUENCE = 35
    DROP_SEQUENCE = 36
    ADD_COLUMNS = 37
    DROP_COLUMNS = 38
    MODIFY_TABLE_AUTO_ID_CACHE = 39
    REBASE_AUTO_RANDOM_BASE = 40
    ALTER_INDEX_VISIBILITY = 41
    EXCHANGE_TABLE_PARTITION = 42
    ADD_CHECK_CONSTRAINT = 43
    DROP_CHECK_CONSTRAINT = 44
    ALTER_CHECK_CONSTRAINT = 45
    ALTER_TABLE_ALTER_PARTITION = 46
    RENAME_TABLES = 47
    DROP_INDEXES = 48
    ALTER_TABLE_ATTRIBUTES = 49
    ALTER_TABLE_PARTITION_ATTRIBUTES = 50
    CREATE_PLACEMENT_POLICY = 51
    ALTER_PLACEMENT_POLICY = 52
    DROP_PLACEMENT_POLICY = 53
    ALTER_TABLE_PARTITION_PLACEMENT = 54
    MODIFY_SCHEMA_DEFAULT_PLACEMENT = 55
    ALTER_TABLE_PLACEMENT = 56
    ALTER_CACHE_TABLE = 57
    ALTER_TABLE_STATS_OPTIONS = 58
    ALTER_NO_CACHE_TABLE = 59
    CREATE_TABLES = 60
    MULTI_SCHEMA_CHANGE = 61
    FLASHBACK_CLUSTER = 62
    RECOVER_SCHEMA = 63
    REORGANIZE_PARTITION = 64
    ALTER_TTL_INFO = 65
    ALTER_TTL_REMOVE = 67
    CREATE_RESOURCE_GROUP = 68
    ALTER_RESOURCE_GROUP = 69
    DROP_RESOURCE_GROUP = 70
    ALTER_TABLE_PARTITIONING = 71
    REMOVE_PARTITIONING = 72


class Op(str, enum.Enum):
    """Kind of a row change."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


def physical_ms(tso: int) -> int:
    """Physical milliseconds of a TiDB TSO (``ts >> 18``)."""
    return tso >> 18


# --------------------------------------------------------------------------- rows
class Row(dict):  # type: ignore[type-arg]
    """An immutable column-name → value mapping (one row image)."""

    __slots__ = ()

    def _immutable(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("Row is immutable")

    __setitem__ = _immutable
    __delitem__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable
    __ior__ = _immutable

    def __reduce__(self) -> tuple[Any, ...]:
        # dict subclasses unpickle through __setitem__, which is blocked: rebuild instead.
        return (Row, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        # Order-independent, like __eq__: equal rows built in different column orders must hash equal.
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return f"Row({dict.__repr__(self)})"


def make_row(values: Mapping[str, Value] | Iterable[tuple[str, Value]] | None) -> Row | None:
    """Freeze a mapping (or pairs) into a Row; ``None`` stays ``None``."""
    if values is None or isinstance(values, Row):
        return values
    return Row(values)


# --------------------------------------------------------------------------- schema
class ColumnInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One column of a table, with everything the five protocols need (reference §1.1–1.2)."""

    name: str
    type_code: int
    #: TiCDC column flag bits (ColumnFlag).
    flags: int = 0
    charset: str = "binary"
    collation: str = "binary"
    #: TiDB flen; -1 = unspecified.
    flen: int = -1
    #: TiDB decimal (scale, or fsp for time types); -1 = unspecified.
    decimal: int = -1
    #: ENUM/SET elements in definition order.
    elems: tuple[str, ...] | None = None
    unsigned: bool = False
    zerofill: bool = False
    nullable: bool = True
    #: Column default as TiDB stores it (text), or None.
    default: str | None = None
    #: TiDB FieldType description (``int(11)``, ``varchar(16)``), used by content-compatible output.
    type_desc: str | None = None
    #: Column comment (Debezium DDL tableChanges).
    comment: str = ""
    #: Virtual generated column: exists in the schema but never carries a value.
    virtual: bool = False

    @property
    def is_handle_key(self) -> bool:
        """Whether the column is part of the handle TiCDC picked (HandleKey flag)."""
        return bool(self.flags & ColumnFlag.HANDLE_KEY)

    @property
    def is_primary_key(self) -> bool:
        """Whether the column belongs to the primary key."""
        return bool(self.flags & ColumnFlag.PRIMARY_KEY)

    @property
    def is_binary(self) -> bool:
        """Whether the column charset is ``binary`` (the Binary flag)."""
        return bool(self.flags & ColumnFlag.BINARY)

    @property
    def is_unsigned(self) -> bool:
        """Whether integer values are unsigned (flag or field type)."""
        return self.unsigned or bool(self.flags & ColumnFlag.UNSIGNED)


class IndexInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One index of a table: its name, kind and column names in index order."""

    name: str
    columns: tuple[str, ...]
    primary: bool = False
    unique: bool = False


class TableInfo(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """A table's schema at one version: columns in column-id order, indexes, identity."""

    schema: str
    table: str
    table_id: int = 0
    #: TiDB TableInfo.UpdateTS (Simple ``schemaVersion``).
    schema_version: int = 0
    is_partition: bool = False
    pk_is_handle: bool = False
    columns: tuple[ColumnInfo, ...] = ()
    indexes: tuple[IndexInfo, ...] = ()
    #: Table comment (Debezium DDL).
    comment: str | None = None
    #: Table default charset (Debezium DDL ``defaultCharsetName``); "" when unknown.
    charset: str = ""

    @cached_property
    def column_index(self) -> dict[str, int]:
        """Column name → position in ``columns``."""
        return {c.name: i for i, c in enumerate(self.columns)}

    @cached_property
    def column_by_name(self) -> dict[str, ColumnInfo]:
        """Column name → ColumnInfo."""
        return {c.name: c for c in self.columns}

    @cached_property
    def handle_key_columns(self) -> tuple[str, ...]:
        """Names of the HandleKey columns, in column order."""
        return tuple(c.name for c in self.columns if c.flags & ColumnFlag.HANDLE_KEY)

    @cached_property
    def primary_key_columns(self) -> tuple[str, ...]:
        """Names of the PrimaryKey-flagged columns, in column order."""
        return tuple(c.name for c in self.columns if c.flags & ColumnFlag.PRIMARY_KEY)

    def column(self, name: str) -> ColumnInfo | None:
        """The column called ``name``, or None."""
        return self.column_by_name.get(name)

    @property
    def qualified_name(self) -> str:
        """``schema.table``."""
        return f"{self.schema}.{self.table}"


# --------------------------------------------------------------------------- events
class RowChange(msgspec.Struct, frozen=True, kw_only=True):
    """One row change (insert, update or delete) committed at ``commit_ts``."""

    op: Op
    schema: str
    table: str
    commit_ts: int
    #: Post-image (insert, update); None for delete.
    columns: Row | None = None
    #: Pre-image (update, delete); None for insert or when the protocol omits it.
    pre_columns: Row | None = None
    #: Logical table id.
    table_id: int = 0
    #: Physical (partition) table id; equals ``table_id`` for a non-partitioned table.
    physical_table_id: int = 0
    #: The int handle (PK when PK-is-handle, else ``_tidb_rowid``); 0 when unknown/common handle.
    row_id: int = 0
    #: Schema the row was written under (may be partial when a protocol carries little schema).
    table_info: TableInfo | None = None
    #: The row carries only its handle-key columns (large-message handle-key-only, or
    #: delete-only-output-handle-key-columns): a consumer must not treat it as a full image.
    handle_key_only: bool = False
    #: Where the full message was stored (large-message claim-check), if anywhere.
    claim_check_location: str | None = None
    #: Schema version (TiDB UpdateTS) the row was written under, where the protocol carries it
    #: (Simple ``schemaVersion``); lets a consumer match a row decoded before its schema arrived
    #: to the right BOOTSTRAP/DDL. 0 when unknown.
    schema_version: int = 0

    @property
    def kind(self) -> str:
        """``"row"``."""
        return "row"


class DDLEvent(msgspec.Struct, frozen=True, kw_only=True):
    """A DDL statement committed at ``commit_ts``, with the table before and after it."""

    query: str
    ddl_type: int
    commit_ts: int
    schema: str = ""
    table: str = ""
    table_info: TableInfo | None = None
    pre_table_info: TableInfo | None = None
    #: DDL start ts, where a protocol carries it.
    start_ts: int = 0

    @property
    def kind(self) -> str:
        """``"ddl"``."""
        return "ddl"


class Watermark(msgspec.Struct, frozen=True, kw_only=True):
    """Resolved/checkpoint mark: every change with commit_ts <= resolved_ts has been sent."""

    resolved_ts: int

    @property
    def kind(self) -> str:
        """``"watermark"``."""
        return "watermark"


class Bootstrap(msgspec.Struct, frozen=True, kw_only=True):
    """A table's full schema, sent in-band (Simple protocol BOOTSTRAP)."""

    table_info: TableInfo
    #: Simple ``buildTs`` (ms) of the bootstrap message, 0 if unknown.
    build_ts: int = 0

    @property
    def kind(self) -> str:
        """``"bootstrap"``."""
        return "bootstrap"


#: Any event of the model.
Event = Union[RowChange, DDLEvent, Watermark, Bootstrap]


class KafkaRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One Kafka record: where it lives and its raw key and value bytes."""

    topic: str
    partition: int
    #: Offset in the partition; -1 before the record has been written anywhere.
    offset: int = -1
    key: bytes | None = None
    value: bytes | None = None
    #: Kafka record timestamp (ms), 0 if unknown.
    timestamp_ms: int = 0


def iter_images(row: RowChange) -> Iterator[Row]:
    """The row images present on a change, post-image first."""
    if row.columns is not None:
        yield row.columns
    if row.pre_columns is not None:
        yield row.pre_columns
