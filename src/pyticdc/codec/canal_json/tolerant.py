"""Tolerant reading of Canal JSON from other producers: Alibaba Canal, Flink, Paimon.

Their messages may lack ``mysqlType`` (Flink's encoder), carry columns it does not list (Flink's
canal-data-with-init.txt), values it contradicts (a hand-edited ``"A101"`` under ``int(11)``),
ENUM/SET element text instead of numbers, or typed JSON numbers and booleans. A message that is
not TiCDC's (no ``_tidb`` and ``id`` absent or non-zero) and whose values do not fit its header
is re-typed column by column here; TiCDC's own messages stay strict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from pyticdc.codec.canal_json.message import (
    INT64_MAX,
    MSGSPEC_ERRORS,
    MYSQL_TYPES_DECODER,
    PK_NAMES_DECODER,
    SQL_TYPES_DECODER,
    Envelope,
    Images,
    column_from_mysql_type,
    decode_error,
    msgspec_error,
    read_images,
    table_info_from_header,
    value_kind,
)
from pyticdc.codec.canal_json.values import parse_value
from pyticdc.errors import DecodeError
from pyticdc.model import Op, Row, TableInfo, TypeCode, Value

__all__ = ["ForeignTypes", "json_column_type"]


class ForeignTypes:
    """The column types of non-TiCDC messages, remembered per table across messages."""

    def __init__(self, content_compatible: bool) -> None:
        self._content_compatible = content_compatible
        # The last types per table (for columns null throughout a message) and one TableInfo per
        # distinct result.
        self._last: dict[tuple[str, str], dict[str, str]] = {}
        self._tables: dict[tuple[str, str, tuple[tuple[str, str], ...], tuple[str, ...]], TableInfo] = {}

    def images(self, envelope: Envelope, op: Op) -> Images:
        """Table info and images of a non-TiCDC message whose values do not all fit its header.

        Each column keeps its declared type when every value of the message parses under it;
        otherwise it is typed by its JSON values (``json_column_type``).
        """
        schema = envelope.database or ""
        table = envelope.table or ""
        data = read_images(envelope.data, "$.data")
        old = read_images(envelope.old, "$.old") if op is Op.UPDATE else None
        try:
            declared = MYSQL_TYPES_DECODER.decode(envelope.mysqlType) or {}
            sql_types = SQL_TYPES_DECODER.decode(envelope.sqlType) or {}
            pk_names = PK_NAMES_DECODER.decode(envelope.pkNames) or []
        except MSGSPEC_ERRORS as exc:
            raise msgspec_error(exc, "$") from None
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
        previous = self._last.get((schema, table), {})
        types: dict[str, str] = {}
        for name in order:
            values = [(f"{at}.{name}", image[name]) for at, image in located if name in image]
            declared_type = declared.get(name)
            if declared_type is not None and (_fits(value_kind(declared_type), values)
                                              or _enum_set_values(name, declared_type, values, located)):
                types[name] = declared_type
            else:
                types[name] = json_column_type(name, values, previous.get(name))
        if len(self._last) > 4096:
            self._last.clear()
        self._last[(schema, table)] = types
        key = (schema, table, tuple(types.items()), tuple(pk_names))
        table_info = self._tables.get(key)
        if table_info is None:
            table_info = table_info_from_header(schema, table, order, types, pk_names, self._content_compatible)
            if len(self._tables) > 1024:
                self._tables.clear()
            self._tables[key] = table_info
        kinds = {name: value_kind(text) for name, text in types.items()}
        return (table_info, frozenset(table_info.primary_key_columns), _typed_rows(data, kinds, "$.data"),
                      _typed_rows(old, kinds, "$.old"))


def _fits(kind: int, values: list[tuple[str, Any]]) -> bool:
    """Whether every value parses under a declared mysqlType's kind (objects and arrays never do)."""
    for at, value in values:
        if isinstance(value, (dict, list)):
            return False
        try:
            parse_value(kind, value, at)
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
    column = column_from_mysql_type(name, mysql_type_text)
    elems = column.elems
    if not elems:
        return False
    is_set = column.type_code == TypeCode.SET
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


def json_column_type(name: str, values: list[tuple[str, Any]], previous: str | None) -> str:
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
            big = big or value > INT64_MAX
        elif isinstance(value, float):
            seen.add("float")
        elif isinstance(value, str):
            seen.add("str")
        else:
            seen.add("json")
        if len(seen) > 1 and not (seen <= {"int", "float"} or seen <= {"json", "str"}):
            raise decode_error(f"column {name!r} mixes JSON {' and '.join(sorted(seen))} values and has no "
                               "usable mysqlType", at)
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
            row[name] = parse_value(kinds[name], value, f"{path}[{i}].{name}")
        rows.append(Row(row))
    return rows
