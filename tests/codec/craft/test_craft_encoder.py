"""Craft encoder (ticdc-reference.md §3.2, §3.3): the docs examples, term ids, size tables, batching, options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from craft_samples import DOCS_DDL, DOCS_RESOLVED, DOCS_ROW, F, col, docs_update

from builders import delete, insert, table, update
from pyticdc.codec import craft
from pyticdc.errors import ConfigError, EncodeError
from pyticdc.model import DDLEvent, Event, Op, Row, RowChange, TableInfo, Value, Watermark
from pyticdc.vectors import check_file


# --------------------------------------------------------------------------- vectors and docs
def test_golden_vectors(vectors_dir: Path) -> None:
    results = check_file(vectors_dir / "craft.json")
    assert results
    assert [f"{r.name}: {r.reason}" for r in results if not r.passed] == []


def test_docs_examples_encode_from_the_model() -> None:
    assert len(DOCS_ROW) == 301  # §3.4 (a) "301 bytes"
    [row] = craft.encode([docs_update()], max_batch_size=64)
    assert row.key is None and row.value == DOCS_ROW
    [ddl] = craft.encode([DDLEvent(query="create table a", ddl_type=1, commit_ts=424316583965360129,
                                   schema="a", table="b")])
    assert ddl.key is None and ddl.value == DOCS_DDL and len(DOCS_DDL) == 41
    [resolved] = craft.encode([Watermark(resolved_ts=424316594097225729)])
    assert resolved.value == DOCS_RESOLVED and len(DOCS_RESOLVED) == 20


# --------------------------------------------------------------------------- encoder
def _table(**kw: Any) -> TableInfo:
    columns = (
        col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), col("name", 15, int(F.NULLABLE)),
        col("price", 246, int(F.BINARY | F.NULLABLE)),
    )
    return table(*columns, schema="shop", name="items", table_id=7, **kw)


def _insert(i: int, info: TableInfo | None = None, **kw: Any) -> RowChange:
    info = info or _table()
    return insert(info, {"id": i, "name": b"n%d" % i, "price": "1.00"}, commit_ts=1000 + i, table_id=info.table_id,
                  physical_table_id=info.table_id, **kw)


def test_term_ids_follow_first_use_schemas_then_tables_then_columns() -> None:
    t1 = table(col("a", 3), col("b", 3), schema="s1", name="t1")
    t2 = table(col("b", 3), col("c", 3), schema="s2", name="t2")
    rows = [insert(t, r, commit_ts=5) for t, r in ((t1, {"a": 1, "b": 2}), (t2, {"b": 3, "c": 4}))]
    [message] = craft.encode(rows)
    wire = craft.explain(message.value)
    # §3.2: all schemas (header order), then all tables, then column names as groups are written.
    assert wire["term_dictionary"] == ["s1", "s2", "t1", "t2", "a", "b", "c"]
    assert len(wire["size_tables"]) == 2 + 2  # meta, bodies, one group table per row
    assert [len(t) for t in wire["size_tables"][2:]] == [1, 1]
    assert message.rows == 2 and message.events == tuple(rows)


def test_size_tables_account_for_every_byte() -> None:
    rows = [_insert(i) for i in range(3)] + [update(
        _table(), {"id": 1, "name": None, "price": "2"}, {"id": 1, "name": b"x", "price": "1"}, commit_ts=2000)]
    [message] = craft.encode(rows)
    value = message.value
    assert value is not None
    wire = craft.explain(value)
    (header, dictionary), bodies, *groups = wire["size_tables"]
    assert [sum(g) for g in groups] == bodies
    assert [len(g) for g in groups] == [1, 1, 1, 2]
    tables_size = value[-1]  # a one-byte reversed uvarint here
    assert 1 + header + sum(bodies) + dictionary + tables_size + 1 == len(value)


def _estimated(row: RowChange) -> int:
    """§3.3 estimatedSize of one row, computed from the reference formula."""
    size = 32 + len(row.schema.encode()) + len(row.table.encode())
    for image in (row.columns, row.pre_columns):
        for name, value in (image or {}).items():
            assert isinstance(value, bytes)  # the batching tests use VARCHAR values only
            size += len(name.encode()) + len(value) + 16
    return size


def test_batches_flush_on_max_batch_size() -> None:
    messages = craft.encode([_insert(i) for i in range(7)], max_batch_size=3)
    assert [m.rows for m in messages] == [3, 3, 1]
    decoded = [e.commit_ts for m in messages for e in craft.decode(m.value)]  # type: ignore[union-attr]
    assert decoded == [1000 + i for i in range(7)]


def test_batches_flush_when_estimated_size_exceeds_max_message_bytes() -> None:
    info = table(col("c", 15), schema="s", name="t")
    rows = [insert(info, {"c": b"0123456789"}, commit_ts=1) for _ in range(7)]
    per_row = _estimated(rows[0])
    assert per_row == 32 + 1 + 1 + 1 + 10 + 16
    # Checked after adding (§3.3): the row that crosses the limit stays in the message.
    limit = 2 * per_row
    messages = craft.encode(rows, max_message_bytes=limit, max_batch_size=100)
    assert [m.rows for m in messages] == [3, 3, 1]
    messages = craft.encode(rows, max_message_bytes=2 * per_row - 1, max_batch_size=100)
    assert [m.rows for m in messages] == [2, 2, 2, 1]
    assert [m.rows for m in craft.encode(rows, max_message_bytes=1)] == [1] * 7


def test_ddl_and_resolved_are_their_own_messages_in_stream_order() -> None:
    ddl = DDLEvent(query="ALTER TABLE items ADD c INT", ddl_type=5, commit_ts=1500, schema="shop", table="items")
    mark = Watermark(resolved_ts=1600)
    events: list[Event] = [_insert(0), _insert(1), ddl, _insert(2), mark]
    messages = craft.encode(events)
    assert [[e.kind for e in m.events] for m in messages] == [["row", "row"], ["ddl"], ["row"], ["watermark"]]
    assert all(m.key is None for m in messages)
    assert [craft.explain(m.value)["events"][0]["type"] for m in messages] == ["row", "ddl", "row", "resolved"]


def test_partition_header_is_the_physical_table_id_of_partitioned_tables() -> None:
    row = insert(_table(is_partition=True), {"id": 1}, commit_ts=9, table_id=7, physical_table_id=4242)
    [message] = craft.encode([row])
    assert craft.explain(message.value)["events"][0]["partition"] == 4242
    [decoded] = craft.decode(message.value)
    assert isinstance(decoded, RowChange)
    assert decoded.physical_table_id == 4242 and decoded.table_info is not None and decoded.table_info.is_partition
    [plain] = craft.encode([_insert(1)])
    assert craft.explain(plain.value)["events"][0]["partition"] == -1


def test_delete_only_output_handle_key_columns() -> None:
    info = _table()
    full = Row({"id": 5, "name": b"gone", "price": "9.99"})
    gone = delete(info, full, commit_ts=3)
    changed = update(info, full, full, commit_ts=4)
    encoder = craft.Encoder({"delete-only-output-handle-key-columns": True})
    [message] = encoder.encode([gone, changed])
    got_delete, got_update = craft.decode(message.value)
    assert isinstance(got_delete, RowChange) and isinstance(got_update, RowChange)
    assert got_delete.op is Op.DELETE and got_delete.pre_columns == {"id": 5} and got_delete.handle_key_only
    assert got_update.pre_columns == full and got_update.columns == full and not got_update.handle_key_only
    assert [encoder.project(gone), encoder.project(changed)] == [got_delete, got_update]
    # Without the option a DELETE keeps every column.
    [plain] = craft.decode(craft.encode([gone])[0].value)
    assert isinstance(plain, RowChange) and plain.pre_columns == full and not plain.handle_key_only


def test_delete_only_handle_key_without_a_handle_is_refused() -> None:
    gone = delete(table(col("a", 3), schema="s", name="t"), {"a": 1}, commit_ts=3)
    with pytest.raises(EncodeError):  # TiCDC panics on the nil column group
        craft.encode([gone], delete_only_output_handle_key_columns=True)


@pytest.mark.parametrize(("columns", "match"), [
    ({"id": 1, "nope": 2}, "not in table_info"), ({"id": "1"}, "expected int"), ({"id": 2**63}, "int64"),
    ({"name": 5}, "expected bytes"), ({}, "no columns"),
])
def test_unencodable_rows_raise_encode_error(columns: dict[str, Value], match: str) -> None:
    with pytest.raises(EncodeError, match=match):
        craft.encode([insert(_table(), columns, commit_ts=1)])


def test_rows_need_table_info_and_empty_rows_are_dropped() -> None:
    with pytest.raises(EncodeError, match="table_info"):
        craft.encode([RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({"a": 1}))])
    nothing = RowChange(op=Op.INSERT, schema="s", table="t", commit_ts=1, table_info=_table())
    assert craft.encode([nothing]) == [] and craft.Encoder().project(nothing) is None


def test_options_are_the_ones_ticdc_allows_for_craft() -> None:
    craft.Encoder({"max-message-bytes": "1024", "max-batch-size": 4, "delete-only-output-handle-key-columns": True})
    for option in ({"enable-tidb-extension": True}, {"large-message-handle-option": "claim-check"},
                   {"only-output-updated-columns": True}, {"max-batch-size": 0}):
        with pytest.raises(ConfigError):
            craft.Encoder(option)
