"""A seedable simulated TiDB: tables of every column type, random transactions and DDL, and ground truth.

``simulate(seed)`` returns a :class:`History`: the event stream TiCDC would hand its MQ sink for the
workload (rows of one transaction share a commit ts; an UPDATE that moves a clustered or int handle is
a DELETE plus an INSERT, as TiKV sees it; other UPDATEs stay UPDATEs for the router to split; DDL with
table info before and after; watermarks at intervals; a BOOTSTRAP before a table's first row and
periodically) and ``truth_at(commit_ts)``, the content of every table at any ts.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

import msgspec

from pyticdc.model import (
    ActionType,
    Bootstrap,
    ColumnFlag,
    ColumnInfo,
    DDLEvent,
    Event,
    IndexInfo,
    Op,
    Row,
    RowChange,
    TableInfo,
    TypeCode,
    Value,
    Watermark,
)
from pyticdc.mysql import handle_index_columns, table_info_with_flags
from pyticdc.sim.values import random_value

__all__ = ["TEMPLATES", "History", "TableTruth", "WorkloadConfig", "handle_less", "simulate"]

F = ColumnFlag
#: TiDB's first auto-allocated table id in a fresh cluster is around 100.
_FIRST_TABLE_ID: Final = 100


def _column(
    name: str, type_desc: str, type_code: int, *, text: bool = False, flen: int = -1, decimal: int = 0,
    elems: tuple[str, ...] | None = None, unsigned: bool = False, nullable: bool = True, default: str | None = None,
    zerofill: bool = False,
) -> ColumnInfo:
    charset, collation = ("utf8mb4", "utf8mb4_bin") if text else ("binary", "binary")
    return ColumnInfo(
        name=name, type_code=type_code, charset=charset, collation=collation, flen=flen, decimal=decimal,
        elems=elems, unsigned=unsigned, zerofill=zerofill, nullable=nullable, default=default, type_desc=type_desc,
    )


def _ints() -> list[ColumnInfo]:
    return [
        _column("c_tinyint", "tinyint(4)", TypeCode.TINY, flen=4),
        _column("c_tinyint_u", "tinyint(3) unsigned", TypeCode.TINY, flen=3, unsigned=True),
        _column("c_bool", "tinyint(1)", TypeCode.TINY, flen=1),
        _column("c_smallint", "smallint(6)", TypeCode.SHORT, flen=6),
        _column("c_smallint_u", "smallint(5) unsigned", TypeCode.SHORT, flen=5, unsigned=True),
        _column("c_mediumint", "mediumint(9)", TypeCode.INT24, flen=9),
        _column("c_mediumint_u", "mediumint(8) unsigned", TypeCode.INT24, flen=8, unsigned=True),
        _column("c_int", "int(11)", TypeCode.LONG, flen=11),
        _column("c_int_u", "int(10) unsigned", TypeCode.LONG, flen=10, unsigned=True),
        _column("c_bigint", "bigint(20)", TypeCode.LONGLONG, flen=20),
        _column("c_bigint_u", "bigint(20) unsigned", TypeCode.LONGLONG, flen=20, unsigned=True),
        _column("c_float", "float", TypeCode.FLOAT, flen=12, decimal=-1),
        _column("c_double", "double", TypeCode.DOUBLE, flen=22, decimal=-1),
        _column("c_decimal", "decimal(20,4)", TypeCode.NEWDECIMAL, flen=20, decimal=4),
        _column("c_decimal0", "decimal(10,0)", TypeCode.NEWDECIMAL, flen=10, decimal=0),
        # TiDB gives YEAR the unsigned and zerofill flags, BIT the unsigned flag.
        _column("c_year", "year(4)", TypeCode.YEAR, flen=4, unsigned=True, zerofill=True),
        _column("c_bit1", "bit(1)", TypeCode.BIT, flen=1, unsigned=True),
        _column("c_bit", "bit(12)", TypeCode.BIT, flen=12, unsigned=True),
    ]


def _temporal(vector: bool) -> list[ColumnInfo]:
    columns = [
        _column("c_date", "date", TypeCode.DATE, flen=10),
        _column("c_datetime", "datetime", TypeCode.DATETIME, flen=19),
        _column("c_datetime6", "datetime(6)", TypeCode.DATETIME, flen=26, decimal=6),
        _column("c_timestamp", "timestamp", TypeCode.TIMESTAMP, flen=19),
        _column("c_timestamp3", "timestamp(3)", TypeCode.TIMESTAMP, flen=23, decimal=3),
        _column("c_time", "time", TypeCode.TIME, flen=10),
        _column("c_time3", "time(3)", TypeCode.TIME, flen=14, decimal=3),
        _column("c_json", "json", TypeCode.JSON),
        _column("c_enum", "enum('red','green','blue')", TypeCode.ENUM, text=True, elems=("red", "green", "blue")),
        _column("c_set", "set('a','b','c','d')", TypeCode.SET, text=True, elems=("a", "b", "c", "d")),
    ]
    if vector:
        columns.append(_column("c_vector", "vector(3)", TypeCode.TIDB_VECTOR, flen=3))
    return columns


def _texts() -> list[ColumnInfo]:
    return [
        _column("c_char", "char(10)", TypeCode.STRING, text=True, flen=10),
        _column("c_varchar", "varchar(64)", TypeCode.VARCHAR, text=True, flen=64),
        _column("c_tinytext", "tinytext", TypeCode.TINY_BLOB, text=True, flen=255),
        _column("c_text", "text", TypeCode.BLOB, text=True, flen=65535),
        _column("c_mediumtext", "mediumtext", TypeCode.MEDIUM_BLOB, text=True, flen=16777215),
        _column("c_longtext", "longtext", TypeCode.LONG_BLOB, text=True, flen=4294967295),
    ]


def _binaries() -> list[ColumnInfo]:
    return [
        _column("c_binary", "binary(8)", TypeCode.STRING, flen=8),
        _column("c_varbinary", "varbinary(32)", TypeCode.VARCHAR, flen=32),
        _column("c_tinyblob", "tinyblob", TypeCode.TINY_BLOB, flen=255),
        _column("c_blob", "blob", TypeCode.BLOB, flen=65535),
        _column("c_mediumblob", "mediumblob", TypeCode.MEDIUM_BLOB, flen=16777215),
        _column("c_longblob", "longblob", TypeCode.LONG_BLOB, flen=4294967295),
    ]


@dataclass(frozen=True)
class Template:
    """A table shape: columns (without key flags), indexes, and how TiDB stores its rows."""

    columns: tuple[ColumnInfo, ...]
    indexes: tuple[IndexInfo, ...]
    #: The PK is a single integer column stored as the row's handle.
    pk_is_handle: bool = False
    #: The PK is the clustered (common) handle.
    clustered: bool = False
    #: Columns the simulator keeps unique anyway (so no two rows are ever identical).
    distinct: tuple[str, ...] = ()


def _templates(vector: bool) -> dict[str, Template]:
    return {
        # int handle: BIGINT PK is the row key; a nullable unique key is not a handle.
        "t_int": Template(
            columns=(_column("id", "bigint(20)", TypeCode.LONGLONG, flen=20, nullable=False),
                     _column("u_code", "varchar(32)", TypeCode.VARCHAR, text=True, flen=32), *_ints()),
            indexes=(IndexInfo(name="primary", columns=("id",), primary=True, unique=True),
                     IndexInfo(name="uk_code", columns=("u_code",), unique=True)),
            pk_is_handle=True,
        ),
        # common handle: clustered composite PK.
        "t_comp": Template(
            columns=(_column("k1", "int(11)", TypeCode.LONG, flen=11, nullable=False),
                     _column("k2", "varchar(16)", TypeCode.VARCHAR, text=True, flen=16, nullable=False),
                     *_temporal(vector)),
            indexes=(IndexInfo(name="PRIMARY", columns=("k1", "k2"), primary=True, unique=True),),
            clustered=True,
        ),
        # non-clustered PK: rows live under _tidb_rowid, the PK is the handle key.
        "t_np": Template(
            columns=(_column("code", "varchar(20)", TypeCode.VARCHAR, text=True, flen=20, nullable=False),
                     _column("n", "int(11)", TypeCode.LONG, flen=11), *_texts()),
            indexes=(IndexInfo(name="PRIMARY", columns=("code",), primary=True, unique=True),),
        ),
        # no PK: the NOT NULL unique key (a, b) is the handle key.
        "t_uk": Template(
            columns=(_column("a", "int(11)", TypeCode.LONG, flen=11, nullable=False),
                     _column("b", "varbinary(16)", TypeCode.VARCHAR, flen=16, nullable=False),
                     _column("c_note", "varchar(16)", TypeCode.VARCHAR, text=True, flen=16), *_binaries()),
            indexes=(IndexInfo(name="uk_ab", columns=("a", "b"), unique=True),),
        ),
        # no handle at all: _tidb_rowid; a nullable unique key; seq stays distinct (and can become the handle).
        "t_rowid": Template(
            columns=(_column("seq", "bigint(20) unsigned", TypeCode.LONGLONG, flen=20, unsigned=True, nullable=False),
                     _column("c_varchar", "varchar(32)", TypeCode.VARCHAR, text=True, flen=32),
                     _column("v", "double", TypeCode.DOUBLE, flen=22, decimal=-1),
                     _column("j", "json", TypeCode.JSON),
                     _column("d", "decimal(8,3)", TypeCode.NEWDECIMAL, flen=8, decimal=3)),
            indexes=(IndexInfo(name="uk_varchar", columns=("c_varchar",), unique=True),),
            distinct=("seq",),
        ),
    }


#: The table shapes, by the name of their first instance.
TEMPLATES: Final[dict[str, Template]] = _templates(vector=True)


def handle_less(names: tuple[str, ...]) -> tuple[str, ...]:
    """The table shapes among ``names`` that have no handle key (neither a PK nor a NOT NULL unique key).

    TiCDC replicates such tables only with ``force-replicate``, which it refuses together with
    ``delete-only-output-handle-key-columns`` (a DELETE of such a table would carry no column at all).
    """
    return tuple(name for name in names if name in TEMPLATES and not handle_index_columns(
        TEMPLATES[name].columns, TEMPLATES[name].indexes, TEMPLATES[name].pk_is_handle))


@dataclass(frozen=True)
class TableTruth:
    """One table's content at one ts: its schema and rows keyed by TiKV row key (handle or _tidb_rowid)."""

    info: TableInfo
    rows: Mapping[Hashable, Row]


