"""Canal-JSON headers shared across decoders of a process: a fresh decoder reuses the parsed header
(typed decoder, converter) of another, and still decodes exactly what the reference path does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import row_of
from pyticdc.codec import canal_json as cj
from pyticdc.codec.canal_json import fastpath
from pyticdc.model import RowChange
from strategies import row_changes


@settings(max_examples=60, deadline=None)
@given(rows=row_changes(max_rows=5), first_partial=st.booleans(), second_partial=st.booleans(),
       extension=st.booleans())
def test_fresh_decoders_share_headers_and_agree_with_the_reference(
        rows: list[RowChange], first_partial: bool, second_partial: bool, extension: bool) -> None:
    def messages(partial: bool) -> list[bytes]:
        encoder = cj.Encoder({"enable-tidb-extension": extension, "only-output-updated-columns": partial})
        return [m.value for m in encoder.encode(rows) if m.value is not None]

    fastpath._SHARED.clear()
    fastpath._SEMANTIC_KEYS.clear()
    first, second = cj.Decoder(), cj.Decoder()
    for value in messages(first_partial):
        assert first.decode(value) == first.decode_reference(value)
    shared = dict(fastpath._SHARED)
    # The second decoder learns its own "old" images (partial or full) from its own stream.
    for value in messages(second_partial):
        assert second.decode(value) == second.decode_reference(value)
    if first_partial == second_partial:
        assert fastpath._SHARED == shared  # nothing parsed twice


def test_a_fresh_decoder_builds_no_new_header() -> None:
    value = (b'{"id":0,"database":"d","table":"t","pkNames":["a"],"isDdl":false,"type":"INSERT","es":1,'
             b'"ts":2,"sql":"","sqlType":{"a":4,"b":12},"mysqlType":{"a":"int","b":"varchar"},"old":null,'
             b'"data":[{"a":"1","b":"x"}]}')
    [one] = cj.Decoder().decode(value)
    parsed = len(fastpath._SHARED)
    [two] = cj.Decoder().decode(value)
    assert len(fastpath._SHARED) == parsed
    assert isinstance(one, RowChange) and isinstance(two, RowChange)
    assert one == two and one.table_info is two.table_info


def test_a_shared_header_keeps_the_mysql_type_order_of_columns_sql_type_omits() -> None:
    """Columns sqlType does not name follow mysqlType's order, which the process-wide cache must keep."""
    def message(mysql_type: str) -> bytes:
        return (b'{"id":0,"database":"test","table":"order_kept","pkNames":["id"],"isDdl":false,"type":"INSERT",'
                b'"es":1,"ts":1,"sql":"","sqlType":{"id":4},"mysqlType":' + mysql_type.encode()
                + b',"old":null,"data":[{"id":"1","a":"2","b":"3"}]}')

    cj.Decoder().decode(message('{"id":"int","a":"int","b":"int"}'))
    second = message('{"id":"int","b":"int","a":"int"}')
    fast = cj.Decoder().decode(second)
    reference = cj.Decoder().decode_reference(second)
    assert fast == reference
    info = row_of(fast[0]).table_info
    assert info is not None and [c.name for c in info.columns] == ["id", "b", "a"]
