"""The in-memory reference replica: applies apply units and stores the consumer state with each one.

Rows are keyed by their handle: the HandleKey (else PrimaryKey) columns a row carries, else its
``_tidb_rowid`` (``row_id``), else — for a table without handle in a protocol that does not carry the
row id — the whole image (a multiset). When the handle a table is keyed by changes (a unique index
added to a table without PK, say) the table is re-keyed. DDL statements are executed from their text,
the way a MySQL downstream would, for the statements the simulator issues.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Final

from pyticdc.consumer import ApplyUnit, QuarantinedRecord, handle_columns
from pyticdc.errors import ReplicaError
from pyticdc.model import DDLEvent, Op, Row, RowChange, Value

__all__ = ["Replica", "ReplicaTable", "Strategy"]

#: How a table's rows are found: ("key", column names) | ("rowid",) | ("image",).
Strategy = tuple[str, ...]
_BY_NAME = itemgetter(0)


def _strategy(row: RowChange, image: Row) -> Strategy:
    columns = handle_columns(row.table_info)
    if columns and all(name in image for name in columns):
        return ("key", *columns)
    if row.row_id:
        return ("rowid",)
    return ("image",)


@dataclass
class ReplicaTable:
    """One replicated table: rows in slots, an index from handle to slots under the current strategy."""

    rows: dict[int, Row] = field(default_factory=dict)
    row_ids: dict[int, int] = field(default_factory=dict)
    strategy: Strategy = ("image",)
    index: dict[Hashable, list[int]] = field(default_factory=dict)
    next_slot: int = 0

    def _key(self, slot_row: Row, row_id: int | None, strategy: Strategy) -> Hashable:
        if strategy[0] == "key":
            return tuple(slot_row.get(name) for name in strategy[1:])
        if strategy[0] == "rowid":
            if row_id is None:
                raise ReplicaError("table re-keyed by _tidb_rowid but a stored row never carried one")
            return row_id
        return tuple(sorted(slot_row.items(), key=_BY_NAME))

    def _rekey(self, strategy: Strategy) -> None:
        if strategy == self.strategy:
            return
        index: dict[Hashable, list[int]] = {}
        for slot, row in self.rows.items():
            index.setdefault(self._key(row, self.row_ids.get(slot), strategy), []).append(slot)
        self.strategy, self.index = strategy, index

    def _find(self, key: Hashable) -> int | None:
        slots = self.index.get(key)
        return slots[0] if slots else None

    def _add(self, row: Row, row_id: int) -> None:
        key = self._key(row, row_id or None, self.strategy)
        if self.strategy[0] != "image" and self.index.get(key):
            raise ReplicaError(f"insert of an existing handle {key!r}")
        slot = self.next_slot
        self.next_slot += 1
        self.rows[slot] = row
        if row_id:
            self.row_ids[slot] = row_id
        self.index.setdefault(key, []).append(slot)

    def _remove(self, slot: int) -> None:
        key = self._key(self.rows[slot], self.row_ids.get(slot), self.strategy)
        self.index[key].remove(slot)
        if not self.index[key]:
            del self.index[key]
        del self.rows[slot]
        self.row_ids.pop(slot, None)

    def apply(self, change: RowChange) -> None:
        """Apply one row change; ReplicaError if it does not fit (a double apply, a missing row)."""
        image = change.columns if change.columns is not None else change.pre_columns
        if image is None:
            return
        if change.handle_key_only and change.op != Op.DELETE:
            # TiCDC's consumer re-reads such rows from the upstream at commit ts; a replica cannot.
            raise ReplicaError(f"{change.op.value} carries only its handle key (large message without claim-check)")
        strategy = _strategy(change, image)
        if change.op == Op.DELETE and strategy[0] != "key" and self._key_only(change, image):
            # delete-only-output-handle-key-columns: the image is the handle key (Canal-JSON does not say so,
            # and names no PK for a unique-key handle), so the row is found by the columns it carries.
            strategy = ("key", *sorted(image))
        self._rekey(strategy)
        if change.op == Op.INSERT:
            assert change.columns is not None
            self._add(change.columns, change.row_id)
            return
        lookup = change.pre_columns if change.pre_columns is not None else change.columns
        assert lookup is not None
        slot = self._find(self._key(lookup, change.row_id or None, self.strategy))
        if slot is None:
            raise ReplicaError(f"{change.op.value} of a missing row {dict(lookup)!r}")
        self._remove(slot)
        if change.op == Op.UPDATE and change.columns is not None:
            self._add(change.columns, change.row_id)

    def _key_only(self, change: RowChange, image: Row) -> bool:
        """Whether a DELETE image carries only some of the columns the table's rows have (its handle key)."""
        if change.handle_key_only:
            return True
        stored = next(iter(self.rows.values()), None)
        return stored is not None and image.keys() < stored.keys()

    def map_rows(self, transform: Mapping[str, Value | None], drop: tuple[str, ...] = ()) -> None:
        """Add columns with a value (ADD COLUMN) and remove others (DROP COLUMN) on every row."""
        rows = {slot: Row({**{k: v for k, v in row.items() if k not in drop}, **transform})
                for slot, row in self.rows.items()}
        self.rows = rows
        strategy = self.strategy
        if strategy[0] == "key" and set(strategy[1:]) & set(drop):
            strategy = ("image",)
        self.strategy = ("stale",)  # images changed: force the index to be rebuilt
        self._rekey(strategy)

    def images(self) -> Counter[Row]:
        """The table's rows as a multiset."""
        return Counter(self.rows.values())


