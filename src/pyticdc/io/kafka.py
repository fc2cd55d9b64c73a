"""Kafka through confluent-kafka (librdkafka): topic partitions, offset ranges, reading a range, producing.

Offsets are given the way Spark's Kafka source takes them:

``startingOffsets``  ``earliest`` | ``latest`` | JSON ``{"topic": {"0": 23, "1": -2}}`` (-2 = earliest,
                     -1 = latest); partitions missing from the JSON start at ``earliest``.
``endingOffsets``    ``latest`` | JSON ``{"topic": {"0": 50, "1": -1}}`` (-1 = latest); exclusive.

Client configuration is librdkafka's (``bootstrap.servers``, ``security.protocol``, ``sasl.mechanism``,
``sasl.username``, ...; see librdkafka's CONFIGURATION.md). The pure functions here (parsing and range
planning) need no broker; the rest import confluent_kafka when called.

The end of a range is the partition's high watermark as the broker reports it. (The tansu broker used
in tests and by ``pyticdc broker`` reports the last batch's base offset + 1, so :func:`producer_config`
sends one record per batch, and :func:`produce_records` checks every partition's end offset after the
flush: a record the broker acknowledged but no reader would reach is an error, not a silent loss.)
"""

from __future__ import annotations

import collections
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Union

import orjson

from pyticdc.errors import ConfigError, KafkaReadError
from pyticdc.model import KafkaRecord

__all__ = [
    "EARLIEST",
    "EXACT_OFFSETS",
    "LATEST",
    "OffsetRange",
    "OffsetSpec",
    "cap_offsets",
    "client_config",
    "consumer_config",
    "create_topic",
    "kafka_options",
    "last_client_log",
    "list_partitions",
    "lookback_chunks",
    "offset_ranges",
    "offsets_from_json",
    "offsets_json",
    "parse_offsets",
    "plan_ranges",
    "produce_records",
    "producer_config",
    "read_range",
    "select_topics",
    "split_range",
    "verify_end_offsets",
    "watermarks",
]

#: Spark's JSON sentinel for "the earliest available offset".
EARLIEST: Final = -2
#: Spark's JSON sentinel for "the latest offset" (the high watermark).
LATEST: Final = -1

TopicPartition = tuple[str, int]
#: ``"earliest"``, ``"latest"`` or a per-partition mapping (topic, partition) → offset or sentinel.
OffsetSpec = Union[str, dict[TopicPartition, int]]


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic partition; ``start`` may be EARLIEST (resolved when read)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Number of offsets in the range (0 when start is unresolved)."""
        return max(0, self.end - self.start) if self.start >= 0 else 0


class _LastLogs(logging.Handler):
    """Keeps librdkafka's last few log lines instead of printing them (one error line says what matters)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: collections.deque[str] = collections.deque(maxlen=8)

    def emit(self, record: logging.LogRecord) -> None:
        """Remember the line's text after its ``[rdkafka#...] [thrd:...]:`` prefixes."""
        self.lines.append(record.getMessage().rpartition("]: ")[2])


_LAST_LOGS: Final = _LastLogs()
#: Where librdkafka's log goes: without it, an unreachable broker prints a FAIL line every retry (~20 a second).
LIBRDKAFKA_LOGGER: Final = logging.getLogger("pyticdc.librdkafka")
LIBRDKAFKA_LOGGER.propagate = False
LIBRDKAFKA_LOGGER.addHandler(_LAST_LOGS)


def client_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with librdkafka's log kept (see :func:`last_client_log`) rather than printed on stderr, unless
    it asks for the log itself (``log_level``, ``debug`` or a ``logger``)."""
    if any(name in config for name in ("logger", "log_level", "debug")):
        return dict(config)
    return {**config, "logger": LIBRDKAFKA_LOGGER}


def last_client_log(client: Any = None) -> str:
    """librdkafka's latest warning or error (``client``: serve its queued log lines first); "" if none."""
    if client is not None:
        try:
            client.poll(0)
        except Exception:  # noqa: BLE001 - only the log matters here; a closed client has nothing more
            pass
    return _LAST_LOGS.lines[-1] if _LAST_LOGS.lines else ""


