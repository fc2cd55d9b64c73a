"""TableInfo ⇄ the Simple protocol's ``TableSchema`` (JSON ``message.go``, Avro ``avro.go``; reference §6.1–6.2).

Decoding rebuilds a model TableInfo the way TiCDC's ``newTableInfo`` + ``WrapTableInfo`` do: the
column type from ``mysqlType`` (TiDB ``StrToType``), and the TiCDC column flags re-derived from
charset, nullability, unsignedness and the indexes by ``pyticdc.mysql.table_info_with_flags``
(reference §1.2: YEAR and BIT carry Unsigned whatever the wire says).
"""

from __future__ import annotations

from typing import Any, Final

from pyticdc.codec.jsontext import go_json_quote
from pyticdc.codec.simple.avro import AvroReader, write_bytes, write_long, write_str
from pyticdc.codec.simple.message import MASK64, PROTOCOL, u64_as_i64
from pyticdc.errors import DecodeError, EncodeError
from pyticdc.model import ColumnInfo, IndexInfo, TableInfo, TypeCode
from pyticdc.mysql import ENUM_SET_TYPES, FLOAT_TYPES, INTEGER_TYPES, str_to_type, table_info_with_flags, type_to_str

__all__ = [
    "avro_table_schema",
    "json_table_schema",
    "project_table",
    "read_avro_table_schema",
    "table_from_wire",
    "wire_indexes",
]

_MASK64: Final = MASK64
_BIT: Final = TypeCode.BIT
_DECIMAL: Final = TypeCode.NEWDECIMAL
#: Types whose Avro DataType carries unsigned/zerofill (``avro.go:newTableSchemaMap``).
_AVRO_NUMERIC: Final = INTEGER_TYPES | FLOAT_TYPES | {TypeCode.BIT, TypeCode.YEAR, TypeCode.NEWDECIMAL}


# --------------------------------------------------------------------------- shared rules
WireIndex = tuple[str, bool, bool, bool, tuple[str, ...]]


def wire_indexes(table: TableInfo) -> list[WireIndex]:
    """The ``indexes`` TiCDC writes: (name, unique, primary, nullable, columns).

    The table's indexes in order, each nullable when any of its columns is; when no index is
    primary but columns carry the PrimaryKey flag (the int handle, absent from TiDB ``Indices``)
    a synthetic index named ``"primary"`` is appended (``newTableSchema``).
    """
    by_name = table.column_by_name
    result: list[WireIndex] = []
    has_primary = False
    handle_pk: tuple[str, ...] = ()
    for index in table.indexes:
        if index.primary and table.pk_is_handle:
            # An int-handle primary key is not in TiDB ``TableInfo.Indices``: TiCDC never writes it in
            # place (nor under its own name); it only comes back as the synthetic "primary" below.
            handle_pk = tuple(index.columns)
            continue
        nullable = any(by_name[c].nullable for c in index.columns if c in by_name)
        result.append((index.name, index.unique, index.primary, nullable, tuple(index.columns)))
        has_primary = has_primary or index.primary
    if not has_primary:
        # GetPrimaryKeyColumnNames: the handle column when PKIsHandle, else the PK-flagged columns.
        pk = table.primary_key_columns or handle_pk
        if pk:
            result.append(("primary", True, True, False, pk))
    return result


def _default_bytes(default: str) -> bytes:
    # TiDB keeps a BIT default as the raw binary-literal bytes in a Go string.
    try:
        return default.encode("latin-1")
    except UnicodeEncodeError:
        return default.encode("utf-8", "surrogateescape")


def bit_default_int(column: ColumnInfo) -> int:
    """``common.MustBinaryLiteralToInt`` of a BIT column's default (JSON writes it as a number)."""
    data = _default_bytes(column.default or "").lstrip(b"\x00")
    if len(data) > 8:
        raise EncodeError(PROTOCOL, f"column {column.name!r}: BIT default longer than 8 bytes")
    return int.from_bytes(data, "big")


def bit_default_from_int(number: int, flen: int) -> str:
    """``NewBinaryLiteralFromUint(v, (flen+7)>>3).ToString()``, as the model's default text."""
    raw = number.to_bytes(8, "big")
    size = (flen + 7) >> 3
    raw = raw[8 - size:] if 1 <= size <= 8 else raw.lstrip(b"\x00")
    return raw.decode("latin-1")


