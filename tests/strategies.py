"""Hypothesis strategies shared by the whole test suite: tables of every TiDB column type and
rows of valid values in TiCDC's internal row model (ticdc-reference.md §1.1)."""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from pyticdc.codec.jsontext import float32_round, format_float_f
from pyticdc.model import (
    ColumnFlag,
    ColumnInfo,
    IndexInfo,
    Op,
    Row,
    RowChange,
    TableInfo,
    Value,
)

F = ColumnFlag

# A column kind: (sql type, type code, charset, flen, decimal, unsigned, extra) — the value
# strategy is chosen from the kind below.
_INT_RANGES = {1: 8, 2: 16, 9: 24, 3: 32, 8: 64}
_INT_NAMES = {1: "tinyint", 2: "smallint", 9: "mediumint", 3: "int", 8: "bigint"}

identifiers = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=8).map(lambda s: "c_" + s)
text_values = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12
)


def _int_values(type_code: int, unsigned: bool) -> st.SearchStrategy[int]:
    bits = _INT_RANGES[type_code]
    if unsigned:
        return st.one_of(st.integers(0, 2**bits - 1), st.sampled_from([0, 2**bits - 1]))
    return st.one_of(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1),
                     st.sampled_from([-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 0]))


def _fraction(fsp: int) -> st.SearchStrategy[str]:
    if fsp == 0:
        return st.just("")
    return st.integers(0, 10**fsp - 1).map(lambda n: "." + str(n).zfill(fsp))


def _date() -> st.SearchStrategy[str]:
    return st.tuples(st.integers(1000, 9999), st.integers(1, 12), st.integers(1, 28)).map(
        lambda t: f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d}")


def _datetime(fsp: int, low_year: int = 1000, high_year: int = 9999) -> st.SearchStrategy[str]:
    return st.tuples(
        st.integers(low_year, high_year), st.integers(1, 12), st.integers(1, 28),
        st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), _fraction(fsp),
    ).map(lambda t: f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d} {t[3]:02d}:{t[4]:02d}:{t[5]:02d}{t[6]}")


def _time(fsp: int) -> st.SearchStrategy[str]:
    return st.tuples(st.booleans(), st.integers(0, 838), st.integers(0, 59), st.integers(0, 59),
                     _fraction(fsp)).map(
        lambda t: f"{'-' if t[0] and (t[1] or t[2] or t[3]) else ''}{t[1]:02d}:{t[2]:02d}:{t[3]:02d}{t[4]}")


def _decimal(precision: int, scale: int) -> st.SearchStrategy[str]:
    whole = precision - scale

    def render(t: tuple[bool, int, int]) -> str:
        negative, integer, fraction = t
        text = str(integer) + ("." + str(fraction).zfill(scale) if scale else "")
        return ("-" if negative and (integer or fraction) else "") + text

    return st.tuples(st.booleans(), st.integers(0, 10**whole - 1 if whole else 0),
                     st.integers(0, 10**scale - 1 if scale else 0)).map(render)


_JSON_TEXTS = ['{"key1": "value1"}', '[1, 2, 3]', '"text"', "null", "true", '{"a": {"b": [1.5, "x"]}}', "{}", "[]"]


def _vector() -> st.SearchStrategy[str]:
    floats = st.floats(-1e6, 1e6, allow_nan=False, width=32)
    return st.lists(floats, min_size=1, max_size=4).map(
        lambda vs: "[" + ",".join(format_float_f(v, 32) for v in vs) + "]")


def _float32() -> st.SearchStrategy[float]:
    return st.floats(allow_nan=False, allow_infinity=False, width=32).map(float32_round)


def _double() -> st.SearchStrategy[float]:
    return st.floats(allow_nan=False, allow_infinity=False)


# Each entry builds (ColumnInfo without name/flags-for-keys, value strategy).
ColumnKind = Callable[[st.DrawFn], tuple[dict[str, Any], st.SearchStrategy[Value]]]


