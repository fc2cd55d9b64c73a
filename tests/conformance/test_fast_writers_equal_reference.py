"""Every JSON encoder's generated row writer equals its reference path, byte for byte.

Like the decoders' twin paths (test_fast_equals_reference): for each protocol and every option set
the writers take (and some they decline), the rows of generated tables — valid, with awkward
values swapped in (every escape where orjson and the Go writers differ, invalid UTF-8, lone
surrogates, floats off the fast formats, values of other types) and with a column dropped or added
— are encoded by an encoder with its writers and by one whose writers are switched off. Both give
the same messages or the same EncodeError.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import canal_json, open_protocol, simple
from pyticdc.codec.base import BaseEncoder, Message
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnFlag, ColumnInfo, Event, Op, Row, RowChange, TableInfo
from strategies import awkward_image, row_changes

_AWKWARD = st.sampled_from([
    b"<a&b>", b"\x08\x0c", b"\\b", b"\\\x08", "\u2028\u2029".encode(), "é订单😀".encode(), b"\xff\xfe", b"\x00\x1f\x7f",
    "text", "<&>", "\udc80", "\\f\b", 1.5, -0.0, 0.1, 1e-7, 1e22, 3.4e38, 1e39, float("nan"), float("-inf"),
    16777216.0, 0.000123, 123456.7, -524.0707458162173, 2**64 - 1, 2**64, 2**63, -(2**63) - 1, -1, True, None, b"",
    "18446744073709551615", "x1", bytearray(b"ab"),
])


class _CanalReference(canal_json.Encoder):
    def _writer(self, table_info: TableInfo) -> None:
        return None


class _OpenReference(open_protocol.Encoder):
    def _row_writer(self, info: TableInfo) -> None:
        return None


class _SimpleReference(simple.Encoder):
    def _fast_json_message(self, row: RowChange) -> Message | None:
        return None


# (protocol label, fast encoder class, reference class, option sets)
CONFIGS: list[tuple[str, type[BaseEncoder], type[BaseEncoder], dict[str, Any]]] = [
    *[("canal-json", canal_json.Encoder, _CanalReference, o) for o in (
        {}, {"enable-tidb-extension": True}, {"content-compatible": True, "enable-tidb-extension": True},
        {"only-output-updated-columns": True}, {"delete-only-output-handle-key-columns": True},
        {"large-message-handle-compression": "lz4"},
        {"enable-tidb-extension": True, "large-message-handle-option": "handle-key-only", "max-message-bytes": 900},
    )],
    *[("open-protocol", open_protocol.Encoder, _OpenReference, o) for o in (
        {}, {"open-protocol.output-old-value": False}, {"delete-only-output-handle-key-columns": True},
        {"only-output-updated-columns": True}, {"large-message-handle-compression": "snappy"},
        {"max-batch-size": 2}, {"large-message-handle-option": "handle-key-only", "max-message-bytes": 900},
    )],
    *[("simple", simple.Encoder, _SimpleReference, o) for o in (
        {}, {"delete-only-output-handle-key-columns": True}, {"time-zone": "Asia/Shanghai"},
        {"large-message-handle-compression": "snappy"},
        {"large-message-handle-option": "handle-key-only", "max-message-bytes": 900},
    )],
]


def _encoded(encoder: BaseEncoder, events: list[Event]) -> list[Message] | str:
    try:
        return encoder.encode(events)
    except EncodeError as exc:
        return f"EncodeError: {exc}"


@pytest.mark.parametrize(("protocol", "fast", "reference", "options"), CONFIGS,
                         ids=[f"{p}-{i}" for i, (p, _, _, _) in enumerate(CONFIGS)])
@settings(max_examples=60, deadline=None)
@given(rows=row_changes(), data=st.data())
def test_row_writers_equal_reference(protocol: str, fast: type[BaseEncoder], reference: type[BaseEncoder],
                                     options: dict[str, Any], rows: list[RowChange], data: st.DataObject) -> None:
    events: list[Event] = []
    draw = data.draw
    # A partitioned table now and then (Open's key carries the partition), rows named otherwise than
    # their table_info (a writer bakes the table's names in), row ids 0 and past int64.
    info = rows[0].table_info
    assert info is not None
    if draw(st.integers(0, 3)) == 0:
        info = msgspec.structs.replace(info, is_partition=True)
    for row in rows:
        if draw(st.booleans()):
            row = RowChange(op=row.op, schema=row.schema + draw(st.sampled_from(["", "", "", "_x"])),
                            table=row.table + draw(st.sampled_from(["", "", "", "_y"])), commit_ts=row.commit_ts,
                            columns=awkward_image(row.columns, data, _AWKWARD),
                            pre_columns=awkward_image(row.pre_columns, data, _AWKWARD),
                            table_id=row.table_id,
                            physical_table_id=draw(st.sampled_from([row.physical_table_id, 0, 7])),
                            row_id=draw(st.sampled_from([row.row_id, row.row_id, 0, 2**63])), table_info=info)
        else:
            row = msgspec.structs.replace(row, table_info=info)
        events.append(row)
    extra: dict[str, Any] = {"auto_bootstrap": False} if protocol == "simple" else {}
    # One row at a time too: a row the fast encoder takes must not change how later rows go.
    fast_encoder = fast(options, clock=lambda: 1_700_000_000_123, **extra)
    reference_encoder = reference(options, clock=lambda: 1_700_000_000_123, **extra)
    assert _encoded(fast_encoder, events) == _encoded(reference_encoder, events)
    for event in events:
        assert _encoded(fast_encoder, [event]) == _encoded(reference_encoder, [event])


@pytest.mark.parametrize(("protocol", "fast", "options"), [
    ("canal-json", canal_json.Encoder, {"enable-tidb-extension": True}),
    ("open-protocol", open_protocol.Encoder, {}),
    ("simple", simple.Encoder, {}),
])
@settings(max_examples=60, deadline=None)
@given(rows=row_changes())
def test_row_writers_take_valid_rows(protocol: str, fast: type[BaseEncoder], options: dict[str, Any],
                                     rows: list[RowChange]) -> None:
    # Generated rows of every column type, valid values: the writers write them all (no decline).
    encoder: Any = fast(options, clock=lambda: 7)
    for row in rows:
        assert row.table_info is not None
        if protocol == "canal-json":
            writer = encoder._writer(row.table_info)
            assert writer is not None and writer(row, 7) is not None
        elif protocol == "open-protocol":
            assert encoder._fast_row(row) is not None
        else:
            assert encoder._fast_json_message(row) is not None


_ODD_NAMES = ["{image}", "100%", "%d%s", "a\"b", "back\\slash", "<&>", "名前", "\u2028", "tab\there", "\x08", "v",
              "new"]


@pytest.mark.parametrize(("protocol", "fast", "reference", "options"), [c for c in CONFIGS if not c[3]],
                         ids=["canal-json", "open-protocol", "simple"])
@pytest.mark.parametrize("schema", ["test", "d%b", "<db>"])
def test_row_writers_take_odd_names(protocol: str, fast: type[BaseEncoder], reference: type[BaseEncoder],
                                    options: dict[str, Any], schema: str) -> None:
    # Names enter generated code as literals and fixed bytes as escaped JSON: none is code or a format.
    columns = tuple(ColumnInfo(name=name, type_code=15, flags=int(ColumnFlag.BINARY), flen=16)
                    for name in _ODD_NAMES)
    key = ColumnInfo(name="id", type_code=8, flags=int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY))
    info = TableInfo(schema=schema, table="t%s", table_id=9, columns=(key, *columns), pk_is_handle=True)
    post = Row({"id": 1, **{name: f"{name}%s".encode() for name in _ODD_NAMES}})
    pre = Row({"id": 1, **{name: b"<\x00\x08>" for name in _ODD_NAMES}})
    events: list[Event] = [
        RowChange(op=Op.INSERT, schema=schema, table="t%s", commit_ts=1 << 40, columns=post, table_info=info,
                  row_id=1),
        RowChange(op=Op.UPDATE, schema=schema, table="t%s", commit_ts=1 << 41, columns=post, pre_columns=pre,
                  table_info=info, row_id=1),
        RowChange(op=Op.DELETE, schema=schema, table="t%s", commit_ts=1 << 42, pre_columns=pre, table_info=info),
    ]
    extra: dict[str, Any] = {"auto_bootstrap": False} if protocol == "simple" else {}
    encoder: Any = fast(options, clock=lambda: 5, **extra)
    assert _encoded(encoder, events) == _encoded(reference(options, clock=lambda: 5, **extra), events)
    row = events[1]
    assert isinstance(row, RowChange)
    if protocol == "canal-json":
        assert encoder._writer(info)(row, 5) is not None
    elif protocol == "open-protocol":
        assert encoder._fast_row(row) is not None
    else:
        assert encoder._fast_json_message(row) is not None