def _cause(client: Any) -> str:
    line = last_client_log(client)
    return f" (last broker log: {line})" if line else ""


# --------------------------------------------------------------------------- pure: offsets
def parse_offsets(spec: str | None, *, ending: bool, default: str) -> OffsetSpec:
    """Parse a Spark-style ``startingOffsets``/``endingOffsets`` value; ConfigError if invalid."""
    name = "endingOffsets" if ending else "startingOffsets"
    text = (spec if spec is not None else default).strip()
    if text.lower() in ("earliest", "latest"):
        if ending and text.lower() == "earliest":
            raise ConfigError("endingOffsets cannot be 'earliest'; use 'latest' or per-partition JSON")
        return text.lower()
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise ConfigError(
            f"{name} must be 'earliest', 'latest' or JSON like {{\"topic\": {{\"0\": 23}}}}, got {text!r}"
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(f"{name} JSON must map topics to {{partition: offset}} objects")
    offsets: dict[TopicPartition, int] = {}
    for topic, partitions in document.items():
        if not isinstance(partitions, dict):
            raise ConfigError(f"{name}: topic {topic!r} must map partition numbers to offsets")
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                raise ConfigError(f"{name}: partition {partition!r} of {topic!r} is not a number") from None
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise ConfigError(f"{name}: offset of {topic}/{partition} must be an integer >= -2, got {offset!r}")
            if ending and offset == EARLIEST:
                raise ConfigError(f"{name}: -2 (earliest) is not allowed for {topic}/{partition}")
            offsets[(topic, number)] = offset
    return offsets


def offsets_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as Spark's JSON object ``{topic: {"partition": offset}}``, keys sorted."""
    document: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        document.setdefault(topic, {})[str(partition)] = offset
    return document


def offsets_from_json(document: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """Inverse of :func:`offsets_json`."""
    return {(topic, int(p)): int(o) for topic, parts in document.items() for p, o in parts.items()}


def _resolve(
    spec: OffsetSpec, tp: TopicPartition, bounds: tuple[int, int], *, ending: bool, fail_on_data_loss: bool,
) -> int:
    low, high = bounds
    if isinstance(spec, str):
        return low if spec == "earliest" else high
    offset = spec.get(tp, LATEST if ending else EARLIEST)
    if offset == EARLIEST:
        return low
    if offset == LATEST:
        return high
    if not ending and offset < low:
        if fail_on_data_loss:
            raise KafkaReadError(
                f"{tp[0]}/{tp[1]}: starting offset {offset} is before the earliest available offset {low} "
                "(deleted by retention?); set failOnDataLoss=false to start at the earliest"
            )
        return low
    return offset


def plan_ranges(
    bounds: Mapping[TopicPartition, tuple[int, int]], starting: OffsetSpec, ending: OffsetSpec, *,
    fail_on_data_loss: bool = True,
) -> list[OffsetRange]:
    """Offset ranges per partition from (low, high) watermarks and the starting/ending specs.

    Partitions named in a JSON spec but absent from ``bounds`` raise KafkaReadError (Spark does the same);
    empty ranges are kept so callers see every partition.
    """
    for spec, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(bounds))
            if unknown:
                raise KafkaReadError(f"{name} names partitions that do not exist: {unknown}")
    ranges = []
    for tp in sorted(bounds):
        start = _resolve(starting, tp, bounds[tp], ending=False, fail_on_data_loss=fail_on_data_loss)
        end = _resolve(ending, tp, bounds[tp], ending=True, fail_on_data_loss=fail_on_data_loss)
        if end < start:
            raise KafkaReadError(f"{tp[0]}/{tp[1]}: ending offset {end} is before starting offset {start}")
        ranges.append(OffsetRange(tp[0], tp[1], start, end))
    return ranges


def split_range(offset_range: OffsetRange, parts: int) -> list[OffsetRange]:
    """Cut a resolved range into ``parts`` contiguous ranges of near-equal size (for stateless decoding)."""
    if parts <= 1 or offset_range.start < 0 or offset_range.size < 2:
        return [offset_range]
    parts = min(parts, offset_range.size)
    step, extra = divmod(offset_range.size, parts)
    ranges, start = [], offset_range.start
    for index in range(parts):
        end = start + step + (1 if index < extra else 0)
        ranges.append(OffsetRange(offset_range.topic, offset_range.partition, start, end))
        start = end
    return ranges


def cap_offsets(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_offsets: int | None,
) -> dict[TopicPartition, int]:
    """Spark's ``maxOffsetsPerTrigger``: end offsets advancing at most ``max_offsets`` in all.

    The budget is shared in proportion to each partition's backlog (as Spark's Kafka source does); a
    partition missing from ``start`` counts from 0. Never moves an offset backwards.
    """
    if max_offsets is None:
        return dict(latest)
    backlog = {tp: max(0, end - max(0, start.get(tp, 0))) for tp, end in latest.items()}
    total = sum(backlog.values())
    if total <= max_offsets:
        return dict(latest)
    capped: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = max(0, start.get(tp, 0))
        share = int(backlog[tp] * max_offsets / total)
        capped[tp] = min(end, begin + share)
    # Rounding down may leave the whole budget unspent for tiny budgets: always make progress somewhere.
    if all(capped[tp] <= max(0, start.get(tp, 0)) for tp in latest):
        tp = max(latest, key=lambda k: backlog[k])
        capped[tp] = max(0, start.get(tp, 0)) + min(backlog[tp], max(1, max_offsets))
    return capped


def select_topics(topics: Mapping[str, int], *, subscribe: str | None = None, pattern: str | None = None,
                  assign: str | None = None) -> list[TopicPartition]:
    """Topic partitions chosen by exactly one of Spark's ``subscribe``, ``subscribePattern``, ``assign``.

    ``topics`` maps every existing topic to its partition count.
    """
    given = [name for name, value in (("subscribe", subscribe), ("subscribePattern", pattern), ("assign", assign))
             if value]
    if len(given) != 1:
        raise ConfigError("give exactly one of the options subscribe, subscribePattern, assign"
                          + (f" (got {', '.join(given)})" if given else ""))
    if subscribe:
        names = [t.strip() for t in subscribe.split(",") if t.strip()]
        missing = [t for t in names if t not in topics]
        if missing:
            raise KafkaReadError(f"topics not found on the broker: {', '.join(missing)}")
        return [(t, p) for t in names for p in range(topics[t])]
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"subscribePattern {pattern!r} is not a regular expression: {exc}") from None
        return [(t, p) for t in sorted(topics) if regex.fullmatch(t) for p in range(topics[t])]
    assert assign is not None
    try:
        document = orjson.loads(assign)
    except orjson.JSONDecodeError:
        raise ConfigError(f"assign must be JSON like {{\"topic\": [0, 1]}}, got {assign!r}") from None
    if not isinstance(document, dict) or not all(isinstance(v, list) for v in document.values()):
        raise ConfigError(f"assign must be JSON like {{\"topic\": [0, 1]}}, got {assign!r}")
    chosen = [(str(t), int(p)) for t, parts in document.items() for p in parts]
    missing_tp = [tp for tp in chosen if tp[0] not in topics or tp[1] >= topics[tp[0]]]
    if missing_tp:
        raise KafkaReadError(f"assigned partitions not found on the broker: {missing_tp}")
    return sorted(chosen)


