"""Open Protocol's generated row writer (``writer``) and the encoder's batch loop against the reference path,
and the decoder fast path's ``-0`` rule (a row document is searched only when a number value is zero)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import PK, column, delete, insert, table, update
from fast_paths import open_fast_decode
from pyticdc.codec import open_protocol
from pyticdc.codec.base import Message
from pyticdc.codec.open_protocol import encoder as open_encoder
from pyticdc.codec.open_protocol.writer import WRITER_DECLINES, row_writer
from pyticdc.errors import DecodeError, EncodeError
from pyticdc.model import ColumnFlag, Event, RowChange, TableInfo
from strategies import awkward_image, row_changes

_AWKWARD = st.sampled_from([b"\x08\x0c", b"\xff\xfe", b"<&>", "\u2028\u2029".encode(), b"\x01\x1f\"\\",
                            "é订单".encode(), "text<>", "\udc80", 1.5, -0.0, 0.0, 0, 2**64, -(2**63) - 1, True,
                            None, b"", float("nan"), 3.4e39, 1e-50])

OPTION_SETS: list[dict[str, Any]] = [
    {}, {"open-protocol.output-old-value": False}, {"delete-only-output-handle-key-columns": True},
]


class _ReferenceEncoder(open_encoder.Encoder):
    """The encoder with the generated row writer switched off: every row takes ``_encode_row``."""

    def _row_writer(self, info: TableInfo) -> None:
        return None


def _reference(encoder: open_encoder.Encoder, row: RowChange) -> tuple[bytes, bytes] | str:
    try:
        return encoder._row_key(row), encoder._value(encoder._images(row, False))
    except EncodeError as exc:
        return str(exc)


def _awkward_rows(rows: list[RowChange], data: st.DataObject) -> list[RowChange]:
    out = []
    for row in rows:
        if data.draw(st.booleans()):
            row = RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                            columns=awkward_image(row.columns, data, _AWKWARD, one_in=5),
                            pre_columns=awkward_image(row.pre_columns, data, _AWKWARD, one_in=5),
                            table_id=row.table_id, physical_table_id=row.physical_table_id, row_id=row.row_id,
                            table_info=row.table_info)
        out.append(row)
    return out


def _encoded(encoder: open_encoder.Encoder, rows: list[Event]) -> list[Message] | str:
    try:
        return encoder.encode(rows)
    except EncodeError as exc:
        return str(exc)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "default")
@settings(max_examples=150, deadline=None)
@given(rows=row_changes(), data=st.data())
def test_row_writer_equals_reference(options: dict[str, Any], rows: list[RowChange], data: st.DataObject) -> None:
    encoder = open_protocol.Encoder(options)
    for row in _awkward_rows(rows, data):
        assert row.table_info is not None
        writer = row_writer(row.table_info, encoder.options.open_output_old_value,
                            encoder.options.delete_only_output_handle_key_columns)
        if writer is None:
            continue
        try:
            written = writer(row)
        except WRITER_DECLINES:
            continue
        if written is not None:
            assert written == _reference(encoder, row)


@pytest.mark.parametrize("options", [*OPTION_SETS, {"max-message-bytes": 700, "max-batch-size": 3}],
                         ids=lambda o: ",".join(o) or "default")
@settings(max_examples=100, deadline=None)
@given(rows=row_changes(max_rows=6), data=st.data())
def test_encode_equals_reference_encode(options: dict[str, Any], rows: list[RowChange], data: st.DataObject) -> None:
    # The batch loop (writer results framed per batch) against _encode_row alone, batch boundaries included.
    awkward = _awkward_rows(rows, data)
    assert _encoded(open_protocol.Encoder(options), [*awkward]) == _encoded(_ReferenceEncoder(options), [*awkward])


_ODD_NAMES = table(column("id", 8, PK), column("<a&b>", 15, text=True), column("x\u2028y", 3, ColumnFlag.NULLABLE),
                   column('q"uote', 3), column("back\\slash", 15), column("tab\there\x01", 15),
                   column("\x7fpyticdc5\x7f", 15), column("é", 5, ColumnFlag.NULLABLE), schema="s<1>", name="t&u")


def test_row_writer_on_column_names_needing_escapes() -> None:
    # msgspec refuses names with a quote, a backslash or a control: they are written as stand-ins
    # and replaced after; a real name looking like a stand-in stays itself.
    values = {"id": 1, "<a&b>": b"<p>", "x\u2028y": 0, 'q"uote': 2, "back\\slash": b'\\",\"q\"uote\":',
              "tab\there\x01": b'{"\x7fpyticdc3\x7f":', "\x7fpyticdc5\x7f": b"", "é": 0.5}
    rows = [insert(_ODD_NAMES, values), update(_ODD_NAMES, {**values, "é": None}, values), delete(_ODD_NAMES, values)]
    assert _encoded(open_protocol.Encoder(), [*rows]) == _encoded(_ReferenceEncoder({}), [*rows])
    writer = row_writer(_ODD_NAMES, True, False)
    assert writer is not None
    for row in rows:
        written = writer(row)
        assert written is not None and written == _reference(open_protocol.Encoder(), row)


# ------------------------------------------------------------------ decoding: "-0" next to zero values
_NUMBERS = table(column("id", 8, PK), column("i", 3, ColumnFlag.NULLABLE), column("f", 4, ColumnFlag.NULLABLE),
                 column("d", 5, ColumnFlag.NULLABLE), column("s", 15, text=True), schema="s", name="n")


def _learnt(event: RowChange) -> tuple[bytes, bytes, open_protocol.Decoder]:
    """One event's message (key, value) and a decoder whose fast path has learnt its table and takes it."""
    [message] = open_protocol.Encoder().encode([event])
    assert message.key is not None and message.value is not None
    decoder = open_protocol.Decoder()
    decoder._fast.learn(decoder.decode_reference(message.value, message.key))  # type: ignore[union-attr]
    assert open_fast_decode(decoder, message.key, message.value) is not None
    return message.key, message.value, decoder


