"""The ``pyticdc`` data source on Spark: capture files and a real broker, batch and streaming, Delta sinks."""

from __future__ import annotations

import datetime as dt
import struct
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyticdc.arrow.rows import decode_records, event_arrow_schema, row_text
from pyticdc.codec import PROTOCOLS, make_encoder
from pyticdc.io.capture import write_capture
from pyticdc.model import Event, KafkaRecord, Op, Row, RowChange
from pyticdc.replica import read_table
from pyticdc.sim.sample import SAMPLE_TABLE, sample_events

pytestmark = pytest.mark.spark

OPTIONS: dict[str, dict[str, str]] = {"canal-json": {"enable-tidb-extension": "true"},
                                      "debezium": {"enable-tidb-extension": "true"}}
BASE_MS = 1_763_780_000_000


def _workload(first_id: int, count: int, start_ms: int) -> list[Event]:
    """Inserts, updates and deletes of shop.orders spread over many ids (so over every partition)."""
    events: list[Event] = []
    for i in range(count):
        row_id = first_id + i
        image = {"id": row_id, "customer": f"customer {row_id} ✓".encode(), "amount": f"{row_id}.{i % 100:02d}",
                 "quantity": i, "rating": float(struct.unpack("<f", struct.pack("<f", i / 7))[0]),
                 "created_at": f"2025-11-{1 + i % 28:02d} 08:00:00.{i % 1000:03d}", "status": 1 + i % 3,
                 "note": b"" if i % 2 else "备注".encode(), "big": 2**64 - 1 - i}
        ms = start_ms + 10 * i
        events.append(RowChange(op=Op.INSERT, schema="shop", table="orders", commit_ts=ms << 18, table_id=101,
                                physical_table_id=101, columns=Row(image), table_info=SAMPLE_TABLE))
        if i % 3 == 1:
            events.append(RowChange(op=Op.UPDATE, schema="shop", table="orders", commit_ts=(ms + 1) << 18,
                                    table_id=101, physical_table_id=101, columns=Row({**image, "quantity": i + 1}),
                                    pre_columns=Row(image), table_info=SAMPLE_TABLE))
        if i % 5 == 4:
            events.append(RowChange(op=Op.DELETE, schema="shop", table="orders", commit_ts=(ms + 2) << 18,
                                    table_id=101, physical_table_id=101, pre_columns=Row(image),
                                    table_info=SAMPLE_TABLE))
    return events


def _routed(protocol: str, topic: str, events: list[Event], router: Any = None) -> tuple[Any, list[KafkaRecord]]:
    from pyticdc.routing import Router

    router = router or Router(protocol, OPTIONS.get(protocol, {}), default_topic=topic, partitions=3,
                              clock=lambda: BASE_MS)
    return router, router.route(events)


def _expected_rows(records: Iterable[KafkaRecord], protocol: str) -> list[dict[str, Any]]:
    """What the pure decode path gives, partition by partition in offset order."""
    ordered = sorted(records, key=lambda r: (r.topic, r.partition, r.offset))
    table = pa.Table.from_batches(list(decode_records(ordered, protocol, OPTIONS.get(protocol, {}))),
                                  schema=event_arrow_schema())
    return [_normal(row) for row in table.to_pylist()]


def _normal(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for name in ("columns", "pre_columns"):
        if out[name] is not None:
            out[name] = dict(out[name])
    out.pop("kafka_timestamp")  # tansu stamps its own time; compared separately
    return out


def _spark_rows(df: Any) -> list[dict[str, Any]]:
    return [_normal(row.asDict()) for row in df.collect()]


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["topic"], row["partition"], row["offset"], row["event_index"])