# --------------------------------------------------------------------------- confluent-kafka I/O
def consumer_config(config: Mapping[str, Any], *, group_id_prefix: str = "pyticdc") -> dict[str, Any]:
    """A consumer configuration for reading by assignment: no group commits, a throwaway group id."""
    if not config.get("bootstrap.servers"):
        raise ConfigError("the Kafka option bootstrap.servers (kafka.bootstrap.servers in Spark) is required")
    merged: dict[str, Any] = {
        "group.id": f"{group_id_prefix}-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        # EOF events tell a range reader the partition has nothing more, instead of waiting out a timeout.
        "enable.partition.eof": True,
        "fetch.max.bytes": 64 << 20,
    }
    merged.update(config)
    return merged


def _consumer(config: Mapping[str, Any]) -> Any:
    from confluent_kafka import Consumer

    return Consumer(client_config(consumer_config(config)))


def list_partitions(config: Mapping[str, Any], *, timeout: float = 10.0) -> dict[str, int]:
    """Every topic (internal ones excluded) → its partition count."""
    consumer = _consumer(config)
    try:
        try:
            metadata = consumer.list_topics(timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - KafkaException and friends: name the broker
            raise KafkaReadError(f"cannot list topics at {config.get('bootstrap.servers')}: {exc}"
                                 f"{_cause(consumer)}") from None
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()
                if not name.startswith("__") and topic.error is None}
    finally:
        consumer.close()


