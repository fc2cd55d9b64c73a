"""Debezium schema-change (DDL) messages: ``tableChanges`` column metadata and the DDL kinds.

Implements TiCDC's ``EncodeDDLEvent`` (ticdc-reference.md §5.3) including the quirks of its
``helper.go`` (``getLen``, ``getExpressionAndName``, ``getCharset`` and the ``parseColumns``
re-read of the DDL text), and the reverse mapping a decoder can make of it.
"""

from __future__ import annotations

import math
from typing import Any, Final

import msgspec

from pyticdc.model import ActionType, ColumnFlag, ColumnInfo, IndexInfo, TableInfo, TypeCode
from pyticdc.mysql.sql import Literal, statement_column_defs, tokenize, top_level_split
from pyticdc.mysql.types import (
    BLOB_TYPES,
    CHAR_TYPES,
    DEFAULT_FLEN_DECIMAL,
    ENUM_SET_TYPES,
    FLOAT_TYPES,
    FRACTIONAL_TIME_TYPES,
    parse_type_name,
    type_to_str,
)

__all__ = [
    "CHANGE_TYPES",
    "classify_ddl",
    "column_from_metadata",
    "column_metadata",
    "ddl_table_columns",
    "table_from_change",
]

A = ActionType
T = TypeCode
#: Debezium ``tableChanges.type`` per TiDB ActionType; other actions are skipped (ErrDDLUnsupportType).
CHANGE_TYPES: Final[dict[int, str]] = {
    **dict.fromkeys((A.CREATE_SCHEMA, A.CREATE_TABLE, A.CREATE_TABLES, A.CREATE_VIEW), "CREATE"),
    **dict.fromkeys((
        A.ADD_COLUMN, A.MODIFY_COLUMN, A.DROP_COLUMN, A.MULTI_SCHEMA_CHANGE, A.ADD_TABLE_PARTITION,
        A.REMOVE_PARTITIONING, A.REORGANIZE_PARTITION, A.EXCHANGE_TABLE_PARTITION, A.ALTER_TABLE_PARTITIONING,
        A.TRUNCATE_TABLE_PARTITION, A.DROP_TABLE_PARTITION, A.REBASE_AUTO_ID, A.SET_DEFAULT_VALUE,
        A.MODIFY_TABLE_COMMENT, A.MODIFY_TABLE_CHARSET_AND_COLLATE, A.MODIFY_SCHEMA_CHARSET_AND_COLLATE,
        A.ADD_INDEX, A.ALTER_INDEX_VISIBILITY, A.RENAME_INDEX, A.RENAME_TABLE, A.RENAME_TABLES, A.RECOVER_TABLE,
        A.ADD_PRIMARY_KEY, A.DROP_PRIMARY_KEY, A.ALTER_TTL_INFO, A.ALTER_TTL_REMOVE,
    ), "ALTER"),
    **dict.fromkeys((A.DROP_SCHEMA, A.DROP_TABLE, A.DROP_INDEX, A.DROP_VIEW, A.TRUNCATE_TABLE), "DROP"),
}


# --------------------------------------------------------------------------- column metadata (encode)
#: java.sql.Types code per type (the string and blob types depend on the charset: ``jdbc_type``).
_JDBC: Final[dict[int, int]] = {
    T.TINY: 5, T.SHORT: 5, T.LONG: 4, T.FLOAT: 6, T.DOUBLE: 8, T.NULL: 0, T.NEWDECIMAL: 3, T.TIMESTAMP: 2014,
    T.DATETIME: 93, T.LONGLONG: -5, T.INT24: 4, T.DATE: 91, T.NEWDATE: 91, T.TIME: 92, T.YEAR: 4, T.ENUM: 1,
    T.SET: 1, T.GEOMETRY: 1111, T.BIT: -7, T.JSON: 1111,
}


