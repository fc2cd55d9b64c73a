"""The Debezium encoder's orjson image writer against its reference writer (``dump`` per value)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import make_encoder
from pyticdc.codec.debezium import encoder as debezium_encoder
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnInfo, Row, RowChange, TableInfo
from strategies import row_changes

# Text the orjson writer must hand back (\b, \f, invalid UTF-8) or write like json-iterator does.
_AWKWARD = st.sampled_from([b"\x08", b"\x0c", b"\\b", b"\xff\xfe", b"<&>", "\u2028".encode(), b"\x01\x1f\"\\",
                            "é订单\U0001f600".encode(), b"plain"])


def _with_awkward_text(row: RowChange, data: st.DataObject) -> RowChange:
    """``row`` with its text columns' values swapped, now and then, for awkward bytes."""
    draw = data.draw
    assert row.table_info is not None
    texts = [c.name for c in row.table_info.columns if c.type_code in (15, 249, 250, 251, 252, 254)]

    def swap(image: Row | None) -> Row | None:
        if image is None:
            return None
        return Row({k: draw(_AWKWARD) if k in texts and draw(st.booleans()) else v for k, v in image.items()})
    return RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                     columns=swap(row.columns), pre_columns=swap(row.pre_columns), table_id=row.table_id,
                     physical_table_id=row.physical_table_id, row_id=row.row_id, table_info=row.table_info)


@settings(max_examples=300, deadline=None)
@given(rows=row_changes(), data=st.data())
def test_orjson_image_equals_reference_image(rows: list[RowChange], data: st.DataObject) -> None:
    encoder = make_encoder("debezium", {})
    assert isinstance(encoder, debezium_encoder.Encoder)
    for row in rows:
        row = _with_awkward_text(row, data)
        assert row.table_info is not None
        plan = encoder._plan(row.table_info)
        for image in (row.columns, row.pre_columns):
            if image is None:
                continue
            for columns in (plan.payload, plan.key):
                fast = debezium_encoder._image_through_orjson(columns, image)
                reference = debezium_encoder._image_reference(columns, image)
                assert fast is None or fast == reference


def test_orjson_image_declines_what_it_would_write_differently() -> None:
    text = ColumnInfo(name="t", type_code=15, charset="utf8mb4", collation="utf8mb4_bin", flen=64, decimal=0,
                      type_desc="varchar(64)")
    table = TableInfo(schema="s", table="t", columns=(text,))
    encoder = make_encoder("debezium", {})
    assert isinstance(encoder, debezium_encoder.Encoder)
    columns = encoder._plan(table).payload
    for awkward in (b"\x08", b"a\x0cb", b"\xff"):
        assert debezium_encoder._image_through_orjson(columns, Row({"t": awkward})) is None
    assert debezium_encoder._image_through_orjson(columns, Row({"t": b"<\x01\xe2\x80\xa8>"})) == \
        '{"t":"<\\u0001\u2028>"}'


# Date-time texts near and off the canonical form: every fraction length, two-digit and small
# years, invalid dates, out-of-range clock fields, non-ASCII digits, a "T" separator, spaces.
_YEARS = st.sampled_from(["0000", "0069", "0099", "0100", "1969", "1970", "1971", "2024", "2025", "9999", "٢٠٢٤"])
_TWO = st.integers(0, 99).map(lambda n: f"{n:02d}")


def _field(high: int, low: int = 0) -> st.SearchStrategy[str]:
    """A two-digit field, mostly in range (so the canonical form is common), now and then not."""
    return st.one_of(st.integers(low, high).map(lambda n: f"{n:02d}"), _TWO)


@st.composite
def _datetime_texts(draw: st.DrawFn, fsp: int) -> str:
    text = (f"{draw(_YEARS)}-{draw(_field(12, 1))}-{draw(_field(31, 1))}{draw(st.sampled_from([' ', ' ', 'T', '  ']))}"
            f"{draw(_field(23))}:{draw(_field(59))}:{draw(_field(59))}")
    digits = draw(st.one_of(st.just(max(fsp, 0)), st.integers(0, 8)))
    if digits:
        text += "." + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=digits, max_size=digits)))
    return text


@settings(max_examples=2000, deadline=None)
@given(data=st.data(), fsp=st.integers(-1, 6), zone=st.sampled_from(["UTC", "Asia/Shanghai"]),
       from_default=st.booleans())
def test_canonical_datetime_wire_equals_reference(data: st.DataObject, fsp: int, zone: str,
                                                  from_default: bool) -> None:
    from zoneinfo import ZoneInfo

    from pyticdc.codec.debezium import writers
    text = data.draw(_datetime_texts(fsp))
    tz = ZoneInfo(zone)
    for code in (12, 7):  # DATETIME, TIMESTAMP
        column = ColumnInfo(name="t", type_code=code, flen=19, decimal=fsp, type_desc="datetime")
        wire = writers.wire_function(column, tz)
        try:
            expected: object = (writers.timestamp_wire_text(column, text, tz, from_default) if code == 7 else
                                _datetime_reference(column, text))
        except EncodeError as exc:
            expected = str(exc)
        try:
            got: object = wire(text, from_default)
        except EncodeError as exc:
            got = str(exc)
        assert got == expected


def _datetime_reference(column: ColumnInfo, text: str) -> object:
    """``_datetime_wire`` without its fast path (text is never CURRENT_TIMESTAMP here)."""
    from pyticdc.codec.debezium import writers
    micros = writers.datetime_wire_us(column, text)
    if micros is None:
        return 0 if not column.nullable else None
    return micros // 1000 if column.decimal <= 3 else micros
