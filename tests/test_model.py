"""The event model: immutable, picklable, exact for uint64 and TSO."""

from __future__ import annotations

import pickle

import pytest

from pyticdc import (
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    ConfigError,
    DDLEvent,
    DecodeError,
    EncodeError,
    IndexInfo,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    Watermark,
)
from pyticdc.model import physical_ms

TABLE = TableInfo(
    schema="test", table="t", table_id=7, pk_is_handle=True,
    columns=(
        ColumnInfo(name="id", type_code=8, flags=int(ColumnFlag.BINARY | ColumnFlag.HANDLE_KEY
                                                     | ColumnFlag.PRIMARY_KEY | ColumnFlag.UNSIGNED), unsigned=True),
        ColumnInfo(name="v", type_code=15, charset="utf8mb4", flags=int(ColumnFlag.NULLABLE)),
    ),
    indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),),
)
U64_MAX = 2**64 - 1
TSO = 449_000_000_000_000_001


def make_row() -> RowChange:
    return RowChange(op=Op.UPDATE, schema="test", table="t", commit_ts=TSO, columns=Row({"id": U64_MAX, "v": b"x"}),
                     pre_columns=Row({"id": U64_MAX, "v": None}), table_id=7, physical_table_id=7, table_info=TABLE)


def test_events_pickle_round_trip_exactly() -> None:
    ddl = DDLEvent(query="create table t(id int)", ddl_type=3, commit_ts=TSO, schema="test", table="t",
                   table_info=TABLE)
    events = [make_row(), ddl, Watermark(resolved_ts=TSO), Bootstrap(table_info=TABLE),
              KafkaRecord(topic="x", partition=1, offset=5, key=None, value=b"v")]
    for event in events:
        clone = pickle.loads(pickle.dumps(event))
        assert clone == event
    row = pickle.loads(pickle.dumps(events[0]))
    assert isinstance(row, RowChange) and row.columns is not None
    assert row.columns["id"] == U64_MAX and type(row.columns["id"]) is int
    assert row.commit_ts == TSO


def test_events_and_rows_are_immutable() -> None:
    row = make_row()
    with pytest.raises(AttributeError):
        row.commit_ts = 1  # type: ignore[misc]
    assert row.columns is not None
    with pytest.raises(TypeError):
        row.columns["v"] = b"y"
    with pytest.raises(TypeError):
        row.columns.update(v=b"y")
    with pytest.raises(TypeError):
        del row.columns["v"]
    assert row.columns == {"id": U64_MAX, "v": b"x"}


def test_table_info_lookups() -> None:
    assert TABLE.column_index == {"id": 0, "v": 1}
    assert TABLE.handle_key_columns == ("id",)
    assert TABLE.primary_key_columns == ("id",)
    assert TABLE.column("v") is TABLE.columns[1]
    assert TABLE.column("missing") is None
    assert TABLE.columns[0].is_unsigned and not TABLE.columns[1].is_binary


def test_tso_physical_time() -> None:
    # ts >> 18 is the physical millisecond part (reference §0).
    assert physical_ms(424316552636792833) == 1618639193103


def test_errors_carry_their_context_and_pickle() -> None:
    err = DecodeError("craft", "varint too long", 17)
    assert (err.protocol, err.reason, err.at) == ("craft", "varint too long", 17)
    assert "byte 17" in str(err)
    assert "$.data[0]" in str(DecodeError("canal-json", "not a string", "$.data[0]"))
    clone = pickle.loads(pickle.dumps(err))
    assert (clone.protocol, clone.reason, clone.at) == ("craft", "varint too long", 17)
    assert pickle.loads(pickle.dumps(EncodeError("open-protocol", "too large"))).reason == "too large"
    assert issubclass(ConfigError, ValueError)


def test_chunked_keeps_every_item_in_order() -> None:
    from pyticdc.io.chunks import chunked

    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunked([], 3)) == []
    with pytest.raises(ValueError):
        list(chunked([1], 0))
