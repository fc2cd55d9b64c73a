"""What a DDL statement does to replica tables: create, drop, rename, truncate, and column changes (pure).

A replica must execute DDL the way a MySQL downstream would, but most protocols (Open Protocol, Craft,
Canal-JSON) carry only the statement text, and the ones that carry the table after it (Simple, Debezium)
cannot tell a column rename from a drop and an add. So every statement is read from its text (with the
MySQL tokenizer and column-definition reader the Debezium codec already uses), and the table info a DDL
carries, when it has columns, replaces the one built from the text because it is exact.

:func:`interpret_ddl` turns one :class:`~pyticdc.model.DDLEvent` into :data:`SchemaChange` values:

=====================================  ===========================================================
statement                              change
=====================================  ===========================================================
CREATE TABLE t (...) / LIKE s          :class:`CreateTable` (info from the text, or ``s``'s info)
DROP TABLE a, b / DROP DATABASE d      :class:`DropTable` per table / :class:`DropSchema`
RENAME TABLE a TO b, c TO d            :class:`RenameTable` per pair (also ALTER TABLE a RENAME TO b)
TRUNCATE TABLE t                       :class:`TruncateTable`
ALTER TABLE t ADD/DROP/MODIFY/CHANGE   :class:`AlterTable`: the table after it, the defaults existing rows
COLUMN, RENAME COLUMN                  take for added columns, renamed columns (old → new); :class:`NoTable`
                                       when the replica has no table ``t`` (nothing to alter)
index, comment, option changes         nothing (rows keep their values; a new handle shows in the rows)
anything else                          :class:`Unhandled` (reported; the replica may then differ)
=====================================  ===========================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Union

import msgspec

from pyticdc.model import ColumnInfo, DDLEvent, IndexInfo, TableInfo, TypeCode
from pyticdc.mysql import (
    ALWAYS_UNSIGNED_TYPES,
    ENUM_SET_TYPES,
    FLOAT_TYPES,
    FRACTIONAL_TIME_TYPES,
    INTEGER_OR_YEAR_TYPES,
    INTEGER_TYPES,
    table_info_with_flags,
)
from pyticdc.mysql.sql import (
    ColumnDef,
    Token,
    parse_column_def,
    parse_create_table,
    tokenize,
    top_level_split,
)
from pyticdc.mysql.types import parse_type_name

__all__ = [
    "AlterTable",
    "CreateTable",
    "DropSchema",
    "DropTable",
    "NoTable",
    "RenameTable",
    "SchemaChange",
    "TableKey",
    "TruncateTable",
    "Unhandled",
    "column_from_definition",
    "interpret_ddl",
    "rename_table_info",
]

#: (schema, table) of an upstream table.
TableKey = tuple[str, str]


@dataclass(frozen=True)
class CreateTable:
    """A new table; ``info`` is None when the statement does not say its columns (CREATE ... AS SELECT)."""

    key: TableKey
    info: TableInfo | None


@dataclass(frozen=True)
class DropTable:
    """A table is gone."""

    key: TableKey


@dataclass(frozen=True)
class DropSchema:
    """Every table of a database is gone."""

    schema: str


@dataclass(frozen=True)
class RenameTable:
    """A table moves to another name (its rows stay)."""

    old: TableKey
    new: TableKey


@dataclass(frozen=True)
class TruncateTable:
    """Every row of a table is gone (the table stays)."""

    key: TableKey


@dataclass(frozen=True)
class AlterTable:
    """A table's columns change: ``info`` is the table after the statement."""

    key: TableKey
    info: TableInfo
    #: Added column → the default text existing rows take (None: NULL, or a default only TiDB can compute).
    defaults: Mapping[str, str | None] = field(default_factory=dict)
    #: Old column name → new column name.
    renamed: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NoTable:
    """A column change of a table the replica does not have: nothing to do (its first rows bring their columns)."""

    key: TableKey


@dataclass(frozen=True)
class Unhandled:
    """A statement whose effect on the rows this replica cannot reproduce (or does not understand)."""

    query: str
    reason: str


#: What one DDL statement does to the replica.
SchemaChange = Union[CreateTable, DropTable, DropSchema, RenameTable, TruncateTable, AlterTable, NoTable, Unhandled]

