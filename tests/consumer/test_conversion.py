"""Protocol conversion: capabilities and loss notes, the consumer-style decode, re-routing, and producing helpers."""

from __future__ import annotations

import collections
from typing import Any

import pytest

from pyticdc.codec import PROTOCOLS as PROTOCOL_NAMES
from pyticdc.consumer.conversion import convert_records
from pyticdc.consumer.stream import decode_stream
from pyticdc.model import (
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Watermark,
    physical_ms,
)
from pyticdc.routing import Router, rules_from_toml
from pyticdc.routing.capability import CAPABILITIES_TABLE, capability, conversion_notes
from pyticdc.routing.stream import StreamClock, place_watermarks, retime, route_stream
from pyticdc.sim.workload import History, WorkloadConfig, simulate
from replays import FULL_OPTIONS, assert_replica_matches, clock_for, decoded_events, numbered, replicate, source_records

PROTOCOLS = list(PROTOCOL_NAMES)


@pytest.fixture(scope="module")
def history() -> History:
    return simulate(11, WorkloadConfig(transactions=30))


# --------------------------------------------------------------------------- capabilities and notes
def test_capability_table_names_every_protocol() -> None:
    for protocol in ("open-protocol", "craft", "canal-json", "debezium", "simple"):
        assert protocol in CAPABILITIES_TABLE
    assert capability("canal-json").watermarks is False
    assert capability("canal-json").exact_commit_ts is False
    assert capability("canal-json", {"enable-tidb-extension": "true"}).watermarks is True
    assert capability("simple").schema == "full"
    assert capability("open-protocol", {"open-protocol.output-old-value": "false"}).old_value is False


def test_same_protocol_loses_nothing() -> None:
    for protocol in ("open-protocol", "craft", "simple"):
        assert conversion_notes(protocol, protocol) == []
    assert conversion_notes("canal-json", "canal-json", FULL_OPTIONS["canal-json"], FULL_OPTIONS["canal-json"]) == []


def test_notes_name_each_loss() -> None:
    to_plain_canal = " ".join(conversion_notes("open-protocol", "canal-json"))
    assert "no resolved ts" in to_plain_canal and "milliseconds" in to_plain_canal
    to_debezium = " ".join(conversion_notes("simple", "debezium", target_options=FULL_OPTIONS["debezium"]))
    assert "DECIMAL" in to_debezium and "double" in to_debezium
    to_simple = " ".join(conversion_notes("open-protocol", "simple"))
    assert "BOOTSTRAP" in to_simple and "lengths" in to_simple
    from_simple = " ".join(conversion_notes("simple", "craft"))
    assert "no table schema" in from_simple
    from_plain = " ".join(conversion_notes("debezium", "open-protocol"))
    assert "no resolved ts" in from_plain and "one watermark at the last commit ts" in from_plain


# --------------------------------------------------------------------------- the round trip, without a broker
@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize("source", PROTOCOLS)
def test_every_pair_round_trips_to_the_truth(history: History, source: str, target: str) -> None:
    records = source_records(history, source)
    result = convert_records(records, source, target, source_options=FULL_OPTIONS.get(source),
                             target_options=FULL_OPTIONS.get(target), default_topic="dst", partitions=2,
                             clock=clock_for(history))
    assert result.quarantined == []
    assert result.source_records == len(records)
    out = numbered(result.records)
    assert {r.topic for r in out} == {"dst"}
    assert_replica_matches(replicate(out, target, {"dst": 2}), history, source, target)


@pytest.mark.parametrize("source,target", [("open-protocol", "simple"), ("simple", "canal-json"),
                                           ("craft", "debezium")])