def watermarks(
    config: Mapping[str, Any], partitions: Iterable[TopicPartition], *, timeout: float = 10.0,
) -> dict[TopicPartition, tuple[int, int]]:
    """(low, high) watermark offsets of each partition."""
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer = _consumer(config)
    try:
        bounds = {}
        for topic, partition in partitions:
            try:
                low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, partition), timeout=timeout)
            except Exception as exc:  # noqa: BLE001 - surface librdkafka's reason with the partition
                raise KafkaReadError(
                    f"cannot read watermarks of {topic}/{partition}: {exc}{_cause(consumer)}") from None
            bounds[(topic, partition)] = (int(low), int(high))
        return bounds
    finally:
        consumer.close()


def offset_ranges(
    config: Mapping[str, Any], *, subscribe: str | None = None, pattern: str | None = None,
    assign: str | None = None, starting: str | None = None, ending: str | None = None,
    fail_on_data_loss: bool = True, timeout: float = 10.0,
) -> list[OffsetRange]:
    """Resolved offset ranges of the chosen partitions (defaults: earliest to latest)."""
    partitions = select_topics(list_partitions(config, timeout=timeout), subscribe=subscribe, pattern=pattern,
                               assign=assign)
    return plan_ranges(
        watermarks(config, partitions, timeout=timeout),
        parse_offsets(starting, ending=False, default="earliest"),
        parse_offsets(ending, ending=True, default="latest"),
        fail_on_data_loss=fail_on_data_loss,
    )


def read_range(
    config: Mapping[str, Any], offset_range: OffsetRange, *, poll_timeout: float = 60.0, batch_size: int = 4096,
    fail_on_data_loss: bool = True,
) -> Iterator[KafkaRecord]:
    """The records of one offset range, in offset order.

    Stops at ``end`` or when the partition has nothing more (EOF below ``end`` after records were
    deleted, or a range ending on transaction markers). KafkaReadError when no message or EOF arrives
    for ``poll_timeout`` seconds, or when offsets before ``end`` are gone and ``fail_on_data_loss``.
    """
    from confluent_kafka import OFFSET_BEGINNING, KafkaError
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    topic, partition, start, end = offset_range.topic, offset_range.partition, offset_range.start, offset_range.end
    if end <= 0 or (start >= 0 and start >= end):
        return
    consumer = _consumer(config)
    try:
        first = OFFSET_BEGINNING if start == EARLIEST else start
        consumer.assign([KafkaTopicPartition(topic, partition, first)])
        expected = start
        deadline = time.monotonic() + poll_timeout
        while True:
            # Ask for no more than the range still holds: consume() waits for num_messages (or its timeout),
            # so a larger batch would idle a second at the end of every range. Offsets are consecutive but
            # for gaps (compaction, transaction markers), which only make a batch fall short; the first call
            # of a range starting at EARLIEST, whose first offset is unknown, asks for one.
            wanted = 1 if expected < 0 else max(1, min(batch_size, end - expected))
            messages = consumer.consume(num_messages=wanted, timeout=1.0)
            if not messages:
                if time.monotonic() > deadline:
                    raise KafkaReadError(
                        f"{topic}/{partition}: no data for {poll_timeout:.0f}s while reading offsets "
                        f"[{start}, {end}) (next {expected}); raise kafkaConsumer.pollTimeoutMs?"
                    )
                continue
            deadline = time.monotonic() + poll_timeout
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        if message.offset() < end and fail_on_data_loss:
                            raise KafkaReadError(
                                f"{topic}/{partition}: the partition ends at {message.offset()} but the range "
                                f"asks for offsets up to {end} (topic recreated or truncated?); "
                                "set failOnDataLoss=false to read what is there"
                            )
                        return
                    raise KafkaReadError(f"{topic}/{partition}: {error}")
                offset = message.offset()
                if offset >= end:
                    return
                if offset > expected >= 0 and fail_on_data_loss and expected == start:
                    raise KafkaReadError(
                        f"{topic}/{partition}: offset {start} is gone (the first available is {offset}); "
                        "set failOnDataLoss=false to skip lost offsets"
                    )
                _, timestamp = message.timestamp()
                yield KafkaRecord(topic=topic, partition=partition, offset=offset, key=message.key(),
                                  value=message.value(), timestamp_ms=timestamp if timestamp > 0 else 0)
                expected = offset + 1
                if expected >= end:
                    return
    finally:
        consumer.close()