#: The replica's current table info of a table, or None when it has no such table.
Lookup = Callable[[TableKey], "TableInfo | None"]

# Type names MySQL accepts as synonyms of those TiDB prints.
_ALIASES: Final = {
    "INTEGER": "INT", "BOOL": "TINYINT", "BOOLEAN": "TINYINT", "DEC": "DECIMAL", "NUMERIC": "DECIMAL",
    "FIXED": "DECIMAL", "REAL": "DOUBLE", "MIDDLEINT": "MEDIUMINT", "INT1": "TINYINT", "INT2": "SMALLINT",
    "INT3": "MEDIUMINT", "INT4": "INT", "INT8": "BIGINT", "NCHAR": "CHAR", "NVARCHAR": "VARCHAR",
    "VARCHARACTER": "VARCHAR", "LONG": "MEDIUMTEXT",
}
# ALTER TABLE clauses that change no row: indexes, constraints, table options, defaults of existing columns.
_NO_DATA_WORDS: Final = frozenset({
    "INDEX", "KEY", "UNIQUE", "PRIMARY", "CONSTRAINT", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "VECTOR",
})
_TABLE_OPTIONS: Final = frozenset({
    "COMMENT", "ENGINE", "AUTO_INCREMENT", "AUTO_ID_CACHE", "AUTO_RANDOM_BASE", "CHARSET", "CHARACTER",
    "DEFAULT", "COLLATE", "SHARD_ROW_ID_BITS", "PRE_SPLIT_REGIONS", "TTL", "TTL_ENABLE", "TTL_JOB_INTERVAL",
    "CACHE", "NOCACHE", "PLACEMENT", "ATTRIBUTES", "STATS_OPTIONS", "ROW_FORMAT", "KEY_BLOCK_SIZE",
    "CONVERT", "LOCK", "ALGORITHM", "FORCE", "SET", "STATS_BUCKETS", "STATS_TOPN", "STATS_SAMPLE_RATE",
    "STATS_COL_CHOICE", "STATS_COL_LIST", "SECONDARY_ENGINE", "CHECKSUM", "DELAY_KEY_WRITE", "MAX_ROWS",
    "MIN_ROWS", "PACK_KEYS", "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "TIFLASH",
    "ORDER", "ENABLE", "DISABLE", "WITH", "WITHOUT", "VALIDATION", "REMOVE", "PARTITION_OPTIONS",
})
# Partition operations: ADD/COALESCE/REORGANIZE keep every row; DROP/TRUNCATE/EXCHANGE change rows unseen.
_SAFE_PARTITION_WORDS: Final = frozenset({"ADD", "COALESCE", "REORGANIZE", "REBUILD", "OPTIMIZE", "ANALYZE",
                                          "CHECK", "REPAIR", "PARTITION", "REMOVE", "SPLIT"})
_NONCLUSTERED: Final = re.compile(r"NONCLUSTERED", re.I)


# --------------------------------------------------------------------------- column definitions
def _int_arg(args: Sequence[str], index: int, default: int) -> int:
    if index < len(args) and args[index].strip().lstrip("-").isdigit():
        return int(args[index])
    return default


def _default_text(definition: ColumnDef, column_type: int) -> str | None:
    literal = definition.default
    if not definition.has_default or literal is None or literal.kind in ("null", "func", "expr"):
        # NULL; CURRENT_TIMESTAMP and expressions are evaluated by TiDB when the column is added: unknowable.
        return None
    if literal.kind == "bool":
        return "1" if literal.text == "TRUE" else "0"
    if literal.kind == "bits":
        return str(int(literal.text or "0", 2))
    if literal.kind == "hex":
        number = int(literal.text or "0", 16)
        if column_type == TypeCode.BIT or column_type in INTEGER_OR_YEAR_TYPES:
            return str(number)
        return bytes.fromhex(literal.text).decode("utf-8", "replace")
    return literal.text


