"""Craft decoder (ticdc-reference.md §3): the docs examples, round trips over every type, hostile bytes."""

from __future__ import annotations

import random

import pytest
from craft_samples import (
    DOCS_DDL,
    DOCS_RESOLVED,
    DOCS_ROW,
    UINT64,
    all_types_message,
    col,
    decode_or_decode_error,
    docs_row,
    docs_table,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import insert, table
from pyticdc.codec import craft
from pyticdc.errors import DecodeError
from pyticdc.model import DDLEvent, Event, Op, RowChange, Watermark
from strategies import row_changes

#: Every test here runs with the fast path's C helpers and with its pure-Python form.
pytestmark = pytest.mark.usefixtures("fast_path_form")


# --------------------------------------------------------------------------- docs
def test_docs_examples_decode_to_the_model() -> None:
    [row] = craft.decode(DOCS_ROW)
    assert isinstance(row, RowChange)
    assert (row.op, row.schema, row.table, row.commit_ts) == (Op.UPDATE, "a", "b", 424316552636792833)
    assert row.columns == docs_row(1) and row.pre_columns == docs_row(0)
    assert list(row.columns) == ["varchar", "string", "date", "timestamp", "datetime", "float", "long", "null"]
    assert row.table_info is not None
    assert [(c.name, c.type_code, c.flags) for c in row.table_info.columns] == [
        (c.name, c.type_code, 0) for c in docs_table().columns]
    assert row.physical_table_id == 0 and not row.table_info.is_partition  # partition -1
    assert craft.decode(DOCS_DDL) == [DDLEvent(query="create table a", ddl_type=1, commit_ts=424316583965360129,
                                               schema="a", table="b")]
    assert craft.decode(DOCS_RESOLVED) == [Watermark(resolved_ts=424316594097225729)]


def test_docs_row_explain_matches_reference_walkthrough() -> None:
    wire = craft.explain(DOCS_ROW)
    # §3.4 (a): tables [[13, 60]], [[216]], [[108, 108]]; ten terms in first-use order.
    assert wire["size_tables"] == [[13, 60], [216], [108, 108]]
    assert wire["term_dictionary"] == ["a", "b", "varchar", "string", "date", "timestamp", "datetime", "float",
                                       "long", "null"]
    [event] = wire["events"]
    assert [g["group_type"] for g in event["column_groups"]] == ["new", "old"]
    long_new = event["column_groups"][0]["columns"][6]
    assert (long_new["raw_hex"], long_new["value"]) == ("a01f", 2000)

# --------------------------------------------------------------------------- round trips over every type
@settings(max_examples=120)
@given(rows=row_changes(max_rows=4), batch=st.integers(1, 5), handle_only=st.booleans())
def test_round_trip_every_type(rows: list[RowChange], batch: int, handle_only: bool) -> None:
    encoder = craft.Encoder(max_batch_size=batch, delete_only_output_handle_key_columns=handle_only)
    messages = encoder.encode(rows)
    decoder = craft.Decoder()
    decoded = [e for m in messages for e in decoder.decode(m.value)]
    assert decoded == [encoder.project(r) for r in rows]
    for original, got in zip(rows, decoded):
        assert isinstance(got, RowChange) and got.table_info is not None and original.table_info is not None
        assert (got.op, got.schema, got.table, got.commit_ts) == (original.op, original.schema, original.table,
                                                                  original.commit_ts)
        # Craft's values are lossless in the row model (FLOAT: the float32 widened is the same number).
        assert got.columns == original.columns
        if handle_only and original.op is Op.DELETE:
            assert got.pre_columns == {"id": original.pre_columns["id"]}  # type: ignore[index]
            assert got.handle_key_only
        else:
            assert got.pre_columns == original.pre_columns
        by_name = original.table_info.column_by_name
        for column in got.table_info.columns:
            assert (column.type_code, column.flags) == (by_name[column.name].type_code, by_name[column.name].flags)


@settings(max_examples=40)
@given(ts=UINT64, ddl_type=st.integers(0, 80), query=st.text(max_size=40), schema=st.text(max_size=8),
       table=st.text(max_size=8))
def test_ddl_and_resolved_round_trip(ts: int, ddl_type: int, query: str, schema: str, table: str) -> None:
    try:
        query.encode()
        (schema + table).encode()
    except UnicodeEncodeError:
        return
    events: list[Event] = [DDLEvent(query=query, ddl_type=ddl_type, commit_ts=ts, schema=schema, table=table),
              Watermark(resolved_ts=ts)]
    messages = craft.encode(events)
    assert [e for m in messages for e in craft.decode(m.value)] == events


# --------------------------------------------------------------------------- hostile bytes
REAL_MESSAGES = [DOCS_ROW, DOCS_DDL, DOCS_RESOLVED, all_types_message()]


@pytest.mark.parametrize("value", REAL_MESSAGES, ids=["docs_row", "docs_ddl", "docs_resolved", "all_types"])
def test_truncation_at_every_offset_raises_decode_error(value: bytes) -> None:
    assert craft.decode(value)
    for cut in range(len(value)):
        for broken in (value[:cut], value[cut + 1:]):
            with pytest.raises(DecodeError) as info:
                craft.decode(broken)
            assert info.value.protocol == "craft" and isinstance(info.value.at, int)
            assert 0 <= info.value.at <= len(broken)
            with pytest.raises(DecodeError):
                craft.explain(broken)


@settings(max_examples=300)
@given(st.binary(max_size=120))
def test_random_bytes_raise_only_decode_error(value: bytes) -> None:
    decode_or_decode_error(value)


@settings(max_examples=200)
@given(which=st.integers(0, len(REAL_MESSAGES) - 1), seed=st.integers(0, 2**32))
def test_mutated_messages_raise_only_decode_error(which: int, seed: int) -> None:
    rng = random.Random(seed)
    mutated = bytearray(REAL_MESSAGES[which])
    for _ in range(rng.randint(1, 4)):
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    if rng.random() < 0.3:
        at = rng.randrange(len(mutated))
        mutated[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
    decode_or_decode_error(bytes(mutated))


@pytest.mark.parametrize(("value", "match"), [
    (None, "never empty"),
    (b"", "truncated uvarint"),
    (bytes.fromhex("00021a0f010005"), "version"),
    (bytes.fromhex("01" + "ff" * 11), "longer than 10"),  # a trailer that never ends
    (DOCS_RESOLVED[:-1] + b"\x7f", "exceed"),  # size tables longer than the message
    (DOCS_RESOLVED.replace(bytes.fromhex("0301010102"), bytes.fromhex("0901010102")), "event type"),
    (DOCS_DDL.replace(bytes.fromhex("0201000201"), bytes.fromhex("0201000801")), "term id"),  # table id 1 → 4
    (DOCS_RESOLVED + b"\x00", "size table|sizes"),
])
def test_structural_errors(value: bytes | None, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        craft.decode(value)


def test_unknown_and_duplicate_column_groups_are_rejected() -> None:
    group_new_at = 14  # after the 13-byte header of the docs row, right after the version byte
    assert DOCS_ROW[group_new_at] == 1
    bad_type = bytearray(DOCS_ROW)
    bad_type[group_new_at] = 3
    with pytest.raises(DecodeError, match="group type") as info:
        craft.decode(bytes(bad_type))
    assert info.value.at == group_new_at
    duplicate = bytearray(DOCS_ROW)
    duplicate[group_new_at + 108] = 1  # the old group claims to be new too
    with pytest.raises(DecodeError, match="duplicate"):
        craft.decode(bytes(duplicate))


def test_explain_shows_binary_values_as_hex() -> None:
    info = table(col("b", 252, 1), col("t", 15), schema="s", name="t")
    [message] = craft.encode([insert(info, {"b": b"\xff\x00", "t": b"ok"}, commit_ts=1)])
    [event] = craft.explain(message.value)["events"]
    columns = event["column_groups"][0]["columns"]
    assert [(c["raw_hex"], c["value"]) for c in columns] == [("ff00", {"hex": "ff00"}), ("6f6b", "ok")]
