"""A simulated TiDB and the oracle that proves the consumer: workloads, faults, a reference replica.

``simulate(seed)`` gives a :class:`History` (TiCDC's event stream and the truth at every ts);
``pyticdc.sim.faults`` produces it to Kafka logs through the real router and codecs and breaks them the
ways TiCDC and Kafka do; :class:`Replica` applies a consumer's units; ``check_history`` runs the lot
and compares the replica with the truth at every consistent ts.
"""

from __future__ import annotations

from pyticdc.sim.faults import Sent, add_garbage, duplicate, interleave, produce, replay_ranges, restart, with_offsets
from pyticdc.sim.oracle import FaultPlan, OracleReport, TruthProjector, check_history, compare, inject
from pyticdc.sim.replica import Replica, ReplicaTable
from pyticdc.sim.workload import TEMPLATES, History, TableTruth, WorkloadConfig, simulate

__all__ = [
    "TEMPLATES",
    "FaultPlan",
    "History",
    "OracleReport",
    "Replica",
    "ReplicaTable",
    "Sent",
    "TableTruth",
    "TruthProjector",
    "WorkloadConfig",
    "add_garbage",
    "check_history",
    "compare",
    "duplicate",
    "inject",
    "interleave",
    "produce",
    "replay_ranges",
    "restart",
    "simulate",
    "with_offsets",
]
