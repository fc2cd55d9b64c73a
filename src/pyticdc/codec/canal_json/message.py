"""The Canal-JSON wire format: envelope, Java SQL and MySQL type texts, DDL types, schema from a header.

Wire shape (one Kafka message per row, key nil)::

    {"id":0,"database":…,"table":…,"pkNames":[…],"isDdl":false,"type":"INSERT|UPDATE|DELETE",
     "es":commitTs>>18,"ts":<now ms>,"sql":"","sqlType":{…},"mysqlType":{…},"old":…,"data":…[,"_tidb":{…}]}

Every non-null column value is a JSON *string*; ``mysqlType`` tells the decoder how to turn it back
into the model value (§4.5 ``canalJSONFormatColumn``). DDL and watermark messages are struct
marshals (goccy/go-json, i.e. encoding/json escaping) with ``data`` before ``old``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import msgspec
import orjson

from pyticdc.errors import DecodeError, EncodeError
from pyticdc.model import ActionType, ColumnFlag, ColumnInfo, IndexInfo, Row, TableInfo, TypeCode, Value
from pyticdc.mysql import (
    ENUM_SET_TYPES,
    FRACTIONAL_TIME_TYPES,
    INTEGER_TYPES,
    STRING_TYPES,
    parse_column_type,
    type_to_str,
)

__all__ = [
    "ENVELOPE_DECODER",
    "INT64_MAX",
    "INT64_MIN",
    "K_BIGINT",
    "K_F32",
    "K_F64",
    "K_INT",
    "K_LATIN1",
    "K_STR",
    "K_UINT",
    "K_UTF8",
    "MSGSPEC_ERRORS",
    "MYSQL_TYPES_DECODER",
    "NULL",
    "OPTIONS",
    "PK_NAMES_DECODER",
    "PROTOCOL",
    "RECORD_OVERHEAD",
    "SQL_TYPES_DECODER",
    "UINT64_MAX",
    "UINT_TEXT",
    "WATERMARK_TYPE",
    "Envelope",
    "Header",
    "Images",
    "TiDBExtension",
    "canal_ddl_type",
    "column_from_mysql_type",
    "ddl_action_type",
    "decode_error",
    "java_base",
    "java_promotion",
    "java_sql_type",
    "key_only_delete",
    "msgspec_error",
    "mysql_type",
    "read_header",
    "read_images",
    "read_mysql_types",
    "read_pk_names",
    "table_info_from_header",
    "type_desc",
    "unsigned_number",
    "value_kind",
]

T = TypeCode

PROTOCOL: Final = "canal-json"
#: CodecOptions fields Canal-JSON accepts (pkg/sink/codec/common/config.go, canal-json branch).
OPTIONS: Final = frozenset({
    "default_table",  # pyticdc's own: the table of rows whose messages name none (Flink's encoder)
    "max_message_bytes",
    "enable_tidb_extension",
    "only_output_updated_columns",
    "content_compatible",
    "delete_only_output_handle_key_columns",
    "large_message_handle_option",
    "large_message_handle_compression",
    "claim_check_storage_uri",
    "claim_check_raw_value",
})

#: TiCDC ``Message.Length()`` overhead added to the value (key is nil), §1.4.
RECORD_OVERHEAD: Final = 36
WATERMARK_TYPE: Final = "TIDB_WATERMARK"
UINT64_MAX: Final = (1 << 64) - 1
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
UINT_TEXT: Final = re.compile(r"[0-9]+\Z")


def decode_error(reason: str, at: int | str | None = None) -> DecodeError:
    """A Canal-JSON DecodeError at ``at`` (byte offset or JSON path)."""
    return DecodeError(PROTOCOL, reason, at)


# =========================================================================== type tables
# internal.MySQLType2JavaType (§4.4): type code → java.sql.Types for (text charset, binary charset).
_JAVA_TYPES: Final[dict[int, tuple[int, int]]] = {
    T.TINY: (-6, -6), T.SHORT: (5, 5), T.LONG: (4, 4), T.FLOAT: (7, 7), T.DOUBLE: (8, 8), T.NULL: (0, 0),
    T.NEWDECIMAL: (3, 3), T.TIMESTAMP: (93, 93), T.DATETIME: (93, 93), T.LONGLONG: (-5, -5), T.INT24: (4, 4),
    T.DATE: (91, 91), T.NEWDATE: (91, 91), T.TIME: (92, 92), T.YEAR: (12, 12), T.ENUM: (4, 4), T.SET: (-7, -7),
    T.TINY_BLOB: (2005, 2004), T.MEDIUM_BLOB: (2005, 2004), T.LONG_BLOB: (2005, 2004), T.BLOB: (2005, 2004),
    T.VAR_STRING: (12, 2004), T.VARCHAR: (12, 2004), T.STRING: (1, 2004), T.GEOMETRY: (-2, -2), T.BIT: (-7, -7),
    T.JSON: (12, 12), T.TIDB_VECTOR: (12, 12),
}
# getJavaSQLType: unsigned promotion by value, "if a > MaxIntN" (§4.4).
_PROMOTIONS: Final[dict[int, tuple[int, int]]] = {
    T.TINY: (127, 5), T.SHORT: (32767, 4), T.LONG: (2147483647, -5), T.LONGLONG: (9223372036854775807, 3),
}
# Unsigned types whose java type is never promoted (and whose value is not parsed).
_NO_PROMOTION: Final = frozenset({T.YEAR, T.BIT, T.FLOAT, T.DOUBLE, T.NEWDECIMAL})
_BINARY_FLAG: Final = int(ColumnFlag.BINARY)

# mysql.GetDefaultFieldLengthAndDecimal, used by FieldType.CompactStr.
_DEFAULT_FLEN_DECIMAL: Final[dict[int, tuple[int, int]]] = {
    T.BIT: (1, 0), T.TINY: (4, 0), T.SHORT: (6, 0), T.INT24: (9, 0), T.LONG: (11, 0), T.LONGLONG: (20, 0),
    T.DOUBLE: (22, -1), T.NEWDECIMAL: (10, 0), T.TIME: (10, 0), T.DATE: (10, 0), T.TIMESTAMP: (19, 0),
    T.DATETIME: (19, 0), T.YEAR: (4, 0), T.STRING: (1, 0), T.VARCHAR: (5, 0), T.VAR_STRING: (5, 0),
    T.TINY_BLOB: (255, 0), T.BLOB: (65535, 0), T.MEDIUM_BLOB: (16777215, 0), T.LONG_BLOB: (4294967295, 0),
    T.JSON: (4294967295, 0), T.NULL: (0, 0), T.SET: (-1, 0), T.ENUM: (-1, 0), T.FLOAT: (12, -1),
}
# parser/format.OutputFormat: how ENUM/SET elements are escaped inside ('…').
_OUTPUT_FORMAT: Final = {0: "\\0", ord("'"): "''", ord("\n"): "\\n", ord("\r"): "\\r"}
# CompactStr groups: types printed with (flen), and FLOAT/DOUBLE printed with (flen,decimal) if set.
_FLEN_SHOWN: Final = INTEGER_TYPES | {T.BIT, T.VARCHAR, T.STRING, T.VAR_STRING}
_FLOAT_DOUBLE: Final = frozenset({T.FLOAT, T.DOUBLE})


def java_base(column: ColumnInfo) -> int:
    """The java.sql type of a column before unsigned promotion (§4.4)."""
    return _JAVA_TYPES.get(column.type_code, (12, 12))[1 if int(column.flags) & _BINARY_FLAG else 0]


def java_promotion(column: ColumnInfo) -> tuple[int, int] | None:
    """(threshold, promoted type) when the value decides the java type, else None (§4.4)."""
    if not column.is_unsigned or column.type_code in _NO_PROMOTION:
        return None
    return _PROMOTIONS.get(column.type_code, (UINT64_MAX, 0))


def java_sql_type(column: ColumnInfo, value: Value) -> int:
    """``sqlType`` of a column holding ``value`` (§4.4; EncodeError if an unsigned value is not a number)."""
    java = java_base(column)
    promotion = java_promotion(column)
    if value is not None and promotion is not None and unsigned_number(value) > promotion[0]:
        return promotion[1]
    return java


def unsigned_number(value: Value) -> int:
    """The number getJavaSQLType compares: uint64 or a string ParseUint reads; EncodeError otherwise."""
    if type(value) is int:
        return value
    if isinstance(value, str) and len(value) <= 20 and UINT_TEXT.match(value) and int(value) <= UINT64_MAX:
        return int(value)
    raise EncodeError(PROTOCOL, f"unexpected value {value!r} for an unsigned column")


def _compact_str(column: ColumnInfo) -> str:
    # TiDB FieldType.CompactStr (TiDBStrictIntegerDisplayWidth off: integer widths are shown).
    code = column.type_code
    name = type_to_str(code, column.charset)
    default_flen, default_decimal = _DEFAULT_FLEN_DECIMAL.get(code, (-1, -1))
    flen, decimal = column.flen, column.decimal
    decimal_not_default = decimal not in (default_decimal, 0, -1)
    shown_flen = default_flen if flen == -1 else flen
    shown_decimal = default_decimal if decimal == -1 else decimal
    if code in ENUM_SET_TYPES:
        return name + "('" + "','".join(e.translate(_OUTPUT_FORMAT) for e in column.elems or ()) + "')"
    if code in FRACTIONAL_TIME_TYPES:
        return f"{name}({shown_decimal})" if decimal_not_default else name
    if code in _FLOAT_DOUBLE:
        return f"{name}({shown_flen},{shown_decimal})" if decimal_not_default else name
    if code == T.NEWDECIMAL:
        return f"{name}({shown_flen},{shown_decimal})"
    if code in _FLEN_SHOWN:
        return f"{name}({shown_flen})"
    if code == T.YEAR:
        return f"{name}({flen if flen != -1 else default_flen})"
    if code == T.TIDB_VECTOR:
        return f"{name}({flen})" if flen != -1 else name
    if code == T.NULL:
        return name + "(0)"
    return name


def type_desc(column: ColumnInfo) -> str:
    """TiDB ``ColumnInfo.GetTypeDesc()`` (``int(11)``, ``decimal(10,0) unsigned zerofill``), §4.3."""
    desc = _compact_str(column)
    if column.is_unsigned and column.type_code not in (T.BIT, T.YEAR):
        desc += " unsigned"
    if column.zerofill and column.type_code != T.YEAR:
        desc += " zerofill"
    return desc


def mysql_type(column: ColumnInfo, content_compatible: bool = False) -> str:
    """``mysqlType`` of a column (utils.GetMySQLType, §4.3); full type text when content-compatible."""
    if content_compatible:
        return column.type_desc if column.type_desc is not None else type_desc(column)
    name = type_to_str(column.type_code, column.charset)
    if column.is_unsigned and name not in ("bit", "year"):
        name += " unsigned"
    if column.zerofill and not name.startswith("year"):  # withZerofill4MySQLType: only year is exempt
        name += " zerofill"
    return name


# =========================================================================== DDL types
# convertDdlEventType (§4.5): TiDB ActionType → Canal event type.
_DDL_CANAL_TYPES: Final[dict[int, str]] = {
    3: "CREATE", 14: "RENAME", 47: "RENAME", 7: "CINDEX", 9: "CINDEX", 32: "CINDEX",
    8: "DINDEX", 10: "DINDEX", 33: "DINDEX", 4: "ERASE", 11: "TRUNCATE",
    # AddColumns/DropColumns (37/38, deprecated) and ExchangeTablePartition (42) are not listed: QUERY.
    **{code: "ALTER" for code in (5, 6, 12, 13, 15, 17, 18, 19, 20, 22, 23, 41, 61, 64, 71, 72)},
}


def canal_ddl_type(ddl_type: int) -> str:
    """Canal event type of a TiDB DDL ActionType (convertDdlEventType; QUERY for the rest)."""
    return _DDL_CANAL_TYPES.get(ddl_type, "QUERY")


# Canal type → ActionType when the type names one action. ALTER and QUERY look at the query.
_CANAL_ACTIONS: Final = {
    "CREATE": ActionType.CREATE_TABLE, "RENAME": ActionType.RENAME_TABLE, "CINDEX": ActionType.ADD_INDEX,
    "DINDEX": ActionType.DROP_INDEX, "ERASE": ActionType.DROP_TABLE, "TRUNCATE": ActionType.TRUNCATE_TABLE,
}
# ALTER sub-kinds, first match wins (the Canal ALTER bucket of convertDdlEventType).
_ALTER_ACTIONS: Final = tuple((re.compile(p), a) for p, a in (
    (r"\badd\s+partition\b", ActionType.ADD_TABLE_PARTITION),
    (r"\bdrop\s+partition\b", ActionType.DROP_TABLE_PARTITION),
    (r"\btruncate\s+partition\b", ActionType.TRUNCATE_TABLE_PARTITION),
    (r"\breorganize\s+partition\b", ActionType.REORGANIZE_PARTITION),
    (r"\bremove\s+partitioning\b", ActionType.REMOVE_PARTITIONING),
    (r"\bpartition\s+by\b", ActionType.ALTER_TABLE_PARTITIONING),
    (r"\brename\s+(index|key)\b", ActionType.RENAME_INDEX),
    (r"\balter\s+index\b", ActionType.ALTER_INDEX_VISIBILITY),
    (r"\bauto_increment\b", ActionType.REBASE_AUTO_ID),
    (r"\bcomment\b\s*=", ActionType.MODIFY_TABLE_COMMENT),
    (r"\b(charset|character\s+set|collate)\b", ActionType.MODIFY_TABLE_CHARSET_AND_COLLATE),
    (r"\b(set|drop)\s+default\b", ActionType.SET_DEFAULT_VALUE),
    (r"\b(modify|change)\b", ActionType.MODIFY_COLUMN),
    (r"\bdrop\b", ActionType.DROP_COLUMN),
    (r"\badd\b", ActionType.ADD_COLUMN),
))


# SQL comments before the statement: Alibaba Canal passes the statement text through, and Aliyun
# DMS prefixes "/* Query from DMS-WEBSQL-… */" (Paimon's canal fixtures).
_LEADING_COMMENTS: Final = re.compile(r"\A(?:\s|/\*(?!!).*?\*/|(?:--|#)[^\n]*(?:\n|\Z))*", re.S)


def ddl_action_type(canal_type: str, query: str) -> int:
    """A plausible TiDB ActionType for a Canal DDL type and its query (the wire has no ActionType).

    CREATE/RENAME/CINDEX/DINDEX/ERASE/TRUNCATE name one action (CreateTable, RenameTable, AddIndex,
    DropIndex, DropTable, TruncateTable); ALTER picks the sub-kind its query spells (add/drop/modify
    column, partitions, …; ModifyColumn if none matches); QUERY recognises create/drop schema like
    TiCDC's getDDLActionType and is ActionNone otherwise.
    """
    text = " ".join(_LEADING_COMMENTS.sub("", query).lower().split())
    if canal_type == "CREATE" and text.startswith(("create database", "create schema")):
        return int(ActionType.CREATE_SCHEMA)  # the Canal type alone would say CreateTable
    if canal_type == "ERASE" and text.startswith(("drop database", "drop schema")):
        return int(ActionType.DROP_SCHEMA)
    action = _CANAL_ACTIONS.get(canal_type)
    if action is not None:
        return int(action)
    if canal_type == "ALTER":
        for pattern, alter_action in _ALTER_ACTIONS:
            if pattern.search(text):
                return int(alter_action)
        return int(ActionType.MODIFY_COLUMN)
    if text.startswith(("create schema", "create database")):
        return int(ActionType.CREATE_SCHEMA)
    if text.startswith(("drop schema", "drop database")):
        return int(ActionType.DROP_SCHEMA)
    return int(ActionType.NONE)


# =========================================================================== value kinds
#: How canalJSONFormatColumn turns a wire string back into a model value (§4.5 end).
K_STR, K_UTF8, K_LATIN1, K_INT, K_UINT, K_BIGINT, K_F32, K_F64 = range(8)
_KIND_BY_CODE: Final[dict[int, int]] = {
    T.BIT: K_UINT, T.SET: K_UINT, T.LONGLONG: K_BIGINT, T.FLOAT: K_F32, T.DOUBLE: K_F64,
    **{code: K_INT for code in INTEGER_TYPES - {T.LONGLONG} | {T.YEAR, T.ENUM}},
    **{code: K_UTF8 for code in STRING_TYPES},
}


@functools.lru_cache(maxsize=4096)  # the reference and tolerant paths read every message's header
def value_kind(mysql_type_text: str) -> int:
    """The value kind (``K_*``) of a column whose ``mysqlType`` is ``mysql_type_text``."""
    parsed = parse_column_type(mysql_type_text)
    if parsed.binary:
        return K_LATIN1
    return _KIND_BY_CODE.get(parsed.type_code, K_STR)


# =========================================================================== schema from the header
_TEXT_CODES: Final = STRING_TYPES | ENUM_SET_TYPES
# YEAR and BIT carry the Unsigned flag in TiDB, and YEAR also ZeroFill (reference §1.2).
_ALWAYS_UNSIGNED: Final = frozenset({T.YEAR, T.BIT})


def column_from_mysql_type(name: str, mysql_type_text: str, primary_key: bool = False,
                           content_compatible: bool = False) -> ColumnInfo:
    """A ColumnInfo recovered from a ``mysqlType`` string (as the decoder builds its table_info)."""
    parsed = parse_column_type(mysql_type_text)
    code = parsed.type_code
    charset = "binary" if parsed.binary or code not in _TEXT_CODES else "utf8mb4"
    unsigned = parsed.unsigned or code in _ALWAYS_UNSIGNED
    zerofill = parsed.zerofill or code == T.YEAR
    flags = 0
    if charset == "binary":
        flags |= ColumnFlag.BINARY
    if unsigned:
        flags |= ColumnFlag.UNSIGNED
    if primary_key:
        flags |= ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY
    return ColumnInfo(
        name=name, type_code=code, flags=int(flags), charset=charset,
        collation="binary" if charset == "binary" else "utf8mb4_bin", flen=parsed.flen, decimal=parsed.decimal,
        elems=parsed.elems, unsigned=unsigned, zerofill=zerofill, nullable=not primary_key,
        # A mysqlType with parameters ("int(11)", "enum('a')") is a full GetTypeDesc text: keep it.
        type_desc=mysql_type_text if content_compatible or "(" in mysql_type_text else None,
    )


def table_info_from_header(schema: str, table: str, order: list[str], mysql_types: Mapping[str, str],
                           pk_names: list[str], content_compatible: bool) -> TableInfo:
    """The (partial) TableInfo a message's header describes: columns in ``order``, PK from pkNames."""
    pk_set = set(pk_names)
    columns = tuple(column_from_mysql_type(n, mysql_types[n], n in pk_set, content_compatible) for n in order)
    present = [n for n in pk_names if n in mysql_types]
    indexes = (IndexInfo(name="primary", columns=tuple(present), primary=True, unique=True),) if present else ()
    by_name = {c.name: c for c in columns}
    pk_is_handle = len(present) == 1 and by_name[present[0]].type_code in INTEGER_TYPES
    return TableInfo(schema=schema, table=table, pk_is_handle=pk_is_handle, columns=columns, indexes=indexes)