def jdbc_type(column: ColumnInfo) -> int:
    """TiCDC ``MySQLType2JdbcType`` (java.sql.Types code)."""
    code = column.type_code
    binary = column.is_binary
    if code in BLOB_TYPES:
        return 2004 if binary else 12
    if code in (T.VAR_STRING, T.VARCHAR):
        return -3 if binary else 12
    if code == T.STRING:
        return -2 if binary else -15
    return _JDBC.get(code, 12)


def _suffix(column: ColumnInfo) -> str:
    """TiCDC ``getSuffix`` for the types that reach it."""
    code = column.type_code
    flen, decimal = column.flen, column.decimal
    default_flen, default_decimal = DEFAULT_FLEN_DECIMAL.get(code, (-1, -1))
    display_flen = default_flen if flen == -1 else flen
    display_decimal = default_decimal if decimal == -1 else decimal
    if code == T.DOUBLE:
        if decimal not in (default_decimal, 0, -1):
            return f"({display_flen},{display_decimal})"
    elif code == T.VAR_STRING:
        if not column.is_binary and display_flen != 1:
            return f"({display_flen})"
    elif code == T.TIDB_VECTOR:
        if flen != -1:
            return f"({flen})"
    elif code == T.NULL:
        return "(0)"
    return ""


def type_expression_and_name(column: ColumnInfo) -> tuple[str, str]:
    """TiCDC ``getExpressionAndName``: (typeExpression, typeName)."""
    prefix = type_to_str(column.type_code, column.charset).upper()
    if column.type_code in (T.YEAR, T.BIT, T.VARCHAR, T.STRING, T.NEWDECIMAL):
        return prefix, prefix
    suffix = " UNSIGNED ZEROFILL" if column.zerofill else (" UNSIGNED" if column.is_unsigned else "")
    return prefix + _suffix(column) + suffix, prefix + suffix


def _charset_name(column: ColumnInfo) -> str:
    if column.charset == "binary":
        return ""
    code = column.type_code
    if code in (T.TIMESTAMP, T.TIME, T.NEWDECIMAL, T.STRING, T.VARCHAR) or code in BLOB_TYPES or code in ENUM_SET_TYPES:
        return column.charset
    return ""


def _length(column: ColumnInfo) -> int:
    """TiCDC ``getLen`` (-1 = null)."""
    code = column.type_code
    flen = column.flen
    default_flen = DEFAULT_FLEN_DECIMAL.get(code, (-1, -1))[0]
    if code in FRACTIONAL_TIME_TYPES:
        return column.decimal
    if code in CHAR_TYPES or code in FLOAT_TYPES or code in (T.BIT, T.TIDB_VECTOR, T.LONGLONG):
        return flen if flen != default_flen else -1
    if code in (T.TINY, T.SHORT, T.INT24, T.LONG):
        if column.is_unsigned:
            default_flen -= 1
        if code == T.TINY and column.zerofill:
            default_flen += 1
        return flen if flen != default_flen else -1
    if code in (T.YEAR, T.NEWDECIMAL):
        return flen
    if code == T.SET:
        return 2 * len(column.elems or ()) - 1
    if code == T.ENUM:
        return 1
    return -1


def _parse_bit_text(text: str, width: int) -> str:
    """TiCDC ``parseBit``: the default's bytes as a binary digit string."""
    data = text.encode("latin-1") if all(ord(c) < 256 for c in text) else text.encode("utf-8", "surrogateescape")
    if not data:
        return ""
    first = format(data[0], "b")
    pad = width % 8 if width >= 0 else -(-width % 8)
    out = first.zfill(pad) if pad > 0 else first
    return out + "".join(format(b, "08b") for b in data[1:])


def _default_expression(column: ColumnInfo) -> str | None:
    default = column.default
    if default is None or default == "<nil>":
        return None
    if default.upper() == "CURRENT_TIMESTAMP":
        return "1970-01-01 00:00:00"  # Debezium's rendering of CURRENT_TIMESTAMP defaults
    if column.type_code == T.BIT:
        return _parse_bit_text(default, column.flen)
    return default


