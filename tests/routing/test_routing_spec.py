"""Routing checked rule by rule against ticdc-reference.md §1.3, §1.4, §1.6, §7, §8.

Every expected value is computed here from the rule text (CRC32 with ``zlib.crc32``, 249-byte
truncation, …), never copied from pyticdc's own output. Each test cites the spec line it checks.
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import cramjam
import lz4.frame
import pytest

from pyticdc.codec.compression import compress, decompress
from pyticdc.errors import ConfigError
from pyticdc.model import (
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    IndexInfo,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Watermark,
)
from pyticdc.routing.claimcheck import FileClaimCheckStore
from pyticdc.routing.dispatch import (
    EventRouter,
    PositionInertia,
    column_value_string,
    make_partition_dispatcher,
)
from pyticdc.routing.producer import Router
from pyticdc.routing.split import split_updates
from pyticdc.routing.topic import make_topic_dispatcher, substitute_topic

F = ColumnFlag


def crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _table(schema: str = "test", table: str = "t1", *, cols: tuple[tuple[str, int, int], ...] = (),
           indexes: tuple[IndexInfo, ...] = (), pk_is_handle: bool = False) -> TableInfo:
    return TableInfo(schema=schema, table=table, table_id=42, pk_is_handle=pk_is_handle, indexes=indexes,
                     columns=tuple(ColumnInfo(name=n, type_code=t, flags=f) for n, t, f in cols))


def _row(table: TableInfo, post: dict[str, object] | None, pre: dict[str, object] | None = None,
         op: Op = Op.INSERT, commit_ts: int = 7) -> RowChange:
    return RowChange(op=op, schema=table.schema, table=table.table, commit_ts=commit_ts,
                     columns=Row(post) if post is not None else None, pre_columns=Row(pre) if pre is not None else None,
                     table_id=table.table_id, physical_table_id=table.table_id, table_info=table)


# ----------------------------------------------------------------------------- §1.6 hash
def test_hash_is_xor_of_fresh_crc32_over_concatenation() -> None:
    # §1.6 "each Write(a, b, …) does h ^= crc32.IEEE(a‖b‖…) (fresh CRC over the concatenated byte strings;
    # no separator); Sum32() = h"
    h = PositionInertia()
    h.write("ab", "c")
    h.write("x")
    assert h.sum32() == crc(b"abc") ^ crc(b"x")
    g = PositionInertia()
    g.write("x")
    g.write("a", "bc")
    assert g.sum32() == h.sum32()  # "Hence column order never matters"


# ----------------------------------------------------------------------------- §1.6 dispatchers
T2 = _table(cols=(("a", TypeCode.LONG, F.HANDLE_KEY | F.PRIMARY_KEY), ("b", TypeCode.LONG, 0),
                  ("f", TypeCode.FLOAT, 0), ("d", TypeCode.DOUBLE, 0), ("s", TypeCode.VARCHAR, 0)),
            indexes=(IndexInfo(name="idx_bf", columns=("b", "f"), unique=True),
                     IndexInfo(name="PRIMARY", columns=("a",), primary=True, unique=True)))


@pytest.mark.parametrize("rule", ["table", "default", ""])
def test_table_and_default_rules(rule: str) -> None:
    # §1.6 "`default` | same as `table`"; "`table` | Write(schema, table) | h % n | "schema.table""
    h = crc(b"test" + b"t1")
    assert make_partition_dispatcher(rule).dispatch(_row(T2, {"a": 1}), 7) == (h % 7, "test.t1")


def test_index_value_without_index_name_hashes_handle_key_columns() -> None:
    # §1.6 "index-value (alias rowid), no index-name | Write(schema, table), then for each column ... flagged
    # HandleKey ...: Write(colName, ColumnValueString(value)) | h % n | decimal h"
    row = _row(T2, {"a": 11, "b": 22, "f": 1.5, "d": 2.0, "s": b"x"})
    h = crc(b"testt1") ^ crc(b"a11")
    for rule in ("index-value", "rowid", "INDEX-VALUE"):
        assert make_partition_dispatcher(rule).dispatch(row, 16) == (h % 16, str(h))


def test_index_value_uses_pre_image_for_delete() -> None:
    # §1.6 "(post-image, or pre-image for DELETE)"
    row = _row(T2, None, {"a": 5, "b": 1}, op=Op.DELETE)
    h = crc(b"testt1") ^ crc(b"a5")
    assert make_partition_dispatcher("index-value").dispatch(row, 10) == (h % 10, str(h))


def test_index_value_null_handle_value_hashes_null() -> None:
    # §1.6 "ColumnValueString: nil→"null""
    table = _table(cols=(("u", TypeCode.LONG, F.HANDLE_KEY | F.UNIQUE_KEY),))
    h = crc(b"testt1") ^ crc(b"unull")
    assert make_partition_dispatcher("index-value").dispatch(_row(table, {"u": None}), 5) == (h % 5, str(h))


def test_index_value_with_index_name_case_insensitive() -> None:
    # §1.6 "index-value with index = "name" | index looked up case-insensitively; for each index column:
    # Write(indexColumnName, ColumnValueString(v))" — float32 via FormatFloat(v,'f',-1,32)
    row = _row(T2, {"a": 1, "b": 22, "f": 0.10000000149011612, "d": 2.0, "s": b"x"})
    h = crc(b"testt1") ^ crc(b"b22") ^ crc(b"f0.1")
    assert make_partition_dispatcher("index-value", index_name="IDX_BF").dispatch(row, 9) == (h % 9, str(h))


def test_index_value_unknown_index_is_an_error() -> None:
    # §1.6 "unknown index → error"
    with pytest.raises(ConfigError):
        make_partition_dispatcher("index-value", index_name="nope").dispatch(_row(T2, {"a": 1}), 3)


def test_columns_rule_hashes_table_spelling() -> None:
    # §1.6 "`columns` | names resolved case-insensitively, but the **table's** column name (Name.O) is hashed"
    table = _table(cols=(("Col1", TypeCode.LONG, 0), ("col2", TypeCode.DOUBLE, 0)))
    row = _row(table, {"Col1": 3, "col2": 0.5})
    h = crc(b"testt1") ^ crc(b"Col13") ^ crc(b"col20.5")
    partition, _ = make_partition_dispatcher("columns", columns=("COL1", "COL2")).dispatch(row, 11)
    assert partition == h % 11


def test_ts_rule() -> None:
    # §1.6 "`ts` | none | commitTs % n | decimal commitTs"
    ts = 450_000_000_000_000_123
    assert make_partition_dispatcher("ts").dispatch(_row(T2, {"a": 1}, commit_ts=ts), 6) == (ts % 6, str(ts))


def test_unknown_rule_falls_back_to_default() -> None:
    # §1.6 "anything else | Kafka: falls back to default"
    with pytest.warns(UserWarning):
        dispatcher = make_partition_dispatcher("bogus")
    assert dispatcher.dispatch(_row(T2, {"a": 1}), 4)[0] == crc(b"testt1") % 4


@pytest.mark.parametrize(("value", "type_code", "expected"), [
    (None, None, "null"),
    (-42, TypeCode.LONGLONG, "-42"),
    (18446744073709551615, TypeCode.LONGLONG, "18446744073709551615"),
    (0.10000000149011612, TypeCode.FLOAT, "0.1"),  # float32 'f', -1, 32
    (16777216.0, TypeCode.FLOAT, "16777216"),
    (1e20, TypeCode.FLOAT, "100000000000000000000"),
    (0.1, TypeCode.DOUBLE, "0.1"),
    (1e21, TypeCode.DOUBLE, "1000000000000000000000"),  # 'f': never an exponent
    (1e-7, TypeCode.DOUBLE, "0.0000001"),
    (b"ab\x00c", TypeCode.VARCHAR, "ab\x00c"),  # []byte verbatim
    ("12.50", TypeCode.NEWDECIMAL, "12.50"),
    (True, None, "1"),
    (False, None, "0"),
])
def test_column_value_string(value: object, type_code: int | None, expected: str) -> None:
    # §1.6 "ColumnValueString: nil→"null", ints decimal, float32 FormatFloat(v,'f',-1,32), float64 'f',-1,64,
    # string/[]byte verbatim, bool "1"/"0""
    assert column_value_string(value, type_code) == expected  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- §1.6 rule matching
def test_rules_first_match_wins_and_implicit_default() -> None:
    # §1.6 "evaluated in order, with an implicit last rule {matcher:["*.*"], partition:"default", topic:""};
    # first table-filter match wins (case-insensitive unless case-sensitive)"
    router = EventRouter("dflt", [
        {"matcher": ["test.t*"], "partition": "ts", "topic": "hot"},
        {"matcher": ["test.*"], "partition": "table", "topic": "{schema}_x"},
    ])
    assert router.topic_for_table("TEST", "T1") == "hot"
    assert router.topic_for_table("test", "other") == "test_x"
    assert router.topic_for_table("db", "t") == "dflt"
    row = _row(_table("db", "t"), {"a": 1}, commit_ts=13)
    assert router.partition_for_row(row, 5)[0] == crc(b"dbt") % 5
    sensitive = EventRouter("dflt", [{"matcher": ["test.t*"], "topic": "hot", "case_sensitive": True}])
    assert sensitive.topic_for_table("TEST", "t1") == "dflt"


def test_table_filter_syntax() -> None:
    # §1.6 "table-filter match": wildcards, character classes, negation
    router = EventRouter("d", [
        {"matcher": ["db.*", "!db.secret"], "topic": "a"},  # TiDB table-filter: the last matching pattern decides
        {"matcher": ["x?.[ab]c"], "topic": "b"},
    ])
    assert router.topic_for_table("db", "t") == "a"
    assert router.topic_for_table("db", "secret") == "d"
    assert router.topic_for_table("x1", "bc") == "b"
    assert router.topic_for_table("x12", "bc") == "d"


# ----------------------------------------------------------------------------- §1.6 topic expressions
def test_topic_expression_sanitises_schema_and_table() -> None:
    # §1.6 "{schema}/{table} substituted after replacing every char outside [A-Za-z0-9._-] with _"
    assert substitute_topic("p_{schema}.{table}-s", "my db", "t$é") == "p_my_db.t__-s"


def test_topic_expression_truncated_to_249_bytes() -> None:
    # §1.6 "truncated to 249 bytes"
    topic = substitute_topic("{schema}_{table}", "s" * 200, "t" * 100)
    assert topic == ("s" * 200 + "_" + "t" * 100)[:249]
    assert len(topic) == 249


def test_topic_expression_dot_names() -> None:
    # §1.6 '"."→"_", ".."→"__"'
    assert substitute_topic("{schema}", ".", "t") == "_"
    assert substitute_topic("{schema}{table}", ".", ".") == "__"
    assert substitute_topic("{table}", "s", "...") == "..."


def test_static_topic() -> None:
    # §1.6 "A rule without {…} that matches ^[A-Za-z0-9._-]+$ is a static topic"
    dispatcher = make_topic_dispatcher("fixed.topic-1", "dflt")
    assert dispatcher.substitute("a", "b") == "fixed.topic-1"
    assert make_topic_dispatcher("", "dflt").substitute("a", "b") == "dflt"
    with pytest.raises(ConfigError):
        make_topic_dispatcher("bad topic", "dflt")


# ----------------------------------------------------------------------------- §1.3 update split
SPLIT = _table(cols=(("id", TypeCode.LONG, F.HANDLE_KEY | F.PRIMARY_KEY), ("u", TypeCode.LONG, F.UNIQUE_KEY),
                     ("v", TypeCode.LONG, 0)))


def test_update_changing_handle_or_unique_key_is_split_and_sorted() -> None:
    # §1.3 "an UPDATE that changes the value ... of any column flagged HandleKey or UniqueKey is split into
    # DELETE(pre-image) + INSERT(post-image); if any split happened the txn rows are re-sorted ... by kind
    # delete < update < insert"
    insert = _row(SPLIT, {"id": 9, "u": 9, "v": 9})
    keep = _row(SPLIT, {"id": 1, "u": 1, "v": 2}, {"id": 1, "u": 1, "v": 1}, op=Op.UPDATE)
    moved = _row(SPLIT, {"id": 3, "u": 2, "v": 2}, {"id": 2, "u": 2, "v": 2}, op=Op.UPDATE)
    uniq = _row(SPLIT, {"id": 4, "u": 5, "v": 0}, {"id": 4, "u": 4, "v": 0}, op=Op.UPDATE)
    out = split_updates([insert, keep, moved, uniq])
    kinds = [(r.op, dict(r.columns or {}), dict(r.pre_columns or {})) for r in out]
    assert [k[0] for k in kinds] == [Op.DELETE, Op.DELETE, Op.UPDATE, Op.INSERT, Op.INSERT, Op.INSERT]
    assert kinds[0][2] == {"id": 2, "u": 2, "v": 2} and kinds[0][1] == {}
    assert kinds[1][2] == {"id": 4, "u": 4, "v": 0}


def test_update_without_key_change_is_not_split_nor_reordered() -> None:
    # §1.3 "if any split happened the txn rows are re-sorted" — otherwise order is kept
    insert = _row(SPLIT, {"id": 9, "u": 9, "v": 9})
    keep = _row(SPLIT, {"id": 1, "u": 1, "v": 2}, {"id": 1, "u": 1, "v": 1}, op=Op.UPDATE)
    assert [r.op for r in split_updates([insert, keep])] == [Op.INSERT, Op.UPDATE]


def test_rows_without_images_are_dropped() -> None:
    # §1.3 "Rows with neither image are dropped."
    empty = RowChange(op=Op.UPDATE, schema="test", table="t1", commit_ts=1, table_info=SPLIT)
    assert split_updates([empty]) == []


# ----------------------------------------------------------------------------- §1.4 broadcast
def test_ddl_broadcast_all_partitions_except_canal() -> None:
    # §1.4 "Canal-JSON (and canal protobuf) → partition 0 only; every other protocol → broadcast to all
    # partitions of the DDL's topic (topic of PreTableInfo if present, default topic when the table name
    # is empty)"; §7 Simple "JSON/Avro, all partitions"
    rules = [{"matcher": ["db.*"], "topic": "{schema}_{table}"}]
    old = TableInfo(schema="db", table="old", table_id=1)
    new = TableInfo(schema="db", table="new", table_id=1)
    rename = DDLEvent(query="rename table db.old to db.new", ddl_type=14, commit_ts=10, schema="db", table="new",
                      table_info=new, pre_table_info=old)
    router = Router("simple", {"encoding-format": "json"}, default_topic="dflt", rules=rules, partitions=4,
                    clock=lambda: 1)
    records = router.route([rename])
    assert [(r.topic, r.partition) for r in records] == [("db_old", p) for p in range(4)]
    drop_db = DDLEvent(query="drop database db", ddl_type=2, commit_ts=11, schema="db")
    assert {(r.topic, r.partition) for r in router.route([drop_db])} == {("dflt", p) for p in range(4)}
    canal = Router("canal-json", {}, default_topic="dflt", rules=rules, partitions=4, clock=lambda: 1)
    assert [(r.topic, r.partition) for r in canal.route([rename])] == [("db_old", 0)]


def test_watermark_broadcast_to_every_active_topic_and_default() -> None:
    # §1.4 "Checkpoint/resolved: broadcast to every partition of every active topic (plus the default
    # topic); if no tables, to the default topic"; §7 Simple "WATERMARK, all partitions"; key nil (§1.4)
    router = Router("simple", {"send-bootstrap-interval-in-sec": 0}, default_topic="dflt",
                    rules=[{"matcher": ["db.*"], "topic": "t_{table}"}], partitions={"t_a": 2, "dflt": 3},
                    clock=lambda: 1)
    first = router.route([Watermark(resolved_ts=5)])
    assert [(r.topic, r.partition) for r in first] == [("dflt", p) for p in range(3)]
    table = _table("db", "a", cols=(("id", TypeCode.LONG, F.HANDLE_KEY),))
    records = router.route([_row(table, {"id": 1}), Watermark(resolved_ts=9)])
    marks = [r for r in records if b"WATERMARK" in (r.value or b"")]
    assert {(r.topic, r.partition) for r in marks} == {("t_a", 0), ("t_a", 1), ("dflt", 0), ("dflt", 1), ("dflt", 2)}
    assert all(r.key is None for r in records)


def test_canal_and_debezium_send_no_checkpoint_without_extension() -> None:
    # §1.4 "Canal-JSON and Debezium emit nothing unless enable-tidb-extension=true"
    for protocol in ("canal-json", "debezium"):
        assert Router(protocol, {}, default_topic="d", partitions=2).route([Watermark(resolved_ts=5)]) == []


# ----------------------------------------------------------------------------- §1.4 Message.Length / size
def test_message_length_boundary_is_value_plus_36() -> None:
    # §1.4 "Message.Length() = len(key)+len(value)+MaxRecordOverhead, MaxRecordOverhead = 36"; §8 trigger
    # "the normally encoded message exceeds max-message-bytes (... others: Message.Length())"
    from pyticdc.codec.simple import Encoder

    table = _table(cols=(("id", TypeCode.LONG, F.HANDLE_KEY | F.PRIMARY_KEY | F.BINARY),))
    row = _row(table, {"id": 1})
    size = len(Encoder({}, clock=lambda: 1, auto_bootstrap=False).encode([row])[0].value or b"")
    ok = Encoder({"max-message-bytes": size + 36}, clock=lambda: 1, auto_bootstrap=False)
    assert ok.encode([row])[0].value is not None
    too_small = Encoder({"max-message-bytes": size + 35}, clock=lambda: 1, auto_bootstrap=False)
    with pytest.raises(Exception, match="max-message-bytes"):
        too_small.encode([row])


# ----------------------------------------------------------------------------- §1.4 compression
def test_snappy_is_block_format_and_lz4_is_frame_format() -> None:
    # §1.4 "snappy = *block* format (klauspost snappy.Encode), lz4 = *frame* format (pierrec/lz4 v4 writer)"
    data = b"hello hello hello hello hello" * 10
    snappy = compress("snappy", data)
    # block format: starts with the uvarint of the uncompressed length, no stream identifier chunk
    assert snappy[:2] == bytes([len(data) & 0x7F | 0x80, len(data) >> 7])
    assert not snappy.startswith(b"\xff\x06\x00\x00sNaPpY")
    assert bytes(cramjam.snappy.decompress_raw(snappy)) == data
    framed = compress("lz4", data)
    assert framed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic 0x184D2204 little-endian
    # pierrec/lz4 v4 NewWriter defaults: version 1 + independent blocks + content checksum (FLG 0x64),
    # Block4Mb (BD 0x70), no content size; header checksum = (xxh32(FLG‖BD) >> 8) & 0xff
    assert framed[4:6] == b"\x64\x70"
    assert framed[-8:-4] == b"\x00\x00\x00\x00"  # end mark, then the 4-byte content checksum
    assert lz4.frame.decompress(framed) == data
    assert compress("none", data) == data
    for method in ("none", "snappy", "lz4"):
        assert decompress(method, compress(method, data), "simple") == data


# ----------------------------------------------------------------------------- §8 claim-check
def test_claim_check_file_layout(tmp_path: Path) -> None:
    # §8 "the original message is written to <storage-uri>/<uuid4>.json as JSON {"key":<base64>,"value":<base64>}
    # (Go []byte marshalling; nil key → null) ... or the raw value bytes when claim-check-raw-value"
    store = FileClaimCheckStore(f"file://{tmp_path}")
    location = store.put(None, b"\x00value")
    assert location.startswith(f"file://{tmp_path}/") and location.endswith(".json")
    name = location.rsplit("/", 1)[1][: -len(".json")]
    assert len(name) == 36 and name[14] == "4"  # uuid4
    stored = (tmp_path / location.rsplit("/", 1)[1]).read_bytes()
    assert json.loads(stored) == {"key": None, "value": base64.b64encode(b"\x00value").decode()}
    raw = FileClaimCheckStore(f"file://{tmp_path}", raw_value=True)
    location = raw.put(None, b"\x00value")
    assert (tmp_path / location.rsplit("/", 1)[1]).read_bytes() == b"\x00value"


def test_effective_max_message_bytes() -> None:
    # §1.4 "Effective max-message-bytes: start with sink max-message-bytes (default 10 MiB = 10485760); if the
    # topic exists → min(that, topic max.message.bytes − 128); else min(that, broker message.max.bytes − 128)"
    from pyticdc.routing import effective_max_message_bytes

    assert effective_max_message_bytes() == 10485760
    assert effective_max_message_bytes(topic_max_message_bytes=1048588) == 1048588 - 128
    assert effective_max_message_bytes(broker_message_max_bytes=1048588) == 1048588 - 128
    assert effective_max_message_bytes(500, topic_max_message_bytes=1048588) == 500
    assert effective_max_message_bytes(10485760, topic_max_message_bytes=2000,
                                       broker_message_max_bytes=100) == 2000 - 128
    # the Router hands the capped limit to its encoders
    router = Router("simple", {"max-message-bytes": 5000}, default_topic="d", topic_max_message_bytes=1128)
    assert router._control.options.max_message_bytes == 1000
