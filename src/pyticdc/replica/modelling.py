"""How replica tables are modelled: metadata columns, soft deletes, key overrides, TRUNCATE handling (pure).

:class:`Modelling` is the one options object the applier, the pipelines, ``SparkReplication`` and the
``replicate`` command share; every option is parsed and checked here, before any record is read.

``metadata_columns``  opt-in columns by name (:data:`METADATA_COLUMNS`): ``_op`` (``insert``, ``update`` or
                      ``delete``: the row's last change), ``_commit_time`` (the physical time of ``_commit_ts``),
                      ``_ingested_at`` (when the batch applied the row). ``_commit_ts`` is always there (it is
                      the row's position); naming it is allowed. ``_source_topic``/``_source_partition``/
                      ``_source_offset`` are refused: the consumer state keeps no record position per row, so
                      a row re-released after a restart could not say where it came from.
``soft_delete``       deleted rows stay, with ``_is_deleted = true`` and their last image (Debezium's
                      ``__deleted``); a re-insert of the key brings the row back with ``_is_deleted = false``.
``keys``              ``SCHEMA.TABLE=col1,col2`` (a TiDB table-filter pattern): the columns rows of matching
                      tables are found by, for tables whose messages name no usable handle (Canal-JSON names
                      only primary keys; a table without handle falls back to a whole-row digest otherwise).
                      The command-line flag is ``--table-key``: ``--key FILE`` already names the Kafka key file
                      of raw message input in every command.
``on_truncate``       ``apply`` (empty the table, the default) or ``ignore`` (keep its rows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from pyticdc.errors import ConfigError
from pyticdc.model import TableInfo

__all__ = [
    "IS_DELETED",
    "METADATA_COLUMNS",
    "TRUNCATE_MODES",
    "Modelling",
    "parse_keys",
    "parse_metadata_columns",
]

#: Metadata columns a replica table can have (opt-in), besides ``_commit_ts`` which it always has.
METADATA_COLUMNS: Final = ("_op", "_commit_ts", "_commit_time", "_ingested_at")
#: Named by the issue, refused with a reason (see the module docstring).
_UNSUPPORTED: Final = ("_source_topic", "_source_partition", "_source_offset")
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
        if name in _UNSUPPORTED:
            raise ConfigError(f"metadata column {name!r} is not supported: the consumer state keeps no Kafka position "
                              f"per row (valid: {', '.join(METADATA_COLUMNS)})")
        if name not in METADATA_COLUMNS:
            raise ConfigError(f"unknown metadata column {name!r}; valid: {', '.join(METADATA_COLUMNS)}")
        if name not in out:
            out.append(name)
    return tuple(out)


def parse_keys(specs: Iterable[str] | Mapping[str, Sequence[str]] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Key overrides from ``SCHEMA.TABLE=col1,col2`` texts (or a pattern → columns mapping), patterns checked."""
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
                raise ConfigError(f"--table-key {spec!r}: expected SCHEMA.TABLE=COLUMN[,COLUMN...]")
            items.append((pattern, [columns]))
    for pattern, given in items:
        names = tuple(c.strip() for text in given for c in str(text).split(","))
        if not pattern.strip() or not names or not all(names):
            raise ConfigError(f"--table-key {pattern}={','.join(names)}: expected SCHEMA.TABLE=COLUMN[,COLUMN...]")
        if len(set(names)) != len(names):
            raise ConfigError(f"--table-key {pattern}: column named twice in {','.join(names)}")
        _matcher(pattern.strip())
        pairs.append((pattern.strip(), names))
    return tuple(pairs)


def _matcher(pattern: str) -> Callable[[str, str], bool]:
    from pyticdc.routing.tablefilter import parse_table_filter

    if pattern.startswith("!"):
        raise ConfigError(f"--table-key {pattern}: a key pattern cannot be a negation")
    try:
        return parse_table_filter([pattern]).match_table
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"--table-key {pattern}: {exc}") from None


@dataclass(frozen=True)
class Modelling:
    """How replica tables are modelled (see the module docstring); the default is today's layout."""

    metadata_columns: tuple[str, ...] = ()
    soft_delete: bool = False
    #: (table-filter pattern, key columns), first match wins.
    keys: tuple[tuple[str, tuple[str, ...]], ...] = ()
    on_truncate: str = "apply"
    _matchers: tuple[Callable[[str, str], bool], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata_columns", parse_metadata_columns(self.metadata_columns))
        object.__setattr__(self, "keys", parse_keys(dict(self.keys)) if self.keys else ())
        if self.on_truncate not in TRUNCATE_MODES:
            raise ConfigError(f"unknown on_truncate {self.on_truncate!r}; valid: {', '.join(TRUNCATE_MODES)}")
        object.__setattr__(self, "_matchers", tuple(_matcher(pattern) for pattern, _ in self.keys))

    @classmethod
    def parse(cls, *, metadata_columns: str | Iterable[str] | None = None, soft_delete: bool = False,
              keys: Iterable[str] | Mapping[str, Sequence[str]] | None = None, on_truncate: str = "apply") -> Modelling:
        """A Modelling from option texts (``--metadata-columns``, ``--soft-delete``, ``--key``, ``--on-truncate``)."""
        return cls(metadata_columns=parse_metadata_columns(metadata_columns), soft_delete=soft_delete,
                   keys=parse_keys(keys), on_truncate=on_truncate)

    @property
    def is_default(self) -> bool:
        """Whether this is today's layout (nothing opted in)."""
        return self == Modelling()

    @property
    def row_columns(self) -> tuple[str, ...]:
        """The metadata columns tables get, besides ``_commit_ts`` (``_is_deleted`` last, with soft deletes)."""
        names = tuple(n for n in self.metadata_columns if n != "_commit_ts")
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
        return "; ".join(parts) or "default"

    @property
    def driver_only(self) -> tuple[str, ...]:
        """The options set here that only the driver apply engine implements (the distributed one refuses them).

        Key overrides: the distributed engine computes handles in the executors' decode, from the handle the
        messages name.
        """
        return ("key overrides",) if self.keys else ()

    def key_for(self, schema: str, table: str) -> tuple[str, ...] | None:
        """The overriding key columns of ``schema.table``, None when no ``--key`` pattern matches it."""
        for (_, columns), match in zip(self.keys, self._matchers):
            if match(schema, table):
                return columns
        return None

    def check_table(self, info: TableInfo) -> None:
        """ConfigError when a key override names a column ``info`` lacks, or a metadata column clashes with one."""
        names = {c.name for c in info.columns}
        key = self.key_for(info.schema, info.table)
        missing = [c for c in key or () if c not in names]
        if missing:
            raise ConfigError(f"--table-key for {info.qualified_name}: unknown column(s) {', '.join(missing)}; the "
                              f"table has {', '.join(sorted(names))}")
        clash = sorted(names & set(self.row_columns))
        if clash:
            raise ConfigError(f"{info.qualified_name}: column(s) {', '.join(clash)} clash with the chosen metadata "
                              "columns")
