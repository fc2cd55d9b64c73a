"""Options of the ``pyticdc`` Spark data source, parsed and checked without Spark (pure).

``spark.read.format("pyticdc")`` / ``spark.readStream.format("pyticdc")`` take (names case-insensitive):

Decoding
    ``protocol``                  required: ``open-protocol`` | ``canal-json`` | ``craft`` | ``debezium`` |
                                  ``simple`` (TiCDC's names)
    any TiCDC codec option        e.g. ``enable-tidb-extension``, ``encoding-format``,
                                  ``large-message-handle-option``, ``claim-check-storage-uri``, ``time-zone``:
                                  passed to the decoder; an unknown name fails when the query is defined
    ``output``                    ``events`` (default): one row per decoded event (see
                                  :mod:`pyticdc.arrow.rows`); ``records``: the raw Kafka records with the Kafka
                                  source's columns, for :func:`pyticdc.spark.frames.decode_kafka` or archiving
    ``batchRows``                 rows per Arrow batch handed to Spark (default 8192)

Kafka (read with confluent-kafka inside the executors; one Spark task per partition range)
    ``kafka.bootstrap.servers``   required for Kafka; every other ``kafka.<name>`` option is passed to
                                  librdkafka as ``<name>`` (``kafka.security.protocol``, ``kafka.sasl.*``)
    ``subscribe``                 comma-separated topics; or ``subscribePattern`` (regex, full match);
                                  or ``assign`` (JSON ``{"topic": [0, 1]}``): exactly one of the three
    ``startingOffsets``           ``earliest`` | ``latest`` | JSON ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest,
                                  -1 latest); default ``earliest`` for batch, ``latest`` for streaming
    ``endingOffsets``             batch only: ``latest`` (default) | JSON with -1 for latest; exclusive
    ``failOnDataLoss``            ``true`` (default): fail when requested offsets were deleted; ``false``
                                  reads what is left
    ``maxOffsetsPerTrigger``      streaming: at most this many offsets per micro-batch (shared across
                                  partitions in proportion to their backlog); default unlimited
    ``minPartitions``             split partition ranges into at least this many tasks (stateless protocols
                                  only: Simple keeps one task per partition so its schema cache sees every
                                  message in order)
    ``schemaLookback``            Simple: rows whose BOOTSTRAP/DDL is not in their range (a stream resumed or
                                  started at ``latest``) make the task read up to this many earlier offsets of
                                  the partition, newest first, to find their schema (default 100000; 0 = off:
                                  such rows go to quarantine)
    ``kafkaConsumer.pollTimeoutMs``  give up when a partition delivers nothing for this long (default 60000)
    ``groupIdPrefix``             prefix of the throwaway consumer group id (default ``pyticdc``); nothing is
                                  committed to it: Structured Streaming checkpoints the offsets

Capture files (``pyticdc capture`` JSON Lines, Parquet with the Kafka columns, ``kcat -J``)
    ``path``                      file, directory or glob; several comma-separated (or ``.load(path)``)
    ``captureFormat``             ``auto`` (default) | ``jsonl`` | ``parquet`` | ``kcat``
    ``maxPartitionBytes``         largest byte range one task reads (default 64 MiB); JSON Lines files
                                  are split at line boundaries, Parquet by row groups; Simple files are
                                  never split
    ``minPartitions``             also applies: split files so at least this many tasks run (default: the
                                  number of cores of the planning process)

Streaming over capture files picks up new files in name order: name them so new ones sort last.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from pyticdc.codec import canonical_protocol, codec_module
from pyticdc.errors import ConfigError

__all__ = ["SOURCE_OPTIONS", "SourceOptions", "is_stateful"]

#: Data-source options that are not codec options (lower case; ``kafka.*`` is a prefix).
SOURCE_OPTIONS: Final = frozenset({
    "protocol", "output", "batchrows", "path", "paths", "captureformat", "maxpartitionbytes", "minpartitions",
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets", "failondataloss",
    "maxoffsetspertrigger", "kafkaconsumer.polltimeoutms", "groupidprefix", "schemalookback",
})
#: Options Spark itself adds to every source; ignored.
_SPARK_OWN: Final = frozenset({"__path__", "inferschema"})
OUTPUTS: Final = ("events", "records")


def is_stateful(protocol: str) -> bool:
    """Whether the protocol's decoder learns schemas from earlier messages (Simple), so order matters."""
    return hasattr(codec_module(protocol), "resolve_row")


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name.lower())
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"option {name}: expected true or false, got {value!r}")
    return text == "true"


