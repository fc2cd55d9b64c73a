"""Replicating feeds without watermarks (TiCDC's default Canal-JSON and Debezium): batch consistency."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from pyticdc.codec import make_encoder
from pyticdc.errors import ConfigError
from pyticdc.model import KafkaRecord
from pyticdc.replica import Replicator, compare_replica, read_table
from pyticdc.replica.check import projection_options
from pyticdc.routing import Router
from pyticdc.sim import TruthProjector
from pyticdc.sim.workload import WorkloadConfig, simulate
from replays import clock_for, numbered

REAL = Path("/work/shared/real/cdcfresh/testdata")
#: Columns the replica adds that depend on the commit ts's precision, not on the row.
_COMMIT_COLUMNS = ("_commit_ts", "_commit_time")


def _contents(warehouse: Path,
              ignored: tuple[str, ...] = _COMMIT_COLUMNS) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    from pyticdc.replica.progress import read_progress
    from pyticdc.replica.store import DeltaStore

    out = {}
    for key, entry in read_progress(DeltaStore(warehouse)).tables.items():
        table = read_table(str(warehouse / entry.path))
        names = [n for n in table.column_names if n not in ignored]
        rows = table.select(names).to_pylist()
        out[key] = sorted((tuple(sorted(row.items())) for row in rows), key=repr)
    return out


def _batches(records: list[KafkaRecord], size: int) -> list[list[KafkaRecord]]:
    # Records in the order TiCDC wrote them, cut as a reader of every partition up to a moment would cut them.
    return [records[at:at + size] for at in range(0, len(records), size)]


@pytest.mark.parametrize(("seed", "max_rows"), [(21, 4), (7, 30)])
@pytest.mark.parametrize("protocol", ["canal-json", "debezium"])
def test_without_the_extension_the_replica_equals_the_one_with_it(tmp_path: Path, protocol: str, seed: int,
                                                                  max_rows: int) -> None:
    history = simulate(seed, WorkloadConfig(transactions=160, max_table_rows=max_rows))
    contents, timed = {}, {}
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
        timed[extension] = _contents(warehouse, ("_commit_ts",))
    assert contents[True] and sum(len(rows) for rows in contents[True].values()) > 0
    # _commit_time is in every table, and the same with and without the extension: Canal-JSON without it carries
    # the commit's physical milliseconds (es), which is all of a TSO's time.
    assert all(name == "_commit_time" and isinstance(value, dt.datetime) for rows in timed[True].values()
               for row in rows for name, value in row[:1])
    assert timed[False] == timed[True]
    # The workload has BIGINT UNSIGNED values at and above 2**63 (Debezium without the extension carries them as
    # their int64 twin; the replica reads them back from the column's UNSIGNED in the CREATE TABLE it saw).
    big = [value for rows in contents[True].values() for row in rows for name, value in row
           if name in ("seq", "c_bigint_u") and value is not None and value >= 2**63]
    assert len(big) >= 3
    if seed == 7:
        # Binary columns too (Debezium without the extension declares them "string" and sends base64).
        binary = [value for row in contents[True][("sim", "t_uk")] for name, value in row
                  if name in ("b", "c_blob") and isinstance(value, bytes) and value]
        assert len(binary) >= 5
    assert contents[False] == contents[True]
    # Each replica also equals the truth as its protocol carries it, read back where the DDL says how.
    for extension in (True, False):
        options = projection_options(protocol, {"enable-tidb-extension": extension})
        projector = TruthProjector(make_encoder(protocol, options, clock=clock_for(history)))
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
    table = read_table(str(tmp_path / "demo" / "readings"))
    assert table.select(["id", "device", "value"]).to_pylist() == [{"id": 1, "device": "dev-a", "value": 11}]
    report = Replicator(tmp_path, "canal-json", partitions={"cdc": 1}).process(records)
    assert report.rows_applied == 1 and report.rows_replayed == 0
    assert read_table(str(tmp_path / "demo" / "readings")).num_rows == 0


def test_require_watermarks_restores_the_refusal(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="carries no watermarks"):
        Replicator(tmp_path, "canal-json", partitions={"cdc": 1}, require_watermarks=True)
    with pytest.raises(ConfigError, match="carries no watermarks"):
        Replicator.check(tmp_path, "debezium", {}, require_watermarks=True)
    Replicator.check(tmp_path, "debezium", {})
    assert not (tmp_path / "_pyticdc").exists()


def test_projection_options_read_debezium_without_the_extension_back_as_with_it() -> None:
    assert projection_options("debezium", {}) == {"enable-tidb-extension": True}
    assert projection_options("debezium", {"enable_tidb_extension": "false", "debezium-output-old-value": "false"}) \
        == {"debezium-output-old-value": "false", "enable-tidb-extension": True}
    # Without a schema part nothing says which columns are binary: the projection stays the protocol's.
    assert projection_options("debezium", {"debezium-disable-schema": "true"}) == {"debezium-disable-schema": "true"}
    assert projection_options("canal-json", {}) == {}