#: Every table's content at one ts, by (schema, table).
Snapshot = Mapping[tuple[str, str], TableTruth]


@dataclass(frozen=True)
class WorkloadConfig:
    """Shape of a simulated workload."""

    transactions: int = 60
    max_rows_per_txn: int = 5
    #: Chance of a DDL after each transaction.
    ddl_probability: float = 0.12
    #: Chance of a watermark after each transaction (one always ends the history).
    watermark_probability: float = 0.35
    max_table_rows: int = 30
    schema: str = "sim"
    tables: tuple[str, ...] = tuple(TEMPLATES)
    #: Include a VECTOR column.
    vector: bool = True
    #: Re-send a table's BOOTSTRAP after this many transactions touching it.
    bootstrap_every: int = 15
    start_physical_ms: int = 1_700_000_000_000


@dataclass
class _Table:
    name: str
    base: str
    template: Template
    table_id: int
    schema_version: int
    columns: list[ColumnInfo]
    indexes: list[IndexInfo]
    rows: dict[Hashable, Row] = field(default_factory=dict)
    info: TableInfo | None = None

    def kv_key(self, row: Mapping[str, Value], rowid: int) -> Hashable:
        if self.template.pk_is_handle:
            return row["id"]
        if self.template.clustered:
            return tuple(row[name] for name in _pk(self.template))
        return rowid


