"""Craft framing (§3.2): a message's bytes split into its wire structure, and assembled from it.

``parse`` is stricter than the Go decoder where Go would panic or silently misread: every section
must be consumed exactly, every count must fit the bytes that remain. What real encoders wrote is
accepted as is (docs/protocols/craft.md, "Tolerances"): commit ts values are never range-checked,
the term dictionary may share one term between schema, table and column names, a column may be
named ``null``, and schema/table id -1 reads as the empty name.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyticdc.codec.craft.message import (
    EVENT_DDL,
    EVENT_NAMES,
    EVENT_ROW,
    GROUP_NAMES,
    NULL_ID,
    PROTOCOL,
    VERSION,
    Group,
    Wire,
    WireEvent,
    fail,
)
from pyticdc.codec.craft.primitives import CraftReader, CraftWriter
from pyticdc.codec.jsontext import go_string
from pyticdc.errors import EncodeError

__all__ = ["Header", "assemble", "parse", "utf8"]

#: One event header as the encoder gives it: (commit ts, event type, partition, schema, table).
Header = tuple[int, int, int, str, str]

def _nullable_terms(ids: list[int], terms: list[str], at: int) -> list[str | None]:
    # Header schema/table ids: -1 is null (§3.2), anything else must be in the dictionary.
    # Ids may repeat: the encoder deduplicates terms, so schema "test" and table "test" are one id.
    out: list[str | None] = []
    for term_id in ids:
        if 0 <= term_id < len(terms):
            out.append(terms[term_id])
        elif term_id == NULL_ID:
            out.append(None)
        else:
            fail(f"invalid term id {term_id} (dictionary has {len(terms)} terms)", at)
    return out


def _terms(ids: list[int], terms: list[str], at: int) -> list[str]:
    # Column names are never null.
    size = len(terms)
    for term_id in ids:
        if not 0 <= term_id < size:
            fail(f"invalid column name term id {term_id} (dictionary has {size} terms)", at)
    return [terms[term_id] for term_id in ids]


def _parse_group(buf: bytes, start: int, end: int, terms: list[str]) -> Group:
    reader = CraftReader(buf, start, end)
    group_type = reader.u8()
    if group_type not in GROUP_NAMES:
        fail(f"unknown column group type {group_type}", start)
    count = reader.count("column")
    if count == 0:
        fail("empty column group", start + 1)
    at = reader.pos
    names = _terms(reader.delta_varint_chunk(count), terms, at)
    at = reader.pos
    types = reader.uvarint_chunk(count)
    if max(types) > 0xFF:
        fail("column type code does not fit in a byte", at)
    flags = reader.uvarint_chunk(count)
    values, offsets = reader.nullable_values(reader.nullable_lengths(count))
    reader.expect_end("column group")
    if len(set(names)) != count:
        fail("duplicate column name in a column group", start)
    return Group(group_type, names, types, flags, values, offsets)


def parse(value: bytes | bytearray | memoryview | None) -> Wire:
    """Split a craft message into its wire structure (§3.2), validating every size."""
    if value is None:
        fail("no value: a craft message is never empty", 0)
    buf = bytes(value)
    reader = CraftReader(buf)
    version = reader.uvarint()
    if version < VERSION:  # Go NewMessageDecoder rejects only versions below 1
        fail(f"unexpected craft version {version}", 0)
    start = reader.pos
    # Size tables sit at the end, located by the trailing reversed uvarint (§3.2).
    tables_size = reader.reversed_uvarint()
    if tables_size > reader.end - start:
        fail(f"size tables of {tables_size} bytes exceed the message", reader.end)
    tables_start = reader.end - tables_size
    tables_reader = CraftReader(buf, tables_start, reader.end)
    size_tables: list[list[int]] = []
    while tables_reader.remaining:
        at = tables_reader.pos
        count = tables_reader.count("size table")
        if count == 0:
            fail("empty size table", at)
        size_tables.append(tables_reader.delta_varint_chunk(count))
    if len(size_tables) < 2:
        fail(f"expected at least 2 size tables, got {len(size_tables)}", tables_start)
    meta, body_sizes = size_tables[0], size_tables[1]
    if len(meta) != 2:
        fail(f"meta size table has {len(meta)} entries, expected 2", tables_start)
    header_size, dict_size = meta
    if header_size < 0 or dict_size < 0 or any(size < 0 for size in body_sizes):
        fail("negative size in the size tables", tables_start)
    bodies_size = sum(body_sizes)
    if header_size + bodies_size + dict_size != tables_start - start:
        fail(
            f"sizes do not add up: header {header_size} + bodies {bodies_size} + dictionary {dict_size} "
            f"!= {tables_start - start} bytes", tables_start,
        )
    # Term dictionary after the bodies (§3.2; absent when there are no terms).
    terms: list[str] = []
    dict_start = start + header_size + bodies_size
    if dict_size:
        dict_reader = CraftReader(buf, dict_start, dict_start + dict_size)
        terms = [go_string(t) for t in dict_reader.string_chunk(dict_reader.count("term"))]
        dict_reader.expect_end("term dictionary")
    # Headers: N = len(body size table) (§3.2).
    count = len(body_sizes)
    header = CraftReader(buf, start, start + header_size)
    commit_ts = header.delta_uvarint_chunk(count)
    at_types = header.pos
    types = header.uvarint_chunk(count)
    partitions = header.delta_varint_chunk(count)
    at = header.pos
    schemas = _nullable_terms(header.delta_varint_chunk(count), terms, at)
    at = header.pos
    tables = _nullable_terms(header.delta_varint_chunk(count), terms, at)
    header.expect_end("headers")
    for event_type in types:
        if event_type not in EVENT_NAMES:
            fail(f"unknown event type {event_type}", at_types)
    has_rows = EVENT_ROW in types
    expected_tables = 2 + count if has_rows else 2
    if len(size_tables) != expected_tables:
        fail(f"expected {expected_tables} size tables, got {len(size_tables)}", tables_start)
    # Bodies.
    events: list[WireEvent] = []
    offset = start + header_size
    for i in range(count):
        size = body_sizes[i]
        end = offset + size
        groups: list[Group] = []
        ddl_type = 0
        query = ""
        event_type = types[i]
        if event_type == EVENT_ROW:
            group_sizes = size_tables[2 + i]
            if any(s <= 0 for s in group_sizes) or sum(group_sizes) != size:
                fail(f"{len(group_sizes)} column group sizes do not add up to the body size {size}", offset)
            group_at = offset
            seen: set[int] = set()
            for group_size in group_sizes:
                group = _parse_group(buf, group_at, group_at + group_size, terms)
                if group.group_type in seen:
                    fail("duplicate column group type", group_at)
                seen.add(group.group_type)
                groups.append(group)
                group_at += group_size
        elif event_type == EVENT_DDL:
            body = CraftReader(buf, offset, end)
            at = body.pos
            ddl_type = body.uvarint()
            if ddl_type > 0xFF:  # TiDB ActionType is a byte
                fail(f"DDL type {ddl_type} does not fit in a byte", at)
            query = go_string(body.string())
            body.expect_end("DDL body")
        elif size:
            fail("resolved event with a non-empty body", offset)
        events.append(WireEvent(
            commit_ts[i], event_type, partitions[i], schemas[i], tables[i], groups, ddl_type, query,
        ))
        offset = end
    return Wire(version, size_tables, terms, events)


class _Terms:
    """Term dictionary: ids in first-use order (§3.2)."""

    __slots__ = ("ids", "terms")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.terms: list[str] = []

    def id(self, term: str) -> int:
        """The id of ``term``, assigning the next one on first use."""
        found = self.ids.get(term)
        if found is None:
            found = self.ids[term] = len(self.terms)
            self.terms.append(term)
        return found

    def nullable(self, term: str) -> int:
        """Empty schema/table names are null (-1), never an empty-string term (§3.2)."""
        return NULL_ID if not term else self.id(term)


def utf8(text: str, what: str) -> bytes:
    """``text`` as UTF-8; EncodeError naming ``what`` when it cannot be (lone surrogates)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise EncodeError(PROTOCOL, f"{what} {text!r} is not valid UTF-8") from None


