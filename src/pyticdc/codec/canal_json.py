"""Canal-JSON, TiCDC's flavour of Alibaba Canal's flat JSON message (ticdc-reference.md §4).

Wire shape (one Kafka message per row, key nil)::

    {"id":0,"database":…,"table":…,"pkNames":[…],"isDdl":false,"type":"INSERT|UPDATE|DELETE",
     "es":commitTs>>18,"ts":<now ms>,"sql":"","sqlType":{…},"mysqlType":{…},"old":…,"data":…[,"_tidb":{…}]}

Every non-null column value is a JSON *string*; ``mysqlType`` tells the decoder how to turn it back
into the model value (§4.5 ``canalJSONFormatColumn``). DDL and watermark messages are struct
marshals (goccy/go-json, i.e. encoding/json escaping) with ``data`` before ``old``.

Decoder notes (where the wire loses information):

* ``commit_ts`` is exact only with ``enable-tidb-extension`` (``_tidb.commitTs``, or the 2021 dev
  build's ``commit-ts``), which then always wins over ``es``; otherwise it is ``es << 18``, i.e. the
  commit TSO with its 18 logical bits cleared (for Alibaba Canal: the binlog time, TSO-shaped).
* DDL messages carry Canal's event type, not TiDB's ActionType; ``ddl_type`` is a plausible
  ActionType recovered from the Canal type and the query (see ``ddl_action_type``).
* The decoded ``table_info`` is rebuilt from ``mysqlType``/``pkNames`` and holds only the columns
  the message carries; table ids and row ids are not on the wire (0).
* ``_tidb`` is honoured whenever present (TiCDC's decoder reads it only when the extension is on).
* A value may hold several newline-terminated messages (TiCDC storage-sink files): each is decoded.
* Official Canal batches (several rows in ``data``/``old``) decode to one RowChange per row.
* A DELETE whose image holds primary-key columns only is flagged ``handle_key_only`` (that is what
  ``delete-only-output-handle-key-columns`` sends; the wire does not say so otherwise).
* Integer and float columns also accept JSON numbers and exponent forms (``"1e3"``) where TiCDC's
  decoder would refuse them; anything else that is not Go ``strconv`` syntax is a DecodeError.
* FLOAT text is parsed as a double, then rounded to float32 (Go parses straight to float32); the
  two agree on every text TiCDC writes: shortest float32 digits, and before tiflow #8502 the
  float64 digits of the widened value (``"1.2339999675750732"``), which is that float32 exactly.
* Other producers (docs/protocols/canal-json.md, "Tolerances"): either field order, ``INIT`` rows
  (inserts), MySQL type aliases and upper case in ``mysqlType`` (``INTEGER``, ``BOOLEAN``,
  ``DOUBLE PRECISION``, ``POINT``…), typed JSON numbers/booleans in numeric columns, DDL queries
  behind SQL comments. A message that is not TiCDC's (no ``_tidb`` and ``id`` absent or non-zero)
  and whose values do not fit its ``mysqlType`` is re-typed column by column
  (``Decoder._foreign_images``); TiCDC's own messages stay strict.
* Large messages (§8): ``_tidb.onlyHandleKey`` rows come back ``handle_key_only``; a
  ``claimCheckLocation`` is resolved through the decoder's ``claim_check`` store when it has one
  (else the handle-key row is returned with ``claim_check_location`` set).
"""

from __future__ import annotations

import keyword
import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Final, cast

import msgspec
import orjson

from pyticdc.codec.base import BaseDecoder, BaseEncoder, Message
from pyticdc.codec.compression import compress, decompress
from pyticdc.codec.jsontext import easyjson_quote, float32_round, format_float_f, go_json_quote
from pyticdc.errors import ConfigError, DecodeError, EncodeError
from pyticdc.model import (
    ActionType,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    Op,
    Row,
    RowChange,
    TableInfo,
    Value,
    Watermark,
)
from pyticdc.mysql import STRING_TYPES
from pyticdc.mysql.types import type_to_str

__all__ = [
    "OPTIONS",
    "PROTOCOL",
    "Decoder",
    "Encoder",
    "canal_ddl_type",
    "column_from_mysql_type",
    "ddl_action_type",
    "decode",
    "encode",
    "explain",
    "java_sql_type",
    "mysql_type",
    "type_desc",
]

