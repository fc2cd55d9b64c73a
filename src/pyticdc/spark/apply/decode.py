"""Executor side of the distributed apply: Kafka records → change rows with their images, as Arrow (pure).

:func:`decode_records` is the body of the first ``mapInArrow``: each record decoded where it was read, one
output row per event. Row changes carry everything the later Spark stages need without their Python
objects: the table (``tkey``), commit ts and operation rank (apply order), a digest of the consumer's change
identity (de-duplication), digests of the pre- and post-image handles (net change per handle: the
``--table-key`` columns where an override names the table's, :class:`KeyOverrides`), the images as
canonical texts (typed projection at apply time) and a digest naming their TableInfo. The other events —
watermarks, DDL (the event pickled), undecodable records with their bytes — and one ``info`` row per distinct
TableInfo and one ``part`` row per Kafka partition (records read, last offset) are the batch's metadata: the
only rows the driver collects.

:func:`mark_changes` is the body of the second ``mapInArrow``, once the driver knows the watermarks and the
DDL barriers: it drops re-sent rows (at or below their partition's resolved ts where they were read) and
gives each row the level of its segment (see :mod:`pyticdc.spark.apply.plan`).
"""

from __future__ import annotations

import bisect
import hashlib
import os
import pickle
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import orjson
import pyarrow as pa

from pyticdc.arrow.rows import collector_paused, new_decoder, row_images_json, table_info_json
from pyticdc.codec._fastpath import native
from pyticdc.consumer.identity import OP_RANK, change_identity, handle_columns, image_handles
from pyticdc.errors import DecodeError
from pyticdc.model import Bootstrap, DDLEvent, Op, Row, RowChange, TableInfo, Watermark
from pyticdc.spark.worker import prepare_task

__all__ = ["CHANGE_KINDS", "CHANGE_SCHEMA", "DECODED_SCHEMA", "DICTIONARY_COLUMNS", "HANDLE_KINDS",
           "STATISTICS_COLUMNS", "KeyOverrides", "change_values", "decode_records", "decode_to_files", "held_values",
           "info_id", "mark_changes", "resolve_held", "tkey"]

#: Exceptions a buggy decoder may leak on hostile bytes (as the consumer engine treats them).
_DECODER_BUGS: Final = (ValueError, TypeError, KeyError, IndexError, AttributeError, UnicodeError, OverflowError,
                        RecursionError)

_FIELDS: Final = [
    ("kind", pa.string()),          # row | held | ddl | wm | boot | error | line | info | part | file | table
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("idx", pa.int32()),            # event index in the record
    ("tkey", pa.string()),          # "schema\x00table"
    ("ts", pa.int64()),             # commit ts, resolved ts; records read for ``part``
    ("op", pa.string()),
    ("rank", pa.int8()),
    ("ident", pa.binary()),
    ("pre_h", pa.binary()),
    ("post_h", pa.binary()),
    ("hkind", pa.string()),         # key | rowid | image: how this row names its handle
    ("row_id", pa.int64()),
    ("pre", pa.string()),           # images as JSON {name: canonical text}
    ("post", pa.string()),
    ("marks", pa.string()),         # JSON list of names whose text is base64
    ("info", pa.string()),          # TableInfo digest (``info`` rows: the JSON in ``text``)
    ("hko", pa.bool_()),
    ("text", pa.string()),          # error reason, TableInfo JSON
    ("raw_key", pa.binary()),
    ("raw_value", pa.binary()),     # the record's bytes (error, line); the pickled DDLEvent (ddl)
    # Re-send marks without a second Python pass (see decode_records): ``rb`` is the highest resolved ts the
    # task saw earlier in the row's partition (``part`` rows: the highest of the task), ``seg`` the first offset
    # the task read of that partition.
    ("rb", pa.int64()),
    ("seg", pa.int64()),
]
#: Columns of the decoded frame.
DECODED_SCHEMA: Final = pa.schema(_FIELDS)
#: Columns of a change row after :func:`mark_changes` (staged rows keep them).
CHANGE_SCHEMA: Final = pa.schema([*_FIELDS, ("staged", pa.bool_()), ("level", pa.int32())])
_NAMES: Final = DECODED_SCHEMA.names
#: Kinds of the decoded rows that are changes (the others are the batch's metadata).
CHANGE_KINDS: Final = ("row", "held")


