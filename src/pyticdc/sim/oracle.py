"""The oracle: a simulated history, produced with faults, consumed with crashes, checked against the truth.

``check_history`` routes a :class:`~pyticdc.sim.workload.History` to Kafka logs with a protocol, injects
faults, consumes the logs with a :class:`~pyticdc.consumer.Consumer` that crashes and resumes from the
state its replica stored, and after every apply unit compares the replica with the simulator's truth
at the unit's ``consistent_ts`` — projected through the protocol's ``Encoder.project`` so that lossy
protocols are held to what they can carry. The first difference raises :class:`OracleMismatch`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pyticdc.codec import make_encoder
from pyticdc.codec.base import BaseEncoder
from pyticdc.consumer import ApplyUnit, Consumer, ConsumerStats, handle_columns
from pyticdc.errors import OracleMismatch
from pyticdc.model import (
    ActionType,
    ColumnInfo,
    DDLEvent,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    Value,
    physical_ms,
)
from pyticdc.sim.faults import (
    Logs,
    add_garbage,
    duplicate,
    interleave,
    produce,
    replay_ranges,
    restart,
    with_offsets,
)
from pyticdc.sim.replica import Replica
from pyticdc.sim.workload import History, Snapshot, TableTruth

__all__ = ["FaultPlan", "OracleReport", "TruthProjector", "add_only_truth", "check_history", "compare", "inject"]


@dataclass(frozen=True)
class FaultPlan:
    """Which faults to inject and how many consumer crashes to cause."""

    #: Chance that a record is delivered twice.
    duplicate_rate: float = 0.05
    #: TiCDC crashes, each resuming from an earlier checkpoint.
    restarts: int = 1
    #: Offset ranges re-sent later in their partition.
    replays: int = 1
    #: Undecodable records (must end up quarantined, and nothing else).
    garbage: int = 0
    #: Consumer crashes at random points of the consumption.
    crashes: int = 2
    #: Longest run of records read from one partition before switching (1 = finest interleaving).
    max_run: int = 5
    #: After a consumer crash Kafka redelivers from an older committed group offset (the consumer skips them).
    redeliver: bool = True


def inject(logs: Logs, plan: FaultPlan, rng: random.Random) -> Logs:
    """The logs with the plan's producer-side faults (restarts, duplicates, replays, garbage)."""
    logs = restart(logs, rng, restarts=plan.restarts)
    logs = duplicate(logs, rng, rate=plan.duplicate_rate)
    logs = replay_ranges(logs, rng, count=plan.replays)
    return add_garbage(logs, rng, count=plan.garbage)


@dataclass
class OracleReport:
    """What one oracle run consumed and checked."""

    protocol: str
    seed: int
    records: int = 0
    records_consumed: int = 0
    units: int = 0
    checks: int = 0
    crashes: int = 0
    row_events: int = 0
    consistent_ts: int = 0
    final_resolved_ts: int = 0
    quarantined: int = 0
    stats: ConsumerStats = field(default_factory=ConsumerStats)


class TruthProjector:
    """The truth as a protocol can carry it: each row projected through ``Encoder.project`` (cached)."""

    def __init__(self, encoder: BaseEncoder | None) -> None:
        self.encoder = encoder
        # id(TableTruth) -> (the object, kept alive so the id stays unique; its projected rows).
        self._tables: dict[int, tuple[TableTruth, Counter[Row]]] = {}

    def _project(self, info: TableInfo, row: Row) -> Row:
        if self.encoder is None:
            return row
        event = self.encoder.project(RowChange(
            op=Op.INSERT, schema=info.schema, table=info.table, commit_ts=0, columns=row, table_id=info.table_id,
            physical_table_id=info.table_id, table_info=info,
        ))
        if not isinstance(event, RowChange) or event.columns is None:
            raise OracleMismatch(f"{type(self.encoder).__name__}.project dropped a row of {info.qualified_name}")
        return event.columns

    def row(self, info: TableInfo, row: Row) -> Row:
        """One row as the protocol carries it (the history oracle projects every version)."""
        return self._project(info, row)

    def table(self, truth: TableTruth) -> Counter[Row]:
        """The projected rows of one table's truth, as a multiset."""
        cached = self._tables.get(id(truth))
        if cached is None:
            rows = Counter(self._project(truth.info, row) for row in truth.rows.values())
            cached = self._tables[id(truth)] = (truth, rows)
        return cached[1]

    def snapshot(self, snapshot: Snapshot) -> dict[tuple[str, str], Counter[Row]]:
        """Every table's projected rows."""
        return {key: self.table(truth) for key, truth in snapshot.items()}


def _handle(row: Row, columns: tuple[str, ...]) -> tuple[Hashable, ...]:
    return tuple(row.get(c) for c in columns)


