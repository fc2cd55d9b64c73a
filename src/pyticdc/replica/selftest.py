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

from pyticdc.errors import OracleMismatch
from pyticdc.model import KafkaRecord, physical_ms
from pyticdc.replica.applier import SimulatedCrash
from pyticdc.replica.check import compare_replica, unsettled_tables
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.pipeline import Replicator
from pyticdc.replica.store import DeltaStore

__all__ = ["DeltaOracleReport", "check_history_on_delta"]

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
        #: How many comparisons passed.
        self.checks = 0

    def __call__(self, consistent_ts: int, where: str) -> None:
        """Compare at ``consistent_ts``; OracleMismatch naming ``where`` and the first difference."""
        truth = self.history.truth_at(consistent_ts)
        difference = compare_replica(self.warehouse, self.projector.snapshot(truth),
                                     {k: t.info for k, t in truth.items()}, time_zone=self.time_zone,
                                     modelling=self.modelling)
        if difference is not None:
            raise OracleMismatch(f"{self.label}: {where} the Delta replica differs from the truth at "
                                 f"consistent_ts={consistent_ts}: {difference}")
        self.checks += 1

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
    projector = TruthProjector(make_encoder(protocol, options, clock=clock))
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
        report.checks = check.checks
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
    return report