def key_only_delete(row: Mapping[str, Value], pk_names: frozenset[str]) -> bool:
    """A DELETE image holding primary-key columns only: what delete-only-output-handle-key-columns sends.

    The wire does not mark such messages, so the decoder recognises them by their columns (a table
    whose every column is in its primary key is thereby flagged too: its full image is its key).
    """
    return bool(row) and bool(pk_names) and row.keys() <= pk_names


# =========================================================================== envelope
# gc=False (here and on Envelope): they hold scalars and Raw only, never a cycle, so the cycle
# collector need not track the one or two made per message.
class TiDBExtension(msgspec.Struct, gc=False):
    """``_tidb`` (wire field names)."""

    commitTs: int = 0
    watermarkTs: int = 0
    onlyHandleKey: bool = False
    claimCheckLocation: str = ""
    # A Nov-2021 development build spelled the keys "commit-ts"/"watermark-ts" (real/README §5);
    # released TiCDC never did, so these are read only when the released key is absent.
    commit_ts_dev: int = msgspec.field(default=0, name="commit-ts")
    watermark_ts_dev: int = msgspec.field(default=0, name="watermark-ts")


NULL: Final = msgspec.Raw(b"null")


class Envelope(msgspec.Struct, gc=False):
    """The message with the header and images kept raw until the header picks a typed decoder."""

    # TiCDC always writes 0; Alibaba Canal writes its batch id (> 0); Flink's encoder omits it.
    id: int | None = None
    database: str | None = None
    table: str | None = None
    pkNames: msgspec.Raw = NULL
    isDdl: bool | None = None
    type: str | None = None
    es: int | None = None
    sql: str | None = None
    sqlType: msgspec.Raw = NULL
    mysqlType: msgspec.Raw = NULL
    data: msgspec.Raw = NULL
    old: msgspec.Raw = NULL
    tidb: TiDBExtension | None = msgspec.field(default=None, name="_tidb")


