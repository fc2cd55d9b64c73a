"""Simple-JSON's generated row writer equals the reference path on what its shortcuts see.

The writer reuses the wire value of an UPDATE's post-image value for the pre-image when both hold
the very same object, remembers float texts across rows, and lets msgspec write the images (orjson
where a column name needs an escape). These are checked here against the encoder with its writer
switched off: images sharing objects (awkward values included), the same float in many rows, zeros
of both signs after a remembered float, more floats than are kept, odd column names; and msgspec's
strings and bytes against orjson's and base64.
"""

from __future__ import annotations

import base64
import random
import struct
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fast_paths import ReferenceEncoder, c_helpers, encoded
from pyticdc.codec import simple
from pyticdc.codec.jsontext import format_float32_f, format_float64_f
from pyticdc.codec.simple import values, writer_json
from pyticdc.model import ColumnFlag, ColumnInfo, Event, Op, Row, RowChange, TableInfo
from strategies import awkward_image, row_changes

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

_AWKWARD = st.sampled_from([
    b"<a&b>", "\u2028".encode(), b"\xff\xfe", "<&>", "\udc80", 1.5, -0.0, 0.0, 0.1, 1e-7, 1e22, 3.4e38, 1e39,
    float("nan"), 16777216.0, 123456.7, 2**64 - 1, 2**64, -(2**63) - 1, -1, True, None, b"", "x1",
    bytearray(b"ab"),
])


def _pair(options: dict[str, Any] | None = None) -> tuple[simple.Encoder, simple.Encoder]:
    options = options or {}
    return (simple.Encoder(options, clock=lambda: 1_700_000_000_123, auto_bootstrap=False),
            ReferenceEncoder(options, clock=lambda: 1_700_000_000_123, auto_bootstrap=False))


@settings(max_examples=80, deadline=None)
@given(rows=row_changes(), data=st.data())
def test_updates_sharing_values_equal_reference(rows: list[RowChange], data: st.DataObject) -> None:
    # Post-images built from their pre-images (the objects shared), some values awkward in either.
    events: list[Event] = []
    for row in rows:
        pre = awkward_image(row.pre_columns or row.columns, data, _AWKWARD)
        assert pre is not None
        post = Row({k: data.draw(_AWKWARD) if data.draw(st.integers(0, 3)) == 0 else v for k, v in pre.items()})
        events.append(RowChange(op=Op.UPDATE, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                                columns=post, pre_columns=pre, table_id=row.table_id,
                                physical_table_id=row.physical_table_id, row_id=row.row_id,
                                table_info=row.table_info))
        # and the DELETE of that row: its pre-image's floats are remembered by now
        events.append(RowChange(op=Op.DELETE, schema=row.schema, table=row.table, commit_ts=row.commit_ts + 1,
                                pre_columns=post, table_id=row.table_id, physical_table_id=row.physical_table_id,
                                row_id=row.row_id, table_info=row.table_info))
    fast, reference = _pair()
    assert encoded(fast, events) == encoded(reference, events)
    for event in events:
        assert encoded(fast, [event]) == encoded(reference, [event])


_TABLE = TableInfo(
    schema="s", table="t", table_id=3, pk_is_handle=True,
    columns=(
        ColumnInfo(name="id", type_code=3, flags=int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY)),
        ColumnInfo(name="f", type_code=4, flags=int(ColumnFlag.NULLABLE)),
        ColumnInfo(name="d", type_code=5, flags=int(ColumnFlag.NULLABLE)),
    ),
)


def _insert(key: int, f: object, d: object) -> RowChange:
    return RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1 << 30, columns=Row({"id": key, "f": f, "d": d}),
                     table_id=3, physical_table_id=3, table_info=_TABLE)


@pytest.mark.parametrize("values", [
    [1.5, -0.0, 0.0, 1.5, -0.0],
    [0.1, 0.1, 3.4028235e38, 3.4028235e38, 1e39, 1e39],
    [-524.0707458162173, 0.000123, -524.0707458162173, 1e-7, 1e-7],
])
def test_remembered_float_texts_equal_reference(values: list[float]) -> None:
    # A float already written (a remembered text) and zeros of both signs after it give the reference bytes.
    events: list[Event] = [_insert(i, v, v) for i, v in enumerate(values)]
    fast, reference = _pair()
    assert fast._fast_json_message(_insert(0, values[0], values[0])) is not None
    assert encoded(fast, events) == encoded(reference, events)
    for event in events:
        assert encoded(fast, [event]) == encoded(reference, [event])


