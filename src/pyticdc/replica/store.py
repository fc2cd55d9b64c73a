"""The Delta tables of a warehouse directory, written with ``deltalake`` (delta-rs), every commit idempotent.

Layout of a warehouse::

    <warehouse>/<schema>/<table>/          one Delta table per upstream table (its current name)
    <warehouse>/_pyticdc/progress/         Delta: the pipeline's progress and each table's freshness
    <warehouse>/_pyticdc/quarantine/       Delta: records that could not be decoded, with their bytes
    <warehouse>/_pyticdc/dropped/<uid>/    tables dropped upstream (kept, not replicated any more)

Names are kept readable: letters, digits, ``-`` and ``_`` stay, any other byte is written ``~XX`` (hex; a
leading ``_`` too, so no upstream name can collide with ``_pyticdc``). Not ``%XX``: delta-rs reads table
paths as URLs and would decode it.

Positions. Every commit that changes a table's content carries a Delta application transaction
``(app_id, position)``: ``2 * ts`` after the row changes committed at or before ``ts``, ``2 * ts + 1``
after a DDL committed at ``ts``. A table's transaction version therefore says exactly which changes it
holds, and re-applying a change at or below it is skipped: that is what makes a replay after a crash
apply nothing twice, whichever tables it had reached. Each table also records its identity (``uid``, in
the Delta table description) so a replayed CREATE, DROP or RENAME recognises its own earlier effect.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import pyarrow as pa

from pyticdc.errors import ReplicaError

__all__ = ["APP_ID", "DeltaStore", "ddl_position", "rows_position", "safe_name"]

#: Default application id of the replica's Delta transactions.
APP_ID: Final = "pyticdc"
_UID_PREFIX: Final = "pyticdc table "
_SAFE: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def safe_name(name: str) -> str:
    """A file name for an upstream schema or table name (readable, reversible, never hidden or reserved)."""
    out = []
    for index, char in enumerate(name):
        if char in _SAFE and not (index == 0 and char == "_"):
            out.append(char)
        else:
            out.extend(f"~{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out) or "~00"


def rows_position(commit_ts: int) -> int:
    """The position of a table holding every row change committed at or before ``commit_ts``."""
    return 2 * commit_ts


def ddl_position(commit_ts: int) -> int:
    """The position of a table after a DDL committed at ``commit_ts`` (after its rows at that ts)."""
    return 2 * commit_ts + 1


class DeltaStore:
    """The Delta tables under one warehouse directory; keeps each table's handle open between commits."""

    def __init__(self, root: str | Path, *, app_id: str = APP_ID, storage_options: Mapping[str, str] | None = None,
                 target_file_size: int | None = None) -> None:
        self.root = Path(root)
        self.app_id = app_id
        self.storage_options = dict(storage_options) if storage_options else None
        self.target_file_size = target_file_size
        self._tables: dict[Path, Any] = {}
        #: Commits written by this store (for reports and tests).
        self.commits = 0

    # ------------------------------------------------------------------ paths
    def table_path(self, schema: str, table: str) -> Path:
        """Directory of the replica of ``schema.table``."""
        return self.root / safe_name(schema) / safe_name(table)

    def internal_path(self, name: str) -> Path:
        """Directory of an internal table (``progress``, ``quarantine``) or folder (``dropped``)."""
        return self.root / "_pyticdc" / name

    # ------------------------------------------------------------------ reading
    def open(self, path: Path) -> Any:
        """The DeltaTable at ``path`` (cached), or None when there is none."""
        from deltalake import DeltaTable

        cached = self._tables.get(path)
        if cached is not None:
            return cached
        if not DeltaTable.is_deltatable(str(path), storage_options=self.storage_options):
            return None
        table = self._tables[path] = DeltaTable(str(path), storage_options=self.storage_options)
        return table

    def forget(self, path: Path) -> None:
        """Drop the cached handle of ``path`` (after it was moved or rewritten elsewhere)."""
        self._tables.pop(path, None)

    def uid(self, path: Path) -> str | None:
        """The identity recorded in the table at ``path``, None when there is no table."""
        table = self.open(path)
        if table is None:
            return None
        description = table.metadata().description or ""
        return description[len(_UID_PREFIX):] if description.startswith(_UID_PREFIX) else ""

    def position(self, path: Path) -> int:
        """The table's position (see module docstring); -1 when it has none."""
        table = self.open(path)
        if table is None:
            return -1
        version = table.transaction_version(self.app_id)
        return -1 if version is None else int(version)

    def schema(self, path: Path) -> pa.Schema:
        """The Arrow schema of the table at ``path``."""
        return pa.schema(self.open(path).schema().to_arrow())

    def read(self, path: Path) -> pa.Table:
        """Every row of the table at ``path``, in its declared schema."""
        from deltalake import QueryBuilder

        table = self.open(path)
        if table is None:
            raise ReplicaError(f"no Delta table at {path}")
        # DataFusion (Rust threads) rather than to_pyarrow_table: that one reads through a Python filesystem
        # from Arrow's C++ IO threads, which can abort the interpreter at exit (std::terminate in a
        # thread unwound by finalisation).
        reader = QueryBuilder().register("replica", table).execute('SELECT * FROM "replica"')
        data = pa.table(reader.read_all())
        schema = self.schema(path)
        if data.num_rows == 0:
            return schema.empty_table()
        return data.select(schema.names).cast(schema)

    def count(self, path: Path) -> int:
        """Number of rows of the table at ``path`` (from the Delta log, without reading data)."""
        table = self.open(path)
        if table is None:
            return 0
        actions = pa.table(table.get_add_actions(flatten=True))
        if actions.num_rows == 0 or "num_records" not in actions.column_names:
            return 0
        return int(sum(v or 0 for v in actions.column("num_records").to_pylist()))

    # ------------------------------------------------------------------ writing
    def _commit(self, position: int, extra: Mapping[str, str] | None = None) -> Any:
        from deltalake import CommitProperties, Transaction

        metadata = {"pyticdc.position": str(position), **(extra or {})}
        return CommitProperties(app_transactions=[Transaction(app_id=self.app_id, version=position)],
                                custom_metadata=metadata)

    def create(self, path: Path, data: pa.Table, *, uid: str, position: int, name: str) -> None:
        """Create the table at ``path`` holding ``data`` (maybe no rows), in one commit at ``position``."""
        from deltalake import write_deltalake

        path.parent.mkdir(parents=True, exist_ok=True)
        self.forget(path)
        # No column statistics: delta-rs 1.x writes DECIMAL min/max through a float, wrong beyond 2**53 (a
        # BIGINT UNSIGNED key, a TSO), and readers and MERGE would skip files on them.
        write_deltalake(str(path), data, mode="error", name=name, description=_UID_PREFIX + uid,
                        configuration={"delta.dataSkippingNumIndexedCols": "0"},
                        commit_properties=self._commit(position), storage_options=self.storage_options,
                        target_file_size=self.target_file_size)
        self.commits += 1

    def overwrite(self, path: Path, data: pa.Table, *, position: int) -> None:
        """Replace the table's rows and schema with ``data`` in one commit at ``position``."""
        from deltalake import write_deltalake

        table = self.open(path)
        write_deltalake(table, data, mode="overwrite", schema_mode="overwrite",
                        commit_properties=self._commit(position), storage_options=self.storage_options,
                        target_file_size=self.target_file_size)
        self.commits += 1

    def append(self, path: Path, data: pa.Table, *, position: int) -> None:
        """Append ``data`` in one commit at ``position``."""
        from deltalake import write_deltalake

        write_deltalake(self.open(path), data, mode="append", commit_properties=self._commit(position),
                        storage_options=self.storage_options, target_file_size=self.target_file_size)
        self.commits += 1

    def merge(self, path: Path, source: pa.Table, *, on: list[str], position: int) -> dict[str, Any]:
        """MERGE ``source`` (an ``_op`` column, then the table's columns) on ``on``, in one commit at ``position``.

        ``_op = 'delete'`` rows delete their match; ``upsert`` rows update it or are inserted.
        """
        table = self.open(path)
        predicate = " AND ".join(f"t.{_quote(name)} = s.{_quote(name)}" for name in on)
        columns = [name for name in source.column_names if name != "_op"]
        assignments = {_quote(name): f"s.{_quote(name)}" for name in columns}
        merger = (table.merge(source, predicate=predicate, source_alias="s", target_alias="t",
                              commit_properties=self._commit(position), streamed_exec=False)
                  .when_matched_delete(predicate="s._op = 'delete'")
                  .when_matched_update(assignments, predicate="s._op = 'upsert'")
                  .when_not_matched_insert(assignments, predicate="s._op = 'upsert'"))
        metrics: dict[str, Any] = merger.execute()
        self.commits += 1
        return metrics

    def table_dirs(self) -> list[Path]:
        """Every directory that may hold a replica table: ``<schema>/<table>`` and the dropped ones."""
        found: list[Path] = []
        if not self.root.is_dir():
            return found
        for schema in sorted(self.root.iterdir()):
            if schema.is_dir() and schema.name != "_pyticdc":
                found.extend(sorted(p for p in schema.iterdir() if p.is_dir()))
        dropped = self.internal_path("dropped")
        if dropped.is_dir():
            found.extend(sorted(p for p in dropped.iterdir() if p.is_dir()))
        return found

    def is_dropped(self, path: Path) -> bool:
        """Whether ``path`` is in ``_pyticdc/dropped``."""
        return path.parent == self.internal_path("dropped")

    def move(self, path: Path, destination: Path) -> None:
        """Move a table directory (a rename, or a drop into ``_pyticdc/dropped``)."""
        if destination.exists():
            raise ReplicaError(f"cannot move {path} to {destination}: it exists")
        destination.parent.mkdir(parents=True, exist_ok=True)
        self.forget(path)
        self.forget(destination)
        os.replace(path, destination)
        self._remove_empty(path.parent)

    def remove(self, path: Path) -> None:
        """Delete a directory tree (used for leftovers the progress knows nothing of)."""
        self.forget(path)
        shutil.rmtree(path, ignore_errors=True)
        self._remove_empty(path.parent)

    def _remove_empty(self, folder: Path) -> None:
        if folder != self.root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _quote(name: str) -> str:
    # delta-rs predicates are SQL: double-quoted identifiers keep case and odd characters.
    return '"' + name.replace('"', '""') + '"'