def column_metadata(column: ColumnInfo, position: int) -> list[tuple[str, Any]]:
    """One ``tableChanges.table.columns`` entry as ordered (key, JSON value) pairs."""
    expression, name = type_expression_and_name(column)
    charset = _charset_name(column)
    length = _length(column)
    scale = float(column.decimal) if column.type_code in (T.NEWDECIMAL, T.FLOAT, T.DOUBLE) else -1.0
    elems = column.elems or ()
    # autoIncremented/generated need TiDB's AutoIncrement / OnUpdateNow flags, which the model does not carry.
    return [
        ("name", column.name),
        ("jdbcType", jdbc_type(column)),
        ("nativeType", None),
        ("comment", column.comment or None),
        ("defaultValueExpression", _default_expression(column)),
        ("enumValues", [f"'{e}'" for e in elems] if elems else None),
        ("typeName", name),
        ("typeExpression", expression),
        ("charsetName", charset or None),
        ("length", length if length != -1 else None),
        ("scale", scale if scale != -1 else None),
        ("position", position),
        ("optional", column.nullable),
        ("autoIncremented", False),
        ("generated", False),
    ]


def _literal_default(literal: Literal | None) -> str | None:
    """TiCDC ``extractValue``: the text a DEFAULT literal leaves in the column (None = unchanged)."""
    if literal is None or literal.kind == "expr":
        return None
    if literal.kind == "null":
        return "<nil>"
    if literal.kind == "float":
        return repr(float(literal.text))
    return literal.text


_TIME_TYPE_NAMES: Final = frozenset({"DATETIME", "TIME", "TIMESTAMP"})


def ddl_table_columns(query: str, columns: tuple[ColumnInfo, ...]) -> tuple[ColumnInfo, ...]:
    """TiCDC ``parseColumns``: columns as re-read from the DDL text.

    Every column the statement defines loses its comment; DATETIME/TIME/TIMESTAMP take the fsp
    written in the statement (-1 when none is written) and YEAR its written width, and those take
    the DEFAULT written there.
    """
    defs = statement_column_defs(query)
    if not defs:
        return columns
    by_name = {d.name: d for d in defs}
    out = []
    for column in columns:
        d = by_name.get(column.name)
        if d is None:
            out.append(column)
            continue
        changes: dict[str, Any] = {"comment": ""}
        if d.type_name in _TIME_TYPE_NAMES or d.type_name == "YEAR":
            width = int(d.args[0]) if d.args and d.args[0].isdigit() else -1
            changes["flen" if d.type_name == "YEAR" else "decimal"] = width
            default = _literal_default(d.default) if d.has_default else None
            if default is not None:
                changes["default"] = default
        out.append(msgspec.structs.replace(column, **changes))
    return tuple(out)


def primary_key_names(table: TableInfo) -> list[str]:
    """TiCDC ``TableInfo.GetPrimaryKeyColumnNames``."""
    flagged = [c.name for c in table.columns if c.flags & ColumnFlag.PRIMARY_KEY]
    if table.pk_is_handle:
        return flagged[:1]
    for index in table.indexes:
        if index.primary:
            return list(index.columns)
    return flagged