def tkey(schema: str, table: str) -> str:
    """The table key column value of ``schema.table`` (NUL cannot occur in a TiDB name)."""
    return f"{schema}\x00{table}"


def _digest(value: Any) -> bytes:
    # repr is exact for the handle values (int, str, bytes, None, floats): equal handles, equal digests.
    return _text_digest(repr(value))


def _text_digest(text: str) -> bytes:
    helpers = native()
    if helpers is not None:
        digest: bytes = helpers.text_digest(text)  # the same BLAKE2b, without a hash object per digest
        return digest
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_INFO_IDS: dict[int, tuple[TableInfo, str, str]] = {}


def info_id(info: TableInfo) -> tuple[str, str]:
    """(digest, JSON) of a TableInfo (cached by identity: decoders reuse one per table header)."""
    hit = _INFO_IDS.get(id(info))
    if hit is not None and hit[0] is info:
        return hit[1], hit[2]
    text = table_info_json(info)
    ident = hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
    if len(_INFO_IDS) > 4096:
        _INFO_IDS.clear()
    _INFO_IDS[id(info)] = (info, ident, text)
    return ident, text


#: Key overrides as pure data (:attr:`pyticdc.replica.modelling.Modelling.keys`): (table-filter pattern, columns).
Keys = tuple[tuple[str, tuple[str, ...]], ...]


class KeyOverrides:
    """The ``--table-key`` columns of each table, from the patterns (what executors are sent: pure data)."""

    def __init__(self, keys: Keys = ()) -> None:
        self.keys = keys
        self._modelling: Any = None
        self._found: dict[tuple[str, str], tuple[str, ...] | None] = {}

    def key_for(self, schema: str, table: str) -> tuple[str, ...] | None:
        """The overriding key columns of ``schema.table`` (None: the handle the messages name)."""
        if not self.keys:
            return None
        found = self._found.get((schema, table), ())
        if found == ():
            if self._modelling is None:
                # The matchers are built where they are used: a Modelling's compiled filters need not pickle.
                from pyticdc.replica.modelling import Modelling

                self._modelling = Modelling(keys=self.keys)
            found = self._found[(schema, table)] = self._modelling.key_for(schema, table)
        return found


def _override_image(row: RowChange, image: Row | None) -> Row | None:
    # As pyticdc.replica.changes._pre_image: an UPDATE's pre-image may hold only the changed columns, the
    # unchanged key columns are then the post-image's.
    if image is None or image is not row.pre_columns or row.columns is None:
        return image
    return image if all(name in image for name in row.columns) else Row({**row.columns, **image})


def _override_handle(row: RowChange, image: Row | None, key: tuple[str, ...]) -> Any:
    image = _override_image(row, image)
    if image is None:
        return None
    return ("key", tuple(image.get(name) for name in key))


#: How a change row names its handle (its ``hkind``): key columns, override columns an image lacks, row id, image.
HANDLE_KINDS: Final = ("key", "nokey", "rowid", "image")


def _override_kind(row: RowChange, key: tuple[str, ...]) -> str:
    # As pyticdc.replica.changes._has: "nokey" when an image lacks an override column (the segment is refused).
    images = (row.columns,) if row.op == Op.UPDATE and row.columns is not None else (row.columns, row.pre_columns)
    ok = all(image is None or all(name in image for name in key) for image in images)
    return "key" if ok else "nokey"