def _finish_table(
    schema: str, table: str, table_id: int, version: int, columns: list[ColumnInfo], indexes: list[IndexInfo]
) -> TableInfo:
    primary = next((i for i in indexes if i.primary), None)
    # TiDB clusters a single-column integer primary key (the row handle) unless told otherwise;
    # the wire does not say, so that is the assumption.
    by_name = {c.name: c for c in columns}
    pk_is_handle = (
        primary is not None and len(primary.columns) == 1 and primary.columns[0] in by_name
        and by_name[primary.columns[0]].type_code in INTEGER_TYPES
    )
    return table_info_with_flags(schema, table, table_id, version, columns, indexes, pk_is_handle)


def project_table(table: TableInfo, encoding: str) -> TableInfo:
    """``table`` as a decoder rebuilds it from this encoding's TableSchema (what survives the wire)."""
    columns = []
    for c in table.columns:
        if encoding == "json":
            decimal = -1 if c.type_code in FLOAT_TYPES else c.decimal
            elems = tuple(c.elems) if c.elems else None
            unsigned, zerofill = c.is_unsigned, c.zerofill
            default = c.default
            if c.type_code == _BIT and default is not None:
                default = bit_default_from_int(bit_default_int(c), c.flen)
        else:
            decimal = c.decimal if c.type_code == _DECIMAL else -1
            elems = tuple(c.elems) if c.type_code in ENUM_SET_TYPES and c.elems else None
            numeric = c.type_code in _AVRO_NUMERIC
            unsigned, zerofill = (c.is_unsigned, c.zerofill) if numeric else (False, False)
            default = c.default
            if default is not None and c.type_code == _BIT:
                default = _default_bytes(default).decode("latin-1")
        columns.append(ColumnInfo(
            name=c.name, type_code=str_to_type(type_to_str(c.type_code, c.charset)), charset=c.charset,
            collation=c.collation, flen=c.flen, decimal=decimal, elems=elems, unsigned=unsigned, zerofill=zerofill,
            nullable=c.nullable, default=default,
        ))
    indexes = [IndexInfo(name=n, columns=cols, primary=p, unique=u) for n, u, p, _, cols in wire_indexes(table)]
    return _finish_table(table.schema, table.table, table.table_id, table.schema_version, columns, indexes)


# --------------------------------------------------------------------------- JSON
def _check_table_numbers(table: TableInfo) -> None:
    if not 0 <= table.schema_version <= _MASK64:
        raise EncodeError(PROTOCOL, f"schema_version {table.schema_version} is not a uint64")
    if not -(1 << 63) <= table.table_id < (1 << 63):
        raise EncodeError(PROTOCOL, f"table_id {table.table_id} is not an int64")


def json_table_schema(table: TableInfo) -> str:
    """The ``TableSchema`` JSON object (encoding/json of ``message.go:TableSchema``)."""
    _check_table_numbers(table)
    q = go_json_quote
    parts = [
        '{"schema":', q(table.schema), ',"table":', q(table.table), ',"tableID":', str(table.table_id),
        ',"version":', str(table.schema_version), ',"columns":[',
    ]
    for i, c in enumerate(table.columns):
        if i:
            parts.append(",")
        parts += ['{"name":', q(c.name), ',"dataType":{"mysqlType":', q(type_to_str(c.type_code, c.charset)),
                  ',"charset":', q(c.charset), ',"collate":', q(c.collation)]
        if c.flen != 0:
            parts += [',"length":', str(c.flen)]
        # Float and Double decimal is always -1 in TiDB: TiCDC leaves it out; omitempty drops 0.
        if c.type_code not in FLOAT_TYPES and c.decimal != 0:
            parts += [',"decimal":', str(c.decimal)]
        if c.elems:
            parts += [',"elements":[', ",".join(q(e) for e in c.elems), "]"]
        if c.is_unsigned:
            parts.append(',"unsigned":true')
        if c.zerofill:
            parts.append(',"zerofill":true')
        parts += ['},"nullable":', "true" if c.nullable else "false", ',"default":']
        if c.default is None:
            parts.append("null")
        elif c.type_code == _BIT:
            parts.append(str(bit_default_int(c)))  # BIT default converted to its integer
        else:
            parts.append(q(c.default))
        parts.append("}")
    parts.append('],"indexes":[')
    for i, (name, unique, primary, nullable, cols) in enumerate(wire_indexes(table)):
        if i:
            parts.append(",")
        parts += ['{"name":', q(name), ',"unique":', "true" if unique else "false", ',"primary":',
                  "true" if primary else "false", ',"nullable":', "true" if nullable else "false", ',"columns":',
                  ("[" + ",".join(q(c) for c in cols) + "]") if cols else "null", "}"]
    parts.append("]}")
    return "".join(parts)


