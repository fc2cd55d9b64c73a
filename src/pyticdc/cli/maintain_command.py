"""``pyticdc maintain``: OPTIMIZE (compaction) and VACUUM of every replica table of a warehouse.

    pyticdc maintain ./warehouse
    pyticdc maintain s3://bucket/warehouse --vacuum-retention 168

Compacts each table with at least --min-files files (content, rows and the replica's positions unchanged),
then, with --vacuum-retention, deletes the files no table version younger than that many hours needs
(time travel to older versions fails after it). Run it while ``replicate`` is stopped, or let a running
``replicate`` do the same with --optimize-every: two writers committing to one table at once make one of them
fail its commit (see :mod:`pyticdc.replica.storage`). Exit status: 0 done, 1 a table could not be
maintained, 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pyticdc.cli.common import FAILURE, REPORTED, USAGE, report

__all__ = ["add_parser", "run_maintain"]


def add_parser(subparsers: Any) -> None:
    """Register ``maintain``."""
    from pyticdc.cli.replicate_command import warehouse_path

    parser = subparsers.add_parser(
        "maintain", help="compact (OPTIMIZE) and VACUUM the tables of a replica warehouse",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("warehouse", type=warehouse_path, metavar="WAREHOUSE",
                        help="the warehouse replicate writes (a directory or an object-store URL)")
    parser.add_argument("--vacuum-retention", type=float, metavar="HOURS",
                        help="also VACUUM: delete files older versions needed, keeping this many hours of history "
                             "(default: no VACUUM)")
    parser.add_argument("--min-files", type=int, default=2, metavar="N",
                        help="compact tables with at least N files (default 2)")
    parser.add_argument("--storage-option", dest="storage_options", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="delta-rs storage option of an object-store warehouse, repeatable (for s3:// the "
                             "AWS_* environment variables are read first; default none)")
    parser.set_defaults(run=run_maintain)


def run_maintain(args: argparse.Namespace) -> int:
    """Maintain every table the warehouse's progress lists, then the internal tables."""
    from pyticdc.replica.maintenance import TableOptions, maintain_table
    from pyticdc.replica.progress import read_progress
    from pyticdc.replica.storage import parse_storage_options, reach_error, storage_options
    from pyticdc.replica.store import DeltaStore

    try:
        if args.min_files < 1:
            raise ValueError("--min-files must be >= 1")
        options = TableOptions(vacuum_retention_hours=args.vacuum_retention)
        storage = storage_options(str(args.warehouse), parse_storage_options(args.storage_options))
        store = DeltaStore(args.warehouse, storage_options=storage, table_options=options)
        try:
            progress = read_progress(store)
        except OSError as exc:
            raise reach_error(str(args.warehouse), exc) from None
        if progress.version == 0:
            raise ValueError(f"{args.warehouse} holds no replica (no _pyticdc/progress)")
    except REPORTED as exc:
        return report(args, exc, USAGE)
    failed = 0
    targets = [(f"{e.schema}.{e.table}", e.path) for e in sorted(progress.tables.values(),
                                                                  key=lambda e: (e.schema, e.table))]
    targets.append(("_pyticdc/quarantine", "_pyticdc/quarantine"))
    for name, relative in targets:
        table = store.open(store.root / relative)
        if table is None:
            continue
        try:
            done = maintain_table(table, relative, retention_hours=args.vacuum_retention, min_files=args.min_files)
        except Exception as exc:  # noqa: BLE001 (delta-rs errors, e.g. a concurrent commit: one line, go on)
            failed += 1
            print(f"{name}: not maintained: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                  file=sys.stderr)
            continue
        print(f"{name}: {done.files_before} -> {done.files_after} files"
              + (f", {done.vacuumed_files} vacuumed" if args.vacuum_retention is not None else ""))
    if failed:
        return report(args, f"{failed} tables could not be maintained", FAILURE)
    return 0
