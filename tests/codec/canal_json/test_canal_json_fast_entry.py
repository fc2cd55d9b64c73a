"""Canal-JSON decoder's one-frame entry (``Decoder.decode`` → ``FastPath.changes``) equals the reference path.

Every message goes through one warm decoder (so the per-table header caches carry over between
messages, tables and header variants) and through ``decode_reference``; both must give the same
events or the same DecodeError.
"""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec import canal_json as cj
from pyticdc.errors import DecodeError
from pyticdc.model import Event, RowChange

UINT64_MAX = (1 << 64) - 1
NARROW_MYSQL = {"id": "int", "k": "int", "c": "char", "pad": "char"}
NARROW_SQL = {"id": 4, "k": 4, "c": 1, "pad": 1}
# Column names that cannot be Python identifiers, and kinds the converter rewrites.
ODD_MYSQL = {"select": "bigint unsigned", "a b": "float", "__x": "double", "c0": "varchar", "é": "blob",
             "n-1": "bigint"}
ODD_SQL = {"select": -5, "a b": 7, "__x": 8, "c0": 12, "é": 2004, "n-1": -5}


def narrow_row(rng: random.Random) -> dict[str, Any]:
    """A sysbench row as TiCDC writes it (every value a string)."""
    return {"id": str(rng.randrange(1, 10**6)), "k": str(rng.randrange(10**5)),
            "c": "-".join(str(rng.randrange(10**11)) for _ in range(3)), "pad": rng.choice(["x", "", "ünï"])}


def odd_row(rng: random.Random) -> dict[str, Any]:
    """A row of the odd-named table, with values near the fast path's limits."""
    return {"select": rng.choice(["0", "18446744073709551615", "18446744073709551616", "01", "7"]),
            "a b": rng.choice(["0", "-0", "1.5", "3.4028235e38", None]),
            "__x": rng.choice(["0", "-0", "2.5", "1e308", None]),
            "c0": rng.choice(["text", "", None]),
            "é": rng.choice(["\u00ff\u0001", "", None]),
            "n-1": rng.choice(["-9223372036854775808", "9223372036854775807", "1", "5.0", None])}


def message(rng: random.Random, **fields: Any) -> dict[str, Any]:
    """A row message of the narrow table with the extension, then ``fields`` over it."""
    kind = rng.choice(["INSERT", "UPDATE", "DELETE"])
    data = [narrow_row(rng)]
    doc: dict[str, Any] = {
        "id": 0, "database": "sbtest", "table": "sbtest1", "pkNames": ["id"], "isDdl": False, "type": kind,
        "es": 1763780000001, "ts": 0, "sql": "", "sqlType": NARROW_SQL, "mysqlType": NARROW_MYSQL,
        "old": [narrow_row(rng)] if kind == "UPDATE" else None, "data": data,
        "_tidb": {"commitTs": 462364344320262183},
    }
    doc.update(fields)
    return doc


def variants(rng: random.Random) -> list[dict[str, Any]]:
    """Messages exercising each branch of the fast entry and each way it hands over to ``_decode``."""
    row = narrow_row(rng)
    odd = {"database": "odd", "table": "t", "pkNames": ["select"], "mysqlType": ODD_MYSQL, "sqlType": ODD_SQL}
    return [
        message(rng),
        message(rng, type="INSERT", data=[narrow_row(rng), narrow_row(rng)]),
        message(rng, type="UPDATE", data=[row, narrow_row(rng)], old=[{"k": "1"}, {"c": "x", "pad": "y"}]),
        message(rng, type="UPDATE", data=[row], old=None),
        message(rng, type="UPDATE", data=[row], old=[]),
        message(rng, type="UPDATE", data=[row], old=[row, row]),
        message(rng, type="UPDATE", data=[row], old=[{}]),
        message(rng, type="UPDATE", data=[row], old=[{"nope": "1"}]),
        message(rng, type="UPDATE", data=[row], old=[None]),
        message(rng, type="DELETE", data=[{"id": "5"}]),
        message(rng, type="DELETE", data=[row, {"id": "6"}]),
        message(rng, type="INIT"),
        message(rng, type="UNKNOWN"),
        message(rng, type=None),
        message(rng, type="TIDB_WATERMARK", _tidb={"watermarkTs": 5}),
        message(rng, isDdl=True, type="CREATE", sql="CREATE TABLE t (a int)"),
        message(rng, table=""),
        message(rng, table=None),
        message(rng, database=None),
        message(rng, database="other"),
        message(rng, table="sbtest2"),
        message(rng, data=[]),
        message(rng, data=None),
        message(rng, data=[{"id": "01", "k": "1", "c": "", "pad": ""}]),
        message(rng, data=[{"id": "1", "k": "1", "c": "", "pad": "", "extra": "1"}]),
        message(rng, data=[{"id": 1, "k": 2.0, "c": "", "pad": ""}]),
        message(rng, data=[{"id": "1"}]),
        message(rng, _tidb=None),
        message(rng, _tidb={}),
        message(rng, _tidb={"commitTs": 0}, es=17),
        message(rng, _tidb={"commitTs": -1}),
        message(rng, _tidb={"commitTs": UINT64_MAX}),
        message(rng, _tidb={"commitTs": UINT64_MAX + 1}),
        message(rng, _tidb={"commit-ts": 99}),
        message(rng, _tidb={"onlyHandleKey": True, "commitTs": 9}, data=[{"id": "1"}]),
        message(rng, _tidb={"claimCheckLocation": "file:///x", "commitTs": 9}),
        message(rng, _tidb=None, es=-1),
        message(rng, _tidb=None, es=1 << 50),
        message(rng, _tidb=None, es=None),
        message(rng, _tidb=None, es="17"),
        message(rng, _tidb={"commitTs": "17"}),
        message(rng, isDdl="false"),
        message(rng, pkNames=["k"]),
        message(rng, pkNames=None),
        message(rng, mysqlType={"pad": "char", "c": "char", "k": "int", "id": "int"}),
        message(rng, mysqlType={"id": "int", "k": "bigint", "c": "varchar", "pad": "binary"}),
        message(rng, sqlType={"pad": 1, "c": 1, "k": 4, "id": 4}),
        message(rng, sqlType=None),
        message(rng, mysqlType=None),
        message(rng, **odd, type="INSERT", data=[odd_row(rng)]),
        message(rng, **odd, type="UPDATE", data=[odd_row(rng)], old=[odd_row(rng)]),
        message(rng, **odd, type="UPDATE", data=[odd_row(rng)], old=[{"a b": "1"}]),
        message(rng, **odd, type="DELETE", data=[odd_row(rng)]),
        message(rng, **odd, type="DELETE", data=[{"select": "3"}]),
        # Every column in the key: a full delete image is its key, so the row is handle-key-only.
        message(rng, database="keys", table="k", pkNames=["id", "k"], mysqlType={"id": "int", "k": "int"},
                sqlType={"id": 4, "k": 4}, type="DELETE", data=[{"id": "1", "k": "2"}]),
        message(rng, database="keys", table="k", pkNames=["id"], mysqlType={"id": "int", "k": "int"},
                sqlType={"id": 4, "k": 4}, type="DELETE", data=[{"id": "1", "k": "2"}]),
    ]


