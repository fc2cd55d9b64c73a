"""``pyticdc replicate`` on Spark with column/table mapping, ``_source_*`` columns and schema evolution modes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from pyticdc.cli import main
from pyticdc.codec import make_encoder
from pyticdc.io.capture import write_capture
from pyticdc.model import physical_ms
from pyticdc.replica import compare_replica, read_progress
from pyticdc.replica.mapping import NameMapping
from pyticdc.replica.modelling import Modelling
from pyticdc.replica.store import DeltaStore
from pyticdc.sim import TruthProjector, WorkloadConfig, interleave, produce, simulate, with_offsets


def _capture(path: Path, seed: int) -> Any:
    history = simulate(seed, WorkloadConfig(transactions=50))
    fixed = physical_ms(history.final_resolved_ts)
    logs = with_offsets(produce(history, "open-protocol", {}, partitions=3, clock=lambda: fixed))
    write_capture(path, interleave(logs, random.Random(seed)))
    return history


def _check(warehouse: Path, history: Any, modelling: Modelling | None = None) -> str | None:
    fixed = physical_ms(history.final_resolved_ts)
    projector = TruthProjector(make_encoder("open-protocol", {}, clock=lambda: fixed))
    truth = history.truth_at(read_progress(DeltaStore(warehouse)).consistent_ts)
    return compare_replica(warehouse, projector.snapshot(truth), {k: t.info for k, t in truth.items()},
                           modelling=modelling)


@pytest.mark.spark
def test_fail_stops_with_exit_1_and_follow_continues(spark: Any, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    history = _capture(tmp_path / "cdc.jsonl", seed=3)
    warehouse = tmp_path / "wh"
    args = ["replicate", "--from", str(tmp_path / "cdc.jsonl"), "-p", "open-protocol", "--to", str(warehouse),
            "--batch-records", "60"]
    assert main([*args, "--schema-evolution", "fail"]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "schema evolution 'fail'" in last and "ALTER TABLE" in last and "sim." in last
    stopped = read_progress(DeltaStore(warehouse))
    assert stopped.consistent_ts < history.final_resolved_ts
    assert main(args) == 0  # follow (the default) continues from the progress the failure left
    assert read_progress(DeltaStore(warehouse)).consistent_ts == history.final_resolved_ts
    assert _check(warehouse, history) is None


@pytest.mark.spark
def test_mapped_replica_with_source_columns_on_spark(spark: Any, tmp_path: Path) -> None:
    history = _capture(tmp_path / "cdc.jsonl", seed=4)
    warehouse = tmp_path / "wh"
    assert main(["replicate", "--from", str(tmp_path / "cdc.jsonl"), "-p", "open-protocol", "--to", str(warehouse),
                 "--batch-records", "80", "--exclude-columns", "sim.*=c_text", "--rename-column", "sim.*.n=amount",
                 "--table-name", "sim.*=bronze.sim_{table}", "--engine", "auto",
                 "--metadata-columns", "_source_topic,_source_partition,_source_offset"]) == 0
    modelling = Modelling.parse(mapping=NameMapping.parse(exclude_columns=["sim.*=c_text"],
                                                          rename_columns=["sim.*.n=amount"],
                                                          table_names=["sim.*=bronze.sim_{table}"]),
                                metadata_columns="_source_topic,_source_partition,_source_offset")
    assert _check(warehouse, history, modelling) is None
    store = DeltaStore(warehouse)
    for entry in read_progress(store).tables.values():
        assert entry.path.startswith("bronze/sim_")
        rows = store.read(store.root / entry.path).to_pylist()
        assert all(r["_source_topic"] and r["_source_offset"] is not None for r in rows)
