"""History tables (SCD type 2) on the distributed engine: every change folded in the executors, as the driver engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyticdc.replica.modelling import Modelling


def _histories(warehouse: Path) -> dict[str, list[dict[str, Any]]]:
    from pyticdc.replica.store import DeltaStore

    store = DeltaStore(warehouse)
    out = {}
    for path in sorted(warehouse.glob("*/*__history")):
        data = store.read(path).to_pylist()
        out[f"{path.parent.name}.{path.name}"] = sorted(data, key=repr)
    return out


@pytest.mark.spark
@pytest.mark.parametrize(("protocol", "options"), [
    ("open-protocol", {}),
    # Canal-JSON names only primary keys: tables without one are found by their whole image (digests).
    ("canal-json", {"enable-tidb-extension": "true"}),
])
def test_history_tables_on_the_distributed_engine_are_the_driver_engines(spark: Any, tmp_path: Path, protocol: str,
                                                                         options: dict[str, str]) -> None:
    from pyticdc.replica import read_progress
    from pyticdc.replica.store import DeltaStore
    from pyticdc.sim import FaultPlan, WorkloadConfig, simulate
    from pyticdc.spark.selftest import CrashPlan, check_history_on_spark

    model = Modelling.parse(history=["sim.*"])
    assert model.driver_only == ()
    history = simulate(31, WorkloadConfig(transactions=30))
    plan = FaultPlan(garbage=1)  # duplicates, TiCDC restarts with stale watermarks, replayed ranges, garbage
    for engine in ("driver", "distributed"):
        # The oracle compares every history table with the simulator's versions (compare_history) after each
        # batch; the crashes fall between a replica's MERGE and its history's, and between a history's and the
        # progress.
        crashes = CrashPlan(crashes=[("after-table-commit", 2), ("before-table-commit", 7), ("after-table-commit", 12)])
        check_history_on_spark(spark, history, protocol, options, plan=plan, seed=31, workdir=tmp_path / engine,
                               batches=3, engine=engine, modelling=model, crash_plan=crashes)
        assert len(crashes.happened) == 3
    driver, distributed = tmp_path / "driver" / "warehouse", tmp_path / "distributed" / "warehouse"
    assert read_progress(DeltaStore(distributed)).consistent_ts == read_progress(DeltaStore(driver)).consistent_ts
    histories = _histories(distributed)
    # Versions carry the wall clock nowhere: both engines write the same rows.
    assert histories and any(rows for rows in histories.values())
    assert histories == _histories(driver)
