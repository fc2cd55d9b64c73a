"""Spark replication: a TiCDC topic (or capture files) in, one Delta replica table per upstream table out.

Batch (until the latest offsets) or Structured Streaming (``foreachBatch``); exactly once either way::

    from pyticdc.spark import spark_session
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    spark = spark_session()
    source = ReplicationSource.kafka("canal-json", {"enable-tidb-extension": "true"},
                                     {"bootstrap.servers": "broker:9092"}, topics="cdc")
    job = SparkReplication(spark, source, "/data/warehouse")
    job.run()                                  # batch: everything up to the latest offsets, then return
    query = job.start_stream(trigger_seconds=5)  # or keep replicating

Spark reads the records (the ``pyticdc`` data source with ``output=records``, one task per Kafka
partition range or capture-file split); each batch then goes through the same pure functions as the
Python consumer — :class:`pyticdc.replica.Replicator`, i.e. the consumer engine's watermarks,
de-duplication, ordering and DDL barriers, and the Delta applier. The consumer's rules are one ordered
merge of every partition, so they run where the batch meets (the driver, like Delta's own MERGE
planning); Spark adds the parallel reads, the offsets and the triggers, not rules.

Kafka records are read by the ``pyticdc`` data source (confluent-kafka in the Python workers, no jars) or,
with ``reader="kafka"``, by Spark's own Kafka source ``format("kafka")`` (spark-sql-kafka-0-10 on the
classpath: ``python3 run.py`` provisions it, see :func:`pyticdc.spark.session.provisioned_jars`). Either way
:func:`replication_sink` is also the ``foreachBatch`` function of a user's own
``spark.readStream.format("kafka")`` query (same columns).

Exactly once: each batch commits its tables, then the progress (consumer state included) in
``<warehouse>/_pyticdc/progress``; a batch re-run after a crash re-applies nothing a table already holds
(see :mod:`pyticdc.replica.applier`). The streaming checkpoint (``<warehouse>/_pyticdc/checkpoint``)
only saves re-reading: the progress decides, and a query started without checkpoint begins at the
progress' offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pyticdc.codec import canonical_protocol
from pyticdc.consumer.engine import carries_watermarks
from pyticdc.errors import ConfigError
from pyticdc.io.chunks import chunked
from pyticdc.model import KafkaRecord
from pyticdc.replica.applier import Hook
from pyticdc.replica.maintenance import TableOptions
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.pipeline import BatchReport, Replicator
from pyticdc.replica.storage import RemotePath, location
from pyticdc.replica.storage import storage_options as storage_options_for
from pyticdc.replica.store import APP_ID, DeltaStore
from pyticdc.spark.capture import CaptureCopy, CopyBatch, write_copy

#: Row groups of the capture's Parquet copy (distributed engine): what a batch reads beyond its offsets.
_CAPTURE_ROW_GROUP_BYTES = 8 << 20
#: Fewest records per file of the capture's Parquet copy (a batch's share of a file is 1/4 of a core's).
_CAPTURE_FILE_MIN_RECORDS = 5_000

__all__ = ["DEFAULT_BATCH_RECORDS", "DEFAULT_DISTRIBUTED_BATCH_RECORDS", "READERS", "ReplicationSource",
           "SparkReplication", "capture_partitions", "read_records", "replication_sink"]

TopicPartition = tuple[str, int]
#: Records per batch of the driver engine when nothing else is said: bounds the driver's memory (a batch is
#: held to interleave its partitions) while keeping per-batch costs (Spark job, Delta commits) small next to the work.
DEFAULT_BATCH_RECORDS = 200_000
#: Records per batch of the distributed engines when nothing else is said. Their driver holds only a batch's
#: metadata and the executors spill, so the size only trades latency for the per-batch costs: a few Spark jobs,
#: code generated for each query, and a MERGE that rewrites the files holding the keys it updates (each batch
#: rewrites the tables' files again). 1M records measured 25% faster than 200k on the 1M-row benchmark.
DEFAULT_DISTRIBUTED_BATCH_RECORDS = 1_000_000
#: Apply engines: ``driver`` (the reference: records decoded and applied by the driver), ``distributed``
#: (decode, de-dup, net change and MERGE in the executors: :mod:`pyticdc.spark.apply`), ``delta-spark`` (the
#: distributed plan with MERGE INTO by Delta on Spark: :mod:`pyticdc.spark.apply.delta_spark`), ``auto``.
ENGINES = ("driver", "distributed", "delta-spark", "auto")
_RECORDS_DDL = "key binary, value binary, topic string, partition int, offset bigint"
#: What reads Kafka: the ``pyticdc`` data source (confluent-kafka) or Spark's JVM ``format("kafka")``.
READERS = ("pyticdc", "kafka")
#: librdkafka settings Spark's Kafka source refuses (it manages offsets and deserialisation itself).
JVM_REFUSED = frozenset({"auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.deserializer",
                         "interceptor.classes"})


@dataclass(frozen=True)
class ReplicationSource:
    """Where the records come from: Kafka topics or capture files, and how they are encoded."""

    protocol: str
    #: TiCDC codec options (``enable-tidb-extension``, ``time-zone``, ...).
    options: Mapping[str, str] = field(default_factory=dict)
    #: librdkafka configuration (``bootstrap.servers`` at least) for Kafka; empty for capture files.
    kafka: Mapping[str, str] = field(default_factory=dict)
    #: Comma-separated topics, or a regular expression with ``pattern``.
    topics: str | None = None
    pattern: str | None = None
    #: Capture files: a file, a directory or a glob (comma-separated for several).
    paths: str | None = None
    capture_format: str = "auto"
    #: Extra ``pyticdc`` data source options (``failOnDataLoss``, ``kafkaConsumer.pollTimeoutMs``...).
    reader_options: Mapping[str, str] = field(default_factory=dict)
    #: What reads Kafka (:data:`READERS`): ``"pyticdc"`` or Spark's ``format("kafka")``; capture files: pyticdc.
    reader: str = "pyticdc"

    @classmethod
    def kafka_topics(cls, protocol: str, options: Mapping[str, Any] | None, kafka: Mapping[str, str], *,
                     topics: str | None = None, pattern: str | None = None,
                     reader: str = "pyticdc") -> ReplicationSource:
        """Kafka topics (``topics`` comma-separated, or a ``pattern``), read by ``reader`` (:data:`READERS`)."""
        if not kafka.get("bootstrap.servers"):
            raise ConfigError("Kafka needs bootstrap.servers")
        if (topics is None) == (pattern is None):
            raise ConfigError("give exactly one of topics and pattern")
        if reader not in READERS:
            raise ConfigError(f"unknown Kafka reader {reader!r}; valid: {', '.join(READERS)}")
        return cls(protocol=canonical_protocol(protocol), options=_text_options(options), kafka=dict(kafka),
                   topics=topics, pattern=pattern, reader=reader)

    @classmethod
    def capture(cls, protocol: str, options: Mapping[str, Any] | None, paths: str | Path | Sequence[str | Path], *,
                capture_format: str = "auto") -> ReplicationSource:
        """Capture files (``pyticdc capture`` JSON Lines, Parquet, ``kcat -J``)."""
        joined = str(paths) if isinstance(paths, (str, Path)) else ",".join(str(p) for p in paths)
        return cls(protocol=canonical_protocol(protocol), options=_text_options(options), paths=joined,
                   capture_format=capture_format)

    @property
    def is_kafka(self) -> bool:
        """Whether the records come from Kafka."""
        return bool(self.kafka)

    @property
    def uses_jvm_kafka(self) -> bool:
        """Whether Spark's own ``format("kafka")`` reads the records."""
        return self.is_kafka and self.reader == "kafka"

    def jvm_options(self) -> dict[str, str]:
        """Options of Spark's ``format("kafka")`` reading the same topics (Kafka client settings as ``kafka.*``)."""
        options = {f"kafka.{k}": str(v) for k, v in self.kafka.items() if k not in JVM_REFUSED}
        options.update({k: str(v) for k, v in self.reader_options.items()})
        if self.topics:
            options["subscribe"] = self.topics
        else:
            assert self.pattern is not None
            options["subscribePattern"] = self.pattern
        return options

    def spark_options(self) -> dict[str, str]:
        """Options of the ``pyticdc`` data source reading the raw records."""
        options = {"protocol": self.protocol, **{k: str(v) for k, v in self.options.items()}, "output": "records",
                   **{k: str(v) for k, v in self.reader_options.items()}}
        if self.is_kafka:
            options.update({f"kafka.{k}": str(v) for k, v in self.kafka.items()})
            if self.topics:
                options["subscribe"] = self.topics
            else:
                assert self.pattern is not None
                options["subscribePattern"] = self.pattern
        else:
            assert self.paths is not None
            options.update({"path": self.paths, "captureFormat": self.capture_format})
        return options

    def describe(self) -> dict[str, Any]:
        """What the progress records about the source."""
        where = ({"kafka": self.kafka.get("bootstrap.servers"), "topics": self.topics or self.pattern,
                  "reader": self.reader} if self.is_kafka else {"files": self.paths})
        return {"protocol": self.protocol, **where}

    def kafka_partitions(self) -> list[TopicPartition]:
        """The Kafka partitions this source reads (asks the broker)."""
        from pyticdc.io.kafka import list_partitions, select_topics

        return select_topics(list_partitions(dict(self.kafka)), subscribe=self.topics, pattern=self.pattern)


