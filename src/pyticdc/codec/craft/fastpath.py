"""The Craft fast path: rows-only messages decoded with caches and generated code.

The reference path (``framing.parse`` → ``events.wire_to_event``) is the specification in code:
it checks every §3.2 rule and names the exact failing offset. ``FastPath`` decodes the common
message (rows only) by the same rules, much faster, by caching what repeats between rows and
messages and by leaving per-value work to C where it can:

* per decoder: the term dictionary (by its bytes), each column-group header (by its bytes: names,
  types, flags → a _Shape with its RowChange templates carrying the TableInfo);
* per process (_COMPILED, like re's pattern cache; pure derived data): per column signature, one
  generated image reader (fastpath_image.image_reader) for every combination of value lengths, and
  the row loop with that reader inline (fastpath_image.rows_reader) that reads a message's rows of
  one shape and table: nothing is compiled or cached per length combination;
* size tables and headers are read with C-level calls (translate, struct, accumulate, count).

It never reports an error itself: whenever anything is unusual it answers None or raises one of
``pyticdc.codec._fastpath.DECLINES`` (DecodeError, or by design UnicodeDecodeError / KeyError from
its strict shortcuts), and Decoder.decode re-decodes the message on the reference path, which
raises the canonical DecodeError or returns the identical events (the tests check both paths
agree). Generated code is compiled only by ``_fastpath.compile_function``; column names enter it
only as ``_fastpath.literal`` literals.
"""

from __future__ import annotations

import re
import struct
from itertools import accumulate
from typing import Final

from msgspec.structs import replace as _replace

from pyticdc.codec._fastpath import native
from pyticdc.codec.craft.events import TableCache
from pyticdc.codec.craft.fastpath_image import (
    ImageReader,
    RowsReader,
    image_reader,
    long_varints,
    rows_reader,
    varint_tables,
    varints_re,
)
from pyticdc.codec.craft.message import (
    EVENT_ROW,
    GROUP_NEW,
    GROUP_OLD,
    INT64_MAX,
    INT64_MIN,
    MASK64,
    MAX_VARINT_LEN,
    NULL_ID,
    Group,
)
from pyticdc.codec.craft.primitives import CraftReader
from pyticdc.codec.craft.values import ValueDecoder, value_decoder
from pyticdc.codec.jsontext import go_string
from pyticdc.model import ColumnFlag, Event, Op, RowChange

__all__ = ["FastPath"]

# Bounds of the fast-path caches (each cleared when full), small enough that a pathological
# stream (thousands of tables) stays within a few tens of MB:
_FAST_LIMIT: Final = 256  # signatures per process; shapes, dictionaries, templates per decoder
# §3.1 varint framing: continuation bytes (>= 0x80) then one final byte (< 0x80). In a region
# that ends with a final byte, findall splits it into exactly its varints; one longer than 10
# bytes is then refused by the tables.
_VARINT_RE: Final = re.compile(rb"[\x80-\xff]*[\x00-\x7f]")
#: Byte → struct code of a region of 1- and 2-byte varints: "B" final byte, "c" continuation
#: (then b"cB" → "H"; a "c" left over means a varint of 3+ bytes).
_VARINT_CODES: Final = bytes(ord("B") if b < 0x80 else ord("c") for b in range(256))
_OPS: Final = (Op.INSERT, Op.UPDATE, Op.DELETE)
#: By size, the readers of 3..10-byte uvarints (fastpath_image.long_varints).
_LONG_UVARINTS: Final = long_varints(False)
#: One-byte zigzag varints by byte value (§3.1 varint).
_ZIGZAG1: Final = tuple((b >> 1) ^ -(b & 1) for b in range(0x80))


class _Compiled:
    """What a column-group signature (names and value decoders) compiles to, shared by every
    decoder of the process (like ``re``'s pattern cache): its generated image reader."""

    __slots__ = ("count", "names", "read", "run")

    def __init__(self, names: tuple[str, ...], decoders: tuple[ValueDecoder, ...]) -> None:
        self.names = names
        self.count = len(names)
        self.read: ImageReader = image_reader(names, decoders)
        #: The row loop with this reader inline (rows of one shape and table).
        self.run: RowsReader = rows_reader(names, decoders)


#: (names, decoders, whether the C helpers are in use) → the compiled readers.
_COMPILED: Final[dict[tuple[tuple[str, ...], tuple[ValueDecoder, ...], bool], _Compiled]] = {}


