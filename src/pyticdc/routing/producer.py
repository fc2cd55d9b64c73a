"""The producer half of TiCDC's MQ sink: events → Kafka records, as TiCDC would send them.

Implements reference §1.3 (update splitting), §1.4 (message assembly, batching, DDL and checkpoint
broadcast), §1.6 (topic and partition dispatch), §6.3 (Simple BOOTSTRAP) and §7 (per-protocol summary),
after tiflow ``cdc/sink/dmlsink/mq/{mq_dml_sink.go,worker.go}``, ``cdc/sink/ddlsink/mq/mq_ddl_sink.go`` and
``pkg/sink/codec/encoder_group.go``.

Batching window. TiCDC's worker collects rows for up to 15 ms or 2048 rows, groups them by
(topic, partition) (reference §1.4) and feeds each group to one encoder (Open, Craft). Later tiflow
workers key the groups by ``TopicPartitionKey`` including the dispatcher's partition key, so rows of
one partition but different keys go to different messages; ``Router(batch_by_partition_key=True)``
does that. Time does not exist
here, so a window is *consecutive rows of the input between non-row events*, cut every 2048 rows: DDLs and
watermarks are barriers in TiCDC too (all earlier rows are flushed before them). Within a window the groups
are encoded in order of their first row (TiCDC iterates a Go map, i.e. in random order), so the order of
rows in a group is always preserved, and so is the per-partition order of the messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

from pyticdc.codec import canonical_protocol, codec_module, make_encoder
from pyticdc.codec.base import BaseEncoder, ClaimCheckStore, Message
from pyticdc.codec.options import Clock, system_clock_ms
from pyticdc.errors import ConfigError
from pyticdc.model import Bootstrap, DDLEvent, Event, KafkaRecord, RowChange, TableInfo, Watermark
from pyticdc.routing.claimcheck import claim_check_store
from pyticdc.routing.dispatch import DispatchRule, EventRouter
from pyticdc.routing.split import split_updates

__all__ = [
    "BATCH_PROTOCOLS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_PARTITION_NUM",
    "FLUSH_BATCH_SIZE",
    "KAFKA_SIZE_HEADROOM",
    "PARTITION_ZERO_DDL_PROTOCOLS",
    "BootstrapSchedule",
    "Router",
    "effective_max_message_bytes",
    "route_events",
]

#: Protocols whose rows TiCDC batches into one message per (topic, partition, key) group (§1.4).
BATCH_PROTOCOLS: Final = frozenset({"open-protocol", "craft"})
#: Protocols whose DDL goes to partition 0 only; every other protocol broadcasts it (§1.4).
PARTITION_ZERO_DDL_PROTOCOLS: Final = frozenset({"canal-json"})
#: Most rows in one batching window (tiflow worker.go ``flushBatchSize``).
FLUSH_BATCH_SIZE: Final = 2048
#: Partitions of a topic TiCDC creates itself (sink URI ``partition-num`` default).
DEFAULT_PARTITION_NUM: Final = 3

#: Sink ``max-message-bytes`` default (``pkg/config/sink.go``): 10 MiB.
DEFAULT_MAX_MESSAGE_BYTES: Final = 10 * 1024 * 1024
#: What TiCDC keeps below the topic's / broker's limit for the record overhead (``adjustOptions``).
KAFKA_SIZE_HEADROOM: Final = 128


def effective_max_message_bytes(
    max_message_bytes: int | None = None, *, topic_max_message_bytes: int | None = None,
    broker_message_max_bytes: int | None = None,
) -> int:
    """The ``max-message-bytes`` TiCDC's encoders use (reference §1.4, ``pkg/sink/kafka/options.go``).

    Start with the sink's ``max-message-bytes`` (default 10 MiB); if the topic exists, take
    ``min(that, topic max.message.bytes - 128)``, else ``min(that, broker message.max.bytes - 128)``.
    """
    value = DEFAULT_MAX_MESSAGE_BYTES if max_message_bytes is None else int(max_message_bytes)
    if topic_max_message_bytes is not None:
        return min(value, int(topic_max_message_bytes) - KAFKA_SIZE_HEADROOM)
    if broker_message_max_bytes is not None:
        return min(value, int(broker_message_max_bytes) - KAFKA_SIZE_HEADROOM)
    return value


class BootstrapSchedule(Protocol):
    """What the Router needs of a codec's ``BootstrapPolicy`` (Simple, §6.3)."""

    @property
    def enabled(self) -> bool:
        """Whether BOOTSTRAP messages are sent at all."""

    def should_emit(self, table_info: TableInfo, now_ms: int, row_count: int = 1, *,
                    table_key: int | None = None) -> bool:
        """Record rows of a table arriving; True if a BOOTSTRAP goes first."""

    def due(self, now_ms: int) -> list[TableInfo]:
        """A ticker pass: the tables that need a BOOTSTRAP now."""

    def partitions(self, partition_count: int) -> range:
        """The partitions a BOOTSTRAP goes to."""


