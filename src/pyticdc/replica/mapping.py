"""Column and table mapping of replica tables: include, exclude and rename columns, target table names (pure).

Four rule lists, each ``PATTERN=...`` with a TiDB table-filter ``PATTERN`` (first matching rule of a list wins):

``--columns 'shop.orders=id,amt'``             only these (upstream) columns of matching tables
``--exclude-columns 'shop.*=secret,token'``    every column but these
``--rename-column 'shop.orders.amt=amount'``   the replica column of ``amt`` is ``amount`` (the pattern is what
                                               comes before the last dot of the left side)
``--table-name 'shop.*=bronze.shop_{table}'``  the replica table's ``SCHEMA.TABLE`` (``{schema}``, ``{table}``
                                               stand for the upstream names): its directory in the warehouse

Column names compare case-insensitively, as MySQL's do. A column's fate (kept under which name, or left out)
is decided the first time the replica sees it — at CREATE, ADD COLUMN, or a row that carries it — and then
follows the column, not its name: an upstream ``RENAME COLUMN amt TO amt2`` leaves the replica column
``amount``; an excluded column stays out when renamed, and its DROP is a no-op; a column that keeps its name
follows upstream renames as without mapping. That per-table state (:data:`Names`, upstream name → replica
name, ``""`` for excluded) is kept in the progress with the table. Handle and ``--table-key`` columns cannot
be left out (ConfigError when a table is first seen with one excluded): rows are found by them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import msgspec

from pyticdc.errors import ConfigError
from pyticdc.model import Row, RowChange, TableInfo, make_row

__all__ = ["EXCLUDED", "NameMapping", "Names", "follow_renames", "map_info", "map_rows", "parse_rules"]

#: The replica name of a column that is left out.
EXCLUDED: Final = ""
#: Per table: upstream column name → replica column name (``EXCLUDED`` when left out).
Names = dict[str, str]
_PLACEHOLDER: Final = re.compile(r"\{([^{}]*)\}")
_Rule = tuple[str, tuple[str, ...]]


def _matcher(flag: str, pattern: str) -> Callable[[str, str], bool]:
    from pyticdc.routing.tablefilter import parse_table_filter

    if not pattern or pattern.startswith("!"):
        raise ConfigError(f"{flag} {pattern!r}: expected a TiDB table-filter pattern (not a negation)")
    try:
        return parse_table_filter([pattern]).match_table
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"{flag} {pattern}: {exc}") from None


def _pairs(flag: str, specs: Iterable[str] | Mapping[str, str] | None, shape: str) -> list[tuple[str, str]]:
    if not specs:
        return []
    if isinstance(specs, str):
        specs = [specs]
    items = list(specs.items()) if isinstance(specs, Mapping) else [str(s).partition("=")[::2] for s in specs]
    out = []
    for left, right in items:
        left, right = str(left).strip(), str(right).strip()
        if not left or not right:
            raise ConfigError(f"{flag} {left}={right}: expected {shape}")
        out.append((left, right))
    return out


def parse_rules(flag: str, specs: Iterable[str] | Mapping[str, str] | None) -> tuple[_Rule, ...]:
    """``PATTERN=COL[,COL...]`` texts (or a pattern → columns text mapping) as (pattern, columns), checked."""
    rules = []
    for pattern, text in _pairs(flag, specs, "SCHEMA.TABLE=COLUMN[,COLUMN...]"):
        names = tuple(c.strip() for c in text.split(","))
        if not all(names):
            raise ConfigError(f"{flag} {pattern}={text}: empty column name")
        if len({n.lower() for n in names}) != len(names):
            raise ConfigError(f"{flag} {pattern}={text}: column named twice")
        _matcher(flag, pattern)
        rules.append((pattern, names))
    return tuple(rules)


def _parse_renames(specs: Iterable[str] | Mapping[str, str] | None) -> tuple[tuple[str, str, str], ...]:
    out = []
    for left, new in _pairs("--rename-column", specs, "SCHEMA.TABLE.COLUMN=NEW_NAME"):
        pattern, dot, column = left.rpartition(".")
        if not dot or not pattern or not column or "," in new or "." in new:
            raise ConfigError(f"--rename-column {left}={new}: expected SCHEMA.TABLE.COLUMN=NEW_NAME")
        _matcher("--rename-column", pattern)
        out.append((pattern, column, new))
    return tuple(out)


def _parse_table_names(specs: Iterable[str] | Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    out = []
    for pattern, template in _pairs("--table-name", specs, "SCHEMA.TABLE=TARGET_SCHEMA.TARGET_TABLE"):
        unknown = [p for p in _PLACEHOLDER.findall(template) if p not in ("schema", "table")]
        if unknown:
            raise ConfigError(f"--table-name {pattern}={template}: unknown placeholder {{{unknown[0]}}}; valid: "
                              "{schema}, {table}")
        _target(template, "s", "t", f"--table-name {pattern}={template}")
        _matcher("--table-name", pattern)
        out.append((pattern, template))
    return tuple(out)


def _target(template: str, schema: str, table: str, where: str) -> tuple[str, str]:
    text = template.replace("{schema}", schema).replace("{table}", table)
    target_schema, dot, target_table = text.partition(".")
    if not dot or not target_schema or not target_table or "." in target_table or "{" in text or "}" in text \
            or any(c in text for c in "/\\\0"):
        raise ConfigError(f"{where}: the target {text!r} is not SCHEMA.TABLE")
    return target_schema, target_table


@dataclass(frozen=True)
class NameMapping:
    """The column and table mapping rules (see the module docstring); the default maps nothing."""

    #: (pattern, the only columns kept), first match wins.
    columns: tuple[_Rule, ...] = ()
    #: (pattern, columns left out), first match wins.
    exclude_columns: tuple[_Rule, ...] = ()
    #: (pattern, upstream column, replica column); every matching rule of a column applies, the first wins.
    rename_columns: tuple[tuple[str, str, str], ...] = ()
    #: (pattern, ``SCHEMA.TABLE`` template), first match wins.
    table_names: tuple[tuple[str, str], ...] = ()
    _compiled: tuple[tuple[Callable[[str, str], bool], ...], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        # Re-checked from texts: a NameMapping built field by field is validated like a parsed one.
        object.__setattr__(self, "columns", parse_rules("--columns", [f"{p}={','.join(c)}" for p, c in self.columns]))
        object.__setattr__(self, "exclude_columns", parse_rules(
            "--exclude-columns", [f"{p}={','.join(c)}" for p, c in self.exclude_columns]))
        object.__setattr__(self, "rename_columns", _parse_renames(
            [f"{p}.{c}={n}" for p, c, n in self.rename_columns]))
        object.__setattr__(self, "table_names", _parse_table_names([f"{p}={t}" for p, t in self.table_names]))
        object.__setattr__(self, "_compiled", (
            tuple(_matcher("--columns", p) for p, _ in self.columns),
            tuple(_matcher("--exclude-columns", p) for p, _ in self.exclude_columns),
            tuple(_matcher("--rename-column", p) for p, _, _ in self.rename_columns),
            tuple(_matcher("--table-name", p) for p, _ in self.table_names),
        ))

    @classmethod
    def parse(cls, *, columns: Iterable[str] | Mapping[str, str] | None = None,
              exclude_columns: Iterable[str] | Mapping[str, str] | None = None,
              rename_columns: Iterable[str] | Mapping[str, str] | None = None,
              table_names: Iterable[str] | Mapping[str, str] | None = None) -> NameMapping:
        """Rules from option texts (``--columns``, ``--exclude-columns``, ``--rename-column``, ``--table-name``)."""
        return cls(columns=parse_rules("--columns", columns),
                   exclude_columns=parse_rules("--exclude-columns", exclude_columns),
                   rename_columns=_parse_renames(rename_columns), table_names=_parse_table_names(table_names))

    @property
    def maps_columns(self) -> bool:
        """Whether any column rule is set (tables then keep a per-column :data:`Names` state)."""
        return bool(self.columns or self.exclude_columns or self.rename_columns)

    @property
    def is_default(self) -> bool:
        """Whether nothing is mapped."""
        return not (self.maps_columns or self.table_names)

    def describe(self) -> list[str]:
        """One phrase per rule, for reports."""
        return [*(f"columns {p}={','.join(c)}" for p, c in self.columns),
                *(f"exclude {p}={','.join(c)}" for p, c in self.exclude_columns),
                *(f"rename {p}.{c}={n}" for p, c, n in self.rename_columns),
                *(f"table {p}={t}" for p, t in self.table_names)]

    def target_table(self, schema: str, table: str) -> tuple[str, str]:
        """The replica table name (schema, table) of upstream ``schema.table``."""
        for (pattern, template), match in zip(self.table_names, self._compiled[3]):
            if match(schema, table):
                return _target(template, schema, table, f"--table-name {pattern}={template} for {schema}.{table}")
        return schema, table

    def column_target(self, schema: str, table: str, column: str) -> str:
        """The replica name the rules give a column first seen as ``column`` (``EXCLUDED`` when left out)."""
        lowered = column.lower()
        for (_, names), match in zip(self.columns, self._compiled[0]):
            if match(schema, table):
                if lowered not in {n.lower() for n in names}:
                    return EXCLUDED
                break
        for (_, names), match in zip(self.exclude_columns, self._compiled[1]):
            if match(schema, table):
                if lowered in {n.lower() for n in names}:
                    return EXCLUDED
                break
        for (_, name, new), match in zip(self.rename_columns, self._compiled[2]):
            if name.lower() == lowered and match(schema, table):
                return new
        return column

    def names(self, info: TableInfo, known: Mapping[str, str] | None = None,
              key: Iterable[str] = ()) -> Names:
        """The full :data:`Names` of ``info``: ``known`` decisions kept, new columns decided by the rules.

        ConfigError when a handle column or a ``key`` column is left out, or two columns get one name.
        """
        from pyticdc.consumer import handle_columns

        known = known or {}
        out: Names = {}
        for column in info.columns:
            target = known.get(column.name)
            out[column.name] = target if target is not None else self.column_target(info.schema, info.table,
                                                                                     column.name)
        lost = [c for c in (*handle_columns(info), *key) if out.get(c, c) == EXCLUDED]
        if lost:
            raise ConfigError(f"{info.qualified_name}: column(s) {', '.join(dict.fromkeys(lost))} identify its rows "
                              "and cannot be left out (--columns/--exclude-columns)")
        seen: dict[str, str] = {}
        for upstream, target in out.items():
            if target and target.lower() in seen:
                raise ConfigError(f"{info.qualified_name}: columns {seen[target.lower()]} and {upstream} would both be "
                                  f"replica column {target!r}")
            if target:
                seen[target.lower()] = upstream
        return out


def follow_renames(names: Mapping[str, str], renamed: Mapping[str, str]) -> Names:
    """``names`` after upstream column renames (old → new): a mapped or excluded column keeps its replica name,
    a column that kept its name follows the rename."""
    out = dict(names)
    for old in renamed:
        out.pop(old, None)
    for old, new in renamed.items():
        target = names.get(old, old)
        out[new] = new if target == old else target
    return out


def map_info(info: TableInfo, names: Mapping[str, str]) -> TableInfo:
    """``info`` in replica names: left-out columns removed, the others renamed; indexes that lose a column go."""
    if all(names.get(c.name, c.name) == c.name for c in info.columns):
        return info
    columns = tuple(msgspec.structs.replace(c, name=names.get(c.name, c.name)) for c in info.columns
                    if names.get(c.name, c.name) != EXCLUDED)
    indexes = tuple(msgspec.structs.replace(i, columns=tuple(names.get(c, c) for c in i.columns))
                    for i in info.indexes if all(names.get(c, c) != EXCLUDED for c in i.columns))
    return msgspec.structs.replace(info, columns=columns, indexes=indexes)


def map_rows(rows: Iterable[RowChange], names: Mapping[str, str],
             decide: Callable[[str], str] | None = None) -> list[RowChange]:
    """Row changes in replica column names: left-out columns removed, the others renamed.

    A column the names do not know (one a row carries that the table's schema lacks) is named by ``decide``
    (the rules), else kept as is.
    """
    infos: dict[int, TableInfo] = {}

    def name(column: str) -> str:
        target = names.get(column)
        if target is None:
            return decide(column) if decide is not None else column
        return target

    def image(row: Row | None) -> Row | None:
        if row is None:
            return None
        return make_row([(name(k), v) for k, v in row.items() if name(k) != EXCLUDED])

    out = []
    for change in rows:
        info = change.table_info
        mapped = None
        if info is not None:
            mapped = infos.get(id(info))
            if mapped is None:
                mapped = infos[id(info)] = map_info(info, {c.name: name(c.name) for c in info.columns})
        out.append(msgspec.structs.replace(change, columns=image(change.columns), pre_columns=image(change.pre_columns),
                                           table_info=mapped))
    return out