# --------------------------------------------------------------------------- DDL text
_NAME = r"`((?:[^`]|``)+)`"
_QUALIFIED = rf"(?:{_NAME}\.)?{_NAME}"
_DATABASE: Final = re.compile(
    rf"^\s*(CREATE|DROP|ALTER)\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?{_NAME}", re.I)
_CREATE_TABLE: Final = re.compile(rf"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_QUALIFIED}", re.I)
_DROP_TABLE: Final = re.compile(rf"^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?{_QUALIFIED}", re.I)
_TRUNCATE: Final = re.compile(rf"^\s*TRUNCATE\s+(?:TABLE\s+)?{_QUALIFIED}", re.I)
_RENAME: Final = re.compile(rf"^\s*RENAME\s+TABLE\s+{_QUALIFIED}\s+TO\s+{_QUALIFIED}", re.I)
_RENAME_PAIR: Final = re.compile(rf"{_QUALIFIED}\s+TO\s+{_QUALIFIED}", re.I)
_ALTER: Final = re.compile(rf"^\s*ALTER\s+TABLE\s+{_QUALIFIED}\s+(.*)$", re.I | re.S)
_ADD_COLUMN: Final = re.compile(rf"^ADD\s+(?:COLUMN\s+)?{_NAME}\s+(.*)$", re.I | re.S)
_DROP_COLUMN: Final = re.compile(rf"^DROP\s+(?:COLUMN\s+)?{_NAME}\s*$", re.I)
_DEFAULT: Final = re.compile(r"\bDEFAULT\s+('(?:[^']|'')*'|NULL|-?[0-9.]+)", re.I)
_STRING_TYPES: Final = re.compile(r"^\s*(?:var)?(?:char|binary)|^\s*(?:tiny|medium|long)?(?:text|blob)", re.I)
#: ALTER clauses that leave every row's values as they are.
_NO_DATA_CHANGE: Final = re.compile(
    r"^(?:ADD\s+(?:UNIQUE\s+)?(?:INDEX|KEY)|DROP\s+(?:INDEX|KEY)|MODIFY\s+(?:COLUMN\s+)?|ALTER\s+INDEX|RENAME\s+INDEX|"
    r"COMMENT)", re.I)


def _unquote(name: str) -> str:
    return name.replace("``", "`")


def _default_value(definition: str) -> Value:
    match = _DEFAULT.search(definition)
    if match is None or match.group(1).upper() == "NULL":
        return None
    literal = match.group(1)
    if literal.startswith("'"):
        text = literal[1:-1].replace("''", "'")
        return text.encode("utf-8") if _STRING_TYPES.match(definition) else text
    return float(literal) if "." in literal else int(literal)


