"""Replica tables: apply a TiCDC changefeed to Delta Lake tables, DDL-aware and exactly once (no JVM needed).

==================================  ==================================================================
name                                what
==================================  ==================================================================
``Replicator``                      records in, committed batches out: the consumer engine + the applier
``DeltaReplica``                    applies apply units to Delta tables, commits progress with the state
``replica_tables``                  each replica table's directory, row count and freshness
``read_progress``                   the committed progress (consumer state, catalog, consistent ts)
``compare_replica``                 a replica against expected rows (the simulator's truth), typed
``unsettled_tables``                tables ahead of the progress after a crash (until the next batch)
``interpret_ddl``                   what a DDL statement does to replica tables
``net_change``                      one action per row handle for a run of row changes
==================================  ==================================================================

A warehouse directory holds one Delta table per upstream table (``<schema>/<table>``, typed from the TiDB
column types as :mod:`pyticdc.arrow.types` maps them) and ``_pyticdc/`` (progress, quarantine, dropped
tables). Tables are written with ``deltalake`` (delta-rs) and read by anything that reads Delta. Keys:
a table is kept by MERGE on its handle — the primary key, else a NOT NULL unique key (TiCDC's handle);
without one, on ``_tidb_rowid`` when the protocol carries it (Open Protocol), else on a digest of the
whole row (such a table is a multiset: identical rows cannot be told apart). Spark drives it in
:mod:`pyticdc.spark.replication`; the modules here need only pyarrow and deltalake.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from pyticdc.replica.applier import ApplyStats, DeltaReplica, Hook, SimulatedCrash
from pyticdc.replica.changes import NetChange, net_change
from pyticdc.replica.check import compare_replica, read_replica, unsettled_tables
from pyticdc.replica.ddl import (
    AlterTable,
    CreateTable,
    DropSchema,
    DropTable,
    RenameTable,
    SchemaChange,
    TruncateTable,
    Unhandled,
    interpret_ddl,
)
from pyticdc.replica.pipeline import BatchReport, Replicator
from pyticdc.replica.progress import Progress, TableEntry, read_progress, tso_time
from pyticdc.replica.store import DeltaStore

__all__ = [
    "AlterTable",
    "ApplyStats",
    "BatchReport",
    "CreateTable",
    "DeltaReplica",
    "DeltaStore",
    "DropSchema",
    "DropTable",
    "Hook",
    "NetChange",
    "Progress",
    "RenameTable",
    "Replicator",
    "SchemaChange",
    "SimulatedCrash",
    "TableEntry",
    "TruncateTable",
    "Unhandled",
    "compare_replica",
    "interpret_ddl",
    "net_change",
    "read_progress",
    "read_replica",
    "read_table",
    "replica_tables",
    "unsettled_tables",
]


def replica_tables(warehouse: str | Path, *, storage_options: Mapping[str, str] | None = None,
                   ) -> list[dict[str, Any]]:
    """Each replica table of a warehouse: name, directory, rows, key and how fresh it is (committed progress)."""
    store = DeltaStore(warehouse, storage_options=storage_options)
    progress = read_progress(store)
    return [{
        "schema": entry.schema, "table": entry.table, "path": str(store.root / entry.path), "rows": entry.rows,
        "key_columns": list(entry.key_columns), "complete_ts": progress.consistent_ts,
        "complete_time": tso_time(progress.consistent_ts), "last_commit_ts": entry.last_commit_ts,
        "columns": [c.name for c in entry.info.columns],
    } for _key, entry in sorted(progress.tables.items())]


def read_table(path: str | Path, *, storage_options: Mapping[str, str] | None = None) -> pa.Table:
    """Every row of the Delta table at ``path`` (replica, history, changelog, quarantine), in its schema."""
    # Not DeltaTable.to_pyarrow_table: see DeltaStore.read for why it can abort the interpreter at exit.
    store = DeltaStore(path, storage_options=storage_options)
    return store.read(store.root)