# --------------------------------------------------------------------------- Avro
def avro_table_schema(out: bytearray, table: TableInfo) -> None:
    """Append a ``com.pingcap.simple.avro.TableSchema`` record (``avro.go:newTableSchemaMap``)."""
    _check_table_numbers(table)
    write_str(out, table.schema)
    write_str(out, table.table)
    write_long(out, table.table_id)
    write_long(out, u64_as_i64(table.schema_version))
    if table.columns:
        write_long(out, len(table.columns))
        for c in table.columns:
            write_str(out, c.name)
            write_str(out, type_to_str(c.type_code, c.charset))
            write_str(out, c.charset)
            write_str(out, c.collation)
            write_long(out, c.flen)
            code = c.type_code
            if code == _DECIMAL:
                out.append(0x02)
                write_long(out, c.decimal)
            else:
                out.append(0x00)
            if code in ENUM_SET_TYPES:
                out.append(0x02)
                elems = c.elems or ()
                if elems:
                    write_long(out, len(elems))
                    for e in elems:
                        write_str(out, e)
                out.append(0x00)
            else:
                out.append(0x00)
            if code in _AVRO_NUMERIC:
                out += b"\x02\x01" if c.is_unsigned else b"\x02\x00"
                out += b"\x02\x01" if c.zerofill else b"\x02\x00"
            else:
                out += b"\x00\x00"
            out.append(0x01 if c.nullable else 0x00)
            if c.default is None:
                out.append(0x00)
            else:
                # "according to TiDB source code, the default value is converted to string":
                # a BIT default stays the raw binary-literal bytes here.
                out.append(0x02)
                data = _default_bytes(c.default) if code == _BIT else c.default.encode("utf-8", "surrogateescape")
                write_bytes(out, data)
    out.append(0x00)
    indexes = wire_indexes(table)
    if indexes:
        write_long(out, len(indexes))
        for name, unique, primary, nullable, cols in indexes:
            write_str(out, name)
            out.append(0x01 if unique else 0x00)
            out.append(0x01 if primary else 0x00)
            out.append(0x01 if nullable else 0x00)
            if cols:
                write_long(out, len(cols))
                for col in cols:
                    write_str(out, col)
            out.append(0x00)
    out.append(0x00)


def _optional(reader: AvroReader, read: Any) -> Any:
    return read() if reader.index(2, "union") == 1 else None


def read_avro_table_schema(reader: AvroReader) -> dict[str, Any]:
    """Read a TableSchema record into a JSON-like dict (unions as plain values or None)."""
    table: dict[str, Any] = {
        "database": reader.string(), "table": reader.string(), "tableID": reader.long(),
        "version": reader.long() & _MASK64,
    }
    columns = []
    count = reader.block_count()
    while count:
        for _ in range(count):
            name = reader.string()
            data_type = {
                "mysqlType": reader.string(), "charset": reader.string(), "collate": reader.string(),
                "length": reader.long(), "decimal": _optional(reader, reader.int32),
                "elements": _optional(reader, reader.strings), "unsigned": _optional(reader, reader.boolean),
                "zerofill": _optional(reader, reader.boolean),
            }
            columns.append({"name": name, "dataType": data_type, "nullable": reader.boolean(),
                            "default": _optional(reader, reader.raw)})
        count = reader.block_count()
    table["columns"] = columns
    indexes = []
    count = reader.block_count()
    while count:
        for _ in range(count):
            indexes.append({"name": reader.string(), "unique": reader.boolean(), "primary": reader.boolean(),
                            "nullable": reader.boolean(), "columns": reader.strings()})
        count = reader.block_count()
    table["indexes"] = indexes
    return table


