"""Simple JSON one-pass reader and NULLs: ``lax_json_safe`` finds every spelling of the strings lax
mode misreads ("null" in any case, "-0"), escaped or not, and lets other backslashes through, so a
row with a NULL stays on the one-pass path and still equals the reference path."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import simple
from pyticdc.codec.simple import fastpath_json
from pyticdc.codec.simple.fastpath_json import lax_json_safe, lax_null_safe, lax_zero_safe
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, ColumnInfo, Event, Op, Row, RowChange, TableInfo
from strategies import row_changes


@st.composite
def _spellings(draw: st.DrawFn, text: str) -> bytes:
    """A JSON string literal whose value is ``text`` in some letter case, each character plain or
    as a \\u escape with hex digits in either case."""
    chars = [c.upper() if c.isalpha() and draw(st.booleans()) else c for c in text]
    out = []
    for c in chars:
        if draw(st.booleans()):
            out.append(c)
        else:
            escape = f"\\u{ord(c):04x}"
            out.append(escape.upper().replace("\\U", "\\u") if draw(st.booleans()) else escape)
    return ('"' + "".join(out) + '"').encode()


@settings(max_examples=300)
@given(literal=st.one_of(_spellings("null"), _spellings("-0")), noise=st.sampled_from(
    [b"", b'"a\\"b",', b'"line\\nbreak",', b'"\\u00e9",', b'"\\\\",']))
def test_every_spelling_of_a_misread_string_is_found(literal: bytes, noise: bytes) -> None:
    value = orjson.loads(literal)
    assert value.lower() in ("null", "-0")
    message = b'{"data":{' + noise.replace(b",", b":1,") + b'"c":' + literal + b"}}"
    orjson.loads(message)  # a real JSON document
    assert not lax_json_safe(message)
    # each half finds its own misread string and only that one (the readers call them separately)
    is_null = value.lower() == "null"
    assert lax_null_safe(message) is not is_null
    assert lax_zero_safe(message) is is_null


@settings(max_examples=100)
@given(noise=st.sampled_from([b'"a\\"b"', b'"line\\nbreak"', b'"\\u00e9"', b'"\\\\"', b'"nul"', b'"nulls"',
                              b'"-00"', b'"-0.5"', b'"\\"null\\""']))
def test_other_strings_and_escapes_are_safe(noise: bytes) -> None:
    message = b'{"data":{"a":' + noise + b',"b":null,"c":"-1"}}'
    orjson.loads(message)
    assert lax_json_safe(message)
    assert lax_null_safe(message)
    assert lax_zero_safe(message)


_PIECES = [b'"', b"\\", b"\\u00", b"null", b"NuLl", b"ull", b"ll", b"u", b"n", b"l", b"L", b"c", b"C", b"e", b"E",
           b"0", b"-", b"-0", b"2d", b"2D", b"30", b"4", b"5", b"6", b"7", b":", b",", b"{", b"}", b"2025-01-02", b"x"]


@settings(max_examples=3000)
@given(pieces=st.lists(st.one_of(st.sampled_from(_PIECES), _spellings("null"), _spellings("-0")), max_size=24))
def test_the_scans_answer_as_their_full_patterns(pieces: list[bytes]) -> None:
    # The literal scans before the full patterns only ever let a message through that they would.
    message = b"".join(pieces)
    assert lax_null_safe(message) is (fastpath_json._LAX_NULL.search(message.lower()) is None)
    assert lax_zero_safe(message) is (fastpath_json._LAX_MINUS_ZERO.search(message) is None)


def _with_escapes_and_nulls(rows: list[RowChange]) -> list[RowChange]:
    """Text values gain a quote and a newline (escaped on the wire); every other nullable value is NULL."""
    def image(values: Row | None) -> Row | None:
        if values is None or values.get("id") is None:
            return values
        return Row({name: value + b'"\n' if isinstance(value, bytes) else
                    None if name != "id" and i % 2 else value for i, (name, value) in enumerate(values.items())})
    return [RowChange(op=r.op, schema=r.schema, table=r.table, commit_ts=r.commit_ts, columns=image(r.columns),
                      pre_columns=image(r.pre_columns), table_id=r.table_id, physical_table_id=r.physical_table_id,
                      row_id=r.row_id, table_info=r.table_info) for r in rows]


@settings(max_examples=80, deadline=None)
@given(rows=row_changes(max_rows=5))
def test_rows_with_nulls_and_escapes_agree_with_the_reference(rows: list[RowChange]) -> None:
    info = rows[0].table_info
    assert info is not None
    nullable = {c.name for c in info.columns if c.nullable}
    rows = [r for r in _with_escapes_and_nulls(rows)
            if all(v is not None or k in nullable for image in (r.columns, r.pre_columns) if image
                   for k, v in image.items())]
    messages = simple.Encoder({"encoding-format": "json"}).encode(rows)
    fast, reference = simple.Decoder({"encoding-format": "json"}), simple.Decoder({"encoding-format": "json"})
    for message in messages:
        assert fast.decode(message.value) == reference.decode_reference(message.value)



def _update_table() -> TableInfo:
    flags = int(ColumnFlag.PRIMARY_KEY | ColumnFlag.HANDLE_KEY | ColumnFlag.BINARY)
    return TableInfo(schema="s", table="t", table_id=9, schema_version=3, pk_is_handle=True, columns=(
        ColumnInfo(name="id", type_code=3, flags=flags),
        ColumnInfo(name="k", type_code=3, flags=int(ColumnFlag.NULLABLE | ColumnFlag.BINARY)),
    ))


def _update(data_k: bytes, old_k: bytes) -> bytes:
    """A Simple JSON UPDATE of ``_update_table`` with its two ``k`` values spelled as given."""
    row = RowChange(op=Op.UPDATE, schema="s", table="t", commit_ts=7, table_id=9, physical_table_id=9,
                    table_info=_update_table(), columns=Row({"id": 1, "k": 11}), pre_columns=Row({"id": 1, "k": 22}))
    value = simple.Encoder({"encoding-format": "json"}).encode([row])[-1].value
    assert value is not None and value.count(b'"k":"11"') == 1 and value.count(b'"k":"22"') == 1
    return value.replace(b'"k":"11"', b'"k":' + data_k).replace(b'"k":"22"', b'"k":' + old_k)


def _outcome(decode: Callable[[bytes], list[Event]], message: bytes) -> object:
    try:
        return decode(message)
    except DecodeError as error:
        return repr(error)


@pytest.mark.parametrize(("data_k", "old_k"), [
    (b"null", b'"null"'), (b'"NULL"', b"null"), (b'"5"', b'"nuLL"'), (b'"\\u006eull"', b'"5"'), (b"null", b"null"),
])
def test_an_update_is_checked_once_for_both_images(data_k: bytes, old_k: bytes) -> None:
    # The one-pass reader looks at an UPDATE's bytes once for both images: a "null" string in
    # either one still sends the message to the reference path.
    fast, reference = simple.Decoder({"encoding-format": "json"}), simple.Decoder({"encoding-format": "json"})
    for decoder in (fast, reference):
        decoder.register_table(_update_table())
    warm = _update(b'"1"', b'"2"')
    assert fast.decode(warm) == reference.decode_reference(warm)  # the next message takes the one-pass reader
    assert fast._last_read is not None
    message = _update(data_k, old_k)
    assert _outcome(fast.decode, message) == _outcome(reference.decode_reference, message)
    if data_k == old_k == b"null":
        row = fast.decode(message)[0]
        assert isinstance(row, RowChange) and row.columns == Row({"id": 1, "k": None}) == row.pre_columns