def change_values(row: RowChange, infos: dict[str, str] | None = None,
                  key: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The change-row fields of one row change (``infos`` collects digest → TableInfo JSON).

    ``key``: the table's ``--table-key`` columns; the handles (net change, MERGE) are then theirs, while the
    change identity (de-duplication) stays the consumer's, from what the message names.
    """
    return {"kind": "row", **dict(zip(_CHANGE_FIELDS, _change_fields(row, infos, key)))}


_OP_VALUE: Final = {op: op.value for op in Op}
_OP_REPR: Final = {op: repr(op.value) for op in Op}
#: (schema, table) → ``"'schema', 'table'"``: the start of a change identity's repr (bounded, cleared when full).
_NAME_REPRS: dict[tuple[str, str], str] = {}


def _names_repr(row: RowChange) -> str:
    # The start of the change identity's repr, cached per table.
    names = _NAME_REPRS.get((row.schema, row.table))
    if names is None:
        if len(_NAME_REPRS) >= 4096:
            _NAME_REPRS.clear()
        names = _NAME_REPRS[(row.schema, row.table)] = f"{row.schema!r}, {row.table!r}"
    return names


def _identity_digest(row: RowChange, pre_repr: str, post_repr: str) -> bytes:
    # _digest(change_identity(row)), with the handles' reprs the handle digests made: a tuple's repr is its
    # items' reprs, comma-separated in parentheses (tests/spark/test_change_fields.py holds it to the tuple's).
    return _text_digest(f"({_names_repr(row)}, {row.physical_table_id!r}, {row.commit_ts!r}, {_OP_REPR[row.op]}, "
                        f"{pre_repr}, {post_repr})")


#: The fields of :func:`_change_fields`, in its order.
_CHANGE_FIELDS: Final = ("tkey", "ts", "op", "rank", "ident", "pre_h", "post_h", "hkind", "row_id", "pre", "post",
                         "marks", "info", "hko")
#: Where an event was read, and the partition's carried resolved ts and first offset (see decode_records).
_POSITION: Final = ("topic", "partition", "offset", "idx", "rb", "seg")
#: The columns of a change row as decode_records collects it: its position, then :data:`_CHANGE_FIELDS`.
_CHANGE_COLUMNS: Final = (*_POSITION, *_CHANGE_FIELDS)


def _change_fields(row: RowChange, infos: dict[str, str] | None,
                   key: tuple[str, ...] | None) -> tuple[Any, ...]:
    # change_values as a tuple: decode_records keeps a change row as one tuple, turned into columns per batch.
    post, pre, marks = row_images_json(row)
    info = row.table_info
    ident = ""
    if info is not None:
        ident, text = info_id(info)
        if infos is not None and ident not in infos:
            infos[ident] = text
    pre_image, post_image = row.pre_columns, row.columns
    columns = handle_columns(info)
    helpers = native()
    # Images keyed by the table's handle columns, the common row: its three digests in one C call.
    found = None if key is not None or not columns or helpers is None else helpers.change_digests(
        _names_repr(row), row.physical_table_id, row.commit_ts, _OP_REPR[row.op], pre_image, post_image, columns)
    if found is not None:
        ident_digest, pre_h, post_h = found
        hkind = "key"
    else:
        pre_handle, post_handle = image_handles(row)
        pre_repr, post_repr = repr(pre_handle), repr(post_handle)
        ident_digest = _identity_digest(row, pre_repr, post_repr)
        if key is None:
            # The identity's handles (None for an absent image) are the net change's too: an image of
            # every key column is keyed by it.
            keyed = (bool(columns) and (post_handle is None or post_handle[0] == "key")  # type: ignore[index]
                     and (pre_handle is None or pre_handle[0] == "key"))  # type: ignore[index]
            hkind = "key" if keyed else "rowid" if row.row_id else "image"
            pre_h = None if pre_image is None else _text_digest(pre_repr)
            post_h = None if post_image is None else _text_digest(post_repr)
        else:
            pre_h = None if pre_image is None else _digest(_override_handle(row, pre_image, key))
            post_h = None if post_image is None else _digest(_override_handle(row, post_image, key))
            hkind = _override_kind(row, key)
    op = row.op
    return (tkey(row.schema, row.table), row.commit_ts, _OP_VALUE[op], OP_RANK[op],
            ident_digest, pre_h, post_h, hkind, row.row_id or 0, pre, post,
            orjson.dumps(marks).decode() if marks else None, ident, row.handle_key_only)


def held_values(row: RowChange) -> dict[str, Any]:
    """The fields of a row decoded before its schema is known (Simple): the row itself travels pickled."""
    return {"kind": "held", "tkey": tkey(row.schema, row.table), "ts": row.commit_ts, "op": row.op.value,
            "rank": OP_RANK[row.op], "ident": _digest(change_identity(row)), "raw_value": pickle.dumps(row)}


def resolve_held(batches: Iterator[pa.RecordBatch], versions: Sequence[tuple[int, TableInfo]],
                 keys: Keys = ()) -> Iterator[pa.RecordBatch]:
    """Held rows whose schema ``versions`` (valid-from ts, TableInfo) now know → change rows; others unchanged.

    A held row its schema cannot type becomes an ``error`` row (its reason in ``text``), as the consumer
    engine quarantines it; rows of other kinds pass through.
    """
    from pyticdc.codec.simple import resolve_row
    from pyticdc.consumer.schemas import SchemaCache

    overrides = KeyOverrides(keys)
    cache = SchemaCache()
    for valid_from, known in versions:
        cache.learn(known, valid_from)
    for batch in batches:
        kinds = batch.column("kind").to_pylist()
        if "held" not in kinds:
            yield batch
            continue
        out = _Out()
        for values in batch.to_pylist():
            if values["kind"] != "held":
                out.add(values)
                continue
            row: RowChange = pickle.loads(values["raw_value"])
            version = row.schema_version or (row.table_info.schema_version if row.table_info is not None else 0)
            info = cache.lookup(row.schema, row.table, row.commit_ts, version)
            where = {k: values[k] for k in ("topic", "partition", "offset", "idx", "rb", "seg")}
            if info is None:
                out.add(values)
                continue
            try:
                resolved = resolve_row(row, info)
            except (DecodeError, *_DECODER_BUGS) as exc:
                out.add({**where, "kind": "error", "tkey": values["tkey"], "ts": values["ts"], "ident": values["ident"],
                         "text": f"row {row.schema}.{row.table}@{row.commit_ts} unreadable with schema version "
                                 f"{info.schema_version}: {exc}"})
                continue
            out.add({**where, **change_values(resolved, key=overrides.key_for(row.schema, row.table))})
        yield from out.batches()


class _Out:
    """Rows of the output batch: dicts (a missing field is null), and change rows as :data:`_CHANGE_COLUMNS` tuples."""

    def __init__(self) -> None:
        self.rows: list[Mapping[str, Any]] = []
        self.changes: list[tuple[Any, ...]] = []

    @property
    def size(self) -> int:
        """Rows collected so far."""
        return len(self.rows) + len(self.changes)

    def add(self, values: Mapping[str, Any]) -> None:
        self.rows.append(values)

    def batches(self) -> list[pa.RecordBatch]:
        """The rows collected as batches (change rows first), and empties the collection."""
        done = []
        if self.changes:
            done.append(_change_batch(self.changes))
            self.changes = []
        if self.rows:
            # from_pylist builds the columns in C++: several times cheaper than appending to 24 lists per row.
            done.append(pa.RecordBatch.from_pylist(self.rows, schema=DECODED_SCHEMA))
            self.rows = []
        return done


_TYPES: Final = {field.name: field.type for field in DECODED_SCHEMA}


def _change_batch(changes: list[tuple[Any, ...]]) -> pa.RecordBatch:
    # Tuples → columns by zip in C, each column converted once: a dict per row and from_pylist's lookups by name
    # cost about twice as much.
    count = len(changes)
    arrays = {name: pa.array(column, _TYPES[name]) for name, column in zip(_CHANGE_COLUMNS, zip(*changes))}
    arrays["kind"] = pa.repeat(pa.scalar("row"), count)
    return pa.RecordBatch.from_arrays(
        [arrays[name] if name in arrays else pa.nulls(count, _TYPES[name]) for name in _NAMES], schema=DECODED_SCHEMA)


def decode_records(batches: Iterator[pa.RecordBatch], protocol: str, options: Mapping[str, str],
                   start: Mapping[tuple[str, int], int], batch_rows: int = 8192,
                   keys: Keys = ()) -> Iterator[pa.RecordBatch]:
    """Records (Kafka source columns) → decoded rows; records below ``start`` (already consumed) are skipped.

    ``keys``: the ``--table-key`` overrides (see :func:`change_values`).

    Each row carries ``rb``, the highest resolved ts this task read before it in its partition, and ``seg``, the
    first offset of that partition in this task: with the ``part`` rows (per partition the task's first and
    last offset, highest resolved ts, and ``text`` "unordered" when its offsets did not increase) the driver
    knows each row's resolved ts before it as Spark column arithmetic (:func:`pyticdc.spark.apply.plan.carries`).
    """
    decoder = new_decoder(protocol, options)
    overrides = KeyOverrides(keys)
    out = _Out()
    infos: dict[str, str] = {}
    # (topic, partition) → [records, last offset, row events, first offset, highest resolved ts, ordered]
    parts: dict[tuple[str, int], list[int]] = {}
    for batch in batches:
        done: list[pa.RecordBatch] = []
        with collector_paused():
            data = batch.to_pydict()
            for key, value, topic, partition, offset in zip(data["key"], data["value"], data["topic"],
                                                            data["partition"], data["offset"]):
                if partition < 0:
                    out.add({"topic": topic, "partition": partition, "offset": offset, "idx": 0, "kind": "line",
                             "raw_key": key, "raw_value": value})
                    continue
                position = (topic, partition)
                if offset < start.get(position, 0):
                    continue
                seen = parts.get(position)
                if seen is None:
                    seen = parts[position] = [0, -1, 0, offset, 0, 1]
                if offset <= seen[1]:
                    seen[5] = 0  # the carried resolved ts would be wrong: the driver marks in Python instead
                seen[0] += 1
                seen[1] = max(seen[1], offset)
                seen[2] += _decode_one(decoder, protocol, key, value, (topic, partition, offset), out, infos, seen,
                                       overrides)
                if out.size >= batch_rows:
                    done.extend(out.batches())
        yield from done
    for ident, text in infos.items():
        out.add({"kind": "info", "info": ident, "text": text})
    for (topic, partition), (count, last, rows, first, high, ordered) in parts.items():
        # Records read (ts), the last offset and the row events decoded (row_id) of each partition.
        out.add({"kind": "part", "topic": topic, "partition": partition, "offset": last, "ts": count,
                 "row_id": rows, "seg": first, "rb": high, "text": None if ordered else "unordered"})
    yield from out.batches()


#: Columns of the scratch Parquet files with dictionaries (the few-valued ones) and with statistics (positions and
#: commit ts): on digests and images both are work the readers never use.
DICTIONARY_COLUMNS: Final = ["kind", "topic", "tkey", "op", "hkind", "info"]
STATISTICS_COLUMNS: Final = ["partition", "offset", "ts"]


def decode_to_files(batches: Iterator[pa.RecordBatch], directory: str, protocol: str, options: Mapping[str, str],
                    start: Mapping[tuple[str, int], int], batch_rows: int = 8192,
                    keys: Keys = ()) -> Iterator[pa.RecordBatch]:
    """:func:`decode_records` whose change rows go to one Parquet file of ``directory``; yields the metadata rows.

    The task's file is announced last, by a ``table`` row per table key its rows have and a ``file`` row (its
    path in ``text``, its rows in ``ts``): the driver reads the files of the tasks that succeeded, and a failed
    attempt's file is never named. Change rows kept this way cost no JVM conversion or cache: the later stages
    read them with pyarrow or Spark's vectorized Parquet reader.
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    prepare_task()
    changes = pa.array(CHANGE_KINDS)
    path = os.path.join(directory, f"part-{uuid.uuid4().hex}.parquet")
    writer: pq.ParquetWriter | None = None
    written = 0
    tables: set[str] = set()
    try:
        for batch in decode_records(batches, protocol, options, start, batch_rows, keys):
            is_change = pc.is_in(batch.column("kind"), value_set=changes)
            rows = batch.filter(is_change)
            if rows.num_rows:
                if writer is None:
                    os.makedirs(directory, exist_ok=True)
                    # Uncompressed: a scratch file, read by this batch's later stages and removed with its commit.
                    writer = pq.ParquetWriter(path, DECODED_SCHEMA, compression="none",
                                              use_dictionary=DICTIONARY_COLUMNS, write_statistics=STATISTICS_COLUMNS)
                writer.write_batch(rows)
                written += rows.num_rows
                tables.update(key for key in pc.unique(rows.column("tkey")).to_pylist() if key is not None)
            meta = batch.filter(pc.invert(is_change))
            if meta.num_rows:
                yield meta
    finally:
        if writer is not None:
            writer.close()
    if written:
        yield pa.RecordBatch.from_pylist([*({"kind": "table", "tkey": key} for key in sorted(tables)),
                                          {"kind": "file", "text": path, "ts": written}], schema=DECODED_SCHEMA)


