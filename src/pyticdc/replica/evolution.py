"""Schema evolution modes: what a replica table does when an upstream DDL changes its columns (pure).

``follow``    (default) the replica follows: added columns added (existing rows take the default), dropped ones
              dropped, renamed ones renamed, type changes converted where every value converts exactly.
``add-only``  added columns are added; drops and renames are not followed: a dropped upstream column stays in
              the replica with its values, NULL in rows written after the drop; a renamed one stays under its
              old name likewise, and the new name is added (NULL in the rows written before). Type changes
              follow as in ``follow``.
``fail``      a DDL that would change a replica table's columns (add, drop, rename, type change of a column the
              replica has) stops the pipeline with a ReplicaError naming the statement and the table, before
              the table is touched: the progress stays at the last committed batch, and a restart with another
              mode continues from there (each table skips what it already holds). Index, option and
              comment changes, and changes of columns left out by ``--exclude-columns``, pass.
``rescue``    values that would be lost go to a ``_rescued_data`` JSON string column (an object of column name
              → value as text): values of columns a row carries that the table's schema lacks (a DDL the
              replica did not understand, a column met mid-stream), and existing values of a column whose
              type changes in a way they do not convert to (the column takes the new type, NULL in those rows).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import msgspec
import orjson

from pyticdc.arrow.types import column_arrow_type
from pyticdc.errors import ConfigError, ReplicaError
from pyticdc.model import ColumnFlag, ColumnInfo, TableInfo

__all__ = ["MODES", "RESCUED", "check_mode", "kept_columns", "layout_changes", "refuse", "rescued_json"]

MODES: Final = ("follow", "add-only", "fail", "rescue")
#: The rescue column: a JSON object of column name → value text, NULL when nothing was rescued.
RESCUED: Final = "_rescued_data"
#: Flags a kept column loses: it identifies no row any more, and new rows leave it NULL.
_KEY_FLAGS: Final = ColumnFlag.HANDLE_KEY | ColumnFlag.PRIMARY_KEY | ColumnFlag.UNIQUE_KEY | ColumnFlag.MULTIPLE_KEY


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else ConfigError naming them."""
    if mode not in MODES:
        raise ConfigError(f"unknown schema evolution mode {mode!r}; valid: {', '.join(MODES)}")
    return mode


def layout_changes(before: TableInfo, after: TableInfo, renamed: Mapping[str, str]) -> list[str]:
    """What a DDL changes in a replica table's columns (``before``/``after`` in replica names), one phrase each."""
    old = {c.name: c for c in before.columns}
    new = {c.name: c for c in after.columns}
    changes = [f"rename column {a} to {b}" for a, b in renamed.items() if a != b and a in old]
    gone = set(renamed)
    changes += [f"drop column {n}" for n in old if n not in new and n not in gone]
    changes += [f"add column {n}" for n in new if n not in old and n not in set(renamed.values())]
    changes += [f"change type of {n}" for n, c in new.items() if n in old
                and column_arrow_type(old[n]) != column_arrow_type(c)]
    return changes


def refuse(query: str, table: str, changes: Sequence[str]) -> ReplicaError:
    """The error ``fail`` stops with (one line)."""
    statement = " ".join(query.split())
    statement = statement if len(statement) <= 120 else statement[:117] + "..."
    return ReplicaError(f"schema evolution 'fail': {table}: DDL {statement!r} would {', '.join(changes)}; "
                        "stopped before applying it (the progress is at the last committed batch: restart with "
                        "--schema-evolution follow|add-only|rescue to continue)")


def kept_columns(before: TableInfo, after: TableInfo, kept: Iterable[ColumnInfo]) -> tuple[ColumnInfo, ...]:
    """``add-only``: the replica columns kept without upstream column (``before``/``after`` in replica names).

    Columns ``before`` has that ``after`` lacks (dropped, or renamed away: a rename is a drop of the old name
    here, the new name an added column) join ``kept``, nullable and without key flags; a kept column whose
    name a live column takes again leaves.
    """
    live = {c.name.lower() for c in after.columns}
    out = [c for c in kept if c.name.lower() not in live]
    names = {c.name.lower() for c in out}
    for column in before.columns:
        if column.name.lower() not in live and column.name.lower() not in names:
            out.append(msgspec.structs.replace(column, flags=column.flags & ~_KEY_FLAGS, nullable=True,
                                               default=None))
            names.add(column.name.lower())
    return tuple(out)


def _text(value: Any) -> Any:
    # Texts, as rows carry values (binary ones in base64): one JSON shape whatever the value came from.
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, (list, tuple)):
        return [_text(v) for v in value]
    return str(value)


def rescued_json(existing: str | None, values: Mapping[str, Any]) -> str | None:
    """``existing`` rescue JSON with ``values`` added (NULL values left out); None when there is nothing."""
    merged: dict[str, Any] = orjson.loads(existing) if existing else {}
    for name, value in values.items():
        if value is not None:
            merged[name] = _text(value)
    return orjson.dumps(merged, option=orjson.OPT_SORT_KEYS).decode() if merged else None
