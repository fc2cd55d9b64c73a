"""MySQL/TiDB column types: named type-code sets, type names, and the one column-type-text parser.

Every set is built from ``TypeCode``; codecs, the simulator and the replica name these sets
instead of writing raw codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from pyticdc.model import ColumnInfo, TypeCode

__all__ = [
    "ALWAYS_UNSIGNED_TYPES",
    "BLOB_TYPES",
    "CHAR_TYPES",
    "DATE_TIME_TYPES",
    "DECIMAL_TYPES",
    "DEFAULT_FLEN_DECIMAL",
    "ENUM_SET_TYPES",
    "FLOAT_TYPES",
    "FRACTIONAL_TIME_TYPES",
    "INTEGER_OR_YEAR_TYPES",
    "INTEGER_TYPES",
    "STRING_TYPES",
    "STR_TO_TYPE",
    "TEXT_VALUE_TYPES",
    "TYPE_NAMES",
    "TYPE_SYNONYMS",
    "UINT64_TYPES",
    "ColumnType",
    "column_type_name",
    "parse_column_type",
    "parse_type_name",
    "str_to_type",
    "type_to_str",
]

T = TypeCode

#: Integer types (TINYINT..BIGINT, MEDIUMINT).
INTEGER_TYPES: Final = frozenset({T.TINY, T.SHORT, T.LONG, T.LONGLONG, T.INT24})
#: Integer types and YEAR: the types TiDB formats with ParseInt/ParseUint.
INTEGER_OR_YEAR_TYPES: Final = INTEGER_TYPES | {T.YEAR}
#: BIT, ENUM, SET: a uint64 in TiCDC's row model (bit value, 1-based index, bitmask).
UINT64_TYPES: Final = frozenset({T.BIT, T.ENUM, T.SET})
#: ENUM and SET.
ENUM_SET_TYPES: Final = frozenset({T.ENUM, T.SET})
#: FLOAT and DOUBLE.
FLOAT_TYPES: Final = frozenset({T.FLOAT, T.DOUBLE})
#: CHAR/VARCHAR/BINARY/VARBINARY (``types.IsTypeChar`` and VAR_STRING).
CHAR_TYPES: Final = frozenset({T.VARCHAR, T.VAR_STRING, T.STRING})
#: TINYBLOB..LONGBLOB and the TEXT types (same codes; the charset tells them apart).
BLOB_TYPES: Final = frozenset({T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB})
#: Types whose model value is ``bytes``: every CHAR, BINARY, TEXT and BLOB type.
STRING_TYPES: Final = CHAR_TYPES | BLOB_TYPES
#: Types whose model value is the ``str`` TiDB prints (date/time, DECIMAL, JSON, VECTOR).
TEXT_VALUE_TYPES: Final = frozenset({
    T.DECIMAL_OLD, T.TIMESTAMP, T.DATE, T.TIME, T.DATETIME, T.NEWDATE, T.TIDB_VECTOR, T.JSON, T.NEWDECIMAL,
})
#: DATE, DATETIME, TIMESTAMP (and NEWDATE).
DATE_TIME_TYPES: Final = frozenset({T.DATE, T.DATETIME, T.TIMESTAMP, T.NEWDATE})
#: Types whose ``decimal`` is a fractional-seconds precision: DATETIME, TIMESTAMP, TIME.
FRACTIONAL_TIME_TYPES: Final = frozenset({T.DATETIME, T.TIMESTAMP, T.TIME})
#: DECIMAL and the pre-5.0 DECIMAL code.
DECIMAL_TYPES: Final = frozenset({T.NEWDECIMAL, T.DECIMAL_OLD})
#: YEAR and BIT: TiDB gives them the Unsigned flag whatever the DDL says (reference §1.2).
ALWAYS_UNSIGNED_TYPES: Final = frozenset({T.YEAR, T.BIT})

#: TiDB ``type2Str``: type code → name for a non-binary charset (``parser/types/etc.go``).
TYPE_NAMES: Final[dict[int, str]] = {
    16: "bit", 252: "text", 10: "date", 12: "datetime", 0: "unspecified", 246: "decimal",
    5: "double", 247: "enum", 4: "float", 255: "geometry", 9: "mediumint", 245: "json",
    3: "int", 8: "bigint", 251: "longtext", 250: "mediumtext", 6: "null", 248: "set",
    2: "smallint", 254: "char", 11: "time", 7: "timestamp", 1: "tinyint", 249: "tinytext",
    15: "varchar", 253: "var_string", 13: "year", 225: "vector", 14: "date",
}

#: TiDB ``str2Type``: the inverse of ``TYPE_NAMES`` for a text charset.
STR_TO_TYPE: Final[dict[str, int]] = {
    "bit": 16, "text": 252, "date": 10, "datetime": 12, "unspecified": 0, "decimal": 246, "double": 5,
    "enum": 247, "float": 4, "geometry": 255, "vector": 225, "mediumint": 9, "json": 245, "int": 3,
    "bigint": 8, "longtext": 251, "mediumtext": 250, "null": 6, "set": 248, "smallint": 2, "char": 254,
    "time": 11, "timestamp": 7, "tinyint": 1, "tinytext": 249, "varchar": 15, "var_string": 253, "year": 13,
}

#: MySQL's type aliases, mapped to the type MySQL stores (DDL text and Alibaba Canal use them;
#: TiCDC writes only the canonical names).
TYPE_SYNONYMS: Final[dict[str, str]] = {
    "integer": "int", "int1": "tinyint", "int2": "smallint", "int3": "mediumint", "middleint": "mediumint",
    "int4": "int", "int8": "bigint", "bool": "tinyint", "boolean": "tinyint", "serial": "bigint",
    "real": "double", "float4": "float", "float8": "double", "numeric": "decimal", "fixed": "decimal",
    "dec": "decimal", "character": "char", "nchar": "char", "nvarchar": "varchar", "point": "geometry",
    "linestring": "geometry", "polygon": "geometry", "multipoint": "geometry", "multilinestring": "geometry",
    "multipolygon": "geometry", "geometrycollection": "geometry", "geomcollection": "geometry",
}


def str_to_type(name: str) -> int:
    """TiDB ``types.StrToType``: ``blob``→``text``, ``binary``→``char`` first; unknown → 0."""
    return STR_TO_TYPE.get(name.replace("blob", "text", 1).replace("binary", "char", 1), 0)


def type_to_str(type_code: int, charset: str) -> str:
    """TiDB ``TypeToStr(tp, charset)``: ``text``→``blob``, ``char``→``binary`` for binary charset."""
    name = TYPE_NAMES.get(type_code, "")
    if charset != "binary":
        return name
    if type_code in BLOB_TYPES:
        return name.replace("text", "blob", 1)
    if type_code in (T.STRING, T.VARCHAR):  # IsTypeChar
        return name.replace("char", "binary", 1)
    return name


def column_type_name(column: ColumnInfo) -> str:
    """``type_to_str`` of a column."""
    return type_to_str(column.type_code, column.charset)


@dataclass(frozen=True)
class ColumnType:
    """What a column-type text (``int(11) unsigned``, ``enum('a','b')``, ``varbinary(8)``) says."""

    #: The type word as written, lower-case (``integer``, ``varbinary``); before synonym mapping.
    word: str
    #: The type code (0, ``unspecified``, for an unknown word).
    type_code: int
    #: Whether the type is a binary one (BINARY, VARBINARY, *BLOB; spatial types carry WKB bytes).
    binary: bool
    unsigned: bool
    zerofill: bool
    #: Display width or length; -1 when not written.
    flen: int
    #: Scale (DECIMAL, FLOAT, DOUBLE) or fractional-seconds precision (TIME, DATETIME, TIMESTAMP); -1 when not written.
    decimal: int
    #: ENUM/SET members, unquoted; None for other types.
    elems: tuple[str, ...] | None


_WORD: Final = re.compile(r"[^( ]*")
_PARENS: Final = re.compile(r"\(([^)]*)\)")
_ELEMS: Final = re.compile(r"'((?:[^']|'')*)'")
_ELEM_ESCAPES: Final = {"''": "'", "\\0": "\0", "\\n": "\n", "\\r": "\r"}


def parse_column_type(text: str) -> ColumnType:
    """Parse a MySQL column-type text as TiDB prints it (``GetTypeDesc``) or as DDL writes it."""
    lower = text.lower().strip()
    match = _WORD.match(lower)
    word = match.group(0) if match else ""
    canonical = TYPE_SYNONYMS.get(word, word)
    code = str_to_type(canonical)
    binary = "blob" in lower or "binary" in lower or canonical == "geometry"
    flen = 1 if word in ("bool", "boolean") else -1  # MySQL's BOOL is TINYINT(1)
    decimal = -1
    elems: tuple[str, ...] | None = None
    inner = _PARENS.search(text)
    if code in ENUM_SET_TYPES:
        elems = tuple(
            re.sub(r"''|\\0|\\n|\\r", lambda m: _ELEM_ESCAPES[m.group(0)], e) for e in _ELEMS.findall(inner.group(1))
        ) if inner else ()
    elif inner:
        numbers = [p.strip() for p in inner.group(1).split(",")]
        # Lengths are small; a longer digit run is not one (and int() refuses > 4300 digits).
        if all(p.isascii() and p.isdigit() and len(p) <= 18 for p in numbers):
            if code in FRACTIONAL_TIME_TYPES:
                decimal = int(numbers[0])
            else:
                flen = int(numbers[0])
                if len(numbers) > 1:
                    decimal = int(numbers[1])
    words = lower.split()
    zerofill = "zerofill" in words[1:]
    unsigned = "unsigned" in words[1:] or zerofill or word == "serial"  # SERIAL is BIGINT UNSIGNED
    return ColumnType(
        word=word, type_code=code, binary=binary, unsigned=unsigned, zerofill=zerofill, flen=flen, decimal=decimal,
        elems=elems,
    )


#: TiDB ``mysql.GetDefaultFieldLengthAndDecimal``: (flen, decimal) per type code.
DEFAULT_FLEN_DECIMAL: Final[dict[int, tuple[int, int]]] = {
    T.BIT: (1, 0), T.TINY: (4, 0), T.SHORT: (6, 0), T.INT24: (9, 0), T.LONG: (11, 0), T.LONGLONG: (20, 0),
    T.DOUBLE: (22, -1), T.FLOAT: (12, -1), T.NEWDECIMAL: (10, 0), T.TIME: (10, 0), T.DATE: (10, 0),
    T.TIMESTAMP: (19, 0), T.DATETIME: (19, 0), T.YEAR: (4, 0), T.STRING: (1, 0), T.VARCHAR: (5, 0),
    T.VAR_STRING: (5, 0), T.TINY_BLOB: (255, 0), T.BLOB: (65535, 0), T.MEDIUM_BLOB: (16777215, 0),
    T.LONG_BLOB: (4294967295, 0), T.JSON: (4294967295, 0), T.NULL: (0, 0), T.SET: (-1, 0), T.ENUM: (-1, 0),
}


def parse_type_name(name: str) -> tuple[int, bool, bool, bool] | None:
    """(type code, binary charset, unsigned, zerofill) of a TiDB type name (``INT UNSIGNED``); None if unknown.

    The name is ``TypeToStr``'s word without a width; every type but the text ones (CHAR, VARCHAR,
    TEXT, ENUM, SET) has the binary charset.
    """
    words = name.strip().lower().split()
    if not words:
        return None
    word = words[0]
    code = STR_TO_TYPE.get(word.replace("blob", "text", 1).replace("binary", "char", 1))
    if code is None:
        return None
    binary = "blob" in word or "binary" in word or code not in STRING_TYPES | ENUM_SET_TYPES
    zerofill = "zerofill" in words[1:]
    unsigned = "unsigned" in words[1:] or zerofill
    return code, binary, unsigned, zerofill
