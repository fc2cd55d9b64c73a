"""How replica tables are modelled: metadata columns, soft deletes, key overrides, TRUNCATE handling (pure).

:class:`Modelling` is the one options object the applier, the pipelines, ``SparkReplication`` and the
``replicate`` command share; every option is parsed and checked here, before any record is read.

``metadata_columns``  opt-in columns by name (:data:`METADATA_COLUMNS`): ``_op`` (``insert``, ``update`` or
                      ``delete``: the row's last change), ``_ingested_at`` (when the batch applied the row).
                      ``_commit_ts`` (the row's position) and ``_commit_time`` (its physical time) are always
                      there (:data:`ALWAYS_COLUMNS`); naming them is allowed. ``_source_topic``/``_source_partition``/
                      ``_source_offset``: the record the row's last change was read from — the first delivery the
                      consumer kept; a row held across a restart keeps it in the consumer state, one re-read after a
                      restart is read from the same offsets again.
``soft_delete``       deleted rows stay, with ``_is_deleted = true`` and their last image (Debezium's
                      ``__deleted``); a re-insert of the key brings the row back with ``_is_deleted = false``.
``keys``              ``SCHEMA.TABLE=col1,col2`` (a TiDB table-filter pattern): the columns rows of matching
                      tables are found by, for tables whose messages name no usable handle (Canal-JSON names
                      only primary keys; a table without handle falls back to a whole-row digest otherwise).
                      The command-line flag is ``--table-key``: ``--key FILE`` already names the Kafka key file
                      of raw message input in every command.
``on_truncate``       ``apply`` (empty the table, the default) or ``ignore`` (keep its rows).
``history``           TiDB table-filter patterns (upstream names): tables whose every row version is kept in a
                      history table (SCD type 2, :mod:`pyticdc.replica.history`) next to the replica, named by
                      ``history_table_name`` (``{table}__history`` by default, ``{table}`` being the replica
                      table's name: the ``--table-name`` target's). The history follows the replica's mapping and
                      schema evolution mode: the same columns under the same names, ``add-only``'s kept columns,
                      ``rescue``'s ``_rescued_data``.
``history_columns``   ``SCHEMA.TABLE=col1,col2`` (like ``TRACK HISTORY ON``), upstream table and column names (as
                      ``--table-key``; a renamed column is named as upstream names it): a change opens a new version
                      only when one of these columns changes; other changes update the current version in place.
                      A column the table lacks, or one the mapping leaves out of the replica, is refused when the
                      table's schema is first known (a table the warehouse holds: before any work; a new one: when
                      its CREATE or first row is applied).
``mapping``           column and table mapping (:class:`pyticdc.replica.mapping.NameMapping`: ``--columns``,
                      ``--exclude-columns``, ``--rename-column``, ``--table-name``).
``schema_evolution``  ``follow`` (default), ``add-only``, ``fail`` or ``rescue`` (:mod:`pyticdc.replica.evolution`);
                      ``rescue`` adds the ``_rescued_data`` column to every table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from pyticdc.errors import ConfigError
from pyticdc.model import TableInfo
from pyticdc.replica.evolution import RESCUED, check_mode
from pyticdc.replica.mapping import EXCLUDED, NameMapping

__all__ = [
    "ALWAYS_COLUMNS",
    "HISTORY_TABLE_NAME",
    "IS_DELETED",
    "METADATA_COLUMNS",
    "SOURCE_COLUMNS",
    "TRUNCATE_MODES",
    "Modelling",
    "parse_history",
    "parse_history_columns",
    "parse_keys",
    "parse_metadata_columns",
]

#: Metadata columns that can be named; ``_commit_ts`` and ``_commit_time`` are there whether named or not.
METADATA_COLUMNS: Final = ("_op", "_commit_ts", "_commit_time", "_ingested_at", "_source_topic", "_source_partition",
                            "_source_offset")
#: Where each row's last change was read.
SOURCE_COLUMNS: Final = ("_source_topic", "_source_partition", "_source_offset")
#: Metadata columns every replica table has: the commit ts (bigint) and its physical time (timestamp).
ALWAYS_COLUMNS: Final = ("_commit_ts", "_commit_time")
#: The soft-delete flag column.
IS_DELETED: Final = "_is_deleted"
TRUNCATE_MODES: Final = ("apply", "ignore")


def parse_metadata_columns(spec: str | Iterable[str] | None) -> tuple[str, ...]:
    """Metadata column names from ``_op,_commit_time`` (or a list); ConfigError naming the valid ones."""
    if spec is None:
        return ()
    names = [n.strip() for n in spec.split(",")] if isinstance(spec, str) else [str(n).strip() for n in spec]
    out: list[str] = []
    for name in names:
        if not name:
            continue
        if name not in METADATA_COLUMNS:
            raise ConfigError(f"unknown metadata column {name!r}; valid: {', '.join(METADATA_COLUMNS)}")
        if name not in out:
            out.append(name)
    return tuple(out)


def parse_keys(specs: Iterable[str] | Mapping[str, Sequence[str]] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Key overrides from ``SCHEMA.TABLE=col1,col2`` texts (or a pattern → columns mapping), patterns checked."""
    return _parse_columns(specs, "--table-key")


