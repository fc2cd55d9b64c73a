"""The simulator's version history (the ground truth of history tables) and the interval check."""

from __future__ import annotations

from collections import Counter

import pytest

from pyticdc.model import ActionType, DDLEvent, Event, Op, Row, RowChange, Watermark
from pyticdc.mysql import table_info_with_flags
from pyticdc.sim import WorkloadConfig, simulate
from pyticdc.sim.history import history_at, interval_errors, versions_at
from pyticdc.sim.workload import TEMPLATES, History


def _everything(schema: str, table: str) -> bool:
    return True


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_current_versions_are_the_truth_at_every_ts(seed: int) -> None:
    history = simulate(seed, WorkloadConfig(transactions=80, ddl_probability=0.25))
    for ts in [*history.commit_timestamps[::7], history.final_resolved_ts]:
        truth = history.truth_at(ts)
        tables = versions_at(history, ts, history_for=_everything)
        for key, table in truth.items():
            current = Counter(v.image for v in tables[key].current.values()) if key in tables else Counter()
            assert current == Counter(table.rows.values()), (seed, ts, key)
            if key in tables:
                versions = tables[key].versions
                # The open versions are exactly the current ones, and none ends after the ts asked for.
                assert {id(v) for v in versions if v.valid_to_ts is None} == \
                    {id(v) for v in tables[key].current.values()}
                assert all(v.valid_from_ts <= ts and (v.valid_to_ts or ts) <= ts for v in versions)
        # Tables dropped by then have no history any more.
        assert set(tables) <= set(truth)


def test_versions_of_a_small_history() -> None:
    template = TEMPLATES["t_np"]
    info = table_info_with_flags("s", "t", 100, 1, template.columns, template.indexes, False)
    ts = [(1_700_000_000_000 + i) << 18 for i in range(10)]

    def row(code: str, n: int) -> Row:
        return Row({"code": code.encode(), "n": n, "c_char": b"", "c_varchar": b"", "c_tinytext": b"", "c_text": b"",
                    "c_mediumtext": b"", "c_longtext": b""})

    def change(op: Op, post: Row | None, pre: Row | None, at: int, row_id: int) -> RowChange:
        return RowChange(op=op, schema="s", table="t", commit_ts=at, columns=post, pre_columns=pre, table_info=info,
                         row_id=row_id)

    events: list[Event] = [
        DDLEvent(query="CREATE TABLE t", ddl_type=int(ActionType.CREATE_TABLE), commit_ts=ts[0], schema="s",
                 table="t", table_info=info),
        change(Op.INSERT, row("a", 1), None, ts[1], 1), change(Op.INSERT, row("b", 1), None, ts[1], 2),
        change(Op.UPDATE, row("a", 2), row("a", 1), ts[2], 1),
        change(Op.UPDATE, row("c", 2), row("a", 2), ts[3], 1),   # the PK moves: a closes, c opens
        change(Op.DELETE, None, row("b", 1), ts[3], 2),
        change(Op.UPDATE, row("c", 3), row("c", 2), ts[4], 1),   # only n: in place when tracking code
        DDLEvent(query="TRUNCATE TABLE t", ddl_type=int(ActionType.TRUNCATE_TABLE), commit_ts=ts[5], schema="s",
                 table="t", table_info=info, pre_table_info=info),
        Watermark(resolved_ts=ts[6]),
    ]
    history = History(events, [(0, {})], WorkloadConfig(), 0)
    every = versions_at(history, ts[6], history_for=_everything)[("s", "t")].versions
    assert [(v.image["code"], v.image["n"], v.valid_from_ts, v.valid_to_ts, v.op) for v in every] == [
        (b"a", 1, ts[1], ts[2], "insert"), (b"b", 1, ts[1], ts[3], "insert"), (b"a", 2, ts[2], ts[3], "update"),
        (b"c", 2, ts[3], ts[4], "insert"), (b"c", 3, ts[4], ts[5], "update")]
    tracked = versions_at(history, ts[6], history_for=_everything, tracked_for=lambda s, t: ("code",))
    assert [(v.image["code"], v.image["n"], v.valid_to_ts) for v in tracked[("s", "t")].versions] == [
        (b"a", 2, ts[3]), (b"b", 1, ts[3]), (b"c", 3, ts[5])]
    ignored = versions_at(history, ts[6], history_for=_everything, truncate=False)[("s", "t")].versions
    assert ignored[-1].valid_to_ts is None
    # As of an earlier ts, the later changes have not happened: c's version is current.
    earlier = versions_at(history, ts[3], history_for=_everything)[("s", "t")]
    assert [(v.image["code"], v.valid_to_ts) for v in earlier.versions][-1] == (b"c", None)
    assert versions_at(history, ts[6], history_for=lambda s, t: False) == {}