def _compiled(names: tuple[str, ...], decoders: tuple[ValueDecoder, ...]) -> _Compiled:
    key = (names, decoders, native() is not None)
    found = _COMPILED.get(key)
    if found is None:
        if len(_COMPILED) >= _FAST_LIMIT:
            _COMPILED.clear()
        found = _COMPILED[key] = _Compiled(names, decoders)
    return found

class _Shape:
    """One column-group header as it appears in messages of one decoder: its bytes, what it
    compiles to, and the RowChange templates (TableInfo, op, flags) of the rows it sources."""

    __slots__ = ("count", "group", "handle_key_only", "header", "header_len", "read", "run", "templates",
                 "triples")

    def __init__(self, group: Group, header: bytes) -> None:
        #: ``uvarint count ‖ names ‖ types ‖ flags`` (everything after the group type byte).
        self.header = header
        self.header_len = len(header)
        self.group = group
        decoders = tuple(value_decoder(t, f) for t, f in zip(group.types, group.flags))
        compiled = _compiled(tuple(group.names), decoders)
        self.count = compiled.count
        #: The generated reader of this signature's value chunk (any value lengths), and row loop.
        self.read = compiled.read
        self.run = compiled.run
        self.handle_key_only = all(f & ColumnFlag.HANDLE_KEY for f in group.flags)
        #: (schema, table, partition, op code) → a RowChange carrying everything but ts and images.
        self.templates: dict[tuple[str, str, int, int], RowChange] = {}
        #: Context → its INSERT, UPDATE and DELETE templates (the generated row loop takes all three).
        self.triples: dict[_Context, tuple[RowChange, RowChange, RowChange]] = {}


#: (schema, table, partition) of a row, names resolved ("" for null).
_Context = tuple[str, str, int]
#: Placeholder template before the first row of an op (never used: the shape check fails first).
_NO_ROW: Final = RowChange(op=Op.INSERT, schema="", table="", commit_ts=0)


def _no_read(buf: bytes, at: int, end: int) -> None:
    return None  # pragma: no cover - placeholder reader before the first shape (shape is None then)


_NO_READ: Final[ImageReader] = _no_read