@st.composite
def column_kinds(draw: st.DrawFn) -> tuple[dict[str, Any], st.SearchStrategy[Value]]:
    """A column definition (ColumnInfo keyword arguments) and a strategy for its values."""
    kind = draw(st.sampled_from([
        "int", "int", "float", "double", "decimal", "date", "datetime", "timestamp", "time", "year",
        "varchar", "char", "binary", "varbinary", "text", "blob", "enum", "set", "bit", "json", "vector",
    ]))
    binary = {"charset": "binary", "collation": "binary"}
    text = {"charset": "utf8mb4", "collation": "utf8mb4_bin"}
    if kind == "int":
        code = draw(st.sampled_from(sorted(_INT_RANGES)))
        unsigned = draw(st.booleans())
        desc = _INT_NAMES[code] + (" unsigned" if unsigned else "")
        return ({"type_code": code, "unsigned": unsigned, "flen": 20, "decimal": 0, "type_desc": desc, **binary},
                _int_values(code, unsigned))
    if kind == "float":
        return {"type_code": 4, "flen": 12, "decimal": -1, "type_desc": "float", **binary}, _float32()
    if kind == "double":
        return {"type_code": 5, "flen": 22, "decimal": -1, "type_desc": "double", **binary}, _double()
    if kind == "decimal":
        precision = draw(st.integers(1, 30))
        scale = draw(st.integers(0, min(precision, 10)))
        return ({"type_code": 246, "flen": precision, "decimal": scale,
                 "type_desc": f"decimal({precision},{scale})", **binary}, _decimal(precision, scale))
    if kind == "date":
        return {"type_code": 10, "flen": 10, "decimal": 0, "type_desc": "date", **binary}, _date()
    if kind in ("datetime", "timestamp"):
        fsp = draw(st.integers(0, 6))
        code = 12 if kind == "datetime" else 7
        datetimes = _datetime(fsp) if kind == "datetime" else _datetime(fsp, 1971, 2037)
        desc = kind + (f"({fsp})" if fsp else "")
        return {"type_code": code, "flen": 19 + (fsp + 1 if fsp else 0), "decimal": fsp, "type_desc": desc,
                **binary}, datetimes
    if kind == "time":
        fsp = draw(st.integers(0, 6))
        return ({"type_code": 11, "flen": 10, "decimal": fsp, "type_desc": "time" + (f"({fsp})" if fsp else ""),
                 **binary}, _time(fsp))
    if kind == "year":
        return ({"type_code": 13, "flen": 4, "decimal": 0, "unsigned": True, "type_desc": "year(4)", **binary},
                st.one_of(st.integers(1901, 2155), st.just(0)))
    if kind in ("varchar", "char"):
        code = 15 if kind == "varchar" else 254
        return ({"type_code": code, "flen": 64, "decimal": 0, "type_desc": f"{kind}(64)", **text},
                text_values.map(lambda s: s.encode("utf-8")))
    if kind in ("binary", "varbinary"):
        code = 254 if kind == "binary" else 15
        return ({"type_code": code, "flen": 16, "decimal": 0, "type_desc": f"{kind}(16)", **binary},
                st.binary(max_size=16))
    if kind == "text":
        code = draw(st.sampled_from([249, 250, 251, 252]))
        return ({"type_code": code, "flen": 65535, "decimal": 0, "type_desc": "text", **text},
                text_values.map(lambda s: s.encode("utf-8")))
    if kind == "blob":
        code = draw(st.sampled_from([249, 250, 251, 252]))
        return {"type_code": code, "flen": 65535, "decimal": 0, "type_desc": "blob", **binary}, st.binary(max_size=24)
    if kind in ("enum", "set"):
        elems = tuple(draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "x y", "é"]), min_size=1, max_size=5,
                                    unique=True)))
        quoted = ",".join(f"'{e}'" for e in elems)
        if kind == "enum":
            values: st.SearchStrategy[Value] = st.integers(1, len(elems))
            code = 247
        else:
            values = st.integers(0, 2 ** len(elems) - 1)
            code = 248
        return ({"type_code": code, "flen": -1, "decimal": 0, "elems": elems, "type_desc": f"{kind}({quoted})",
                 **text}, values)
    if kind == "bit":
        width = draw(st.integers(1, 64))
        return ({"type_code": 16, "flen": width, "decimal": 0, "unsigned": True, "type_desc": f"bit({width})",
                 **binary}, st.integers(0, 2**width - 1))
    if kind == "json":
        return {"type_code": 245, "flen": -1, "decimal": 0, "type_desc": "json", **binary}, st.sampled_from(_JSON_TEXTS)
    return {"type_code": 225, "flen": -1, "decimal": 0, "type_desc": "vector", **binary}, _vector()


