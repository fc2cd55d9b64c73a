"""Records → event rows (pure, no JVM): lossless canonical text, errors as rows, stateful Simple decoding."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyticdc.arrow.rows import (
    EVENT_COLUMNS,
    decode_kafka_batches,
    decode_records,
    event_arrow_schema,
    event_dicts,
    parse_table_info,
    row_text,
    table_info_json,
)
from pyticdc.codec import PROTOCOLS, make_encoder
from pyticdc.io.capture import records_to_arrow
from pyticdc.model import Bootstrap, KafkaRecord, Row, RowChange
from pyticdc.sim.sample import SAMPLE_TABLE, sample_events
from pyticdc.sim.workload import simulate

OPTIONS: dict[str, dict[str, str]] = {"canal-json": {"enable-tidb-extension": "true"},
                                      "debezium": {"enable-tidb-extension": "true"}}


def _records(protocol: str, events: Iterable[Any], topic: str = "cdc", partition: int = 0,
             first_offset: int = 0) -> list[KafkaRecord]:
    messages = make_encoder(protocol, OPTIONS.get(protocol, {})).encode(list(events))
    return [KafkaRecord(topic=topic, partition=partition, offset=first_offset + i, key=m.key, value=m.value,
                        timestamp_ms=1_763_780_000_000 + i) for i, m in enumerate(messages)]


def _rows(protocol: str, records: list[KafkaRecord]) -> list[dict[str, Any]]:
    table = pa.Table.from_batches(list(decode_records(records, protocol, OPTIONS.get(protocol, {}))),
                                  schema=event_arrow_schema())
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def _value_from_text(text: str | None, original: Any, encoded: bool) -> Any:
    """Read canonical text back as the model value's type (the test's own inverse of row_text)."""
    if text is None:
        return None
    if isinstance(original, bytes):
        return base64.b64decode(text) if encoded else text.encode("utf-8")
    if isinstance(original, bool):
        raise AssertionError("the model has no booleans")
    if isinstance(original, int):
        return int(text)
    if isinstance(original, float):
        return float(text)
    return text


def _assert_lossless(image: Mapping[str, Any] | None, texts: list[tuple[str, str | None]] | None,
                     encoded: set[str]) -> None:
    if image is None:
        assert texts is None
        return
    assert texts is not None and [k for k, _ in texts] == list(image)
    for name, text in texts:
        assert _value_from_text(text, image[name], name in encoded) == image[name], name


def test_event_schema_is_sparks_arrow_mapping() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    assert to_arrow_schema(from_arrow_schema(event_arrow_schema())).equals(event_arrow_schema())
    assert [name for name, _ in EVENT_COLUMNS][:6] == ["topic", "partition", "offset", "kafka_timestamp",
                                                       "event_index", "kind"]


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_every_protocol_decodes_to_lossless_rows(protocol: str) -> None:
    history = simulate(3)
    records = _records(protocol, history.events)
    from pyticdc.codec import make_decoder

    decoder = make_decoder(protocol, OPTIONS.get(protocol, {}))
    expected = [(r.offset, i, e) for r in records for i, e in enumerate(decoder.decode(r.value, r.key))]
    rows = _rows(protocol, records)
    assert len(rows) == len(expected)
    for row, (offset, index, event) in zip(rows, expected):
        assert (row["offset"], row["event_index"], row["kind"]) == (offset, index, event.kind)
        assert row["partition"] == 0 and row["topic"] == "cdc"
        assert row["kafka_timestamp"].timestamp() * 1000 == pytest.approx(1_763_780_000_000 + offset)
        if isinstance(event, RowChange):
            assert row["op"] == event.op.value and (row["schema"], row["table"]) == (event.schema, event.table)
            assert row["commit_ts"] == Decimal(event.commit_ts)  # exact: no float on the way
            encoded = set(row["base64_columns"] or ())
            _assert_lossless(event.columns, row["columns"], encoded)
            _assert_lossless(event.pre_columns, row["pre_columns"], encoded)
            if event.table_info is not None:
                assert parse_table_info(row["table_info"]) == event.table_info
        elif event.kind == "watermark":
            assert row["commit_ts"] == Decimal(event.resolved_ts)  # type: ignore[union-attr]
        elif event.kind == "ddl":
            assert row["ddl_query"] == event.query and row["ddl_type_code"] == event.ddl_type  # type: ignore[union-attr]


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.one_of(
    st.none(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False), st.text(), st.binary()), max_size=8),
    st.booleans())
def test_row_text_is_lossless(image: dict[str, Any], all_binary: bool) -> None:
    names: list[str] = []
    binary = frozenset(image) if all_binary else frozenset()
    keys, texts = row_text(Row(image), binary, names)
    _assert_lossless(image, list(zip(keys, texts)), set(names))
    for name, value in image.items():
        if isinstance(value, bytes) and (all_binary or not _is_utf8(value)):
            assert name in names
        elif name in names:
            raise AssertionError(f"{name} needlessly base64")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_binary_columns_are_base64_and_listed() -> None:
    history = simulate(5)
    rows = [r for r in _rows("simple", _records("simple", history.events)) if r["kind"] == "row"]
    checked = 0
    for row in rows:
        info = parse_table_info(row["table_info"])
        strings = (15, 249, 250, 251, 252, 254)
        binary = {c.name for c in info.columns if c.charset == "binary" and c.type_code in strings}
        present = {k for image in (row["columns"], row["pre_columns"]) for k, v in image or () if v is not None}
        assert binary & present <= set(row["base64_columns"] or ())
        assert not set(row["base64_columns"] or ()) - binary  # valid UTF-8 text is never base64
        checked += bool(binary & present)
    assert checked, "the workload has rows with binary-charset columns"


def test_garbage_becomes_error_rows_and_decoding_continues() -> None:
    records = _records("canal-json", sample_events())
    garbage = [KafkaRecord(topic="cdc", partition=0, offset=100, key=b"k", value=b"\x00\x01garbage"),
               KafkaRecord(topic="cdc", partition=0, offset=101, value=b"{}")]
    after = _records("canal-json", sample_events()[2:3], first_offset=102)
    rows = _rows("canal-json", records + garbage + after)
    errors = [r for r in rows if r["kind"] == "error"]
    assert [(r["offset"], r["raw_key"], r["raw_value"]) for r in errors] == [
        (100, b"k", b"\x00\x01garbage"), (101, None, b"{}")]
    assert all(r["reason"].startswith("canal-json:") for r in errors)
    assert rows[-1]["kind"] == "row" and rows[-1]["offset"] == 102


def _simple_stream() -> tuple[list[KafkaRecord], int]:
    """Simple records of the sample: the encoder puts a BOOTSTRAP before the first row."""
    records = _records("simple", sample_events())
    kinds = [e.kind for r in records for e in _decode_one(r)]
    return records, kinds.index("bootstrap")


def _decode_one(record: KafkaRecord) -> list[Any]:
    from pyticdc.arrow.rows import new_decoder

    return new_decoder("simple").decode(record.value, record.key)  # rows without schema come back untyped


def test_simple_rows_before_their_schema_are_held_then_typed() -> None:
    records, bootstrap = _simple_stream()
    rows_at = [i for i, r in enumerate(records) if i > bootstrap and _decode_one(r)[0].kind == "row"]
    # Move the BOOTSTRAP after two rows (a consumer joining mid-stream sees rows first); keep offsets.
    order = [i for i in range(len(records)) if i != bootstrap]
    order.insert(order.index(rows_at[1]) + 1, bootstrap)
    shuffled = [KafkaRecord(topic="cdc", partition=0, offset=n, key=records[i].key, value=records[i].value)
                for n, i in enumerate(order)]
    rows = _rows("simple", shuffled)
    row_events = [r for r in rows if r["kind"] == "row"]
    assert [r["op"] for r in row_events] == ["insert", "insert", "update", "delete"]
    assert all(r["table_info"] is not None for r in row_events)  # resolved with the schema, not wire values
    first = row_events[0]
    assert first["offset"] < next(r for r in rows if r["kind"] == "bootstrap")["offset"]  # its own offset
    assert dict(first["columns"])["big"] == "18446744073709551615"


def test_simple_rows_without_schema_are_quarantined() -> None:
    records, bootstrap = _simple_stream()
    without = [r for i, r in enumerate(records) if i != bootstrap and i != 0]  # no BOOTSTRAP, no DDL
    rows = _rows("simple", without)
    assert [r for r in rows if r["kind"] == "row"] == []
    errors = [r for r in rows if r["kind"] == "error"]
    assert len(errors) == 4 and all("not received" in r["reason"] for r in errors)
    assert {r["offset"] for r in errors} == {r.offset for r in without if _decode_one(r)[0].kind == "row"}
    assert all(r["raw_value"] for r in errors)  # replayable


def test_decoders_carry_schemas_to_the_next_range_of_a_partition() -> None:
    records, bootstrap = _simple_stream()
    head, tail = records[:bootstrap + 1], records[bootstrap + 1:]
    assert any(r["kind"] == "bootstrap" for r in _rows("simple", head))
    rows = _rows("simple", tail)  # the next micro-batch: same partition, next offset
    assert [r["op"] for r in rows if r["kind"] == "row"] == ["insert", "insert", "update", "delete"]
    # Not the next offset (a different range): a fresh decoder, so the rows have no schema.
    rows = _rows("simple", [KafkaRecord(topic="cdc", partition=0, offset=r.offset + 1000, value=r.value)
                            for r in tail])
    assert not any(r["kind"] == "row" for r in rows)


def test_decode_kafka_batches_matches_decode_records() -> None:
    records = _records("craft", sample_events(), partition=2)
    batches = [records_to_arrow(records[:3]), records_to_arrow(records[3:])]
    via_arrow = pa.Table.from_batches(list(decode_kafka_batches(batches, "craft"))).to_pylist()
    assert via_arrow == _rows("craft", records)


def test_event_dicts_and_table_info_json() -> None:
    record = KafkaRecord(topic="t", partition=1, offset=5, timestamp_ms=1_000)
    event = sample_events()[2]
    [item] = event_dicts(record, [event])
    assert item["kafka_timestamp"] == "1970-01-01T00:00:01Z" and item["columns"]["customer"] == "Ada <ada@example.com>"
    text = table_info_json(SAMPLE_TABLE)
    assert len(text) < 1300 and parse_table_info(text) == SAMPLE_TABLE
    for info in {e.table_info for e in simulate(2).events if isinstance(e, Bootstrap)}:
        assert parse_table_info(table_info_json(info)) == info


def test_lookback_finds_schemas_sent_before_the_range() -> None:
    from pyticdc.arrow.rows import RecordDecoder

    records, bootstrap = _simple_stream()
    moved = [KafkaRecord(topic="cdc", partition=7, offset=r.offset + 5000, key=r.key, value=r.value)
             for r in records]
    head, tail = moved[:bootstrap + 1], moved[bootstrap + 1:]
    asked: list[tuple[str, int, int]] = []

    def lookback(topic: str, partition: int, before: int) -> list[list[KafkaRecord]]:
        asked.append((topic, partition, before))
        older = [r for r in head if r.offset < before]
        return [older[-1:], older[:-1]]  # newest chunk first: the BOOTSTRAP is the newest record

    decoder = RecordDecoder("simple", reuse=False, lookback=lookback)
    table = pa.Table.from_batches([*decoder.decode(tail), *decoder.finish()], schema=event_arrow_schema())
    rows = table.to_pylist()
    assert asked == [("cdc", 7, tail[0].offset)]
    assert [(r["op"], r["offset"]) for r in rows if r["kind"] == "row"] == [
        ("insert", tail[0].offset), ("insert", tail[1].offset), ("update", tail[3].offset), ("delete", tail[4].offset)]
    assert not [r for r in rows if r["kind"] in ("error", "bootstrap")]  # look-back events are not emitted


def test_rows_of_alternating_tables_keep_their_own_table() -> None:
    # The builder remembers the last row's table: rows switching between tables (and rows with none) must not
    # inherit another table's binary columns or table_info.
    from pyticdc.arrow.rows import EventRowBuilder
    from pyticdc.model import ColumnInfo, Op, TableInfo, TypeCode

    def table(name: str, charset: str) -> TableInfo:
        return TableInfo(schema="s", table=name, table_id=len(name), columns=(
            ColumnInfo(name="id", type_code=TypeCode.LONGLONG),
            ColumnInfo(name="b", type_code=TypeCode.VARCHAR, charset=charset)))

    text_table, binary_table = table("texts", "utf8mb4"), table("bins", "binary")
    builder = EventRowBuilder()
    expected = []
    for offset, info in enumerate([text_table, binary_table, binary_table, None, text_table, binary_table]):
        change = RowChange(op=Op.INSERT, schema="s", table=info.table if info else "x", commit_ts=5 + offset,
                           columns=Row({"id": offset, "b": b"ok"}), table_info=info)
        builder.add_event(KafkaRecord(topic="t", partition=0, offset=offset), 0, change)
        binary = info is binary_table
        expected.append((info.table if info else "x", table_info_json(info) if info else None,
                         {"id": str(offset), "b": "b2s=" if binary else "ok"}, ["b"] if binary else None))
    rows = builder.to_batch().to_pylist()
    assert [(r["table"], r["table_info"], dict(r["columns"]), r["base64_columns"]) for r in rows] == expected


def test_the_cycle_collector_is_paused_only_while_a_batch_decodes() -> None:
    import gc

    from pyticdc.arrow.rows import RecordDecoder, collector_paused

    records = _records("canal-json", sample_events() * 5)
    seen: list[bool] = []

    def watched() -> Iterable[KafkaRecord]:
        for record in records:
            seen.append(gc.isenabled())
            yield record

    assert gc.isenabled()
    decoder = RecordDecoder("canal-json", OPTIONS["canal-json"], batch_rows=4, reuse=False)
    batches = decoder.decode(watched())
    for _ in batches:
        assert gc.isenabled()  # never paused while the caller holds a batch
    assert seen and not any(seen)  # paused while records were read and decoded
    assert gc.isenabled()
    # A caller's own pause is kept, and an exception inside restores the collector.
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ZeroDivisionError), collector_paused():
        assert not gc.isenabled()
        _ = 1 / 0
    assert gc.isenabled()