def _rowid_history() -> tuple[History, list[int]]:
    # A table without key (t_rowid): rows a, b, then a changed, b "changed" to itself, a deleted, the table dropped.
    template = TEMPLATES["t_rowid"]
    info = table_info_with_flags("s", "r", 100, 1, template.columns, template.indexes, False)
    ts = [(1_700_000_000_000 + i) << 18 for i in range(10)]

    def row(seq: int, v: float) -> Row:
        return Row({"seq": seq, "c_varchar": b"x", "v": v, "j": "{}", "d": "1.000"})

    def change(op: Op, post: Row | None, pre: Row | None, at: int, row_id: int) -> RowChange:
        return RowChange(op=op, schema="s", table="r", commit_ts=at, columns=post, pre_columns=pre, table_info=info,
                         row_id=row_id)

    events: list[Event] = [
        DDLEvent(query="CREATE TABLE r", ddl_type=int(ActionType.CREATE_TABLE), commit_ts=ts[0], schema="s",
                 table="r", table_info=info),
        change(Op.INSERT, row(1, 1.0), None, ts[1], 1), change(Op.INSERT, row(2, 1.0), None, ts[1], 2),
        change(Op.UPDATE, row(1, 2.0), row(1, 1.0), ts[2], 1), change(Op.UPDATE, row(2, 1.0), row(2, 1.0), ts[2], 2),
        change(Op.DELETE, None, row(1, 2.0), ts[3], 1),
        DDLEvent(query="DROP TABLE r", ddl_type=int(ActionType.DROP_TABLE), commit_ts=ts[4], schema="s", table="r",
                 pre_table_info=info),
        Watermark(resolved_ts=ts[5]),
    ]
    return History(events, [(0, {})], WorkloadConfig(), 0), ts


def test_rows_found_by_their_whole_image_are_new_rows_when_they_change() -> None:
    history, ts = _rowid_history()
    by_image = versions_at(history, ts[3], history_for=_everything, find_by=lambda change: None,
                           tracked_for=lambda s, t: ("seq",))[("s", "r")].versions
    # Every version an insert; the update closes the old image and opens the new one; the unchanged image
    # opens nothing; tracked columns cannot link two images.
    assert [(v.image["seq"], v.image["v"], v.valid_from_ts, v.valid_to_ts, v.op) for v in by_image] == [
        (1, 1.0, ts[1], ts[2], "insert"), (2, 1.0, ts[1], None, "insert"), (1, 2.0, ts[2], ts[3], "insert")]
    by_rowid = versions_at(history, ts[3], history_for=_everything)[("s", "r")].versions
    assert [(v.image["seq"], v.valid_from_ts, v.op) for v in by_rowid] == [
        (1, ts[1], "insert"), (2, ts[1], "insert"), (1, ts[2], "update"), (2, ts[2], "update")]


def test_a_whole_image_row_is_told_by_the_columns_the_history_holds() -> None:
    history, ts = _rowid_history()
    # With v left out of the replica (column mapping), row 1's change at ts[2] (only v) is no change at all.
    without_v = versions_at(history, ts[3], history_for=_everything, find_by=lambda change: None,
                            visible=lambda info, row: Row({k: x for k, x in row.items() if k != "v"}))
    assert [(v.image["seq"], v.valid_from_ts, v.valid_to_ts) for v in without_v[("s", "r")].versions] == [
        (1, ts[1], ts[3]), (2, ts[1], None)]


def test_a_dropped_table_keeps_its_versions_closed_at_the_drop() -> None:
    history, ts = _rowid_history()
    before = history_at(history, ts[3], history_for=_everything)
    assert set(before.tables) == {("s", "r")} and before.dropped == []
    after = history_at(history, ts[5], history_for=_everything, find_by=lambda change: None)
    assert after.tables == {}
    [gone] = after.dropped
    assert gone.dropped_ts == ts[4] and gone.origins == (f"s.r@{ts[0]}", f"s.r@{ts[1]}")
    assert [(v.image["seq"], v.valid_from_ts, v.valid_to_ts) for v in gone.versions] == [
        (1, ts[1], ts[2]), (2, ts[1], ts[4]), (1, ts[2], ts[3])]
    assert gone.current == {}


def test_interval_errors() -> None:
    assert interval_errors([((1,), 10, 20), ((1,), 20, None), ((2,), 10, 15), ((2,), 30, None)]) is None
    assert "overlaps" in (interval_errors([((1,), 10, 25), ((1,), 20, None)]) or "")
    assert "overlaps" in (interval_errors([((1,), 10, None), ((1,), 20, None)]) or "")
    assert "empty" in (interval_errors([((1,), 10, 10)]) or "")
