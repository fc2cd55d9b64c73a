"""The Simple-Avro per-table reader at its length boundaries equals the reference path.

The generated reader inlines one-, two- and three-byte varints, one- and two-byte string
lengths, ten-byte UnsignedBigints, strict UTF-8 text and a commit-ts memo; each boundary (63/64,
8191/8192 bytes; 2**62 and 2**63 for a uint64) and each truncation or byte flip around it must
give what the reference path gives: the same events or the same DecodeError.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fast_paths import answers_of, assert_avro_readers_agree, c_helpers
from pyticdc.codec.simple import Decoder, Encoder
from pyticdc.model import ColumnFlag, ColumnInfo, IndexInfo, Op, Row, RowChange, TableInfo

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

F = ColumnFlag
_PK = int(F.PRIMARY_KEY | F.HANDLE_KEY | F.BINARY)
_N = int(F.NULLABLE | F.BINARY)

TABLE = TableInfo(
    schema="edge", table="lengths", table_id=91, schema_version=449_000_000_000_000_123, pk_is_handle=True,
    columns=(
        ColumnInfo(name="id", type_code=3, flags=_PK, flen=11, decimal=0),
        ColumnInfo(name="u", type_code=8, flags=_N | int(F.UNSIGNED), flen=20, decimal=0),
        ColumnInfo(name="t", type_code=15, flags=int(F.NULLABLE), flen=9000, decimal=0, charset="utf8mb4",
                   collation="utf8mb4_bin"),
        ColumnInfo(name="b", type_code=252, flags=_N, flen=65535, decimal=0),
        ColumnInfo(name="dec", type_code=246, flags=_N, flen=65, decimal=0),
        ColumnInfo(name="ts", type_code=7, flags=_N, flen=19, decimal=0),
        ColumnInfo(name="f", type_code=4, flags=_N, flen=12, decimal=-1),
        ColumnInfo(name="k", type_code=8, flags=_N, flen=20, decimal=0),
    ),
    indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),),
)

_LENGTHS = st.sampled_from([0, 1, 62, 63, 64, 65, 127, 128, 8190, 8191, 8192, 8193])
_UINT64 = st.one_of(st.sampled_from([0, 1, 63, 64, 2**62 - 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1]),
                    st.integers(0, 2**64 - 1))
# Signed values whose zigzag varint takes 1, 2, 3, 4 and 10 bytes, at each edge.
_INT64 = st.one_of(st.sampled_from([0, -1, 63, -64, 64, -65, 8191, -8192, 8192, 1048575, -1048576, 1048576,
                                    2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))


@st.composite
def _images(draw: st.DrawFn, key: int) -> Row:
    def maybe(value: st.SearchStrategy[Any]) -> Any:
        return None if draw(st.integers(0, 9)) == 0 else draw(value)
    return Row({
        "id": key,
        "u": maybe(_UINT64),
        "t": maybe(_LENGTHS.map(lambda n: ("é" * n)[: max(n // 2, n - 1)].encode()[:n].ljust(n, b"x"))),
        "b": maybe(_LENGTHS.flatmap(lambda n: st.binary(min_size=n, max_size=n))),
        "dec": maybe(st.sampled_from(["0", "-1.5", "12345678901234567890.123", "9" * 65])),
        "ts": maybe(st.sampled_from(["2025-01-01 00:00:00", "1970-01-01 00:00:01"])),
        "f": maybe(st.floats(width=32, allow_nan=False)),
        "k": maybe(_INT64),
    })


# Each message draws mutation offsets from ``data``: the health check counts them as one large input.
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), commit_ts=st.sampled_from([449_000_000_000_000_777, 5, 2**63 + 9, 2**64 - 1]))
def test_reader_boundaries_equal_the_reference_path(data: st.DataObject, commit_ts: int) -> None:
    rows = []
    for key in range(1, data.draw(st.integers(1, 3)) + 1):
        op = data.draw(st.sampled_from([Op.INSERT, Op.UPDATE, Op.DELETE]))
        after = data.draw(_images(key)) if op is not Op.DELETE else None
        before = data.draw(_images(key)) if op is not Op.INSERT else None
        rows.append(RowChange(op=op, schema=TABLE.schema, table=TABLE.table, commit_ts=commit_ts, columns=after,
                              pre_columns=before, table_id=TABLE.table_id, table_info=TABLE))
    encoder = Encoder({"encoding-format": "avro"}, clock=lambda: 1_700_000_000_000, auto_bootstrap=False)
    messages = [m.value for m in encoder.encode(rows) if m.value is not None]
    variants = list(messages)  # each twice in a row: the commit-ts memo's hit and miss
    for message in messages:
        variants.append(message)
        for _ in range(3):
            at = data.draw(st.integers(0, len(message) - 1))
            flipped = bytearray(message)
            flipped[at] = data.draw(st.sampled_from([0x00, 0x02, 0x7E, 0x80, 0x81, 0xFF, 0xC3, flipped[at] ^ 1]))
            variants += [bytes(flipped), message[: data.draw(st.integers(0, len(message) - 1))]]
    assert_avro_readers_agree(encoder, TABLE, variants)


def test_plain_messages_stay_on_the_fast_reader() -> None:
    """Long strings, ten-byte uint64s and three-byte ints are read without the reference path."""
    image = Row({"id": 70000, "u": 2**64 - 2, "t": b"x" * 8000, "b": b"\xff" * 100, "dec": "1.5",
                 "ts": "2025-01-01 00:00:00", "f": 1.5, "k": -1048576})
    row = RowChange(op=Op.INSERT, schema=TABLE.schema, table=TABLE.table, commit_ts=449_000_000_000_000_777,
                    columns=image, table_id=TABLE.table_id, table_info=TABLE)
    encoder = Encoder({"encoding-format": "avro"}, clock=lambda: 0, auto_bootstrap=False)
    (message,) = encoder.encode([row])
    decoder = Decoder({"encoding-format": "avro"})
    bootstrap = encoder.bootstrap_message(TABLE).value
    assert bootstrap is not None and message.value is not None
    decoder.decode(bootstrap)
    first = decoder.decode(message.value)
    reader = decoder._last_read
    assert reader is not None  # the one-pass reader took the message
    (again,) = decoder.decode(message.value)
    assert isinstance(again, RowChange)
    assert first == [again] and again.columns == image and decoder._last_read is reader


def test_c_image_reader_takes_the_plain_images(fast_path_form: str) -> None:
    """In the C form every image of a plain message is read by _native.avro_image, none declined."""
    from pyticdc.codec.simple.fastpath_avro import avro_plan

    c_helpers()  # skips in the pure-Python form
    plan = avro_plan(TABLE)
    assert plan is not None
    image = Row({"id": 70000, "u": 2**64 - 2, "t": "é".encode() * 40, "b": b"\xff" * 100, "dec": None,
                 "ts": "2025-01-01 00:00:00", "f": 1.5, "k": -(2**63)})
    with answers_of(plan.read_message, "avro_image") as answers:
        for op in (Op.INSERT, Op.UPDATE, Op.DELETE):
            row = RowChange(op=op, schema=TABLE.schema, table=TABLE.table, commit_ts=449_000_000_000_000_777,
                            columns=None if op is Op.DELETE else image, pre_columns=None if op is Op.INSERT else image,
                            table_id=TABLE.table_id, table_info=TABLE)
            encoder = Encoder({"encoding-format": "avro"}, clock=lambda: 0, auto_bootstrap=False)
            (message,) = encoder.encode([row])
            assert message.value is not None
            event = plan.read_message(message.value, memoryview(b""))
            assert isinstance(event, RowChange) and (event.columns or event.pre_columns) == image
    assert len(answers) == 4 and None not in answers


@settings(max_examples=300)
@given(tail=st.binary(max_size=64), start=st.integers(-2, 70))
def test_c_image_reader_on_arbitrary_bytes(tail: bytes, start: int) -> None:
    """Any bytes at any offset: a row and an offset inside the buffer, or None; never an error or a read past it."""
    helpers = c_helpers()
    plan = ((b"\x02\x04\x04id\x02", b"\x04t\x04"), (b"\x02\x04\x04id\x00", b"\x04t\x00"), b"lt", ("id", "t"))
    buf = b"\x02\x04\x04id\x02\x06\x04t\x04" + tail
    found = helpers.avro_image(buf, start, plan, Row)
    if found is not None:
        row, end = found
        assert set(row) == {"id", "t"} and 0 < end <= len(buf) and row["id"] == 3
