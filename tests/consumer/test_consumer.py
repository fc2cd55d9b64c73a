"""Consumer engine semantics, checked with model events behind a fake decoder (no protocol involved)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec.base import BaseDecoder
from pyticdc.codec.options import CodecOptions
from pyticdc.consumer import ApplyUnit, Consumer, change_identity, decode_state
from pyticdc.errors import ConfigError, DecodeError
from pyticdc.model import (
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    Watermark,
)

F = ColumnFlag
TOPIC = "t"

TABLE = TableInfo(
    schema="db", table="tb", table_id=7, schema_version=10, pk_is_handle=True,
    columns=(ColumnInfo(name="id", type_code=8, flags=int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY), nullable=False),
             ColumnInfo(name="v", type_code=15, flags=int(F.NULLABLE), charset="utf8mb4")),
)


class FakeDecoder(BaseDecoder):
    """Decodes values registered with :meth:`message`; anything else is a DecodeError."""

    PROTOCOL = "fake"
    OPTIONS = frozenset()

    def __init__(self) -> None:
        self.options = CodecOptions()
        self.claim_check = None
        self.messages: dict[bytes, list[Event]] = {}

    def message(self, *events: Event) -> bytes:
        value = f"m{len(self.messages)}".encode()
        self.messages[value] = list(events)
        return value

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        if value not in self.messages:
            raise DecodeError("fake", "unknown message", 0)
        return list(self.messages[value])


class Log:
    """Per-partition logs of fake records with offsets."""

    def __init__(self, partitions: int = 3) -> None:
        self.decoder = FakeDecoder()
        self.partitions = partitions
        self.logs: dict[int, list[KafkaRecord]] = {p: [] for p in range(partitions)}

    def send(self, partition: int, *events: Event) -> KafkaRecord:
        log = self.logs[partition]
        record = KafkaRecord(topic=TOPIC, partition=partition, offset=len(log), value=self.decoder.message(*events))
        log.append(record)
        return record

    def raw(self, partition: int, value: bytes) -> KafkaRecord:
        log = self.logs[partition]
        record = KafkaRecord(topic=TOPIC, partition=partition, offset=len(log), key=b"k", value=value)
        log.append(record)
        return record

    def watermark(self, resolved_ts: int) -> list[KafkaRecord]:
        return [self.send(p, Watermark(resolved_ts=resolved_ts)) for p in range(self.partitions)]

    def consumer(self, state: bytes | None = None, **kwargs: Any) -> Consumer:
        return Consumer("fake", partitions={TOPIC: self.partitions}, decoder=self.decoder, state=state, **kwargs)


def row(op: Op, commit_ts: int, key: int | None = None, value: str = "x", *, pre_key: int | None = None,
        pre_value: str = "old", table: TableInfo = TABLE) -> RowChange:
    post = Row({"id": key, "v": value.encode()}) if op != Op.DELETE else None
    pre = Row({"id": pre_key if pre_key is not None else key, "v": pre_value.encode()}) if op != Op.INSERT else None
    return RowChange(op=op, schema=table.schema, table=table.table, commit_ts=commit_ts, columns=post, pre_columns=pre,
                     table_id=table.table_id, physical_table_id=table.table_id, table_info=table)


def ddl(commit_ts: int, query: str = "ALTER TABLE `db`.`tb` ADD COLUMN `c` int") -> DDLEvent:
    return DDLEvent(query=query, ddl_type=5, commit_ts=commit_ts, schema="db", table="tb")


def released_rows(units: Iterable[ApplyUnit]) -> list[tuple[int, str, Any]]:
    return [(r.commit_ts, r.op.value, (r.columns or r.pre_columns or Row()).get("id"))
            for u in units for r in u.rows]


# --------------------------------------------------------------------------- watermarks and order
def test_rows_wait_for_every_partition_then_leave_in_commit_ts_order() -> None:
    log = Log()
    c = log.consumer()
    assert c.consume(log.send(1, row(Op.INSERT, 300, 3))) == []
    assert c.consume(log.send(0, row(Op.INSERT, 200, 2), row(Op.INSERT, 100, 1))) == []
    w0, w1, w2 = log.watermark(400)
    assert c.consume(w0) == [] and c.consume(w1) == []
    assert c.pending_rows == 3
    units = c.consume(w2)
    assert [u.kind for u in units] == ["rows"]
    assert released_rows(units) == [(100, "insert", 1), (200, "insert", 2), (300, "insert", 3)]
    assert units[0].consistent_ts == 400 and c.released_ts == 400 and c.pending_rows == 0


def test_rows_above_the_global_watermark_stay_buffered() -> None:
    log = Log(partitions=2)
    c = log.consumer()
    c.consume(log.send(0, row(Op.INSERT, 100, 1), row(Op.INSERT, 500, 5)))
    c.consume(log.send(1, Watermark(resolved_ts=600)))
    units = c.consume(log.send(0, Watermark(resolved_ts=200)))
    assert released_rows(units) == [(100, "insert", 1)]
    assert c.watermark == 200 and c.pending_rows == 1


def test_split_update_releases_delete_before_insert_whatever_the_arrival_order() -> None:
    log = Log(partitions=2)
    c = log.consumer()
    # A key moved 1 -> 2 at ts 100 (split by TiCDC into DELETE + INSERT, maybe on two partitions under
    # index-value dispatch), and an update of row 3 in the same transaction.
    c.consume(log.send(0, row(Op.INSERT, 100, 2)))
    c.consume(log.send(1, row(Op.UPDATE, 100, 3)))
    c.consume(log.send(1, row(Op.DELETE, 100, 1)))
    units = c.consume_many(log.watermark(100))
    assert [op for _, op, _ in released_rows(units)] == ["delete", "update", "insert"]


def test_stale_and_repeated_watermarks_are_ignored_not_fatal() -> None:
    log = Log(partitions=1)
    c = log.consumer()
    c.consume(log.send(0, Watermark(resolved_ts=500)))
    for resolved_ts in (100, 500, 0, 499):
        assert c.consume(log.send(0, Watermark(resolved_ts=resolved_ts))) == []
    assert c.watermark == 500 and c.stats.watermarks_stale == 4


# --------------------------------------------------------------------------- duplicates
def test_exact_duplicates_above_the_watermark_are_dropped_by_identity() -> None:
    log = Log(partitions=2)
    c = log.consumer()
    r = row(Op.UPDATE, 100, 1)
    c.consume(log.send(0, r))
    c.consume(log.send(0, r))  # producer retry
    c.consume(log.send(1, r))  # a re-send on another partition (dispatcher changed across a restart)
    units = c.consume_many(log.watermark(100))
    assert released_rows(units) == [(100, "update", 1)]
    assert c.stats.rows_duplicate == 2


def test_rows_at_or_below_their_partitions_resolved_ts_are_replays() -> None:
    log = Log(partitions=2)
    c = log.consumer()
    c.consume(log.send(0, row(Op.INSERT, 100, 1)))
    c.consume_many([log.send(0, Watermark(resolved_ts=150))])
    # TiCDC restarts from checkpoint 50: the row comes again on partition 0, already covered there.
    c.consume(log.send(0, Watermark(resolved_ts=50)))
    c.consume(log.send(0, row(Op.INSERT, 100, 1)))
    units = c.consume(log.send(1, Watermark(resolved_ts=150)))
    assert released_rows(units) == [(100, "insert", 1)]
    assert c.stats.rows_replayed == 1 and c.stats.watermarks_stale == 1


def test_a_row_lost_in_flight_and_resent_behind_a_later_row_is_kept() -> None:
    # The Go consumer (reference §9) drops a row whose commit ts is below its table's high watermark in
    # the partition. Here: row@100 was lost in flight, row@200 arrived, TiCDC restarted from checkpoint 50
    # and re-sent both. The genuine row@100 arrives after row@200 and must be applied.
    log = Log(partitions=1)
    c = log.consumer()
    c.consume(log.send(0, Watermark(resolved_ts=50)))
    c.consume(log.send(0, row(Op.INSERT, 200, 2)))
    c.consume(log.send(0, Watermark(resolved_ts=50)))
    c.consume(log.send(0, row(Op.INSERT, 100, 1)))
    c.consume(log.send(0, row(Op.INSERT, 200, 2)))
    units = c.consume(log.send(0, Watermark(resolved_ts=200)))
    assert released_rows(units) == [(100, "insert", 1), (200, "insert", 2)]


def test_identical_content_in_different_transactions_is_not_a_duplicate() -> None:
    log = Log(partitions=1)
    c = log.consumer()
    c.consume(log.send(0, row(Op.INSERT, 100, 1)))
    c.consume(log.send(0, row(Op.DELETE, 110, 1, pre_value="x")))
    c.consume(log.send(0, row(Op.INSERT, 120, 1)))
    units = c.consume(log.send(0, Watermark(resolved_ts=120)))
    assert released_rows(units) == [(100, "insert", 1), (110, "delete", 1), (120, "insert", 1)]


def test_identity_uses_the_handle_or_row_id_before_the_whole_image() -> None:
    no_handle = TableInfo(schema="db", table="nh", columns=(ColumnInfo(name="id", type_code=8),))
    a = RowChange(op=Op.INSERT, schema="db", table="nh", commit_ts=1, columns=Row({"id": 1}), table_info=no_handle)
    assert change_identity(a)[-1] == ("image", (("id", 1),))
    with_rowid = RowChange(op=Op.INSERT, schema="db", table="nh", commit_ts=1, columns=Row({"id": 1}), row_id=9,
                           table_info=no_handle)
    assert change_identity(with_rowid)[-1] == ("rowid", 9)
    keyed = row(Op.UPDATE, 1, 5, "new", pre_key=4)
    assert change_identity(keyed)[-2:] == (("key", (4,)), ("key", (5,)))


# --------------------------------------------------------------------------- DDL
def test_a_broadcast_ddl_runs_once_as_a_barrier_between_rows() -> None:
    log = Log()
    c = log.consumer()
    c.consume(log.send(2, row(Op.INSERT, 90, 1)))
    for p in range(3):
        c.consume(log.send(p, ddl(100)))
    c.consume(log.send(1, row(Op.INSERT, 110, 2)))
    c.consume(log.send(0, row(Op.INSERT, 95, 3)))
    units = c.consume_many(log.watermark(120))
    assert [u.kind for u in units] == ["rows", "ddl", "rows"]
    assert released_rows(units[:1]) == [(90, "insert", 1), (95, "insert", 3)]
    assert units[1].ddl is not None and units[1].ddl.commit_ts == 100
    assert released_rows(units[2:]) == [(110, "insert", 2)]
    assert [u.consistent_ts for u in units] == [99, 100, 120]
    assert c.stats.ddls_duplicate == 2


def test_a_ddl_waits_for_every_partitions_watermark() -> None:
    log = Log(partitions=2)
    c = log.consumer()
    c.consume(log.send(0, ddl(100)))  # Canal-JSON style: partition 0 only
    c.consume(log.send(0, Watermark(resolved_ts=150)))
    assert c.pending_ddls == 1
    units = c.consume(log.send(1, Watermark(resolved_ts=120)))
    assert [u.kind for u in units] == ["ddl"] and units[0].consistent_ts == 120


def test_a_ddl_replayed_after_it_ran_is_dropped() -> None:
    log = Log(partitions=1)
    c = log.consumer()
    c.consume_many([log.send(0, ddl(100)), log.send(0, Watermark(resolved_ts=100))])
    assert c.consume_many([log.send(0, Watermark(resolved_ts=10)), log.send(0, ddl(100))]) == []
    assert c.pending_ddls == 0 and c.stats.ddls_replayed == 1


def test_checkpoint_unit_when_the_watermark_moves_without_changes() -> None:
    log = Log(partitions=1)
    c = log.consumer()
    units = c.consume(log.send(0, Watermark(resolved_ts=10)))
    assert [(u.kind, u.consistent_ts) for u in units] == [("checkpoint", 10)]


def test_max_unit_rows_cuts_only_between_commit_timestamps() -> None:
    log = Log(partitions=1)
    c = log.consumer(max_unit_rows=2)
    c.consume(log.send(0, row(Op.INSERT, 10, 1), row(Op.INSERT, 10, 2), row(Op.INSERT, 10, 3),
                       row(Op.INSERT, 20, 4), row(Op.INSERT, 30, 5)))
    units = c.consume(log.send(0, Watermark(resolved_ts=40)))
    assert [len(u.rows) for u in units] == [3, 2]
    assert [u.consistent_ts for u in units] == [10, 40]


# --------------------------------------------------------------------------- offsets, quarantine, config
def test_offsets_below_the_resume_point_are_skipped() -> None:
    log = Log(partitions=1)
    c = log.consumer()
    first = log.send(0, row(Op.INSERT, 10, 1))
    c.consume(first)
    assert c.consume(first) == [] and c.stats.skipped_offsets == 1
    assert c.next_offsets() == {(TOPIC, 0): 1}


def test_undecodable_records_are_quarantined_with_their_bytes() -> None:
    log = Log(partitions=1)
    c = log.consumer()
    bad = log.raw(0, b"\xff garbage")
    units = c.consume(bad)
    assert [u.kind for u in units] == ["quarantine"]
    q = units[0].quarantined[0]
    assert (q.topic, q.partition, q.offset, q.protocol, q.key, q.value) == (TOPIC, 0, 0, "fake", b"k", b"\xff garbage")
    assert "unknown message" in q.reason
    c.consume(log.send(0, row(Op.INSERT, 10, 1)))
    assert released_rows(c.consume(log.send(0, Watermark(resolved_ts=10)))) == [(10, "insert", 1)]
    # The quarantine unit's state already points past the bad record.
    assert decode_state(units[0].state).next_offsets[(TOPIC, 0)] == 1


def test_a_record_from_an_unsubscribed_partition_is_a_config_error() -> None:
    log = Log(partitions=1)
    with pytest.raises(ConfigError):
        log.consumer().consume(KafkaRecord(topic=TOPIC, partition=5, offset=0, value=b""))


@pytest.mark.parametrize("protocol", ["canal-json", "debezium"])
def test_protocols_without_watermarks_are_refused(protocol: str) -> None:
    # Without enable-tidb-extension they send no watermark (and Canal-JSON no commit ts): the consumer
    # could never know anything is complete.
    with pytest.raises(ConfigError, match="enable-tidb-extension") as refused:
        Consumer(protocol, partitions={TOPIC: 1})
    # The message names the protocol refused, and only that one.
    others = {"canal-json", "debezium"} - {protocol}
    assert str(refused.value).startswith(protocol) and not any(o in str(refused.value) for o in others)
    Consumer(protocol, {"enable-tidb-extension": True}, partitions={TOPIC: 1})


def test_state_belongs_to_one_protocol() -> None:
    log = Log(partitions=1)
    state = log.consumer().state()
    with pytest.raises(ConfigError):
        Consumer("open-protocol", partitions={TOPIC: 1}, state=state)
    with pytest.raises(ValueError, match="corrupt"):
        log.consumer(state=b"\x92\x01")


# --------------------------------------------------------------------------- schemas (Simple-style rows)
def _typed(row: RowChange, info: TableInfo) -> RowChange:
    """A stand-in for simple.resolve_row: string wire values typed with the schema."""
    def convert(image: Row | None) -> Row | None:
        if image is None:
            return None
        return Row({k: int(v) if info.column_by_name[k].type_code == 8 else str(v).encode() for k, v in image.items()})
    return RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                     columns=convert(row.columns), pre_columns=convert(row.pre_columns), table_info=info,
                     table_id=info.table_id, physical_table_id=row.physical_table_id, schema_version=row.schema_version)


def untyped(op: Op, commit_ts: int, key: int, version: int = 10) -> RowChange:
    image = Row({"id": str(key), "v": "x"})
    return RowChange(op=op, schema="db", table="tb", commit_ts=commit_ts, columns=image if op != Op.DELETE else None,
                     pre_columns=image if op != Op.INSERT else None, schema_version=version)


def test_rows_without_schema_hold_the_release_until_a_bootstrap() -> None:
    log = Log(partitions=1)
    c = log.consumer(resolve_row=_typed)
    c.consume(log.send(0, untyped(Op.INSERT, 100, 1)))
    c.consume(log.send(0, untyped(Op.INSERT, 100, 1)))  # duplicate while unresolved: same string identity
    # Everything before the held row is complete, the row itself is not: consistent up to 99.
    assert [(u.kind, u.consistent_ts) for u in c.consume(log.send(0, Watermark(resolved_ts=150)))] == [
        ("checkpoint", 99)]
    assert c.stats.rows_awaiting_schema == 1
    units = c.consume(log.send(0, Bootstrap(table_info=TABLE)))
    assert released_rows(units) == [(100, "insert", 1)]
    assert units[0].rows[0].columns == {"id": 1, "v": b"x"} and units[0].rows[0].table_info == TABLE


def test_a_resolved_row_and_its_later_duplicate_share_one_identity() -> None:
    log = Log(partitions=1)
    c = log.consumer(resolve_row=_typed)
    c.consume(log.send(0, untyped(Op.INSERT, 100, 1)))
    c.consume(log.send(0, Bootstrap(table_info=TABLE)))
    c.consume(log.send(0, untyped(Op.INSERT, 100, 1)))  # re-sent after the schema is known
    units = c.consume(log.send(0, Watermark(resolved_ts=100)))
    assert released_rows(units) == [(100, "insert", 1)] and c.stats.rows_duplicate == 1


def test_rows_read_with_the_schema_version_they_were_written_under() -> None:
    log = Log(partitions=1)
    c = log.consumer(resolve_row=_typed)
    newer = TableInfo(schema="db", table="tb", table_id=7, schema_version=20, columns=TABLE.columns[:1])
    c.consume(log.send(0, DDLEvent(query="ALTER TABLE `db`.`tb` DROP COLUMN `v`", ddl_type=6, commit_ts=25,
                                   schema="db", table="tb", table_info=newer, pre_table_info=TABLE)))
    c.consume(log.send(0, untyped(Op.INSERT, 15, 1, version=10)))
    units = c.consume(log.send(0, Watermark(resolved_ts=30)))
    assert units[0].rows[0].table_info == TABLE


def test_a_row_whose_schema_version_never_comes_is_quarantined() -> None:
    log = Log(partitions=1)
    c = log.consumer(resolve_row=_typed)
    newer = TableInfo(schema="db", table="tb", table_id=7, schema_version=500, columns=TABLE.columns)
    c.consume(log.send(0, untyped(Op.INSERT, 100, 1, version=0)))
    c.consume(log.send(0, Bootstrap(table_info=newer)))
    units = c.consume(log.send(0, Watermark(resolved_ts=600)))
    assert [u.kind for u in units] == ["quarantine", "checkpoint"]
    assert "never delivered" in units[0].quarantined[0].reason


# --------------------------------------------------------------------------- commit protocol
def _scenario(log: Log) -> list[KafkaRecord]:
    records = [
        log.send(0, row(Op.INSERT, 10, 1)), log.send(1, row(Op.INSERT, 20, 2)),
        log.send(0, ddl(30)), log.send(1, ddl(30)), log.send(2, ddl(30)),
        log.send(2, row(Op.UPDATE, 40, 2, "y", pre_value="x")), log.send(0, row(Op.DELETE, 50, 1, pre_value="x")),
        *log.watermark(60),
        log.send(1, row(Op.INSERT, 70, 7)), *log.watermark(80),
    ]
    return records


def _applied(units: Iterable[ApplyUnit]) -> list[object]:
    return [item for u in units for item in (*u.rows, *([u.ddl] if u.ddl is not None else []))]


@pytest.mark.parametrize("compact", [False, True], ids=["full", "compact"])
def test_resuming_from_any_units_state_continues_exactly(compact: bool) -> None:
    log = Log()
    records = _scenario(log)
    reference = log.consumer(compact_state=compact).consume_many(records)
    assert [u.kind for u in reference] == ["rows", "ddl", "rows", "rows"]
    for cut in range(len(reference)):
        # The applier stored unit `cut`'s state with its effects, then the process died.
        resumed = log.consumer(state=reference[cut].state, compact_state=compact)
        after = resumed.release()
        offsets = resumed.next_offsets()
        after += resumed.consume_many(r for r in records if r.offset >= offsets[(r.topic, r.partition)])
        assert _applied(after) == _applied(reference[cut + 1:])
        assert (after or reference)[-1].consistent_ts == 80
        if not compact:
            assert [u.kind for u in after] == [u.kind for u in reference[cut + 1:]]


def test_compact_state_holds_offsets_not_rows() -> None:
    log = Log(partitions=2)
    full, compact = log.consumer(), log.consumer(compact_state=True)
    records = [log.send(0, Watermark(resolved_ts=5)), log.send(1, Watermark(resolved_ts=5))]
    records += [log.send(0, *(row(Op.INSERT, 10 + i, i, "v" * 50) for i in range(40)))]
    records += [log.send(0, Watermark(resolved_ts=100))]
    for record in records:
        full.consume(record)
        compact.consume(record)
    big, small = decode_state(full.state()), decode_state(compact.state())
    assert len(big.rows) == 40 and small.rows == [] and small.compact
    # Re-read from the record that holds the buffered rows, with the resolved ts partition 0 had then.
    assert small.next_offsets == {(TOPIC, 0): 1, (TOPIC, 1): 1} and small.resolved[(TOPIC, 0)] == 5
    assert len(compact.state()) * 5 < len(full.state())
    with pytest.raises(ConfigError, match="compact"):
        log.consumer(state=compact.state())


@settings(max_examples=60, deadline=None)
@given(st.data(), st.booleans())
def test_any_interleaving_and_crash_point_releases_the_same_history(data: st.DataObject, compact: bool) -> None:
    log = Log()
    records = _scenario(log)
    by_partition = {p: [r for r in records if r.partition == p] for p in range(3)}

    def merge(start: dict[tuple[str, int], int]) -> list[KafkaRecord]:
        queues = {p: [r for r in rs if r.offset >= start.get((TOPIC, p), 0)] for p, rs in by_partition.items()}
        out: list[KafkaRecord] = []
        while any(queues.values()):
            p = data.draw(st.sampled_from(sorted(p for p, q in queues.items() if q)))
            out.append(queues[p].pop(0))
        return out

    applied: list[ApplyUnit] = []
    state: bytes | None = None
    crashes = data.draw(st.lists(st.integers(0, len(records)), max_size=3))
    consumed = 0
    while True:
        consumer = log.consumer(state=state, compact_state=compact)
        units = consumer.release()
        stream = merge(consumer.next_offsets())
        crashed = False
        for record in stream:
            units += consumer.consume(record)
            consumed += 1
            if crashes and consumed >= crashes[0]:
                crashes.pop(0)
                crashed = True
                break
        keep = data.draw(st.integers(0, len(units))) if crashed else len(units)
        applied += units[:keep]
        state = applied[-1].state if applied else None
        if not crashed:
            break
    rows = [(r.commit_ts, r.op.value) for u in applied for r in u.rows]
    assert rows == [(10, "insert"), (20, "insert"), (40, "update"), (50, "delete"), (70, "insert")]
    assert [u.ddl.commit_ts for u in applied if u.ddl is not None] == [30]
    assert applied[-1].consistent_ts == 80


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 40), st.integers(0, 5)), min_size=1, max_size=30),
       st.randoms(use_true_random=False))
def test_duplicated_records_never_change_what_is_released(sends: list[tuple[int, int, int]], rnd: Any) -> None:
    # Rows sent in commit-ts order per partition (TiCDC's first-send order), each maybe duplicated later.
    log = Log()
    per_partition: dict[int, list[RowChange]] = {0: [], 1: [], 2: []}
    for partition, commit_ts, key in sorted(sends, key=lambda s: s[1]):
        per_partition[partition].append(row(Op.INSERT, commit_ts, key * 100 + partition, f"{commit_ts}"))
    clean = Log()
    for p, rows in per_partition.items():
        for r in rows:
            clean.send(p, r)
    clean.watermark(50)
    in_offset_order: list[KafkaRecord] = sorted((r for rs in clean.logs.values() for r in rs),
                                                key=lambda r: (r.offset, r.partition))
    expected = released_rows(clean.consumer().consume_many(in_offset_order))
    for p, rows in per_partition.items():
        sent: list[RowChange] = []
        for r in rows:
            log.send(p, r)
            sent.append(r)
            if rnd.random() < 0.4:
                log.send(p, rnd.choice(sent))
    log.watermark(50)
    merged = sorted((r for rs in log.logs.values() for r in rs), key=lambda r: (r.partition, r.offset))
    got = released_rows(log.consumer().consume_many(_shuffle_keep_order(merged, rnd)))
    assert sorted(got) == sorted(expected)
    assert [t for t, _, _ in got] == sorted(t for t, _, _ in got)


def _shuffle_keep_order(records: list[KafkaRecord], rnd: Any) -> list[KafkaRecord]:
    queues: dict[int, list[KafkaRecord]] = {}
    for r in records:
        queues.setdefault(r.partition, []).append(r)
    out: list[KafkaRecord] = []
    while queues:
        p = rnd.choice(sorted(queues))
        out.append(queues[p].pop(0))
        if not queues[p]:
            del queues[p]
    return out


# --------------------------------------------------------------------------- odds and ends
def test_records_may_be_plain_tuples() -> None:
    log = Log(partitions=1)
    c = log.consumer()
    first = log.send(0, row(Op.INSERT, 10, 1))
    mark = log.send(0, Watermark(resolved_ts=10))
    units = c.consume_many([(r.topic, r.partition, r.offset, r.key, r.value) for r in (first, mark)])
    assert released_rows(units) == [(10, "insert", 1)]


def test_schema_cache_finds_versions_by_number_and_by_commit_ts() -> None:
    from pyticdc.consumer import SchemaCache

    v10 = TABLE
    v20 = TableInfo(schema="db", table="tb", table_id=7, schema_version=20, columns=TABLE.columns[:1])
    cache = SchemaCache()
    assert cache.learn(v10, 10) and cache.learn(v20, 20) and not cache.learn(v20, 20)
    assert cache.lookup("db", "tb", 15) == v10 and cache.lookup("db", "tb", 25) == v20
    assert cache.lookup("db", "tb", 5) is None and cache.lookup("db", "tb", 99, schema_version=10) == v10
    assert cache.lookup("db", "other", 25) is None
    again = SchemaCache.from_builtins(decode_state(_state_with(cache)).schemas)
    assert again.lookup("db", "tb", 25) == v20
    cache.prune(30)
    assert cache.lookup("db", "tb", 15) is None and cache.lookup("db", "tb", 35) == v20


def _state_with(cache: Any) -> bytes:
    from pyticdc.consumer import ConsumerState, encode_state

    return encode_state(ConsumerState(protocol="fake", next_offsets={}, resolved={}, schemas=cache.to_builtins()))


def test_state_round_trips_buffered_rows_ddls_and_offsets() -> None:
    log = Log(partitions=2)
    c = log.consumer()
    r = row(Op.UPDATE, 100, 1, "new")
    c.consume(log.send(0, r, ddl(200)))
    c.consume(log.send(1, Watermark(resolved_ts=50)))
    state = decode_state(c.state())
    assert state.next_offsets == {(TOPIC, 0): 1, (TOPIC, 1): 1}
    assert state.resolved == {(TOPIC, 0): 0, (TOPIC, 1): 50}
    assert [b.row for b in state.rows] == [r] and state.ddls == [ddl(200)]
    assert state.stats.rows_buffered == 1
