"""The producer half of the MQ sink: Router / route_events (§1.3, §1.4, §1.6, §7).

The routing logic is checked with a recording fake codec (so the batching and broadcast rules are
visible), then every built protocol is run through the Router and compared with its own encoder.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyticdc.codec import PROTOCOLS, codec_module, make_encoder
from pyticdc.codec.base import Message
from pyticdc.codec.options import CodecOptions
from pyticdc.errors import ConfigError
from pyticdc.model import (
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    KafkaRecord,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Watermark,
)
from pyticdc.routing import FLUSH_BATCH_SIZE, FileClaimCheckStore, Router, TableDispatcher, route_events
from pyticdc.routing import producer as producer_module

ID_FLAGS = int(ColumnFlag.BINARY | ColumnFlag.HANDLE_KEY | ColumnFlag.PRIMARY_KEY)


def _table(schema: str = "test", table: str = "t1", version: int = 1, table_id: int = 100) -> TableInfo:
    return TableInfo(
        schema=schema, table=table, table_id=table_id, schema_version=version, pk_is_handle=True,
        columns=(
            ColumnInfo(name="a", type_code=TypeCode.LONG, flags=ID_FLAGS, flen=11, decimal=0, nullable=False,
                       type_desc="int(11)"),
            ColumnInfo(name="b", type_code=TypeCode.LONG, flags=int(ColumnFlag.BINARY | ColumnFlag.NULLABLE),
                       flen=11, decimal=0, type_desc="int(11)"),
        ),
        indexes=(IndexInfo(name="primary", columns=("a",), primary=True, unique=True),),
    )


T1 = _table()


def _insert(a: int, b: int = 0, commit_ts: int = 1 << 20, table: TableInfo = T1) -> RowChange:
    return RowChange(op=Op.INSERT, schema=table.schema, table=table.table, commit_ts=commit_ts,
                     columns=Row({"a": a, "b": b}), table_id=table.table_id, physical_table_id=table.table_id,
                     row_id=a, table_info=table)


def _update(pre_a: int, a: int, commit_ts: int, table: TableInfo = T1) -> RowChange:
    return RowChange(op=Op.UPDATE, schema=table.schema, table=table.table, commit_ts=commit_ts,
                     columns=Row({"a": a, "b": 1}), pre_columns=Row({"a": pre_a, "b": 0}), table_id=table.table_id,
                     physical_table_id=table.table_id, row_id=a, table_info=table)


def _ddl(table: TableInfo | None = T1, query: str = "ALTER TABLE t1 ADD COLUMN c INT", ddl_type: int = 5,
         pre: TableInfo | None = None, schema: str = "test") -> DDLEvent:
    return DDLEvent(query=query, ddl_type=ddl_type, commit_ts=2 << 20, schema=schema,
                    table=table.table if table else "", table_info=table, pre_table_info=pre)


# --------------------------------------------------------------------------- fake codec
class FakeEncoder:
    """Records what it is given; one message per call for batch protocols, else one per event."""

    instances: list[FakeEncoder] = []

    def __init__(self, protocol: str, options: Mapping[str, Any]) -> None:
        self.protocol = protocol
        fields = {k.replace("-", "_"): v for k, v in options.items()}
        self.options = CodecOptions(**{k: v for k, v in fields.items() if k in CodecOptions.__struct_fields__})
        self.calls: list[list[Event]] = []
        FakeEncoder.instances.append(self)

    def encode(self, events: Iterable[Event]) -> list[Message]:
        events = list(events)
        self.calls.append(events)
        key = None if self.protocol in ("canal-json", "simple", "craft") else b"key"
        if self.protocol in ("open-protocol", "craft") and all(e.kind == "row" for e in events):
            return [Message(key, _label(events), tuple(events))]
        if self.protocol == "canal-json" and any(isinstance(e, Watermark) for e in events):
            return []  # no enable-tidb-extension: no watermark message
        return [Message(key, _label([e]), (e,)) for e in events]


def _label(events: list[Event]) -> bytes:
    parts = []
    for event in events:
        if isinstance(event, RowChange):
            image = event.columns if event.columns is not None else event.pre_columns
            assert image is not None
            parts.append(f"{event.op.value[0]}{image['a']}")
        elif isinstance(event, DDLEvent):
            parts.append("ddl")
        elif isinstance(event, Watermark):
            parts.append(f"wm{event.resolved_ts}")
        else:
            parts.append("boot")
    return ",".join(parts).encode()


@pytest.fixture
def fake_codec(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeEncoder]]:
    FakeEncoder.instances = []

    def make(protocol: str, options: Mapping[str, Any] | None = None, **_: Any) -> FakeEncoder:
        return FakeEncoder(protocol, options or {})

    monkeypatch.setattr(producer_module, "make_encoder", make)
    # The real Simple module still supplies its BootstrapPolicy; the encoders are fakes.
    real = {p: codec_module(p) for p in list(PROTOCOLS) if p == "simple"}
    monkeypatch.setattr(producer_module, "codec_module", lambda protocol: real.get(protocol))
    yield FakeEncoder


def _where(records: list[KafkaRecord]) -> list[tuple[str, int, bytes | None]]:
    return [(r.topic, r.partition, r.value) for r in records]


def _partition(table: str, partitions: int, schema: str = "test") -> int:
    row = _insert(1, table=_table(schema, table))
    return TableDispatcher().dispatch(row, partitions)[0]


def test_rows_go_to_their_dispatched_partition(fake_codec: type[FakeEncoder]) -> None:
    # index-value: test.t1 a=11 → 2 and a=22 → 11 of 16 (tiflow index_value_test.go).
    router = Router("canal-json", default_topic="cdc", partitions=16,
                    rules=[{"matcher": ["test.*"], "partition": "index-value"}])
    records = router.route([_insert(11), _insert(22)])
    assert _where(records) == [("cdc", 2, b"i11"), ("cdc", 11, b"i22")]
    assert all(r.key is None and r.offset == -1 for r in records)


def test_ddl_broadcast_and_canal_partition_zero(fake_codec: type[FakeEncoder]) -> None:
    records = route_events([_ddl()], "open-protocol", default_topic="cdc", partitions=4)
    assert _where(records) == [("cdc", p, b"ddl") for p in range(4)]
    assert all(r.key == b"key" for r in records)
    canal = route_events([_ddl()], "canal-json", default_topic="cdc", partitions=4)
    assert _where(canal) == [("cdc", 0, b"ddl")]


def test_ddl_topics(fake_codec: type[FakeEncoder]) -> None:
    # event_router_test.go TestGetTopicForDDL.
    rules = [{"matcher": ["test.*"], "partition": "rowid", "topic": "hello_{schema}"},
             {"matcher": ["*.*", "!*.test"], "partition": "ts", "topic": "{schema}_{table}"}]
    router = Router("simple", default_topic="test", rules=rules, partitions=1)
    schema_ddl = DDLEvent(query="CREATE DATABASE test", ddl_type=1, commit_ts=1, schema="test")
    cases = [
        (schema_ddl, "test"),
        (_ddl(_table("test", "tb1")), "hello_test"),
        (_ddl(_table("test1", "view1")), "test1_view1"),
        (_ddl(_table("test1", "tb2"), pre=_table("test1", "tb1")), "test1_tb1"),
    ]
    for ddl, topic in cases:
        assert router.topic_for_ddl(ddl) == topic
        assert {r.topic for r in router.route([ddl])} == {topic}


def test_watermark_goes_to_every_seen_topic_and_the_default(fake_codec: type[FakeEncoder]) -> None:
    router = Router("open-protocol", default_topic="cdc", partitions={"cdc": 2, "x_t1": 3, "x_t2": 1},
                    rules=[{"matcher": ["x.*"], "topic": "{schema}_{table}"}])
    assert _where(router.route([Watermark(resolved_ts=7)])) == [("cdc", 0, b"wm7"), ("cdc", 1, b"wm7")]
    router.route([_insert(1, table=_table("x", "t2")), _insert(1, table=_table("x", "t1"))])
    records = router.route([Watermark(resolved_ts=8)])
    assert _where(records) == [("x_t2", 0, b"wm8"), ("x_t1", 0, b"wm8"), ("x_t1", 1, b"wm8"),
                               ("x_t1", 2, b"wm8"), ("cdc", 0, b"wm8"), ("cdc", 1, b"wm8")]


def test_no_watermark_message_means_no_records(fake_codec: type[FakeEncoder]) -> None:
    assert route_events([_insert(1), Watermark(resolved_ts=9)], "canal-json", default_topic="cdc",
                        partitions=1) == [KafkaRecord(topic="cdc", partition=0, value=b"i1")]


def test_batching_groups_by_topic_partition_and_key_within_a_window(fake_codec: type[FakeEncoder]) -> None:
    t2 = _table("test", "t2")
    t3 = _table("test", "t3")
    assert _partition("t1", 16) == 15 and _partition("t2", 16) == 5 and _partition("t3", 16) == 3
    events: list[Event] = [_insert(1), _insert(2, table=t2), _insert(3), _insert(4, table=t3), _insert(5, table=t2),
                           _ddl(), _insert(6), _insert(7)]
    records = route_events(events, "craft", default_topic="cdc", partitions=16)
    assert _where(records) == [
        ("cdc", 15, b"i1,i3"), ("cdc", 5, b"i2,i5"), ("cdc", 3, b"i4"),  # window 1, groups in first-row order
        *[("cdc", p, b"ddl") for p in range(16)],  # the DDL is a barrier
        ("cdc", 15, b"i6,i7"),  # window 2
    ]
    assert all(r.key is None for r in records)


def test_batching_groups_rows_per_topic_and_partition(fake_codec: type[FakeEncoder]) -> None:
    # Reference §1.4: a window's rows are grouped per (topic, partition), whatever their partition key.
    rows = [_insert(1, table=_table("test", "t1")), _insert(2, table=_table("test", "t2")),
            _insert(3, table=_table("test", "t1"))]
    records = route_events(rows, "open-protocol", default_topic="cdc", partitions=1)
    assert _where(records) == [("cdc", 0, b"i1,i2,i3")]


def test_batching_by_partition_key_keeps_keys_apart(fake_codec: type[FakeEncoder]) -> None:
    # tiflow's newer worker.group keys batches by TopicPartitionKey{topic, partition, partitionKey}.
    rows = [_insert(1, table=_table("test", "t1")), _insert(2, table=_table("test", "t2")),
            _insert(3, table=_table("test", "t1"))]
    router = Router("open-protocol", default_topic="cdc", partitions=1, batch_by_partition_key=True)
    assert _where(router.route(rows)) == [("cdc", 0, b"i1,i3"), ("cdc", 0, b"i2")]


def test_batch_window_is_capped(fake_codec: type[FakeEncoder]) -> None:
    rows = [_insert(i) for i in range(FLUSH_BATCH_SIZE + 3)]
    records = route_events(rows, "open-protocol", default_topic="cdc", partitions=1)
    assert [r.value.count(b",") + 1 for r in records if r.value] == [FLUSH_BATCH_SIZE, 3]


def test_non_batch_protocols_send_one_message_per_row(fake_codec: type[FakeEncoder]) -> None:
    records = route_events([_insert(1), _insert(2)], "debezium", default_topic="cdc", partitions=1)
    assert _where(records) == [("cdc", 0, b"i1"), ("cdc", 0, b"i2")]
    assert {len(call) for e in fake_codec.instances for call in e.calls} == {1}


def test_key_changing_update_is_split_and_each_half_dispatched(fake_codec: type[FakeEncoder]) -> None:
    # a 11 → 22 in one transaction with an insert of 33: DELETE(11) < INSERT(33) == INSERT(22) after the sort.
    events: list[Event] = [_insert(33, commit_ts=5), _update(11, 22, commit_ts=5), _insert(44, commit_ts=6)]
    records = route_events(events, "canal-json", default_topic="cdc", partitions=16,
                           rules=[{"matcher": ["*.*"], "partition": "index-value"}])
    assert [r.value for r in records] == [b"d11", b"i33", b"i22", b"i44"]
    assert records[0].partition == 2 and records[2].partition == 11


def test_update_without_key_change_stays_an_update(fake_codec: type[FakeEncoder]) -> None:
    records = route_events([_update(5, 5, commit_ts=9)], "canal-json", default_topic="cdc", partitions=1)
    assert [r.value for r in records] == [b"u5"]


def test_one_encoder_per_topic_partition(fake_codec: type[FakeEncoder]) -> None:
    router = Router("simple", default_topic="cdc", partitions=16,
                    rules=[{"matcher": ["*.*"], "partition": "index-value"}])
    before = len(fake_codec.instances)
    router.route([_insert(11), _insert(22), _insert(11)])
    router.route([_insert(11)])
    row_encoders = [e for e in fake_codec.instances[before:] if any(c and c[0].kind == "row" for c in e.calls)]
    assert len(row_encoders) == 2
    assert sorted(len(e.calls) for e in row_encoders) == [1, 3]


def test_explicit_bootstrap_only_for_simple(fake_codec: type[FakeEncoder]) -> None:
    boot = Bootstrap(table_info=T1)
    assert [r.partition for r in route_events([boot], "simple", default_topic="cdc", partitions=3)] == [0, 1, 2]
    only_zero = route_events([boot], "simple", {"send-bootstrap-to-all-partition": False}, default_topic="cdc",
                             partitions=3)
    assert [r.partition for r in only_zero] == [0]
    assert route_events([boot], "open-protocol", default_topic="cdc", partitions=3) == []


def test_configuration_errors(fake_codec: type[FakeEncoder]) -> None:
    with pytest.raises(ConfigError, match=">= 1"):
        Router("open-protocol", default_topic="cdc", partitions=0)
    with pytest.raises(ConfigError, match=">= 1"):
        Router("open-protocol", default_topic="cdc", partitions={"cdc": -1})
    with pytest.raises(ConfigError, match="default_topic"):
        Router("open-protocol", default_topic="")
    with pytest.raises(ConfigError, match="valid protocols"):
        Router("avro", default_topic="cdc")
    router = Router("canal-json", default_topic="cdc", rules=[{"matcher": ["*.*"], "partition": "index-value",
                                                                 "index": "no_such_index"}])
    with pytest.raises(ConfigError, match="no_such_index"):
        router.route([_insert(1)])


def test_partition_mapping_defaults_to_three(fake_codec: type[FakeEncoder]) -> None:
    router = Router("open-protocol", default_topic="cdc", partitions={"other": 5})
    assert router.partition_count("cdc") == 3 and router.partition_count("other") == 5


def test_claim_check_store_built_from_options(fake_codec: type[FakeEncoder], tmp_path: Path) -> None:
    router = Router("open-protocol", {"large-message-handle-option": "claim-check",
                                      "claim-check-storage-uri": f"file://{tmp_path}"}, default_topic="cdc")
    assert isinstance(router.claim_check, FileClaimCheckStore)
    assert router.claim_check.directory == tmp_path


# --------------------------------------------------------------------------- real codecs
BUILT = list(PROTOCOLS)
_EXTENSION = {"canal-json": {"enable-tidb-extension": True}, "debezium": {"enable-tidb-extension": True}}
NIL_KEY = {"canal-json", "simple", "craft"}


def _clock() -> int:
    return 1_700_000_000_000


def _options(protocol: str) -> dict[str, Any]:
    accepted = codec_module(protocol).OPTIONS
    return {k: v for k, v in _EXTENSION.get(protocol, {}).items() if k.replace("-", "_") in accepted}


def _is_bootstrap(record: KafkaRecord) -> bool:
    return record.value is not None and b'"type":"BOOTSTRAP"' in record.value


def _encoder(protocol: str, options: Mapping[str, Any] | None = None) -> Any:
    # A codec with a BootstrapPolicy leaves BOOTSTRAP to the sink: compare with its plain encoder.
    extra: dict[str, Any] = {"auto_bootstrap": False} if hasattr(codec_module(protocol), "BootstrapPolicy") else {}
    return make_encoder(protocol, options, clock=_clock, **extra)


@pytest.mark.parametrize("protocol", BUILT)
def test_real_codec_rows_match_the_encoder(protocol: str) -> None:
    options = _options(protocol)
    events: list[Event] = [_insert(11), _insert(22)]
    router = Router(protocol, options, default_topic="cdc", partitions=16, clock=_clock,
                    rules=[{"matcher": ["test.*"], "partition": "index-value"}])
    records = [r for r in router.route(events) if not _is_bootstrap(r)]
    by_partition = {r.partition for r in records}
    assert by_partition == {2, 11}  # index_value_test.go numbers
    for partition, row in ((2, events[0]), (11, events[1])):
        expected = _encoder(protocol, options).encode([row])
        got = [r for r in records if r.partition == partition]
        assert [(r.key, r.value) for r in got] == [(m.key, m.value) for m in expected]
    for record in records:
        assert (record.key is None) == (protocol in NIL_KEY)


@pytest.mark.parametrize("protocol", BUILT)
def test_real_codec_ddl_and_watermark_broadcast(protocol: str) -> None:
    options = _options(protocol)
    router = Router(protocol, options, default_topic="cdc", partitions={"cdc": 3, "side": 2}, clock=_clock,
                    rules=[{"matcher": ["other.*"], "topic": "side"}])
    ddl = _ddl()
    expected_ddl = _encoder(protocol, options).encode([ddl])
    records = router.route([ddl])
    partitions = [0] if protocol == "canal-json" else [0, 1, 2]
    assert [(r.topic, r.partition) for r in records] == [("cdc", p) for p in partitions for _ in expected_ddl]
    assert {(r.key, r.value) for r in records} == {(m.key, m.value) for m in expected_ddl}
    router.route([_insert(1, table=_table("other", "t"))])
    router.bootstrap_policy = None  # the fixed clock never makes a bootstrap due; keep the watermark alone
    watermark = Watermark(resolved_ts=3 << 20)
    expected_wm = _encoder(protocol, options).encode([watermark])
    records = router.route([watermark])
    topics = [("cdc", p) for p in range(3)] + [("side", p) for p in range(2)]
    assert sorted((r.topic, r.partition) for r in records) == sorted(t for t in topics for _ in expected_wm)
    for record in records:
        assert (record.key is None) == (protocol in NIL_KEY)
        assert (record.key, record.value) in {(m.key, m.value) for m in expected_wm}


@pytest.mark.parametrize("protocol", [p for p in BUILT if p in ("open-protocol", "craft")])
def test_real_batch_codecs_batch_one_partition_key(protocol: str) -> None:
    rows = [_insert(i) for i in range(5)]
    records = route_events(rows, protocol, default_topic="cdc", partitions=2)
    expected = make_encoder(protocol).encode(rows)
    assert len(expected) == 1
    assert [(r.partition, r.key, r.value) for r in records] == [(_partition("t1", 2), expected[0].key,
                                                                 expected[0].value)]




def test_simple_bootstrap_precedes_a_tables_first_row_on_every_partition() -> None:
    router = Router("simple", default_topic="cdc", partitions=4, clock=_clock)
    t2 = _table("test", "t2", table_id=101)  # TiCDC's bootstrap worker keys tables by physical table id
    records = router.route([_insert(1), _insert(2), _insert(3, table=t2)])
    bootstrap_t1 = _encoder("simple").bootstrap_message(T1)
    bootstrap_t2 = _encoder("simple").bootstrap_message(t2)
    row_partition_t1, row_partition_t2 = _partition("t1", 4), _partition("t2", 4)
    assert [(r.partition, r.value) for r in records] == [
        *[(p, bootstrap_t1.value) for p in range(4)],
        (row_partition_t1, _encoder("simple").encode([_insert(1)])[0].value),
        (row_partition_t1, _encoder("simple").encode([_insert(2)])[0].value),
        *[(p, bootstrap_t2.value) for p in range(4)],
        (row_partition_t2, _encoder("simple").encode([_insert(3, table=t2)])[0].value),
    ]
    assert all(r.key is None for r in records)


def test_simple_bootstrap_options() -> None:
    only_zero = route_events([_insert(1)], "simple", {"send-bootstrap-to-all-partition": False},
                             default_topic="cdc", partitions=4, clock=_clock)
    assert [r.partition for r in only_zero if _is_bootstrap(r)] == [0]
    disabled = route_events([_insert(1)], "simple", {"send-bootstrap-interval-in-sec": 0,
                                                     "send-bootstrap-in-msg-count": 0},
                            default_topic="cdc", partitions=4, clock=_clock)
    assert [_is_bootstrap(r) for r in disabled] == [False]


def test_simple_bootstrap_interval_is_checked_against_the_clock() -> None:
    now = [1_000_000]
    router = Router("simple", {"send-bootstrap-interval-in-sec": 10}, default_topic="cdc", partitions=1,
                    clock=lambda: now[0])
    assert [_is_bootstrap(r) for r in router.route([_insert(1)])] == [True, False]
    now[0] += 9_999
    assert [_is_bootstrap(r) for r in router.route([_insert(2)])] == [False]
    now[0] += 1
    assert [_is_bootstrap(r) for r in router.route([_insert(3)])] == [True, False]
    now[0] += 10_000  # no row for 10 s: the ticker pass that runs with the next watermark sends one
    assert [_is_bootstrap(r) for r in router.route([Watermark(resolved_ts=5 << 20)])] == [True, False]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(
    st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3"]), st.integers(0, 3)), max_size=40),
    st.integers(1, 5),
    st.sampled_from(["canal-json", "open-protocol", "debezium", "craft"]),
    st.sampled_from(["default", "index-value", "ts"]),
)
def test_every_row_is_sent_once_in_order_per_partition_key(
    fake_codec: type[FakeEncoder], rows: list[tuple[str, int]], partitions: int, protocol: str, rule: str,
) -> None:
    tables = {name: _table("test", name, table_id=i) for i, name in enumerate(["t1", "t2", "t3"])}
    # handle a = input position (unique labels); commit ts steps are random, so some rows share one
    commit_ts = 1 << 20
    events = []
    for position, (table, step) in enumerate(rows):
        commit_ts += step
        events.append(_insert(position, commit_ts=commit_ts, table=tables[table]))
    router = Router(protocol, default_topic="cdc", partitions=partitions,
                    rules=[{"matcher": ["*.*"], "partition": rule}])
    sent = [(r.partition, label) for r in router.route(events) for label in (r.value or b"").split(b",")]
    placement = {_label([e]): router.event_router.partition_for_row(e, partitions) for e in events}
    # every row exactly once, in the partition its dispatcher chose
    assert sorted(label for _, label in sent) == sorted(placement)
    assert all(placement[label][0] == partition for partition, label in sent)
    input_order = [_label([e]) for e in events]
    for partition in range(partitions):
        in_partition = [label for p, label in sent if p == partition]
        if protocol in ("canal-json", "debezium"):
            # one message per row: the partition sees exactly the input order
            assert in_partition == [label for label in input_order if placement[label][0] == partition]
        for key in {placement[label][1] for label in in_partition}:
            # batched: rows sharing a partition key keep the input order
            assert [label for label in in_partition if placement[label][1] == key] == \
                [label for label in input_order if placement[label] == (partition, key)]
