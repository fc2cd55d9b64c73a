"""The Simple message model: protocol constants, message types and the parsed message (``message.go``).

Every message is one ``message`` struct: ``version``, ``type`` (WATERMARK, BOOTSTRAP, a DDL type
or a DML type), timestamps, and per type a table schema, a DDL statement or row images.
``Wire`` is that struct as both encodings' readers fill it; the Avro framing lives in ``avro``.
"""

from __future__ import annotations

from typing import Any, Final

from pyticdc.model import ActionType, Op

__all__ = [
    "DDL_KINDS",
    "DDL_TYPE_ACTIONS",
    "DML_TYPE_NAMES",
    "INT64_MAX",
    "MASK64",
    "OPS",
    "OPTIONS",
    "PROTOCOL",
    "RECORD_OVERHEAD",
    "Wire",
    "ddl_message_type",
    "location_name",
    "u64_as_i64",
]

#: TiCDC's protocol name.
PROTOCOL: Final = "simple"
#: Options TiCDC accepts for the Simple protocol.
OPTIONS: Final = frozenset({
    "max_message_bytes", "large_message_handle_option", "large_message_handle_compression",
    "claim_check_storage_uri", "claim_check_raw_value", "encoding_format", "time_zone",
    "send_bootstrap_interval_in_sec", "send_bootstrap_in_msg_count", "send_bootstrap_to_all_partition",
    "delete_only_output_handle_key_columns",
})

MASK64: Final = (1 << 64) - 1
INT64_MAX: Final = (1 << 63) - 1
#: ``common.Message.Length()`` counts key + value + MaxRecordOverhead against max-message-bytes.
RECORD_OVERHEAD: Final = 36
#: The ``type`` of a DML message per row operation, and back.
DML_TYPE_NAMES: Final = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}
OPS: Final = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}

A = ActionType
# getDDLType (message.go): the TiDB actions a DDL message calls ALTER.
_ALTER_ACTIONS: Final = frozenset({
    A.ADD_COLUMN, A.DROP_COLUMN, A.MODIFY_COLUMN, A.REBASE_AUTO_ID, A.SET_DEFAULT_VALUE, A.MODIFY_TABLE_COMMENT,
    A.RENAME_INDEX, A.ADD_TABLE_PARTITION, A.DROP_TABLE_PARTITION, A.MODIFY_TABLE_CHARSET_AND_COLLATE,
    A.TRUNCATE_TABLE_PARTITION, A.ALTER_INDEX_VISIBILITY, A.MULTI_SCHEMA_CHANGE, A.REORGANIZE_PARTITION,
    A.ALTER_TABLE_PARTITIONING, A.REMOVE_PARTITIONING,
})
#: Simple DDL type → the ActionType a decoded DDLEvent reports (the wire keeps only the type).
DDL_TYPE_ACTIONS: Final[dict[str, int]] = {name: int(action) for name, action in {
    "CREATE": A.CREATE_TABLE, "ALTER": A.ADD_COLUMN, "ERASE": A.DROP_TABLE, "RENAME": A.RENAME_TABLE,
    "TRUNCATE": A.TRUNCATE_TABLE, "CINDEX": A.ADD_INDEX, "DINDEX": A.DROP_INDEX, "QUERY": A.NONE,
}.items()}
#: The ``type`` values of DDL messages.
DDL_KINDS: Final = frozenset(DDL_TYPE_ACTIONS)


def ddl_message_type(ddl_type: int) -> str:
    """``getDDLType``: the Simple ``type`` of a DDL with TiDB ActionType ``ddl_type``."""
    if ddl_type == A.CREATE_TABLE:
        return "CREATE"
    if ddl_type in (A.RENAME_TABLE, A.RENAME_TABLES):
        return "RENAME"
    if ddl_type in (A.ADD_INDEX, A.ADD_FOREIGN_KEY, A.ADD_PRIMARY_KEY):
        return "CINDEX"
    if ddl_type in (A.DROP_INDEX, A.DROP_FOREIGN_KEY, A.DROP_PRIMARY_KEY):
        return "DINDEX"
    if ddl_type == A.DROP_TABLE:
        return "ERASE"
    if ddl_type == A.TRUNCATE_TABLE:
        return "TRUNCATE"
    if ddl_type in _ALTER_ACTIONS:
        return "ALTER"
    return "QUERY"


def u64_as_i64(number: int) -> int:
    """A uint64 as the int64 with the same bits (how Avro ``long`` carries it)."""
    return number - (1 << 64) if number > INT64_MAX else number


def location_name(time_zone: str) -> str:
    """Go ``time.Location.String()`` of the ``time-zone`` option (the TIMESTAMP ``location``)."""
    # LoadLocation("") is UTC; the server's own zone prints "Local".
    if time_zone in ("", "UTC"):
        return "UTC"
    return "Local" if time_zone in ("Local", "System") else time_zone


class Wire:
    """One parsed message, encoding-neutral (``message`` struct of message.go)."""

    __slots__ = ("avro", "build_ts", "checksum", "claim_check_location", "commit_ts", "data", "database",
                 "handle_key_only", "kind", "old", "pre_table_schema", "schema_version", "sql", "table",
                 "table_id", "table_schema", "type", "version")

    def __init__(self, kind: str, avro: bool) -> None:
        self.kind = kind  # WATERMARK | BOOTSTRAP | DDL | DML
        self.avro = avro
        self.type = kind
        self.version = 0
        self.database = ""
        self.table = ""
        self.table_id = 0
        self.sql = ""
        self.commit_ts = 0
        self.build_ts = 0
        self.schema_version = 0
        self.claim_check_location = ""
        self.handle_key_only = False
        self.checksum: dict[str, Any] | None = None
        self.data: dict[str, Any] | None = None
        self.old: dict[str, Any] | None = None
        self.table_schema: dict[str, Any] | None = None
        self.pre_table_schema: dict[str, Any] | None = None