def column_from_definition(definition: ColumnDef) -> ColumnInfo:
    """The ColumnInfo a column definition of DDL text describes (flags are set by the table)."""
    type_name = _ALIASES.get(definition.type_name, definition.type_name)
    parsed = parse_type_name(type_name)
    code, binary, unsigned, zerofill = parsed if parsed is not None else (TypeCode.VARCHAR, False, False, False)
    args = definition.args
    flen, decimal = -1, -1
    elems: tuple[str, ...] | None = None
    if code in ENUM_SET_TYPES:
        elems = tuple(args)
    elif code in FRACTIONAL_TIME_TYPES:
        decimal = _int_arg(args, 0, 0)
    elif code == TypeCode.NEWDECIMAL:
        flen, decimal = _int_arg(args, 0, 10), _int_arg(args, 1, 0)
    elif code in FLOAT_TYPES:
        flen, decimal = _int_arg(args, 0, -1), _int_arg(args, 1, -1)
    else:
        flen = _int_arg(args, 0, 1 if definition.type_name in ("BOOL", "BOOLEAN") else -1)
    charset = (definition.charset or "").lower()
    if not charset:
        charset = "binary" if binary else "utf8mb4"
    collation = definition.collate or ("binary" if charset == "binary" else f"{charset}_bin")
    unsigned = unsigned or definition.unsigned or code in ALWAYS_UNSIGNED_TYPES
    return ColumnInfo(
        name=definition.name, type_code=code, charset=charset, collation=collation, flen=flen, decimal=decimal,
        elems=elems, unsigned=unsigned, zerofill=zerofill or definition.zerofill,
        nullable=not (definition.not_null or definition.primary), default=_default_text(definition, code),
        type_desc=None,
    )


def _with_flags(schema: str, table: str, base: TableInfo | None, columns: Sequence[ColumnInfo],
                indexes: Sequence[IndexInfo], pk_is_handle: bool) -> TableInfo:
    # The same flag derivation the upstream's TableInfo gets, so the replica and the source agree on handles.
    return table_info_with_flags(schema, table, base.table_id if base else 0, base.schema_version if base else 0,
                                 columns, indexes, pk_is_handle)


# --------------------------------------------------------------------------- statements
def _name_at(tokens: Sequence[Token], at: int, default_schema: str) -> tuple[TableKey, int] | None:
    if at >= len(tokens) or tokens[at].kind not in ("ident", "qident"):
        return None
    first = tokens[at].text
    if at + 2 < len(tokens) and tokens[at + 1].kind == "op" and tokens[at + 1].text == "." \
            and tokens[at + 2].kind in ("ident", "qident"):
        return (first, tokens[at + 2].text), at + 3
    return (default_schema, first), at + 1


def _words(tokens: Sequence[Token], at: int, *words: str) -> bool:
    return all(at + i < len(tokens) and tokens[at + i].is_word(word) for i, word in enumerate(words))


def _skip_if_exists(tokens: Sequence[Token], at: int) -> int:
    if _words(tokens, at, "IF", "NOT", "EXISTS"):
        return at + 3
    if _words(tokens, at, "IF", "EXISTS"):
        return at + 2
    return at


def _post_info(ddl: DDLEvent, key: TableKey) -> TableInfo | None:
    info = ddl.table_info
    if info is None or not info.columns or (info.schema, info.table) != key:
        return None
    return info


def _create(ddl: DDLEvent, tokens: list[Token], at: int, lookup: Lookup) -> list[SchemaChange]:
    at = _skip_if_exists(tokens, at)
    named = _name_at(tokens, at, ddl.schema)
    if named is None:
        return [Unhandled(ddl.query, "CREATE TABLE without a table name")]
    key, after = named
    post = _post_info(ddl, key)
    if post is not None:
        return [CreateTable(key, post)]
    if _words(tokens, after, "LIKE") or (after + 1 < len(tokens) and tokens[after].text == "("
                                          and tokens[after + 1].is_word("LIKE")):
        source_at = after + 1 if tokens[after].is_word("LIKE") else after + 2
        source = _name_at(tokens, source_at, ddl.schema)
        template = lookup(source[0]) if source is not None else None
        return [CreateTable(key, None if template is None else rename_table_info(template, key))]
    parsed = parse_create_table(ddl.query)
    if parsed is None or not parsed.columns:
        return [CreateTable(key, None)]
    columns = [column_from_definition(d) for d in parsed.columns]
    primary = list(parsed.primary) or [d.name for d in parsed.columns if d.primary]
    indexes: list[IndexInfo] = []
    if primary:
        indexes.append(IndexInfo(name="PRIMARY", columns=tuple(primary), primary=True, unique=True))
    uniques = [list(u) for u in parsed.uniques] + [[d.name] for d in parsed.columns if d.unique]
    indexes.extend(IndexInfo(name=f"uk_{i}", columns=tuple(u), unique=True) for i, u in enumerate(uniques))
    integer = {c.name for c in columns if c.type_code in INTEGER_TYPES}
    pk_is_handle = len(primary) == 1 and primary[0] in integer and not _NONCLUSTERED.search(ddl.query)
    return [CreateTable(key, _with_flags(key[0], key[1], None, columns, indexes, pk_is_handle))]