def _text_options(options: Mapping[str, Any] | None) -> dict[str, str]:
    out = {}
    for name, value in (options or {}).items():
        out[str(name)] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _counts(partitions: Iterable[TopicPartition]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic, partition in partitions:
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    return counts


def capture_partitions(paths: str | Sequence[str | Path], capture_format: str = "auto") -> dict[str, int]:
    """Partition count of every topic in capture files (a scan of the topic and partition fields only).

    The consumer needs every partition before its first record: a partition it met late would have its
    early rows judged against a global watermark that never waited for it.
    """
    import gzip

    from pyticdc.io.capture import capture_files, detect_format, import_parquet

    seen: set[TopicPartition] = set()
    for path in capture_files(list(paths) if not isinstance(paths, str) else paths):
        if detect_format(path, capture_format) == "parquet":
            table = import_parquet().read_table(path, columns=["topic", "partition"])
            pairs = table.group_by(["topic", "partition"]).aggregate([]).to_pylist()
            # A row without its topic or partition is no record (the reader quarantines it).
            seen.update((row["topic"], int(row["partition"])) for row in pairs
                        if row["topic"] is not None and row["partition"] is not None)
            continue
        opener: Any = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    envelope = orjson.loads(line)
                    seen.add((envelope["topic"], int(envelope["partition"])))
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue  # a malformed line: the source quarantines it
    return _counts((topic, partition) for topic, partition in seen if partition >= 0)


def _has_lines(paths: str | Sequence[str | Path] | None, capture_format: str = "auto") -> bool:
    """Whether capture files hold anything at all (a Parquet row, or a line that is not blank)."""
    from pyticdc.io.capture import CaptureSplit, capture_files, detect_format, read_split

    for path in capture_files(list(paths or ()) if not isinstance(paths, str) else paths):
        for _ in read_split(CaptureSplit(str(path), detect_format(path, capture_format)), lenient=True):
            return True
    return False


def read_records(df: Any, *, bounded: bool = True) -> Iterator[KafkaRecord]:
    """The records of a DataFrame with the Kafka source columns, on the driver.

    ``bounded`` (a batch of known size: Kafka offset ranges, a micro-batch): collected as Arrow in one Spark
    job, every partition read in parallel. Otherwise (a whole capture) streamed one Spark partition at a time,
    so the driver never holds more than one.
    """
    from pyticdc.io.capture import arrow_to_records
    from pyticdc.spark.sinks import arrow_batches

    columns = [c for c in ("key", "value", "topic", "partition", "offset", "timestamp") if c in df.columns]
    selected = df.select(*columns)
    if bounded:
        for batch in selected.toArrow().to_batches():
            yield from arrow_to_records(batch)
        return
    for batch in _prefetched(arrow_batches(selected), PREFETCH_BATCHES):
        yield from arrow_to_records(batch)


#: Arrow batches read ahead of the pipeline when streaming a capture (about 8k records each).
PREFETCH_BATCHES = 32
_END = object()


def _prefetched(items: Iterator[Any], size: int) -> Iterator[Any]:
    # Spark computes the next partition only when asked (toLocalIterator prefetches one): a thread asking
    # for them as fast as the bounded queue allows keeps the executors reading while the driver applies.
    import queue
    import threading

    buffer: queue.Queue[Any] = queue.Queue(maxsize=size)
    failure: list[BaseException] = []
    stop = threading.Event()

    def pump() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        buffer.put(item, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread, which raises it
            failure.append(exc)
        finally:
            while not stop.is_set():
                try:
                    buffer.put(_END, timeout=0.5)
                    break
                except queue.Full:
                    continue

    thread = threading.Thread(target=pump, name="pyticdc-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = buffer.get()
            if item is _END:
                if failure:
                    raise failure[0]
                return
            yield item
    finally:
        stop.set()


def _json(offsets: Mapping[TopicPartition, int]) -> str:
    from pyticdc.io.kafka import offsets_json

    return orjson.dumps(offsets_json(offsets)).decode()


def _merge_engine(spark: Any, engine: str) -> str:
    """Who MERGEs for ``engine``: ``delta-spark`` (checked: ``spark`` runs Delta on Spark) or ``delta-rs``."""
    if engine != "delta-spark":
        return "delta-rs"
    from pyticdc.spark.session import DELTA_PACKAGE, has_delta

    if not has_delta(spark):
        raise ConfigError("engine 'delta-spark' needs a session with Delta on Spark: the delta-spark jar "
                          f"({DELTA_PACKAGE}, which python3 run.py provisions in .jars/spark) and its extension and "
                          "catalog, e.g. pyticdc.spark.session.spark_session(delta=True)")
    return "delta-spark"


class SparkReplication:
    """A replication job: ``source`` → the Delta replica in ``warehouse``, with Spark reading the records.

    ``tables``: TiDB table-filter patterns (default every table). ``batch_records``: records per batch
    (and ``maxOffsetsPerTrigger`` when streaming; default :data:`DEFAULT_BATCH_RECORDS` on the driver engine,
    :data:`DEFAULT_DISTRIBUTED_BATCH_RECORDS` on the distributed ones). ``on_batch`` is called with each committed
    batch's report (progress display). ``hook``: see :class:`pyticdc.replica.DeltaReplica` (crash tests).
    ``warehouse``: a directory or an object-store URL (``s3://bucket/wh``; ``storage_options`` are delta-rs'
    own, see :mod:`pyticdc.replica.storage`); an object store is written by the driver engine only.
    ``modelling``: metadata columns, soft deletes, key overrides, TRUNCATE handling, history tables
    (:class:`pyticdc.replica.modelling.Modelling`), on every engine (the distributed one folds history tables in
    its executors, :mod:`pyticdc.spark.apply.history`).
    ``engine``: ``auto`` (the default) is ``distributed`` wherever it applies to the source and options, else
    ``driver``; ``driver``, ``distributed`` and ``delta-spark`` are chosen as said or refused with the reason.
    """

    def __init__(
        self, spark: Any, source: ReplicationSource, warehouse: str | Path, *, tables: Sequence[str] | None = None,
        time_zone: str | None = None, batch_records: int | None = None, hook: Hook | None = None,
        on_batch: Callable[[BatchReport], None] | None = None, app_id: str = APP_ID,
        partitions: Mapping[str, int] | None = None, engine: str = "auto",
        storage_options: Mapping[str, str] | None = None, modelling: Modelling | None = None,
        table_options: TableOptions | None = None, starting_offsets: str | None = None,
        ending_offsets: str | None = None,
    ) -> None:
        from pyticdc.io.kafka import parse_offsets

        #: Kafka offsets to read from (where the progress is not further) and to stop at, in Spark's syntax;
        #: ``None``: earliest and latest (validated now: a bad spec is a ConfigError before any work).
        self.starting_offsets = parse_offsets(starting_offsets, ending=False, default="earliest")
        self.ending_offsets = parse_offsets(ending_offsets, ending=True, default="latest")
        if batch_records is not None and batch_records < 1:
            raise ConfigError("batch_records must be >= 1")
        if engine not in ENGINES:
            raise ConfigError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        #: Who MERGEs in the distributed plan: delta-rs in the executors, or Delta on Spark (``delta-spark``).
        self.merge = _merge_engine(spark, engine)
        engine = "distributed" if engine == "delta-spark" else engine
        #: Metadata columns, soft deletes, key overrides, TRUNCATE handling (:mod:`pyticdc.replica.modelling`).
        self.modelling = modelling or Modelling()
        #: Partitioning, table properties, OPTIMIZE/VACUUM schedule (:mod:`pyticdc.replica.maintenance`).
        self.table_options = table_options
        if engine == "distributed" and self.modelling.driver_only:
            raise ConfigError(f"engine 'distributed' does not implement {', '.join(self.modelling.driver_only)} yet: "
                              "use engine 'driver' (or 'auto')")
        if source.uses_jvm_kafka:
            from pyticdc.spark.session import has_kafka_source

            if not has_kafka_source(spark):
                raise ConfigError(
                    'reader "kafka" needs Spark\'s Kafka source (spark-sql-kafka-0-10) on the classpath: python3 '
                    "run.py provisions it in .jars/spark, or set spark.jars.packages="
                    f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark.version}")
        self.spark = spark
        self.source = source
        #: delta-rs storage options of the warehouse (environment for S3, then the ones given).
        self.storage_options = storage_options_for(str(location(warehouse)), storage_options)
        self.warehouse = location(warehouse, self.storage_options)
        remote = isinstance(self.warehouse, RemotePath)
        if remote and engine == "distributed":
            # Its staging is Parquet written by Spark executors: an object store would need Hadoop's connector.
            raise ConfigError("engine 'distributed' writes to local or mounted warehouses only; "
                              f"{self.warehouse} is replicated by the driver engine")
        if engine == "distributed" and not carries_watermarks(source.protocol, source.options):
            # Its plan releases by the global watermark; batch consistency is the driver engine's.
            raise ConfigError(f"engine 'distributed' needs watermarks, which {source.protocol} without "
                              "enable-tidb-extension does not carry: use engine 'driver' (or 'auto', which picks it)")
        self.tables = list(tables) if tables else None
        self.time_zone = time_zone
        self.hook = hook
        self.on_batch = on_batch
        self.app_id = app_id
        self._partitions = dict(partitions) if partitions else None
        from pyticdc.spark.apply import supports

        #: ``driver`` (records to the driver, the reference) or ``distributed`` (executors; ``auto`` picks it
        #: for every protocol it supports).
        self.engine = ("distributed" if supports(source.protocol) and not remote and not self.modelling.driver_only
                       and carries_watermarks(source.protocol, source.options) else "driver") \
            if engine == "auto" else engine
        #: Records per batch (the engine's default when not given).
        self.batch_records = batch_records if batch_records is not None else (
            DEFAULT_BATCH_RECORDS if self.engine == "driver" else DEFAULT_DISTRIBUTED_BATCH_RECORDS)
        self._replicator: Any = None
        #: Reports of the batches this job committed.
        self.reports: list[BatchReport] = []

    # ------------------------------------------------------------------ pieces
    def partitions(self) -> dict[str, int]:
        """Partition count of every topic read (Kafka: from the broker; capture files: from the records)."""
        if self._partitions is None:
            if self.source.is_kafka:
                self._partitions = _counts(self.source.kafka_partitions())
            else:
                assert self.source.paths is not None
                self._partitions = capture_partitions(self.source.paths, self.source.capture_format)
            # A capture of lines that are all no record still runs: they go to the quarantine.
            if not self._partitions and (
                    self.source.is_kafka or not _has_lines(self.source.paths, self.source.capture_format)):
                raise ConfigError(f"no records to replicate in {self.source.describe()}")
        return dict(self._partitions)

    def replicator(self) -> Any:
        """The pipeline of this job (a new one, resumed from the committed progress, after a failure)."""
        if (self._replicator is None or self._replicator.broken) and self.engine == "distributed":
            from pyticdc.spark.apply import DistributedReplicator

            self._replicator = DistributedReplicator(
                self.spark, str(self.warehouse), self.source.protocol, self.source.options,
                partitions=self.partitions(),
                tables=self.tables, time_zone=self.time_zone, hook=self.hook, app_id=self.app_id,
                source=self.source.describe(), modelling=self.modelling, table_options=self.table_options,
                merge=self.merge)
        if self._replicator is None or self._replicator.broken:
            self._replicator = Replicator(
                self.warehouse, self.source.protocol, self.source.options, partitions=self.partitions(),
                tables=self.tables, time_zone=self.time_zone, hook=self.hook, app_id=self.app_id,
                source=self.source.describe(), storage_options=self.storage_options, modelling=self.modelling,
                table_options=self.table_options)
        return self._replicator

    def _options(self) -> tuple[str, dict[str, str]]:
        if self.source.uses_jvm_kafka:
            return "kafka", self.source.jvm_options()
        return "pyticdc", self.source.spark_options()

    def _reader(self, **extra: str) -> Any:
        name, options = self._options()
        reader = self.spark.read.format(name)
        for key, value in {**options, **extra}.items():
            reader = reader.option(key, value)
        return reader.load()

    def _process(self, records: Iterable[KafkaRecord] | Any) -> BatchReport:
        # A DataFrame or copy files for the distributed engine (the records stay in the executors), records for
        # the driver's.
        distributed = hasattr(records, "mapInArrow") or isinstance(records, CopyBatch)
        if self.engine == "distributed" and not distributed:
            records = self.spark.createDataFrame([], _RECORDS_DDL)
        elif self.engine == "driver" and hasattr(records, "mapInArrow"):
            records = read_records(records)
        report: BatchReport = self.replicator().process(records)
        self.reports.append(report)
        if self.on_batch is not None:
            self.on_batch(report)
        return report

    # ------------------------------------------------------------------ batch
    def run(self) -> list[BatchReport]:
        """Replicate everything there is now (Kafka: up to the latest offsets at the start); the batch reports."""
        reports: list[BatchReport] = []
        if self.source.is_kafka:
            reports.extend(self._run_kafka())
        else:
            reports.extend(self._run_capture())
        return reports

    def _run_kafka(self) -> Iterator[BatchReport]:
        from pyticdc.io.kafka import EARLIEST, cap_offsets, plan_ranges, watermarks

        bounds = watermarks(dict(self.source.kafka), self.source.kafka_partitions())
        planned = {(r.topic, r.partition): r for r in plan_ranges(bounds, self.starting_offsets, self.ending_offsets,
                                                                  fail_on_data_loss=False)}
        ends = {tp: planned[tp].end for tp in bounds}
        processed = False
        while True:
            replicator = self.replicator()
            offsets = replicator.next_offsets()
            # The progress decides; a later --starting-offsets skips ahead (never back: that would re-apply).
            start = {tp: max(offsets.get(tp, 0), planned[tp].start) for tp in ends}
            if all(start[tp] >= end for tp, end in ends.items()):
                if not processed:
                    # Nothing new: still one batch, so what a resumed state releases is committed.
                    yield self._process(())
                return
            stop = cap_offsets(start, ends, self.batch_records)
            # A partition never read starts at its earliest offset (retention may have deleted offset 0).
            first = {tp: (EARLIEST if offset == 0 else offset) for tp, offset in start.items()}
            df = self._reader(startingOffsets=_json(first), endingOffsets=_json(stop))
            yield self._process(df)
            processed = True

    def _run_capture(self) -> Iterator[BatchReport]:
        from pyspark.sql import functions as F

        if self.engine == "distributed":
            yield from self._run_capture_distributed()
            return
        replicator = self.replicator()
        df = self._reader()
        # Records a committed batch consumed are skipped by the consumer anyway; filtering them in Spark
        # spares shipping them to the driver after a restart.
        done = [(tp, offset) for tp, offset in replicator.next_offsets().items() if offset > 0]
        if done:
            condition = None
            for (topic, partition), offset in done:
                clause = (F.col("topic") == topic) & (F.col("partition") == partition) & (F.col("offset") < offset)
                condition = clause if condition is None else condition | clause
            assert condition is not None
            df = df.where(~condition)
        processed = False
        for chunk in chunked(read_records(df, bounded=False), self.batch_records):
            processed = True
            yield self._process(chunk)
        if not processed:
            yield self._process(())

    def _run_capture_distributed(self) -> Iterator[BatchReport]:
        import shutil
        import uuid

        # The files are parsed once, into Parquet in the warehouse (pyticdc.spark.capture). The copy comes before
        # the replicator: its files name every partition, which the replicator needs first (without the copy,
        # that is a scan of every line on the driver).
        root = Path(str(DeltaStore(self.warehouse, storage_options=self.storage_options).internal_path("capture")))
        shutil.rmtree(root, ignore_errors=True)  # a killed run's copy (one replication per warehouse)
        folder = root / uuid.uuid4().hex
        # Files of a few batch fractions each: a batch reads only the files of its offsets, and Spark splits
        # those evenly among its cores (splits of the whole copy would give one task most of a batch's rows).
        parallelism = max(1, int(self.spark.sparkContext.defaultParallelism))
        per_file = max(_CAPTURE_FILE_MIN_RECORDS, self.batch_records // (4 * parallelism))
        try:
            copy = write_copy(self.spark, self.source.spark_options(), folder, per_file, _CAPTURE_ROW_GROUP_BYTES)
            if self._partitions is None:
                self._partitions = _counts((topic, partition) for _path, held in copy.files
                                           for topic, partition, _first, _last in held if partition >= 0)
                if not copy.files:  # lines that are no record still run: they go to the quarantine
                    raise ConfigError(f"no records to replicate in {self.source.describe()}")
            yield from self._capture_batches(copy)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _capture_batches(self, copy: CaptureCopy) -> Iterator[BatchReport]:
        from pyticdc.io.kafka import cap_offsets

        # Batches are offset ranges per partition (about batch_records records each), read by the executors;
        # the driver knows each partition's last offset from the copy's files. Lines that are no record
        # (partition -1) go with the first batch.
        ends = copy.last_offsets()
        first = True
        while True:
            start = self.replicator().next_offsets()
            begins = {tp: start.get(tp, 0) for tp in ends}
            todo = {tp: begin for tp, begin in begins.items() if begin <= ends[tp]}
            if not todo and not first:
                return
            # The budget is shared in proportion to each partition's backlog (as for Kafka), so a batch ends at
            # about the same commit ts in every partition: equal shares would run the partitions carrying more
            # rows per ts behind, and hold the others' rows above the watermark for the next batch.
            stops = cap_offsets(begins, {tp: last + 1 for tp, last in ends.items()}, self.batch_records)
            batch = copy.batch({tp: (begin, stops[tp]) for tp, begin in todo.items()}, lines=first)
            first = False
            yield self._process(batch)
            if not todo:
                return

    # ------------------------------------------------------------------ streaming
    def foreach_batch(self, batch_df: Any, batch_id: int) -> None:
        """The ``foreachBatch`` function: one micro-batch of raw records → one committed replica batch."""
        del batch_id  # the progress, not Spark's batch id, says what is applied
        if self.source.is_kafka:
            # Topics may have gained partitions since the query started.
            self.replicator().extend_partitions(_counts(self.source.kafka_partitions()))
        self._process(batch_df)

    def start_stream(self, *, trigger_seconds: float = 5.0, checkpoint: str | Path | None = None,
                     available_now: bool = False) -> Any:
        """Start a Structured Streaming query replicating continuously; returns the StreamingQuery.

        ``available_now``: process what is there now in micro-batches, then stop.
        """
        name, options = self._options()
        reader = self.spark.readStream.format(name)
        if self.source.is_kafka:
            from pyticdc.io.kafka import EARLIEST

            # Where the progress is (a partition never read: its earliest offset, retention may have moved it).
            offsets = self.replicator().next_offsets()
            if isinstance(self.starting_offsets, dict):
                # Named offsets skip ahead of the progress, never back.
                offsets = {tp: max(o, self.starting_offsets.get(tp, 0)) for tp, o in offsets.items()}
            options["startingOffsets"] = _json({tp: EARLIEST if o == 0 else o for tp, o in offsets.items()})
            options["maxOffsetsPerTrigger"] = str(self.batch_records)
        for key, value in options.items():
            reader = reader.option(key, value)
        if checkpoint is not None:
            checkpoint_dir: Any = Path(checkpoint)
        elif isinstance(self.warehouse, RemotePath):
            # Spark cannot write s3:// without Hadoop's connector; the progress in the warehouse, not this
            # checkpoint, says where to resume (startingOffsets above), so a fresh local one is as good.
            import tempfile

            checkpoint_dir = Path(tempfile.mkdtemp(prefix="pyticdc-checkpoint-"))
        else:
            checkpoint_dir = self.warehouse / "_pyticdc" / "checkpoint"
        writer = (reader.load().writeStream.foreachBatch(self.foreach_batch)
                  .option("checkpointLocation", str(checkpoint_dir)).queryName(f"pyticdc-replicate-{self.app_id}"))
        writer = writer.trigger(availableNow=True) if available_now else \
            writer.trigger(processingTime=f"{trigger_seconds} seconds")
        return writer.start()


def replication_sink(
    warehouse: str | Path, protocol: str, options: Mapping[str, Any] | None = None, *,
    partitions: Mapping[str, int], tables: Sequence[str] | None = None, time_zone: str | None = None,
    app_id: str = APP_ID, on_batch: Callable[[BatchReport], None] | None = None, engine: str = "driver",
    modelling: Modelling | None = None, storage_options: Mapping[str, str] | None = None,
) -> Callable[[Any, int], None]:
    """A ``foreachBatch`` function replicating micro-batches of raw Kafka records (JVM ``format("kafka")`` too).

    ``partitions``: partition count of every subscribed topic. ``engine``: as :class:`SparkReplication`'s
    (``distributed`` keeps the records in the executors; ``delta-spark`` too, with MERGE INTO by Delta on
    Spark: the query's session must have it). ``warehouse`` may be an object-store URL
    (``storage_options``: as :class:`SparkReplication`'s). The returned function keeps one pipeline for the
    query and rebuilds it from the committed progress after a failed batch.
    """
    from pyticdc.spark.apply import supports

    storage = storage_options_for(str(location(warehouse)), storage_options)
    remote = isinstance(location(warehouse), RemotePath)
    if remote and engine in ("distributed", "delta-spark"):
        raise ConfigError(f"engine {engine!r} writes to local or mounted warehouses only; {warehouse} is "
                          "replicated by the driver engine")

    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
    # Delta on Spark is checked on the first micro-batch's session (the query's).
    merge = "delta-spark" if engine == "delta-spark" else "delta-rs"
    engine = "distributed" if engine == "delta-spark" else engine
    modelling = modelling or Modelling()
    if engine == "distributed" and modelling.driver_only:
        raise ConfigError(f"engine 'distributed' does not implement {', '.join(modelling.driver_only)} yet: "
                          "use engine 'driver' (or 'auto')")
    chosen = ("distributed" if supports(protocol) and not modelling.driver_only and not remote
              and carries_watermarks(protocol, options) else "driver") if engine == "auto" else engine
    state: dict[str, Any] = {}

    def write_batch(batch_df: Any, batch_id: int) -> None:
        """Replicate one micro-batch (the progress, not ``batch_id``, says what is applied)."""
        del batch_id
        replicator = state.get("pipeline")
        if replicator is None or replicator.broken:
            if chosen == "distributed":
                from pyticdc.spark.apply import DistributedReplicator

                replicator = DistributedReplicator(batch_df.sparkSession, warehouse, protocol, options,
                                                   partitions=partitions, tables=tables, time_zone=time_zone,
                                                   app_id=app_id, modelling=modelling,
                                                   merge=_merge_engine(batch_df.sparkSession, merge))
            else:
                replicator = Replicator(warehouse, protocol, options, partitions=partitions, tables=tables,
                                        time_zone=time_zone, app_id=app_id, modelling=modelling,
                                        storage_options=storage)
            state["pipeline"] = replicator
        report: BatchReport = replicator.process(batch_df if chosen == "distributed" else read_records(batch_df))
        if on_batch is not None:
            on_batch(report)
    return write_batch
