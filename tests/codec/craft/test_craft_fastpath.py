"""Craft fast path (fastpath.FastPath) against the reference path: every tier, every shape, hostile bytes.

Decoder.decode runs the cached fast path and falls back to the reference path (framing.parse, the
specification in code) whenever the fast path declines. These tests call the fast path directly,
so a fallback cannot hide a fast-path bug, and compare it with the reference.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import msgspec
import pytest
from craft_samples import DOCS_ROW, UINT64, F, U, all_types_message, col, decode_or_decode_error
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import insert, table
from pyticdc.codec import craft
from pyticdc.codec._fastpath import compile_function
from pyticdc.codec.craft import fastpath, fastpath_image
from pyticdc.codec.craft.primitives import uvarint_bytes
from pyticdc.codec.craft.values import exact_uvarint
from pyticdc.errors import DecodeError
from pyticdc.model import Event, Op, Row, RowChange, Value
from strategies import row_changes

#: Every test here runs with the fast path's C helpers and with its pure-Python form.
pytestmark = pytest.mark.usefixtures("fast_path_form")

#: What the fast path raises by design to decline (a strict subset of _fastpath.DECLINES: anything
#: else escaping it, even another DECLINES member, is a fast-path bug these tests should see).
_FAST_PATH_DECLINES = (DecodeError, UnicodeDecodeError, KeyError)


def _typed(events: list[Event]) -> list[Any]:
    """Events plus every row value with its type: 1 == 1.0 == True must not pass for equal."""
    return [(event, [None if image is None else [(k, type(v), v) for k, v in image.items()]
                     for image in (event.columns, event.pre_columns)] if isinstance(event, RowChange) else None)
            for event in events]


def _fast_decodes(value: bytes, decoder: craft.Decoder, passes: int = 3) -> list[list[Event] | None]:
    """The fast path's answers for ``value``, ``passes`` times with one decoder, each checked
    against the reference path. Pass 1 meets the message's shapes and length kinds for the first
    time, later passes find them cached."""
    reference = decoder.decode_reference(value)
    answers: list[list[Event] | None] = []
    for _ in range(passes):
        try:
            fast = decoder._fast.decode(value)
        except _FAST_PATH_DECLINES:
            fast = None
        if fast is not None:
            assert _typed(fast) == _typed(reference)
            assert [e.table_info for e in fast if isinstance(e, RowChange)] == [
                e.table_info for e in reference if isinstance(e, RowChange)]
        answers.append(fast)
    assert _typed(decoder.decode(value)) == _typed(reference)
    return answers


@pytest.fixture
def cold_fast_path() -> None:
    """Forget the process-wide compiled image readers, so each test meets every tier of the fast path."""
    fastpath._COMPILED.clear()


@settings(max_examples=120)
@given(rows=row_changes(max_rows=6), batch=st.integers(1, 6), handle_only=st.booleans())
def test_fast_path_agrees_with_the_reference_path(rows: list[RowChange], batch: int, handle_only: bool) -> None:
    fastpath._COMPILED.clear()
    messages = craft.Encoder(max_batch_size=batch, delete_only_output_handle_key_columns=handle_only).encode(rows)
    decoder = craft.Decoder()
    for message in messages:
        assert message.value is not None
        # Every row message of the model's values is the fast path's own: it never declines one.
        assert None not in _fast_decodes(message.value, decoder)


def _orders(count: int, seed: int = 7, **overrides: Any) -> list[RowChange]:
    """Rows like benchmarks/bench_codecs.py: inserts and updates of an orders table."""
    rng = random.Random(seed)
    info = table(
        col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), col("customer", 15, int(F.NULLABLE)),
        col("amount", 246, int(F.BINARY | F.NULLABLE)), col("quantity", 3, int(F.BINARY | F.NULLABLE) | U),
        col("rating", 4, int(F.BINARY | F.NULLABLE)), col("created_at", 12, int(F.BINARY | F.NULLABLE)),
        col("status", 247, int(F.NULLABLE)), col("note", 252, int(F.NULLABLE)),
        col("big", 8, int(F.BINARY | F.NULLABLE) | U), schema="shop", name="orders")
    rows = []
    for i in range(count):
        image: dict[str, Value] = {
            "id": i * 7919 - 10**6, "customer": f"customer-{rng.randrange(10**6)}".encode(),
            "amount": f"{rng.randrange(10**7) / 100:.2f}", "quantity": rng.randrange(1000),
            "rating": struct.unpack("<f", struct.pack("<f", rng.random() * 5))[0],
            "created_at": f"2025-11-{rng.randrange(1, 29):02d} 10:00:00.000", "status": rng.randrange(1, 4),
            "note": rng.choice([b"", b"gift wrap", "加急".encode()]), "big": rng.randrange(2**64),
        }
        image.update({k: v(i, rng) if callable(v) else v for k, v in overrides.items()})
        op = [Op.INSERT, Op.UPDATE, Op.DELETE][i % 3]
        rows.append(RowChange(op=op, schema="shop", table="orders", commit_ts=10**17 + i,
                              columns=None if op is Op.DELETE else Row(image),
                              pre_columns=None if op is Op.INSERT else Row({**image, "quantity": 0}),
                              table_info=info))
    return rows


def _renamed(rows: list[RowChange], schema: str, name: str) -> list[RowChange]:
    info = rows[0].table_info
    assert info is not None
    renamed = msgspec.structs.replace(info, schema=schema, table=name)
    return [msgspec.structs.replace(r, schema=schema, table=name, table_info=renamed) for r in rows]


def _partitioned(rows: list[RowChange]) -> list[RowChange]:
    info = rows[0].table_info
    assert info is not None
    partitioned = msgspec.structs.replace(info, is_partition=True)
    return [msgspec.structs.replace(r, table_info=partitioned, physical_table_id=100 + i % 3)
            for i, r in enumerate(rows)]


def _wide(count: int) -> list[RowChange]:
    # 150 columns: a two-byte column count; type code 254 is a two-byte uvarint too.
    columns = tuple(col(f"c{i}", 254 if i % 2 else 3, int(F.BINARY)) for i in range(150))
    info = table(*columns, schema="s", name="wide")
    return [insert(info, {c.name: b"x" * (i % 3) if c.type_code == 254 else i for c in columns}, commit_ts=5 + i)
            for i in range(count)]


FAST_CASES: dict[str, tuple[list[RowChange], dict[str, Any]]] = {
    "orders": (_orders(64), {}),
    "nulls": (_orders(64, customer=lambda i, r: None if i % 2 else b"x", rating=lambda i, r: None if i % 3 else 1.5,
                      note=None), {}),
    "long_values": (_orders(32, note=lambda i, r: b"n" * r.randrange(60, 300)), {}),
    "small_and_huge_ints": (_orders(32, id=lambda i, r: r.choice([0, -1, 63, -64, 2**62, -(2**63)]),
                                    big=lambda i, r: r.choice([0, 127, 128, 2**63, 2**64 - 1])), {}),
    "two_tables": (_orders(8) + _renamed(_orders(8, seed=8), "shop", "returns") + _orders(8, seed=9), {}),
    "partitioned": (_partitioned(_orders(24)), {}),
    "big_batch": (_orders(300), {"max_batch_size": 300}),
    "handle_key_deletes": (_orders(24), {"delete_only_output_handle_key_columns": True}),
    "wide": (_wide(8), {}),
}


@pytest.mark.usefixtures("cold_fast_path")
@pytest.mark.parametrize("case", sorted(FAST_CASES))
def test_fast_path_takes_the_common_messages(case: str) -> None:
    rows, options = FAST_CASES[case]
    messages = craft.Encoder(**options).encode(rows)
    decoder = craft.Decoder()
    decoded = []
    for message in messages:
        assert message.value is not None
        answers = _fast_decodes(message.value, decoder)
        assert None not in answers
        decoded += answers[-1] or []
    assert decoded == [craft.Encoder(**options).project(r) for r in rows]


def test_fast_path_compiles_nothing_per_length_combination(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every row a new combination of value lengths and varint sizes (1..10-byte integers, short and
    # long texts, NULLs): one image reader per signature reads them all, and the previous row's
    # length kinds are replaced whenever they stop fitting.
    fastpath._COMPILED.clear()
    compiled: list[str] = []
    real = compile_function

    def counting(source: str, name: str, namespace: dict[str, Any]) -> Any:
        compiled.append(name)
        return real(source, name, namespace)
    monkeypatch.setattr(fastpath_image, "compile_function", counting)
    rows = _orders(96, big=lambda i, r: 1 << (7 * (i % 10)), customer=lambda i, r: b"c" * (i * 13 % 90),
                   note=lambda i, r: None if i % 5 == 0 else b"n" * (i * 7 % 150))
    decoder = craft.Decoder()
    for message in craft.encode(rows):
        assert message.value is not None
        assert None not in _fast_decodes(message.value, decoder)
    assert compiled.count("read") <= 2  # the orders signature's reader (and the delete image's)


def test_fast_path_leaves_invalid_utf8_to_the_reference_path() -> None:
    # A text type (DATETIME) holding invalid UTF-8: go_string's U+FFFD per byte, from either path.
    info = table(col("id", 8, int(F.HANDLE_KEY)), col("at", 12, 1), schema="s", name="t")
    rows = [insert(info, {"id": i, "at": b"2024-\xff\xfe"}, commit_ts=1 + i) for i in range(3)]
    [message] = craft.encode(rows)
    assert message.value is not None
    decoder = craft.Decoder()
    assert _fast_decodes(message.value, decoder) == [None] * 3
    events = decoder.decode(message.value)
    assert [e.columns["at"] for e in events if isinstance(e, RowChange) and e.columns] == ["2024-\ufffd\ufffd"] * 3


@settings(max_examples=400)
@given(raw=st.one_of(st.binary(max_size=12), UINT64.map(uvarint_bytes),
                     st.lists(st.integers(0x80, 0xFF), max_size=9).map(bytes).flatmap(
                         lambda head: st.integers(0, 0x7F).map(lambda last: head + bytes([last])))))
def test_fast_varint_decoders_follow_the_reader(raw: bytes) -> None:
    # The reference: exactly one uvarint by CraftReader's rules (non-minimal encodings included).
    try:
        expected: int | None = exact_uvarint(raw, 0)
    except DecodeError:
        expected = None
    tables = fastpath_image.varint_tables()
    for lookup, zigzag in ((tables.uvarints, False), (tables.zigzags, True)):
        want = None if expected is None else (expected >> 1) ^ -(expected & 1) if zigzag else expected
        try:
            got: int | None = lookup[raw]
        except DecodeError:
            got = None
        assert got == want
        if 3 <= len(raw) <= 10:  # the piecewise readers of the generated code
            try:
                got = fastpath_image.long_varints(zigzag)[len(raw)](raw, 0)
            except (DecodeError, KeyError):
                got = None
            assert got == want


def _row_messages() -> list[bytes]:
    values = [m.value for m in craft.encode(_orders(6, note=lambda i, r: None if i % 2 else b"n" * 70))]
    values += [m.value for m in craft.encode(_orders(4, seed=3) + _renamed(_orders(2), "a", "b"))]
    return [v for v in values if v is not None] + [DOCS_ROW, all_types_message()]


FAST_HOSTILE = _row_messages()


@settings(max_examples=300)
@given(which=st.integers(0, len(FAST_HOSTILE) - 1), seed=st.integers(0, 2**32), cut=st.booleans())
def test_fast_path_on_hostile_bytes(which: int, seed: int, cut: bool) -> None:
    # Mutations and truncations: the fast path declines (None or a designed exception) or agrees
    # with the reference path, which must then accept the bytes too. Nothing else may escape it.
    rng = random.Random(seed)
    mutated = bytearray(FAST_HOSTILE[which])
    if cut:
        at = rng.randrange(len(mutated))
        del mutated[at:at + rng.randint(1, 3)]
    for _ in range(rng.randint(1, 3)):
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    value = bytes(mutated)
    decoder = craft.Decoder()
    for _ in range(2):  # also with this layout cached
        try:
            fast = decoder._fast.decode(value)
        except _FAST_PATH_DECLINES:
            fast = None
        if fast is not None:
            assert _typed(fast) == _typed(decoder.decode_reference(value))
    decode_or_decode_error(value)