def _drop(ddl: DDLEvent, tokens: list[Token], at: int) -> list[SchemaChange]:
    if tokens[at].is_word("DATABASE", "SCHEMA"):
        at = _skip_if_exists(tokens, at + 1)
        if at < len(tokens):
            return [DropSchema(tokens[at].text)]
        return [Unhandled(ddl.query, "DROP DATABASE without a name")]
    if tokens[at].is_word("TEMPORARY"):
        at += 1
    if not tokens[at].is_word("TABLE", "TABLES"):
        return []  # DROP VIEW, INDEX, SEQUENCE, PLACEMENT POLICY ...: no table rows change
    changes: list[SchemaChange] = []
    for part in top_level_split(list(tokens[_skip_if_exists(tokens, at + 1):])):
        named = _name_at(part, 0, ddl.schema)
        if named is not None:
            changes.append(DropTable(named[0]))
    return changes


def _renames(ddl: DDLEvent, tokens: list[Token], at: int) -> list[SchemaChange]:
    changes: list[SchemaChange] = []
    for part in top_level_split(list(tokens[at:])):
        old = _name_at(part, 0, ddl.schema)
        if old is None or not _words(part, old[1], "TO"):
            return [Unhandled(ddl.query, "RENAME TABLE not of the form a TO b")]
        new = _name_at(part, old[1] + 1, ddl.schema)
        if new is None:
            return [Unhandled(ddl.query, "RENAME TABLE not of the form a TO b")]
        changes.append(RenameTable(old[0], new[0]))
    return changes


@dataclass
class _Alteration:
    columns: list[ColumnInfo]
    indexes: list[IndexInfo]
    defaults: dict[str, str | None] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)
    touched: bool = False
    new_name: TableKey | None = None
    problem: str | None = None
    #: Indexes changed (the handle may have).
    touched_keys: bool = False


def _add_index(state: _Alteration, spec: Sequence[Token]) -> None:
    # [CONSTRAINT [name]] PRIMARY KEY | UNIQUE [INDEX|KEY] [name] | INDEX|KEY [name], then (columns): a new
    # unique key can become the table's handle, which the replica shows in its key columns.
    words = [t.upper for t in spec if t.kind == "ident"]
    opening = next((i for i, t in enumerate(spec) if t.kind == "op" and t.text == "("), None)
    if opening is None:
        return
    columns = tuple(part[0].text for part in top_level_split(list(spec[opening + 1:])) if part and part[0].text != ")")
    names = [t.text for t in spec[:opening] if t.kind in ("ident", "qident") and t.upper not in _NO_DATA_WORDS
             and t.upper not in ("USING", "BTREE", "HASH", "CLUSTERED", "NONCLUSTERED")]
    primary = "PRIMARY" in words[:3]
    unique = primary or "UNIQUE" in words[:3]
    name = "PRIMARY" if primary else (names[-1] if names else f"idx_{len(state.indexes)}")
    state.indexes.append(IndexInfo(name=name, columns=columns, primary=primary, unique=unique))
    state.touched_keys = True


def _drop_index(state: _Alteration, spec: Sequence[Token]) -> None:
    if spec[0].is_word("PRIMARY"):
        state.indexes = [i for i in state.indexes if not i.primary]
    elif spec[0].is_word("INDEX", "KEY") and len(spec) > 1:
        name = spec[-1].text
        state.indexes = [i for i in state.indexes if i.name.lower() != name.lower()]
    else:
        return
    state.touched_keys = True


