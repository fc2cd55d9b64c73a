"""The vectors' normalized input layout (``shared/vectors/README.md``) turned into model events."""

from __future__ import annotations

from typing import Any, Final

from pyticdc.codec.jsontext import float32_round
from pyticdc.codec.options import TICDC_NAMES, Clock
from pyticdc.model import (
    Bootstrap,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    Op,
    RowChange,
    TableInfo,
    Value,
    Watermark,
    make_row,
)
from pyticdc.mysql import STRING_TYPES

__all__ = ["VECTOR_OPTION_NAMES", "column_from_vector", "events_from_vector", "options_from_vector",
           "table_from_vector", "value_from_vector"]

#: Vector config key (snake_case) → TiCDC option name; keys absent here are not codec options.
VECTOR_OPTION_NAMES: Final[dict[str, str]] = {
    "max_message_bytes": "max-message-bytes",
    "max_batch_size": "max-batch-size",
    "enable_tidb_extension": "enable-tidb-extension",
    "only_output_updated_columns": "only-output-updated-columns",
    "content_compatible": "content-compatible",
    "delete_only_handle_key_columns": "delete-only-output-handle-key-columns",
    "open_output_old_value": "open-protocol.output-old-value",
    "large_message_handle_option": "large-message-handle-option",
    "large_message_handle_compression": "large-message-handle-compression",
    "claim_check_storage_uri": "claim-check-storage-uri",
    "claim_check_raw_value": "claim-check-raw-value",
    "debezium_disable_schema": "debezium-disable-schema",
    "debezium_output_old_value": "debezium-output-old-value",
    "cluster_id": "cluster-id",
    "time_zone": "time-zone",
    "encoding_format": "encoding-format",
}
#: Config keys that pin a non-deterministic field (the encoder clock).
CLOCK_KEYS: Final = ("canal_ts_override", "build_ts", "now_ms")


def options_from_vector(
    config: dict[str, Any], accepted: frozenset[str] | None = None
) -> tuple[dict[str, Any], Clock | None]:
    """TiCDC options and the fixed clock a case's ``config`` asks for.

    ``accepted`` (CodecOptions field names) drops options the protocol does not take, the way
    a shared config file carries options for other protocols.
    """
    options: dict[str, Any] = {}
    for key, value in config.items():
        name = VECTOR_OPTION_NAMES.get(key)
        if name is None:
            continue
        if accepted is not None and TICDC_NAMES[name] not in accepted:
            continue
        options[name] = value
    clock: Clock | None = None
    for key in CLOCK_KEYS:
        if key in config:
            fixed = int(config[key])
            clock = lambda fixed=fixed: fixed  # noqa: E731
    return options, clock


def column_from_vector(data: dict[str, Any]) -> ColumnInfo:
    """A ColumnInfo from a vector ``column`` object."""
    elems = data.get("elems")
    return ColumnInfo(
        name=data["name"],
        type_code=int(data.get("type_code", 0)),
        flags=int(data.get("flags", data.get("flag", 0))),
        charset=data.get("charset") or "binary",
        collation=data.get("collation") or "binary",
        flen=int(data["flen"]) if data.get("flen") is not None else -1,
        decimal=int(data["decimal"]) if data.get("decimal") is not None else -1,
        elems=tuple(elems) if elems is not None else None,
        unsigned=bool(data.get("unsigned", False)),
        zerofill=bool(data.get("zerofill", False)),
        nullable=bool(data.get("nullable", True)),
        default=data.get("default"),
        type_desc=data.get("type_desc"),
        comment=data.get("comment") or "",
        virtual=bool(data.get("virtual", False)),
    )


def table_from_vector(data: dict[str, Any]) -> TableInfo:
    """A TableInfo from a vector ``table`` object."""
    return TableInfo(
        schema=data.get("schema", ""),
        table=data.get("table", ""),
        table_id=int(data.get("table_id", 0) or 0),
        schema_version=int(data.get("schema_version", 0) or 0),
        is_partition=bool(data.get("is_partition", False)),
        pk_is_handle=bool(data.get("pk_is_handle", False)),
        columns=tuple(column_from_vector(c) for c in data.get("columns", ())),
        indexes=tuple(
            IndexInfo(name=i["name"], columns=tuple(i["columns"]), primary=bool(i.get("primary")),
                      unique=bool(i.get("unique")))
            for i in data.get("indexes", ())
        ),
        comment=data.get("comment"),
        charset=data.get("charset") or "",
    )


def value_from_vector(raw: Any, column: ColumnInfo | None) -> Value:
    """A model value from its vector JSON form (README "values" table)."""
    if raw is None:
        return None
    if isinstance(raw, dict) and "hex" in raw:
        return bytes.fromhex(raw["hex"])
    if column is None:
        return raw  # type: ignore[no-any-return]
    if column.type_code in STRING_TYPES:
        return raw.encode("utf-8") if isinstance(raw, str) else raw
    if column.type_code == 4 and isinstance(raw, (int, float)):
        return float32_round(float(raw))
    if column.type_code == 5 and isinstance(raw, int):
        return float(raw)
    return raw  # type: ignore[no-any-return]


def _row(values: dict[str, Any] | None, table: TableInfo | None) -> dict[str, Value] | None:
    if values is None:
        return None
    columns = table.column_by_name if table is not None else {}
    return {name: value_from_vector(v, columns.get(name)) for name, v in values.items()}


def events_from_vector(inp: dict[str, Any]) -> list[Event]:
    """Model events from a case ``input`` (``table`` + ``events``)."""
    table = table_from_vector(inp["table"]) if inp.get("table") else None
    events: list[Event] = []
    for ev in inp.get("events", ()):
        kind = ev["kind"]
        if kind == "row":
            if table is None:
                raise ValueError("row event without a table")
            columns = make_row(_row(ev.get("columns"), table))
            pre = make_row(_row(ev.get("pre_columns"), table))
            physical = int(ev.get("physical_table_id") or table.table_id)
            events.append(RowChange(
                op=Op(ev["op"]), schema=table.schema, table=table.table, commit_ts=int(ev["commit_ts"]),
                columns=columns, pre_columns=pre, table_id=table.table_id, physical_table_id=physical,
                row_id=int(ev.get("row_id", 0) or 0), table_info=table,
            ))
        elif kind == "ddl":
            after = ev.get("table")
            before = ev.get("pre_table")
            after_info = table_from_vector(after) if isinstance(after, dict) else None
            before_info = table_from_vector(before) if isinstance(before, dict) else None
            schema = ev.get("schema") or (after_info.schema if after_info else (table.schema if table else ""))
            name = ev["table"] if isinstance(ev.get("table"), str) else (
                after_info.table if after_info else (table.table if table else ""))
            events.append(DDLEvent(
                query=ev["query"], ddl_type=int(ev["ddl_type"]), commit_ts=int(ev["commit_ts"]),
                schema=schema, table=name, table_info=after_info, pre_table_info=before_info,
            ))
        elif kind == "resolved":
            events.append(Watermark(resolved_ts=int(ev["ts"])))
        elif kind == "bootstrap":
            if table is None:
                raise ValueError("bootstrap event without a table")
            events.append(Bootstrap(table_info=table))
        else:
            raise ValueError(f"unknown vector event kind {kind!r}")
    return events
