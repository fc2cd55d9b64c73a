"""Craft fast path: the length-chunk lookups ("H" codes, the exact dict and its fallback), the
inline 3- and 10-byte integers and the regex-free row header, each against the reference path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from craft_samples import F, U, col
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import insert, table, update
from pyticdc.codec import craft
from pyticdc.codec.craft import fastpath, fastpath_image
from pyticdc.codec.craft.events import TableCache
from pyticdc.codec.craft.primitives import uvarint_bytes
from pyticdc.errors import DecodeError
from pyticdc.model import Event, Op, Row, RowChange, Value

#: Every test here runs with the fast path's C helpers and with its pure-Python form.
pytestmark = pytest.mark.usefixtures("fast_path_form")


def _typed(events: list[Event]) -> list[Any]:
    """Events plus every row value with its type (1 == 1.0 == True must not pass for equal)."""
    return [(event, [None if image is None else [(k, type(v), v) for k, v in image.items()]
                     for image in (event.columns, event.pre_columns)] if isinstance(event, RowChange) else None)
            for event in events]


def _agrees(rows: list[RowChange], **options: Any) -> None:
    """Every message of ``rows``: the fast path answers (cold, then warm) exactly what the reference says."""
    fastpath._COMPILED.clear()
    decoder = craft.Decoder()
    for message in craft.Encoder(**options).encode(rows):
        assert message.value is not None
        reference = decoder.decode_reference(message.value)
        for _ in range(2):
            fast = decoder._fast.decode(message.value)
            assert fast is not None
            assert _typed(fast) == _typed(reference)


def test_two_byte_length_codes_are_int_keys_apart_from_one_byte_ones() -> None:
    lengths = fastpath_image.coded_lengths()
    short = fastpath_image._short_lengths()
    assert type(short) is dict  # an exact dict: its lookups are specialised
    for lo in range(0x80, 0x100):
        for hi in range(0x80):
            code = (lo & 0x7F) | (hi << 7)
            key = lo | hi << 8
            if hi and not code & 1:
                assert lengths[key] == short[key] == lengths[bytes((lo, hi))] == code >> 1
                assert bytes((lo, hi)) not in short  # length_kinds reads two bytes as "H", never "2s"
            else:  # non-minimal (hi 0) or a negative length: absent, so the reader declines
                assert key not in lengths and key not in short
            assert key >= 0x80  # never a one-byte ("B") key
    assert all(lengths[b] == short[b] for b in range(0x80) if b in lengths)
    assert b"\x80\x80\x01" not in short and lengths[b"\x80\x80\x01"] == 8192  # 3 bytes: only the fallback


def test_h_kinds_read_two_byte_lengths() -> None:
    # "cB" runs become "H" fields; longer runs "{n}s"; one-byte varints "B".
    chunk = bytes([4, 0x80, 0x01, 0x80, 0x80, 0x01, 0x78])
    found = fastpath_image.length_kinds(chunk, 0, len(chunk), fastpath_image.varints_re(4))
    assert found is not None
    unpack, size = found
    assert size == len(chunk)
    codes = unpack(chunk, 0)
    assert codes == (4, 0x80 | 0x01 << 8, b"\x80\x80\x01", 0x78)
    assert [fastpath_image.coded_lengths()[c] for c in codes] == [2, 64, 8192, 60]


def _blob_rows(sizes: Sequence[int | None]) -> list[RowChange]:
    info = table(col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), col("b", 252, int(F.NULLABLE)),
                 col("t", 15, int(F.NULLABLE)), schema="s", name="blobs")
    return [insert(info, {"id": i, "b": None if n is None else b"b" * n, "t": None if n is None else b"t" * (n % 97)},
                   commit_ts=100 + i) for i, n in enumerate(sizes)]


def test_values_of_any_length_kind_in_any_order() -> None:
    # Lengths of one, two and three bytes (8 KiB and more: the fallback dict) alternate, so the
    # previous row's kinds keep failing and being replaced; NULLs in between.
    _agrees(_blob_rows([1, 70, 9000, 70, 3, None, 20000, 8191, 8192, 63, 64, None, 0]), max_batch_size=13)
    _agrees(_blob_rows([9000] * 4 + [10] * 3 + [9000]), max_batch_size=8)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.one_of(st.none(), st.integers(0, 70), st.integers(8100, 8300)), min_size=1, max_size=8))
def test_generated_length_mixes_agree(sizes: list[int | None]) -> None:
    _agrees(_blob_rows(sizes), max_batch_size=8)


_EDGES = [0, 1, 63, 64, 127, 128, 8191, 8192, 2**20, 2**21 - 1, 2**21, 2**28, 2**49, 2**56, 2**62, 2**63 - 1]


@pytest.mark.parametrize("unsigned", [False, True])
def test_integers_of_every_varint_size(unsigned: bool) -> None:
    # 1..10-byte varints: the exact tables, the inline 3- and 10-byte reads, the generated readers.
    values: list[Value] = [v for e in _EDGES for v in (e, -e - 1)] if not unsigned else [
        *(_EDGES), 2**63, 2**64 - 1, 2**64 - 2**57]
    info = table(col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)),
                 col("v", 8, int(F.BINARY | F.NULLABLE) | (U if unsigned else 0)), schema="s", name="ints")
    rows = [insert(info, {"id": i, "v": v}, commit_ts=7 + i) for i, v in enumerate(values)]
    rows.append(update(info, {"id": 0, "v": values[-1]}, {"id": 0, "v": None}, commit_ts=99))
    _agrees(rows, max_batch_size=len(rows))


def test_hostile_three_and_ten_byte_integers_decline_or_agree() -> None:
    # Every byte of a 3- and a 10-byte integer value replaced by a final or continuation byte.
    info = table(col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), col("v", 8, int(F.BINARY) | U),
                 schema="s", name="ints")
    for value in (2**20 + 5, 2**64 - 3):
        [message] = craft.Encoder().encode([insert(info, {"id": 1, "v": value}, commit_ts=3)])
        assert message.value is not None
        wire = uvarint_bytes(value)
        start = message.value.find(wire)
        assert start > 0
        for at in range(len(wire)):
            for byte in (0x00, 0x01, 0x7F, 0x80, 0xFF):
                mutated = bytearray(message.value)
                mutated[start + at] = byte
                decoder = craft.Decoder()
                try:
                    fast = decoder._fast.decode(bytes(mutated))
                except (KeyError, UnicodeDecodeError, DecodeError):
                    fast = None
                if fast is not None:
                    assert _typed(fast) == _typed(decoder.decode_reference(bytes(mutated)))


def test_row_header_needs_exactly_n_commit_ts_varints() -> None:
    fast = fastpath.FastPath(TableCache())
    terms = ("s", "t", "")
    zeros = b"\x00" * 6
    # Two rows; the ts chunk (2 bytes, as many as rows) is one two-byte varint: not two varints.
    assert fast._header(bytes([0x81, 0x01]) + b"\x01\x01" + zeros, 2, terms) is None
    # The same with three ts bytes holding two varints, and with one holding three.
    assert fast._header(bytes([0x81, 0x01, 0x05]) + b"\x01\x01" + zeros, 2, terms) == (
        [129, 134], [("s", "s", 0)] * 2)
    assert fast._header(bytes([0x05, 0x01, 0x02]) + b"\x01\x01" + zeros, 2, terms) is None
    # A ts chunk ending on a continuation byte: the region is not 5n varints.
    assert fast._header(bytes([0x01, 0x81]) + b"\x01\x01" + zeros, 2, terms) is None
    # One-byte deltas, and the ids naming terms.
    assert fast._header(bytes([7, 0]) + b"\x01\x01" + b"\x00\x00" + b"\x00\x00" + b"\x02\x00", 2, terms) == (
        [7, 7], [("s", "t", 0)] * 2)


def test_row_loop_hands_over_at_another_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows of the last message's shape go through the shape's generated row loop, which stops at
    # the handle-key-only DELETE (another group header); the general loop takes the rest.
    stops: list[int] = []
    real = fastpath_image.rows_reader

    def recording(names: Any, decoders: Any) -> Any:
        run = real(names, decoders)

        def spy(*args: Any) -> Any:
            done = run(*args)
            stops.append(-1 if done is None else done[0])
            return done
        return spy
    monkeypatch.setattr(fastpath, "rows_reader", recording)
    fastpath._COMPILED.clear()
    info = table(col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), col("v", 15, int(F.NULLABLE)),
                 schema="s", name="t")
    rows = [insert(info, {"id": 1, "v": b"a"}, commit_ts=5), insert(info, {"id": 2, "v": None}, commit_ts=5),
            update(info, {"id": 2, "v": b"b"}, {"id": 2, "v": None}, commit_ts=6),
            RowChange(op=Op.DELETE, schema="s", table="t", commit_ts=7, pre_columns=Row({"id": 1, "v": b"a"}),
                      table_info=info),
            insert(info, {"id": 3, "v": b"c" * 100}, commit_ts=8)]
    [message] = craft.Encoder(delete_only_output_handle_key_columns=True, max_batch_size=8).encode(rows)
    assert message.value is not None
    decoder = craft.Decoder()
    reference = decoder.decode_reference(message.value)
    for _ in range(3):
        fast = decoder._fast.decode(message.value)
        assert fast is not None and _typed(fast) == _typed(reference)
    assert stops == [3, 3]  # passes 2 and 3: the loop read rows 0-2, the DELETE's shape stopped it