class FastPath:
    """Row-only craft messages decoded with caches (see the module docstring); None = use the reference path."""

    __slots__ = ("_last", "_shapes", "_tables", "_terms", "_varint")

    def __init__(self, tables: TableCache) -> None:
        self._tables = tables
        self._varint = varint_tables()
        #: (header bytes, term dictionary bytes) → shape; the dictionary gives the names.
        self._shapes: dict[tuple[bytes, bytes], _Shape] = {}
        #: Term dictionary bytes → terms plus a trailing "" (so id -1 reads as "", §3.2 null).
        self._terms: dict[bytes, tuple[str, ...]] = {}
        #: The last message's dictionary and last shape: the next message usually starts with it.
        self._last: tuple[bytes, _Shape | None] = (b"", None)

    def _zigzags(self, region: bytes) -> list[int] | None:
        """The §3.1 zigzag varints that make up ``region`` exactly (None if it ends mid-varint).

        C calls only: one-byte varints directly; 1- and 2-byte ones through one struct read (each
        byte classified "B"/"c", b"cB" → "H"); longer ones through _VARINT_RE.
        """
        if not region:
            return []
        if region[-1] >= 0x80:
            return None
        if region.isascii():  # every byte < 0x80: all one-byte varints
            return list(map(_ZIGZAG1.__getitem__, region))
        codes = region.translate(_VARINT_CODES).replace(b"cB", b"H")
        if b"c" not in codes:
            return list(map(self._varint.coded_zigzags.__getitem__, struct.unpack(b"<" + codes, region)))
        return list(map(self._varint.zigzags.__getitem__, _VARINT_RE.findall(region)))

    def _header(self, region: bytes, count: int, terms: tuple[str, ...]) -> tuple[list[int], list[_Context]] | None:
        """§3.2 headers of ``count`` row events: their commit ts and contexts; None if anything
        else (other event types, a bad term id, a partition beyond int64, stray bytes)."""
        if not region or region[-1] >= 0x80:
            return None
        nterms = len(terms) - 1
        # Commit ts deltas take several bytes when the ts moves (a TSO's physical part sits above
        # bit 18), and a message holds rows of one table and partition: the other four chunks are
        # then one byte per row and every delta of the partition, schema and table chunks is 0.
        n = count
        # The last 4n bytes all one-byte varints, the ts chunk before them ending with a final
        # byte: the ts chunk is exactly n varints when it holds n final bytes (findall's tokens).
        ts_end = len(region) - 4 * n
        rest = region[ts_end:]
        if ts_end >= n and region[ts_end - 1] < 0x80 and rest.isascii():
            if rest.count(EVENT_ROW, 0, n) != n:
                return None  # DDL and resolved events take the reference path
            ts_region = region[:ts_end]
            if ts_end == n and ts_region.isascii():
                commit_ts = list(accumulate(ts_region))
            else:
                tokens = _VARINT_RE.findall(ts_region)
                if len(tokens) != n:
                    return None
                # A TSO delta of a few ms takes 3-4 bytes: the generated piecewise readers.
                short = self._varint.short_uvarints
                long = _LONG_UVARINTS
                commit_ts = list(accumulate([
                    short[t] if (k := len(t)) < 3 else long[k if k <= MAX_VARINT_LEN else 0](t, 0)
                    for t in tokens]))
            ids = rest[n:]
            if ids.count(0, 1, n) + ids.count(0, n + 1, 2 * n) + ids.count(0, 2 * n + 1) == 3 * n - 3:
                schema, table = _ZIGZAG1[ids[n]], _ZIGZAG1[ids[2 * n]]
                if not (NULL_ID <= schema < nterms and NULL_ID <= table < nterms):
                    return None
                contexts = [(terms[schema], terms[table], _ZIGZAG1[ids[0]])] * n
            else:
                found = self._contexts(list(map(_ZIGZAG1.__getitem__, ids)), n, terms)
                if found is None:
                    return None
                contexts = found
        else:
            tokens = _VARINT_RE.findall(region)
            if len(tokens) != 5 * n:
                return None
            uvarints = self._varint.uvarints.__getitem__
            if list(map(uvarints, tokens[n:2 * n])).count(EVENT_ROW) != n:
                return None
            commit_ts = list(accumulate(map(uvarints, tokens[:n])))
            found = self._contexts(list(map(self._varint.zigzags.__getitem__, tokens[2 * n:])), n, terms)
            if found is None:
                return None
            contexts = found
        if commit_ts[-1] > MASK64:  # delta uvarints sum mod 2**64 (never decreasing before that)
            commit_ts = [v & MASK64 for v in commit_ts]
        return commit_ts, contexts

    @staticmethod
    def _contexts(zigzags: list[int], count: int, terms: tuple[str, ...]) -> list[_Context] | None:
        # The partition, schema and table delta varint chunks (§3.2), any values.
        partitions = list(accumulate(zigzags[:count]))
        schemas = list(accumulate(zigzags[count:2 * count]))
        tables = list(accumulate(zigzags[2 * count:]))
        nterms = len(terms) - 1
        if (min(partitions) < INT64_MIN or max(partitions) > INT64_MAX
                or min(schemas) < NULL_ID or max(schemas) >= nterms or min(tables) < NULL_ID
                or max(tables) >= nterms):
            return None  # wrapped partitions, bad term ids: reference path
        return list(zip(map(terms.__getitem__, schemas), map(terms.__getitem__, tables), partitions))

    def decode(self, buf: bytes) -> list[Event] | None:
        """The events of a rows-only message, or None (any other shape, anything suspicious)."""
        # §3.2: uvarint version (>= 1; one byte here) ... reversed-uvarint(len(size tables)).
        size = len(buf)
        if size < 3 or not 0 < buf[0] < 0x80:
            return None
        end = size - 1
        tables_size = buf[end]
        if tables_size >= 0x80:  # a multi-byte trailer: big batches
            trailer = CraftReader(buf, 1)
            tables_size = trailer.reversed_uvarint()
            end = trailer.end
        tables_start = end - tables_size
        if tables_start < 1:
            return None
        # Size tables: [header, dictionary], [body per event], then [group sizes] per row event;
        # each "uvarint len ‖ delta varints". All are read as zigzag varints: a uvarint u is the
        # zigzag z with u = 2z (z >= 0) or -2z-1, so len 1 reads as -1 and len 2 as 1.
        sizes = self._zigzags(buf[tables_start:end])
        if sizes is None:
            return None
        nsizes = len(sizes)
        if nsizes < 5 or sizes[0] != 1:
            return None
        count = 2 * sizes[3] if sizes[3] >= 0 else -2 * sizes[3] - 1
        j = 4 + count
        if count == 0 or j > nsizes:
            return None
        header_size = sizes[1]
        dict_size = header_size + sizes[2]
        body_sizes = list(accumulate(sizes[4:j]))
        bodies_size = sum(body_sizes)
        if (header_size < 0 or dict_size < 0 or min(body_sizes) <= 0
                or header_size + bodies_size + dict_size != tables_start - 1):
            return None
        # Term dictionary (§3.2), cached by its bytes.
        dict_start = 1 + header_size + bodies_size
        dict_bytes = buf[dict_start:dict_start + dict_size]
        terms = self._terms.get(dict_bytes)
        if terms is None:
            terms = self._parse_terms(buf, dict_start, dict_size)
        header = self._header(buf[1:1 + header_size], count, terms)
        if header is None:
            return None
        commit_ts, contexts = header
        # Bodies. Everything per row is inline (no calls but the converters and cache misses):
        # the last shape is remembered (consecutive groups usually share it), and the last
        # template per op (consecutive rows usually share table and op).
        events: list[Event] = []
        append = events.append
        replace = _replace
        startswith = buf.startswith
        last_dict, shape = self._last
        if last_dict != dict_bytes:
            shape = None
        # The current shape's header bytes, reader and value chunk offset (from the group start).
        group_header = b""  # no shape yet: every group takes self._shape first
        read = _NO_READ
        skip = 0
        if shape is not None:
            group_header, read, skip = shape.header, shape.read, 1 + shape.header_len
        insert_shape = update_shape = delete_shape = None
        insert_context = update_context = delete_context = None
        insert = update = delete = _NO_ROW
        sizes += (0, 0, 0)  # padding: a short table reads as a bad one (below) instead of IndexError
        offset = 1 + header_size
        rows = zip(body_sizes, commit_ts, contexts)
        # The usual message (rows of the last message's shape, one table) goes through the shape's
        # generated row loop, which stops at the first group of another header: the loop below
        # takes the rest.
        if shape is not None and startswith(group_header, offset + 1) and contexts.count(contexts[0]) == count:
            triple = shape.triples.get(contexts[0])
            if triple is None:
                triple = self._triple(shape, contexts[0])
            done = shape.run(buf, offset, j, sizes, body_sizes, commit_ts, 0, count, group_header, skip, *triple,
                             append)
            if done is None:
                return None
            done_rows, offset, j = done
            if done_rows:
                rows = zip(body_sizes[done_rows:], commit_ts[done_rows:], contexts[done_rows:])
        for body_size, ts, context in rows:
            body_end = offset + body_size
            # This row's group sizes table: len 1 (insert/delete, reads -1) or 2 (update, reads 1).
            if sizes[j] == -1:
                # One group (§3.2 column group: u8 type ‖ header ‖ nullable bytes chunk of values).
                if offset + sizes[j + 1] != body_end:
                    return None
                j += 2
                if shape is None or not startswith(group_header, offset + 1):
                    shape = self._shape(buf, offset, body_end, dict_bytes, terms)
                    if shape is None:
                        return None
                    group_header, read, skip = shape.header, shape.read, 1 + shape.header_len
                image = read(buf, offset + skip, body_end)
                if image is None:
                    return None
                # events.row_event: a new image alone is an insert, an old image alone a delete.
                group_type = buf[offset]
                if group_type == GROUP_NEW:
                    if shape is not insert_shape or context is not insert_context:
                        insert = self._template(shape, context, 0)
                        insert_shape, insert_context = shape, context
                    append(replace(insert, commit_ts=ts, columns=image))
                elif group_type == GROUP_OLD:
                    if shape is not delete_shape or context is not delete_context:
                        delete = self._template(shape, context, 2)
                        delete_shape, delete_context = shape, context
                    append(replace(delete, commit_ts=ts, pre_columns=image))
                else:
                    return None
            elif sizes[j] == 1:
                # Two groups: new and old, in either order (an update).
                middle = offset + sizes[j + 1]
                if not offset < middle < body_end or middle + sizes[j + 1] + sizes[j + 2] != body_end:
                    return None
                j += 3
                if shape is None or not startswith(group_header, offset + 1):
                    shape = self._shape(buf, offset, middle, dict_bytes, terms)
                    if shape is None:
                        return None
                    group_header, read, skip = shape.header, shape.read, 1 + shape.header_len
                first = read(buf, offset + skip, middle)
                if first is None:
                    return None
                first_shape = shape
                if not startswith(group_header, middle + 1):
                    shape = self._shape(buf, middle, body_end, dict_bytes, terms)
                    if shape is None:
                        return None
                    group_header, read, skip = shape.header, shape.read, 1 + shape.header_len
                second = read(buf, middle + skip, body_end)
                if second is None:
                    return None
                # Like the Go decoder, the table comes from the old image.
                group_type = buf[offset]
                if group_type == GROUP_NEW and buf[middle] == GROUP_OLD:
                    new, old, old_shape = first, second, shape
                elif group_type == GROUP_OLD and buf[middle] == GROUP_NEW:
                    new, old, old_shape = second, first, first_shape
                else:
                    return None  # unknown or repeated group type
                if old_shape is not update_shape or context is not update_context:
                    update = self._template(old_shape, context, 1)
                    update_shape, update_context = old_shape, context
                append(replace(update, commit_ts=ts, columns=new, pre_columns=old))
            else:
                return None
            offset = body_end
        if j != nsizes:
            return None
        self._last = (dict_bytes, shape)
        return events

    def _parse_terms(self, buf: bytes, start: int, size: int) -> tuple[str, ...]:
        # The reference reading of the dictionary (§3.2), done once per distinct dictionary.
        terms: tuple[str, ...] = ()
        if size:
            reader = CraftReader(buf, start, start + size)
            terms = tuple(go_string(t) for t in reader.string_chunk(reader.count("term")))
            reader.expect_end("term dictionary")
        if len(self._terms) >= _FAST_LIMIT:
            self._terms.clear()
        self._terms[buf[start:start + size]] = found = (*terms, "")
        return found

    def _shape(self, buf: bytes, start: int, end: int, dict_bytes: bytes, terms: tuple[str, ...]) -> _Shape | None:
        """The shape of the group at ``start``: a known header, or the reference reading of a new one."""
        shapes = self._shapes
        # The header is ``uvarint count`` then 3 x count varints: regexes find its end without
        # decoding it (a count that cannot fit is left to the reference reading below).
        match = _VARINT_RE.match(buf, start + 1, end)
        if match is not None:
            count = self._varint.uvarints[match.group()]
            if 3 * count <= end - match.end():
                match = varints_re(3 * count).match(buf, match.end(), end)
                if match is not None:
                    shape = shapes.get((buf[start + 1:match.end()], dict_bytes))
                    if shape is not None:
                        return shape
        # _parse_group's reading of the header, once per distinct header.
        reader = CraftReader(buf, start + 1, end)
        count = reader.count("column")
        if count == 0:
            return None
        ids = reader.delta_varint_chunk(count)
        types = reader.uvarint_chunk(count)
        flags = reader.uvarint_chunk(count)
        if min(ids) < 0 or max(ids) >= len(terms) - 1 or max(types) > 0xFF:
            return None
        names = [terms[i] for i in ids]
        if len(set(names)) != count:
            return None
        shape = _Shape(Group(0, names, types, flags, [], []), buf[start + 1:reader.pos])
        if len(shapes) >= _FAST_LIMIT:
            shapes.clear()
        shapes[(shape.header, dict_bytes)] = shape
        return shape

    def _triple(self, shape: _Shape, context: _Context) -> tuple[RowChange, RowChange, RowChange]:
        # The three templates of a context, remembered together for the generated row loop.
        triple = (self._template(shape, context, 0), self._template(shape, context, 1),
                  self._template(shape, context, 2))
        if len(shape.triples) >= _FAST_LIMIT:
            shape.triples.clear()
        shape.triples[context] = triple
        return triple

    def _template(self, shape: _Shape, context: _Context, code: int) -> RowChange:
        # Everything events.row_event derives from the table and the op, computed once per shape.
        key = (*context, code)
        template = shape.templates.get(key)
        if template is None:
            schema, table, partition = context
            op = _OPS[code]
            entry = self._tables.get(schema, table, partition, shape.group)
            template = RowChange(
                op=op, schema=schema, table=table, commit_ts=0, table_id=0,
                physical_table_id=partition if partition >= 0 else 0, row_id=0, table_info=entry.table_info,
                handle_key_only=op is Op.DELETE and shape.handle_key_only,
            )
            if len(shape.templates) >= _FAST_LIMIT:
                shape.templates.clear()
            shape.templates[key] = template
        return template