def assemble(headers: Sequence[Header], bodies: Sequence[bytes | list[Group]]) -> bytes:
    """One message: version, headers, bodies, term dictionary, size tables, trailer (§3.2)."""
    out = CraftWriter()
    out.uvarint(VERSION)
    terms = _Terms()
    start = len(out)
    out.delta_uvarint_chunk([h[0] for h in headers])
    out.uvarint_chunk([h[1] for h in headers])
    out.delta_varint_chunk([h[2] for h in headers])
    # Term ids: all schemas (header order), then all tables, then column names (§3.2).
    out.delta_varint_chunk([terms.nullable(h[3]) for h in headers])
    out.delta_varint_chunk([terms.nullable(h[4]) for h in headers])
    header_size = len(out) - start
    body_sizes: list[int] = []
    group_tables: list[list[int]] = []
    # Full images share their plan's names list and type/flag blob, so within this message they
    # share the whole group header: written once, then copied (ids were assigned on first use).
    headers_by_blob: dict[int, tuple[bytes, list[str], bytes]] = {}
    for body in bodies:
        body_start = len(out)
        if isinstance(body, bytes):
            out.raw(body)
        else:
            sizes = []
            for group in body:
                group_start = len(out)
                out.u8(group.group_type)
                blob = group.blob
                cached = None if blob is None else headers_by_blob.get(id(blob))
                if cached is not None and cached[0] is blob and cached[1] is group.names:
                    out.raw(cached[2])
                else:
                    header = CraftWriter()
                    header.uvarint(len(group.names))
                    header.delta_varint_chunk([terms.id(name) for name in group.names])
                    if blob is not None:
                        header.raw(blob)
                        headers_by_blob[id(blob)] = (blob, group.names, header.getvalue())
                    else:
                        header.uvarint_chunk(group.types)
                        header.uvarint_chunk(group.flags)
                    out.raw(header.getvalue())
                out.nullable_bytes_chunk(group.values)
                sizes.append(len(out) - group_start)
            group_tables.append(sizes)
        body_sizes.append(len(out) - body_start)
    dict_start = len(out)
    if terms.terms:
        out.uvarint(len(terms.terms))
        out.string_chunk([utf8(t, "name") for t in terms.terms])
    dict_size = len(out) - dict_start
    tables_start = len(out)
    for table in ([header_size, dict_size], body_sizes):
        out.uvarint(len(table))
        out.delta_varint_chunk(table)
    for sizes in group_tables:
        # One or two column groups per row: the delta varint chunk written value by value
        # (the same bytes as delta_varint_chunk, whose list passes cost more for 1-2 values).
        out.uvarint(len(sizes))
        previous = 0
        for size in sizes:
            out.varint(size - previous)
            previous = size
    out.reversed_uvarint(len(out) - tables_start)
    return out.getvalue()

