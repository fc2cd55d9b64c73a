"""Craft's fast encoder path (writer.py: generated image writers, one-table message assembly) writes
exactly the reference encoder's bytes (encoder._group + framing.assemble).

For every option set, generated rows — valid, with awkward values swapped in (integers and lengths
at every varint size boundary, floats beyond float32, NaN, values of other types, lone surrogates,
values of 8 KiB and more), with a column dropped or added, of partitioned tables, of several tables
in one stream, with schema/table names shared with columns or empty — are encoded by an encoder
with its writers and by one whose writers are switched off: both give the same messages or the
same EncodeError.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from craft_samples import F, U, col
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import insert, table
from pyticdc.codec import craft
from pyticdc.codec.base import Message
from pyticdc.errors import EncodeError
from pyticdc.model import Event, RowChange, TableInfo
from strategies import awkward_image, row_changes

_BOUNDARIES = [s * (v + d) for v in (1 << 6, 1 << 13, 1 << 14, 1 << 27, 1 << 28, 1 << 41, 1 << 42, 1 << 55, 1 << 56,
                                     1 << 62, 1 << 63) for d in (-1, 0) for s in (1, -1)]
_AWKWARD = st.sampled_from([
    *_BOUNDARIES, 0, 2**64 - 1, 2**64, -(2**63) - 1, True, False, 1.5, -0.0, 3.4028234663852886e38, 3.5e38, 1e39,
    float("nan"), float("inf"), float("-inf"), 1e-46, "text", "\udc80", "é订单😀", b"\xff\xfe", b"", b"x" * 8191,
    b"y" * 8192, b"z" * 20000, "w" * 9000, bytearray(b"ab"), memoryview(b"cd"), None, [1],
])


class _Reference(craft.Encoder):
    """The reference encoder: every table plan without its fast writer."""

    def _plan(self, table_info: TableInfo) -> Any:
        plan = super()._plan(table_info)
        plan.writer = None
        return plan


def _variant(rows: list[RowChange], data: st.DataObject) -> list[RowChange]:
    """The rows as they are, of a partitioned table, renamed (names shared with a column or empty)."""
    info = rows[0].table_info
    assert info is not None
    kind = data.draw(st.sampled_from(["as is", "partitioned", "column names", "empty names"]))
    if kind == "as is":
        return rows
    if kind == "partitioned":
        info = msgspec.structs.replace(info, is_partition=True)
        partitions = st.sampled_from([0, 5, 5, -(2**63), 2**63 - 1])
        return [msgspec.structs.replace(r, table_info=info, physical_table_id=data.draw(partitions)) for r in rows]
    names = ("", "") if kind == "empty names" else (info.columns[-1].name, info.columns[0].name)
    return [msgspec.structs.replace(r, schema=names[0], table=names[1]) for r in rows]


def _encoded(encoder: craft.Encoder, events: list[Event]) -> list[Message] | str:
    try:
        return encoder.encode(events)
    except EncodeError as exc:
        return f"EncodeError: {exc}"


OPTIONS: list[dict[str, Any]] = [
    {}, {"max-batch-size": 2}, {"delete-only-output-handle-key-columns": True}, {"max-message-bytes": 300},
]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(i) for i in range(len(OPTIONS))])
@settings(max_examples=80, deadline=None)
@given(first=row_changes(max_rows=6), second=row_changes(max_rows=3), data=st.data())
def test_fast_writer_equals_reference(options: dict[str, Any], first: list[RowChange], second: list[RowChange],
                                      data: st.DataObject) -> None:
    rows = _variant(first, data)
    if data.draw(st.booleans()):  # a second table, interleaved: mixed messages
        rows = [row for pair in zip(rows, second) for row in pair] + rows[len(second):]
    events: list[Event] = []
    for row in rows:
        if data.draw(st.integers(0, 2)) == 0:
            row = msgspec.structs.replace(row, columns=awkward_image(row.columns, data, _AWKWARD, one_in=4),
                                          pre_columns=awkward_image(row.pre_columns, data, _AWKWARD, one_in=4))
        events.append(row)
    fast = craft.Encoder(options)
    reference = _Reference(options)
    assert _encoded(fast, events) == _encoded(reference, events)
    for event in events:  # one row at a time too: a row the fast path takes must not change later ones
        assert _encoded(fast, [event]) == _encoded(reference, [event])


@settings(max_examples=80, deadline=None)
@given(rows=row_changes(max_rows=6))
def test_fast_writer_takes_valid_rows(rows: list[RowChange]) -> None:
    # Generated rows of every column type, valid values: the writer writes every image (no decline).
    encoder = craft.Encoder()
    for row in rows:
        assert row.table_info is not None
        writer = encoder._plan(row.table_info).writer
        assert writer is not None
        for image in (row.columns, row.pre_columns):
            if image is not None:
                chunk, values_size = writer(image)
                assert values_size <= len(chunk)


def test_fast_writer_every_varint_size() -> None:
    # Both integer kinds at every size boundary, FLOAT/DOUBLE edge values, values whose lengths take
    # one to three bytes, NULLs: rows of all of them, written by both paths, commit ts deltas of
    # every size (and one that decreases, wrapping mod 2**64).
    info = table(col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), col("u", 8, int(F.BINARY) | U),
                 col("f", 4, int(F.BINARY)), col("d", 5, int(F.BINARY)), col("b", 252, int(F.BINARY)),
                 col("t", 15, 0), col("g", 255, int(F.BINARY)), schema="s", name="wide_values")
    signed = [v for v in _BOUNDARIES if -(2**63) <= v < 2**63]
    unsigned = [abs(v) for v in _BOUNDARIES] + [2**64 - 1]
    floats = [0.0, -0.0, 1.5, 3.4028234663852886e38, -3.4e38, 1e-46, float("nan"), float("inf"), 1e300]
    rows: list[Event] = [insert(info, {"id": signed[i % len(signed)], "u": unsigned[i % len(unsigned)],
                          "f": floats[i % len(floats)], "d": floats[(i + 3) % len(floats)],
                          "b": None if i % 7 == 0 else b"b" * (i * 997 % 20000), "t": "t" * (i * 331 % 9000),
                          "g": b"ignored"}, commit_ts=(1 << 62) + (i * 7919 << (i % 40)) - (i % 5 == 4) * (1 << 61))
            for i in range(60)]
    for options in OPTIONS:
        assert _encoded(craft.Encoder(options), rows) == _encoded(_Reference(options), rows)
    fast = craft.Encoder()
    writer = fast._plan(info).writer
    assert writer is not None
    for row in rows:
        assert isinstance(row, RowChange) and row.columns is not None and writer(row.columns)