def _pk(template: Template) -> tuple[str, ...]:
    return next((i.columns for i in template.indexes if i.primary), ())


class History:
    """A simulated changefeed: the events TiCDC would send and the truth at every commit ts."""

    def __init__(self, events: list[Event], versions: list[tuple[int, Snapshot]], config: WorkloadConfig,
                 seed: int) -> None:
        self.events = events
        self.config = config
        self.seed = seed
        self._versions = versions
        self._commit_ts = [commit_ts for commit_ts, _ in versions]

    def truth_at(self, commit_ts: int) -> Snapshot:
        """Every table's content once all transactions and DDL committed at or before ``commit_ts`` applied."""
        at = bisect.bisect_right(self._commit_ts, commit_ts)
        return self._versions[at - 1][1] if at else {}

    @property
    def commit_timestamps(self) -> list[int]:
        """Commit ts of every transaction and DDL, ascending."""
        return self._commit_ts[1:]

    @property
    def final_resolved_ts(self) -> int:
        """The last watermark of the history (everything is complete at it)."""
        return max(e.resolved_ts for e in self.events if isinstance(e, Watermark))

    @property
    def row_events(self) -> int:
        """Number of row changes in the history."""
        return sum(1 for e in self.events if isinstance(e, RowChange))

    def segments(self) -> Iterator[list[Event]]:
        """The events cut after each watermark (each segment ends with its watermark)."""
        current: list[Event] = []
        for event in self.events:
            current.append(event)
            if isinstance(event, Watermark):
                yield current
                current = []
        if current:
            yield current