# --------------------------------------------------------------------------- metadata → model (decode)
def column_from_metadata(meta: dict[str, Any], primary: set[str]) -> ColumnInfo | None:
    """A ColumnInfo from one decoded ``tableChanges`` column object (None if it is not one)."""
    name = meta.get("name")
    type_name = meta.get("typeName")
    if not isinstance(name, str) or not isinstance(type_name, str):
        return None
    parsed = parse_type_name(type_name)
    code, binary, unsigned, zerofill = parsed if parsed is not None else (int(T.VARCHAR), False, False, False)
    charset_name = meta.get("charsetName")
    charset = charset_name if isinstance(charset_name, str) and charset_name else (
        "binary" if binary else "utf8mb4")
    length = meta.get("length")
    scale = meta.get("scale")
    length_i = length if isinstance(length, int) and not isinstance(length, bool) else -1
    # TiCDC writes scale as a float (a Go *float64); NaN or ±Inf (1e400 parses as Inf) has no integer value.
    scale_i = int(scale) if (isinstance(scale, int) and not isinstance(scale, bool)) or (
        isinstance(scale, float) and math.isfinite(scale)) else -1
    flen, decimal = length_i, -1
    if code in FRACTIONAL_TIME_TYPES:
        flen, decimal = -1, length_i
    elif code in ENUM_SET_TYPES:
        flen = -1
    elif code in (T.NEWDECIMAL, T.FLOAT, T.DOUBLE):
        decimal = scale_i
    enum_values = meta.get("enumValues")
    elems = None
    if isinstance(enum_values, list) and all(isinstance(e, str) for e in enum_values):
        elems = tuple(e[1:-1] if len(e) >= 2 and e[0] == e[-1] == "'" else e for e in enum_values)
    optional = meta.get("optional")
    nullable = optional if isinstance(optional, bool) else True
    default = meta.get("defaultValueExpression")
    comment = meta.get("comment")
    flags = 0
    if charset == "binary":
        flags |= ColumnFlag.BINARY
    if nullable:
        flags |= ColumnFlag.NULLABLE
    if unsigned:
        flags |= ColumnFlag.UNSIGNED
    if name in primary:
        flags |= ColumnFlag.PRIMARY_KEY
    return ColumnInfo(
        name=name, type_code=code, flags=flags, charset=charset,
        collation="binary" if charset == "binary" else f"{charset}_bin", flen=flen, decimal=decimal,
        elems=elems, unsigned=unsigned, zerofill=zerofill, nullable=nullable,
        default=default if isinstance(default, str) else None,
        comment=comment if isinstance(comment, str) else "",
    )


def table_from_change(table: dict[str, Any], schema: str, name: str) -> TableInfo:
    """A TableInfo from a decoded ``tableChanges[].table`` object."""
    pk = table.get("primaryKeyColumnNames")
    primary = [p for p in pk if isinstance(p, str)] if isinstance(pk, list) else []
    raw_columns = table.get("columns")
    columns = []
    if isinstance(raw_columns, list):
        for meta in raw_columns:
            if isinstance(meta, dict):
                column = column_from_metadata(meta, set(primary))
                if column is not None:
                    columns.append(column)
    charset = table.get("defaultCharsetName")
    comment = table.get("comment")
    return TableInfo(
        schema=schema, table=name, columns=tuple(columns),
        indexes=(IndexInfo(name="primary", columns=tuple(primary), primary=True, unique=True),) if primary else (),
        comment=comment if isinstance(comment, str) else None,
        charset=charset if isinstance(charset, str) else "",
    )


# --------------------------------------------------------------------------- DDL kinds
def _alter_table_kind(specs: list[list[str]]) -> int | None:
    if len(specs) != 1:
        return A.MULTI_SCHEMA_CHANGE if specs else None
    words = specs[0]
    if not words:
        return None
    first = words[0]
    second = words[1] if len(words) > 1 else ""
    if first == "ADD":
        if second in ("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL"):
            return A.ADD_INDEX
        if second == "PRIMARY" or (second == "CONSTRAINT" and "PRIMARY" in words):
            return A.ADD_PRIMARY_KEY
        if second == "PARTITION":
            return A.ADD_TABLE_PARTITION
        if second == "FOREIGN" or (second == "CONSTRAINT" and "FOREIGN" in words):
            return A.ADD_FOREIGN_KEY
        if second == "CONSTRAINT" and ("UNIQUE" in words or "INDEX" in words or "KEY" in words):
            return A.ADD_INDEX
        return A.ADD_COLUMN
    if first == "DROP":
        if second in ("INDEX", "KEY"):
            return A.DROP_INDEX
        if second == "PRIMARY":
            return A.DROP_PRIMARY_KEY
        if second == "PARTITION":
            return A.DROP_TABLE_PARTITION
        if second == "FOREIGN":
            return A.DROP_FOREIGN_KEY
        return A.DROP_COLUMN
    if first in ("MODIFY", "CHANGE"):
        return A.MODIFY_COLUMN
    if first == "RENAME":
        if second in ("INDEX", "KEY"):
            return A.RENAME_INDEX
        if second == "COLUMN":
            return A.MODIFY_COLUMN
        return A.RENAME_TABLE
    if first == "ALTER":
        if second == "INDEX":
            return A.ALTER_INDEX_VISIBILITY
        return A.SET_DEFAULT_VALUE
    if first == "COMMENT":
        return A.MODIFY_TABLE_COMMENT
    if first == "AUTO_INCREMENT":
        return A.REBASE_AUTO_ID
    if first in ("CHARSET", "CHARACTER", "COLLATE", "CONVERT") or (first == "DEFAULT" and second in (
            "CHARSET", "CHARACTER", "COLLATE")):
        return A.MODIFY_TABLE_CHARSET_AND_COLLATE
    if first == "TRUNCATE" and second == "PARTITION":
        return A.TRUNCATE_TABLE_PARTITION
    if first == "EXCHANGE":
        return A.EXCHANGE_TABLE_PARTITION
    if first == "REORGANIZE":
        return A.REORGANIZE_PARTITION
    if first == "PARTITION":
        return A.ALTER_TABLE_PARTITIONING
    if first == "REMOVE":
        return A.ALTER_TTL_REMOVE if second == "TTL" else A.REMOVE_PARTITIONING
    if first == "TTL":
        return A.ALTER_TTL_INFO
    return None