def test_commit_ts_ddl_and_watermarks_are_kept(history: History, source: str, target: str) -> None:
    records = source_records(history, source)
    out = numbered(convert_records(records, source, target, source_options=FULL_OPTIONS.get(source),
                                   target_options=FULL_OPTIONS.get(target), default_topic="dst",
                                   clock=clock_for(history)).records)
    before = [e for _, e in decoded_events(records, source)]
    after = [e for _, e in decoded_events(out, target)]
    # Records are stamped with the commit time they carry, never earlier than the history starts.
    assert min(r.timestamp_ms for r in out) >= physical_ms(history.events[0].commit_ts)  # type: ignore[union-attr]

    def row_ts(events: list[Event]) -> collections.Counter[tuple[str, int]]:
        return collections.Counter((e.table, e.commit_ts) for e in events if isinstance(e, RowChange))

    def ddls(events: list[Event]) -> list[tuple[int, str]]:
        return sorted({(e.commit_ts, e.query) for e in events if isinstance(e, DDLEvent)})

    def resolved(events: list[Event]) -> list[int]:
        return sorted({e.resolved_ts for e in events if isinstance(e, Watermark)})

    assert row_ts(after) == row_ts(before)
    assert ddls(after) == ddls(before) == sorted((e.commit_ts, e.query) for e in history.events
                                                 if isinstance(e, DDLEvent))
    assert resolved(after) == resolved(before) == sorted({e.resolved_ts for e in history.events
                                                          if isinstance(e, Watermark)})


def _key_table() -> TableInfo:
    flags = ColumnFlag.BINARY | ColumnFlag.HANDLE_KEY | ColumnFlag.PRIMARY_KEY
    return TableInfo(schema="db", table="t", table_id=50, pk_is_handle=True, columns=(
        ColumnInfo(name="id", type_code=TypeCode.LONG, flags=flags, flen=11, decimal=0, nullable=False),
        ColumnInfo(name="v", type_code=TypeCode.VARCHAR, flags=ColumnFlag.NULLABLE, charset="utf8mb4",
                   collation="utf8mb4_bin", flen=16),
    ))


def _key_change_stream() -> list[Event]:
    info = _key_table()

    def row(op: Op, ts: int, post: dict[str, Any] | None, pre: dict[str, Any] | None) -> RowChange:
        return RowChange(op=op, schema="db", table="t", commit_ts=ts, table_id=50, physical_table_id=50,
                         columns=Row(post) if post else None, pre_columns=Row(pre) if pre else None, table_info=info)

    base = 1_700_000_000_000 << 18
    return [
        DDLEvent(query="CREATE TABLE `db`.`t` (`id` int PRIMARY KEY, `v` varchar(16))", ddl_type=3,
                 commit_ts=base + 10, schema="db", table="t", table_info=info),
        row(Op.INSERT, base + 20, {"id": 1, "v": b"a"}, None),
        row(Op.INSERT, base + 20, {"id": 2, "v": b"b"}, None),
        Watermark(resolved_ts=base + 25),
        # One UPDATE moving the primary key: TiCDC splits it into DELETE(id=1) + INSERT(id=3).
        row(Op.UPDATE, base + 30, {"id": 3, "v": b"a"}, {"id": 1, "v": b"a"}),
        row(Op.UPDATE, base + 30, {"id": 2, "v": b"c"}, {"id": 2, "v": b"b"}),
        Watermark(resolved_ts=base + 40),
    ]


