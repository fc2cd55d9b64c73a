"""The consumer's schema cache: every version of every table it has learned, by validity ts."""

from __future__ import annotations

import bisect
from typing import Any

import msgspec

from pyticdc.consumer.state import compact_table
from pyticdc.model import Bootstrap, DDLEvent, TableInfo

__all__ = ["SchemaCache"]


class SchemaCache:
    """Table schemas learned from DDL, BOOTSTRAP and in-band schemas, versioned by the ts they start at.

    A version learned with ``valid_from = v`` is the schema of rows committed at ts >= v until the
    next version; a row carrying its schema version (Simple ``schemaVersion``) is matched exactly.
    """

    def __init__(self) -> None:
        # (schema, table) -> sorted [(valid_from, TableInfo)]; at most one entry per valid_from.
        self._versions: dict[tuple[str, str], list[tuple[int, TableInfo]]] = {}
        # The builtins form, rebuilt only after a change (a state is written with every apply unit).
        self._builtins: list[Any] | None = None
        self._blobs: dict[int, tuple[TableInfo, msgspec.Raw]] = {}

    def __len__(self) -> int:
        return sum(len(v) for v in self._versions.values())

    def learn(self, table_info: TableInfo, valid_from: int) -> bool:
        """Record ``table_info`` as valid from ``valid_from``; True if it was not known yet."""
        versions = self._versions.setdefault((table_info.schema, table_info.table), [])
        keys = [v for v, _ in versions]
        at = bisect.bisect_left(keys, valid_from)
        if at < len(versions) and versions[at][0] == valid_from:
            if versions[at][1] == table_info:
                return False
            # A later message about the same version wins (a BOOTSTRAP refreshed after a rename, say).
            versions[at] = (valid_from, table_info)
        else:
            versions.insert(at, (valid_from, table_info))
        self._builtins = None
        return True

    def learn_ddl(self, ddl: DDLEvent) -> set[tuple[str, str]]:
        """Learn the schemas a DDL carries; the tables whose versions changed."""
        changed: set[tuple[str, str]] = set()
        if ddl.pre_table_info is not None and ddl.pre_table_info.columns:
            pre = ddl.pre_table_info
            if self.learn(pre, pre.schema_version):
                changed.add((pre.schema, pre.table))
        if ddl.table_info is not None and ddl.table_info.columns:
            post = ddl.table_info
            # UpdateTS of the new version precedes the DDL's commit ts; rows after the DDL use it.
            valid_from = post.schema_version if 0 < post.schema_version <= ddl.commit_ts else ddl.commit_ts
            if self.learn(post, valid_from):
                changed.add((post.schema, post.table))
        return changed

    def learn_bootstrap(self, bootstrap: Bootstrap) -> set[tuple[str, str]]:
        """Learn a BOOTSTRAP's schema (valid from its schema version); the tables whose versions changed."""
        info = bootstrap.table_info
        return {(info.schema, info.table)} if self.learn(info, info.schema_version) else set()

    def lookup(self, schema: str, table: str, commit_ts: int, schema_version: int = 0) -> TableInfo | None:
        """The schema a row of ``schema.table`` committed at ``commit_ts`` was written under, or None."""
        versions = self._versions.get((schema, table))
        if not versions:
            return None
        if schema_version:
            for _, info in versions:
                if info.schema_version == schema_version:
                    return info
            return None
        at = bisect.bisect_right([v for v, _ in versions], commit_ts)
        return versions[at - 1][1] if at else None

    def versions(self) -> list[tuple[int, TableInfo]]:
        """Every known version as (valid-from ts, TableInfo)."""
        return [item for versions in self._versions.values() for item in versions]

    def newest_valid_from(self, schema: str, table: str) -> int | None:
        """The start ts of the newest known version of a table, None if the table is unknown."""
        versions = self._versions.get((schema, table))
        return versions[-1][0] if versions else None

    def prune(self, released_ts: int) -> None:
        """Forget versions no row still to come can need: all but the newest one valid at ``released_ts``."""
        for versions in self._versions.values():
            at = bisect.bisect_right([v for v, _ in versions], released_ts)
            if at > 1:
                for _, info in versions[: at - 1]:
                    self._blobs.pop(id(info), None)
                del versions[: at - 1]
                self._builtins = None

    def to_builtins(self) -> list[Any]:
        """The cache as msgpack-able builtins."""
        if self._builtins is None:
            self._builtins = [[v, self._compact(info)] for versions in self._versions.values() for v, info in versions]
        return self._builtins

    def _compact(self, info: TableInfo) -> msgspec.Raw:
        # Encoded once per schema: the cache is rewritten into every state.
        blob = self._blobs.get(id(info))
        if blob is None or blob[0] is not info:
            blob = self._blobs[id(info)] = (info, msgspec.Raw(msgspec.msgpack.encode(compact_table(info))))
        return blob[1]

    @classmethod
    def from_builtins(cls, data: list[Any]) -> SchemaCache:
        """Rebuild a cache from ``to_builtins`` output."""
        cache = cls()
        for valid_from, info in data:
            cache.learn(msgspec.convert(info, TableInfo), int(valid_from))
        return cache
