"""Vector adapter for ``dispatch.json`` (``kind: partition_dispatch``): hash, ColumnValueString, dispatchers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from pyticdc.errors import PyticdcError
from pyticdc.model import ColumnFlag, ColumnInfo, IndexInfo, Op, RowChange, TableInfo, TypeCode, make_row
from pyticdc.routing.dispatch import PositionInertia, column_value_string, make_partition_dispatcher
from pyticdc.vectors.inputs import table_from_vector, value_from_vector

__all__ = ["check_case", "row_from_case"]

#: Type names a case may give for a bare value or a column (``"type": "float"``).
_TYPE_NAMES: Final = {
    "tinyint": TypeCode.TINY, "smallint": TypeCode.SHORT, "mediumint": TypeCode.INT24, "int": TypeCode.LONG,
    "bigint": TypeCode.LONGLONG, "float": TypeCode.FLOAT, "double": TypeCode.DOUBLE, "decimal": TypeCode.NEWDECIMAL,
    "varchar": TypeCode.VARCHAR, "char": TypeCode.STRING, "binary": TypeCode.STRING, "varbinary": TypeCode.VARCHAR,
    "blob": TypeCode.BLOB, "text": TypeCode.BLOB, "date": TypeCode.DATE, "datetime": TypeCode.DATETIME,
    "timestamp": TypeCode.TIMESTAMP, "time": TypeCode.TIME, "year": TypeCode.YEAR, "json": TypeCode.JSON,
    "bit": TypeCode.BIT, "enum": TypeCode.ENUM, "set": TypeCode.SET,
}


def _type_code(spec: Any) -> int | None:
    if spec is None:
        return None
    if isinstance(spec, int):
        return spec
    name = str(spec).lower().split("(")[0].split()[0]
    return int(_TYPE_NAMES[name]) if name in _TYPE_NAMES else None


def _inferred_type(value: Any) -> int:
    if isinstance(value, bool) or isinstance(value, int):
        return int(TypeCode.LONGLONG)
    if isinstance(value, float):
        return int(TypeCode.DOUBLE)
    return int(TypeCode.VARCHAR)


def _table_from_case(inp: dict[str, Any]) -> TableInfo:
    if isinstance(inp.get("table"), dict):
        return table_from_vector(inp["table"])
    images: list[dict[str, Any]] = [
        inp[k] for k in ("row", "columns", "pre_row", "pre_columns") if isinstance(inp.get(k), dict)
    ]
    names: dict[str, Any] = {}
    for image in images:
        for name, value in image.items():
            names.setdefault(name, value)
    handle = set(inp.get("handle_key_columns") or ())
    for name in handle:
        names.setdefault(name, None)
    types = {k: _type_code(v) for k, v in (inp.get("column_types") or {}).items()}
    columns = []
    for name, sample in names.items():
        flags = ColumnFlag.HANDLE_KEY if name in handle else 0
        type_code = types.get(name) or _inferred_type(sample)
        columns.append(ColumnInfo(name=name, type_code=type_code, flags=int(flags)))
    indexes = [
        IndexInfo(name=i["name"], columns=tuple(i["columns"]), primary=bool(i.get("primary")),
                  unique=bool(i.get("unique", True)))
        for i in inp.get("indexes") or ()
    ]
    if inp.get("index_name") and inp.get("index_columns"):
        indexes.append(IndexInfo(name=inp["index_name"], columns=tuple(inp["index_columns"]), unique=True))
    return TableInfo(
        schema=inp.get("schema", ""), table=inp.get("table", "") if isinstance(inp.get("table"), str) else "",
        columns=tuple(columns), indexes=tuple(indexes),
    )


def row_from_case(inp: dict[str, Any]) -> RowChange:
    """The RowChange a dispatch case describes (post-image ``row``, or a pre-image for deletes)."""
    table = _table_from_case(inp)

    def image(key: str) -> Any:
        raw = inp.get(key)
        if not isinstance(raw, dict):
            return None
        return make_row({name: value_from_vector(v, table.column(name)) for name, v in raw.items()})

    post = image("row") if "row" in inp else image("columns")
    pre = image("pre_row") if "pre_row" in inp else image("pre_columns")
    op = Op(inp["op"]) if inp.get("op") else None
    if op == Op.DELETE and pre is None:
        post, pre = None, post
    if op is None:
        op = Op.UPDATE if post and pre else (Op.DELETE if pre else Op.INSERT)
    return RowChange(
        op=op, schema=table.schema or inp.get("schema", ""), table=table.table or str(inp.get("table", "")),
        commit_ts=int(inp.get("commit_ts", 0)), columns=post, pre_columns=pre, table_info=table,
    )


def _check_dispatch(case: dict[str, Any]) -> str | None:
    inp = case["input"]
    columns = inp.get("columns") if isinstance(inp.get("columns"), list) else inp.get("dispatch_columns", ())
    dispatcher = make_partition_dispatcher(inp["rule"], index_name=inp.get("index_name") or "",
                                           columns=tuple(columns or ()))
    row = row_from_case(inp)
    partition_num = int(case.get("partition_num", 1))
    try:
        partition, key = dispatcher.dispatch(row, partition_num)
        writes = dispatcher.hashed_writes(row)
    except PyticdcError as exc:
        if case.get("expected_error"):
            return None
        return f"dispatch failed: {exc}"
    if case.get("expected_error"):
        return f"expected an error, got partition {partition}"
    if "hashed_writes" in case:
        want = sorted(tuple(w) for w in case["hashed_writes"])
        if sorted(writes) != want:
            return f"hashed writes: expected {want}, got {sorted(writes)}"
    if "expected_partition" in case and partition != case["expected_partition"]:
        return f"partition: expected {case['expected_partition']}, got {partition}"
    if "expected_partition_key" in case and key != case["expected_partition_key"]:
        return f"partition key: expected {case['expected_partition_key']!r}, got {key!r}"
    return None


def check_case(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Run one dispatch case; None when it passes, else the reason."""
    inp = case.get("input", {})
    if "expected_sum32" in case:
        hasher = PositionInertia()
        for parts in inp["writes"]:
            hasher.write(*parts)
        if hasher.sum32() != case["expected_sum32"]:
            return f"sum32: expected {case['expected_sum32']}, got {hasher.sum32()}"
        return None
    if "expected_string" in case:
        type_code = _type_code(inp.get("type_code", inp.get("type")))
        raw = inp.get("value")
        value = bytes.fromhex(raw["hex"]) if isinstance(raw, dict) and "hex" in raw else raw
        if type_code == TypeCode.FLOAT and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = value_from_vector(value, ColumnInfo(name="v", type_code=type_code))
        got = column_value_string(value, type_code)
        if got != case["expected_string"]:
            return f"ColumnValueString: expected {case['expected_string']!r}, got {got!r}"
        return None
    if "rule" in inp:
        return _check_dispatch(case)
    raise NotImplementedError(f"unknown dispatch case shape (keys {sorted(case)})")