def compare(
    replica: Mapping[tuple[str, str], Counter[Row]], truth: Mapping[tuple[str, str], Counter[Row]],
    infos: Mapping[tuple[str, str], TableInfo] | None = None,
) -> str | None:
    """None if equal, else a description of the first differing table and row."""
    for key in sorted(set(replica) | set(truth)):
        name = f"{key[0]}.{key[1]}"
        if key not in replica:
            return f"table {name} missing from the replica ({sum(truth[key].values())} rows in the truth)"
        if key not in truth:
            return f"table {name} in the replica but not in the truth ({sum(replica[key].values())} rows)"
        got, want = replica[key], truth[key]
        if got == want:
            continue
        extra = sorted((got - want).elements(), key=repr)
        missing = sorted((want - got).elements(), key=repr)
        columns = handle_columns(infos.get(key)) if infos else ()
        for row in missing:
            twin = next((r for r in extra if columns and _handle(r, columns) == _handle(row, columns)), None)
            if twin is not None:
                diffs = {c: (twin.get(c), row.get(c)) for c in sorted(set(row) | set(twin))
                         if twin.get(c) != row.get(c)}
                return (f"table {name}, row {dict(zip(columns, _handle(row, columns)))}: "
                        f"(replica, truth) differ in {diffs}")
        if missing:
            return f"table {name}: truth row missing from the replica: {dict(missing[0])}" + (
                f" (and {len(extra)} replica rows not in the truth, first {dict(extra[0])})" if extra else "")
        return f"table {name}: replica row not in the truth: {dict(extra[0])}"
    return None


def _row_keys(change: RowChange) -> set[Hashable]:
    # The truth's keys a change may be stored under (TableTruth.rows): its row id (_tidb_rowid, or the integer
    # handle), else its clustered primary key. Both are tried: one table never uses both kinds of keys.
    info = change.table_info
    primary = next((i.columns for i in info.indexes if i.primary), ()) if info is not None else ()
    keys: set[Hashable] = {change.row_id} if change.row_id else set()
    for image in (change.pre_columns, change.columns):
        if image is not None and primary:
            keys.add(tuple(image.get(c) for c in primary))
    return keys


def add_only_truth(history: History, commit_ts: int) -> Snapshot:
    """The truth at ``commit_ts`` as an ``add-only`` replica holds it: dropped columns kept.

    A dropped column stays with the value each row had when it was dropped, NULL in the rows written (inserted
    or updated) after the drop; a column added again under a dropped one's name is the live one again. (A
    renamed column would be a kept old name and an added new one: the simulator renames no column.)
    """
    kept: dict[str, dict[str, ColumnInfo]] = {}
    held: dict[str, dict[Hashable, dict[str, Value]]] = {}
    for event in history.events:
        if isinstance(event, RowChange) and event.commit_ts <= commit_ts:
            values = held.get(event.table)
            if values:
                for key in _row_keys(event):
                    values.pop(key, None)  # written after the drop: the replica's MERGE leaves kept columns NULL
        elif isinstance(event, DDLEvent) and event.commit_ts <= commit_ts:
            action, name = event.ddl_type, event.table
            pre = event.pre_table_info
            if action in (ActionType.CREATE_TABLE, ActionType.DROP_TABLE, ActionType.TRUNCATE_TABLE):
                if action != ActionType.TRUNCATE_TABLE:
                    kept.pop(name, None)
                held.pop(name, None)  # no rows left (a TRUNCATE's new row ids start again)
            elif action == ActionType.RENAME_TABLE and pre is not None:
                if pre.table in kept:
                    kept[name] = kept.pop(pre.table)
                if pre.table in held:
                    held[name] = held.pop(pre.table)
            elif pre is not None and event.table_info is not None:
                live = {c.name.lower() for c in event.table_info.columns}
                for column_name in [c for c in kept.get(name, {}) if c.lower() in live]:
                    del kept[name][column_name]  # added again: the live column, as the replica has it
                    for kept_values in held.get(name, {}).values():
                        kept_values.pop(column_name, None)
                gone = [c for c in pre.columns if c.name.lower() not in live]
                if gone:
                    before = history.truth_at(event.commit_ts - 1).get((event.schema, name))
                    table_values = held.setdefault(name, {})
                    for key, row in (before.rows.items() if before is not None else ()):
                        table_values.setdefault(key, {}).update({c.name: row.get(c.name) for c in gone})
                    kept.setdefault(name, {}).update({c.name: c for c in gone})
    truth = history.truth_at(commit_ts)
    out: dict[tuple[str, str], TableTruth] = {}
    for key, table in truth.items():
        columns = kept.get(key[1])
        if not columns:
            out[key] = table
            continue
        by_key = held.get(key[1], {})
        info = msgspec.structs.replace(table.info, columns=(*table.info.columns, *columns.values()))
        rows = {k: Row({**row, **{c: by_key.get(k, {}).get(c) for c in columns}}) for k, row in table.rows.items()}
        out[key] = TableTruth(info=info, rows=rows)
    return out