def _int(options: Mapping[str, str], name: str, default: int | None, minimum: int = 1) -> int | None:
    value = options.get(name.lower())
    if value is None or str(value).strip() == "":
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"option {name}: expected an integer, got {value!r}") from None
    if number < minimum:
        raise ConfigError(f"option {name}: must be >= {minimum}, got {number}")
    return number


@dataclass(frozen=True)
class SourceOptions:
    """The resolved options of one ``pyticdc`` source (picklable: it travels to the executors)."""

    protocol: str
    codec_options: dict[str, str] = field(default_factory=dict)
    output: str = "events"
    batch_rows: int = 8192
    #: librdkafka configuration (``kafka.`` prefix removed); empty for capture files.
    kafka: dict[str, str] = field(default_factory=dict)
    subscribe: str | None = None
    subscribe_pattern: str | None = None
    assign: str | None = None
    starting_offsets: str | None = None
    ending_offsets: str | None = None
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    poll_timeout_ms: int = 60000
    schema_lookback: int = 100_000
    group_id_prefix: str = "pyticdc"
    paths: str | None = None
    capture_format: str = "auto"
    max_partition_bytes: int = 64 << 20

    @property
    def is_kafka(self) -> bool:
        """Whether the source is a Kafka cluster (else capture files)."""
        return bool(self.kafka)

    @property
    def stateful(self) -> bool:
        """Whether decoding needs each partition's records in order in one task."""
        return is_stateful(self.protocol)

    @property
    def client_config(self) -> dict[str, str]:
        """librdkafka configuration; a fresh ``<groupIdPrefix>-<random>`` group id unless one is given."""
        config = dict(self.kafka)
        config.setdefault("group.id", f"{self.group_id_prefix}-{uuid.uuid4().hex[:12]}")
        return config

    @classmethod
    def parse(cls, options: Mapping[str, str], *, check_decoder: bool = True) -> SourceOptions:
        """Options from Spark's option map; ConfigError naming the problem otherwise."""
        lowered = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        protocol = lowered.get("protocol")
        if not protocol:
            raise ConfigError("option protocol is required: one of open-protocol, canal-json, craft, debezium, simple")
        protocol = canonical_protocol(protocol)
        kafka = {k[len("kafka."):]: v for k, v in lowered.items() if k.startswith("kafka.")}
        codec = {k: v for k, v in lowered.items()
                 if k not in SOURCE_OPTIONS and k not in _SPARK_OWN and not k.startswith("kafka.")}
        if check_decoder:
            from pyticdc.arrow.rows import new_decoder

            new_decoder(protocol, codec)  # ConfigError for an unknown or invalid codec option, now
        output = lowered.get("output", "events").lower()
        if output not in OUTPUTS:
            raise ConfigError(f"option output: expected one of {', '.join(OUTPUTS)}, got {output!r}")
        paths = lowered.get("path") or lowered.get("paths")
        if kafka and paths:
            raise ConfigError("give either kafka.bootstrap.servers (Kafka) or path (capture files), not both")
        if kafka and not kafka.get("bootstrap.servers"):
            raise ConfigError("option kafka.bootstrap.servers is required to read Kafka")
        if not kafka and not paths:
            raise ConfigError("no source: set kafka.bootstrap.servers and subscribe, or path (capture files)")
        fmt = lowered.get("captureformat", "auto").lower()
        if fmt not in ("auto", "jsonl", "parquet", "kcat"):
            raise ConfigError(f"option captureFormat: expected auto, jsonl, parquet or kcat, got {fmt!r}")
        min_partitions = _int(lowered, "minPartitions", None)
        if min_partitions is None and not kafka:
            min_partitions = os.cpu_count() or 1
        return cls(
            protocol=protocol, codec_options=codec, output=output,
            batch_rows=_int(lowered, "batchRows", 8192) or 8192, kafka=kafka,
            subscribe=lowered.get("subscribe"), subscribe_pattern=lowered.get("subscribepattern"),
            assign=lowered.get("assign"), starting_offsets=lowered.get("startingoffsets"),
            ending_offsets=lowered.get("endingoffsets"),
            fail_on_data_loss=_bool(lowered, "failOnDataLoss", True),
            max_offsets_per_trigger=_int(lowered, "maxOffsetsPerTrigger", None),
            min_partitions=min_partitions,
            poll_timeout_ms=_int(lowered, "kafkaConsumer.pollTimeoutMs", 60000) or 60000,
            schema_lookback=_int(lowered, "schemaLookback", 100_000, minimum=0) or 0,
            group_id_prefix=lowered.get("groupidprefix", "pyticdc"),
            paths=paths, capture_format=fmt,
            max_partition_bytes=_int(lowered, "maxPartitionBytes", 64 << 20) or 64 << 20,
        )