@pytest.mark.parametrize(("pre", "post"), [
    ({"id": 1, "f": 0.0, "d": -0.0}, {"id": 1, "f": -0.0, "d": 0.0}),
    ({"id": 1, "f": 2, "d": 1}, {"id": True, "f": 2.0, "d": 1.0}),
])
def test_equal_values_that_are_other_objects_are_written_afresh(pre: dict[str, object],
                                                                post: dict[str, object]) -> None:
    # Only the very same object shares its wire value: equal values of another sign or type do not.
    event = RowChange(op=Op.UPDATE, schema="s", table="t", commit_ts=1 << 30, columns=Row(post),
                      pre_columns=Row(pre), table_id=3, physical_table_id=3, table_info=_TABLE)
    fast, reference = _pair()
    assert fast._fast_json_message(event) is not None
    assert encoded(fast, [event]) == encoded(reference, [event])


def test_float_texts_are_bounded() -> None:
    # More distinct floats than are kept: the memory is cleared, later rows still equal the reference.
    count = writer_json._FLOAT_TEXTS_MAX + 10
    events: list[Event] = [_insert(i, 1.0 + i / 1024, 2.0 + i / 7) for i in range(count)]
    fast, reference = _pair()
    assert fast.encode(events) == reference.encode(events)
    assert len(writer_json._F32_TEXTS) <= writer_json._FLOAT_TEXTS_MAX
    assert len(writer_json._F64_TEXTS) <= writer_json._FLOAT_TEXTS_MAX
    assert 0.0 not in writer_json._F32_TEXTS and 0.0 not in writer_json._F64_TEXTS


# Strings of what JSON writers escape differently: controls, quote, backslash, HTML characters,
# U+2028/2029, DEL, non-ASCII and plain letters.
_TEXT_PIECES = [chr(c) for c in range(0x20)] + ['"', "\\", "\\b", "b", "<", ">", "&", "\u2028", "\u2029", "\x7f",
                                                 "\x85", "é", "订单", "\U0001f600", "\ufeff", "plain", "u003c"]


@settings(max_examples=1000)
@given(texts=st.lists(st.one_of(st.text(), st.lists(st.sampled_from(_TEXT_PIECES)).map("".join)), max_size=4),
       data=st.binary(max_size=40))
def test_msgspec_writes_strings_as_orjson_and_bytes_as_base64(texts: list[str], data: bytes) -> None:
    # The struct images rest on this: msgspec's string escapes are orjson's (which the fixups turn
    # into Go's), its bytes are encoding/json's padded standard base64, and a lone surrogate is refused.
    for text in texts:
        try:
            expected = orjson.dumps(text)
        except orjson.JSONEncodeError:
            with pytest.raises(UnicodeEncodeError):
                writer_json._encode(text)
            continue
        assert writer_json._encode(text) == expected
    assert writer_json._encode(data) == orjson.dumps(base64.b64encode(data).decode("ascii"))


def _odd_table(name: str) -> TableInfo:
    return TableInfo(schema="s", table="t", table_id=3, pk_is_handle=True, columns=(
        ColumnInfo(name="id", type_code=3, flags=int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY)),
        ColumnInfo(name=name, type_code=15, flen=16, charset="binary", flags=int(ColumnFlag.BINARY)),
        ColumnInfo(name="t", type_code=15, flen=16, charset="utf8mb4", collation="utf8mb4_bin"),
    ))


@pytest.mark.parametrize(("name", "struct"), [
    ("plain", True), ("<&>\u2028名前", True), ("100%s", True), ('a"b', False), ("back\\slash", False),
    ("tab\there", False), ("\x08", False),
])
def test_images_are_structs_unless_a_name_needs_an_escape(name: str, struct: bool) -> None:
    # msgspec refuses such a field name: those tables' images are dicts for orjson, with the same bytes.
    table = _odd_table(name)
    assert (writer_json._image_struct([p for p in values.table_plan(table)[0]]) is not None) is struct
    post = Row({"id": 1, name: b"\x00\xff<", "t": "x<\u2028".encode()})
    pre = Row({"id": 1, name: bytearray(b"ab"), "t": b"\xff"})
    insert = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1 << 40, columns=post, table_info=table)
    events: list[Event] = [
        insert,
        RowChange(op=Op.UPDATE, schema="s", table="t", commit_ts=1 << 41, columns=post, pre_columns=pre,
                  table_info=table),
        RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=1 << 42, pre_columns=post, table_info=table),
    ]
    fast, reference = _pair()
    assert fast._fast_json_message(insert) is not None
    assert encoded(fast, events) == encoded(reference, events)