def _position(columns: list[ColumnInfo], spec: Sequence[Token]) -> int:
    for i, token in enumerate(spec):
        if token.is_word("FIRST"):
            return 0
        if token.is_word("AFTER") and i + 1 < len(spec):
            names = [c.name for c in columns]
            if spec[i + 1].text in names:
                return names.index(spec[i + 1].text) + 1
    return len(columns)


def _rename_column(state: _Alteration, old: str, new: str) -> None:
    state.columns = [msgspec.structs.replace(c, name=new) if c.name == old else c for c in state.columns]
    origin = next((k for k, v in state.renamed.items() if v == old), old)
    state.renamed[origin] = new
    if old in state.defaults:
        state.defaults[new] = state.defaults.pop(old)


def _alter_spec(state: _Alteration, spec: list[Token], default_schema: str) -> None:
    if not spec:
        return
    head = spec[0].upper if spec[0].kind == "ident" else ""
    rest = spec[1:]
    if head == "ADD":
        if rest and rest[0].is_word("COLUMN"):
            rest = rest[1:]
        if not rest:
            return
        if rest[0].kind == "ident" and rest[0].upper in _NO_DATA_WORDS:
            _add_index(state, rest)
            return
        if rest[0].is_word("PARTITION"):
            return
        elements = [rest]
        if rest[0].kind == "op" and rest[0].text == "(":
            elements = top_level_split(rest[1:-1])
        for element in elements:
            definition = parse_column_def(element)
            if definition is None:
                state.problem = "ADD clause not understood"
                return
            column = column_from_definition(definition)
            state.columns.insert(_position(state.columns, element), column)
            state.defaults[column.name] = column.default
            state.touched = True
        return
    if head == "DROP":
        if rest and rest[0].is_word("COLUMN"):
            rest = rest[1:]
        elif rest and rest[0].kind == "ident" and (rest[0].upper in _NO_DATA_WORDS or rest[0].upper == "DEFAULT"):
            _drop_index(state, rest)
            return
        elif rest and rest[0].is_word("PARTITION"):
            state.problem = "DROP PARTITION deletes rows the changefeed never sends"
            return
        if rest and rest[0].is_word("IF") and len(rest) > 2:
            rest = rest[2:]
        if not rest:
            state.problem = "DROP clause not understood"
            return
        name = rest[0].text
        state.columns = [c for c in state.columns if c.name != name]
        state.defaults.pop(name, None)
        state.touched = True
        return
    if head in ("MODIFY", "CHANGE"):
        if rest and rest[0].is_word("COLUMN"):
            rest = rest[1:]
        old = rest[0].text if rest else ""
        definition = parse_column_def(rest[1:] if head == "CHANGE" else rest)
        if definition is None or old not in {c.name for c in state.columns}:
            state.problem = f"{head} clause not understood"
            return
        if head == "CHANGE" and definition.name != old:
            _rename_column(state, old, definition.name)
        column = column_from_definition(definition)
        state.columns = [column if c.name == column.name else c for c in state.columns]
        state.touched = True
        return
    if head == "RENAME":
        if rest and rest[0].is_word("COLUMN") and len(rest) >= 4 and rest[2].is_word("TO"):
            _rename_column(state, rest[1].text, rest[3].text)
            state.touched = True
        elif rest and rest[0].kind == "ident" and rest[0].upper in ("INDEX", "KEY"):
            return
        else:
            if rest and rest[0].is_word("TO", "AS"):
                rest = rest[1:]
            named = _name_at(rest, 0, default_schema)
            if named is None:
                state.problem = "RENAME clause not understood"
                return
            state.new_name = named[0]
        return
    if head == "ALTER":
        return  # ALTER [COLUMN] c SET/DROP DEFAULT, ALTER INDEX ... VISIBLE: no row changes
    if head in ("TRUNCATE", "EXCHANGE") and rest and rest[0].is_word("PARTITION"):
        state.problem = f"{head} PARTITION changes rows the changefeed never sends"
        return
    if head in _SAFE_PARTITION_WORDS or head in _TABLE_OPTIONS or head.startswith("STATS_"):
        return
    state.problem = f"ALTER TABLE clause {head or spec[0].text!r} not understood"


