"""MySQL type names as TiDB prints them (``parser/types/etc.go:TypeToStr``)."""

from __future__ import annotations

from typing import Final

from pyticdc.model import BLOB_TYPES, ColumnInfo

__all__ = ["TYPE_NAMES", "column_type_name", "type_to_str"]

#: TiDB ``type2Str``: type code → name for a non-binary charset.
TYPE_NAMES: Final[dict[int, str]] = {
    16: "bit", 252: "text", 10: "date", 12: "datetime", 0: "unspecified", 246: "decimal",
    5: "double", 247: "enum", 4: "float", 255: "geometry", 9: "mediumint", 245: "json",
    3: "int", 8: "bigint", 251: "longtext", 250: "mediumtext", 6: "null", 248: "set",
    2: "smallint", 254: "char", 11: "time", 7: "timestamp", 1: "tinyint", 249: "tinytext",
    15: "varchar", 253: "var_string", 13: "year", 225: "vector", 14: "date",
}


def type_to_str(type_code: int, charset: str) -> str:
    """TiDB ``TypeToStr(tp, charset)``: ``text``→``blob``, ``char``→``binary`` for binary charset."""
    name = TYPE_NAMES.get(type_code, "")
    if charset != "binary":
        return name
    if type_code in BLOB_TYPES:
        return name.replace("text", "blob", 1)
    if type_code in (254, 15):  # IsTypeChar: TypeString, TypeVarchar
        return name.replace("char", "binary", 1)
    return name


def column_type_name(column: ColumnInfo) -> str:
    """``type_to_str`` of a column."""
    return type_to_str(column.type_code, column.charset)