_FLOAT32S = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=2000)
@given(value=st.one_of(_FLOAT32S, st.floats(allow_nan=False, allow_infinity=False, min_value=-4e38, max_value=4e38),
                       _FLOAT32S.map(lambda f: f * (1 + 2**-30))))
def test_float_texts_are_the_reference_texts(value: float) -> None:
    # The writer's float texts spell out jsontext's common cases: the same text for every float
    # (float32 values, doubles between them, values past float32 that it refuses alike).
    writer_json._F32_TEXTS.clear()
    writer_json._F64_TEXTS.clear()
    assert writer_json._f64_text(value) == format_float64_f(value)
    try:
        expected = format_float32_f(value)
    except OverflowError:
        with pytest.raises(OverflowError):
            writer_json._f32_text(value)
        return
    assert writer_json._f32_text(value) == expected


def test_float_texts_of_many_random_floats() -> None:
    # Every branch of _f32_text (7, 8 and 9 digits, shorter, outside the common range) on a sweep.
    rng = random.Random(18)
    for _ in range(20000):
        value = struct.unpack("<f", struct.pack("<f", rng.random() * 10 ** rng.randrange(-6, 8)))[0]
        value = -value if rng.random() < 0.3 else value
        assert writer_json._f32_text(value) == format_float32_f(value)
        assert writer_json._f64_text(value * 1.1) == format_float64_f(value * 1.1)


_INTS_TABLE = TableInfo(schema="s", table="ints", table_id=4, pk_is_handle=True, columns=(
    ColumnInfo(name="id", type_code=3, flags=int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY)),
    ColumnInfo(name="tiny", type_code=1, flags=int(ColumnFlag.NULLABLE)),
    ColumnInfo(name="ubig", type_code=8, flags=int(ColumnFlag.NULLABLE | ColumnFlag.UNSIGNED), unsigned=True),
    ColumnInfo(name="bits", type_code=16, flags=int(ColumnFlag.NULLABLE | ColumnFlag.UNSIGNED), unsigned=True, flen=8),
    ColumnInfo(name="state", type_code=247, flags=int(ColumnFlag.NULLABLE), elems=("a", "b"), charset="utf8mb4",
               collation="utf8mb4_bin"),
))


@pytest.mark.parametrize("value", [0, 1, 1023, 1024, -1, -128, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, True,
                                   False, None, 5.0])
def test_integer_texts_equal_reference(value: object) -> None:
    # The kept texts of small integers, their edges, and what lies beyond each kind's range.
    events: list[Event] = [RowChange(op=Op.INSERT, schema="s", table="ints", commit_ts=1 << 30, table_id=4,
                                     physical_table_id=4, table_info=_INTS_TABLE,
                                     columns=Row({"id": 7, "tiny": value, "ubig": value, "bits": value,
                                                  "state": value}))]
    fast, reference = _pair()
    if type(value) is int and 0 <= value < 2**7:  # the fast writer takes the row
        assert fast._fast_json_message(events[0]) is not None  # type: ignore[arg-type]
    assert encoded(fast, events) == encoded(reference, events)