# --------------------------------------------------------------------------- decoding
def _need(obj: dict[str, Any], key: str, kinds: type | tuple[type, ...], path: str, default: Any) -> Any:
    value = obj.get(key)
    if value is None:
        return default  # encoding/json leaves the zero value for a missing field or null
    if not isinstance(value, kinds) or (isinstance(value, bool) and kinds is int):
        raise DecodeError(PROTOCOL, f"expected {getattr(kinds, '__name__', kinds)}", f"{path}.{key}")
    return value


def _need_int(obj: dict[str, Any], key: str, path: str, low: int, high: int) -> int:
    value: int = _need(obj, key, int, path, 0)
    if not low <= value <= high:
        raise DecodeError(PROTOCOL, f"{value} out of range", f"{path}.{key}")
    return value


def _need_obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeError(PROTOCOL, "expected an object", path)
    return value


def _need_strings(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DecodeError(PROTOCOL, "expected an array of strings", path)
    return value


def _default(raw: Any, type_code: int, flen: int, avro: bool, path: str) -> str | None:
    if raw is None:
        return None
    if avro:
        data: bytes = raw
        return data.decode("latin-1") if type_code == _BIT else data.decode("utf-8", "surrogateescape")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, int):
        if type_code == _BIT:
            if not 0 <= raw <= _MASK64:
                raise DecodeError(PROTOCOL, "BIT default out of range", path)
            return bit_default_from_int(raw, flen)
        return str(raw)
    if isinstance(raw, float):
        if type_code == _BIT and raw.is_integer() and 0 <= raw <= _MASK64:
            return bit_default_from_int(int(raw), flen)
        return repr(raw)
    raise DecodeError(PROTOCOL, "unsupported default value", path)


def table_from_wire(obj: Any, path: str, avro: bool) -> TableInfo:
    """A model TableInfo from a TableSchema (parsed JSON object, or ``read_avro_table_schema``)."""
    obj = _need_obj(obj, path)
    schema: str = _need(obj, "database" if avro else "schema", str, path, "")
    table: str = _need(obj, "table", str, path, "")
    table_id = _need_int(obj, "tableID", path, -(1 << 63), (1 << 63) - 1)
    version = _need_int(obj, "version", path, 0, _MASK64)
    columns: list[ColumnInfo] = []
    raw_columns = _need(obj, "columns", list, path, [])
    for i, raw in enumerate(raw_columns):
        cpath = f"{path}.columns[{i}]"
        raw = _need_obj(raw, cpath)
        dpath = f"{cpath}.dataType"
        data_type = _need_obj(raw.get("dataType", {}), dpath)
        type_code = str_to_type(_need(data_type, "mysqlType", str, dpath, ""))
        flen = _need_int(data_type, "length", dpath, -(1 << 63), (1 << 63) - 1)
        raw_decimal = data_type.get("decimal")
        if raw_decimal is None:
            # Not carried: JSON omits 0 (and always FLOAT/DOUBLE's -1); Avro carries DECIMAL's only.
            decimal = -1 if avro or type_code in FLOAT_TYPES else 0
        else:
            decimal = _need_int(data_type, "decimal", dpath, -(1 << 31), (1 << 31) - 1)
        elems = _need_strings(data_type.get("elements"), f"{dpath}.elements")
        columns.append(ColumnInfo(
            name=_need(raw, "name", str, cpath, ""), type_code=type_code,
            charset=_need(data_type, "charset", str, dpath, ""), collation=_need(data_type, "collate", str, dpath, ""),
            flen=flen, decimal=decimal, elems=tuple(elems) if elems else None,
            unsigned=_need(data_type, "unsigned", bool, dpath, False),
            zerofill=_need(data_type, "zerofill", bool, dpath, False),
            nullable=_need(raw, "nullable", bool, cpath, False),
            default=_default(raw.get("default"), type_code, flen, avro, f"{cpath}.default"),
        ))
    indexes: list[IndexInfo] = []
    for i, raw in enumerate(_need(obj, "indexes", list, path, [])):
        ipath = f"{path}.indexes[{i}]"
        raw = _need_obj(raw, ipath)
        indexes.append(IndexInfo(
            name=_need(raw, "name", str, ipath, ""),
            columns=tuple(_need_strings(raw.get("columns"), f"{ipath}.columns")),
            primary=_need(raw, "primary", bool, ipath, False), unique=_need(raw, "unique", bool, ipath, False),
        ))
    return _finish_table(schema, table, table_id, version, columns, indexes)