def dumps(doc: dict[str, Any]) -> bytes:
    """Compact JSON as TiCDC writes it (integers of any size)."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def canonical(events: list[Event]) -> list[object]:
    """Events as texts that tell -0.0 from 0.0 (``==`` does not), rows in name order."""
    out: list[object] = []
    for event in events:
        if isinstance(event, RowChange):
            rows = [None if r is None else sorted((k, repr(v)) for k, v in r.items())
                    for r in (event.columns, event.pre_columns)]
            out.append((repr(msgspec.structs.replace(event, columns=None, pre_columns=None)), rows))
        else:
            out.append(repr(event))
    return out


def agree(decoder: cj.Decoder, value: bytes | bytearray, options: dict[str, Any]) -> list[Event] | None:
    """The warm decoder's result equals a fresh reference decoder's (events, or the same error)."""
    try:
        events = decoder.decode(value)  # type: ignore[arg-type]
    except DecodeError as exc:
        with pytest.raises(DecodeError) as reference:
            cj.Decoder(options).decode_reference(value)  # type: ignore[arg-type]
        assert (reference.value.reason, reference.value.at) == (exc.reason, exc.at)
        return None
    reference_events = cj.Decoder(options).decode_reference(value)  # type: ignore[arg-type]
    assert reference_events == events
    assert canonical(reference_events) == canonical(events)  # also tells -0.0 from 0.0
    return events


@pytest.mark.parametrize("options", [{}, {"delete-only-output-handle-key-columns": True},
                                     {"content-compatible": True}, {"default-table": "s.t"}])
@pytest.mark.parametrize("seed", range(4))
def test_fast_entry_equals_reference(options: dict[str, Any], seed: int) -> None:
    rng = random.Random(seed)
    docs = variants(rng)
    decoder = cj.Decoder(options)
    # Twice in a shuffled order: a header is met cold, warm, and after another table's message.
    for doc in docs + rng.sample(docs, len(docs)):
        agree(decoder, dumps(doc), options)


def test_fast_entry_takes_the_common_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    # The narrow table's messages decode in one frame: no call reaches the general path.
    rng = random.Random(1)
    decoder = cj.Decoder()
    calls: list[str] = []
    general = decoder._decode_envelope

    def counted(*args: Any) -> list[Event]:
        calls.append("general")
        return general(*args)
    monkeypatch.setattr(decoder, "_decode_envelope", counted)
    for _ in range(50):
        events = agree(decoder, dumps(message(rng)), {})
        assert events
    assert calls == []


def test_other_inputs_still_decode() -> None:
    rng = random.Random(2)
    lines = b"\n".join(dumps(message(rng)) for _ in range(3)) + b"\n"
    decoder = cj.Decoder()
    assert len(agree(decoder, lines, {}) or []) >= 3
    assert agree(decoder, bytearray(dumps(message(rng))), {})
    assert agree(decoder, b"", {}) == []


@settings(max_examples=150)
@given(seed=st.integers(0, 2**32), picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=12),
       cut=st.integers(0, 400))
def test_mutated_streams_equal_reference(seed: int, picks: list[int], cut: int) -> None:
    rng = random.Random(seed)
    docs = variants(rng)
    decoder = cj.Decoder()
    for pick in picks:
        value = dumps(docs[pick % len(docs)])
        if pick % 7 == 0:
            value = value[: cut % (len(value) + 1)]  # truncated: an error, or a shorter valid prefix never
        agree(decoder, value, {})