@pytest.mark.parametrize("target", PROTOCOLS)
@pytest.mark.parametrize("source", ["open-protocol", "simple", "canal-json"])
def test_split_update_stays_a_delete_insert_pair(source: str, target: str) -> None:
    fixed = lambda: 1_700_000_000_000  # noqa: E731
    rules = rules_from_toml('[[sink.dispatchers]]\nmatcher = ["db.*"]\npartition = "index-value"\n')
    records = numbered(Router(source, FULL_OPTIONS.get(source), default_topic="src", partitions=3, rules=rules,
                              clock=fixed).route(_key_change_stream()))
    out = numbered(convert_records(records, source, target, source_options=FULL_OPTIONS.get(source),
                                   target_options=FULL_OPTIONS.get(target), default_topic="dst", partitions=1,
                                   clock=fixed).records)

    def update_txn(records: list[KafkaRecord], protocol: str) -> list[tuple[Op, int, int]]:
        rows = [e for _, e in decoded_events(records, protocol) if isinstance(e, RowChange)]
        last = max(e.commit_ts for e in rows)
        images = [(e, e.pre_columns if e.pre_columns is not None else e.columns) for e in rows]
        return [(e.op, int(image["id"]), e.commit_ts)  # type: ignore[index]
                for e, image in images if e.commit_ts == last]

    before, after = update_txn(records, source), update_txn(out, target)
    # Still a DELETE and an INSERT (never merged back into an UPDATE), at one commit ts, in TiCDC's order
    # delete < update < insert, exactly as the source had them.
    assert [(op, key) for op, key, _ in after] == [(Op.DELETE, 1), (Op.UPDATE, 2), (Op.INSERT, 3)]
    assert after == before
    # The replica applies it correctly: id 1 is gone, id 3 holds its value.
    rows = replicate(out, target).content()[("db", "t")]
    assert sorted(dict(r)["id"] for r in rows) == [2, 3]


def test_records_that_do_not_decode_are_reported_and_skipped(history: History) -> None:
    records = source_records(history, "craft")
    garbage = KafkaRecord(topic="src", partition=1, offset=10_000, key=None, value=b"\xff not craft")
    result = convert_records([*records, garbage], "craft", "open-protocol", default_topic="dst",
                             clock=clock_for(history))
    assert [(q.partition, q.offset) for q in result.quarantined] == [(1, 10_000)]
    assert "craft" in result.quarantined[0].reason
    assert_replica_matches(replicate(numbered(result.records), "open-protocol"), history, "craft", "open-protocol")