def _row_events(rows: Iterable[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter((r["op"], int(r["commit_ts"]), tuple(sorted((r["columns"] or {}).items())),
                    tuple(sorted((r["pre_columns"] or {}).items()))) for r in rows if r["kind"] == "row")


def _written(protocol: str, events: list[Event]) -> Counter[tuple[Any, ...]]:
    """The row events as the protocol carries them, in canonical text (what must come out)."""
    encoder = make_encoder(protocol, OPTIONS.get(protocol, {}))
    out: Counter[tuple[Any, ...]] = Counter()
    for event in events:
        projected = encoder.project(event)
        if isinstance(projected, RowChange):
            post = None if projected.columns is None else dict(zip(*row_text(projected.columns)))
            pre = None if projected.pre_columns is None else dict(zip(*row_text(projected.pre_columns)))
            out[(projected.op.value, projected.commit_ts, tuple(sorted((post or {}).items())),
                 tuple(sorted((pre or {}).items())))] += 1
    return out


def _typed_expectation(events: list[Event]) -> Counter[tuple[Any, ...]]:
    out: Counter[tuple[Any, ...]] = Counter()
    for event in events:
        if not isinstance(event, RowChange):
            continue
        image = event.columns if event.columns is not None else event.pre_columns
        assert image is not None
        status = SAMPLE_TABLE.column_by_name["status"].elems[image["status"] - 1]  # type: ignore[index]
        out[(event.op.value, Decimal(event.commit_ts), image["id"], image["customer"].decode(),
             Decimal(image["amount"]), image["quantity"], image["rating"],
             dt.datetime.fromisoformat(image["created_at"]), status, image["note"].decode(),
             Decimal(image["big"]))] += 1
    return out


def _typed_actual(df: Any) -> Counter[tuple[Any, ...]]:
    return Counter((r["_op"], r["_commit_ts"], r["id"], r["customer"], r["amount"], r["quantity"], r["rating"],
                    r["created_at"], r["status"], r["note"], r["big"]) for r in df.collect())


# --------------------------------------------------------------------------- capture files
def test_capture_files_batch_read_in_parallel(spark: Any, tmp_path: Path) -> None:
    events = sample_events() + _workload(10, 60, BASE_MS + 1000)
    _, records = _routed("canal-json", "cdc", events)
    offsets: Counter[int] = Counter()
    placed = []
    for record in records:
        placed.append(KafkaRecord(topic=record.topic, partition=record.partition, offset=offsets[record.partition],
                                  key=record.key, value=record.value, timestamp_ms=BASE_MS))
        offsets[record.partition] += 1
    placed.append(KafkaRecord(topic="cdc", partition=1, offset=offsets[1], value=b"\x00garbage"))
    path = tmp_path / "cdc.jsonl"
    write_capture(path, placed)
    df = (spark.read.format("pyticdc").option("protocol", "canal-json").option("enable-tidb-extension", "true")
          .option("maxPartitionBytes", "8192").load(str(path)))
    assert df.rdd.getNumPartitions() > 3  # byte-range splits, not one task per file
    rows = _spark_rows(df)
    assert sorted(rows, key=_key) == sorted(_expected_rows(placed, "canal-json"), key=_key)
    assert _row_events(rows) == _written("canal-json", events)
    [error] = [r for r in rows if r["kind"] == "error"]
    assert (error["partition"], error["offset"], error["raw_value"]) == (1, offsets[1], bytearray(b"\x00garbage"))


def test_typed_rows_of_every_simulated_type(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import LongType, TimestampNTZType, TimestampType

    from pyticdc.arrow.types import project_rows
    from pyticdc.sim.workload import simulate
    from pyticdc.spark import table_infos, typed_rows

    history = simulate(4)
    messages = make_encoder("simple").encode(history.events)
    records = [KafkaRecord(topic="sim", partition=0, offset=i, key=m.key, value=m.value)
               for i, m in enumerate(messages)]
    write_capture(tmp_path / "sim.parquet", records)
    events = spark.read.format("pyticdc").option("protocol", "simple").load(str(tmp_path / "sim.parquet"))
    pure = pa.Table.from_batches(list(decode_records(records, "simple")), schema=event_arrow_schema())
    assert "error" not in pure["kind"].to_pylist()
    infos = table_infos(events)
    assert {name for _, name in infos} == {e.table for e in history.events if isinstance(e, RowChange)}
    # Three tables hold every Arrow type of the mapping (ints, decimals, temporal, JSON/ENUM/SET/VECTOR, binary).
    chosen = [(key, info) for key, info in sorted(infos.items()) if key[1].split("_")[1] in ("int", "comp", "uk")]
    assert len(chosen) == 3
    for number, ((schema, table), info) in enumerate(chosen):
        # Look the TableInfo up in the events once; pass it for the other tables (one Spark job less each).
        typed = typed_rows(events, schema=schema, table=table) if number == 0 else typed_rows(events, info)
        kinds = {f.name: type(f.dataType) for f in typed.schema.fields}
        mask = pa.compute.and_(pa.compute.equal(pure["kind"], "row"), pa.compute.equal(pure["table"], table))
        expected = project_rows(pure.filter(mask).combine_chunks().to_batches()[0], info).to_pylist()
        actual = sorted((r.asDict() for r in typed.collect()), key=lambda r: r["_offset"])
        instants = {name for name, kind in kinds.items() if kind is TimestampType}
        assert [_instants(r, instants) for r in actual] == [_instants(r, instants) for r in expected]
        if "c_time" in kinds:
            # TIME is bigint microseconds (docs/types.md: Delta Lake has no interval type).
            assert kinds["c_time"] is LongType and kinds["c_datetime"] is TimestampNTZType
            assert kinds["c_timestamp"] is TimestampType


def _instants(row: dict[str, Any], instants: set[str]) -> dict[str, Any]:
    """TIMESTAMP values as naive UTC: pyarrow gives aware UTC datetimes, PySpark naive local-time ones."""
    out = dict(row)
    for name in instants:
        if isinstance(out[name], dt.datetime):
            out[name] = out[name].astimezone(dt.timezone.utc).replace(tzinfo=None)  # naive = local time
    return out


def test_streaming_over_capture_files(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    messages = make_encoder("craft").encode(sample_events())
    batch = [KafkaRecord(topic="t", partition=0, offset=i, key=m.key, value=m.value) for i, m in enumerate(messages)]
    write_capture(source / "0001.jsonl", batch)
    name = f"capture_stream_{uuid.uuid4().hex[:6]}"
    query = (spark.readStream.format("pyticdc").option("protocol", "craft").load(str(source))
             .writeStream.format("memory").queryName(name).start())
    try:
        query.processAllAvailable()
        assert spark.table(name).where("kind = 'row'").count() == 4
        write_capture(source / "0002.jsonl", batch)
        query.processAllAvailable()
        assert spark.table(name).where("kind = 'row'").count() == 8
    finally:
        query.stop()


# --------------------------------------------------------------------------- a real broker
def _reader(spark: Any, broker: Any, protocol: str, topic: str, *, stream: bool = False) -> Any:
    reader = spark.readStream if stream else spark.read
    reader = (reader.format("pyticdc").option("protocol", protocol).option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for name, value in OPTIONS.get(protocol, {}).items():
        reader = reader.option(name, value)
    return reader


def _produce(broker: Any, records: list[KafkaRecord], garbage_at: int | None = None,
             topic: str | None = None) -> list[KafkaRecord]:
    records = list(records)
    if garbage_at is not None:
        assert topic is not None
        records.insert(garbage_at, KafkaRecord(topic=topic, partition=1, value=b"\xffgarbage", key=b"junk"))
    produced: list[KafkaRecord] = broker.produce(records)
    return produced


@pytest.mark.kafka
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_broker_batch_and_streaming_give_exactly_the_written_events(
    spark: Any, kafka_broker: Any, tmp_path: Path, protocol: str,
) -> None:
    from pyticdc.spark import delta_sink, typed_rows

    topic = kafka_broker.new_topic(3, prefix=protocol)
    first = sample_events() + _workload(10, 40, BASE_MS + 1000)
    router, records = _routed(protocol, topic, first)
    produced = _produce(kafka_broker, records, garbage_at=len(records) // 2, topic=topic)
    garbage = [r for r in produced if r.value == b"\xffgarbage"]
    assert {r.partition for r in produced} == {0, 1, 2}

    # Batch: exactly the decoded records, with Kafka coordinates, typed values and the garbage quarantined.
    events = _reader(spark, kafka_broker, protocol, topic).load()
    assert events.rdd.getNumPartitions() == 3  # one task per Kafka partition
    rows = _spark_rows(events)
    assert sorted(rows, key=_key) == sorted(_expected_rows(produced, protocol), key=_key)
    assert _row_events(rows) == _written(protocol, first)
    assert [(r["partition"], r["offset"]) for r in rows if r["kind"] == "error"] == [
        (g.partition, g.offset) for g in garbage]
    assert _typed_actual(typed_rows(events, SAMPLE_TABLE)) == _typed_expectation(first)

    # Streaming: several micro-batches into the changelog and quarantine Delta tables, more data, a restart.
    changelog, quarantine, checkpoint = (str(tmp_path / n) for n in ("changelog", "quarantine", "checkpoint"))

    def start() -> Any:
        stream = _reader(spark, kafka_broker, protocol, topic, stream=True).option("maxOffsetsPerTrigger", "40").load()
        return (stream.writeStream.foreachBatch(delta_sink(changelog, quarantine, protocol, app_id=f"test-{protocol}"))
                .option("checkpointLocation", checkpoint).start())

    query = start()
    try:
        query.processAllAvailable()
        second = _workload(1000, 15, BASE_MS + 10_000)
        _, more = _routed(protocol, topic, second, router)
        produced += _produce(kafka_broker, more)
        query.processAllAvailable()
        batches = len(query.recentProgress)
    finally:
        query.stop()
    assert batches >= 2
    third: list[Event] = []
    if protocol == "simple":  # a restart costs a query start-up: check resuming on the stateful protocol
        third = _workload(5000, 5, BASE_MS + 20_000)
        _, last = _routed(protocol, topic, third, router)
        produced += _produce(kafka_broker, last)
        query = start()  # resumes from the checkpoint: only the new records
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    logged = read_table(changelog).to_pylist()
    for row in logged:
        row["kind"] = "row"
        for name in ("columns", "pre_columns"):
            row[name] = None if row[name] is None else dict(row[name])
    assert _row_events(logged) == _written(protocol, first + second + third)
    assert len({(r["partition"], r["offset"], r["event_index"]) for r in logged}) == len(logged)  # no duplicates
    bad = read_table(quarantine).to_pylist()
    assert [(r["partition"], r["offset"], r["value"], r["protocol"]) for r in bad] == [
        (g.partition, g.offset, g.value, protocol) for g in garbage]


@pytest.mark.kafka
def test_decode_kafka_matches_the_source_in_batch_and_streaming(spark: Any, kafka_broker: Any) -> None:
    from pyticdc.spark import decode_kafka

    topic = kafka_broker.new_topic(3, prefix="raw")
    _, records = _routed("simple", topic, sample_events() + _workload(10, 20, BASE_MS + 1000))
    _produce(kafka_broker, records)
    # output=records has the columns of spark.read.format("kafka"): the same decode applies to both.
    raw = _reader(spark, kafka_broker, "simple", topic).option("output", "records").load()
    assert raw.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    decoded = _spark_rows(decode_kafka(raw, "simple"))
    direct = _spark_rows(_reader(spark, kafka_broker, "simple", topic).load())
    assert sorted(decoded, key=_key) == sorted(direct, key=_key)
    assert not [r for r in decoded if r["kind"] == "error"]
    name = f"raw_stream_{uuid.uuid4().hex[:6]}"
    stream = _reader(spark, kafka_broker, "simple", topic, stream=True).option("output", "records").load()
    query = decode_kafka(stream, "simple").writeStream.format("memory").queryName(name).start()
    try:
        query.processAllAvailable()
        streamed = _spark_rows(spark.table(name))
    finally:
        query.stop()
    assert sorted(streamed, key=_key) == sorted(direct, key=_key)


@pytest.mark.kafka
def test_a_stream_from_latest_sees_only_new_records_typed(spark: Any, kafka_broker: Any) -> None:
    topic = kafka_broker.new_topic(3, prefix="latest")
    router, records = _routed("simple", topic, sample_events())
    _produce(kafka_broker, records)
    name = f"latest_{uuid.uuid4().hex[:6]}"
    stream = (spark.readStream.format("pyticdc").option("protocol", "simple")
              .option("kafka.bootstrap.servers", kafka_broker.bootstrap).option("subscribe", topic).load())
    query = stream.writeStream.format("memory").queryName(name).start()
    try:
        query.processAllAvailable()
        assert spark.table(name).count() == 0  # startingOffsets defaults to latest for a stream
        _, more = _routed("simple", topic, _workload(100, 6, BASE_MS + 5000), router)
        _produce(kafka_broker, more)
        deadline = time.monotonic() + 60
        while spark.table(name).where("kind = 'row'").count() < 6 + 2 + 1 and time.monotonic() < deadline:
            query.processAllAvailable()
        rows = spark.table(name).where("kind = 'row'")
        assert rows.count() == 6 + 2 + 1  # 6 inserts, 2 updates, 1 delete
        # Their BOOTSTRAP was sent before the stream started: the task looked back for it and typed them.
        assert rows.where("table_info IS NULL").count() == 0
        assert spark.table(name).where("kind = 'error'").count() == 0
    finally:
        query.stop()
