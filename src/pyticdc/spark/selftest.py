"""The oracle on Spark: a simulated workload with faults, replicated to Delta with crashes, compared with the truth.

For each (protocol, dispatcher, seed) of ``pyticdc selftest --engine spark``:

1. simulate a TiDB workload (every column type, DDL, key changes) and route it through TiCDC's routing
   and codec to per-partition Kafka logs;
2. inject the producer faults of the plan (duplicated records, TiCDC restarts re-sending from an older
   checkpoint with stale watermarks, replayed ranges, garbage) and write the logs, interleaved, to a
   capture file;
3. replicate it with :class:`~pyticdc.spark.replication.SparkReplication` (the ``pyticdc`` data source on
   local Spark, the consumer engine, the Delta applier) in small batches, killing the job at chosen
   points — one of them always between a batch's table commits and its progress commit, the others
   before or after a table commit or right after a progress commit — and restarting it from the
   warehouse alone, re-reading the input from the start (Kafka redelivery);
4. after every committed batch whose tables are settled (none ahead of the progress), compare every
   Delta table with the truth at the progress' consistent ts, typed the way the replica types it; at the
   end, require the final watermark, an exact match and exactly the injected garbage in quarantine.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pyticdc.model import physical_ms
from pyticdc.replica.applier import SimulatedCrash
from pyticdc.replica.check import projection_options
from pyticdc.replica.selftest import TruthCheck, check_sources, log_partition_counts

__all__ = ["CRASH_POINTS", "CrashPlan", "SparkOracleReport", "check_history_on_spark"]

#: Where a crash can be injected (hook points of :class:`pyticdc.replica.DeltaReplica`).
CRASH_POINTS: Final = ("before-progress", "after-table-commit", "before-table-commit", "after-progress")


@dataclass
class CrashPlan:
    """Crashes to inject: ``(point, n)`` kills the job at the n-th time the pipeline reaches ``point``."""

    crashes: list[tuple[str, int]] = field(default_factory=list)
    #: Crashes that happened, in order, with their details.
    happened: list[str] = field(default_factory=list)
    _seen: dict[str, int] = field(default_factory=dict)
    _batch_wrote: bool = False

    @classmethod
    def random(cls, count: int, rng: random.Random, batches: int) -> CrashPlan:
        """``count`` crashes spread over about ``batches`` batches; the first planned between data and progress."""
        crashes: list[tuple[str, int]] = []
        for index in range(count):
            point = "before-progress" if index == 0 else rng.choice(CRASH_POINTS)
            reach = max(1, batches // 2) if point in ("before-progress", "after-progress") else max(2, batches * 3)
            crashes.append((point, rng.randint(1, reach)))
        return cls(crashes=crashes)

    def hook(self, point: str, detail: Mapping[str, Any]) -> None:
        """The replica's hook: counts the points reached and raises SimulatedCrash at the planned ones."""
        if point == "after-table-commit":
            self._batch_wrote = True
        if point == "before-progress" and not self._batch_wrote:
            return  # the crash between data and progress must follow a batch that wrote data
        self._seen[point] = self._seen.get(point, 0) + 1
        for index, (planned, nth) in enumerate(self.crashes):
            if planned == point and self._seen[point] >= nth:
                del self.crashes[index]
                self.happened.append(f"{point} {dict(detail)}")
                self._batch_wrote = False
                raise SimulatedCrash(point)
        if point == "after-progress":
            self._batch_wrote = False


@dataclass
class SparkOracleReport:
    """What one Spark oracle run did."""

    protocol: str
    seed: int
    records: int = 0
    row_events: int = 0
    batches: int = 0
    checks: int = 0
    crashes: list[str] = field(default_factory=list)
    quarantined: int = 0
    seconds: float = 0.0


