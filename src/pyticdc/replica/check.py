"""Comparing a Delta replica with the upstream truth (the simulator's), in typed values.

The truth rows (model values, already projected through the protocol's encoder by
:class:`pyticdc.sim.TruthProjector` so a lossy protocol is held to what it can carry) are typed exactly as
the replica types rows — same text rendering, same converters, same table info — and compared with the
rows read back from Delta as multisets, table by table; the first difference is described.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from pyticdc.model import Op, Row, RowChange, TableInfo, make_row
from pyticdc.replica.changes import NetChange
from pyticdc.replica.ddl import TableKey
from pyticdc.replica.mapping import EXCLUDED, map_info
from pyticdc.replica.modelling import IS_DELETED, Modelling
from pyticdc.replica.progress import Progress, read_progress, tso_time
from pyticdc.replica.projection import COMMIT_TS, DIGEST, HIDDEN_COLUMNS, project_changes, table_columns
from pyticdc.replica.store import DeltaStore, safe_name

__all__ = ["check_modelling", "compare_replica", "projection_options", "read_replica", "typed_truth",
           "unsettled_tables"]

#: A row as compared: (column name, typed value) pairs in name order.
FrozenRow = tuple[tuple[str, Any], ...]


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _frozen(rows: list[dict[str, Any]], columns: list[str]) -> Counter[FrozenRow]:
    names = sorted(columns)
    return Counter(tuple((name, _freeze(row.get(name))) for name in names) for row in rows)


def projection_options(protocol: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Codec options whose ``Encoder.project`` gives what replica tables hold of a ``protocol`` stream.

    The replica types columns from the DDL it saw: of Debezium without ``enable-tidb-extension`` it reads
    BIGINT UNSIGNED values back from their int64 twin and binary columns from the base64 their "string" carries,
    i.e. it holds what Debezium with the extension carries. Other streams: ``options`` as given.
    """
    from pyticdc.codec import canonical_protocol, make_encoder

    given = dict(options or {})
    if canonical_protocol(protocol) != "debezium":
        return given
    parsed = make_encoder("debezium", given).options
    if parsed.enable_tidb_extension or parsed.debezium_disable_schema:
        return given
    kept = {k: v for k, v in given.items() if str(k).strip().lower().replace("_", "-") != "enable-tidb-extension"}
    return {**kept, "enable-tidb-extension": True}


def typed_truth(rows: Counter[Row], truth_info: TableInfo, replica_info: TableInfo, *,
                time_zone: str = "UTC") -> Counter[FrozenRow]:
    """Truth rows typed the way the replica types rows of ``replica_info``."""
    upserts = [RowChange(op=Op.INSERT, schema=truth_info.schema, table=truth_info.table, commit_ts=0, columns=row,
                         table_info=truth_info) for row in rows.elements()]
    net = NetChange(strategy="key", key_columns=(), upserts=upserts)
    typed = project_changes(net, replica_info, rowid=False, time_zone=time_zone)
    return _frozen(typed.to_pylist(), table_columns(typed.schema))


def read_replica(warehouse: str | Path, *, storage_options: Mapping[str, str] | None = None,
                 modelling: Modelling | None = None) -> tuple[Progress, dict[TableKey, Counter[FrozenRow]]]:
    """The committed progress and every replica table's live rows (without the metadata columns).

    With soft deletes (``modelling``), rows with ``_is_deleted = true`` are left out: the live view.
    """
    store = DeltaStore(warehouse, storage_options=storage_options)
    progress = read_progress(store)
    content: dict[TableKey, Counter[FrozenRow]] = {}
    for key, entry in progress.tables.items():
        data = store.read(store.root / entry.path)
        rows = data.to_pylist()
        if modelling is not None and modelling.soft_delete and IS_DELETED in data.schema.names:
            rows = [row for row in rows if not row[IS_DELETED]]
        content[key] = _frozen(rows, table_columns(data.schema, modelling))
    return progress, content


def check_modelling(warehouse: str | Path, modelling: Modelling, *,
                    storage_options: Mapping[str, str] | None = None) -> str | None:
    """None if the committed tables are modelled as ``modelling`` says, else the first violation.

    Metadata columns hold what they mean (``_op`` an operation, ``delete`` exactly on soft-deleted rows,
    ``_commit_time`` the time of ``_commit_ts``, ``_ingested_at`` set); a soft-deleted row's key is no
    live row's key (a re-insert revived it instead of adding a row); a table under ``--key`` is found by
    those columns and has no row digest.
    """
    store = DeltaStore(warehouse, storage_options=storage_options)
    progress = read_progress(store)
    for key, entry in sorted(progress.tables.items()):
        name = f"{key[0]}.{key[1]}"
        data = store.read(store.root / entry.path)
        missing = [c for c in modelling.row_columns if c not in data.schema.names]
        if missing:
            return f"table {name}: metadata columns {missing} missing"
        override = modelling.key_for(*key)
        if override is not None and (DIGEST in data.schema.names or tuple(entry.key_columns) != override):
            return (f"table {name}: --table-key {','.join(override)} not used (key {list(entry.key_columns)}, digest "
                    f"column {'present' if DIGEST in data.schema.names else 'absent'})")
        live: set[tuple[Any, ...]] = set()
        gone: list[tuple[Any, ...]] = []
        for row in data.to_pylist():
            deleted = bool(row.get(IS_DELETED)) if modelling.soft_delete else False
            if "_op" in row and row["_op"] not in ("insert", "update", "delete"):
                return f"table {name}: _op {row['_op']!r}"
            if "_op" in row and modelling.soft_delete and (row["_op"] == "delete") != deleted:
                return f"table {name}: _op {row['_op']!r} on a row with _is_deleted={deleted}"
            if "_commit_time" in row and row["_commit_time"] != tso_time(int(row[COMMIT_TS])):
                return f"table {name}: _commit_time {row['_commit_time']} is not the time of {row[COMMIT_TS]}"
            if "_ingested_at" in row and row["_ingested_at"] is None:
                return f"table {name}: _ingested_at is NULL"
            if entry.key_columns:
                handle = tuple(_freeze(row.get(c)) for c in entry.key_columns)
                if deleted:
                    gone.append(handle)
                else:
                    live.add(handle)
        revived = [h for h in gone if h in live]
        if revived:
            return f"table {name}: key {revived[0]} is both soft-deleted and live"
        if len(set(gone)) != len(gone):
            return f"table {name}: a key is soft-deleted twice"
    return None


