"""Replicating feeds without watermarks (TiCDC's default Canal-JSON and Debezium): batch consistency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from pyticdc.codec import make_encoder
from pyticdc.errors import ConfigError
from pyticdc.model import KafkaRecord
from pyticdc.replica import Replicator, compare_replica
from pyticdc.routing import Router
from pyticdc.sim import TruthProjector
from pyticdc.sim.workload import WorkloadConfig, simulate
from replays import clock_for, numbered

REAL = Path("/work/shared/real/cdcfresh/testdata")
#: Columns the replica adds that depend on the commit ts's precision, not on the row.
_COMMIT_COLUMNS = ("_commit_ts", "_commit_time")


def _contents(warehouse: Path) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    from pyticdc.replica.progress import read_progress
    from pyticdc.replica.store import DeltaStore

    out = {}
    for key, entry in read_progress(DeltaStore(warehouse)).tables.items():
        table = DeltaTable(str(warehouse / entry.path)).to_pyarrow_table()
        names = [n for n in table.column_names if n not in _COMMIT_COLUMNS]
        rows = table.select(names).to_pylist()
        out[key] = sorted((tuple(sorted(row.items())) for row in rows), key=repr)
    return out


def _batches(records: list[KafkaRecord], size: int) -> list[list[KafkaRecord]]:
    # Records in the order TiCDC wrote them, cut as a reader of every partition up to a moment would cut them.
    return [records[at:at + size] for at in range(0, len(records), size)]


@pytest.mark.parametrize("protocol", ["canal-json", "debezium"])
def test_without_the_extension_the_replica_equals_the_one_with_it(tmp_path: Path, protocol: str) -> None:
    history = simulate(21, WorkloadConfig(transactions=160, max_table_rows=4))
    contents = {}
    for extension in (True, False):
        router = Router(protocol, {"enable-tidb-extension": extension}, default_topic="src", partitions=3,
                        clock=clock_for(history))
        records = numbered(router.route(history.events))
        warehouse = tmp_path / f"ext-{extension}"
        for batch in _batches(records, 150):
            replicator = Replicator(warehouse, protocol, {"enable-tidb-extension": extension},
                                    partitions={"src": 3})
            report = replicator.process(batch)
            assert report.consistency == ("watermark" if extension else "batch")
        progress = Replicator(warehouse, protocol, {"enable-tidb-extension": extension},
                              partitions={"src": 3}).progress
        assert progress.source["consistency"] == ("watermark" if extension else "batch")
        contents[extension] = _contents(warehouse)
    assert contents[True] and sum(len(rows) for rows in contents[True].values()) > 0
    if protocol == "canal-json":
        assert contents[False] == contents[True]
    # Debezium without the extension carries some values differently (BIGINT UNSIGNED above 2**63 as its signed
    # twin, ...): each replica equals the truth as its protocol carries it.
    for extension in (True, False):
        projector = TruthProjector(make_encoder(protocol, {"enable-tidb-extension": extension},
                                                clock=clock_for(history)))
        truth = history.truth_at(history.final_resolved_ts)
        assert compare_replica(tmp_path / f"ext-{extension}", projector.snapshot(truth),
                               {k: t.info for k, t in truth.items()}) is None


def test_the_real_ticdc_v8_5_captures_replicate(tmp_path: Path) -> None:
    # TiCDC v8.5.7 Canal-JSON without the extension: CREATE, INSERT and UPDATE share one millisecond.
    names = ["ddl_query", "ddl_create", "insert", "update", "delete"]
    records = [KafkaRecord(topic="cdc", partition=0, offset=i, value=(REAL / f"{name}.json").read_bytes().strip())
               for i, name in enumerate(names)]
    report = Replicator(tmp_path, "canal-json", partitions={"cdc": 1}).process(records[:4])
    assert report.consistency == "batch" and report.rejected == 0 and report.rows_applied == 2
    table = DeltaTable(str(tmp_path / "demo" / "readings")).to_pyarrow_table()
    assert table.select(["id", "device", "value"]).to_pylist() == [{"id": 1, "device": "dev-a", "value": 11}]
    report = Replicator(tmp_path, "canal-json", partitions={"cdc": 1}).process(records)
    assert report.rows_applied == 1 and report.rows_replayed == 0
    assert DeltaTable(str(tmp_path / "demo" / "readings")).to_pyarrow_table().num_rows == 0


def test_require_watermarks_restores_the_refusal(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="carries no watermarks"):
        Replicator(tmp_path, "canal-json", partitions={"cdc": 1}, require_watermarks=True)
    with pytest.raises(ConfigError, match="carries no watermarks"):
        Replicator.check(tmp_path, "debezium", {}, require_watermarks=True)
    Replicator.check(tmp_path, "debezium", {})
    assert not (tmp_path / "_pyticdc").exists()