PROTOCOL: Final = "canal-json"
#: CodecOptions fields Canal-JSON accepts (pkg/sink/codec/common/config.go, canal-json branch).
OPTIONS: Final = frozenset({
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
_RECORD_OVERHEAD: Final = 36
_WATERMARK_TYPE: Final = "TIDB_WATERMARK"


def _error(reason: str, at: int | str | None = None) -> DecodeError:
    return DecodeError(PROTOCOL, reason, at)


# =========================================================================== type tables
# internal.MySQLType2JavaType (§4.4): type code → java.sql.Types for (text charset, binary charset).
_JAVA_TYPES: Final[dict[int, tuple[int, int]]] = {
    1: (-6, -6), 2: (5, 5), 3: (4, 4), 4: (7, 7), 5: (8, 8), 6: (0, 0), 246: (3, 3), 7: (93, 93),
    12: (93, 93), 8: (-5, -5), 9: (4, 4), 10: (91, 91), 14: (91, 91), 11: (92, 92), 13: (12, 12),
    247: (4, 4), 248: (-7, -7), 249: (2005, 2004), 250: (2005, 2004), 251: (2005, 2004),
    252: (2005, 2004), 253: (12, 2004), 15: (12, 2004), 254: (1, 2004), 255: (-2, -2), 16: (-7, -7),
    245: (12, 12), 225: (12, 12),
}
# getJavaSQLType: unsigned promotion by value, "if a > MaxIntN" (§4.4).
_PROMOTIONS: Final[dict[int, tuple[int, int]]] = {
    1: (127, 5), 2: (32767, 4), 3: (2147483647, -5), 8: (9223372036854775807, 3),
}
# Unsigned types whose java type is never promoted (and whose value is not parsed).
_NO_PROMOTION: Final = frozenset({13, 16, 4, 5, 246})
_UINT_TEXT: Final = re.compile(r"[0-9]+\Z")
_BINARY_FLAG: Final = int(ColumnFlag.BINARY)
_HANDLE_KEY_FLAG: Final = int(ColumnFlag.HANDLE_KEY)
_PRIMARY_KEY_FLAG: Final = int(ColumnFlag.PRIMARY_KEY)
_UINT64_MAX: Final = (1 << 64) - 1

# mysql.GetDefaultFieldLengthAndDecimal, used by FieldType.CompactStr.
_DEFAULT_FLEN_DECIMAL: Final[dict[int, tuple[int, int]]] = {
    16: (1, 0), 1: (4, 0), 2: (6, 0), 9: (9, 0), 3: (11, 0), 8: (20, 0), 5: (22, -1), 246: (10, 0),
    11: (10, 0), 10: (10, 0), 7: (19, 0), 12: (19, 0), 13: (4, 0), 254: (1, 0), 15: (5, 0), 253: (5, 0),
    249: (255, 0), 252: (65535, 0), 250: (16777215, 0), 251: (4294967295, 0), 245: (4294967295, 0),
    6: (0, 0), 248: (-1, 0), 247: (-1, 0), 4: (12, -1),
}
# parser/format.OutputFormat: how ENUM/SET elements are escaped inside ('…').
_OUTPUT_FORMAT: Final = {0: "\\0", ord("'"): "''", ord("\n"): "\\n", ord("\r"): "\\r"}


def _java_base(column: ColumnInfo) -> int:
    return _JAVA_TYPES.get(column.type_code, (12, 12))[1 if int(column.flags) & _BINARY_FLAG else 0]


def _java_promotion(column: ColumnInfo) -> tuple[int, int] | None:
    """(threshold, promoted type) when the value decides the java type, else None (§4.4)."""
    if not column.is_unsigned or column.type_code in _NO_PROMOTION:
        return None
    return _PROMOTIONS.get(column.type_code, (_UINT64_MAX, 0))


def java_sql_type(column: ColumnInfo, value: Value) -> int:
    """``sqlType`` of a column holding ``value`` (§4.4; EncodeError if an unsigned value is not a number)."""
    java = _java_base(column)
    promotion = _java_promotion(column)
    if value is not None and promotion is not None and _unsigned_number(value) > promotion[0]:
        return promotion[1]
    return java


def _unsigned_number(value: Value) -> int:
    # getJavaSQLType accepts uint64 or a string ParseUint can read; anything else is an error.
    if type(value) is int:
        return value
    if isinstance(value, str) and len(value) <= 20 and _UINT_TEXT.match(value) and int(value) <= _UINT64_MAX:
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
    if code in (247, 248):
        return name + "('" + "','".join(e.translate(_OUTPUT_FORMAT) for e in column.elems or ()) + "')"
    if code in (7, 12, 11):
        return f"{name}({shown_decimal})" if decimal_not_default else name
    if code in (4, 5):
        return f"{name}({shown_flen},{shown_decimal})" if decimal_not_default else name
    if code == 246:
        return f"{name}({shown_flen},{shown_decimal})"
    if code in (16, 15, 254, 253, 1, 2, 9, 3, 8):
        return f"{name}({shown_flen})"
    if code == 13:
        return f"{name}({flen if flen != -1 else default_flen})"
    if code == 225:
        return f"{name}({flen})" if flen != -1 else name
    if code == 6:
        return name + "(0)"
    return name


def type_desc(column: ColumnInfo) -> str:
    """TiDB ``ColumnInfo.GetTypeDesc()`` (``int(11)``, ``decimal(10,0) unsigned zerofill``), §4.3."""
    desc = _compact_str(column)
    if column.is_unsigned and column.type_code not in (16, 13):
        desc += " unsigned"
    if column.zerofill and column.type_code != 13:
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


# =========================================================================== values → wire
_F32: Final = struct.Struct("<f")
_F32_PACK: Final = _F32.pack
_F32_UNPACK: Final = _F32.unpack
_F32_MAX: Final = 3.4028234663852886e38
_INF: Final = float("inf")
# easyjson escapes an invalid UTF-8 byte as the six characters \ufffd (jwriter.String); the
# surrogateescape decoder maps each such byte to one lone surrogate U+DC80..U+DCFF.
_EASYJSON_INVALID: Final = {c: "\\ufffd" for c in range(0xDC80, 0xDD00)}


def _quote_text_bytes(data: bytes) -> str:
    try:
        return easyjson_quote(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", "surrogateescape")
    pieces = [easyjson_quote(part) for part in re.split("([\udc80-\udcff]+)", text)]
    for i in range(1, len(pieces), 2):  # the odd pieces are runs of invalid bytes
        pieces[i] = '"' + pieces[i][1:-1].translate(_EASYJSON_INVALID) + '"'
    return '"' + "".join(p[1:-1] for p in pieces) + '"'


def _positional(text: str) -> str:
    """Python float text (``1.5e-07``, ``2.71``, ``1e+21``) as Go ``'f'`` prints it: no exponent,
    no trailing zeros, no trailing point."""
    negative = text.startswith("-")
    if negative:
        text = text[1:]
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    stripped = stripped.rstrip("0")
    if not stripped:
        return "-0" if negative else "0"
    if point <= 0:
        body = "0." + "0" * -point + stripped
    elif point >= len(stripped):
        body = stripped + "0" * (point - len(stripped))
    else:
        body = stripped[:point] + "." + stripped[point:]
    return "-" + body if negative else body


def _format_double(value: float) -> str:
    """``FormatFloat(v, 'f', -1, 64)``: repr() is already the shortest round-trip digits."""
    if value == 0 or value != value or value in (_INF, -_INF):
        return format_float_f(value, 64)
    return _positional(repr(value))


def _format_float32(value: float) -> str:
    """``FormatFloat(v, 'f', -1, 32)``: the fewest digits that read back as the same float32.

    Below a power of two the float32 rounding interval is asymmetric and the nearest digits may
    not be the shortest: those values (and zero, NaN, ±Inf) go to jsontext.format_float_f.
    """
    if value == 0 or value != value or value in (_INF, -_INF) or abs(value) > _F32_MAX:
        return format_float_f(value, 32)
    target = _F32_UNPACK(_F32_PACK(value))[0]
    if math.frexp(target)[0] in (0.5, -0.5):
        return format_float_f(value, 32)
    # Any shorter decimal is also a 7-digit one, and the nearest 7-digit decimal is at least as
    # close: so if 7 digits fail, fewer fail too. Most float32s need 7-9 digits.
    text = f"{target:.6e}"
    if float32_round(float(text)) == target:
        for precision in range(6):
            shorter = f"{target:.{precision}e}"
            if float32_round(float(shorter)) == target:
                return _positional(shorter)
        return _positional(text)
    for precision in (7, 8):
        text = f"{target:.{precision}e}"
        if float32_round(float(text)) == target:
            return _positional(text)
    return format_float_f(value, 32)  # unreachable: 9 digits always round-trip a float32


def _render(value: object, binary: bool, bits: int) -> str:
    """JSON string literal of a non-null value (canalEntryBuilder.formatValue, §4.2)."""
    kind = type(value)
    if kind is int:
        return f'"{value}"'
    if kind is str:
        return easyjson_quote(cast(str, value))
    if kind is bytes or kind is bytearray or kind is memoryview:
        data = bytes(cast(bytes, value))
        # BinaryFlag: every byte becomes the code point of the same value (ISO-8859-1 decode).
        return easyjson_quote(data.decode("latin-1")) if binary else _quote_text_bytes(data)
    if kind is float:
        number = cast(float, value)
        if number != number or number in (_INF, -_INF):
            return '"0"'  # the mounter replaces NaN and ±Inf by (positive) 0 (§1.1)
        return '"' + (_format_float32(number) if bits == 32 else _format_double(number)) + '"'
    if kind is bool:
        return '"1"' if value else '"0"'
    if isinstance(value, int):
        return f'"{int(value)}"'
    return easyjson_quote(str(value))


class _EncColumn:
    """One column's precomputed encoding plan."""

    __slots__ = ("binary", "bits", "column", "handle_key", "java", "key", "mysql_pair", "name", "promotion")

    def __init__(self, column: ColumnInfo, content_compatible: bool) -> None:
        self.column = column
        self.name = column.name
        quoted = easyjson_quote(column.name)
        self.key = quoted + ":"
        self.binary = bool(int(column.flags) & _BINARY_FLAG)
        self.bits = 32 if column.type_code == 4 else 64
        self.handle_key = bool(int(column.flags) & _HANDLE_KEY_FLAG)
        self.java = _java_base(column)
        self.promotion = _java_promotion(column)
        self.mysql_pair = quoted + ":" + easyjson_quote(mysql_type(column, content_compatible))


class _EncTable:
    """A TableInfo's encoding plan: non-virtual columns in table order, pkNames, names known."""

    __slots__ = ("columns", "known", "pk_json", "pk_names", "pk_set", "table_info")

    def __init__(self, table_info: TableInfo, content_compatible: bool) -> None:
        self.table_info = table_info
        self.columns = tuple(_EncColumn(c, content_compatible) for c in table_info.columns if not c.virtual)
        self.known = frozenset(c.name for c in table_info.columns)
        self.pk_names = [c.name for c in table_info.columns if int(c.flags) & _PRIMARY_KEY_FLAG]
        self.pk_set = frozenset(self.pk_names)
        self.pk_json = "[" + ",".join(easyjson_quote(n) for n in self.pk_names) + "]"

    def pk_text(self, image: Mapping[str, Value]) -> str:
        """pkNames of one message: PrimaryKeyColumnNames() walks the sent image (§4.1), so a
        primary-key column the image lacks is not named."""
        if self.pk_set <= image.keys():
            return self.pk_json
        return "[" + ",".join(easyjson_quote(n) for n in self.pk_names if n in image) + "]"


def _values_equal(old: Value, new: Value) -> bool:
    # codec.IsColumnValueEqual: nil only equals nil; []byte by content; others by ==.
    if old is None or new is None:
        return old is new
    return bool(old == new)


def _row_kind(event: RowChange) -> str | None:
    # RowChangedEvent.IsDelete/IsInsert/IsUpdate decide by which images are present (§4.1).
    if not event.columns:
        return "DELETE" if event.pre_columns else None
    return "UPDATE" if event.pre_columns else "INSERT"


# =========================================================================== encoder
class Encoder(BaseEncoder):
    """Canal-JSON encoder: one message per row, DDL and (with the extension) watermark messages."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def _validate(self) -> None:
        options = self.options
        self._only_updated = options.only_output_updated_columns or options.content_compatible
        self._plans: dict[int, _EncTable] = {}
        handling = options.large_message_handle_option
        if handling != "none" and not options.enable_tidb_extension:
            raise ConfigError(
                f"{PROTOCOL}: large-message-handle-option={handling} requires enable-tidb-extension=true"
            )
        if handling == "claim-check" and not options.claim_check_storage_uri and self.claim_check is None:
            raise ConfigError(f"{PROTOCOL}: large-message-handle-option=claim-check needs claim-check-storage-uri")

    # ------------------------------------------------------------------ plans
    def _plan(self, event: RowChange) -> _EncTable:
        table_info = event.table_info
        if table_info is None:
            raise EncodeError(PROTOCOL, f"row of {event.schema}.{event.table} has no table_info")
        plan = self._plans.get(id(table_info))
        if plan is None or plan.table_info is not table_info:
            if len(self._plans) > 256:
                self._plans.clear()
            plan = _EncTable(table_info, self.options.content_compatible)
            self._plans[id(table_info)] = plan
        for image in (event.columns, event.pre_columns):
            if image and not image.keys() <= plan.known:
                unknown = sorted(set(image) - plan.known)
                raise EncodeError(PROTOCOL, f"columns {unknown} are not in the table_info of "
                                            f"{event.schema}.{event.table}")
        return plan

    # ------------------------------------------------------------------ DML
    def _dml_text(self, event: RowChange, plan: _EncTable, kind: str, too_large: bool, location: str | None) -> str:
        """newJSONMessageForDML (§4.1): the exact easyjson text of one row message."""
        options = self.options
        is_delete = kind == "DELETE"
        only_handle_key = too_large or (is_delete and options.delete_only_output_handle_key_columns)
        image = event.pre_columns if is_delete else event.columns
        assert image is not None
        sql_types: list[str] = []
        mysql_types: list[str] = []
        for col in plan.columns:
            if col.name not in image or (only_handle_key and not col.handle_key):
                continue
            java = col.java
            promotion = col.promotion
            if promotion is not None:
                value = image[col.name]
                if value is not None and _unsigned_number(value) > promotion[0]:
                    java = promotion[1]
            sql_types.append(f"{col.key}{java}")
            mysql_types.append(col.mysql_pair)
        parts = [
            '{"id":0,"database":', easyjson_quote(event.schema), ',"table":', easyjson_quote(event.table),
            ',"pkNames":', plan.pk_text(image), ',"isDdl":false,"type":"', kind, '","es":', str(event.commit_ts >> 18),
            ',"ts":', str(int(self.clock())), ',"sql":"","sqlType":',
            "{" + ",".join(sql_types) + "}" if sql_types else "null",
            ',"mysqlType":{', ",".join(mysql_types), "}",
        ]
        if kind == "UPDATE":
            new_map = event.columns if self._only_updated else None
            parts += [',"old":', self._fill(plan, event.pre_columns, new_map, only_handle_key),
                      ',"data":', self._fill(plan, event.columns, None, only_handle_key)]
        else:
            parts += [',"old":null,"data":', self._fill(plan, image, None, only_handle_key)]
        if options.enable_tidb_extension:
            parts += [',"_tidb":{"commitTs":', str(event.commit_ts)]
            if too_large and options.large_message_handle_option == "handle-key-only":
                parts.append(',"onlyHandleKey":true')
            if too_large and options.large_message_handle_option == "claim-check":
                parts += [',"claimCheckLocation":', easyjson_quote(location or "")]
            parts.append("}")
        parts.append("}")
        return "".join(parts)

    @staticmethod
    def _fill(plan: _EncTable, image: Mapping[str, Value] | None, new_map: Mapping[str, Value] | None,
              only_handle_key: bool) -> str:
        """fillColumns: ``[{…}]`` of one image in table order, or ``null`` when there is none."""
        if not image:
            return "null"
        items: list[str] = []
        for col in plan.columns:
            name = col.name
            if name not in image:
                continue
            value = image[name]
            # shouldIgnoreColumn: only-output-updated-columns drops columns equal in the post-image.
            if new_map is not None and name in new_map and _values_equal(value, new_map[name]):
                continue
            if only_handle_key and not col.handle_key:
                continue
            items.append(col.key + ("null" if value is None else _render(value, col.binary, col.bits)))
        return "[{" + ",".join(items) + "}]"

    def _finish(self, text: str) -> bytes:
        try:
            value = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EncodeError(PROTOCOL, f"text is not encodable as UTF-8: {exc}") from None
        return compress(self.options.large_message_handle_compression, value)

    def _fits(self, value: bytes) -> bool:
        return len(value) + _RECORD_OVERHEAD <= self.options.max_message_bytes

    def _encode_row(self, event: RowChange) -> Message | None:
        kind = _row_kind(event)
        if kind is None:
            return None  # TiCDC drops rows with neither image (§1.3)
        plan = self._plan(event)
        value = self._finish(self._dml_text(event, plan, kind, False, None))
        if self._fits(value):
            return Message(None, value, (event,))
        # §8 large messages: AppendRowChangedEvent.
        handling = self.options.large_message_handle_option
        size = len(value) + _RECORD_OVERHEAD
        limit = self.options.max_message_bytes
        if handling == "none":
            raise EncodeError(PROTOCOL, f"message of {size} bytes exceeds max-message-bytes {limit}")
        if handling == "handle-key-only":
            value = self._finish(self._dml_text(event, plan, kind, True, None))
            if not self._fits(value):
                raise EncodeError(PROTOCOL, f"handle-key-only message of {len(value) + _RECORD_OVERHEAD} bytes "
                                            f"still exceeds max-message-bytes {limit}")
            return Message(None, value, (event,))
        if self.claim_check is None:
            raise EncodeError(PROTOCOL, "claim-check needs a ClaimCheckStore (Encoder(claim_check=…))")
        # The store writes {"key","value"} JSON or, with claim-check-raw-value, the raw value.
        location = self.claim_check.put(None, value)
        value = self._finish(self._dml_text(event, plan, kind, True, location))
        if not self._fits(value):
            raise EncodeError(PROTOCOL, f"claim-check location message of {len(value) + _RECORD_OVERHEAD} bytes "
                                        f"exceeds max-message-bytes {limit}")
        return Message(None, value, (event,))

    # ------------------------------------------------------------------ DDL / watermark
    def _envelope_text(self, database: str, table: str, is_ddl: bool, canal_type: str, es: int, sql: str,
                       tidb: str | None) -> str:
        """A JSONMessage struct marshal (goccy/go-json, encoding/json escaping), ``data`` before ``old``."""
        text = (
            f'{{"id":0,"database":{go_json_quote(database)},"table":{go_json_quote(table)},"pkNames":null,'
            f'"isDdl":{"true" if is_ddl else "false"},"type":{go_json_quote(canal_type)},"es":{es},'
            f'"ts":{int(self.clock())},"sql":{go_json_quote(sql)},"sqlType":null,"mysqlType":null,'
            f'"data":null,"old":null'
        )
        return text + (f',"_tidb":{tidb}}}' if tidb is not None else "}")

    def _encode_ddl(self, event: DDLEvent) -> Message:
        tidb = None
        if self.options.enable_tidb_extension:
            # tidbExtension fields are omitempty.
            tidb = f'{{"commitTs":{event.commit_ts}}}' if event.commit_ts else "{}"
        text = self._envelope_text(event.schema, event.table, True, canal_ddl_type(event.ddl_type),
                                   event.commit_ts >> 18, event.query, tidb)
        return Message(None, self._finish(text), (event,))

    def _encode_watermark(self, event: Watermark) -> Message | None:
        if not self.options.enable_tidb_extension:
            return None  # EncodeCheckpointEvent returns nil without the extension (§1.4)
        ts = event.resolved_ts
        tidb = f'{{"watermarkTs":{ts}}}' if ts else "{}"
        text = self._envelope_text("", "", False, _WATERMARK_TYPE, ts >> 18, "", tidb)
        return Message(None, self._finish(text), (event,))

    def encode(self, events: Iterable[Event]) -> list[Message]:
        """One message per row / DDL / watermark (Canal-JSON never batches)."""
        messages: list[Message] = []
        for event in events:
            message: Message | None
            if isinstance(event, RowChange):
                message = self._encode_row(event)
            elif isinstance(event, DDLEvent):
                message = self._encode_ddl(event)
            elif isinstance(event, Watermark):
                message = self._encode_watermark(event)
            else:
                message = None  # Bootstrap is a Simple-protocol event
            if message is not None:
                messages.append(message)
        return messages

    # ------------------------------------------------------------------ projection
    def _commit_ts(self, commit_ts: int) -> int:
        return commit_ts if self.options.enable_tidb_extension else (commit_ts >> 18) << 18

    def project(self, event: Event) -> Event | None:
        """The event as Canal-JSON's decoder returns it with these options (module docstring).

        For a row over max-message-bytes under claim-check the full row is returned (what a
        decoder holding the store sees) without ``claim_check_location``, which the store assigns.
        """
        if isinstance(event, Watermark):
            return event if self.options.enable_tidb_extension else None
        if isinstance(event, DDLEvent):
            return DDLEvent(query=event.query, ddl_type=ddl_action_type(canal_ddl_type(event.ddl_type), event.query),
                            commit_ts=self._commit_ts(event.commit_ts), schema=event.schema, table=event.table)
        if isinstance(event, RowChange):
            return self._project_row(event)
        return None

    def _project_row(self, event: RowChange) -> RowChange | None:
        kind = _row_kind(event)
        if kind is None:
            return None
        plan = self._plan(event)
        options = self.options
        too_large = False
        if options.large_message_handle_option == "handle-key-only":
            value = self._finish(self._dml_text(event, plan, kind, False, None))
            too_large = not self._fits(value)
        handle_key_only = too_large or (kind == "DELETE" and options.delete_only_output_handle_key_columns)
        wanted = [c for c in plan.columns if not handle_key_only or c.handle_key]
        header_image = event.pre_columns if kind == "DELETE" else event.columns
        assert header_image is not None
        header = [c for c in wanted if c.name in header_image]
        types = {c.name: mysql_type(c.column, options.content_compatible) for c in header}
        table_info = _table_info_from_header(event.schema, event.table, [c.name for c in header], types,
                                             plan.pk_names, options.content_compatible)
        kinds = {c.name: _value_kind(types[c.name]) for c in header}

        def project_image(image: Mapping[str, Value] | None, new_map: Mapping[str, Value] | None) -> Row | None:
            if not image:
                return None
            out: dict[str, Value] = {}
            for col in wanted:
                name = col.name
                if name not in image:
                    continue
                value = image[name]
                if new_map is not None and name in new_map and _values_equal(value, new_map[name]):
                    continue  # dropped from "old" by only-output-updated-columns
                out[name] = None if value is None else _project_value(kinds.get(name, _K_STR), value, col)
            return Row(out)

        columns = pre = None
        if kind == "DELETE":
            pre = project_image(event.pre_columns, None)
            handle_key_only = handle_key_only or _key_only_delete(pre or {}, frozenset(plan.pk_names))
        else:
            columns = project_image(event.columns, None)
        if kind == "UPDATE":
            assert columns is not None
            pre = project_image(event.pre_columns, event.columns if self._only_updated else None)
            # The decoder rebuilds a shorter pre-image as the post-image overlaid with "old" (§4.1).
            if pre is None or len(pre) < len(columns):
                pre = Row({**columns, **(pre or {})})
        return RowChange(op=Op[kind], schema=event.schema, table=event.table,
                         commit_ts=self._commit_ts(event.commit_ts), columns=columns, pre_columns=pre,
                         table_info=table_info, handle_key_only=handle_key_only)


def _project_value(kind: int, value: Value, col: _EncColumn) -> Value:
    """A value after formatValue on the encoder and canalJSONFormatColumn on the decoder."""
    try:
        text = orjson.loads(_render(value, col.binary, col.bits))
        return _parse_value(kind, text, col.name)
    except (orjson.JSONDecodeError, DecodeError) as exc:
        raise EncodeError(PROTOCOL, f"column {col.name!r}: value {value!r} does not survive Canal-JSON: {exc}"
                          ) from None


# =========================================================================== wire → values
_K_STR, _K_UTF8, _K_LATIN1, _K_INT, _K_UINT, _K_BIGINT, _K_F32, _K_F64 = range(8)

# types.StrToType after "blob"→"text" and "binary"→"char" (utils.ExtractBasicMySQLType).
_STR_TO_TYPE: Final[dict[str, int]] = {
    "bit": 16, "text": 252, "date": 10, "datetime": 12, "unspecified": 0, "decimal": 246, "double": 5,
    "enum": 247, "float": 4, "geometry": 255, "mediumint": 9, "json": 245, "int": 3, "bigint": 8,
    "longtext": 251, "mediumtext": 250, "null": 6, "set": 248, "smallint": 2, "char": 254, "time": 11,
    "timestamp": 7, "tinyint": 1, "tinytext": 249, "varchar": 15, "var_string": 253, "year": 13,
    "vector": 225,
}
_BASIC_TYPE: Final = re.compile(r"[^( ]*")
# Alibaba Canal copies the column type from the DDL text (``INTEGER``, ``BOOLEAN``, ``SERIAL``,
# ``DOUBLE PRECISION``, ``NUMERIC(8,3)``, ``POINT``…, Paimon's canal fixtures): MySQL's aliases,
# mapped to the type MySQL stores. TiCDC writes only the canonical names above.
_TYPE_SYNONYMS: Final[dict[str, str]] = {
    "integer": "int", "int1": "tinyint", "int2": "smallint", "int3": "mediumint", "middleint": "mediumint",
    "int4": "int", "int8": "bigint", "bool": "tinyint", "boolean": "tinyint", "serial": "bigint",
    "real": "double", "float4": "float", "float8": "double", "numeric": "decimal", "fixed": "decimal",
    "dec": "decimal", "character": "char", "nchar": "char", "nvarchar": "varchar", "point": "geometry",
    "linestring": "geometry", "polygon": "geometry", "multipoint": "geometry", "multilinestring": "geometry",
    "multipolygon": "geometry", "geometrycollection": "geometry", "geomcollection": "geometry",
}


def _basic_word(mysql_type_text: str) -> str:
    """The lower-case type word of a mysqlType (``"varchar(255)"`` → ``varchar``, synonyms resolved)."""
    basic = _BASIC_TYPE.match(mysql_type_text)
    word = basic.group(0).lower() if basic else ""
    return _TYPE_SYNONYMS.get(word, word)


def _basic_type_code(mysql_type_text: str) -> int:
    word = _basic_word(mysql_type_text).replace("blob", "text", 1).replace("binary", "char", 1)
    return _STR_TO_TYPE.get(word, 0)


def _is_binary_type(mysql_type_text: str) -> bool:
    # utils.IsBinaryMySQLType. Spatial types (Alibaba Canal only; TiDB has none) carry WKB bytes,
    # which Canal writes as ISO-8859-1 text like BLOBs.
    return "blob" in mysql_type_text or "binary" in mysql_type_text or _basic_word(mysql_type_text) == "geometry"


def _value_kind(mysql_type_text: str) -> int:
    """How canalJSONFormatColumn turns the string back into a model value (§4.5 end)."""
    text = mysql_type_text.lower()
    if _is_binary_type(text):
        return _K_LATIN1
    code = _basic_type_code(text)
    if code in (16, 248):
        return _K_UINT
    if code in (1, 2, 3, 9, 13, 247):
        return _K_INT
    if code == 8:
        return _K_BIGINT
    if code == 4:
        return _K_F32
    if code == 5:
        return _K_F64
    if code in STRING_TYPES:
        return _K_UTF8
    return _K_STR


_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT_TEXT: Final = re.compile(r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)\Z", re.I)
_HEX_FLOAT_TEXT: Final = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+\Z")
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


def _parse_float(text: str, at: str) -> float:
    # strconv.ParseFloat syntax: decimal, exponent, hex mantissa with p exponent, inf/nan; a finite
    # text beyond the float64 range is ErrRange (TiCDC's decoder panics), here a DecodeError.
    try:
        if _FLOAT_TEXT.match(text):
            number = float(text)
        elif _HEX_FLOAT_TEXT.match(text):
            number = float.fromhex(text)
        else:
            raise _error(f"invalid float value {text!r}", at)
    except OverflowError:
        raise _error(f"float value {text!r} is out of range", at) from None
    if number in (_INF, -_INF) and "inf" not in text.lower():
        raise _error(f"float value {text!r} is out of range", at)
    return number


def _parse_value(kind: int, raw: object, at: str) -> Value:
    """The Go-exact (slow) conversion of one wire value; DecodeError names ``at`` on bad input."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        return _parse_json_number(kind, raw, at)
    text = raw
    try:
        if kind == _K_STR:
            return text
        if kind == _K_UTF8:
            return text.encode("utf-8")
        if kind == _K_LATIN1:
            return text.encode("latin-1")
    except UnicodeEncodeError:
        raise _error("binary column value has a character above U+00FF (not ISO-8859-1)", at) from None
    if kind in (_K_F32, _K_F64):
        number = _parse_float(text, at)
        if kind == _K_F64:
            return number
        rounded = float32_round(number)
        if rounded in (_INF, -_INF) and number not in (_INF, -_INF):
            raise _error(f"float value {text!r} is out of float32 range", at)
        return rounded
    # strconv.ParseInt / ParseUint: optional sign (ParseInt only), ASCII digits, 64-bit range.
    if len(text) <= 21:
        if kind == _K_UINT:
            if _UINT_TEXT.match(text) and int(text) <= _UINT64_MAX:
                return int(text)
            raise _error(f"invalid unsigned value {text!r}", at)
        if _INT_TEXT.match(text):
            number_int = int(text)
            if _INT64_MIN <= number_int <= _INT64_MAX:
                return number_int
            if kind == _K_BIGINT and _UINT_TEXT.match(text) and number_int <= _UINT64_MAX:
                return number_int  # BIGINT: ParseInt, then ParseUint
    raise _error(f"invalid integer value {text!r}", at)


def _parse_json_number(kind: int, raw: object, at: str) -> Value:
    """A typed JSON value (Flink's canal-json encoder writes numbers and booleans, not strings).

    Only numeric columns take them: JSON integers (and booleans, for TINYINT(1)) for integer
    kinds, any JSON number for FLOAT/DOUBLE, each in the range the string form would allow.
    """
    if kind in (_K_INT, _K_UINT, _K_BIGINT) and isinstance(raw, int):
        number = int(raw)  # bool → 0/1
        low = 0 if kind == _K_UINT else _INT64_MIN
        high = _INT64_MAX if kind == _K_INT else _UINT64_MAX
        if low <= number <= high:
            return number
        raise _error(f"integer value {number} is out of range", at)
    if kind in (_K_F32, _K_F64) and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        try:
            number_float = float(raw)
        except OverflowError:
            raise _error(f"float value {raw} is out of range", at) from None
        if kind == _K_F64:
            return number_float
        rounded = float32_round(number_float)
        if rounded in (_INF, -_INF):
            raise _error(f"float value {raw} is out of float32 range", at)
        return rounded
    raise _error(f"column value must be a string or null, got {type(raw).__name__}", at)


# ---------------------------------------------------------------- schema from the header
_PARENS: Final = re.compile(r"\(([^)]*)\)")
_ELEMS: Final = re.compile(r"'((?:[^']|'')*)'")
_INPUT_FORMAT: Final = {"''": "'", "\\0": "\0", "\\n": "\n", "\\r": "\r"}
_TEXT_CODES: Final = STRING_TYPES | {247, 248}


def column_from_mysql_type(name: str, mysql_type_text: str, primary_key: bool = False,
                           content_compatible: bool = False) -> ColumnInfo:
    """A ColumnInfo recovered from a ``mysqlType`` string (as the decoder builds its table_info)."""
    text = mysql_type_text.lower().strip()
    code = _basic_type_code(text)
    binary = _is_binary_type(text)
    charset = "binary" if binary or code not in _TEXT_CODES else "utf8mb4"
    word = _BASIC_TYPE.match(text)
    alias = word.group(0) if word else ""
    # TiDB gives YEAR and BIT the Unsigned flag, and YEAR also ZeroFill (reference §1.2);
    # MySQL's SERIAL is BIGINT UNSIGNED.
    unsigned = " unsigned" in text or code in (13, 16) or alias == "serial"
    zerofill = " zerofill" in text or code == 13
    # MySQL's BOOL/BOOLEAN is TINYINT(1).
    flen = 1 if alias in ("bool", "boolean") else -1
    decimal = -1
    elems: tuple[str, ...] | None = None
    inner = _PARENS.search(mysql_type_text)
    if code in (247, 248):
        elems = tuple(re.sub(r"''|\\0|\\n|\\r", lambda m: _INPUT_FORMAT[m.group(0)], e)
                      for e in _ELEMS.findall(inner.group(1))) if inner else ()
    elif inner:
        numbers = [p.strip() for p in inner.group(1).split(",")]
        # Lengths are small; a longer digit run is not one (and int() would refuse > 4300 digits).
        if all(p.isascii() and p.isdigit() and len(p) <= 18 for p in numbers):
            if code in (7, 11, 12):
                decimal = int(numbers[0])
            else:
                flen = int(numbers[0])
                if len(numbers) > 1:
                    decimal = int(numbers[1])
    flags = 0
    if charset == "binary":
        flags |= ColumnFlag.BINARY
    if unsigned:
        flags |= ColumnFlag.UNSIGNED
    if primary_key:
        flags |= ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY
    return ColumnInfo(
        name=name, type_code=code, flags=int(flags), charset=charset,
        collation="binary" if charset == "binary" else "utf8mb4_bin", flen=flen, decimal=decimal, elems=elems,
        unsigned=unsigned, zerofill=zerofill, nullable=not primary_key,
        # A mysqlType with parameters ("int(11)", "enum('a')") is a full GetTypeDesc text: keep it.
        type_desc=mysql_type_text if content_compatible or "(" in mysql_type_text else None,
    )


def _table_info_from_header(schema: str, table: str, order: list[str], mysql_types: Mapping[str, str],
                            pk_names: list[str], content_compatible: bool) -> TableInfo:
    """The (partial) TableInfo a message's header describes: columns in ``order``, PK from pkNames."""
    pk_set = set(pk_names)
    columns = tuple(column_from_mysql_type(n, mysql_types[n], n in pk_set, content_compatible) for n in order)
    present = [n for n in pk_names if n in mysql_types]
    indexes = (IndexInfo(name="primary", columns=tuple(present), primary=True, unique=True),) if present else ()
    by_name = {c.name: c for c in columns}
    pk_is_handle = len(present) == 1 and by_name[present[0]].type_code in (1, 2, 3, 8, 9)
    return TableInfo(schema=schema, table=table, pk_is_handle=pk_is_handle, columns=columns, indexes=indexes)


# ---------------------------------------------------------------- envelope
class _TiDBExtension(msgspec.Struct):
    """``_tidb`` (wire field names)."""

    commitTs: int = 0
    watermarkTs: int = 0
    onlyHandleKey: bool = False
    claimCheckLocation: str = ""
    # A Nov-2021 development build spelled the keys "commit-ts"/"watermark-ts" (real/README §5);
    # released TiCDC never did, so these are read only when the released key is absent.
    commit_ts_dev: int = msgspec.field(default=0, name="commit-ts")
    watermark_ts_dev: int = msgspec.field(default=0, name="watermark-ts")


_NULL: Final = msgspec.Raw(b"null")


class _Envelope(msgspec.Struct):
    """The message with the header and images kept raw until the header picks a typed decoder."""

    # TiCDC always writes 0; Alibaba Canal writes its batch id (> 0); Flink's encoder omits it.
    id: int | None = None
    database: str | None = None
    table: str | None = None
    pkNames: msgspec.Raw = _NULL
    isDdl: bool | None = None
    type: str | None = None
    es: int | None = None
    sql: str | None = None
    sqlType: msgspec.Raw = _NULL
    mysqlType: msgspec.Raw = _NULL
    data: msgspec.Raw = _NULL
    old: msgspec.Raw = _NULL
    tidb: _TiDBExtension | None = msgspec.field(default=None, name="_tidb")


_ENVELOPE_DECODER: Final = msgspec.json.Decoder(_Envelope)
# msgspec reports invalid UTF-8 inside a JSON string as UnicodeDecodeError.
_MSGSPEC_ERRORS: Final = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)
_MYSQL_TYPES_DECODER: Final = msgspec.json.Decoder(dict[str, str] | None)
_SQL_TYPES_DECODER: Final = msgspec.json.Decoder(dict[str, int] | None)
_PK_NAMES_DECODER: Final = msgspec.json.Decoder(list[str] | None)
_AT_PATH: Final = re.compile(r" - at `(\$[^`]*)`$")
_AT_BYTE: Final = re.compile(r"\(byte (\d+)\)")


def _msgspec_error(exc: Exception, prefix: str = "$", data: bytes | None = None) -> DecodeError:
    """A DecodeError from a msgspec error, with its JSON path (under ``prefix``) or byte offset."""
    if isinstance(exc, UnicodeDecodeError):
        invalid_at: int | str = prefix
        if data is not None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as found:
                invalid_at = found.start
        return _error("invalid UTF-8 in a JSON string", invalid_at)
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
    return _error(message, at)


# Typed fields of the fast path, with the 64-bit ranges of strconv.ParseInt/ParseUint (§4.5 end);
# msgspec bounds stop at int64, so the uint64 ceiling is checked by the header's converter.
_INT64: Final = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_UINT64: Final = Annotated[int, msgspec.Meta(ge=0)]
_BIGINT: Final = Annotated[int, msgspec.Meta(ge=-(1 << 63))]
_FIELD_TYPES: Final[dict[int, Any]] = {
    _K_INT: _INT64 | None, _K_UINT: _UINT64 | None, _K_BIGINT: _BIGINT | None, _K_F32: float | None,
    _K_F64: float | None,
}


def _attribute_name(name: str) -> bool:
    # A column name msgspec can use as the Struct attribute itself (so asdict() yields it).
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("__")


class _Header:
    """Everything derived from one distinct (database, table, mysqlType, pkNames): schema and converters."""

    __slots__ = ("convert", "direct", "full", "kinds", "mysql_raw", "names", "old_partial", "pk_raw", "pk_set",
                 "table_info")

    def __init__(self, table_info: TableInfo, names: list[str], kinds: dict[str, int]) -> None:
        self.table_info = table_info
        self.names = tuple(names)
        self.kinds = kinds
        self.mysql_raw = self.pk_raw = _NULL
        self.pk_set = frozenset(table_info.primary_key_columns)
        # Typed row structs decode ints and floats from their strings in C (strict=False). When
        # every column name can be an attribute, asdict() yields the row dict directly; otherwise
        # fields are renamed from c0, c1, … and rows are rebuilt from astuple().
        self.direct = all(_attribute_name(n) for n in names)
        try:
            self.full = self._decoder(names, kinds)
        except (TypeError, ValueError):
            self.direct = False  # a name msgspec refuses as an attribute: use c0, c1, …
            try:
                self.full = self._decoder(names, kinds)
            except (TypeError, ValueError):
                # msgspec refuses some names even as wire names ('\\', '"', control characters):
                # no typed fast path then, every image takes the general path.
                self.full = _NO_FAST_PATH
        self.old_partial = False
        self.convert = _converter(self)

    def _decoder(self, names: list[str], kinds: dict[str, int]) -> msgspec.json.Decoder[Any]:
        fields = [(name if self.direct else f"c{i}", _FIELD_TYPES.get(kinds[name], str | None),
                   msgspec.field(name=name)) for i, name in enumerate(names)]
        row_type = msgspec.defstruct("CanalRow", fields, forbid_unknown_fields=True)
        return msgspec.json.Decoder(list[row_type] | None, strict=False)  # type: ignore[valid-type]


# Accepts only null, so any image array fails validation and goes to the general path.
_NO_FAST_PATH: Final[msgspec.json.Decoder[Any]] = msgspec.json.Decoder(None)
_INSERT: Final = Op.INSERT
_UPDATE: Final = Op.UPDATE
_DELETE: Final = Op.DELETE
# Errors of the typed fast path that send a message to the Go-exact slow path (which then
# either decodes it, e.g. "01" as an integer, or raises DecodeError naming the bad value).
_FAST_PATH_ERRORS: Final = (msgspec.ValidationError, msgspec.DecodeError, UnicodeError, OverflowError,
                            struct.error, KeyError, DecodeError)
_IMAGES_DECODER: Final = msgspec.json.Decoder(list[dict[str, str | None]] | None)
# INIT: Alibaba Canal's snapshot (initial load) rows, which are inserts (Flink reads them so too).
_ROW_OPS: Final = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "INIT": Op.INSERT}
_asdict: Final = msgspec.structs.asdict
_astuple: Final = msgspec.structs.astuple
def _key_only_delete(row: Mapping[str, Value], pk_names: frozenset[str]) -> bool:
    """A DELETE image holding primary-key columns only: what delete-only-output-handle-key-columns sends.

    The wire does not mark such messages, so the decoder recognises them by their columns (a table
    whose every column is in its primary key is thereby flagged too: its full image is its key).
    """
    return bool(row) and bool(pk_names) and row.keys() <= pk_names


_CONVERT_STEPS: Final = {
    _K_UTF8: "        row[{n}] = value.encode()",
    _K_LATIN1: "        row[{n}] = value.encode('latin-1')",
    _K_F32: "        row[{n}] = unpack(pack(value))[0]",
    _K_UINT: "        if value > UINT64_MAX: raise OverflowError({n})",  # the slow path reports it
    _K_BIGINT: "        if value > UINT64_MAX: raise OverflowError({n})",
}


def _converter(header: _Header) -> Callable[[Any], Row]:
    """A function unrolled for one header: typed row struct → Row, converting only what needs it.

    Generated once per distinct header (the per-column renderers of the fast path); column names
    enter the source only as repr() literals.
    """
    lines = ["def convert(item):",
             "    row = asdict(item)" if header.direct else "    row = dict(zip(names, astuple(item)))"]
    for name in header.names:
        step = _CONVERT_STEPS.get(header.kinds[name])
        if step is not None:
            literal = repr(name)
            lines += [f"    value = row[{literal}]", "    if value is not None:", step.format(n=literal)]
    lines.append("    return Row(row)")
    namespace: dict[str, Any] = {"asdict": _asdict, "astuple": _astuple, "names": header.names, "Row": Row,
                                 "pack": _F32_PACK, "unpack": _F32_UNPACK, "UINT64_MAX": _UINT64_MAX}
    exec("\n".join(lines), namespace)  # the source holds column names only as repr() literals
    convert: Callable[[Any], Row] = namespace["convert"]
    return convert


# =========================================================================== decoder
class Decoder(BaseDecoder):
    """Canal-JSON decoder: rows, DDL and watermarks, in any key order (legacy messages included)."""

    PROTOCOL = PROTOCOL
    OPTIONS = OPTIONS

    def __init__(self, options: Any = None, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        # (database, table) → the header of its last message, checked by raw mysqlType/pkNames bytes;
        # then every raw variant seen; a semantic index lets variants that differ only in
        # mysqlType key order (a Go map) share one header.
        self._last: dict[tuple[str, str], _Header] = {}
        self._variants: dict[tuple[str, str, bytes], _Header] = {}
        self._semantic: dict[tuple[str, str, frozenset[tuple[str, str]], tuple[str, ...]], _Header] = {}
        # Non-TiCDC messages re-typed by _foreign_images: the last types per table (for columns
        # null throughout a message) and one TableInfo per distinct result.
        self._foreign_last: dict[tuple[str, str], dict[str, str]] = {}
        self._foreign_tables: dict[tuple[str, str, tuple[tuple[str, str], ...], tuple[str, ...]], TableInfo] = {}
        self._compression = self.options.large_message_handle_compression
        self._delete_handle_key_only = self.options.delete_only_output_handle_key_columns
        self._resolving = False

    # ------------------------------------------------------------------ entry
    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode one Kafka value (several newline-terminated messages allowed); DecodeError on bad input."""
        if not value:
            return []
        data = value if type(value) is bytes else bytes(value)
        if self._compression != "none":
            data = decompress(self._compression, data, PROTOCOL)
        try:
            envelope = _ENVELOPE_DECODER.decode(data)
        except _MSGSPEC_ERRORS as exc:
            if b"\n" in data:
                return self._decode_lines(data)
            raise _msgspec_error(exc, "$", data) from None
        return self._decode_envelope(envelope)

    def _decode_lines(self, data: bytes) -> list[Event]:
        # Storage-sink files terminate each message with "\n" or "\r\n" (the decoder's Terminator).
        events: list[Event] = []
        offset = 0
        for line in data.split(b"\n"):
            if line.strip():
                try:
                    envelope = _ENVELOPE_DECODER.decode(line)
                except _MSGSPEC_ERRORS as exc:
                    error = _msgspec_error(exc, "$", line)
                    at = offset + error.at if isinstance(error.at, int) else error.at
                    raise _error(error.reason, at) from None
                events.extend(self._decode_envelope(envelope))
            offset += len(line) + 1
        return events

    def _decode_envelope(self, envelope: _Envelope) -> list[Event]:
        tidb = envelope.tidb
        if tidb is not None and (tidb.commitTs or tidb.commit_ts_dev):
            # _tidb wins over "es" whenever present: es is not always commitTs >> 18 (real/README §6).
            commit_ts = tidb.commitTs or tidb.commit_ts_dev
            if commit_ts < 0 or commit_ts > _UINT64_MAX:
                raise _error(f"commitTs {commit_ts} out of range", "$._tidb.commitTs")
        else:
            # Without the extension only "es" (commitTs >> 18, milliseconds) is on the wire; for
            # Alibaba Canal es is the binlog event time in ms, so this is a TSO-shaped time too.
            commit_ts = (envelope.es or 0) << 18
            if commit_ts < 0 or commit_ts > _UINT64_MAX:
                raise _error(f"es {envelope.es} out of range", "$.es")
        if envelope.isDdl:
            query = envelope.sql or ""
            return [DDLEvent(query=query, ddl_type=ddl_action_type(envelope.type or "", query), commit_ts=commit_ts,
                             schema=envelope.database or "", table=envelope.table or "")]
        if envelope.type == _WATERMARK_TYPE:
            if tidb is None:
                raise _error("TIDB_WATERMARK message without _tidb", "$")
            watermark = tidb.watermarkTs or tidb.watermark_ts_dev
            if watermark < 0 or watermark > _UINT64_MAX:
                raise _error("watermarkTs out of range", "$._tidb.watermarkTs")
            return [Watermark(resolved_ts=watermark)]
        if (tidb is not None and tidb.claimCheckLocation and not tidb.onlyHandleKey and self.claim_check is not None
                and not self._resolving):
            return self._claim_check(tidb.claimCheckLocation)
        return self._decode_rows(envelope, commit_ts)

    def _claim_check(self, location: str) -> list[Event]:
        # assembleClaimCheckRowChangedEvent: the stored value is the original (compressed) message.
        assert self.claim_check is not None
        try:
            _, stored = self.claim_check.get(location)
        except DecodeError as exc:
            raise _error(f"claim-check location {location!r}: {exc.reason}", "$._tidb.claimCheckLocation") from None
        # The stored message is a full one; a location inside it is not followed again.
        self._resolving = True
        try:
            events = self.decode(stored)
        finally:
            self._resolving = False
        if not events or not all(isinstance(e, RowChange) for e in events):
            raise _error(f"claim-check message at {location} is not a row message", "$._tidb.claimCheckLocation")
        return [msgspec.structs.replace(e, claim_check_location=location) for e in cast(list[RowChange], events)]

    # ------------------------------------------------------------------ rows
    def _header(self, envelope: _Envelope, database: str, table: str) -> _Header:
        """The header of a message whose raw mysqlType/pkNames differ from its table's last one."""
        # Go iterates a map from a random starting slot, so one schema yields a bounded number of
        # mysqlType orders: remember each raw variant seen (pkNames compared as raw bytes).
        raw_key = (database, table, bytes(envelope.mysqlType))
        header = self._variants.get(raw_key)
        if header is not None and header.pk_raw == envelope.pkNames:
            return header
        header = self._parse_header(envelope, database, table)
        if len(self._variants) > 16384:
            self._variants.clear()
        self._variants[raw_key] = header
        if len(self._last) > 4096:
            self._last.clear()
        self._last[(database, table)] = header
        return header

    def _parse_header(self, envelope: _Envelope, database: str, table: str) -> _Header:
        """The header for a raw mysqlType/pkNames variant not seen before (parsed, then shared)."""
        try:
            mysql_types = _MYSQL_TYPES_DECODER.decode(envelope.mysqlType) or {}
        except _MSGSPEC_ERRORS as exc:
            raise _msgspec_error(exc, "$.mysqlType") from None
        try:
            pk_names = _PK_NAMES_DECODER.decode(envelope.pkNames) or []
        except _MSGSPEC_ERRORS as exc:
            raise _msgspec_error(exc, "$.pkNames") from None
        semantic_key = (database, table, frozenset(mysql_types.items()), tuple(pk_names))
        header = self._semantic.get(semantic_key)
        if header is None:
            try:
                sql_types = _SQL_TYPES_DECODER.decode(envelope.sqlType) or {}
            except _MSGSPEC_ERRORS as exc:
                raise _msgspec_error(exc, "$.sqlType") from None
            # Column order: sqlType follows table order (mysqlType is a Go map, random order).
            order = [n for n in sql_types if n in mysql_types]
            seen = set(order)
            order += [n for n in mysql_types if n not in seen]
            cc = self.options.content_compatible
            table_info = _table_info_from_header(database, table, order, mysql_types, pk_names, cc)
            header = _Header(table_info, order, {n: _value_kind(mysql_types[n]) for n in order})
            if len(self._semantic) > 1024:
                self._semantic.clear()
            self._semantic[semantic_key] = header
        header.mysql_raw = envelope.mysqlType
        header.pk_raw = envelope.pkNames
        return header

    def _images(self, header: _Header, raw: msgspec.Raw, path: str, partial: bool) -> list[Row] | None:
        """Decode ``data`` or ``old``: typed decode, Go-exact slow path on any surprise."""
        try:
            if partial:
                images = self._images_partial(header, raw)
                return None if images is None else [Row(image) for image in images]
            return self._images_full(header, header.full.decode(raw))
        except _FAST_PATH_ERRORS:
            return self._images_slow(header, raw, path)

    @staticmethod
    def _images_full(header: _Header, structs: list[Any] | None) -> list[Row] | None:
        return None if structs is None else [header.convert(item) for item in structs]

    @staticmethod
    def _images_partial(header: _Header, raw: msgspec.Raw) -> list[dict[str, Value]] | None:
        # Partial images (only-output-updated-columns "old") hold a few columns: decode them as
        # plain string maps and convert just the columns present (unknown names raise KeyError).
        images: list[dict[str, Any]] | None = _IMAGES_DECODER.decode(raw)
        if images is None:
            return None
        kinds = header.kinds
        for image in images:
            for name, value in image.items():
                kind = kinds[name]
                if value is None or kind == _K_STR:
                    continue
                if kind == _K_UTF8:
                    image[name] = value.encode()
                elif _K_INT <= kind <= _K_BIGINT and len(value) < 19 and value.isdigit() and value.isascii():
                    image[name] = int(value)  # plain digits below 10**18: in range for every integer kind
                else:
                    image[name] = _parse_value(kind, value, "")
        return images

    def _images_slow(self, header: _Header, raw: msgspec.Raw, path: str) -> list[Row] | None:
        images = _json_images(raw, path)
        if images is None:
            return None
        rows = []
        for i, image in enumerate(images):
            row: dict[str, Value] = {}
            for name, raw_value in image.items():
                at = f"{path}[{i}].{name}"
                kind = header.kinds.get(name)
                if kind is None:
                    raise _error(f"column {name!r} has no mysqlType", at)
                row[name] = _parse_value(kind, raw_value, at)
            rows.append(Row(row))
        return rows

    def _decode_rows(self, envelope: _Envelope, commit_ts: int) -> list[Event]:
        kind = envelope.type
        op = _ROW_OPS.get(kind or "")
        if op is None:
            raise _error(f"unknown row message type {kind!r}", "$.type")
        schema = envelope.database or ""
        table = envelope.table or ""
        header = self._last.get((schema, table))
        if header is None or header.mysql_raw != envelope.mysqlType or header.pk_raw != envelope.pkNames:
            header = self._header(envelope, schema, table)
        table_info = header.table_info
        pk_set = header.pk_set
        # Fast path: typed decode of the images; anything unexpected takes the general path.
        # (No comprehensions here: in CPython 3.11 each one is a function call.)
        data: list[Row] | None = None
        old: list[Row] | list[dict[str, Value]] | None = None
        try:
            structs = header.full.decode(envelope.data)
            if structs:
                convert = header.convert
                data = [convert(structs[0])]
                for item in structs[1:]:
                    data.append(convert(item))
            if op is _UPDATE:
                if header.old_partial:
                    old = self._images_partial(header, envelope.old)
                else:
                    structs = header.full.decode(envelope.old)
                    if structs is not None:
                        full_old: list[Row] = []
                        for item in structs:
                            full_old.append(header.convert(item))
                        old = full_old
        except _FAST_PATH_ERRORS:
            try:
                data = self._images(header, envelope.data, "$.data", False)
                if op is _UPDATE:
                    old = self._old_images(header, envelope.old)
            except DecodeError:
                # TiCDC (id 0 or _tidb) stays strict; other producers get their types re-derived.
                if envelope.tidb is not None or envelope.id == 0:
                    raise
                table_info, pk_set, data, old = self._foreign_images(envelope, schema, table, op)
        if not data:
            raise _error(f"{kind} message without data", "$.data")
        tidb = envelope.tidb
        handle_key_only = False
        location = None
        if tidb is not None:
            handle_key_only = tidb.onlyHandleKey or bool(tidb.claimCheckLocation)
            location = tidb.claimCheckLocation or None
        changes: list[Event] = []
        if op is _INSERT:
            for row in data:
                changes.append(RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, columns=row,
                                         table_info=table_info, handle_key_only=handle_key_only,
                                         claim_check_location=location))
            return changes
        if op is _DELETE:
            handle_key_only = handle_key_only or self._delete_handle_key_only
            for row in data:
                changes.append(RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, pre_columns=row,
                                         table_info=table_info,
                                         handle_key_only=handle_key_only or _key_only_delete(row, pk_set),
                                         claim_check_location=location))
            return changes
        if old is not None and len(old) != len(data):
            raise _error(f"{len(old)} old images for {len(data)} data images", "$.old")
        for i, row in enumerate(data):
            pre = old[i] if old is not None else None
            # canalJSONMessage2RowChange: columns missing from "old" (only-output-updated-columns)
            # are unchanged, so the pre-image is the post-image overlaid with "old".
            if pre is None or len(pre) < len(row):
                merged = Row(row)
                if pre:
                    dict.update(merged, pre)
                pre = merged
            elif type(pre) is not Row:
                pre = Row(pre)
            changes.append(RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, columns=row,
                                     pre_columns=pre, table_info=table_info, handle_key_only=handle_key_only,
                                     claim_check_location=location))
        return changes

    def _foreign_images(self, envelope: _Envelope, schema: str, table: str, op: Op
                        ) -> tuple[TableInfo, frozenset[str], list[Row] | None, list[Row] | None]:
        """Table info and images of a non-TiCDC message whose values do not all fit its header.

        Alibaba Canal, Flink and Paimon messages may lack ``mysqlType`` (Flink's encoder), carry
        columns it does not list (Flink's canal-data-with-init.txt) or values it contradicts (a
        hand-edited ``"A101"`` under ``int(11)``). Each column keeps its declared type when every
        value of the message parses under it; otherwise it is typed by its JSON values
        (``_json_column_type``). TiCDC's own messages never come here: they stay strict.
        """
        data = _json_images(envelope.data, "$.data")
        old = _json_images(envelope.old, "$.old") if op is _UPDATE else None
        try:
            declared = _MYSQL_TYPES_DECODER.decode(envelope.mysqlType) or {}
            sql_types = _SQL_TYPES_DECODER.decode(envelope.sqlType) or {}
            pk_names = _PK_NAMES_DECODER.decode(envelope.pkNames) or []
        except _MSGSPEC_ERRORS as exc:
            raise _msgspec_error(exc, "$") from None
        # Column order: sqlType (table order), then mysqlType, then as the images name them.
        order = [n for n in sql_types if n in declared]
        order += [n for n in declared if n not in sql_types]
        known = set(order)
        located = [(f"$.data[{i}]", image) for i, image in enumerate(data or ())]
        located += [(f"$.old[{i}]", image) for i, image in enumerate(old or ())]
        for _, image in located:
            for name in image:
                if name not in known:
                    known.add(name)
                    order.append(name)
        previous = self._foreign_last.get((schema, table), {})
        types: dict[str, str] = {}
        for name in order:
            values = [(f"{at}.{name}", image[name]) for at, image in located if name in image]
            declared_type = declared.get(name)
            if declared_type is not None and (_fits(_value_kind(declared_type), values)
                                              or _enum_set_values(name, declared_type, values, located)):
                types[name] = declared_type
            else:
                types[name] = _json_column_type(name, values, previous.get(name))
        if len(self._foreign_last) > 4096:
            self._foreign_last.clear()
        self._foreign_last[(schema, table)] = types
        key = (schema, table, tuple(types.items()), tuple(pk_names))
        table_info = self._foreign_tables.get(key)
        if table_info is None:
            table_info = _table_info_from_header(schema, table, order, types, pk_names,
                                                 self.options.content_compatible)
            if len(self._foreign_tables) > 1024:
                self._foreign_tables.clear()
            self._foreign_tables[key] = table_info
        kinds = {name: _value_kind(text) for name, text in types.items()}
        return (table_info, frozenset(table_info.primary_key_columns), _typed_rows(data, kinds, "$.data"),
                _typed_rows(old, kinds, "$.old"))

    def _old_images(self, header: _Header, raw: msgspec.Raw) -> list[Row] | None:
        if not header.old_partial:
            try:
                structs = header.full.decode(raw)
            except msgspec.ValidationError:
                header.old_partial = True  # only-output-updated-columns: try partial images first from now on
            except (msgspec.DecodeError, UnicodeDecodeError):
                return self._images_slow(header, raw, "$.old")
            else:
                try:
                    return self._images_full(header, structs)
                except (UnicodeEncodeError, OverflowError, struct.error):
                    return self._images_slow(header, raw, "$.old")
        return self._images(header, raw, "$.old", True)


