"""Partition dispatch: PositionInertia, ColumnValueString, dispatchers, rule matching, TOML rules (§1.6).

Expected numbers come from TiCDC's own tests (tiflow ``pkg/hash/position_inertia_test.go``,
``cdc/sink/dmlsink/mq/dispatcher/{event_router_test.go,partition/*_test.go}``) via the golden vectors
or quoted here with their source, and from CRC32-IEEE check values of the standard.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyticdc.errors import ConfigError
from pyticdc.model import ColumnFlag, ColumnInfo, IndexInfo, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.routing import (
    ColumnsDispatcher,
    DispatchRule,
    EventRouter,
    IndexValueDispatcher,
    PositionInertia,
    TableDispatcher,
    TsDispatcher,
    column_value_bytes,
    column_value_string,
    make_partition_dispatcher,
    rules_from_toml,
)
from pyticdc.vectors import check_file

HK = int(ColumnFlag.HANDLE_KEY)


def _row(schema: str, table: str, values: dict[str, object], *, flags: dict[str, int] | None = None,
         op: Op = Op.INSERT, commit_ts: int = 1, indexes: tuple[IndexInfo, ...] = (), pk_is_handle: bool = False,
         types: dict[str, int] | None = None, virtual: tuple[str, ...] = ()) -> RowChange:
    flags = flags or {}
    types = types or {}
    info = TableInfo(
        schema=schema, table=table, pk_is_handle=pk_is_handle, indexes=indexes,
        columns=tuple(ColumnInfo(name=n, type_code=types.get(n, TypeCode.LONGLONG), flags=flags.get(n, 0),
                                 virtual=n in virtual) for n in values),
    )
    image = Row({n: v for n, v in values.items() if n not in virtual})
    post, pre = (None, image) if op is Op.DELETE else (image, None)
    return RowChange(op=op, schema=schema, table=table, commit_ts=commit_ts, columns=post, pre_columns=pre,
                     table_info=info)


# --------------------------------------------------------------------------- vectors
def test_every_dispatch_vector_passes(vectors_dir: Path) -> None:
    results = check_file(vectors_dir / "dispatch.json")
    assert len(results) >= 18
    assert [f"{r.name}: {r.reason}" for r in results if not r.passed] == []


# --------------------------------------------------------------------------- hash
def test_position_inertia_single_write_is_crc32_check_value() -> None:
    # CRC-32/ISO-HDLC check value of "123456789" is 0xCBF43926 (the standard's published check).
    hasher = PositionInertia()
    hasher.write("123456789")
    assert hasher.sum32() == 0xCBF43926


def test_position_inertia_parts_concatenate_without_separator() -> None:
    one, two = PositionInertia(), PositionInertia()
    one.write("1234", "56789")
    two.write(b"123456789")
    assert one.sum32() == two.sum32() == 0xCBF43926


def test_position_inertia_reset() -> None:
    hasher = PositionInertia()
    hasher.write("a", "b")
    hasher.reset()
    assert hasher.sum32() == 0


@given(st.lists(st.lists(st.binary(max_size=12), min_size=1, max_size=3), max_size=6), st.randoms())
def test_position_inertia_ignores_write_order(writes: list[list[bytes]], rnd: object) -> None:
    shuffled = list(writes)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    first, second = PositionInertia(), PositionInertia()
    for parts in writes:
        first.write(*parts)
    for parts in shuffled:
        second.write(*parts)
    assert first.sum32() == second.sum32()


@given(st.lists(st.binary(max_size=8), min_size=1, max_size=3), st.lists(st.binary(max_size=8), max_size=3))
def test_position_inertia_same_write_twice_cancels(parts: list[bytes], other: list[bytes]) -> None:
    hasher = PositionInertia()
    if other:
        hasher.write(*other)
    before = hasher.sum32()
    hasher.write(*parts)
    hasher.write(*parts)
    assert hasher.sum32() == before
    assert 0 <= hasher.sum32() < 2**32


@given(st.lists(st.binary(max_size=16), min_size=1, max_size=5))
def test_position_inertia_is_xor_of_crcs(writes: list[bytes]) -> None:
    expected = 0
    for data in writes:
        expected ^= zlib.crc32(data)
    hasher = PositionInertia()
    for data in writes:
        hasher.write(data)
    assert hasher.sum32() == expected


# --------------------------------------------------------------------------- ColumnValueString
@pytest.mark.parametrize(("value", "type_code", "expected"), [
    (None, None, "null"),
    (True, None, "1"),
    (False, None, "0"),
    (-9223372036854775808, TypeCode.LONGLONG, "-9223372036854775808"),
    (18446744073709551615, TypeCode.LONGLONG, "18446744073709551615"),
    (b"abc", TypeCode.VARCHAR, "abc"),
    ("1.50", TypeCode.NEWDECIMAL, "1.50"),
    ("2024-02-26 12:00:00.123", TypeCode.TIMESTAMP, "2024-02-26 12:00:00.123"),
    # strconv.FormatFloat(float64(float32(3.14)), 'f', -1, 32) == "3.14"; at 64 bits it is the widened value.
    (3.140000104904175, TypeCode.FLOAT, "3.14"),
    (3.140000104904175, TypeCode.DOUBLE, "3.140000104904175"),
    (1e21, TypeCode.DOUBLE, "1000000000000000000000"),
    (1e-7, TypeCode.DOUBLE, "0.0000001"),
    (0.1, None, "0.1"),
])
def test_column_value_string(value: object, type_code: int | None, expected: str) -> None:
    assert column_value_string(value, type_code) == expected  # type: ignore[arg-type]


def test_column_value_bytes_keeps_invalid_utf8_verbatim() -> None:
    assert column_value_bytes(b"\xff\x00a") == b"\xff\x00a"
    assert column_value_string(b"\xff").encode("utf-8", "surrogateescape") == b"\xff"
    hashed, direct = PositionInertia(), PositionInertia()
    hashed.write("c", column_value_string(b"\xff"))
    direct.write(b"c\xff")
    assert hashed.sum32() == direct.sum32()


# --------------------------------------------------------------------------- dispatchers
def test_table_dispatcher_partition_and_key() -> None:
    # table_test.go TestTableDispatcher: test.t1 → 15, test.t2 → 5, test.t3 → 3 of 16.
    for table, expected in (("t1", 15), ("t2", 5), ("t3", 3)):
        assert TableDispatcher().dispatch(_row("test", table, {"id": 1}), 16) == (expected, f"test.{table}")


def test_default_rule_is_table() -> None:
    row = _row("test", "t1", {"id": 1, "v": 2}, flags={"id": HK})
    for partition_num in (1, 3, 7, 16):
        assert make_partition_dispatcher("default").dispatch(row, partition_num) == \
            TableDispatcher().dispatch(row, partition_num)


def test_rule_names_are_case_insensitive_and_rowid_is_index_value() -> None:
    assert isinstance(make_partition_dispatcher("Index-Value"), IndexValueDispatcher)
    assert isinstance(make_partition_dispatcher("ROWID"), IndexValueDispatcher)
    assert isinstance(make_partition_dispatcher("TS"), TsDispatcher)
    assert isinstance(make_partition_dispatcher("Columns", columns=["a"]), ColumnsDispatcher)


def test_unknown_rule_falls_back_to_default_with_warning() -> None:
    with pytest.warns(UserWarning, match="not one of"):
        dispatcher = make_partition_dispatcher("unknown-dispatcher")
    assert isinstance(dispatcher, TableDispatcher)


def test_ts_dispatcher() -> None:
    # ts_test.go: commit ts 1 → 1, 2 → 2 of 16; uint64 ts stays exact.
    assert TsDispatcher().dispatch(_row("a", "b", {"x": 1}, commit_ts=1), 16) == (1, "1")
    big = 2**64 - 1
    assert TsDispatcher().dispatch(_row("a", "b", {"x": 1}, commit_ts=big), 7) == (big % 7, str(big))


def test_index_value_uses_pre_image_for_delete() -> None:
    # index_value_test.go: test.t1 a=11 → partition 2 of 16, key 1636506354 (also for a delete's pre-image).
    insert = _row("test", "t1", {"a": 11, "b": 22}, flags={"a": HK})
    delete = _row("test", "t1", {"a": 11, "b": 33}, flags={"a": HK}, op=Op.DELETE)
    assert IndexValueDispatcher().dispatch(insert, 16) == (2, "1636506354")
    assert IndexValueDispatcher().dispatch(delete, 16) == (2, "1636506354")


def test_index_value_hashes_null_as_text_null() -> None:
    # tiflow hashes a nil value as "null" (pingcap/ticdc skips it, §10).
    with_null = _row("test", "t2", {"a": 11, "b": None}, flags={"a": HK, "b": HK})
    as_text = _row("test", "t2", {"a": 11, "b": "null"}, flags={"a": HK, "b": HK})
    assert IndexValueDispatcher().dispatch(with_null, 1 << 30) == IndexValueDispatcher().dispatch(as_text, 1 << 30)


def test_index_value_hashes_float_columns_at_their_width() -> None:
    f32 = _row("s", "t", {"f": 3.140000104904175}, flags={"f": HK}, types={"f": TypeCode.FLOAT})
    writes = IndexValueDispatcher().hashed_writes(f32)
    assert writes == [("s", "t"), ("f", "3.14")]


def test_index_value_with_named_index() -> None:
    indexes = (IndexInfo(name="uk_bc", columns=("b", "c"), unique=True),)
    row = _row("test", "t", {"a": 1, "b": 2, "c": 3}, flags={"a": HK}, indexes=indexes)
    dispatcher = IndexValueDispatcher("UK_BC")  # index names match case-insensitively
    assert sorted(dispatcher.hashed_writes(row)) == [("b", "2"), ("c", "3"), ("test", "t")]
    hasher = PositionInertia()
    for parts in (("test", "t"), ("b", "2"), ("c", "3")):
        hasher.write(*parts)
    assert dispatcher.dispatch(row, 16) == (hasher.sum32() % 16, str(hasher.sum32()))


def test_index_value_unknown_index_is_an_error() -> None:
    row = _row("test", "t", {"a": 1}, flags={"a": HK}, indexes=(IndexInfo(name="idx_a", columns=("a",)),))
    with pytest.raises(ConfigError, match=r"'nope' not found.*'idx_a'"):
        IndexValueDispatcher("nope").dispatch(row, 3)


def test_int_handle_primary_key_is_not_an_index() -> None:
    # TiDB keeps a PK-is-handle primary key out of TableInfo.Indices, so GetIndex("primary") finds nothing.
    primary = (IndexInfo(name="primary", columns=("id",), primary=True, unique=True),)
    handle_row = _row("test", "t", {"id": 1}, flags={"id": HK}, indexes=primary, pk_is_handle=True)
    with pytest.raises(ConfigError, match="not found"):
        IndexValueDispatcher("primary").dispatch(handle_row, 3)
    clustered = _row("test", "t", {"id": 1}, flags={"id": HK}, indexes=primary, pk_is_handle=False)
    assert IndexValueDispatcher("PRIMARY").dispatch(clustered, 3) == IndexValueDispatcher().dispatch(clustered, 3)


def test_columns_dispatcher_matches_names_case_insensitively_and_hashes_table_spelling() -> None:
    row = _row("test", "t1", {"Col1": 22, "col2": 11, "col3": 33})
    writes = ColumnsDispatcher(("COL2", "col1")).hashed_writes(row)
    assert writes == [("test", "t1"), ("col2", "11"), ("Col1", "22")]


def test_columns_dispatcher_vector_number() -> None:
    # columns_test.go TestColumnsDispatcher: columns [col2, col1] of test.t1 → partition 15 of 16.
    row = _row("test", "t1", {"col2": 11, "col1": 22, "col3": 33})
    partition, key = ColumnsDispatcher(("col2", "col1")).dispatch(row, 16)
    assert partition == 15
    assert int(key) % 16 == 15


def test_columns_dispatcher_errors() -> None:
    row = _row("test", "t", {"a": 1, "g": 2}, virtual=("g",))
    with pytest.raises(ConfigError, match="'missing' not found"):
        ColumnsDispatcher(("missing",)).dispatch(row, 3)
    with pytest.raises(ConfigError, match="virtual generated"):
        ColumnsDispatcher(("G",)).dispatch(row, 3)


def test_partition_number_must_be_positive() -> None:
    with pytest.raises(ConfigError):
        TableDispatcher().dispatch(_row("a", "b", {"x": 1}), 0)


@given(st.integers(1, 1000), st.text(max_size=10), st.text(max_size=10))
def test_table_partition_is_in_range(partition_num: int, schema: str, table: str) -> None:
    partition, key = TableDispatcher().dispatch(_row(schema, table, {"x": 1}), partition_num)
    assert 0 <= partition < partition_num
    assert key == f"{schema}.{table}"


# --------------------------------------------------------------------------- rule matching (event_router_test.go)
ROUTER_RULES = [
    {"matcher": ["test_default1.*"], "partition": "default"},
    {"matcher": ["test_default2.*"], "partition": "unknown-dispatcher"},
    {"matcher": ["test_table.*"], "partition": "table", "topic": "hello_{schema}_world"},
    {"matcher": ["test_index_value.*"], "partition": "index-value", "topic": "{schema}_world"},
    {"matcher": ["test.*"], "partition": "rowid", "topic": "hello_{schema}"},
    {"matcher": ["*.*", "!*.test"], "partition": "ts", "topic": "{schema}_{table}"},
    {"matcher": ["hard_code_schema.*"], "partition": "default", "topic": "hard_code_topic"},
]


@pytest.fixture
def event_router() -> EventRouter:
    with pytest.warns(UserWarning):
        return EventRouter("test", ROUTER_RULES)


def test_event_router_first_match_wins(event_router: EventRouter) -> None:
    kinds = {
        ("sbs", "test"): TableDispatcher,  # no rule matches *.test except the implicit default
        ("test_default1", "test"): TableDispatcher,
        ("test_default2", "test"): TableDispatcher,
        ("test_table", "test"): TableDispatcher,
        ("test_index_value", "test"): IndexValueDispatcher,
        ("test", "table1"): IndexValueDispatcher,
        ("sbs", "table2"): TsDispatcher,
        ("hard_code_schema", "test"): TableDispatcher,
    }
    for (schema, table), kind in kinds.items():
        assert isinstance(event_router.match(schema, table)[1], kind), (schema, table)


def test_event_router_topics(event_router: EventRouter) -> None:
    # TestGetTopicForRowChange / TestGetActiveTopics.
    assert event_router.topic_for_table("test_default1", "table") == "test"
    assert event_router.topic_for_table("test_table", "table") == "hello_test_table_world"
    assert event_router.topic_for_table("test_index_value", "table") == "test_index_value_world"
    assert event_router.topic_for_table("a", "table") == "a_table"
    # rule-5 (*.*, !*.test) comes first for every other table of hard_code_schema
    assert event_router.topic_for_table("hard_code_schema", "test") == "hard_code_topic"
    assert event_router.topic_for_table("hard_code_schema", "x") == "hard_code_schema_x"
    tables = [("test_default1", "table"), ("test_default2", "table"), ("test_table", "table"),
              ("test_index_value", "table"), ("test", "table"), ("sbs", "table")]
    assert event_router.active_topics(tables) == [
        "test", "hello_test_table_world", "test_index_value_world", "hello_test", "sbs_table"]
    assert event_router.active_topics([]) == ["test"]


def test_event_router_partitions(event_router: EventRouter) -> None:
    # TestGetPartitionForRowChange: the non-default rules.
    assert event_router.partition_for_row(_row("test_table", "table", {"x": 1}, commit_ts=1), 16)[0] == 15
    index_row = _row("test_index_value", "table", {"a": 11, "b": 22}, flags={"a": HK})
    assert event_router.partition_for_row(index_row, 10)[0] == 1
    assert event_router.partition_for_row(_row("a", "table", {"x": 1}, commit_ts=1), 2)[0] == 1


def test_matching_is_case_insensitive_unless_case_sensitive() -> None:
    rules = [{"matcher": ["Test.T*"], "partition": "ts", "topic": "tt"}]
    assert EventRouter("d", rules).topic_for_table("TEST", "t1") == "tt"
    sensitive = [{**rules[0], "case_sensitive": True}]
    assert EventRouter("d", sensitive).topic_for_table("TEST", "t1") == "d"
    assert EventRouter("d", sensitive).topic_for_table("Test", "T1") == "tt"


def test_bad_matcher_and_topic_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="wrong table pattern"):
        EventRouter("d", [{"matcher": ["db"]}])
    with pytest.raises(ConfigError, match="invalid topic expression"):
        EventRouter("d", [{"matcher": ["*.*"], "topic": "{table}_{schema}"}])
    with pytest.raises(ConfigError, match="cannot be configured both"):
        EventRouter("d", [{"matcher": ["*.*"], "partition": "ts", "dispatcher": "table"}])
    with pytest.raises(ConfigError, match="valid keys"):
        EventRouter("d", [{"matcher": ["*.*"], "partiton": "ts"}])


def test_verify_table_requires_unique_named_index() -> None:
    plain = (IndexInfo(name="idx", columns=("a",)), IndexInfo(name="uk", columns=("a",), unique=True))
    table = _row("s", "t", {"a": 1}, indexes=plain).table_info
    assert table is not None
    with pytest.raises(ConfigError, match="not unique"):
        EventRouter("d", [{"matcher": ["*.*"], "partition": "index-value", "index": "idx"}]).verify_table(table)
    EventRouter("d", [{"matcher": ["*.*"], "partition": "index-value", "index": "uk"}]).verify_table(table)
    with pytest.raises(ConfigError, match="not found"):
        EventRouter("d", [{"matcher": ["*.*"], "partition": "columns", "columns": ["zz"]}]).verify_table(table)


# --------------------------------------------------------------------------- TOML
CHANGEFEED_TOML = """
case-sensitive = true
force-replicate = false

