"""The oracle on Delta without Spark: a simulated workload with faults, replicated with crashes, checked.

:func:`check_history_on_delta` is ``pyticdc selftest``'s check of the replica tables themselves (the pure
Python engine checks the consumer with an in-memory replica): the workload is routed and encoded, the
producer faults of the plan are injected, and the records are replicated by
:class:`~pyticdc.replica.Replicator` in batches, the job killed at random commit points and restarted from
the warehouse alone (re-reading everything, as Kafka would redeliver). After every settled batch and at the
end each Delta table is compared with the simulator's truth transformed as the :class:`Modelling` says:
soft-deleted replicas by their live rows (the soft-deleted ones checked to be keys no live row has),
key-overridden ones by the same rows with no digest column, metadata columns by what they must hold
(:func:`pyticdc.replica.check.check_modelling`).
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pyticdc.consumer import handle_columns
from pyticdc.errors import DecodeError, OracleMismatch
from pyticdc.model import KafkaRecord, RowChange, physical_ms
from pyticdc.replica.applier import SimulatedCrash
from pyticdc.replica.check import compare_replica, projection_options, unsettled_tables
from pyticdc.replica.modelling import SOURCE_COLUMNS, Modelling
from pyticdc.replica.pipeline import Replicator
from pyticdc.replica.store import DeltaStore

__all__ = ["DeltaOracleReport", "check_history_on_delta", "check_sources"]

_POINTS: Final = ("before-table-commit", "after-table-commit", "before-progress", "after-progress")


@dataclass
class DeltaOracleReport:
    """What one Delta oracle run did."""

    protocol: str
    seed: int
    records: int = 0
    batches: int = 0
    checks: int = 0
    crashes: list[str] = field(default_factory=list)
    quarantined: int = 0


class _Crashes:
    """Kills the job the n-th time it reaches a commit point, for each planned (point, n)."""

    def __init__(self, count: int, rng: random.Random) -> None:
        self.planned = [(rng.choice(_POINTS), rng.randint(1, 6)) for _ in range(count)]
        self.seen: dict[str, int] = {}
        self.happened: list[str] = []

    def hook(self, point: str, detail: Mapping[str, Any]) -> None:
        self.seen[point] = self.seen.get(point, 0) + 1
        for index, (planned, nth) in enumerate(self.planned):
            if planned == point and self.seen[point] >= nth:
                del self.planned[index]
                self.happened.append(f"{point} {dict(detail)}")
                raise SimulatedCrash(point)


def log_partition_counts(logs: Mapping[tuple[str, int], Any]) -> dict[str, int]:
    """Topic → partition count of produced logs keyed by (topic, partition), empty partitions included."""
    counts: dict[str, int] = {}
    for topic, partition in logs:
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    return counts


class TruthCheck:
    """The Delta replica in ``warehouse`` against the truth, transformed by ``modelling``, at a consistent ts."""

    def __init__(self, label: str, warehouse: Path, history: Any, projector: Any, time_zone: str,
                 modelling: Modelling | None) -> None:
        self.label, self.warehouse, self.history, self.projector = label, warehouse, history, projector
        self.time_zone, self.modelling = time_zone, modelling
        #: id of a table info → (the info, how the replica finds its rows; see _find_by).
        self._found_by: dict[int, tuple[Any, tuple[str, ...] | None]] = {}
        #: How many comparisons passed.
        self.checks = 0

    def __call__(self, consistent_ts: int, where: str) -> None:
        """Compare at ``consistent_ts``; OracleMismatch naming ``where`` and the first difference."""
        if self.modelling is not None and self.modelling.schema_evolution == "add-only":
            from pyticdc.sim.oracle import add_only_truth

            truth = add_only_truth(self.history, consistent_ts)  # dropped columns kept, as the replica keeps them
        else:
            truth = self.history.truth_at(consistent_ts)
        difference = compare_replica(self.warehouse, self.projector.snapshot(truth),
                                     {k: t.info for k, t in truth.items()}, time_zone=self.time_zone,
                                     modelling=self.modelling)
        if difference is not None:
            raise OracleMismatch(f"{self.label}: {where} the Delta replica differs from the truth at "
                                 f"consistent_ts={consistent_ts}: {difference}")
        if self.modelling is not None and self.modelling.history:
            self._check_history(consistent_ts, where)
        self.checks += 1

    def _check_history(self, consistent_ts: int, where: str) -> None:
        # Every history table against the simulator's full version history as of the same ts.
        from pyticdc.replica.history import compare_history, visible_image
        from pyticdc.sim.history import history_at

        modelling = self.modelling
        assert modelling is not None
        truth = history_at(self.history, consistent_ts, history_for=modelling.history_for, key_for=modelling.key_for,
                           tracked_for=modelling.tracked_columns, project=self.projector.row,
                           truncate=modelling.on_truncate == "apply", find_by=self._find_by,
                           visible=lambda info, row: visible_image(modelling, info, row))
        difference = compare_history(self.warehouse, truth.tables, modelling, time_zone=self.time_zone,
                                     dropped=truth.dropped)
        if difference is not None:
            raise OracleMismatch(f"{self.label}: {where} a history table differs from the truth's versions at "
                                 f"consistent_ts={consistent_ts}: {difference}")

    def _find_by(self, change: RowChange) -> tuple[str, ...] | None:
        # How the replica finds the change's row as the protocol carries it (a handle the wire's schema may not
        # name, a row id it may not carry): the decoded change's handle, else its row id, else its whole image.
        cached = self._found_by.get(id(change.table_info))
        if cached is not None:
            return cached[1]
        encoder = getattr(self.projector, "encoder", None)
        carried = encoder.project(change) if encoder is not None else change
        info = carried.table_info if isinstance(carried, RowChange) else None
        handle = handle_columns(info) if info is not None else ()
        found = handle if handle else () if isinstance(carried, RowChange) and carried.row_id else None
        self._found_by[id(change.table_info)] = (change.table_info, found)  # the info kept: its id stays unique
        return found

    def finish(self, consistent_ts: int, garbage: int) -> int:
        """The end of a run: at the final watermark, no table ahead of the progress, equal to the truth, and
        exactly the ``garbage`` records quarantined; returns the quarantined count."""
        final_ts = self.history.final_resolved_ts
        if consistent_ts != final_ts:
            raise OracleMismatch(f"{self.label}: replication ended at consistent_ts={consistent_ts}, not at the "
                                 f"final watermark {final_ts}")
        unsettled = unsettled_tables(self.warehouse)
        if unsettled:
            raise OracleMismatch(f"{self.label}: tables ahead of the committed progress at the end: {unsettled}")
        self(consistent_ts, "at the end")
        store = DeltaStore(self.warehouse)
        quarantined = store.count(store.internal_path("quarantine"))
        if quarantined != garbage:
            raise OracleMismatch(f"{self.label}: {quarantined} records quarantined, {garbage} garbage "
                                 "records injected")
        return quarantined


def check_sources(warehouse: Path, logs: Mapping[tuple[str, int], Sequence[KafkaRecord]], protocol: str,
                  options: Mapping[str, Any], label: str) -> None:
    """OracleMismatch unless every row's ``_source_*`` columns name a record of ``logs`` carrying its last change.

    The record there must decode to a row change committed at the row's ``_commit_ts`` (crashes, restarts and
    re-sends included: whichever delivery was kept, it is one that carried the change).
    """
    from pyticdc.codec import make_decoder
    from pyticdc.replica.progress import read_progress
    from pyticdc.replica.projection import COMMIT_TS

    # Simple rows of a schema not seen yet come out untyped (with their commit ts) instead of held.
    extra: dict[str, Any] = {"hold_unknown_schema": False} if protocol == "simple" else {}
    decoder = make_decoder(protocol, dict(options), **extra)
    store = DeltaStore(warehouse)
    carried: dict[tuple[str, int, int], set[int]] = {}
    for key, entry in sorted(read_progress(store).tables.items()):
        for row in store.read(store.root / entry.path).to_pylist():
            where = (row.get("_source_topic"), row.get("_source_partition"), row.get("_source_offset"))
            if None in where:
                raise OracleMismatch(f"{label}: {key[0]}.{key[1]}: a row without _source_* columns: {where}")
            topic, partition, offset = str(where[0]), int(str(where[1])), int(str(where[2]))
            if (topic, partition, offset) not in carried:
                log = logs.get((topic, partition), ())
                record = log[offset] if 0 <= offset < len(log) else None
                try:
                    events = decoder.decode(record.value, record.key) if record is not None and record.value else []
                except DecodeError:
                    events = []  # an injected garbage record: it carries no change
                carried[(topic, partition, offset)] = {e.commit_ts for e in events if isinstance(e, RowChange)}
            if int(row[COMMIT_TS]) not in carried[(topic, partition, offset)]:
                raise OracleMismatch(f"{label}: {key[0]}.{key[1]}: the row of commit ts {row[COMMIT_TS]} says it was "
                                     f"read from {topic}[{partition}]@{offset}, which carries no change of that ts")


def check_history_on_delta(
    history: Any, protocol: str, options: Mapping[str, Any] | None = None, *, plan: Any = None, seed: int = 0,
    partitions: int = 3, rules: Sequence[Mapping[str, Any]] = (), modelling: Modelling | None = None,
    workdir: str | Path | None = None, batches: int = 6,
) -> DeltaOracleReport:
    """Produce with faults, replicate to Delta with crashes, compare with the transformed truth; OracleMismatch."""
    from pyticdc.codec import make_encoder
    from pyticdc.sim import FaultPlan, TruthProjector, inject, interleave, produce, with_offsets

    plan = plan or FaultPlan()
    modelling = modelling or Modelling()
    options = dict(options or {})
    rng = random.Random(seed)
    fixed = physical_ms(history.final_resolved_ts)

    def clock() -> int:
        return fixed

    logs = with_offsets(inject(produce(history, protocol, options, partitions=partitions, rules=rules, clock=clock),
                               plan, rng))
    stream: list[KafkaRecord] = interleave(logs, rng, max_run=plan.max_run)
    report = DeltaOracleReport(protocol=protocol, seed=seed, records=len(stream))
    # What the replica holds: it reads some values back from the DDL (Debezium without the extension).
    projector = TruthProjector(make_encoder(protocol, projection_options(protocol, options), clock=clock))
    time_zone = str(options.get("time-zone", "UTC"))
    label = f"{protocol} seed={history.seed}/{seed}"
    counts = log_partition_counts(logs)
    crashes = _Crashes(plan.crashes, rng)
    own = workdir is None
    root = Path(tempfile.mkdtemp(prefix="pyticdc-delta-oracle-")) if workdir is None else Path(workdir)
    warehouse = root / "warehouse"
    size = max(20, len(stream) // max(1, batches))

    check = TruthCheck(label, warehouse, history, projector, time_zone, modelling)

    try:
        shutil.rmtree(warehouse, ignore_errors=True)
        final = None
        while final is None:
            replicator = Replicator(warehouse, protocol, options, partitions=counts, hook=crashes.hook,
                                    modelling=modelling)
            try:
                for start in range(0, len(stream), size):
                    batch = replicator.process(stream[start:start + size])
                    report.batches += 1
                    if not unsettled_tables(warehouse):
                        check(batch.consistent_ts, f"after batch {batch.version}")
                    final = batch
            except SimulatedCrash:
                final = None  # the process died: a new one starts from what the warehouse holds
        report.crashes = list(crashes.happened)
        report.quarantined = check.finish(final.consistent_ts, plan.garbage)
        if set(SOURCE_COLUMNS) & set(modelling.metadata_columns):
            check_sources(warehouse, logs, protocol, options, label)
        report.checks = check.checks
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
    return report