def lookback_chunks(
    config: Mapping[str, Any], topic: str, partition: int, before: int, *, limit: int = 100_000,
    first_chunk: int = 1000, poll_timeout: float = 60.0,
) -> Iterator[list[KafkaRecord]]:
    """Earlier records of a partition, newest chunk first (each chunk in offset order, 4x the previous).

    Reads at most ``limit`` offsets before ``before`` and never before the earliest available offset: a
    stateful decoder uses it to find the BOOTSTRAP/DDL messages of rows it could not type.
    """
    if limit <= 0 or before <= 0:
        return
    low, _ = watermarks(config, [(topic, partition)])[(topic, partition)]
    end, window, scanned = before, max(1, first_chunk), 0
    while end > low and scanned < limit:
        begin = max(low, end - min(window, limit - scanned))
        yield list(read_range(config, OffsetRange(topic, partition, begin, end), poll_timeout=poll_timeout,
                              fail_on_data_loss=False))
        scanned += end - begin
        end, window = begin, window * 4


#: Producer settings under which every acknowledged record is readable on every broker pyticdc meets: one
#: record per batch (tansu reports a partition's end as its last batch's base offset + 1, so a batch of n
#: records would hide n - 1 of them from every reader).
EXACT_OFFSETS: Final[dict[str, Any]] = {"batch.num.messages": 1, "linger.ms": 0}


