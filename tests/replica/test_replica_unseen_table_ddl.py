"""DDL on a table the replica knows only from buffered rows (no CREATE TABLE seen): applied, never ignored."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest
from replica_units import apply_batch

from pyticdc.model import ColumnInfo, DDLEvent, IndexInfo, KafkaRecord, Op, Row, RowChange, TypeCode, Watermark
from pyticdc.mysql import table_info_with_flags
from pyticdc.replica import DeltaReplica, Replicator, SimulatedCrash, read_progress
from pyticdc.replica.store import DeltaStore
from pyticdc.routing import Router

pytest.importorskip("deltalake")

OPTIONS: dict[str, dict[str, Any]] = {"open-protocol": {}, "canal-json": {"enable-tidb-extension": True}}
#: TSOs with distinct physical parts (canal-json without sub-millisecond precision keeps them apart).
TS = [((1_700_000_000_000 + i * 1000) << 18) for i in range(20)]


def _column(name: str, code: TypeCode, flen: int) -> ColumnInfo:
    text = code == TypeCode.VARCHAR
    return ColumnInfo(name=name, type_code=code, flen=flen, charset="utf8mb4" if text else "binary",
                      collation="utf8mb4_bin" if text else "binary")  # flags: derived by the table


def _info(*extra: ColumnInfo) -> Any:
    columns = [_column("id", TypeCode.LONG, 11), _column("v", TypeCode.VARCHAR, 10), *extra]
    return table_info_with_flags("s", "t", 100, 1, columns, [IndexInfo(name="PRIMARY", columns=("id",),
                                                                      primary=True, unique=True)], True)


def _insert(ts: int, info: Any, **values: Any) -> RowChange:
    return RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=ts, columns=Row(values), table_info=info)


def _alter_stream() -> tuple[list[object], list[dict[str, Any]]]:
    """Rows of s.t (never created), ALTER ADD COLUMN with a default, rows using it; and the expected table."""
    before, after = _info(), _info(_column("c", TypeCode.LONG, 11))
    events: list[object] = [
        _insert(TS[1], before, id=1, v=b"a"),
        _insert(TS[2], before, id=2, v=b"b"),
        Watermark(resolved_ts=TS[2]),
        DDLEvent(query="ALTER TABLE `s`.`t` ADD COLUMN `c` INT DEFAULT 7", ddl_type=5, commit_ts=TS[3],
                 schema="s", table="t"),
        _insert(TS[4], after, id=3, v=b"c", c=30),
        Watermark(resolved_ts=TS[5]),
    ]
    expected = [{"id": 1, "v": "a", "c": 7}, {"id": 2, "v": "b", "c": 7}, {"id": 3, "v": "c", "c": 30}]
    return events, expected


def _records(protocol: str, events: list[object]) -> list[KafkaRecord]:
    router = Router(protocol, default_topic="cdc", partitions=1, options=OPTIONS[protocol])
    records = router.route(events)  # type: ignore[arg-type]
    return [msgspec.structs.replace(r, offset=i) for i, r in enumerate(records)]


def _table(warehouse: Path) -> list[dict[str, Any]]:
    store = DeltaStore(warehouse)
    entry = read_progress(store).tables[("s", "t")]
    rows = store.read(store.root / entry.path).to_pylist()
    return sorted(({k: (v.decode() if isinstance(v, bytes) else v) for k, v in r.items() if k in ("id", "v", "c")}
                   for r in rows), key=lambda r: r["id"])


def _run(warehouse: Path, protocol: str, records: list[KafkaRecord], chunks: list[int], crash_at: str | None) -> int:
    """Replicate ``records`` in chunks of the given sizes, crashing once at ``crash_at`` and resuming from 0."""
    seen: Counter[str] = Counter()

    def hook(where: str, detail: Any) -> None:
        seen[where] += 1
        if where == crash_at and seen[where] == 2:
            raise SimulatedCrash(where)

    crashes = 0
    while True:
        replicator = Replicator(warehouse, protocol, OPTIONS[protocol], partitions={"cdc": 1}, hook=hook)
        try:
            at = 0
            for size in chunks:
                replicator.process(records[at:at + size])
                at += size
            replicator.process(records[at:])
            replicator.process(())
            return crashes
        except SimulatedCrash:
            crashes += 1


@pytest.mark.parametrize("protocol", list(OPTIONS))
@pytest.mark.parametrize("split", ["one-batch", "across-batches"])
@pytest.mark.parametrize("crash_at", [None, "before-table-commit", "after-table-commit", "before-progress"])
def test_alter_on_a_table_created_from_its_buffered_rows(tmp_path: Path, protocol: str, split: str,
                                                         crash_at: str | None) -> None:
    events, expected = _alter_stream()
    records = _records(protocol, events)
    ddl_at = next(i for i, r in enumerate(records) if b"ALTER" in (r.value or b""))
    chunks = [len(records)] if split == "one-batch" else [ddl_at, len(records) - ddl_at]
    crashes = _run(tmp_path, protocol, records, chunks, crash_at)
    assert crashes == (crash_at is not None)
    assert _table(tmp_path) == expected


@pytest.mark.parametrize("query, expected", [
    ("ALTER TABLE `s`.`t` DROP COLUMN `v`", [{"id": 1}, {"id": 2}]),
    ("ALTER TABLE `s`.`t` MODIFY COLUMN `v` VARCHAR(20)", [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]),
    ("ALTER TABLE `s`.`t` RENAME COLUMN `v` TO `w`", [{"id": 1, "w": "a"}, {"id": 2, "w": "b"}]),
])
def test_other_column_changes_on_a_table_known_from_buffered_rows(tmp_path: Path, query: str,
                                                                  expected: list[dict[str, Any]]) -> None:
    replica = DeltaReplica(tmp_path)
    apply_batch(replica, [_insert(TS[1], _info(), id=1, v=b"a")],
           DDLEvent(query=query, ddl_type=5, commit_ts=TS[2], schema="s", table="t"))
    after = replica.tables[("s", "t")].info
    apply_batch(replica, [_insert(TS[3], after, id=2, **{c.name: b"b" for c in after.columns if c.name != "id"})])
    store = DeltaStore(tmp_path)
    rows = store.read(store.root / replica.tables[("s", "t")].path).to_pylist()
    decoded = [{k: (v.decode() if isinstance(v, bytes) else v) for k, v in r.items() if not k.startswith("_")}
               for r in rows]
    assert sorted(decoded, key=lambda r: r["id"]) == expected
    assert replica.stats.ddls_unhandled == 0


def test_rename_and_drop_of_a_table_known_from_buffered_rows(tmp_path: Path) -> None:
    replica = DeltaReplica(tmp_path)
    apply_batch(replica, [_insert(TS[1], _info(), id=1, v=b"a")],
           DDLEvent(query="RENAME TABLE `s`.`t` TO `s`.`u`", ddl_type=14, commit_ts=TS[2], schema="s", table="t"))
    assert set(replica.tables) == {("s", "u")}  # the rows went with their table, nothing left under the old name
    store = DeltaStore(tmp_path)
    assert store.count(store.root / replica.tables[("s", "u")].path) == 1
    # A table dropped in the batch its first rows arrive in: not created after its DROP.
    apply_batch(replica, [_insert(TS[3], _info(), id=5, v=b"x")],
           DDLEvent(query="DROP TABLE `s`.`t`", ddl_type=4, commit_ts=TS[4], schema="s", table="t"))
    assert set(replica.tables) == {("s", "u")} and replica.stats.rows_skipped == 1
    # A DDL on a table the replica never had and holds no rows of: nothing to do, counted and said why.
    apply_batch(replica, DDLEvent(query="ALTER TABLE `s`.`never` ADD COLUMN `x` INT", ddl_type=5, commit_ts=TS[5],
                             schema="s", table="never"))
    assert replica.stats.ddls_not_applicable >= 1
    assert any("s.never" in line for line in replica.not_applicable)