def _decode_one(decoder: Any, protocol: str, key: bytes | None, value: bytes | None, where: tuple[str, int, int],
                out: _Out, infos: dict[str, str], seen: list[int], overrides: KeyOverrides) -> int:
    reason = ""
    events: list[Any] = []
    try:
        events = decoder.decode(value, key)
    except DecodeError as exc:
        reason = str(exc)
    except _DECODER_BUGS as exc:
        reason = f"decoder raised {type(exc).__name__}: {exc}"
    for event in events:
        if isinstance(event, RowChange) and (not event.table or event.commit_ts <= 0):
            # The consumer engine's rule: a row of no table or no commit ts means the record is not this protocol.
            reason = f"{protocol}: a row naming no table or no commit ts is not a change (is the protocol right?)"
            break
    topic, partition, offset = where
    if reason:
        out.add({"topic": topic, "partition": partition, "offset": offset, "idx": 0, "kind": "error", "text": reason,
                 "raw_key": key, "raw_value": value})
        return 0
    rows = 0
    for index, event in enumerate(events):
        here = (topic, partition, offset, index, seen[4], seen[3])
        if isinstance(event, RowChange):
            rows += 1
            info = event.table_info
            if info is not None and info.columns:
                out.changes.append((*here, *_change_fields(
                    event, infos, overrides.key_for(event.schema, event.table) if overrides.keys else None)))
            else:
                out.add({**dict(zip(_POSITION, here)), **held_values(event)})
            continue
        meta = dict(zip(_POSITION, here))
        if isinstance(event, Bootstrap):
            out.add({**meta, "kind": "boot", "raw_value": pickle.dumps(event)})
        elif isinstance(event, Watermark):
            out.add({**meta, "kind": "wm", "ts": event.resolved_ts})
            seen[4] = max(seen[4], event.resolved_ts)
        elif isinstance(event, DDLEvent):
            out.add({**meta, "kind": "ddl", "ts": event.commit_ts, "tkey": tkey(event.schema, event.table),
                     "raw_value": pickle.dumps(event)})
    return rows