def check_history_on_spark(
    spark: Any, history: Any, protocol: str, options: Mapping[str, Any] | None = None, *, plan: Any = None,
    seed: int = 0, partitions: int = 3, rules: Sequence[Mapping[str, Any]] = (), workdir: str | Path | None = None,
    batches: int = 8, crash_plan: CrashPlan | None = None, engine: str = "driver", modelling: Any = None,
    kafka: Mapping[str, str] | None = None, reader: str = "pyticdc",
) -> SparkOracleReport:
    """Produce with faults, replicate on Spark with crashes and compare; OracleMismatch on a difference.

    ``engine``: the apply engine of :class:`~pyticdc.spark.replication.SparkReplication`. ``modelling``
    (:class:`pyticdc.replica.modelling.Modelling`): the replica is compared with the truth transformed the
    same way (live rows of soft-deleted tables, metadata columns checked; see
    :func:`pyticdc.replica.check.check_modelling`). ``kafka``: client settings of a broker
    (``bootstrap.servers``): the faulty logs go to a new topic there, read by ``reader`` (``pyticdc`` or
    Spark's ``format("kafka")``), instead of a capture file.
    """
    from pyticdc.codec import make_encoder
    from pyticdc.io.capture import write_capture
    from pyticdc.replica.check import unsettled_tables
    from pyticdc.sim import FaultPlan, TruthProjector, inject, interleave, produce, with_offsets
    from pyticdc.spark.replication import ReplicationSource, SparkReplication

    started = time.perf_counter()
    plan = plan or FaultPlan()
    options = dict(options or {})
    rng = random.Random(seed)
    fixed = physical_ms(history.final_resolved_ts)

    def clock() -> int:
        return fixed

    topic = f"selftest-{protocol}-{seed}-{uuid.uuid4().hex[:8]}" if kafka else "sim"
    logs = with_offsets(inject(produce(history, protocol, options, topic=topic, partitions=partitions, rules=rules,
                                       clock=clock), plan, rng))
    stream = interleave(logs, rng, max_run=plan.max_run)
    report = SparkOracleReport(protocol=protocol, seed=seed, records=len(stream), row_events=history.row_events)
    own = workdir is None
    root = Path(tempfile.mkdtemp(prefix="pyticdc-selftest-")) if workdir is None else Path(workdir)
    try:
        capture = root / "capture.jsonl"
        warehouse = root / "warehouse"
        shutil.rmtree(warehouse, ignore_errors=True)
        write_capture(capture, stream)
        # What the replica holds: it reads some values back from the DDL (Debezium without the extension).
        projector = TruthProjector(make_encoder(protocol, projection_options(protocol, options), clock=clock))
        if crash_plan is None:
            crash_plan = CrashPlan.random(plan.crashes, rng, batches)
            if engine == "delta-spark" and plan.crashes:
                # Its MERGEs commit one table at a time on the driver: a kill between two of them too.
                crash_plan.crashes.append(("after-table-merge", rng.randint(1, max(2, batches))))
        label = f"{protocol} seed={history.seed}/{seed}"
        time_zone = str(options.get("time-zone", "UTC"))

        check = TruthCheck(label, warehouse, history, projector, time_zone, modelling)

        def on_batch(batch: Any) -> None:
            report.batches += 1
            if not unsettled_tables(warehouse):
                check(batch.consistent_ts, f"after batch {batch.version}")

        if kafka:
            from pyticdc.io.kafka import EXACT_OFFSETS, create_topic, produce_records

            create_topic(kafka, topic, partitions)
            produce_records({**kafka, **EXACT_OFFSETS}, [r for log in logs.values() for r in log])
            source = ReplicationSource.kafka_topics(protocol, options, kafka, topics=topic, reader=reader)
        else:
            source = ReplicationSource.capture(protocol, options, capture)
        size = max(20, len(stream) // max(1, batches))
        counts = log_partition_counts(logs)
        final = None
        while True:
            job = SparkReplication(spark, source, warehouse, batch_records=size, hook=crash_plan.hook,
                                   on_batch=on_batch, partitions=counts, engine=engine, modelling=modelling)
            try:
                reports = job.run()
            except SimulatedCrash:
                continue  # the process died: a new one starts from what the warehouse holds
            final = reports[-1]
            break
        report.crashes = list(crash_plan.happened)
        report.quarantined = check.finish(final.consistent_ts, plan.garbage)
        report.checks = check.checks
        if modelling is not None and {"_source_topic", "_source_partition", "_source_offset"} & set(
                modelling.metadata_columns):
            check_sources(warehouse, logs, protocol, options, label)  # each row names a record carrying it
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report