def unsettled_tables(warehouse: str | Path, *, storage_options: Mapping[str, str] | None = None) -> list[str]:
    """Tables ahead of the committed progress: a batch crashed after writing them and was not redone yet.

    Such a table holds more than the progress says (never less, never a change twice); the next
    committed batch that reaches past the crashed one settles it. Empty when the replica is one
    consistent snapshot at the progress' consistent ts.
    """
    store = DeltaStore(warehouse, storage_options=storage_options)
    progress = read_progress(store)
    limit = 2 * progress.consistent_ts + 1
    ahead = []
    for key, entry in sorted(progress.tables.items()):
        path = store.root / entry.path
        if store.uid(path) != entry.uid:
            ahead.append(f"{key[0]}.{key[1]} (moved or dropped)")
        elif store.position(path) > limit:
            ahead.append(f"{key[0]}.{key[1]} (at {store.position(path) // 2})")
    return ahead


def _describe(row: FrozenRow) -> str:
    return "{" + ", ".join(f"{name}: {value!r}" for name, value in row if name not in HIDDEN_COLUMNS) + "}"


def compare_replica(
    warehouse: str | Path, truth: Mapping[TableKey, Counter[Row]], truth_infos: Mapping[TableKey, TableInfo], *,
    time_zone: str = "UTC", storage_options: Mapping[str, str] | None = None, modelling: Modelling | None = None,
) -> str | None:
    """None if the replica's committed tables hold exactly the truth, else the first difference.

    With ``modelling``: the live rows against the truth, then :func:`check_modelling`.
    """
    progress, content = read_replica(warehouse, storage_options=storage_options, modelling=modelling)
    for key in sorted(set(content) | set(truth)):
        name = f"{key[0]}.{key[1]}"
        if key not in content:
            return f"table {name} missing from the replica ({sum(truth[key].values())} rows in the truth)"
        if key not in truth:
            return f"table {name} in the replica but not in the truth ({sum(content[key].values())} rows)"
        entry = progress.tables[key]
        replica_info = entry.info
        if entry.kept:
            # add-only: the replica's columns are the upstream's and those kept after their upstream one went.
            live = {c.name.lower() for c in replica_info.columns}
            replica_info = msgspec.structs.replace(replica_info, columns=(
                *replica_info.columns, *(c for c in entry.kept if c.name.lower() not in live)))
        wanted_columns = sorted(c.name for c in truth_infos[key].columns)
        got_columns = sorted(c.name for c in replica_info.columns)
        if wanted_columns != got_columns:
            return f"table {name}: replica columns {got_columns} differ from the truth's {wanted_columns}"
        rows, truth_info = truth[key], truth_infos[key]
        if modelling is not None and not modelling.mapping.is_default:
            # The truth under the mapping rules, by name (the simulator renames no column, so a column's first
            # name is its name): the replica's column names and values are then compared with it.
            target = modelling.mapping.target_table(*key)
            if entry.path != f"{safe_name(target[0])}/{safe_name(target[1])}":
                return f"table {name}: replica table at {entry.path}, --table-name says {target[0]}.{target[1]}"
            rule = {c.name: modelling.mapping.column_target(key[0], key[1], c.name) for c in truth_info.columns}
            rows = Counter({make_row([(rule[k], v) for k, v in row.items() if rule.get(k, k) != EXCLUDED]) or Row(): n
                            for row, n in rows.items()})
            truth_info, replica_info = map_info(truth_info, rule), map_info(entry.info, rule)
        want = typed_truth(rows, truth_info, replica_info, time_zone=time_zone)
        got = content[key]
        if got == want:
            continue
        missing = list((want - got).elements())
        extra = list((got - want).elements())
        if missing:
            return (f"table {name}: {len(missing)} truth rows missing from the replica, first {_describe(missing[0])}"
                    + (f"; {len(extra)} replica rows not in the truth, first {_describe(extra[0])}" if extra else ""))
        return f"table {name}: {len(extra)} replica rows not in the truth, first {_describe(extra[0])}"
    if modelling is not None:
        return check_modelling(warehouse, modelling, storage_options=storage_options)
    return None