ENVELOPE_DECODER: Final = msgspec.json.Decoder(Envelope)
# msgspec reports invalid UTF-8 inside a JSON string as UnicodeDecodeError, and JSON nested deeper
# than its limit (about 1000 levels, even inside a Raw field it only skips) as RecursionError.
MSGSPEC_ERRORS: Final = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError)
MYSQL_TYPES_DECODER: Final = msgspec.json.Decoder(dict[str, str] | None)
SQL_TYPES_DECODER: Final = msgspec.json.Decoder(dict[str, int] | None)
PK_NAMES_DECODER: Final = msgspec.json.Decoder(list[str] | None)
_AT_PATH: Final = re.compile(r" - at `(\$[^`]*)`$")
_AT_BYTE: Final = re.compile(r"\(byte (\d+)\)")


def msgspec_error(exc: Exception, prefix: str = "$", data: bytes | None = None) -> DecodeError:
    """A DecodeError from a msgspec error, with its JSON path (under ``prefix``) or byte offset."""
    if isinstance(exc, RecursionError):
        return decode_error("JSON nested too deeply", prefix)
    if isinstance(exc, UnicodeDecodeError):
        invalid_at: int | str = prefix
        if data is not None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as found:
                invalid_at = found.start
        return decode_error("invalid UTF-8 in a JSON string", invalid_at)
    message = str(exc)
    at: int | str | None = None
    path = _AT_PATH.search(message)
    if path:
        at = prefix + path.group(1)[1:]
        message = message[: path.start()]
    else:
        offset = _AT_BYTE.search(message)
        if offset:
            at = int(offset.group(1))
    return decode_error(message, at)


