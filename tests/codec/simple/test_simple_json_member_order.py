"""Simple JSON and the order of row members: fast paths equal the reference paths.

The generated row writer takes the values of a Row whose keys are a wide table's columns in table
order in one go (other key orders, dicts and other mappings by a lookup per column); the readers'
msgspec structs list their fields in the wire's order (keys sorted by UTF-8 bytes, the envelope in
Go's field order). Both are checked against the reference paths on rows in and out of table order,
plain dicts, missing and extra columns, awkward values (NULL, -0, unicode, big integers, floats),
and on messages whose members come in another order or twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fast_paths import ReferenceEncoder, encoded
from pyticdc.codec import simple
from pyticdc.codec.simple import fastpath_json, writer_json
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, ColumnInfo, Event, Op, Row, RowChange, TableInfo
from strategies import awkward_image, row_images, tables, tsos

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

_AWKWARD = st.sampled_from([
    None, -0.0, 0.0, 1.5, 0.1, 1e-7, 1e22, 3.4e38, 1e39, float("nan"), float("inf"), 16777216.0, 2**63 - 1,
    2**64 - 1, 2**64, -(2**63), -(2**63) - 1, -1, 0, True, b"", b"\xff\xfe", "\u2028".encode(), "订单 <é&>".encode(),
    "\U0001f600", "\udc80", "x1", "-0", "null", bytearray(b"ab"),
])


def _pair() -> tuple[simple.Encoder, simple.Encoder]:
    return (simple.Encoder(clock=lambda: 1_700_000_000_123, auto_bootstrap=False),
            ReferenceEncoder(clock=lambda: 1_700_000_000_123, auto_bootstrap=False))


class _Mapping(Mapping[str, Any]):
    """A mapping that is no dict: the writer looks its columns up one by one."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _reshaped(image: Row | None, how: int, rng: random.Random) -> Any:
    """``image`` as is (0), with its keys shuffled (1) or two swapped (2), as a dict (3) or another mapping (4)."""
    if image is None:
        return None
    items = list(image.items())
    if how == 1:
        rng.shuffle(items)
    elif how == 2 and len(items) > 1:
        items[0], items[-1] = items[-1], items[0]
    if how == 3:
        return dict(items)
    if how == 4:
        return _Mapping(dict(items))
    return Row(items)


_wide_tables = tables(max_columns=24).filter(lambda drawn: len(drawn[0].columns) >= writer_json._KEY_CHECK_MIN)


@st.composite
def _wide_rows(draw: st.DrawFn) -> list[RowChange]:
    """Row changes of a table of a dozen columns or more; UPDATEs share most values between their images."""
    table, values = draw(_wide_tables)
    commit_ts = draw(tsos)
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(list(Op)))
        pre = draw(row_images(values)) if op is not Op.INSERT else None
        post = draw(row_images(values)) if op is not Op.DELETE else None
        if pre is not None and post is not None:
            changed = set(draw(st.lists(st.sampled_from(list(pre)), max_size=3)))
            post = Row({name: post[name] if name in changed and name != "id" else value for name, value in pre.items()})
        rows.append(RowChange(op=op, schema=table.schema, table=table.table, commit_ts=commit_ts, columns=post,
                              pre_columns=pre, table_id=table.table_id, physical_table_id=table.table_id,
                              table_info=table))
        commit_ts += draw(st.integers(0, 1 << 20))
    return rows


@settings(max_examples=150, deadline=None)
@given(rows=_wide_rows(), data=st.data())
def test_wide_rows_in_any_shape_equal_reference(rows: list[RowChange], data: st.DataObject) -> None:
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    events: list[Event] = []
    for row in rows:
        shapes = [data.draw(st.integers(0, 5)) for _ in range(2)]
        images = [awkward_image(image, data, _AWKWARD) if how == 5 else _reshaped(image, how, rng)
                  for image, how in zip((row.columns, row.pre_columns), shapes)]
        events.append(RowChange(op=row.op, schema=row.schema, table=row.table, commit_ts=row.commit_ts,
                                columns=images[0], pre_columns=images[1], table_id=row.table_id,
                                physical_table_id=row.physical_table_id, table_info=row.table_info))
    fast, reference = _pair()
    assert encoded(fast, events) == encoded(reference, events)
    for event in events:
        assert encoded(fast, [event]) == encoded(reference, [event])


def _wide_table() -> TableInfo:
    binary = int(ColumnFlag.BINARY | ColumnFlag.NULLABLE)
    columns = [ColumnInfo(name="id", type_code=8, flags=int(ColumnFlag.BINARY | ColumnFlag.PRIMARY_KEY
                                                            | ColumnFlag.HANDLE_KEY))]
    columns += [ColumnInfo(name=f"i{n}", type_code=3, flags=binary, nullable=True) for n in range(4)]
    columns += [ColumnInfo(name=f"u{n}", type_code=8, flags=binary | int(ColumnFlag.UNSIGNED), nullable=True)
                for n in range(2)]
    columns += [ColumnInfo(name="f", type_code=4, flags=binary, nullable=True),
                ColumnInfo(name="d", type_code=5, flags=binary, nullable=True),
                ColumnInfo(name="b", type_code=252, flags=binary, nullable=True)]
    columns += [ColumnInfo(name=name, type_code=15, flags=int(ColumnFlag.NULLABLE), charset="utf8mb4",
                           collation="utf8mb4_bin", nullable=True) for name in ("z", "é", "a b", "订单")]
    return TableInfo(schema="s", table="t", table_id=7, schema_version=5, pk_is_handle=True, columns=tuple(columns))