def _flags(spec: dict[str, Any], nullable: bool, key: bool) -> int:
    flags = 0
    if spec.get("charset") == "binary":
        flags |= F.BINARY
    if nullable:
        flags |= F.NULLABLE
    if spec.get("unsigned"):
        flags |= F.UNSIGNED
    if key:
        flags |= F.HANDLE_KEY | F.PRIMARY_KEY
    return flags


@st.composite
def tables(draw: st.DrawFn, max_columns: int = 8) -> tuple[TableInfo, dict[str, st.SearchStrategy[Value]]]:
    """A table with an int primary-key handle ``id`` and random columns, and value strategies per column."""
    count = draw(st.integers(1, max_columns))
    names = draw(st.lists(identifiers, min_size=count, max_size=count, unique=True))
    id_col = ColumnInfo(name="id", type_code=8, flags=int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY), flen=20,
                        decimal=0, nullable=False, type_desc="bigint(20)")
    columns = [id_col]
    value_strategies: dict[str, st.SearchStrategy[Value]] = {"id": st.integers(-(2**63), 2**63 - 1)}
    for name in names:
        spec, values = draw(column_kinds())
        nullable = draw(st.booleans())
        columns.append(ColumnInfo(name=name, flags=_flags(spec, nullable, False), nullable=nullable, **spec))
        value_strategies[name] = st.one_of(st.none(), values) if nullable else values
    table = TableInfo(
        schema=draw(st.sampled_from(["test", "db_1", "数据"])), table=draw(st.sampled_from(["t", "orders", "t_2"])),
        table_id=draw(st.integers(1, 10**6)), schema_version=draw(st.integers(0, 2**62)), pk_is_handle=True,
        columns=tuple(columns), indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),),
    )
    return table, value_strategies


@st.composite
def row_images(draw: st.DrawFn, values: dict[str, st.SearchStrategy[Value]]) -> Row:
    """One full row image for a table's value strategies."""
    return Row({name: draw(strategy) for name, strategy in values.items()})


tsos = st.integers(1 << 18, (1 << 63) - 1)


@st.composite
def row_changes(draw: st.DrawFn, max_rows: int = 4) -> list[RowChange]:
    """A few row changes of one table: inserts, updates (same handle) and deletes."""
    table, values = draw(tables())
    commit_ts = draw(tsos)
    rows = []
    for _ in range(draw(st.integers(1, max_rows))):
        op = draw(st.sampled_from(list(Op)))
        post = draw(row_images(values)) if op is not Op.DELETE else None
        pre = draw(row_images(values)) if op is not Op.INSERT else None
        if post is not None and pre is not None:
            # an UPDATE keeps its handle: TiCDC splits handle changes into DELETE + INSERT (§1.3)
            pre = Row({**pre, "id": post["id"]})
        handle = (post or pre or Row()).get("id", 0)
        rows.append(RowChange(
            op=op, schema=table.schema, table=table.table, commit_ts=commit_ts, columns=post, pre_columns=pre,
            table_id=table.table_id, physical_table_id=table.table_id, row_id=int(handle or 0), table_info=table,
        ))
        commit_ts += draw(st.integers(0, 1 << 20))
    return rows


def awkward_image(image: Row | None, data: st.DataObject, awkward: st.SearchStrategy[Any], *,
                  one_in: int = 5) -> Row | None:
    """``image`` with about one value in ``one_in`` swapped for an awkward one, now and then a column dropped or
    added: the inputs a fast writer must decline or write exactly as the reference does."""
    if image is None:
        return None
    draw = data.draw
    values = {k: draw(awkward) if draw(st.integers(0, one_in - 1)) == 0 else v for k, v in image.items()}
    if values and draw(st.integers(0, 9)) == 0:
        values.pop(next(iter(values)))
    if draw(st.integers(0, 19)) == 0:
        values["not_a_column"] = 1
    return Row(values)