@pytest.mark.parametrize("column_name", ["i", "f", "d", "id"])
def test_a_negative_zero_number_value_declines(column_name: str) -> None:
    row = {"id": 5, "i": 7, "f": 1.5, "d": 2.5, "s": b"-0 in text, -0"}
    _key, _value, decoder = _learnt(insert(_NUMBERS, row))  # taken: "-0" inside a string is no number
    [message] = open_protocol.Encoder().encode([insert(_NUMBERS, {**row, column_name: 0})])
    assert message.key is not None and message.value is not None
    doc = message.value[8:]
    at = doc.index(b'"v":0', doc.index(f'"{column_name}":{{"t":'.encode()))
    doc = doc[:at] + b'"v":-0' + doc[at + 5:]
    value = len(doc).to_bytes(8, "big") + doc
    assert open_fast_decode(decoder, message.key, value) is None
    try:
        reference = decoder.decode(value, message.key)
    except DecodeError:
        return
    [event] = reference
    assert isinstance(event, RowChange) and event.columns is not None
    assert str(event.columns[column_name]) == "-0.0"


def test_zero_number_values_without_a_negative_zero_stay_on_the_fast_path() -> None:
    rows = [insert(_NUMBERS, {"id": 0, "i": 0, "f": 0.0, "d": 0.0, "s": b"a"}),
            update(_NUMBERS, {"id": 0, "i": 1, "f": None, "d": -1.0, "s": b"b"}, {"id": 0, "i": 0, "f": 0.0,
                                                                                  "d": 0.0, "s": b"a"})]
    [message] = open_protocol.Encoder().encode(rows)
    assert message.key is not None and message.value is not None
    decoder = open_protocol.Decoder()
    reference = decoder.decode_reference(message.value, message.key)
    decoder._fast.learn(reference)  # type: ignore[union-attr]
    assert open_fast_decode(decoder, message.key, message.value) == reference


def test_a_null_in_a_not_null_column_declines() -> None:
    info = table(column("id", 8, PK), column("c", 254), column("n", 3), schema="s", name="nn")
    key, plain, decoder = _learnt(insert(info, {"id": 1, "c": b"x", "n": 2}))
    for old, new in [(b'"v":"x"', b'"v":null'), (b'"v":2', b'"v":null'), (b',"v":2', b"")]:
        doc = plain[8:].replace(old, new)
        value = len(doc).to_bytes(8, "big") + doc
        assert open_fast_decode(decoder, key, value) is None
        assert decoder.decode(value, key) == decoder.decode_reference(value, key)


def test_fast_path_declines_other_keys() -> None:
    plain, value, decoder = _learnt(insert(_NUMBERS, {"id": 1, "i": 1, "f": 1.0, "d": 1.0, "s": b"a"}))
    for old, new in [(b'"t":1}', b'"t":2}'), (b'"t":1}', b'"t":1,"ccl":"x"}'), (b'"t":1}', b'"ohk":false}')]:
        key_json = plain[16:].replace(old, new)
        key = plain[:8] + len(key_json).to_bytes(8, "big") + key_json
        assert open_fast_decode(decoder, key, value) is None


def test_row_writer_declines_while_another_thread_fills_its_structs() -> None:
    # One generated writer (and its refilled structs) serves every encoder of the table; a row
    # arriving while they are being filled (the lock is held) takes the reference path.
    info = table(column("id", 8, PK), column("s", 15, text=True), column("f", 4, ColumnFlag.NULLABLE),
                 schema="s", name="locked")
    rows: list[Event] = [insert(info, {"id": i, "s": f"<{i}>".encode(), "f": i / 4}) for i in range(1, 40)]
    writer = row_writer(info, True, False)
    assert writer is not None
    namespace = writer.__globals__
    namespace["acquire"]()
    try:
        assert writer(rows[0]) is None  # type: ignore[arg-type]
        assert open_protocol.Encoder().encode(rows) == _ReferenceEncoder({}).encode(rows)
    finally:
        namespace["release"]()
    assert writer(rows[0]) == _reference(open_protocol.Encoder(), rows[0])  # type: ignore[arg-type]
    assert open_protocol.Encoder().encode(rows) == _ReferenceEncoder({}).encode(rows)