_TxnKey = tuple[int, str, str, int]
_GroupKey = tuple[str, int, str]


def _option(options: Mapping[str, Any], name: str, default: Any) -> Any:
    """An option by TiCDC spelling (``claim-check-raw-value``) or Python spelling (``claim_check_raw_value``)."""
    for spelling in (name, name.replace("-", "_")):
        if spelling in options:
            return options[spelling]
    return default


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


class Router:
    """Routes events to Kafka records for one changefeed: topics, partitions, splitting, batching, broadcast.

    ``partitions`` is the partition count of every topic, or a mapping topic → count (a topic missing
    from the mapping gets 3, the count TiCDC auto-creates topics with). The Router is stateful across
    ``route`` calls: it remembers the topics it has sent to (watermarks go to all of them) and keeps one
    encoder per (topic, partition). Open and Craft batch the rows of a window per (topic, partition), as
    reference §1.4 says; ``batch_by_partition_key=True`` batches per (topic, partition, partition key)
    instead, as tiflow's newer ``worker.group`` does.
    """

    def __init__(
        self,
        protocol: str,
        options: Mapping[str, Any] | None = None,
        *,
        default_topic: str,
        rules: Sequence[DispatchRule | Mapping[str, Any]] = (),
        partitions: int | Mapping[str, int] = DEFAULT_PARTITION_NUM,
        clock: Clock | None = None,
        claim_check: ClaimCheckStore | None = None,
        batch_by_partition_key: bool = False,
        topic_max_message_bytes: int | None = None,
        broker_message_max_bytes: int | None = None,
    ) -> None:
        self.protocol = canonical_protocol(protocol)
        self.batch_by_partition_key = batch_by_partition_key
        module = codec_module(self.protocol)
        self.options: dict[str, Any] = dict(options or {})
        if topic_max_message_bytes is not None or broker_message_max_bytes is not None:
            # §1.4: the encoders see the sink limit capped by the topic's (or broker's) limit - 128.
            sink_limit = _option(self.options, "max-message-bytes", None)
            for spelling in ("max-message-bytes", "max_message_bytes"):
                self.options.pop(spelling, None)
            self.options["max-message-bytes"] = effective_max_message_bytes(
                None if sink_limit is None else int(sink_limit), topic_max_message_bytes=topic_max_message_bytes,
                broker_message_max_bytes=broker_message_max_bytes,
            )
        if not default_topic:
            raise ConfigError("default_topic must be a non-empty Kafka topic name")
        self.default_topic = default_topic
        self.event_router = EventRouter(default_topic, rules)
        self._partitions = self._check_partitions(partitions)
        self.clock = clock
        if claim_check is None and _option(self.options, "large-message-handle-option", "none") == "claim-check":
            uri = _option(self.options, "claim-check-storage-uri", "")
            if uri:
                claim_check = claim_check_store(
                    uri, raw_value=_truthy(_option(self.options, "claim-check-raw-value", False))
                )
        self.claim_check = claim_check
        self._encoders: dict[tuple[str, int], BaseEncoder] = {}
        #: Topics events have been sent to, in first-use order (checkpoint broadcast targets).
        self._topics: dict[str, None] = {}
        self._routes: dict[tuple[str, str], tuple[str, int]] = {}
        self._verified: set[tuple[str, str, int, int]] = set()
        # A codec exposing a BootstrapPolicy (Simple) leaves BOOTSTRAP scheduling to the sink, as TiCDC's
        # bootstrap worker does (§6.3): its encoders get auto_bootstrap=False and the Router broadcasts.
        policy_type = getattr(module, "BootstrapPolicy", None)
        self._encoder_kwargs: dict[str, Any] = {"auto_bootstrap": False} if policy_type is not None else {}
        # Build one encoder up front so option errors surface at construction.
        self._control = self._new_encoder()
        #: The Simple protocol's BOOTSTRAP schedule (None for protocols without BOOTSTRAP messages).
        self.bootstrap_policy: BootstrapSchedule | None = (
            policy_type.from_options(self._control.options) if policy_type is not None else None
        )

    # ------------------------------------------------------------------ configuration
    @staticmethod
    def _check_partitions(partitions: int | Mapping[str, int]) -> int | dict[str, int]:
        counts = partitions.values() if isinstance(partitions, Mapping) else (partitions,)
        for count in counts:
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ConfigError(f"partition counts must be integers >= 1, got {count!r}")
        return dict(partitions) if isinstance(partitions, Mapping) else partitions

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has."""
        if isinstance(self._partitions, int):
            return self._partitions
        return self._partitions.get(topic, DEFAULT_PARTITION_NUM)

    def _new_encoder(self) -> BaseEncoder:
        return make_encoder(self.protocol, self.options, clock=self.clock, claim_check=self.claim_check,
                            **self._encoder_kwargs)

    def _now_ms(self) -> int:
        return (self.clock or system_clock_ms)()

    def _encoder(self, topic: str, partition: int) -> BaseEncoder:
        encoder = self._encoders.get((topic, partition))
        if encoder is None:
            encoder = self._encoders[(topic, partition)] = self._new_encoder()
        return encoder

    def _table_route(self, schema: str, table: str) -> tuple[str, int]:
        route = self._routes.get((schema, table))
        if route is None:
            topic = self.event_router.topic_for_table(schema, table)
            route = self._routes[(schema, table)] = (topic, self.partition_count(topic))
        return route

    def _verify(self, table: TableInfo | None) -> None:
        # tiflow checks each table against its rule when the table is added (EventRouter.VerifyTables);
        # keyed by identity and version so decoded streams (a new TableInfo per message) stay bounded.
        if table is None:
            return
        key = (table.schema, table.table, table.table_id, table.schema_version)
        if key not in self._verified:
            self.event_router.verify_table(table)
            self._verified.add(key)

    def _use_topic(self, topic: str) -> None:
        self._topics.setdefault(topic, None)

    # ------------------------------------------------------------------ routing
    def route(self, events: Iterable[Event]) -> list[KafkaRecord]:
        """Kafka records (offset -1) for ``events``, in the order TiCDC would produce them."""
        records: list[KafkaRecord] = []
        pending: list[RowChange] = []
        for event in events:
            if isinstance(event, RowChange):
                pending.append(event)
                continue
            if pending:
                records.extend(self._route_rows(pending))
                pending = []
            if isinstance(event, DDLEvent):
                records.extend(self._route_ddl(event))
            elif isinstance(event, Watermark):
                # Resolved events arrive periodically in TiCDC: a bootstrap-ticker pass runs here too.
                records.extend(self._route_due_bootstraps())
                records.extend(self._route_watermark(event))
            elif isinstance(event, Bootstrap):
                records.extend(self._route_bootstrap(event))
            else:
                raise TypeError(f"not an event: {type(event).__name__}")
        if pending:
            records.extend(self._route_rows(pending))
        return records

    def topic_for_ddl(self, ddl: DDLEvent) -> str:
        """Go ``GetTopicForDDL``: the pre-table's topic if any, the default topic for a schema-level DDL."""
        if ddl.pre_table_info is not None:
            schema, table = ddl.pre_table_info.schema, ddl.pre_table_info.table
        elif ddl.table_info is not None:
            schema, table = ddl.table_info.schema, ddl.table_info.table
        else:
            schema, table = ddl.schema, ddl.table
        if not table:
            return self.default_topic
        return self._table_route(schema, table)[0]

    def _records(self, topic: str, partitions: Iterable[int], messages: Sequence[Message]) -> Iterator[KafkaRecord]:
        for partition in partitions:
            for message in messages:
                yield KafkaRecord(topic=topic, partition=partition, key=message.key, value=message.value)

    def _route_ddl(self, ddl: DDLEvent) -> list[KafkaRecord]:
        # mq_ddl_sink.go builds a fresh encoder per DDL; a codec that skips the DDL sends nothing.
        messages = self._new_encoder().encode([ddl])
        if not messages:
            return []
        topic = self.topic_for_ddl(ddl)
        self._use_topic(topic)
        if self.protocol in PARTITION_ZERO_DDL_PROTOCOLS:
            partitions: Iterable[int] = (0,)
        else:
            partitions = range(self.partition_count(topic))
        return list(self._records(topic, partitions, messages))

    def _route_watermark(self, watermark: Watermark) -> list[KafkaRecord]:
        messages = self._new_encoder().encode([watermark])
        if not messages:
            return []  # Canal-JSON / Debezium without enable-tidb-extension
        records: list[KafkaRecord] = []
        # mq_ddl_sink.go WriteCheckpointTs: every active topic, then the default topic if not among them.
        for topic in [*self._topics, *([] if self.default_topic in self._topics else [self.default_topic])]:
            records.extend(self._records(topic, range(self.partition_count(topic)), messages))
        return records

    def _route_bootstrap(self, bootstrap: Bootstrap) -> list[KafkaRecord]:
        if self.bootstrap_policy is None:
            return []  # only the Simple protocol has BOOTSTRAP messages (§6.3)
        table = bootstrap.table_info
        topic, partition_num = self._table_route(table.schema, table.table)
        # bootstraper.go generateEvents: one encoded message to every partition of the table's topic,
        # or to partition 0 only with send-bootstrap-to-all-partition=false.
        messages = self._control.encode([bootstrap])
        if not messages:
            return []
        self._use_topic(topic)
        return list(self._records(topic, self.bootstrap_policy.partitions(partition_num), messages))

    def _route_due_bootstraps(self) -> list[KafkaRecord]:
        if self.bootstrap_policy is None or not self.bootstrap_policy.enabled:
            return []
        records: list[KafkaRecord] = []
        for table in self.bootstrap_policy.due(self._now_ms()):
            records.extend(self._route_bootstrap(Bootstrap(table_info=table)))
        return records

    def _bootstraps_before(self, row: RowChange) -> list[KafkaRecord]:
        # bootstraper.go addEvent runs for every row before it is encoded: a new (or forgotten) table,
        # or one whose interval / row count is due, gets a BOOTSTRAP ahead of the row.
        policy = self.bootstrap_policy
        if policy is None or not policy.enabled or row.table_info is None:
            return []
        key = row.physical_table_id or row.table_info.table_id
        if policy.should_emit(row.table_info, self._now_ms(), 1, table_key=key):
            return self._route_bootstrap(Bootstrap(table_info=row.table_info))
        return []

    def _transactions(self, rows: Sequence[RowChange]) -> Iterator[RowChange]:
        # A SingleTableTxn is the rows of one table (physical table) at one commit ts, contiguous in the input.
        start = 0
        while start < len(rows):
            first = rows[start]
            key: _TxnKey = (first.commit_ts, first.schema, first.table, first.physical_table_id)
            end = start + 1
            while end < len(rows) and (
                rows[end].commit_ts, rows[end].schema, rows[end].table, rows[end].physical_table_id
            ) == key:
                end += 1
            yield from split_updates(rows[start:end])
            start = end

    def _route_rows(self, rows: Sequence[RowChange]) -> list[KafkaRecord]:
        placed: list[tuple[_GroupKey, RowChange]] = []
        for row in self._transactions(rows):
            topic, partition_num = self._table_route(row.schema, row.table)
            self._verify(row.table_info)
            partition, partition_key = self.event_router.partition_for_row(row, partition_num)
            self._use_topic(topic)
            placed.append(((topic, partition, partition_key if self.batch_by_partition_key else ""), row))
        records: list[KafkaRecord] = []
        if self.protocol in BATCH_PROTOCOLS:
            for start in range(0, len(placed), FLUSH_BATCH_SIZE):
                groups: dict[_GroupKey, list[RowChange]] = {}
                for group_key, row in placed[start:start + FLUSH_BATCH_SIZE]:
                    groups.setdefault(group_key, []).append(row)
                for (topic, partition, _), group in groups.items():
                    messages = self._encoder(topic, partition).encode(group)
                    records.extend(self._records(topic, (partition,), messages))
        else:
            for (topic, partition, _), row in placed:
                records.extend(self._bootstraps_before(row))
                messages = self._encoder(topic, partition).encode([row])
                records.extend(self._records(topic, (partition,), messages))
        return records


def route_events(
    events: Iterable[Event],
    protocol: str,
    options: Mapping[str, Any] | None = None,
    *,
    default_topic: str,
    rules: Sequence[DispatchRule | Mapping[str, Any]] = (),
    partitions: int | Mapping[str, int] = DEFAULT_PARTITION_NUM,
    clock: Clock | None = None,
    claim_check: ClaimCheckStore | None = None,
) -> list[KafkaRecord]:
    """Kafka records for ``events`` with a one-shot Router (see Router)."""
    router = Router(protocol, options, default_topic=default_topic, rules=rules, partitions=partitions,
                    clock=clock, claim_check=claim_check)
    return router.route(events)