# Every value kind of the writer (and of its C form): ints of each range, float, double, timestamp,
# text and binary bytes, text; names that sort differently as UTF-8 bytes and as code points.
_KINDS_TABLE = TableInfo(
    schema="s<&>", table="t\u2028", table_id=9, schema_version=449_000_000_000_000_009, pk_is_handle=True,
    columns=(
        ColumnInfo(name="id", type_code=8, flags=int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY)),
        ColumnInfo(name="ubig", type_code=8, flags=int(ColumnFlag.UNSIGNED | ColumnFlag.NULLABLE)),
        ColumnInfo(name="uint", type_code=3, flags=int(ColumnFlag.UNSIGNED | ColumnFlag.NULLABLE)),
        ColumnInfo(name="bits", type_code=16, flags=int(ColumnFlag.UNSIGNED | ColumnFlag.NULLABLE)),
        ColumnInfo(name="f", type_code=4, flags=int(ColumnFlag.NULLABLE)),
        ColumnInfo(name="d", type_code=5, flags=int(ColumnFlag.NULLABLE)),
        ColumnInfo(name="ts", type_code=7, flags=int(ColumnFlag.NULLABLE)),
        ColumnInfo(name="txt", type_code=15, flags=int(ColumnFlag.NULLABLE), charset="utf8mb4"),
        ColumnInfo(name="bin", type_code=252, flags=int(ColumnFlag.NULLABLE | ColumnFlag.BINARY)),
        ColumnInfo(name="dec", type_code=246, flags=int(ColumnFlag.NULLABLE)),
        ColumnInfo(name="é<", type_code=3, flags=int(ColumnFlag.NULLABLE)),
        ColumnInfo(name="\U0001f600", type_code=3, flags=int(ColumnFlag.NULLABLE)),
        ColumnInfo(name="\uff10", type_code=3, flags=int(ColumnFlag.NULLABLE)),
    ),
)
_ANY_TEXT = st.one_of(st.text(), st.lists(st.sampled_from(_TEXT_PIECES)).map("".join))
_ANY_BYTES = st.one_of(st.binary(max_size=40), _ANY_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")))
_KIND_VALUES: dict[str, Any] = {
    "id": st.integers(-(2**63) - 2, 2**63 + 1), "ubig": st.integers(-2, 2**64 + 1), "uint": st.integers(-2, 2**63 + 1),
    "bits": st.integers(-1, 2**64), "f": st.floats(width=32) | st.floats(), "d": st.floats(), "ts": _ANY_TEXT,
    "txt": _ANY_BYTES, "bin": _ANY_BYTES, "dec": _ANY_TEXT, "é<": st.integers(-5, 5),
    "\U0001f600": st.integers(0, 2000), "\uff10": st.just(7),
}


@settings(max_examples=400)
@given(data=st.data(), op=st.sampled_from([Op.INSERT, Op.UPDATE, Op.DELETE]), handle_only=st.booleans())
def test_every_value_kind_equals_reference(data: st.DataObject, op: Op, handle_only: bool) -> None:
    def image() -> Row:
        return Row({name: None if name != "id" and data.draw(st.integers(0, 6)) == 0 else data.draw(values)
                    for name, values in _KIND_VALUES.items()})
    event = RowChange(op=op, schema="s<&>", table="t\u2028", commit_ts=data.draw(st.integers(0, 2**64 - 1)),
                      columns=None if op is Op.DELETE else image(), pre_columns=None if op is Op.INSERT else image(),
                      table_id=9, physical_table_id=data.draw(st.sampled_from([0, 9, 2**40])), table_info=_KINDS_TABLE)
    fast, reference = _pair({"delete-only-output-handle-key-columns": handle_only})
    assert encoded(fast, [event]) == encoded(reference, [event])


def test_the_c_writer_writes_the_common_rows() -> None:
    # In the C form the whole message comes from _native.simple_json_row, not from a decline to the
    # generated lines: the same bytes as the reference, controls, HTML characters and U+2028 included.
    helpers = c_helpers()
    row = Row({"id": -(2**63), "ubig": 2**64 - 1, "uint": 2**63 - 1, "bits": 5, "f": 1.5, "d": 0.1,
               "ts": "2025-01-02 03:04:05", "txt": "a\"\\\b\f\n\r\t\x01<>&\u2028\u2029é\U0001f600".encode(),
               "bin": b"\x00\xff<", "dec": "12.50", "é<": -3, "\U0001f600": 1023, "\uff10": 7})
    plans = writer_json._native_plans(_KINDS_TABLE, [p for p in values.table_plan(_KINDS_TABLE)[0] if not p.virtual])
    assert plans is not None
    for op in (Op.INSERT, Op.UPDATE, Op.DELETE):
        event = RowChange(op=op, schema="s<&>", table="t\u2028", commit_ts=2**64 - 1, table_id=9, physical_table_id=9,
                          columns=None if op is Op.DELETE else row, pre_columns=None if op is Op.INSERT else row,
                          table_info=_KINDS_TABLE)
        first, second = (row, row) if op is Op.UPDATE else (row, None)
        written = helpers.simple_json_row(plans[op.name], 9, 2**64 - 1, 1_700_000_000_123, first, second, "UTC")
        (expected,) = ReferenceEncoder(clock=lambda: 1_700_000_000_123, auto_bootstrap=False).encode([event])
        assert written == expected.value
    bad = Row({**row, "txt": b"\xff"})  # invalid UTF-8 in a text column: a decline, not an error
    assert helpers.simple_json_row(plans["INSERT"], 9, 1, 1, bad, None, "UTC") is None
