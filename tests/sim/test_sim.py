"""The simulator's own guarantees: reproducible workloads, TiCDC-correct schemas and events, a sound
fault model, and a replica that reproduces the truth when fed the events directly."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest

from pyticdc.consumer import ApplyUnit
from pyticdc.errors import ReplicaError
from pyticdc.model import (
    ActionType,
    Bootstrap,
    ColumnFlag,
    DDLEvent,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TypeCode,
    Watermark,
)
from pyticdc.mysql import table_info_with_flags
from pyticdc.sim.faults import Sent, duplicate, interleave, replay_ranges, restart, with_offsets
from pyticdc.sim.oracle import TruthProjector, compare
from pyticdc.sim.replica import Replica
from pyticdc.sim.workload import TEMPLATES, WorkloadConfig, simulate

F = ColumnFlag


# --------------------------------------------------------------------------- workload
def test_same_seed_same_history_other_seed_other_history() -> None:
    assert simulate(7).events == simulate(7).events
    assert simulate(7).events != simulate(8).events


def test_every_column_type_is_covered() -> None:
    codes = {c.type_code for t in TEMPLATES.values() for c in t.columns}
    expected = {TypeCode.TINY, TypeCode.SHORT, TypeCode.INT24, TypeCode.LONG, TypeCode.LONGLONG, TypeCode.FLOAT,
                TypeCode.DOUBLE, TypeCode.NEWDECIMAL, TypeCode.DATE, TypeCode.DATETIME, TypeCode.TIMESTAMP,
                TypeCode.TIME, TypeCode.YEAR, TypeCode.BIT, TypeCode.JSON, TypeCode.ENUM, TypeCode.SET,
                TypeCode.STRING, TypeCode.VARCHAR, TypeCode.TINY_BLOB, TypeCode.BLOB, TypeCode.MEDIUM_BLOB,
                TypeCode.LONG_BLOB, TypeCode.TIDB_VECTOR}
    assert expected <= codes
    # Text and binary flavours of the string types, signed and unsigned of the integer types.
    strings = {(c.type_code, c.charset == "binary") for t in TEMPLATES.values() for c in t.columns
               if c.type_code in (TypeCode.STRING, TypeCode.VARCHAR, TypeCode.BLOB)}
    assert len(strings) == 6
    assert {(c.type_code, c.unsigned) for t in TEMPLATES.values() for c in t.columns if c.type_code in (1, 2, 3, 8, 9)
            } >= {(code, u) for code in (1, 2, 3, 8, 9) for u in (False, True)}


def test_flags_follow_ticdc_rules() -> None:
    def flags(template: str) -> dict[str, int]:
        t = TEMPLATES[template]
        info = table_info_with_flags("s", template, 1, 1, t.columns, t.indexes, t.pk_is_handle)
        return {c.name: c.flags for c in info.columns}

    t_int = flags("t_int")
    assert t_int["id"] == F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY == 11  # reference §1.2 example
    assert t_int["u_code"] == F.UNIQUE_KEY | F.NULLABLE  # nullable unique key: not the handle
    assert t_int["c_year"] & F.UNSIGNED and t_int["c_bit"] & F.UNSIGNED and t_int["c_int_u"] & F.UNSIGNED
    assert not t_int["c_int"] & F.UNSIGNED
    t_comp = flags("t_comp")
    assert t_comp["k1"] == F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY | F.MULTIPLE_KEY
    assert t_comp["k2"] == F.HANDLE_KEY | F.PRIMARY_KEY | F.MULTIPLE_KEY  # utf8mb4: no Binary flag
    assert t_comp["c_json"] & F.BINARY and not t_comp["c_enum"] & F.BINARY
    t_uk = flags("t_uk")
    assert t_uk["a"] == F.BINARY | F.HANDLE_KEY | F.UNIQUE_KEY | F.MULTIPLE_KEY
    assert t_uk["c_blob"] == F.BINARY | F.NULLABLE
    t_rowid = flags("t_rowid")
    assert not any(f & F.HANDLE_KEY for f in t_rowid.values())
    assert t_rowid["seq"] == F.BINARY | F.UNSIGNED


def test_commit_timestamps_are_tsos_increasing_per_transaction() -> None:
    history = simulate(3)
    last = 0
    for event in history.events:
        tso = event.resolved_ts if isinstance(event, Watermark) else (
            0 if isinstance(event, Bootstrap) else event.commit_ts)
        if tso == 0:
            continue
        assert tso >> 18 >= WorkloadConfig().start_physical_ms
        if isinstance(event, RowChange) and tso == last:
            continue  # rows of one transaction share its commit ts
        assert tso > last
        last = tso
    assert history.final_resolved_ts == last


def test_transactions_hold_one_event_per_row_key() -> None:
    for seed in range(5):
        history = simulate(seed)
        seen: Counter[tuple[int, str, object]] = Counter()
        for event in history.events:
            if isinstance(event, RowChange):
                assert event.table_info is not None
                key = event.row_id or tuple((event.columns or event.pre_columns or Row()).get(c)
                                            for c in event.table_info.handle_key_columns)
                seen[(event.commit_ts, event.table, key)] += 1
        assert max(seen.values()) == 1


def test_ddl_history_shapes() -> None:
    events = [e for seed in range(12) for e in simulate(seed).events if isinstance(e, DDLEvent)]
    kinds = {e.ddl_type for e in events}
    assert {ActionType.CREATE_SCHEMA, ActionType.CREATE_TABLE, ActionType.DROP_TABLE, ActionType.TRUNCATE_TABLE,
            ActionType.RENAME_TABLE, ActionType.ADD_COLUMN, ActionType.DROP_COLUMN, ActionType.MODIFY_COLUMN,
            ActionType.ADD_INDEX, ActionType.DROP_INDEX} <= kinds
    for e in events:
        assert e.start_ts < e.commit_ts
        if e.ddl_type == ActionType.TRUNCATE_TABLE:
            assert e.table_info is not None and e.pre_table_info is not None
            assert e.table_info.table_id != e.pre_table_info.table_id
        if e.ddl_type == ActionType.RENAME_TABLE:
            assert e.table_info is not None and e.pre_table_info is not None
            assert e.table_info.schema_version == e.pre_table_info.schema_version
            assert e.table_info.table != e.pre_table_info.table
        if e.ddl_type in (ActionType.ADD_COLUMN, ActionType.DROP_COLUMN, ActionType.ADD_INDEX):
            assert e.table_info is not None and e.pre_table_info is not None
            assert e.pre_table_info.schema_version < e.table_info.schema_version < e.commit_ts
        if e.ddl_type == ActionType.CREATE_TABLE:
            assert e.pre_table_info is None and e.table_info is not None


def test_a_unique_index_on_a_table_without_pk_becomes_its_handle() -> None:
    for seed in range(40):
        for e in simulate(seed).events:
            if isinstance(e, DDLEvent) and "`uk_seq`" in e.query and "ADD" in e.query:
                assert e.table_info is not None
                assert e.table_info.handle_key_columns == ("seq",)
                return
    pytest.fail("no workload added uk_seq")


def test_bootstrap_precedes_a_tables_first_row() -> None:
    history = simulate(4)
    bootstrapped: set[tuple[int, int]] = set()
    for event in history.events:
        if isinstance(event, Bootstrap):
            bootstrapped.add((event.table_info.table_id, event.table_info.schema_version))
        elif isinstance(event, RowChange):
            assert event.table_info is not None
            assert (event.table_info.table_id, event.table_info.schema_version) in bootstrapped


# --------------------------------------------------------------------------- replica against the truth
def _units(history_events: Sequence[object]) -> list[ApplyUnit]:
    units: list[ApplyUnit] = []
    for event in history_events:
        if isinstance(event, RowChange):
            units.append(ApplyUnit(kind="rows", rows=(event,), consistent_ts=event.commit_ts))
        elif isinstance(event, DDLEvent):
            units.append(ApplyUnit(kind="ddl", ddl=event, consistent_ts=event.commit_ts))
    return units


@pytest.mark.parametrize("seed", range(8))
def test_replica_fed_the_raw_events_equals_the_truth_at_every_commit(seed: int) -> None:
    history = simulate(seed)
    replica = Replica()
    projector = TruthProjector(None)
    units = _units(history.events)
    for at, unit in enumerate(units):
        replica.apply(unit)
        if at + 1 < len(units) and units[at + 1].consistent_ts == unit.consistent_ts:
            continue  # mid-transaction
        truth = history.truth_at(unit.consistent_ts)
        assert compare(replica.content(), projector.snapshot(truth)) is None


def test_replica_refuses_double_apply_and_missing_rows() -> None:
    history = simulate(0)
    replica = Replica()
    units = _units(history.events)
    first_insert = next(u for u in units if u.rows and u.rows[0].op == Op.INSERT
                        and u.rows[0].table_info is not None and u.rows[0].table_info.handle_key_columns)
    for unit in units[: units.index(first_insert) + 1]:
        replica.apply(unit)
    with pytest.raises(ReplicaError, match="existing handle"):
        replica.apply(first_insert)
    delete = RowChange(op=Op.DELETE, schema="sim", table="t_int", commit_ts=1, pre_columns=Row({"id": -1}),
                       table_info=first_insert.rows[0].table_info if first_insert.rows[0].table == "t_int" else None)
    with pytest.raises(ReplicaError):
        replica.apply(ApplyUnit(kind="rows", rows=(delete,), consistent_ts=replica.consistent_ts))


def test_compare_names_the_first_differing_row() -> None:
    info = simulate(0).truth_at(10**30)[("sim", "t_int")].info
    truth = {("sim", "t_int"): Counter([Row({"id": 1, "v": 1}), Row({"id": 2, "v": 2})])}
    replica = {("sim", "t_int"): Counter([Row({"id": 1, "v": 1}), Row({"id": 2, "v": 3})])}
    message = compare(replica, truth, {("sim", "t_int"): info})
    assert message is not None and "{'id': 2}" in message and "'v': (3, 2)" in message
    assert compare({}, truth) == "table sim.t_int missing from the replica (2 rows in the truth)"


# --------------------------------------------------------------------------- faults
def _ideal(partitions: int = 3, segments: int = 6, per_segment: int = 4) -> dict[tuple[str, int], list[Sent]]:
    logs: dict[tuple[str, int], list[Sent]] = {}
    for p in range(partitions):
        log: list[Sent] = []
        for s in range(segments):
            for i in range(per_segment):
                kind = "ddl" if i == 1 and s % 2 else "rows"
                log.append(Sent(KafkaRecord(topic="t", partition=p, value=f"{s}.{i}".encode()), s, kind))  # type: ignore[arg-type]
            log.append(Sent(KafkaRecord(topic="t", partition=p, value=f"{s}.w".encode()), s, "watermark"))
        logs[("t", p)] = log
    return logs


@pytest.mark.parametrize("seed", range(30))
def test_restarts_keep_the_watermark_promise_and_lose_nothing(seed: int) -> None:
    ideal = _ideal()
    rng = random.Random(seed)
    faulty = duplicate(replay_ranges(restart(ideal, rng, restarts=3), rng, count=2), rng, rate=0.1)
    for topic_partition, log in faulty.items():
        values = [s.record.value for s in log]
        # Nothing lost for good, nothing invented.
        assert set(values) == {s.record.value for s in ideal[topic_partition]}
        # The promise a consumer relies on: when a segment's watermark first arrives, every record of
        # that segment and the ones before it has arrived.
        seen: set[bytes | None] = set()
        for sent in log:
            if sent.kind == "watermark" and sent.record.value not in seen:
                needed = {s.record.value for s in ideal[topic_partition]
                          if s.segment <= sent.segment and s.kind != "watermark"}
                assert needed <= seen
            seen.add(sent.record.value)


def test_restart_replays_from_a_checkpoint_with_its_stale_watermark() -> None:
    ideal = _ideal()
    for seed in range(20):
        faulty = restart(ideal, random.Random(seed), restarts=1)
        log = [s.record.value for s in faulty[("t", 0)]]
        if len(log) > len(ideal[("t", 0)]) and log.count(b"0.w") == 2:
            return
    pytest.fail("no restart re-sent an older checkpoint")


def test_interleave_keeps_each_partitions_order() -> None:
    logs = with_offsets(_ideal())
    merged = interleave(logs, random.Random(1), max_run=3, start={("t", 1): 5})
    assert len(merged) == sum(len(v) for v in logs.values()) - 5
    for topic_partition, log in logs.items():
        mine = [r.offset for r in merged if (r.topic, r.partition) == topic_partition]
        assert mine == [r.offset for r in log if r.offset >= (5 if topic_partition == ("t", 1) else 0)]
    assert [(r.partition) for r in merged[:12]] != sorted(r.partition for r in merged[:12])
