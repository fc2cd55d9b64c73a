"""MySQL and TiDB facts, written once: type codes and names, column flags, the SQL tokenizer.

``types``: named type-code sets, ``TypeToStr``/``StrToType`` and the column-type-text parser;
``flags``: TiCDC's column flags and row handle; ``sql``: a MySQL tokenizer and the DDL shapes
codecs and the replica read.
"""

from __future__ import annotations

from pyticdc.mysql.flags import column_flags, handle_index_columns, table_info_with_flags
from pyticdc.mysql.types import (
    ALWAYS_UNSIGNED_TYPES,
    BLOB_TYPES,
    CHAR_TYPES,
    DATE_TIME_TYPES,
    DECIMAL_TYPES,
    DEFAULT_FLEN_DECIMAL,
    ENUM_SET_TYPES,
    FLOAT_TYPES,
    FRACTIONAL_TIME_TYPES,
    INTEGER_OR_YEAR_TYPES,
    INTEGER_TYPES,
    STR_TO_TYPE,
    STRING_TYPES,
    TEXT_VALUE_TYPES,
    TYPE_NAMES,
    TYPE_SYNONYMS,
    UINT64_TYPES,
    ColumnType,
    column_type_name,
    parse_column_type,
    parse_type_name,
    str_to_type,
    type_to_str,
)

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
    "column_flags",
    "column_type_name",
    "handle_index_columns",
    "parse_column_type",
    "parse_type_name",
    "str_to_type",
    "table_info_with_flags",
    "type_to_str",
]