def _wide_row(op: Op, values: list[Any], pre: list[Any] | None = None) -> RowChange:
    table = _wide_table()
    names = [c.name for c in table.columns]
    image = Row(zip(names, values))
    return RowChange(op=op, schema="s", table="t", commit_ts=1 << 40, table_id=7, physical_table_id=7,
                     columns=image if op is not Op.DELETE else None,
                     pre_columns=(Row(zip(names, pre or values)) if op is not Op.INSERT else None), table_info=table)


_VALUES = [1, -1, None, 2**31 - 1, 0, 2**64 - 1, 0, 1.5, -0.0, b"\x00\xff", "订单 <b>".encode(), b"", None,
           "é".encode()]


@pytest.mark.parametrize("op", list(Op))
def test_a_row_in_table_order_takes_the_writer(op: Op) -> None:
    row = _wide_row(op, _VALUES, [2, *_VALUES[1:-1], b"old"])
    assert len(_VALUES) >= writer_json._KEY_CHECK_MIN
    fast, reference = _pair()
    assert fast._fast_json_message(row) is not None
    assert encoded(fast, [row]) == encoded(reference, [row])
    # the same images in another key order, as plain dicts: the lookup per column, the same bytes
    rng = random.Random(3)
    for how in (1, 2, 3, 4):
        reshaped = RowChange(op=row.op, schema="s", table="t", commit_ts=row.commit_ts, table_id=7,
                             physical_table_id=7, columns=_reshaped(row.columns, how, rng),
                             pre_columns=_reshaped(row.pre_columns, how, rng), table_info=row.table_info)
        assert fast._fast_json_message(reshaped) is not None
        assert encoded(fast, [reshaped]) == encoded(reference, [row])


@pytest.mark.parametrize("change", ["drop", "extra", "rename"])
def test_a_row_without_the_table_columns_equals_reference(change: str) -> None:
    row = _wide_row(Op.INSERT, _VALUES)
    assert row.columns is not None
    values = dict(row.columns)
    if change == "drop":
        values.pop("f")
    elif change == "extra":
        values["zz"] = 1
    else:
        values["x"] = values.pop("z")
    event = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=row.commit_ts, table_id=7, physical_table_id=7,
                      columns=Row(values), table_info=row.table_info)
    fast, reference = _pair()
    assert encoded(fast, [event]) == encoded(reference, [event])


# --------------------------------------------------------------------------- decoding
_GO_ORDER = ["version", "database", "table", "tableID", "type", "commitTs", "buildTs", "schemaVersion",
             "claimCheckLocation", "handleKeyOnly", "checksum", "data", "old"]


def test_reader_structs_list_fields_in_wire_order() -> None:
    # msgspec finds a key at the first try when the fields come in the order the keys do.
    columns = list(_wide_table().columns)
    for lax in (True, False):
        fields = fastpath_json._image_code(columns, lax, "row")[0]
        names = [field[2].name for field in fields]
        assert names == sorted(names, key=lambda name: name.encode("utf-8"))
        assert sorted(names) == sorted(c.name for c in columns)
    assert list(fastpath_json.JsonDml.__struct_fields__) == _GO_ORDER


def _outcome(decode: Callable[[bytes], list[Event]], message: bytes) -> object:
    try:
        return decode(message)
    except DecodeError as error:
        return repr(error)


def _shuffled(message: bytes, rng: random.Random) -> bytes:
    """The same JSON document with the members of the envelope and of the images in another order."""
    def shuffle(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        items = [(k, shuffle(v) if k in ("data", "old") else v) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    return orjson.dumps(shuffle(orjson.loads(message)))


@settings(max_examples=100, deadline=None)
@given(rows=_wide_rows(), seed=st.integers(0, 2**32))
def test_wide_messages_in_any_member_order_decode_as_the_reference(rows: list[RowChange], seed: int) -> None:
    messages = [m.value for m in simple.Encoder({"encoding-format": "json"}).encode(rows)]
    rng = random.Random(seed)
    fast, reference = simple.Decoder({"encoding-format": "json"}), simple.Decoder({"encoding-format": "json"})
    for value in messages:
        assert value is not None
        assert _outcome(fast.decode, value) == _outcome(reference.decode_reference, value)
    for value in messages:
        assert value is not None
        shuffled = _shuffled(value, rng)
        assert _outcome(fast.decode, shuffled) == _outcome(reference.decode_reference, shuffled)


def _wide_message(op: Op) -> bytes:
    value = simple.Encoder({"encoding-format": "json"}, auto_bootstrap=False).encode(
        [_wide_row(op, _VALUES, [2, *_VALUES[1:-1], b"old"])])[-1].value
    assert value is not None
    return value


@pytest.mark.parametrize("op", list(Op))
@pytest.mark.parametrize(("member", "twice"), [
    (b'"i0":"-1"', b'"i0":"-1","i0":"5"'), (b'"i0":"-1"', b'"i0":"-1","i0":null'),
    (b'"i1":null', b'"i1":null,"i1":"null"'), (b'"i1":null', b'"i1":"NULL","i1":null'),
    (b'"d":"-0"', b'"d":"1","d":"-0"'), (b'"a b":null', b'"a b":"x","a b":null'), (b'"id":"', b'"id":"9","id":"'),
])
def test_members_written_twice_decode_as_the_reference(op: Op, member: bytes, twice: bytes) -> None:
    table = _wide_table()
    fast, reference = simple.Decoder({"encoding-format": "json"}), simple.Decoder({"encoding-format": "json"})
    for decoder in (fast, reference):
        decoder.register_table(table)
    warm = _wide_message(op)
    assert fast.decode(warm) == reference.decode_reference(warm)  # the next message takes the one-pass reader
    assert fast._last_read is not None
    message = warm.replace(member, twice)
    assert message != warm
    assert _outcome(fast.decode, message) == _outcome(reference.decode_reference, message)