class Header(NamedTuple):
    """What a row message's header says: the table, its column order, value kinds and key."""

    table_info: TableInfo
    names: list[str]
    kinds: dict[str, int]


def read_mysql_types(envelope: Envelope) -> dict[str, str]:
    """``mysqlType`` as a dict (empty when null); DecodeError under ``$.mysqlType``."""
    try:
        return MYSQL_TYPES_DECODER.decode(envelope.mysqlType) or {}
    except MSGSPEC_ERRORS as exc:
        raise msgspec_error(exc, "$.mysqlType") from None


def read_pk_names(envelope: Envelope) -> list[str]:
    """``pkNames`` as a list (empty when null); DecodeError under ``$.pkNames``."""
    try:
        return PK_NAMES_DECODER.decode(envelope.pkNames) or []
    except MSGSPEC_ERRORS as exc:
        raise msgspec_error(exc, "$.pkNames") from None


def read_sql_types(envelope: Envelope) -> dict[str, int]:
    """``sqlType`` as a dict (empty when null); DecodeError under ``$.sqlType``."""
    try:
        return SQL_TYPES_DECODER.decode(envelope.sqlType) or {}
    except MSGSPEC_ERRORS as exc:
        raise msgspec_error(exc, "$.sqlType") from None


def read_header(envelope: Envelope, mysql_types: Mapping[str, str], pk_names: list[str],
                content_compatible: bool, sql_types: Mapping[str, int] | None = None) -> Header:
    """The header of a row message whose ``mysqlType``/``pkNames`` (and maybe ``sqlType``) are already read."""
    if sql_types is None:
        sql_types = read_sql_types(envelope)
    # Column order: sqlType follows table order (mysqlType is a Go map, random order).
    order = [n for n in sql_types if n in mysql_types]
    seen = set(order)
    order += [n for n in mysql_types if n not in seen]
    table_info = table_info_from_header(envelope.database or "", envelope.table or "", order, mysql_types,
                                        pk_names, content_compatible)
    return Header(table_info, order, {n: value_kind(mysql_types[n]) for n in order})


#: The decoded images of a row message and the table they belong to: (table_info, primary-key
#: names, ``data`` rows, ``old`` images). A plain tuple: the fast path builds one per message.
Images = tuple[TableInfo, frozenset[str], list[Row] | None, list[Row] | list[dict[str, Value]] | None]


def read_images(raw: msgspec.Raw, path: str) -> list[dict[str, Any]] | None:
    """``data``/``old`` as parsed JSON: null or an array of objects (else DecodeError at ``path``)."""
    try:
        images = orjson.loads(bytes(raw))
    except orjson.JSONDecodeError as exc:
        raise decode_error(f"malformed JSON: {exc}", path) from None
    if images is None:
        return None
    if not isinstance(images, list):
        raise decode_error("expected an array of row objects", path)
    for i, image in enumerate(images):
        if not isinstance(image, dict):
            raise decode_error("expected a row object", f"{path}[{i}]")
    return images
