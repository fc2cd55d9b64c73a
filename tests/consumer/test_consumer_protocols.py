"""The consumer on real protocol bytes: what only a real codec exercises (Simple schemas, batching, DDL placement)."""

from __future__ import annotations

from typing import Any

from pyticdc.codec import PROTOCOLS
from pyticdc.consumer import ApplyUnit, Consumer
from pyticdc.model import DDLEvent, KafkaRecord, RowChange
from pyticdc.sim.faults import produce, with_offsets
from pyticdc.sim.workload import WorkloadConfig, simulate

BUILT = set(PROTOCOLS)


def _sorted(logs: dict[tuple[str, int], list[KafkaRecord]]) -> list[KafkaRecord]:
    return sorted((r for log in logs.values() for r in log), key=lambda r: (r.offset, r.partition))


def _images(events: list[Any]) -> set[tuple[int, str, frozenset[Any]]]:
    out: set[tuple[int, str, frozenset[Any]]] = set()
    for e in events:
        if isinstance(e, RowChange):
            for image in (e.columns, e.pre_columns):
                if image is not None:
                    out.add((e.commit_ts, e.table, frozenset(image.items())))
    return out


def test_simple_consumer_joining_mid_stream_waits_for_a_bootstrap() -> None:
    # Simple docs, scenario 2: a consumer that starts after the CREATE TABLE DDLs and first BOOTSTRAPs holds
    # rows until a periodic BOOTSTRAP (or a DDL) brings their schema, then reads them with it.
    history = simulate(6, WorkloadConfig(transactions=80, bootstrap_every=4, ddl_probability=0.05))
    ideal = produce(history, "simple", partitions=2)
    start = {where: next(i for i, s in enumerate(log) if s.segment >= 2) for where, log in ideal.items()}
    logs = with_offsets(ideal)
    consumer = Consumer("simple", partitions={"sim": 2})
    units: list[ApplyUnit] = []
    for record in _sorted({topic_partition: log[start[topic_partition]:] for topic_partition, log in logs.items()}):
        units += consumer.consume(record)
    rows = [r for u in units for r in u.rows]
    assert consumer.stats.rows_awaiting_schema > 0 and consumer.stats.rows_schema_resolved > 0
    assert rows and all(r.table_info is not None for r in rows)
    truth = _images(history.events)
    for r in rows:
        for image in (r.columns, r.pre_columns):
            if image is not None:
                assert (r.commit_ts, r.table, frozenset(image.items())) in truth
    # Rows whose schema version was replaced before any BOOTSTRAP of it arrived can never be read.
    for unit in units:
        for q in unit.quarantined:
            assert "never delivered" in q.reason


def test_simple_rows_after_a_restart_are_typed_from_the_state_schema_cache() -> None:
    history = simulate(1, WorkloadConfig(transactions=30))
    logs = with_offsets(produce(history, "simple", partitions=1))
    records = _sorted(logs)
    first = Consumer("simple", partitions={"sim": 1})
    units = first.consume_many(records[: len(records) // 2])
    stored = units[-1].state
    # A fresh decoder knows no schema; the consumer's state does.
    second = Consumer("simple", partitions={"sim": 1}, state=stored)
    later = second.release()
    offset = second.next_offsets()[("sim", 0)]
    for record in records[offset:]:
        later += second.consume(record)
    rows = [r for u in later for r in u.rows]
    assert rows and all(r.table_info is not None for r in rows)
    assert second.stats.rows_schema_resolved > 0


def test_canal_json_ddl_reaches_partition_zero_only_and_still_runs_once() -> None:
    history = simulate(2, WorkloadConfig(transactions=20))
    ideal = produce(history, "canal-json", {"enable-tidb-extension": True}, partitions=3)
    ddl_partitions = {topic_partition[1] for topic_partition, log in ideal.items() for s in log if s.kind == "ddl"}
    assert ddl_partitions == {0}
    consumer = Consumer("canal-json", {"enable-tidb-extension": True}, partitions={"sim": 3})
    units = consumer.consume_many(_sorted(with_offsets(ideal)))
    ddls = [u.ddl for u in units if u.ddl is not None]
    assert [d.query for d in ddls] == [e.query for e in history.events if isinstance(e, DDLEvent)]


def test_open_protocol_batches_are_consumed_whole() -> None:
    history = simulate(3, WorkloadConfig(transactions=30, max_rows_per_txn=12))
    ideal = produce(history, "open-protocol", partitions=1)
    batched = [s for s in ideal[("sim", 0)] if s.kind == "rows"]
    consumer = Consumer("open-protocol", partitions={"sim": 1})
    units = consumer.consume_many(_sorted(with_offsets(ideal)))
    assert consumer.stats.rows_buffered > len(batched)  # several rows per record
    assert consumer.stats.rows_released == sum(len(u.rows) for u in units) >= history.row_events
    assert units[-1].consistent_ts == history.final_resolved_ts
