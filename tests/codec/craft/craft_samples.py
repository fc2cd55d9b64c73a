"""Craft test samples shared by the craft tests: the docs-cn messages, an all-types message, columns."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from builders import column, delete, table, update
from pyticdc.codec import craft
from pyticdc.errors import DecodeError
from pyticdc.model import ColumnFlag, ColumnInfo, Row, RowChange, TableInfo

F = ColumnFlag
U = int(F.UNSIGNED)
UINT64_MAX = 2**64 - 1
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT64 = st.integers(0, UINT64_MAX)

# The three docs-cn hexdumps (pingcap/docs-cn ticdc/ticdc-craft.md, decoded in reference §3.4).
DOCS_ROW = bytes.fromhex(
    "018180f08181b5def10501010002010804020202020202020ffe010a070c0403060000000000000000100e142626100401766172"
    "6368617231737472696e6731323032312f30312f3032323032312f30312f30322030303a30303a3030323032312f30312f303220"
    "30303a30303a30300000000000000040a01f020804020202020202020ffe010a070c0403060000000000000000100e1426261004"
    "017661726368617230737472696e6730323032312f30312f3031323032312f30312f30312030303a30303a3030323032312f3031"
    "2f30312030303a30303a3030000000000000f03fd00f0a01010706040908050404616276617263686172737472696e6764617465"
    "74696d657374616d706461746574696d65666c6f61746c6f6e676e756c6c021a5e01b00302d801000a"
)
DOCS_DDL = bytes.fromhex("018180c0dcf5b5def10502010002010e637265617465207461626c6520610201016162021a0f012005")
DOCS_RESOLVED = bytes.fromhex("018180e0bb9bb6def10503010101021a19010005")


def col(name: str, type_code: int, flags: int = 0, **kw: Any) -> ColumnInfo:
    """A column with exactly the flags given: craft writes the flags to the wire as they are."""
    return column(name, type_code, flags, raw=True, **kw)


def docs_table() -> TableInfo:
    """§3.4 (a): table a.b with eight columns, all flags 0."""
    spec = [("varchar", 15), ("string", 254), ("date", 10), ("timestamp", 7), ("datetime", 12), ("float", 4),
            ("long", 3), ("null", 6)]
    return table(*(col(n, t) for n, t in spec), schema="a", name="b")


def docs_row(n: int) -> Row:
    """The docs example's image number ``n`` (0 old, 1 new)."""
    return Row({"varchar": b"varchar%d" % n, "string": b"string%d" % n, "date": f"2021/01/0{n + 1}",
                "timestamp": f"2021/01/0{n + 1} 00:00:00", "datetime": f"2021/01/0{n + 1} 00:00:00",
                "float": float(n + 1), "long": 1000 * (n + 1), "null": None})


def docs_update() -> RowChange:
    """The docs example's row event: an UPDATE of a.b."""
    return update(docs_table(), docs_row(1), docs_row(0), commit_ts=424316552636792833)


def all_types_message() -> bytes:
    """One message of an UPDATE and a DELETE over every craft value type."""
    columns = (
        col("id", 8, int(F.BINARY | F.HANDLE_KEY | F.PRIMARY_KEY)), col("u", 8, int(F.BINARY | F.UNSIGNED)),
        col("f", 4, 1), col("d", 5, 1), col("dec", 246, 1), col("dt", 12, 1), col("ts", 7, 1), col("tm", 11, 1),
        col("y", 13, int(F.BINARY | F.UNSIGNED)), col("s", 15), col("b", 252, 1), col("e", 247), col("st", 248),
        col("bit", 16, int(F.BINARY | F.UNSIGNED)), col("j", 245, 1), col("v", 225, 1), col("n", 6),
    )
    info = table(*columns, schema="db", name="all")
    post = Row({"id": -5, "u": UINT64_MAX, "f": 1.5, "d": -2.25, "dec": "3.10", "dt": "2024-01-02 03:04:05",
                "ts": "2024-01-02 03:04:05.123", "tm": "-01:00:00", "y": 2024, "s": "é".encode(), "b": b"\x00\xff",
                "e": 2, "st": 5, "bit": 9, "j": '{"a": 1}', "v": "[1,2]", "n": None})
    pre = Row({**post, "s": b"old", "f": None})
    [message] = craft.encode([update(info, post, pre, commit_ts=77), delete(info, pre, commit_ts=78)])
    assert message.value is not None
    return message.value


def decode_or_decode_error(value: bytes) -> None:
    """Decode and explain ``value``: either succeeds or raises nothing but a craft DecodeError."""
    try:
        craft.decode(value)
        craft.explain(value)
    except DecodeError as exc:
        assert exc.protocol == "craft" and exc.reason and isinstance(exc.at, int)

