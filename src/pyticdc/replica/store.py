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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa

from pyticdc.errors import ReplicaError
from pyticdc.replica.maintenance import TableOptions, stats_configuration
from pyticdc.replica.storage import Location, RemotePath, location

__all__ = ["ACTION", "APP_ID", "SHAPE", "DeltaStore", "ddl_position", "rows_position", "safe_name"]

#: Default application id of the replica's Delta transactions.
APP_ID: Final = "pyticdc"
#: Column of a MERGE source only: ``upsert``, ``delete`` or ``soft`` (a soft delete).
ACTION: Final = "_pyticdc_action"
#: Column of a MERGE source only: 0 for a complete image, else the number of its partial shape.
SHAPE: Final = "_pyticdc_shape"
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

    def __init__(self, root: str | Path | RemotePath, *, app_id: str = APP_ID,
                 storage_options: Mapping[str, str] | None = None, target_file_size: int | None = None,
                 table_options: TableOptions | None = None) -> None:
        self.storage_options = dict(storage_options) if storage_options else None
        #: Partitioning, properties and upkeep of new tables (:mod:`pyticdc.replica.maintenance`).
        self.table_options = table_options or TableOptions()
        #: A local directory, or a folder of an object store (:mod:`pyticdc.replica.storage`).
        self.root: Location = location(root, self.storage_options)
        self.app_id = app_id
        self.target_file_size = target_file_size
        self._tables: dict[Location, Any] = {}
        #: Commits written by this store (for reports and tests).
        self.commits = 0

    # ------------------------------------------------------------------ paths
    def table_path(self, schema: str, table: str) -> Location:
        """Directory of the replica of ``schema.table``."""
        return self.root / safe_name(schema) / safe_name(table)

    def relative(self, path: Location) -> str:
        """``path`` relative to the warehouse (as the progress records table directories)."""
        return str(path.relative_to(self.root)) if isinstance(path, RemotePath) else \
            str(path.relative_to(str(self.root)))

    def internal_path(self, name: str) -> Location:
        """Directory of an internal table (``progress``, ``quarantine``) or folder (``dropped``)."""
        return self.root / "_pyticdc" / name

    # ------------------------------------------------------------------ reading
    def open(self, path: Location) -> Any:
        """The DeltaTable at ``path`` (cached), or None when there is none."""
        from deltalake import DeltaTable

        cached = self._tables.get(path)
        if cached is not None:
            return cached
        if not DeltaTable.is_deltatable(str(path), storage_options=self.storage_options):
            return None
        try:
            table = self._tables[path] = DeltaTable(str(path), storage_options=self.storage_options)
        except Exception:
            if not isinstance(path, RemotePath):
                raise
            # The debris of a move or delete a crash interrupted (its log half gone): not a table.
            return None
        return table

    def forget(self, path: Location) -> None:
        """Drop the cached handle of ``path`` (after it was moved or rewritten elsewhere)."""
        self._tables.pop(path, None)

    def uid(self, path: Location) -> str | None:
        """The identity recorded in the table at ``path``, None when there is no table."""
        table = self.open(path)
        if table is None:
            return None
        description = table.metadata().description or ""
        return description[len(_UID_PREFIX):] if description.startswith(_UID_PREFIX) else ""

    def position(self, path: Location) -> int:
        """The table's position (see module docstring); -1 when it has none."""
        table = self.open(path)
        if table is None:
            return -1
        version = table.transaction_version(self.app_id)
        return -1 if version is None else int(version)

    def schema(self, path: Location) -> pa.Schema:
        """The Arrow schema of the table at ``path``."""
        return pa.schema(self.open(path).schema().to_arrow())

    def read(self, path: Location) -> pa.Table:
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

    def count(self, path: Location) -> int:
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

    def create(self, path: Location, data: pa.Table, *, uid: str, position: int, name: str,
               partition_by: tuple[str, ...] = (), properties: Mapping[str, str] | None = None) -> None:
        """Create the table at ``path`` holding ``data`` (maybe no rows), in one commit at ``position``."""
        from deltalake import write_deltalake

        missing = [column for column in partition_by if column not in data.schema.names]
        if missing:
            raise ReplicaError(f"{name}: cannot partition by {', '.join(missing)}: no such column")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.forget(path)
        # Statistics only on the columns delta-rs writes them right for (pyticdc.replica.maintenance).
        configuration = {**dict(properties or {}), **stats_configuration(data.schema)}
        write_deltalake(str(path), data, mode="error", name=name, description=_UID_PREFIX + uid,
                        configuration=configuration, partition_by=list(partition_by) or None,
                        commit_properties=self._commit(position), storage_options=self.storage_options,
                        target_file_size=self.target_file_size)
        self.commits += 1

    def overwrite(self, path: Location, data: pa.Table, *, position: int) -> None:
        """Replace the table's rows and schema with ``data`` in one commit at ``position``."""
        from deltalake import write_deltalake

        table = self.open(path)
        wanted = stats_configuration(data.schema)
        current = table.metadata().configuration
        if any(current.get(key) != value for key, value in wanted.items()):
            # Before any file of the new schema is written: a column turned into a wide DECIMAL must not get
            # statistics, a new one should.
            table.alter.set_table_properties(wanted, raise_if_not_exists=False)
        partitioning = [c for c in table.metadata().partition_columns if c in data.schema.names]
        write_deltalake(table, data, mode="overwrite", schema_mode="overwrite", partition_by=partitioning or None,
                        commit_properties=self._commit(position), storage_options=self.storage_options,
                        target_file_size=self.target_file_size)
        self.commits += 1

    def append(self, path: Location, data: pa.Table, *, position: int) -> None:
        """Append ``data`` in one commit at ``position``."""
        from deltalake import write_deltalake

        write_deltalake(self.open(path), data, mode="append", commit_properties=self._commit(position),
                        storage_options=self.storage_options, target_file_size=self.target_file_size)
        self.commits += 1

    def merge(self, path: Location, source: pa.Table, *, on: list[str], position: int,
              shapes: Mapping[int, Sequence[str]] | None = None,
              soft_columns: Sequence[str] | None = None) -> dict[str, Any]:
        """MERGE ``source`` (an action column, then the table's columns) on ``on``, in one commit at ``position``.

        ``_pyticdc_action = 'delete'`` rows delete their match; ``upsert`` rows update it or are inserted.
        Partial images: a ``_pyticdc_shape`` column numbers the upserts that carry only some columns, and
        ``shapes`` names the columns each such shape assigns (the others keep their value). Soft deletes:
        ``soft`` rows carrying their whole image (shape 0) update every column of their match or are inserted;
        partial ones (a handle-key-only DELETE) update only ``soft_columns``.
        """
        table = self.open(path)
        predicate = " AND ".join(f"t.{_quote(name)} = s.{_quote(name)}" for name in on)
        internal = (ACTION, SHAPE)
        columns = [name for name in source.column_names if name not in internal]
        assignments = {_quote(name): f"s.{_quote(name)}" for name in columns}
        action = f"s.{ACTION}"
        merger = (table.merge(source, predicate=predicate, source_alias="s", target_alias="t",
                              commit_properties=self._commit(position), streamed_exec=False)
                  .when_matched_delete(predicate=f"{action} = 'delete'"))
        if soft_columns is not None:
            merger = merger.when_matched_update({_quote(n): f"s.{_quote(n)}" for n in soft_columns},
                                                predicate=f"{action} = 'soft' AND s.{SHAPE} <> 0")
        for shape, names in sorted((shapes or {}).items()):
            merger = merger.when_matched_update({_quote(n): f"s.{_quote(n)}" for n in names},
                                                predicate=f"{action} = 'upsert' AND s.{SHAPE} = {int(shape)}")
        merger = merger.when_matched_update(assignments, predicate=f"{action} IN ('upsert', 'soft')")
        insert = f"{action} = 'upsert'" if soft_columns is None else \
            f"({action} = 'upsert' OR ({action} = 'soft' AND s.{SHAPE} = 0))"
        merger = merger.when_not_matched_insert(assignments, predicate=insert)
        metrics: dict[str, Any] = merger.execute()
        self.commits += 1
        return metrics

    def table_dirs(self) -> list[Location]:
        """Every directory that may hold a replica table: ``<schema>/<table>`` and the dropped ones."""
        found: list[Location] = []
        if not self.root.is_dir():
            return found
        schemas: list[Location] = sorted(self.root.iterdir(), key=str)
        for schema in schemas:
            if schema.is_dir() and schema.name != "_pyticdc":
                found.extend(sorted((p for p in schema.iterdir() if p.is_dir()), key=str))
        dropped = self.internal_path("dropped")
        if dropped.is_dir():
            found.extend(sorted((p for p in dropped.iterdir() if p.is_dir()), key=str))
        return found

    def is_dropped(self, path: Location) -> bool:
        """Whether ``path`` is in ``_pyticdc/dropped``."""
        return path.parent == self.internal_path("dropped")

    def move(self, path: Location, destination: Location) -> None:
        """Move a table directory (a rename, or a drop into ``_pyticdc/dropped``)."""
        if destination.exists():
            raise ReplicaError(f"cannot move {path} to {destination}: it exists")
        destination.parent.mkdir(parents=True, exist_ok=True)
        self.forget(path)
        self.forget(destination)
        if isinstance(path, RemotePath) and isinstance(destination, RemotePath):
            path.move_to(destination)  # no rename in an object store: copy, then delete (see there)
        else:
            os.replace(str(path), str(destination))
        self._remove_empty(path.parent)

    def remove(self, path: Location) -> None:
        """Delete a directory tree (used for leftovers the progress knows nothing of)."""
        self.forget(path)
        if isinstance(path, RemotePath):
            path.remove_tree()
        else:
            shutil.rmtree(path, ignore_errors=True)
        self._remove_empty(path.parent)

    def _remove_empty(self, folder: Location) -> None:
        if folder != self.root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _quote(name: str) -> str:
    # delta-rs predicates are SQL: double-quoted identifiers keep case and odd characters.
    return '"' + name.replace('"', '""') + '"'