# =========================================================================== other producers
def _json_images(raw: msgspec.Raw, path: str) -> list[dict[str, Any]] | None:
    """``data``/``old`` as parsed JSON: null or an array of objects (else DecodeError at ``path``)."""
    try:
        images = orjson.loads(bytes(raw))
    except orjson.JSONDecodeError as exc:
        raise _error(f"malformed JSON: {exc}", path) from None
    if images is None:
        return None
    if not isinstance(images, list):
        raise _error("expected an array of row objects", path)
    for i, image in enumerate(images):
        if not isinstance(image, dict):
            raise _error("expected a row object", f"{path}[{i}]")
    return images


def _fits(kind: int, values: list[tuple[str, Any]]) -> bool:
    """Whether every value parses under a declared mysqlType's kind (objects and arrays never do)."""
    for at, value in values:
        if isinstance(value, (dict, list)):
            return False
        try:
            _parse_value(kind, value, at)
        except DecodeError:
            return False
    return True


def _enum_set_values(name: str, mysql_type_text: str, values: list[tuple[str, Any]],
                     located: list[tuple[str, dict[str, Any]]]) -> bool:
    """ENUM/SET values written as element text (``"b"``, ``"a,c"``) instead of index/bitmask.

    Alibaba Canal writes the text when it knows the elements; TiCDC always writes the number. When
    the declared type lists the elements (``enum('a','b')``) and every value names elements, the
    images are rewritten in place to the index (1-based) or bitmask, and True is returned.
    """
    elems = column_from_mysql_type(name, mysql_type_text).elems
    if not elems:
        return False
    is_set = _basic_type_code(mysql_type_text) == 248
    positions = {elem: i for i, elem in enumerate(elems)}
    numbers: list[int] = []
    for _, value in values:
        if value is None:
            continue
        if not isinstance(value, str):
            return False
        if not is_set and value == "":
            numbers.append(0)  # MySQL's invalid ENUM value '' has index 0
            continue
        names = (value.split(",") if value else []) if is_set else [value]
        if not all(n in positions for n in names):
            return False
        numbers.append(sum(1 << positions[n] for n in names) if is_set else positions[value] + 1)
    found = iter(numbers)
    for _, image in located:
        if name in image and image[name] is not None:
            image[name] = str(next(found))
    return True