[filter]
rules = ['*.*']

[sink]
protocol = "canal-json"
dispatchers = [
    {matcher = ['test1.*', 'test2.*'], topic = "Topic_{schema}", partition = "index-value", index = "uk"},
    {matcher = ['test3.*'], dispatcher = "ts"},
    {matcher = ['test4.*'], partition = "columns", columns = ["a", "B"]},
]
"""


def test_rules_from_toml() -> None:
    rules = rules_from_toml(CHANGEFEED_TOML)
    assert rules == [
        DispatchRule(matcher=("test1.*", "test2.*"), partition="index-value", topic="Topic_{schema}", index="uk",
                     case_sensitive=True),
        DispatchRule(matcher=("test3.*",), partition="ts", case_sensitive=True),
        DispatchRule(matcher=("test4.*",), partition="columns", columns=("a", "B"), case_sensitive=True),
    ]
    router = EventRouter("d", rules)
    assert router.topic_for_table("test2", "x") == "Topic_test2"
    assert router.topic_for_table("TEST2", "x") == "d"  # case-sensitive = true


def test_rules_from_toml_array_of_tables_and_defaults() -> None:
    text = """
[[sink.dispatchers]]
matcher = ['db.*']
topic = "fixed"
partition = "table"
"""
    rules = rules_from_toml(text)
    assert rules == [DispatchRule(matcher=("db.*",), partition="table", topic="fixed")]
    assert rules_from_toml("[sink]\nprotocol='open-protocol'\n") == []


def test_rules_from_toml_errors() -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        rules_from_toml("[sink")
    with pytest.raises(ConfigError, match="cannot be configured both"):
        rules_from_toml("[[sink.dispatchers]]\nmatcher=['*.*']\npartition='ts'\ndispatcher='table'\n")
    with pytest.raises(ConfigError, match="valid keys"):
        rules_from_toml("[[sink.dispatchers]]\nmatcher=['*.*']\ntopik='x'\n")