class Marks:
    """What :func:`mark_changes` needs from the driver: resolved ts steps per partition, DDL barriers."""

    def __init__(self, steps: Mapping[tuple[str, int], tuple[list[tuple[int, int]], list[int]]],
                 initial: Mapping[tuple[str, int], int], released: int,
                 barriers: Mapping[str, tuple[list[int], list[int]]], global_barriers: tuple[list[int], list[int]]):
        #: (topic, partition) → positions (offset, idx) of its watermarks and the resolved ts after each.
        self.steps = dict(steps)
        self.initial = dict(initial)
        self.released = released
        #: tkey → (barrier commit ts list, their levels), global barriers merged in.
        self.barriers = dict(barriers)
        self.global_barriers = global_barriers

    def resolved_before(self, topic: str, partition: int, offset: int, idx: int) -> int:
        """The partition's resolved ts just before the event at (offset, idx)."""
        base = self.initial.get((topic, partition), 0)
        step = self.steps.get((topic, partition))
        if step is None:
            return base
        positions, values = step
        at = bisect.bisect_left(positions, (offset, idx))
        return max(base, values[at - 1]) if at else base

    def level(self, key: str, ts: int) -> int:
        """The segment level of a row of table ``key`` committed at ``ts`` (rows at a DDL's ts go before it)."""
        times, levels = self.barriers.get(key, self.global_barriers)
        at = bisect.bisect_left(times, ts)
        return levels[at - 1] if at else 0