def producer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A producer configuration that keeps every record's order within its partition and every record readable
    (:data:`EXACT_OFFSETS`); ``config`` may override any of it (:func:`produce_records` still checks the end)."""
    if not config.get("bootstrap.servers"):
        raise ConfigError("the Kafka option bootstrap.servers is required")
    return {"enable.idempotence": False, "max.in.flight.requests.per.connection": 1, **EXACT_OFFSETS, **config}


#: librdkafka properties only a producer knows (a consumer given them logs a warning per property).
_PRODUCER_ONLY: Final = frozenset({
    "batch.num.messages", "batch.size", "linger.ms", "queue.buffering.max.ms", "enable.idempotence",
    "max.in.flight.requests.per.connection", "max.in.flight", "acks", "request.required.acks", "compression.type",
    "compression.codec", "queue.buffering.max.messages", "queue.buffering.max.kbytes", "message.timeout.ms",
    "delivery.timeout.ms", "retries", "message.send.max.retries", "retry.backoff.ms", "partitioner",
    "sticky.partitioning.linger.ms", "transactional.id", "transaction.timeout.ms", "enable.gapless.guarantee",
})


def verify_end_offsets(config: Mapping[str, Any], delivered: Iterable[KafkaRecord], *, timeout: float = 10.0) -> None:
    """Check that every partition written ends past the last offset the broker acknowledged there.

    KafkaReadError names each partition whose end offset (high watermark) is short of it: records beyond
    the end are acknowledged but no reader reaches them (e.g. tansu with several records per batch).
    """
    last: dict[TopicPartition, int] = {}
    for record in delivered:
        tp = (record.topic, record.partition)
        if record.offset >= 0 and record.offset >= last.get(tp, -1):
            last[tp] = record.offset
    if not last:
        return
    reader = {k: v for k, v in config.items() if k not in _PRODUCER_ONLY}
    ends = watermarks(reader, sorted(last), timeout=timeout)
    short = [f"{topic}/{partition} ends at {ends[(topic, partition)][1]}, acknowledged up to offset {offset}"
             for (topic, partition), offset in sorted(last.items()) if ends[(topic, partition)][1] <= offset]
    if short:
        raise KafkaReadError(
            f"records were acknowledged but are not readable: {'; '.join(short[:3])}"
            f"{f' (and {len(short) - 3} more partitions)' if len(short) > 3 else ''}; produce one record per batch "
            f"({', '.join(f'{k}={v}' for k, v in EXACT_OFFSETS.items())})")


def produce_records(
    config: Mapping[str, Any], records: Iterable[KafkaRecord], *, flush_timeout: float = 60.0,
    on_progress: Callable[[int], None] | None = None, verify: bool = True,
) -> list[KafkaRecord]:
    """Produce records to their topic and partition; returns them with the offsets the broker gave.

    Raises KafkaReadError if any record fails, the flush does not finish in ``flush_timeout`` or (``verify``)
    a partition's end offset is short of what the broker acknowledged (:func:`verify_end_offsets`).
    """
    from confluent_kafka import Producer

    producer = Producer(client_config(producer_config(config)))
    sent: list[KafkaRecord] = []
    delivered: dict[int, KafkaRecord] = {}
    failures: list[str] = []

    def report(index: int, record: KafkaRecord) -> Callable[[Any, Any], None]:
        def done(error: Any, message: Any) -> None:
            if error is not None:
                failures.append(f"{record.topic}/{record.partition}: {error}")
                return
            _, timestamp = message.timestamp()
            delivered[index] = KafkaRecord(
                topic=record.topic, partition=message.partition(), offset=message.offset(), key=record.key,
                value=record.value, timestamp_ms=timestamp if timestamp > 0 else record.timestamp_ms)
        return done

    for index, record in enumerate(records):
        sent.append(record)
        kwargs: dict[str, Any] = {"key": record.key, "value": record.value,
                                  "on_delivery": report(index, record)}
        if record.partition >= 0:
            kwargs["partition"] = record.partition
        if record.timestamp_ms:
            kwargs["timestamp"] = record.timestamp_ms
        while True:
            try:
                producer.produce(record.topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.5)  # local queue full: wait for deliveries, then retry
        producer.poll(0)
        if on_progress is not None:
            on_progress(index + 1)
    remaining = producer.flush(flush_timeout)
    if remaining:
        raise KafkaReadError(f"{remaining} records were not delivered within {flush_timeout:.0f}s{_cause(producer)}")
    if failures:
        raise KafkaReadError(f"{len(failures)} records failed: {'; '.join(failures[:3])}")
    acknowledged = [delivered[i] for i in range(len(sent))]
    if verify:
        verify_end_offsets(config, acknowledged)
    return acknowledged


def create_topic(config: Mapping[str, Any], topic: str, partitions: int = 3, *, timeout: float = 30.0) -> None:
    """Create ``topic`` with ``partitions`` partitions (replication 1); no error if it already exists."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(client_config(config))
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=timeout)
    try:
        futures[topic].result(timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - KafkaException wraps the broker's error code
        error = exc.args[0] if exc.args else None
        if getattr(error, "code", lambda: None)() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise KafkaReadError(f"cannot create topic {topic!r}: {exc}{_cause(admin)}") from None


def kafka_options(options: Mapping[str, str], prefix: str = "kafka.") -> dict[str, str]:
    """librdkafka configuration from Spark-style ``kafka.``-prefixed options (prefix removed)."""
    return {name[len(prefix):]: value for name, value in options.items() if name.lower().startswith(prefix)}