class _Simulator:
    def __init__(self, seed: int, config: WorkloadConfig) -> None:
        self.rng = random.Random(seed)
        self.config = config
        self.templates = _templates(config.vector)
        self.physical_ms = config.start_physical_ms
        self.logical = 0
        self.last_tso = 0
        self.next_table_id = _FIRST_TABLE_ID
        self.next_rowid: dict[int, int] = {}
        self.next_seq = 2**63 - 40  # seq values cross 2**63: uint64 keys must survive end to end
        self.tables: dict[str, _Table] = {}
        self.names = 0
        self.events: list[Event] = []
        self.versions: list[tuple[int, Snapshot]] = [(0, {})]
        self.bootstrapped: dict[str, tuple[int, int]] = {}

    # ------------------------------------------------------------------ clock
    def tso(self) -> int:
        """A fresh TSO, strictly greater than every earlier one."""
        step = self.rng.choice((0, 0, 1, 1, 2, 5, 40))
        if step:
            self.physical_ms += step
            self.logical = self.rng.randrange(0, 4)
        else:
            self.logical += 1 + self.rng.randrange(3)
        tso = (self.physical_ms << 18) | self.logical
        assert tso > self.last_tso
        self.last_tso = tso
        return tso

    # ------------------------------------------------------------------ truth
    def record(self, commit_ts: int, changed: dict[str, _Table | None]) -> None:
        snapshot = dict(self.versions[-1][1])
        for name, table in changed.items():
            key = (self.config.schema, name)
            if table is None:
                snapshot.pop(key, None)
            else:
                assert table.info is not None
                snapshot[key] = TableTruth(info=table.info, rows=dict(table.rows))
        self.versions.append((commit_ts, snapshot))

    # ------------------------------------------------------------------ tables
    def rebuild(self, table: _Table) -> None:
        table.info = table_info_with_flags(self.config.schema, table.name, table.table_id, table.schema_version,
                                    table.columns, table.indexes, table.template.pk_is_handle)

    def new_table_id(self) -> int:
        self.next_table_id += self.rng.randint(1, 3)
        return self.next_table_id

    def fresh_name(self, base: str) -> str:
        self.names += 1
        return f"{base}_{self.names}"

    def quoted(self, name: str) -> str:
        return f"`{self.config.schema}`.`{name}`"

    def ddl(self, query: str, action: ActionType, table: _Table | None, pre: TableInfo | None,
            changed: dict[str, _Table | None]) -> None:
        start_ts = self.tso()
        if table is not None and action != ActionType.RENAME_TABLE:
            # TableInfo.UpdateTS: the schema version moves with every DDL but RENAME (reference §6.3).
            table.schema_version = start_ts
        if table is not None:
            self.rebuild(table)
        commit_ts = self.tso()
        post = table.info if table is not None else None
        name = table.name if table is not None else ""
        if action == ActionType.DROP_TABLE:
            post = pre
            name = pre.table if pre is not None else ""
        self.events.append(DDLEvent(
            query=query, ddl_type=int(action), commit_ts=commit_ts, start_ts=start_ts, schema=self.config.schema,
            table=name, table_info=post, pre_table_info=pre,
        ))
        self.record(commit_ts, changed)

    def create_table(self, template_name: str, name: str) -> None:
        template = self.templates[template_name]
        table = _Table(name=name, base=template_name, template=template, table_id=self.new_table_id(), schema_version=0,
                       columns=list(template.columns), indexes=list(template.indexes))
        self.next_rowid[table.table_id] = 1
        self.tables[name] = table
        definitions = [f"`{c.name}` {c.type_desc}{'' if c.nullable else ' NOT NULL'}" for c in template.columns]
        for index in template.indexes:
            cols = ",".join(f"`{c}`" for c in index.columns)
            if index.primary:
                clustered = "CLUSTERED" if template.clustered or template.pk_is_handle else "NONCLUSTERED"
                definitions.append(f"PRIMARY KEY ({cols}) /*T![clustered_index] {clustered} */")
            else:
                definitions.append(f"{'UNIQUE ' if index.unique else ''}KEY `{index.name}` ({cols})")
        query = f"CREATE TABLE {self.quoted(name)} ({', '.join(definitions)})"
        self.ddl(query, ActionType.CREATE_TABLE, table, None, {name: table})

    # ------------------------------------------------------------------ DDL
    def random_ddl(self) -> None:
        rng = self.rng
        kinds = ["create", "truncate", "rename", "add_column", "add_column", "drop_column", "modify_column",
                 "add_index", "drop_index"]
        if len(self.tables) > 2:
            kinds.append("drop")
        kind = rng.choice(kinds)
        if kind == "create" or not self.tables:
            base = rng.choice(self.config.tables)
            self.create_table(base, self.fresh_name(base))
            return
        table = self.tables[rng.choice(sorted(self.tables))]
        pre = table.info
        name = table.name
        if kind == "drop":
            del self.tables[name]
            self.ddl(f"DROP TABLE {self.quoted(name)}", ActionType.DROP_TABLE, None, pre, {name: None})
        elif kind == "truncate":
            table.table_id = self.new_table_id()
            self.next_rowid[table.table_id] = 1
            table.rows = {}
            self.ddl(f"TRUNCATE TABLE {self.quoted(name)}", ActionType.TRUNCATE_TABLE, table, pre, {name: table})
        elif kind == "rename":
            new_name = self.fresh_name(table.base)
            del self.tables[name]
            table.name = new_name
            self.tables[new_name] = table
            self.ddl(f"RENAME TABLE {self.quoted(name)} TO {self.quoted(new_name)}", ActionType.RENAME_TABLE, table,
                     pre, {name: None, new_name: table})
        elif kind == "add_column":
            self.add_column(table, pre)
        elif kind == "drop_column":
            indexed = {c for i in table.indexes for c in i.columns} | set(table.template.distinct)
            candidates = [c for c in table.columns if c.name not in indexed]
            if len(candidates) < 2:
                return
            column = rng.choice(candidates)
            table.columns = [c for c in table.columns if c.name != column.name]
            table.rows = {k: Row({n: v for n, v in r.items() if n != column.name}) for k, r in table.rows.items()}
            self.ddl(f"ALTER TABLE {self.quoted(name)} DROP COLUMN `{column.name}`", ActionType.DROP_COLUMN, table,
                     pre, {name: table})
        elif kind == "modify_column":
            if not self.modify_column(table, pre):
                self.add_column(table, pre)
        elif kind == "add_index":
            self.add_index(table, pre)
        else:
            added = [i for i in table.indexes if i.name.startswith("idx_") or i.name == "uk_seq"]
            if not added:
                self.add_index(table, pre)
                return
            index = rng.choice(added)
            table.indexes = [i for i in table.indexes if i.name != index.name]
            self.ddl(f"ALTER TABLE {self.quoted(name)} DROP INDEX `{index.name}`", ActionType.DROP_INDEX, table, pre,
                     {name: table})

    def add_column(self, table: _Table, pre: TableInfo | None) -> None:
        self.names += 1
        name = f"c_add{self.names}"
        form = self.rng.randrange(3)
        value: Value
        if form == 0:
            column = _column(name, "int(11)", TypeCode.LONG, flen=11)
            clause, value = "int(11) NULL", None
        elif form == 1:
            column = _column(name, "int(11)", TypeCode.LONG, flen=11, nullable=False, default="7")
            clause, value = "int(11) NOT NULL DEFAULT 7", 7
        else:
            column = _column(name, "varchar(16)", TypeCode.VARCHAR, text=True, flen=16, nullable=False,
                             default="dflt")
            clause, value = "varchar(16) NOT NULL DEFAULT 'dflt'", b"dflt"
        table.columns.append(column)
        # Existing rows read the column's original default (NULL when none).
        table.rows = {k: Row({**r, name: value}) for k, r in table.rows.items()}
        self.ddl(f"ALTER TABLE {self.quoted(table.name)} ADD COLUMN `{name}` {clause}", ActionType.ADD_COLUMN, table,
                 pre, {table.name: table})

    def modify_column(self, table: _Table, pre: TableInfo | None) -> bool:
        # Only value-preserving widenings: existing rows keep their values.
        candidates = [c for c in table.columns if c.name.startswith("c_add")
                      and (c.type_code == TypeCode.LONG or (c.type_code == TypeCode.VARCHAR and c.flen < 64))]
        if not candidates:
            return False
        column = self.rng.choice(candidates)
        if column.type_code == TypeCode.LONG:
            new = msgspec.structs.replace(column, type_code=TypeCode.LONGLONG, flen=20, type_desc="bigint(20)")
        else:
            new = msgspec.structs.replace(column, flen=64, type_desc="varchar(64)")
        null = "NULL" if new.nullable else "NOT NULL"
        default = "" if new.default is None else (
            f" DEFAULT {new.default}" if new.type_code != TypeCode.VARCHAR else f" DEFAULT '{new.default}'")
        table.columns = [new if c.name == column.name else c for c in table.columns]
        self.ddl(f"ALTER TABLE {self.quoted(table.name)} MODIFY COLUMN `{column.name}` {new.type_desc} {null}{default}",
                 ActionType.MODIFY_COLUMN, table, pre, {table.name: table})
        return True

    def add_index(self, table: _Table, pre: TableInfo | None) -> None:
        names = {i.name for i in table.indexes}
        if "seq" in table.template.distinct and "uk_seq" not in names and self.rng.random() < 0.5:
            # A NOT NULL unique key on a table without PK becomes its handle key (§1.2).
            table.indexes.append(IndexInfo(name="uk_seq", columns=("seq",), unique=True))
            self.ddl(f"ALTER TABLE {self.quoted(table.name)} ADD UNIQUE INDEX `uk_seq`(`seq`)", ActionType.ADD_INDEX,
                     table, pre, {table.name: table})
            return
        indexable = [c for c in table.columns if c.type_code not in (TypeCode.JSON, TypeCode.TIDB_VECTOR)
                     and not (TypeCode.TINY_BLOB <= c.type_code <= TypeCode.BLOB)]
        if not indexable:
            return
        picked = self.rng.sample(indexable, min(len(indexable), self.rng.randint(1, 2)))
        self.names += 1
        index = IndexInfo(name=f"idx_{self.names}", columns=tuple(c.name for c in picked))
        table.indexes.append(index)
        cols = ",".join(f"`{c}`" for c in index.columns)
        self.ddl(f"ALTER TABLE {self.quoted(table.name)} ADD INDEX `{index.name}`({cols})", ActionType.ADD_INDEX,
                 table, pre, {table.name: table})

    # ------------------------------------------------------------------ DML
    def unique_sets(self, table: _Table) -> list[tuple[str, ...]]:
        sets = [i.columns for i in table.indexes if i.unique or i.primary]
        sets.extend((name,) for name in table.template.distinct)
        return sets

    def conflicts(self, table: _Table, rows: Mapping[Hashable, Row], row: Mapping[str, Value],
                  skip: Hashable = None) -> bool:
        for columns in self.unique_sets(table):
            values = tuple(row[c] for c in columns)
            if any(v is None for v in values):
                continue  # NULLs never collide in a unique index
            for key, other in rows.items():
                if key != skip and tuple(other[c] for c in columns) == values:
                    return True
        return False

    def key_value(self, column: ColumnInfo) -> Value:
        if column.name == "seq":
            self.next_seq += self.rng.randint(1, 3)
            return self.next_seq
        if column.name == "id":
            return self.rng.choice((self.rng.randint(-(2**63), 2**63 - 1), self.rng.randint(-1000, 10**6)))
        return random_value(self.rng, column, null_rate=0.3)

    def new_row(self, table: _Table, rows: Mapping[Hashable, Row]) -> Row | None:
        key_columns = {c for s in self.unique_sets(table) for c in s}
        for _ in range(20):
            values = {c.name: (self.key_value(c) if c.name in key_columns else random_value(self.rng, c))
                      for c in table.columns}
            if not self.conflicts(table, rows, values):
                return Row(values)
        return None

    def transaction(self) -> None:
        rng = self.rng
        if not self.tables:
            return
        working: dict[str, dict[Hashable, Row]] = {}
        before: dict[str, dict[Hashable, Row]] = {}
        # Row keys touched per table, in first-touch order; _tidb_rowid of the rows inserted here.
        touched: dict[str, dict[Hashable, None]] = {}
        for _ in range(rng.randint(1, self.config.max_rows_per_txn)):
            table = self.tables[rng.choice(sorted(self.tables))]
            if table.name not in working:
                working[table.name] = dict(table.rows)
                before[table.name] = table.rows
                touched[table.name] = {}
            self.operation(table, working[table.name], touched[table.name])
        changed_tables = [name for name in touched if touched[name]]
        if not changed_tables:
            return
        self.bootstrap_before(changed_tables)
        commit_ts = self.tso()
        produced = False
        for name in changed_tables:
            table = self.tables[name]
            assert table.info is not None
            for key in touched[name]:
                pre, post = before[name].get(key), working[name].get(key)
                if pre == post:
                    continue
                op = Op.INSERT if pre is None else Op.DELETE if post is None else Op.UPDATE
                row_id = key if isinstance(key, int) else 0
                self.events.append(RowChange(
                    op=op, schema=self.config.schema, table=name, commit_ts=commit_ts, columns=post, pre_columns=pre,
                    table_id=table.table_id, physical_table_id=table.table_id, row_id=row_id, table_info=table.info,
                ))
                produced = True
            table.rows = working[name]
        if produced:
            self.record(commit_ts, {name: self.tables[name] for name in changed_tables})

    def operation(self, table: _Table, rows: dict[Hashable, Row], touched: dict[Hashable, None]) -> None:
        rng = self.rng
        roll = rng.random()
        fill = len(rows) / max(self.config.max_table_rows, 1)
        if not rows or roll < 0.45 * (1 - fill):
            row = self.new_row(table, rows)
            if row is None:
                return
            rowid = self.next_rowid[table.table_id]
            key = table.kv_key(row, rowid)
            if key in rows:
                return
            if not (table.template.pk_is_handle or table.template.clustered):
                self.next_rowid[table.table_id] = rowid + 1
            rows[key] = row
            touched[key] = None
            return
        key = rng.choice(list(rows))
        old = rows[key]
        if roll < 0.6:
            del rows[key]
            touched[key] = None
            return
        unique_columns = {c for s in self.unique_sets(table) for c in s}
        if roll < 0.75 and unique_columns:
            # Change a primary or unique key: a handle move (clustered/int PK) or an UPDATE the router splits.
            columns = rng.choice(self.unique_sets(table))
            values = dict(old)
            for column in table.columns:
                if column.name in columns:
                    values[column.name] = self.key_value(column)
            new = Row(values)
            if new == old or self.conflicts(table, rows, new, skip=key):
                return
            new_key = table.kv_key(new, key if isinstance(key, int) else 0)
            if new_key != key:
                if new_key in rows:
                    return
                del rows[key]
                touched[key] = None
            rows[new_key] = new
            touched[new_key] = None
            return
        plain = [c for c in table.columns if c.name not in unique_columns]
        if not plain:
            return
        values = dict(old)
        for column in rng.sample(plain, min(len(plain), rng.randint(1, 3))):
            values[column.name] = random_value(rng, column)
        new = Row(values)
        if new != old:
            rows[key] = new
            touched[key] = None

    def bootstrap_before(self, names: list[str]) -> None:
        # TiCDC's Simple encoder group sends a table's BOOTSTRAP before its first row and periodically.
        for name in names:
            table = self.tables[name]
            assert table.info is not None
            identity = (table.table_id, table.schema_version)
            if self.bootstrapped.get(name) != identity or self.rng.random() < 1 / max(self.config.bootstrap_every, 1):
                self.events.append(Bootstrap(table_info=table.info, build_ts=self.physical_ms))
                self.bootstrapped[name] = identity

    def watermark(self) -> None:
        self.events.append(Watermark(resolved_ts=self.tso()))

    def run(self) -> list[Event]:
        start_ts = self.tso()
        self.events.append(DDLEvent(query=f"CREATE DATABASE `{self.config.schema}`",
                                    ddl_type=int(ActionType.CREATE_SCHEMA), commit_ts=self.tso(), start_ts=start_ts,
                                    schema=self.config.schema))
        for base in self.config.tables:
            self.create_table(base, base)
        self.watermark()
        for _ in range(self.config.transactions):
            self.transaction()
            if self.rng.random() < self.config.ddl_probability:
                self.random_ddl()
            if self.rng.random() < self.config.watermark_probability:
                self.watermark()
        self.watermark()
        return self.events


def simulate(seed: int, config: WorkloadConfig | None = None) -> History:
    """Run a seeded workload; the same seed and config always give the same history."""
    config = config or WorkloadConfig()
    simulator = _Simulator(seed, config)
    events = simulator.run()
    return History(events, simulator.versions, config, seed)