def _json_column_type(name: str, values: list[tuple[str, Any]], previous: str | None) -> str:
    """The mysqlType a column without a usable one gets from its JSON values.

    Strings → ``varchar`` (bytes, like Canal's text columns); integers → ``bigint`` (``bigint
    unsigned`` above int64); numbers with a fraction → ``double``; booleans → ``tinyint(1)``;
    objects/arrays (with strings) → ``json`` (the compact JSON text). A column that is null
    throughout keeps the table's previous type for it, else ``varchar``. Mixing other JSON kinds
    in one column is a DecodeError.
    """
    seen: set[str] = set()
    big = False
    for at, value in values:
        if value is None:
            continue
        if isinstance(value, bool):
            seen.add("bool")
        elif isinstance(value, int):
            seen.add("int")
            big = big or value > _INT64_MAX
        elif isinstance(value, float):
            seen.add("float")
        elif isinstance(value, str):
            seen.add("str")
        else:
            seen.add("json")
        if len(seen) > 1 and not (seen <= {"int", "float"} or seen <= {"json", "str"}):
            raise _error(f"column {name!r} mixes JSON {' and '.join(sorted(seen))} values and has no usable "
                         "mysqlType", at)
    if not seen:
        return previous or "varchar"
    if seen == {"bool"}:
        return "tinyint(1)"
    if seen == {"int"}:
        return "bigint unsigned" if big else "bigint"
    if seen <= {"int", "float"}:
        return "double"
    if seen == {"str"}:
        return "varchar"
    return "json"