class Replica:
    """An in-memory downstream database that applies apply units and keeps the consumer state with them."""

    def __init__(self, *, strict: bool = True) -> None:
        self.tables: dict[tuple[str, str], ReplicaTable] = {}
        #: Consumer state stored with the last applied unit (None before the first).
        self.state: bytes | None = None
        #: The replica equals the upstream at this ts.
        self.consistent_ts = 0
        self.units_applied = 0
        self.rows_applied = 0
        self.ddls_applied = 0
        self.quarantine: list[QuarantinedRecord] = []
        #: DDL statements the replica did not understand (ReplicaError instead when strict).
        self.unhandled_ddl: list[str] = []
        self.strict = strict

    def apply(self, unit: ApplyUnit) -> None:
        """Apply one unit and store its consumer state in the same step (the commit protocol)."""
        if unit.kind == "rows":
            for change in unit.rows:
                table = self.tables.get((change.schema, change.table))
                if table is None:
                    raise ReplicaError(f"row for unknown table {change.schema}.{change.table}@{change.commit_ts}")
                table.apply(change)
            self.rows_applied += len(unit.rows)
        elif unit.kind == "ddl":
            assert unit.ddl is not None
            self.execute(unit.ddl)
            self.ddls_applied += 1
        elif unit.kind == "quarantine":
            self.quarantine.extend(unit.quarantined)
        if unit.consistent_ts < self.consistent_ts:
            raise ReplicaError(f"unit goes back in time: {unit.consistent_ts} < {self.consistent_ts}")
        self.consistent_ts = unit.consistent_ts
        self.state = unit.state
        self.units_applied += 1

    def _unhandled(self, query: str) -> None:
        if self.strict:
            raise ReplicaError(f"DDL the replica cannot execute: {query!r}")
        self.unhandled_ddl.append(query)

    def _table(self, schema: str | None, table: str, default_schema: str) -> tuple[str, str]:
        return (_unquote(schema) if schema else default_schema, _unquote(table))

    def execute(self, ddl: DDLEvent) -> None:
        """Execute a DDL statement's effect on the rows (create, drop, truncate, rename, add/drop column)."""
        query = ddl.query
        if match := _DATABASE.match(query):
            if match.group(1).upper() == "DROP":
                for key in [k for k in self.tables if k[0] == _unquote(match.group(2))]:
                    del self.tables[key]
        elif match := _CREATE_TABLE.match(query):
            key = self._table(match.group(1), match.group(2), ddl.schema)
            if key in self.tables:
                raise ReplicaError(f"CREATE TABLE of an existing table {key}")
            self.tables[key] = ReplicaTable()
        elif match := _DROP_TABLE.match(query):
            self.tables.pop(self._table(match.group(1), match.group(2), ddl.schema), None)
        elif match := _TRUNCATE.match(query):
            self.tables[self._table(match.group(1), match.group(2), ddl.schema)] = ReplicaTable()
        elif _RENAME.match(query):
            # RENAME TABLE a TO b[, c TO d ...]: the pairs move one after another.
            for pair in _RENAME_PAIR.finditer(query):
                old = self._table(pair.group(1), pair.group(2), ddl.schema)
                new = self._table(pair.group(3), pair.group(4), ddl.schema)
                if old not in self.tables:
                    raise ReplicaError(f"RENAME of an unknown table {old}")
                self.tables[new] = self.tables.pop(old)
        elif match := _ALTER.match(query):
            key = self._table(match.group(1), match.group(2), ddl.schema)
            table = self.tables.get(key)
            if table is None:
                raise ReplicaError(f"ALTER of an unknown table {key}")
            clause = match.group(3).strip()
            if add := _ADD_COLUMN.match(clause):
                table.map_rows({_unquote(add.group(1)): _default_value(add.group(2))})
            elif drop := _DROP_COLUMN.match(clause):
                table.map_rows({}, drop=(_unquote(drop.group(1)),))
            elif not _NO_DATA_CHANGE.match(clause):
                self._unhandled(query)
        else:
            self._unhandled(query)

    def content(self) -> dict[tuple[str, str], Counter[Row]]:
        """Every table's rows as a multiset, by (schema, table)."""
        return {key: table.images() for key, table in self.tables.items()}