def mark_changes(batches: Iterator[pa.RecordBatch], marks: Marks, staged: bool,
                 limit: int | None = None) -> Iterator[pa.RecordBatch]:
    """Row changes → themselves with ``staged`` and ``level``, re-sent ones dropped (kept: rows of ``staged`` input).

    Rows above ``limit`` (they wait for a later batch) get level -1; None: no limit.
    """
    for batch in batches:
        # Only the columns the marks read become Python objects (the images stay Arrow).
        data = {name: batch.column(name).to_pylist() for name in ("topic", "partition", "offset", "idx", "tkey", "ts")}
        keep: list[int] = []
        levels: list[int] = []
        for index, (topic, partition, offset, idx, key, ts) in enumerate(zip(
                data["topic"], data["partition"], data["offset"], data["idx"], data["tkey"], data["ts"])):
            if not staged and (ts <= marks.released or ts <= marks.resolved_before(topic, partition, offset, idx)):
                continue
            keep.append(index)
            levels.append(-1 if limit is not None and ts > limit else marks.level(key, ts))
        if not keep:
            continue
        taken = batch.select(_NAMES).take(pa.array(keep, pa.int32()))
        yield pa.RecordBatch.from_arrays(
            [*taken.columns, pa.array([staged] * len(keep), pa.bool_()), pa.array(levels, pa.int32())],
            schema=CHANGE_SCHEMA)


def ordered_steps(watermarks: Sequence[tuple[int, int, int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """(offset, idx, resolved ts) of one partition's watermarks → positions and the running max after each."""
    positions: list[tuple[int, int]] = []
    values: list[int] = []
    high = 0
    for offset, idx, resolved in sorted(watermarks):
        high = max(high, resolved)
        positions.append((offset, idx))
        values.append(high)
    return positions, values


def decoded_row(row: RowChange, key: tuple[str, ...] | None = None,
                origin: tuple[str, int, int, int] | None = None) -> dict[str, Any]:
    """A buffered row of a driver-engine state as a staged change row (switching engines).

    ``key``: the table's ``--table-key`` columns; ``origin``: the record the consumer kept it from.
    """
    values = held_values(row) if row.table_info is None or not row.table_info.columns else \
        change_values(row, key=key)
    topic, partition, offset = origin[:3] if origin is not None else ("", -1, -1)
    return {**values, "topic": topic, "partition": partition, "offset": offset, "idx": 0, "staged": True,
            "level": 0}


def op_of(text: str) -> Op:
    """The Op of an ``op`` column value."""
    return Op(text)