def _typed_rows(images: list[dict[str, Any]] | None, kinds: Mapping[str, int], path: str) -> list[Row] | None:
    """Images converted by their columns' kinds (objects/arrays of json columns → compact JSON text)."""
    if images is None:
        return None
    rows = []
    for i, image in enumerate(images):
        row: dict[str, Value] = {}
        for name, value in image.items():
            if isinstance(value, (dict, list)):
                value = orjson.dumps(value).decode()
            row[name] = _parse_value(kinds[name], value, f"{path}[{i}].{name}")
        rows.append(Row(row))
    return rows


# =========================================================================== module API
def encode(events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode events with a one-shot Encoder."""
    return Encoder(options).encode(events)


def decode(value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one Kafka message with a one-shot Decoder."""
    return Decoder(options).decode(value, key)


def _loads(value: bytes) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise _error(f"not JSON: {exc}", exc.pos) from None


def explain(value: bytes | None, key: bytes | None = None) -> dict[str, Any]:
    """The parsed JSON envelope of a message (lz4/snappy-compressed values are detected)."""
    if not value:
        raise _error("empty message", 0)
    data = bytes(value)
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        for method in ("lz4", "snappy"):
            try:
                return explain(decompress(method, data, PROTOCOL))
            except DecodeError:
                continue
        if b"\n" in data:
            return {"messages": [_loads(line) for line in data.split(b"\n") if line.strip()]}
        raise _error(f"not JSON: {exc}", exc.pos) from None
    if not isinstance(parsed, dict):
        raise _error("a Canal-JSON message is a JSON object", "$")
    return parsed