def test_duplicate_and_shuffled_capture_records_convert_once(history: History) -> None:
    records = source_records(history, "open-protocol")
    # A capture concatenated twice and read partition by partition in reverse: offsets put it right.
    messy = list(reversed(records)) + records[: len(records) // 2]
    clean = convert_records(records, "open-protocol", "simple", default_topic="dst", clock=clock_for(history))
    again = convert_records(messy, "open-protocol", "simple", default_topic="dst", clock=clock_for(history))
    assert [(r.partition, r.key, r.value) for r in again.records] == [
        (r.partition, r.key, r.value) for r in clean.records]


def test_a_source_without_watermarks_ends_with_one(history: History) -> None:
    records = numbered(Router("debezium", default_topic="src", clock=clock_for(history)).route(history.events))
    result = convert_records(records, "debezium", "craft", default_topic="dst", clock=clock_for(history))
    events = [e for _, e in decoded_events(result.records, "craft")]
    resolved = sorted({e.resolved_ts for e in events if isinstance(e, Watermark)})
    last_change = max(e.commit_ts for e in events if isinstance(e, (RowChange, DDLEvent)))
    assert resolved == [last_change]
    assert any("no resolved ts" in note for note in result.notes)
    no_final = convert_records(records, "debezium", "craft", default_topic="dst", final_watermark=False)
    assert not any(isinstance(e, Watermark) for _, e in decoded_events(no_final.records, "craft"))


def test_rows_after_the_last_watermark_are_converted_without_a_made_up_watermark(history: History) -> None:
    events = list(history.events)
    while isinstance(events[-1], Watermark):
        events.pop()  # the changes at the end were sent, but no watermark said so yet
    records = numbered(Router("craft", default_topic="src", clock=clock_for(history)).route(events))
    stream = list(decode_stream(records, "craft"))
    assert isinstance(stream[-1], RowChange | DDLEvent)
    assert sum(isinstance(e, RowChange) for e in stream) >= sum(isinstance(e, RowChange) for e in events)


def test_target_dispatch_rules_route_by_table(history: History) -> None:
    rules = rules_from_toml('[[sink.dispatchers]]\nmatcher = ["sim.*"]\ntopic = "cdc_{table}"\n'
                            'partition = "index-value"\n')
    records = source_records(history, "simple")
    result = convert_records(records, "simple", "open-protocol", default_topic="dst", rules=rules, partitions=2,
                             clock=clock_for(history))
    topics = {r.topic for r in result.records}
    assert "dst" in topics  # schema-level DDL and watermarks go to the default topic too
    assert {t for t in topics if t.startswith("cdc_")} >= {"cdc_t_int", "cdc_t_uk"}
    replica = replicate(numbered(result.records), "open-protocol", {t: 2 for t in topics})
    assert_replica_matches(replica, history, "simple", "open-protocol")


# --------------------------------------------------------------------------- producing helpers
def test_retime_is_order_preserving_and_follows_the_rate(history: History) -> None:
    events, mapping = retime(history.events, start_ms=1_800_000_000_000, rate=50)
    old = sorted(mapping)
    assert [mapping[t] for t in old] == sorted(mapping.values())
    assert len(set(mapping.values())) == len(mapping)
    commits = sorted({e.commit_ts for e in events if isinstance(e, RowChange | DDLEvent)})
    assert physical_ms(commits[0]) >= 1_800_000_000_000
    span_s = (physical_ms(commits[-1]) - physical_ms(commits[0])) / 1000
    assert span_s == pytest.approx((len(commits) - 1) / 50, rel=0.05)
    # Schema versions still name the DDL start ts they came from.
    ddl_starts = {e.start_ts for e in events if isinstance(e, DDLEvent)}
    versions = {e.table_info.schema_version for e in events if isinstance(e, RowChange) and e.table_info}
    assert versions - {0} <= ddl_starts
    same, identity = retime(history.events)
    assert same == history.events and all(k == v for k, v in identity.items())


def test_place_watermarks_every_interval(history: History) -> None:
    events, _ = retime(history.events, start_ms=1_800_000_000_000, rate=20)
    out = list(place_watermarks(events, 200))
    seen_max = 0
    marks = []
    for index, event in enumerate(out):
        if isinstance(event, Watermark):
            assert event.resolved_ts >= seen_max
            later = [e.commit_ts for e in out[index + 1:] if isinstance(e, RowChange | DDLEvent)]
            assert all(ts > event.resolved_ts for ts in later)
            marks.append(event.resolved_ts)
        elif isinstance(event, RowChange | DDLEvent):
            seen_max = max(seen_max, event.commit_ts)
    assert marks[-1] == seen_max
    boundaries = {physical_ms(m) // 200 for m in marks[:-1]}
    span = physical_ms(seen_max) - physical_ms(out[0].commit_ts)  # type: ignore[union-attr]
    assert len(boundaries) >= span // 200 - 1
    assert [e for e in out if not isinstance(e, Watermark)] == [e for e in events if not isinstance(e, Watermark)]


def test_route_stream_stamps_commit_time_and_is_deterministic(history: History) -> None:
    def run() -> list[KafkaRecord]:
        clock = StreamClock()
        router = Router("canal-json", FULL_OPTIONS["canal-json"], default_topic="t", clock=clock)
        return list(route_stream(router, place_watermarks(history.events, 50), clock=clock))

    first, second = run(), run()
    assert first == second
    per_partition: dict[int, list[int]] = collections.defaultdict(list)
    for record in first:
        per_partition[record.partition].append(record.timestamp_ms)
    for stamps in per_partition.values():
        assert stamps == sorted(stamps)
        assert stamps[0] >= physical_ms(history.events[0].commit_ts)  # type: ignore[union-attr]


@pytest.mark.parametrize("source", ["open-protocol", "craft", "simple"])
@pytest.mark.parametrize("target", ["canal-json", "debezium"])
def test_each_loss_of_a_conversion_is_said_once(source: str, target: str) -> None:
    # Issue 14 (finding 9): convert printed the target's missing watermarks (and millisecond commit ts) twice,
    # once as the conversion's loss and once among the target's own notes.
    notes = conversion_notes(source, target)
    assert sum("no resolved ts" in note for note in notes) == 1, notes
    assert sum("physical milliseconds" in note for note in notes) == (1 if target == "canal-json" else 0), notes