def _alter(ddl: DDLEvent, tokens: list[Token], at: int, lookup: Lookup) -> list[SchemaChange]:
    named = _name_at(tokens, at, ddl.schema)
    if named is None:
        return [Unhandled(ddl.query, "ALTER TABLE without a table name")]
    key, after = named
    current = lookup(key)
    post = _post_info(ddl, key)
    base = current if current is not None else post
    if base is None:
        # A table this replica does not have (filtered out, or created before it started and not written to
        # since): said, so the replica can count it; the rows that come after carry the columns as they are.
        return [NoTable(key)]
    state = _Alteration(columns=list(base.columns), indexes=list(base.indexes))
    for spec in top_level_split(list(tokens[after:])):
        _alter_spec(state, spec, ddl.schema)
    changes: list[SchemaChange] = []
    if state.problem is not None:
        changes.append(Unhandled(ddl.query, state.problem))
    if state.touched or state.touched_keys or post is not None:
        if post is not None:
            # The table info the DDL carries is exact: keep it, with the text's renames and the defaults it holds.
            known = {c.name for c in base.columns} | set(state.renamed.values())
            defaults = {c.name: c.default for c in post.columns if c.name not in known}
            info = post
        else:
            defaults = state.defaults
            info = _with_flags(key[0], key[1], base, state.columns, _kept_indexes(state), base.pk_is_handle)
        if info.columns != base.columns or state.renamed:
            changes.append(AlterTable(key, info, defaults, dict(state.renamed)))
    if state.new_name is not None:
        changes.append(RenameTable(key, state.new_name))
    return changes


def _kept_indexes(state: _Alteration) -> list[IndexInfo]:
    # MySQL drops a dropped column from its indexes (and the index when it was the last one); simplified
    # here to dropping indexes that lost a column.
    names = {c.name for c in state.columns}
    renamed = state.renamed
    kept = []
    for index in state.indexes:
        columns = tuple(renamed.get(c, c) for c in index.columns)
        if all(c in names for c in columns):
            kept.append(msgspec.structs.replace(index, columns=columns))
    return kept


def rename_table_info(info: TableInfo, key: TableKey) -> TableInfo:
    """``info`` under another (schema, table) name."""
    return msgspec.structs.replace(info, schema=key[0], table=key[1])


def interpret_ddl(ddl: DDLEvent, lookup: Lookup) -> list[SchemaChange]:
    """The schema changes ``ddl`` makes, given the replica's current table info of each table (``lookup``)."""
    tokens = tokenize(ddl.query)
    if not tokens:
        return [Unhandled(ddl.query, "statement not lexable")]
    first = tokens[0]
    if first.is_word("CREATE"):
        at = 1
        while at < len(tokens) and tokens[at].is_word("TEMPORARY", "GLOBAL", "LOCAL", "OR", "REPLACE"):
            at += 1
        if _words(tokens, at, "TABLE"):
            return _create(ddl, tokens, at + 1, lookup)
        return []  # CREATE DATABASE, INDEX, VIEW, SEQUENCE ...: no rows yet
    if first.is_word("DROP") and len(tokens) > 1:
        return _drop(ddl, tokens, 1)
    if first.is_word("TRUNCATE"):
        at = 2 if _words(tokens, 1, "TABLE") else 1
        named = _name_at(tokens, at, ddl.schema)
        return [TruncateTable(named[0])] if named is not None else [Unhandled(ddl.query, "TRUNCATE without a name")]
    if first.is_word("RENAME") and _words(tokens, 1, "TABLE"):
        return _renames(ddl, tokens, 2)
    if first.is_word("ALTER") and _words(tokens, 1, "TABLE"):
        return _alter(ddl, tokens, 2, lookup)
    if first.is_word("ALTER") and len(tokens) > 1 and tokens[1].is_word("DATABASE", "SCHEMA"):
        return []  # charset/collation/placement of a database: no rows change
    if first.is_word("ALTER", "FLASHBACK", "RECOVER", "ADMIN", "IMPORT", "LOAD"):
        return [Unhandled(ddl.query, "statement kind not reproducible by a replica")]
    return [Unhandled(ddl.query, "statement not understood")]