def parse_history_columns(
    specs: Iterable[str] | Mapping[str, Sequence[str]] | None,
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Tracked history columns from ``SCHEMA.TABLE=col1,col2`` texts (or a mapping), patterns checked."""
    return _parse_columns(specs, "--history-columns")


def _parse_columns(specs: Iterable[str] | Mapping[str, Sequence[str]] | None,
                   flag: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not specs:
        return ()
    pairs: list[tuple[str, tuple[str, ...]]] = []
    items: list[tuple[str, Sequence[str]]] = []
    if isinstance(specs, Mapping):
        items = [(str(k), [v] if isinstance(v, str) else list(v)) for k, v in specs.items()]
    else:
        for spec in specs:
            pattern, sep, columns = str(spec).partition("=")
            if not sep:
                raise ConfigError(f"{flag} {spec!r}: expected SCHEMA.TABLE=COLUMN[,COLUMN...]")
            items.append((pattern, [columns]))
    for pattern, given in items:
        names = tuple(c.strip() for text in given for c in str(text).split(","))
        if not pattern.strip() or not names or not all(names):
            raise ConfigError(f"{flag} {pattern}={','.join(names)}: expected SCHEMA.TABLE=COLUMN[,COLUMN...]")
        if len(set(names)) != len(names):
            raise ConfigError(f"{flag} {pattern}: column named twice in {','.join(names)}")
        _matcher(pattern.strip(), flag)
        pairs.append((pattern.strip(), names))
    return tuple(pairs)


def _matcher(pattern: str, flag: str = "--table-key") -> Callable[[str, str], bool]:
    from pyticdc.routing.tablefilter import parse_table_filter

    if pattern.startswith("!"):
        raise ConfigError(f"{flag} {pattern}: a pattern naming columns cannot be a negation")
    try:
        return parse_table_filter([pattern]).match_table
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"{flag} {pattern}: {exc}") from None


#: Default name of a table's history table.
HISTORY_TABLE_NAME: Final = "{table}__history"


def parse_history(specs: str | Iterable[str] | None) -> tuple[str, ...]:
    """History table patterns from ``--history`` texts (repeatable, or comma lists); ConfigError on a bad one."""
    from pyticdc.routing.tablefilter import parse_table_filter

    if not specs:
        return ()
    texts = [specs] if isinstance(specs, str) else [str(s) for s in specs]
    patterns = tuple(p.strip() for text in texts for p in text.split(",") if p.strip())
    if not patterns:
        raise ConfigError("--history: no table pattern given")
    try:
        parse_table_filter(list(patterns))
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"--history {','.join(patterns)}: {exc}") from None
    return patterns


def _check_history_name(template: str) -> None:
    # The name is a table name of the replica's schema: a fixed text around {table}, never the table itself.
    try:
        name = template.format(table="t")
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"--history-table-name {template!r}: only {{table}} can be substituted ({exc})") from None
    if "{table}" not in template or name == "t" or "/" in name or "\\" in name or name.startswith("_"):
        raise ConfigError(f"--history-table-name {template!r}: expected a name containing {{table}} and something "
                          "else, without / or \\ and not starting with _ (e.g. {table}__history)")


@dataclass(frozen=True)
class Modelling:
    """How replica tables are modelled (see the module docstring); the default is today's layout."""

    metadata_columns: tuple[str, ...] = ()
    soft_delete: bool = False
    #: (table-filter pattern, key columns), first match wins.
    keys: tuple[tuple[str, tuple[str, ...]], ...] = ()
    on_truncate: str = "apply"
    #: Table-filter patterns of the tables with a history table (SCD type 2).
    history: tuple[str, ...] = ()
    #: (table-filter pattern, tracked columns), first match wins: changes of other columns open no version.
    history_columns: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: The history table's name, ``{table}`` being the replica table's (the ``--table-name`` target's).
    history_table_name: str = HISTORY_TABLE_NAME
    #: Column and table mapping rules (:mod:`pyticdc.replica.mapping`).
    mapping: NameMapping = field(default_factory=NameMapping)
    #: ``follow``, ``add-only``, ``fail`` or ``rescue`` (:mod:`pyticdc.replica.evolution`).
    schema_evolution: str = "follow"
    _history_match: Callable[[str, str], bool] | None = field(default=None, repr=False, compare=False)
    _tracked_matchers: tuple[Callable[[str, str], bool], ...] = field(default=(), repr=False, compare=False)
    _matchers: tuple[Callable[[str, str], bool], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata_columns", parse_metadata_columns(self.metadata_columns))
        object.__setattr__(self, "keys", parse_keys(dict(self.keys)) if self.keys else ())
        if self.on_truncate not in TRUNCATE_MODES:
            raise ConfigError(f"unknown on_truncate {self.on_truncate!r}; valid: {', '.join(TRUNCATE_MODES)}")
        check_mode(self.schema_evolution)
        object.__setattr__(self, "_matchers", tuple(_matcher(pattern) for pattern, _ in self.keys))
        object.__setattr__(self, "history", parse_history(self.history))
        object.__setattr__(self, "history_columns", _parse_columns(dict(self.history_columns), "--history-columns")
                           if self.history_columns else ())
        _check_history_name(self.history_table_name)
        if self.history_columns and not self.history:
            raise ConfigError("--history-columns needs --history (the tables whose history is kept)")
        if self.history:
            from pyticdc.routing.tablefilter import parse_table_filter

            object.__setattr__(self, "_history_match", parse_table_filter(list(self.history)).match_table)
        object.__setattr__(self, "_tracked_matchers", tuple(_matcher(pattern, "--history-columns")
                                                            for pattern, _ in self.history_columns))

    @classmethod
    def parse(cls, *, metadata_columns: str | Iterable[str] | None = None, soft_delete: bool = False,
              keys: Iterable[str] | Mapping[str, Sequence[str]] | None = None, on_truncate: str = "apply",
              history: str | Iterable[str] | None = None,
              history_columns: Iterable[str] | Mapping[str, Sequence[str]] | None = None,
              history_table_name: str | None = None, mapping: NameMapping | None = None,
              schema_evolution: str = "follow") -> Modelling:
        """A Modelling from option texts (``--metadata-columns``, ``--soft-delete``, ``--key``, ``--on-truncate``,
        ``--history``, ``--history-columns``, ``--history-table-name``)."""
        return cls(metadata_columns=parse_metadata_columns(metadata_columns), soft_delete=soft_delete,
                   keys=parse_keys(keys), on_truncate=on_truncate, history=parse_history(history),
                   history_columns=parse_history_columns(history_columns),
                   history_table_name=history_table_name or HISTORY_TABLE_NAME,
                   mapping=mapping or NameMapping(), schema_evolution=schema_evolution)

    @property
    def is_default(self) -> bool:
        """Whether this is today's layout (nothing opted in)."""
        return self == Modelling()

    @property
    def row_columns(self) -> tuple[str, ...]:
        """The metadata columns tables get besides ``_commit_ts``: ``_commit_time`` always (``_is_deleted`` last)."""
        names = tuple(n for n in self.metadata_columns if n != "_commit_ts")
        if "_commit_time" not in names:
            # First when not named: warehouses written when it was opt-in keep the order they were given.
            names = ("_commit_time", *names)
        names = (*names, RESCUED) if self.schema_evolution == "rescue" else names
        return (*names, IS_DELETED) if self.soft_delete else names

    def describe(self) -> str:
        """One line for reports: what is not the default."""
        parts = []
        if self.metadata_columns:
            parts.append(f"metadata {','.join(self.metadata_columns)}")
        if self.soft_delete:
            parts.append("soft deletes")
        parts.extend(f"key {pattern}={','.join(columns)}" for pattern, columns in self.keys)
        if self.on_truncate != "apply":
            parts.append(f"truncate {self.on_truncate}")
        if self.history:
            parts.append(f"history {','.join(self.history)} as {self.history_table_name}")
        parts.extend(f"history columns {pattern}={','.join(columns)}" for pattern, columns in self.history_columns)
        parts.extend(self.mapping.describe())
        if self.schema_evolution != "follow":
            parts.append(f"schema evolution {self.schema_evolution}")
        return "; ".join(parts) or "default"

    @property
    def driver_only(self) -> tuple[str, ...]:
        """The options set here that only the driver apply engine implements (the distributed one refuses them).

        None any more: history tables fold every change of a batch in the executors (pyticdc.spark.apply.history).
        """
        return ()

    def history_for(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` matches a ``--history`` pattern."""
        return self._history_match is not None and self._history_match(schema, table)

    def tracked_columns(self, schema: str, table: str) -> tuple[str, ...] | None:
        """The ``--history-columns`` of ``schema.table`` (None: every column opens a version)."""
        for (_, columns), match in zip(self.history_columns, self._tracked_matchers):
            if match(schema, table):
                return columns
        return None

    def history_name(self, table: str) -> str:
        """The name of the history table of replica table ``table`` (the mapped name with ``--table-name``)."""
        return self.history_table_name.format(table=table)

    def key_for(self, schema: str, table: str) -> tuple[str, ...] | None:
        """The overriding key columns of ``schema.table``, None when no ``--key`` pattern matches it."""
        for (_, columns), match in zip(self.keys, self._matchers):
            if match(schema, table):
                return columns
        return None

    def check_table(self, info: TableInfo) -> None:
        """ConfigError when a key override names a column ``info`` lacks, a metadata column clashes with one, or the
        column mapping leaves a handle or key column out."""
        names = {c.name for c in info.columns}
        key = self.key_for(info.schema, info.table)
        missing = [c for c in key or () if c not in names]
        if missing:
            raise ConfigError(f"--table-key for {info.qualified_name}: unknown column(s) {', '.join(missing)}; the "
                              f"table has {', '.join(sorted(names))}")
        tracked = self.tracked_columns(info.schema, info.table) if self.history_for(info.schema, info.table) else None
        unknown = [c for c in tracked or () if c not in names]
        if unknown:
            raise ConfigError(f"--history-columns for {info.qualified_name}: unknown column(s) {', '.join(unknown)}; "
                              f"the table has {', '.join(sorted(names))}")
        left_out = [c for c in tracked or () if self.mapping.column_target(info.schema, info.table, c) == EXCLUDED]
        if left_out:
            # A version is told from the next by these columns' values: the history must hold them.
            raise ConfigError(f"--history-columns for {info.qualified_name}: column(s) {', '.join(left_out)} are left "
                              "out of the replica (--columns/--exclude-columns)")
        if self.mapping.maps_columns:
            self.mapping.names(info, {}, key or ())  # a handle or key column left out, two columns on one name
        clash = sorted(names & set(self.row_columns))
        if clash:
            raise ConfigError(f"{info.qualified_name}: column(s) {', '.join(clash)} clash with the chosen metadata "
                              "columns")
