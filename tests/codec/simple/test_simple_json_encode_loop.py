"""Simple-JSON's row loop (``Encoder._encode_json``) equals the general one it spells out.

The loop counts a quiet row in the bootstrap policy's record itself (``BootstrapPolicy.quiet``) and
calls the table's writer without ``_fast_json_message``. Checked here against an encoder running the
general per-event steps (``should_emit`` and ``_fast_json_message`` for every row): the messages, the
clock's readings, the policy's records afterwards, and the errors, over rows of several tables (equal
table infos that are other objects, renames, partitions), clocks that jump past the interval and the
inactivity limit, small message counts, other events between rows, and rows without a table info.
"""

from __future__ import annotations

from dataclasses import astuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fast_paths import encoded
from pyticdc.codec import simple
from pyticdc.codec.base import Message
from pyticdc.codec.simple.policy import BootstrapPolicy, TableRecord
from pyticdc.model import (
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    Event,
    Op,
    Row,
    RowChange,
    TableInfo,
    Watermark,
)

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")


class _General(simple.Encoder):
    """The encoder taking every row through should_emit and _fast_json_message."""

    def _encode_json(self, events: Any, append: Any, policy: BootstrapPolicy | None) -> None:
        for event in events:
            if isinstance(event, RowChange):
                self._encode_json_row(event, append, policy)
            else:
                append(self._event_message(event))


def _table(name: str, table_id: int, version: int = 1) -> TableInfo:
    return TableInfo(schema="s", table=name, table_id=table_id, schema_version=version, pk_is_handle=True, columns=(
        ColumnInfo(name="id", type_code=3, flags=int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY)),
        ColumnInfo(name="v", type_code=15, flen=16, charset="utf8mb4", collation="utf8mb4_bin",
                   flags=int(ColumnFlag.NULLABLE)),
    ))


# Two objects of one table version (a new decoder or BOOTSTRAP brings an equal info), a rename,
# a new version, and another table.
_TABLES = [_table("t", 1), _table("t", 1), _table("u", 1), _table("t", 1, 2), _table("x", 2)]


class _Clock:
    """Reads the next of the drawn times (the last one again when they run out); counts its readings."""

    def __init__(self, times: list[int]) -> None:
        self.times = times
        self.readings = 0

    def __call__(self) -> int:
        self.readings += 1
        return self.times[min(self.readings - 1, len(self.times) - 1)]


@st.composite
def _events(draw: st.DrawFn) -> list[Event]:
    events: list[Event] = []
    for i in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["row"] * 8 + ["untyped", "watermark", "bootstrap"]))
        table = draw(st.sampled_from(_TABLES))
        if kind == "watermark":
            events.append(Watermark(resolved_ts=i))
        elif kind == "bootstrap":
            events.append(Bootstrap(table_info=table))
        else:
            partition = draw(st.sampled_from([0, table.table_id, 77]))
            events.append(RowChange(op=Op.INSERT, schema="s", table=table.table, commit_ts=1 << 20 | i,
                                    columns=Row({"id": i, "v": b"x"}), table_id=table.table_id,
                                    physical_table_id=partition, table_info=None if kind == "untyped" else table))
    return events


def _records(policy: BootstrapPolicy) -> list[tuple[object, ...]]:
    return [astuple(record) for record in (policy.record(key) for key in sorted(policy._tables)) if record]


@settings(max_examples=500, deadline=None)
@given(events=_events(), batches=st.integers(1, 3),
       steps=st.lists(st.sampled_from([0, 0, 0, 0, 1, 999, 1000, 1001, 1_800_000, 1_800_001]), min_size=1,
                      max_size=80),
       count=st.sampled_from([0, 1, 2, 3, 10_000]), interval=st.sampled_from([1, 2, 3600]))
def test_row_loop_equals_the_general_loop(events: list[Event], batches: int, steps: list[int], count: int,
                                          interval: int) -> None:
    times = [sum(steps[: i + 1]) for i in range(len(steps))]
    options = {"send-bootstrap-in-msg-count": count, "send-bootstrap-interval-in-sec": interval}
    clocks = (_Clock(times), _Clock(times))
    fast = simple.Encoder(options, clock=clocks[0])
    general = _General(options, clock=clocks[1])
    size = -(-len(events) // batches)
    for at in range(0, len(events), size):  # the policy's records carry over from batch to batch
        assert encoded(fast, events[at:at + size]) == encoded(general, events[at:at + size])
        assert clocks[0].readings == clocks[1].readings
        assert _records(fast.bootstrap_policy) == _records(general.bootstrap_policy)


def test_quiet_is_what_should_emit_only_counts() -> None:
    # quiet's rows: should_emit returns False and only counts them; the others it does not.
    table, equal = _TABLES[0], _TABLES[1]
    for now in (0, 5, 1999, 2000, 1_800_000, 1_800_001, 1_802_001):
        for sent, rows in ((0, 0), (0, 2), (1000, 1)):
            for info in (table, equal):
                policy = BootstrapPolicy(interval_sec=2, msg_count=3)
                policy.should_emit(table, 0)
                record = policy.record(table.table_id)
                assert isinstance(record, TableRecord)
                record.last_sent_ms, record.rows_since_sent = sent, rows
                before = astuple(record)
                quiet = policy.quiet(record, info, now)
                emitted = policy.should_emit(info, now)
                after = policy.record(table.table_id)
                if quiet:
                    assert not emitted and after is record
                    assert astuple(record) == (before[0], now, sent, rows + 1)
                else:
                    assert emitted or info is not table or after is not record


def test_row_loop_at_the_policy_boundaries() -> None:
    # Rows of one table with the clock exactly at, and one past, each limit of the quiet case.
    table = _TABLES[0]
    rows: list[Event] = [RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1 << 20,
                                   columns=Row({"id": i, "v": None}), table_id=1, physical_table_id=1,
                                   table_info=table) for i in range(4)]
    for interval, count, gaps in ((3600, 10_000, (1_800_000, 1_800_001)), (1, 10_000, (999, 1000, 1001)),
                                  (3600, 2, (0, 0, 0))):
        for gap in gaps:
            # the policy reads the clock first, the writer second: a row's gap falls before its policy reading
            times = [t for i in range(len(rows)) for t in (i * gap, i * gap)]
            options = {"send-bootstrap-in-msg-count": count, "send-bootstrap-interval-in-sec": interval}
            fast = simple.Encoder(options, clock=_Clock(times))
            general = _General(options, clock=_Clock(times))
            assert encoded(fast, rows) == encoded(general, rows)
            assert _records(fast.bootstrap_policy) == _records(general.bootstrap_policy)


def test_a_subclass_replacing_the_fast_path_is_heard() -> None:
    # The tests' reference encoders switch the fast writer off by replacing _fast_json_message: the
    # inlined loop must not go around them.
    calls: list[RowChange] = []

    class _Off(simple.Encoder):
        def _fast_json_message(self, row: RowChange) -> Message | None:
            calls.append(row)
            return None

    rows: list[Event] = [RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1 << 20,
                                   columns=Row({"id": i, "v": b"x"}), table_id=1, physical_table_id=1,
                                   table_info=_TABLES[0]) for i in range(3)]
    messages = _Off({}, clock=lambda: 5).encode(rows)
    assert calls == rows
    assert messages == simple.Encoder({}, clock=lambda: 5).encode(rows)