def _clock_for(history: History) -> Callable[[], int]:
    fixed = physical_ms(history.final_resolved_ts)
    return lambda: fixed


def check_history(
    history: History,
    protocol: str,
    options: Mapping[str, Any] | None = None,
    *,
    plan: FaultPlan | None = None,
    seed: int = 0,
    partitions: int = 3,
    rules: Sequence[Mapping[str, Any]] = (),
    topic: str = "sim",
    project: bool = True,
    check_every_unit: bool = True,
    max_unit_rows: int | None = None,
    replica_factory: Callable[[], Replica] = Replica,
    compact_state: bool = False,
) -> OracleReport:
    """Produce, fault, consume with crashes and compare at every consistent ts; OracleMismatch on a difference."""
    plan = plan or FaultPlan()
    rng = random.Random(seed)
    clock = _clock_for(history)
    ideal = produce(history, protocol, options, topic=topic, partitions=partitions, rules=rules, clock=clock)
    logs = with_offsets(inject(ideal, plan, rng))
    total = sum(len(log) for log in logs.values())
    report = OracleReport(protocol=protocol, seed=seed, records=total, row_events=history.row_events,
                          final_resolved_ts=history.final_resolved_ts)
    projector = TruthProjector(make_encoder(protocol, options, clock=clock) if project else None)
    replica = replica_factory()
    # Crash after these many records of the whole run (a crash point may fall anywhere, even mid-release).
    crash_at = sorted(rng.randrange(total) for _ in range(plan.crashes)) if total else []
    topics = {topic_partition[0]: 0 for topic_partition in logs}
    for topic_partition in logs:
        topics[topic_partition[0]] = max(topics[topic_partition[0]], topic_partition[1] + 1)

    def check(unit: ApplyUnit) -> None:
        report.checks += 1
        truth = history.truth_at(unit.consistent_ts)
        difference = compare(replica.content(), projector.snapshot(truth), {k: t.info for k, t in truth.items()})
        if difference is not None:
            raise OracleMismatch(
                f"{protocol} seed={history.seed}/{seed}: after unit #{replica.units_applied} ({unit.kind}) the replica "
                f"differs from the truth at consistent_ts={unit.consistent_ts}: {difference}")

    def apply(units: list[ApplyUnit]) -> None:
        for unit in units:
            replica.apply(unit)
            report.units += 1
            if unit.kind != "quarantine" and (check_every_unit or unit.kind == "checkpoint"):
                check(unit)

    consumed = 0
    while True:
        consumer = Consumer(protocol, options, partitions=topics, state=replica.state, max_unit_rows=max_unit_rows,
                            compact_state=compact_state)
        apply(consumer.release())
        start = consumer.next_offsets()
        if plan.redeliver and report.crashes:
            # Kafka group offsets are committed lazily: records below the state's offsets come again.
            start = {topic_partition: rng.randint(0, offset) for topic_partition, offset in start.items()}
        stream: list[KafkaRecord] = interleave(logs, rng, max_run=plan.max_run, start=start)
        crashed = False
        for record in stream:
            units = consumer.consume(record)
            consumed += 1
            if crash_at and consumed >= crash_at[0]:
                crash_at.pop(0)
                report.crashes += 1
                crashed = True
                # The process dies part-way through applying this record's units: its memory is gone,
                # the replica and the state stored with the last applied unit survive.
                apply(units[: rng.randint(0, len(units))])
                break
            apply(units)
        if not crashed:
            break
    report.records_consumed = consumed
    report.consistent_ts = replica.consistent_ts
    report.stats = consumer.stats
    report.quarantined = len(replica.quarantine)
    if replica.consistent_ts != history.final_resolved_ts:
        raise OracleMismatch(f"{protocol} seed={history.seed}/{seed}: consumption ended at consistent_ts="
                             f"{replica.consistent_ts}, not at the final watermark {history.final_resolved_ts}")
    truth = history.truth_at(replica.consistent_ts)
    difference = compare(replica.content(), projector.snapshot(truth), {k: t.info for k, t in truth.items()})
    if difference is not None:
        raise OracleMismatch(f"{protocol} seed={history.seed}/{seed}: final replica differs: {difference}")
    if report.quarantined != plan.garbage:
        raise OracleMismatch(f"{protocol} seed={history.seed}/{seed}: {report.quarantined} records quarantined, "
                             f"{plan.garbage} garbage records injected: {replica.quarantine[:3]}")
    return report
