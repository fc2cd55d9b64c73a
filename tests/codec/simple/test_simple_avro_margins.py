"""Simple-Avro's inline varints at their length edges: fast paths equal the reference paths.

The reader decodes a nine-byte commit ts inline and takes the table's own id as one prefix; the
writer spreads nine- and ten-byte varints without a byte loop, writes one- to three-byte ints and
strings below 256 bytes from per-column constants. Each edge (varint lengths 1 to 10 bytes, string
lengths 63/64, 255/256, 8191/8192, the table's own id or another) must give the reference bytes,
and the reader the reference events, also for truncated and flipped messages.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fast_paths import assert_avro_readers_agree
from pyticdc.codec.simple import Encoder
from pyticdc.codec.simple import encoder as simple_encoder
from pyticdc.codec.simple.writer_avro import _varint
from pyticdc.errors import EncodeError
from pyticdc.model import ColumnFlag, ColumnInfo, IndexInfo, Op, Row, RowChange, TableInfo

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

F = ColumnFlag
_N = int(F.NULLABLE | F.BINARY)

TABLE = TableInfo(
    schema="edge", table="margins", table_id=93, schema_version=449_000_000_000_000_321, pk_is_handle=True,
    columns=(
        ColumnInfo(name="id", type_code=8, flags=int(F.PRIMARY_KEY | F.HANDLE_KEY | F.BINARY), flen=20, decimal=0),
        ColumnInfo(name="u", type_code=8, flags=_N | int(F.UNSIGNED), flen=20, decimal=0),
        ColumnInfo(name="t", type_code=15, flags=int(F.NULLABLE), flen=9000, decimal=0, charset="utf8mb4",
                   collation="utf8mb4_bin"),
        ColumnInfo(name="b", type_code=252, flags=_N, flen=65535, decimal=0),
        ColumnInfo(name="s", type_code=3, flags=_N | int(F.UNSIGNED), flen=10, decimal=0),
    ),
    indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),),
)

# Zigzag values at each varint length edge: 7 * n bits fill n bytes.
_EDGES = sorted({z + d for n in range(1, 10) for z in (1 << (7 * n),) for d in (-1, 0, 1)} | {0, 1, 2**64 - 1})
_SIGNED = sorted({(z >> 1) ^ -(z & 1) for z in _EDGES})  # the int64s whose zigzags those are
_COMMIT_TS = sorted({v & (2**64 - 1) for v in _SIGNED} | {449_000_000_000_000_777, 2**63 + 9})
_LENGTHS = [0, 1, 63, 64, 127, 128, 255, 256, 8191, 8192]


def _byte_loop(zigzag: int) -> bytes:
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def test_varint_equals_the_byte_loop() -> None:
    rng = random.Random(18)
    values = [*_EDGES, *(rng.randrange(1 << bits) for bits in range(1, 65) for _ in range(200))]
    for zigzag in values:
        out = bytearray(b"x")
        _varint(out, zigzag)
        assert bytes(out) == b"x" + _byte_loop(zigzag), zigzag
    with pytest.raises(OverflowError):
        _varint(bytearray(), 2**64)


def _rows(invalid: bool = True) -> list[RowChange]:
    rows = []
    for i, commit_ts in enumerate(_COMMIT_TS):
        n = _LENGTHS[i % len(_LENGTHS)]
        image = Row({"id": _SIGNED[i % len(_SIGNED)], "u": _COMMIT_TS[-1 - i], "t": ("é" * n).encode()[:n],
                     "b": bytes(range(256)) * (n // 256) + bytes(n % 256), "s": i * 977 % 2**32})
        other = Row({**image, "t": None, "s": None, "u": 2**63})
        for op, after, before in ((Op.INSERT, image, None), (Op.UPDATE, other, image), (Op.DELETE, None, other)):
            for physical in (0, TABLE.table_id, 7, -(2**40)):
                rows.append(RowChange(op=op, schema=TABLE.schema, table=TABLE.table, commit_ts=commit_ts,
                                      columns=after, pre_columns=before, table_id=TABLE.table_id,
                                      physical_table_id=physical, table_info=TABLE))
    for key in (2**63, -(2**63) - 1, 2**64, True) if invalid else ():  # past int64, a bool: the reference path
        image = Row({"id": key, "u": 1, "t": b"", "b": b"", "s": 0})
        rows.append(RowChange(op=Op.INSERT, schema=TABLE.schema, table=TABLE.table, commit_ts=5, columns=image,
                              table_id=TABLE.table_id, table_info=TABLE))
    return rows


def _encoded(rows: list[RowChange], fast: bool) -> list[Any]:
    encoder = Encoder({"encoding-format": "avro"}, clock=lambda: 1_700_000_000_123, auto_bootstrap=False)
    out: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(simple_encoder, "avro_row_writer", lambda table, key_only: None)
        for row in rows:
            try:
                out += [m.value for m in encoder.encode([row])]
            except EncodeError as exc:
                out.append(str(exc))
    return out


def test_writer_edges_equal_the_reference_path() -> None:
    rows = _rows()
    assert _encoded(rows, True) == _encoded(rows, False)


def test_reader_edges_equal_the_reference_path() -> None:
    encoder = Encoder({"encoding-format": "avro"}, clock=lambda: 1_700_000_000_123, auto_bootstrap=False)
    messages = [m.value for m in encoder.encode(_rows(invalid=False)) if m.value is not None]
    rng = random.Random(93)
    variants: list[bytes] = []
    for message in messages:
        variants += [message, message]  # the commit-ts memo's miss, then its hit
        for _ in range(2):
            at = rng.randrange(len(message))
            flipped = bytearray(message)
            flipped[at] = rng.choice([0x00, 0x02, 0x7F, 0x80, 0xFF, flipped[at] ^ 1])
            variants += [bytes(flipped), message[: rng.randrange(len(message))]]
        # Around the commit ts: the bytes after the table name, cut and flipped there.
        for at in range(27, 45):
            variants.append(message[:at])
            flipped = bytearray(message)
            flipped[at] ^= 0x80
            variants.append(bytes(flipped))
    fast = assert_avro_readers_agree(encoder, TABLE, variants)
    fast.decode(messages[0])
    assert fast._last_read is not None  # the generated reader took the plain messages
