"""Options of the ``pyticdc`` Spark data source, parsed and checked without Spark (pure).

``spark.read.format("pyticdc")`` / ``spark.readStream.format("pyticdc")`` take the options of
:data:`OPTIONS` (names case-insensitive), plus ``kafka.<name>`` (librdkafka settings) and any TiCDC codec
option of the protocol (``enable-tidb-extension``, ``time-zone``...: passed to the decoder; an unknown
name fails when the query is defined). ``python -m pyticdc.spark.options --markdown`` prints them as the
tables of ``docs/spark.md`` (a test keeps the two equal).

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

__all__ = ["OPTIONS", "SOURCE_OPTIONS", "SourceOption", "SourceOptions", "is_stateful", "options_markdown"]


@dataclass(frozen=True)
class SourceOption:
    """One data-source option: its name as documented, default, where it applies and what it means."""

    name: str
    default: str
    #: ``all``, ``kafka`` or ``files``.
    applies: str
    meaning: str


#: Every data-source option that is not a codec option, in the order ``docs/spark.md`` lists them.
OPTIONS: Final[tuple[SourceOption, ...]] = (
    SourceOption("protocol", "(required)", "all",
                 "`open-protocol`, `canal-json`, `craft`, `debezium` or `simple` (TiCDC's names; `_` for `-` too)"),
    SourceOption("output", "`events`", "all",
                 "`events`: one row per decoded event; `records`: the raw Kafka records with the columns of "
                 "Spark's Kafka source (for `decode_kafka` or archiving); a capture line that is not a record is "
                 "one of partition -1, its byte position (a Parquet capture's: its row) as offset, the line as "
                 "value and the reason as key"),
    SourceOption("batchRows", "`8192`", "all", "rows per Arrow batch handed to Spark"),
    SourceOption("minPartitions", "Kafka: one task per partition range; files: the planning process' cores",
                 "all", "split Kafka ranges and files into at least this many tasks; Simple (which learns schemas "
                 "from earlier messages) keeps one task per Kafka partition range and per file, in order"),
    SourceOption("kafka.bootstrap.servers", "(required for Kafka)", "kafka",
                 "brokers; every other `kafka.<name>` is passed to librdkafka as `<name>` "
                 "(`kafka.security.protocol`, `kafka.sasl.*`)"),
    SourceOption("subscribe", "", "kafka",
                 "comma-separated topics; exactly one of `subscribe`, `subscribePattern`, `assign`"),
    SourceOption("subscribePattern", "", "kafka", "a regular expression topics match in full"),
    SourceOption("assign", "", "kafka", "JSON `{\"topic\": [0, 1]}`: these partitions only"),
    SourceOption("startingOffsets", "batch `earliest`, streaming `latest`", "kafka",
                 "`earliest`, `latest` or JSON `{\"topic\": {\"0\": 23, \"1\": -2}}` (-2 earliest, -1 latest); "
                 "a streaming query uses it only without checkpoint"),
    SourceOption("endingOffsets", "`latest`", "kafka",
                 "batch only: `latest` or JSON with -1 for latest; exclusive"),
    SourceOption("failOnDataLoss", "`true`", "kafka",
                 "fail when requested offsets were deleted by retention; `false` reads what is left"),
    SourceOption("maxOffsetsPerTrigger", "unlimited", "kafka",
                 "streaming: at most this many offsets per micro-batch, shared across partitions in proportion "
                 "to their backlog"),
    SourceOption("schemaLookback", "`100000`", "kafka",
                 "Simple: rows whose BOOTSTRAP or DDL is not in their range (a stream resumed or started at "
                 "`latest`) make the task read up to this many earlier offsets of the partition, newest first; "
                 "0 = off: such rows become `error` rows"),
    SourceOption("kafkaConsumer.pollTimeoutMs", "`60000`", "kafka",
                 "give up when a partition delivers nothing for this long"),
    SourceOption("groupIdPrefix", "`pyticdc`", "kafka",
                 "prefix of the throwaway consumer group id; nothing is committed to it (Spark checkpoints "
                 "the offsets)"),
    SourceOption("path", "(required for files)", "files",
                 "capture file, directory or glob; several comma-separated; `.load(path)` sets it too"),
    SourceOption("captureFormat", "`auto`", "files",
                 "`auto`, `jsonl` (`pyticdc capture`), `parquet` (Spark's Kafka columns) or `kcat` (`kcat -J`)"),
    SourceOption("maxPartitionBytes", "`67108864` (64 MiB)", "files",
                 "largest byte range one task reads: JSON Lines split at line boundaries, Parquet by row "
                 "groups; Simple files are never split"),
)
_APPLIES: Final = {"all": "Kafka and files", "kafka": "Kafka", "files": "capture files"}

#: Data-source options that are not codec options (lower case; ``kafka.*`` is a prefix).
SOURCE_OPTIONS: Final = frozenset(
    {o.name.lower() for o in OPTIONS if not o.name.startswith("kafka.")} | {"paths"})
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


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def options_markdown() -> str:
    """The data-source and type-mapping options as the Markdown tables of ``docs/spark.md``."""
    from pyticdc.arrow.types import TYPE_OPTIONS

    lines = ["| option | default | applies to | meaning |", "|---|---|---|---|"]
    lines += [f"| `{o.name}` | {_cell(o.default)} | {_APPLIES[o.applies]} | {_cell(o.meaning)} |" for o in OPTIONS]
    lines += ["", "| type-mapping option | default | values | meaning |", "|---|---|---|---|"]
    lines += [f"| `{name}` | `{default}` | {', '.join(f'`{c}`' for c in choices)} | {_cell(meaning)} |"
              for name, default, choices, meaning in TYPE_OPTIONS]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--markdown"]:
        print("usage: python -m pyticdc.spark.options --markdown", file=sys.stderr)
        raise SystemExit(2)
    sys.stdout.write(options_markdown())
