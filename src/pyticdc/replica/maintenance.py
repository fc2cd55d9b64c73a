"""How replica tables are laid out and kept: column statistics, partitioning, table properties, OPTIMIZE, VACUUM.

Column statistics. Every replica table keeps Delta min/max statistics (data skipping for readers, file
pruning for the replica's own MERGEs) on the columns delta-rs writes them right for, listed in
``delta.dataSkippingStatsColumns``. Not on DECIMAL columns wider than 18 digits: deltalake 1.6.6 (the newest
on PyPI) writes their min/max through a 64-bit value (``DECIMAL(20,0)`` 2**64-1 is recorded as 2**63-1, 2**53+1
as 2**53), so a file holding such a value would be skipped by a MERGE looking for it. The list follows the
table's schema: a DDL that widens a column into such a DECIMAL takes it out before any file is written
with the new type. Tables created before (``delta.dataSkippingNumIndexedCols = 0``) get the list at their
next rewrite.

Partitioning (``--partition-by PATTERN=COL[,COL]``) and table properties (``--table-property KEY=VALUE``,
e.g. ``delta.enableChangeDataFeed=true``) apply when a table is created; partitioning is kept by rewrites.

Maintenance: every ``optimize_every`` committed batches the tables written since are compacted (OPTIMIZE,
bin-packing; content, positions and application transactions are kept) and, with ``vacuum_retention_hours``,
vacuumed (files no version younger than that needs are deleted: readers of older versions, time travel, fail
after it). :func:`maintain_warehouse` does both for every table, as ``pyticdc maintain`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec
import pyarrow as pa

from pyticdc.errors import ConfigError

__all__ = ["MaintenanceReport", "TableOptions", "maintain_table", "parse_partition_by", "parse_table_properties",
           "stats_columns"]

#: DECIMAL precision up to which deltalake writes exact statistics (the values fit 64 bits exactly).
EXACT_DECIMAL_DIGITS: Final = 18
#: Files a table must have before a scheduled OPTIMIZE compacts it.
COMPACT_MIN_FILES: Final = 16


def _quote(name: str) -> str:
    # Delta's column list syntax: backticks around every name, a backtick doubled.
    return "`" + name.replace("`", "``") + "`"


def stats_columns(schema: pa.Schema) -> str | None:
    """``delta.dataSkippingStatsColumns`` for ``schema``: every column with exact statistics (None: none has)."""
    names = [field.name for field in schema
             if not (pa.types.is_decimal(field.type) and field.type.precision > EXACT_DECIMAL_DIGITS)
             and not pa.types.is_binary(field.type) and not pa.types.is_large_binary(field.type)
             and not pa.types.is_nested(field.type)]
    return ",".join(_quote(name) for name in names) or None


def stats_configuration(schema: pa.Schema) -> dict[str, str]:
    """The table properties that keep statistics exactly on the columns where they are right."""
    columns = stats_columns(schema)
    if columns is None:
        return {"delta.dataSkippingNumIndexedCols": "0"}
    return {"delta.dataSkippingStatsColumns": columns}


def _pairs(items: Sequence[str] | None, flag: str, form: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{flag} wants {form}, got {item!r}")
        pairs.append((key.strip(), value.strip()))
    return pairs


def parse_partition_by(items: Sequence[str] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``PATTERN=COL[,COL...]`` (``--partition-by``): TiDB table-filter pattern → partition columns."""
    from pyticdc.routing.tablefilter import parse_table_filter

    rules = []
    for pattern, columns in _pairs(items, "--partition-by", "PATTERN=COL[,COL...]"):
        parse_table_filter([pattern])  # a bad pattern fails now
        names = tuple(c.strip() for c in columns.split(",") if c.strip())
        if not names:
            raise ConfigError(f"--partition-by {pattern}=: no column")
        rules.append((pattern, names))
    return tuple(rules)


def parse_table_properties(items: Sequence[str] | None) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` (``--table-property``) Delta table properties, e.g. ``delta.enableChangeDataFeed=true``."""
    pairs = _pairs(items, "--table-property", "KEY=VALUE")
    for key, _ in pairs:
        if not key.startswith("delta."):
            raise ConfigError(f"--table-property {key}: Delta table properties start with 'delta.'")
    return tuple(pairs)


class TableOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Layout and upkeep of the replica tables (see module docstring)."""

    #: (table-filter pattern, partition columns): the first matching rule partitions a new table.
    partition_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Delta table properties set on every new replica table.
    properties: tuple[tuple[str, str], ...] = ()
    #: OPTIMIZE (and VACUUM) the tables written to every this many committed batches; 0: never.
    optimize_every: int = 100
    #: VACUUM retention in hours after each OPTIMIZE; None: replica tables are not vacuumed.
    vacuum_retention_hours: float | None = None

    def __post_init__(self) -> None:
        if self.optimize_every < 0:
            raise ConfigError("--optimize-every must be >= 0 (0: never)")
        if self.vacuum_retention_hours is not None and self.vacuum_retention_hours < 0:
            raise ConfigError("--vacuum-retention must be >= 0 hours")

    def partition_columns(self, schema: str, table: str) -> tuple[str, ...]:
        """Partition columns of a new table ``schema.table`` (empty: not partitioned)."""
        for pattern, columns in self.partition_by:
            if _matcher(pattern)(schema, table):
                return columns
        return ()


def _matcher(pattern: str) -> Callable[[str, str], bool]:
    from pyticdc.routing.tablefilter import parse_table_filter

    return parse_table_filter([pattern]).match_table


class MaintenanceReport(msgspec.Struct, kw_only=True):
    """What one maintenance pass did to one table."""

    path: str
    files_before: int
    files_after: int
    compacted: bool
    vacuumed_files: int


def maintain_table(table: Any, path: str, *, retention_hours: float | None, min_files: int = COMPACT_MIN_FILES,
                   ) -> MaintenanceReport:
    """OPTIMIZE (when it has at least ``min_files`` files) then, with a retention, VACUUM one Delta table."""
    before = len(table.file_uris())
    compacted = before >= max(min_files, 2)
    if compacted:
        table.optimize.compact()
    vacuumed = 0
    if retention_hours is not None:
        # The retention asked for is the user's: not raised to the table's deletedFileRetentionDuration.
        vacuumed = len(table.vacuum(retention_hours=int(retention_hours), dry_run=False,
                                    enforce_retention_duration=False))
    return MaintenanceReport(path=path, files_before=before, files_after=len(table.file_uris()), compacted=compacted,
                             vacuumed_files=vacuumed)