def classify_ddl(query: str, change_type: str | None, has_table: bool) -> int:
    """The TiDB ActionType a Debezium DDL message most likely came from (its text decides)."""
    tokens = tokenize(query) or []
    words = [t.upper if t.kind == "ident" else "" for t in tokens]
    head = words[:8]

    def starts(*seq: str) -> bool:
        return head[:len(seq)] == list(seq)

    kind: int | None = None
    if starts("CREATE", "DATABASE") or starts("CREATE", "SCHEMA"):
        kind = A.CREATE_SCHEMA
    elif starts("DROP", "DATABASE") or starts("DROP", "SCHEMA"):
        kind = A.DROP_SCHEMA
    elif starts("ALTER", "DATABASE") or starts("ALTER", "SCHEMA"):
        kind = A.MODIFY_SCHEMA_CHARSET_AND_COLLATE
    elif head and head[0] == "CREATE" and "VIEW" in head:
        kind = A.CREATE_VIEW
    elif head and head[0] == "CREATE" and "TABLE" in head[:3]:
        kind = A.CREATE_TABLE
    elif head and head[0] == "CREATE" and "INDEX" in head[:3]:
        kind = A.ADD_INDEX
    elif starts("DROP", "VIEW"):
        kind = A.DROP_VIEW
    elif starts("DROP", "TABLE") or starts("DROP", "TEMPORARY", "TABLE"):
        kind = A.DROP_TABLE
    elif starts("DROP", "INDEX"):
        kind = A.DROP_INDEX
    elif starts("TRUNCATE"):
        kind = A.TRUNCATE_TABLE
    elif starts("RENAME", "TABLE"):
        kind = A.RENAME_TABLE
    elif starts("RECOVER", "TABLE") or starts("FLASHBACK", "TABLE"):
        kind = A.RECOVER_TABLE
    elif starts("ALTER", "TABLE") and len(tokens) > 2:
        # skip the (possibly qualified) table name, then split the specifications
        i = 3 if len(tokens) > 4 and tokens[3].text == "." else 2
        i += 2 if i == 3 else 1
        specs = [[t.upper if t.kind == "ident" else "" for t in part] for part in top_level_split(tokens[i:])]
        kind = _alter_table_kind([s for s in specs if s])
    if kind is not None:
        return int(kind)
    if change_type == "CREATE":
        return int(A.CREATE_TABLE if has_table else A.CREATE_SCHEMA)
    if change_type == "DROP":
        return int(A.DROP_TABLE if has_table else A.DROP_SCHEMA)
    if change_type == "ALTER":
        return int(A.MULTI_SCHEMA_CHANGE)
    return int(A.NONE)
