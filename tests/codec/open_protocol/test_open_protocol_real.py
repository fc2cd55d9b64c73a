"""Real Open Protocol bytes written by TiCDC's own Go encoders (../shared/real).

Every key/value pair in the corpus is enumerated from its directory and must decode into exactly
what ../shared/real/README.md (§1a, §2, §3) states. The tolerances these need are listed in
docs/protocols/open-protocol.md.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pyticdc import DecodeError, Event, Op, Row, RowChange, Watermark
from pyticdc.codec import open_protocol
from pyticdc.codec.open_protocol.message import MESSAGE_TYPE_ROW
from pyticdc.model import ActionType
from real_corpus import Summary, names, stamp, summary

U64 = struct.Struct(">Q")
VERSION_ONLY_KEY = U64.pack(1)

CREATE_SCHEMA, DROP_SCHEMA, CREATE_TABLE = ActionType.CREATE_SCHEMA, ActionType.DROP_SCHEMA, ActionType.CREATE_TABLE
# The 2020 test rows: col1 is TINYINT (type 1) built by hand, without "f" (flag 0), carrying text.
COL1 = (("col1", 1, 0),)


def insert(ts: int, table: str, col1: str, ptn: int = 0) -> Summary:
    """An Open Protocol 2020/2021 test row of schema ``a``."""
    return ("row", Op.INSERT, ts, "a", table, ptn, {"col1": col1}, None, COL1)


ROW_0 = [insert(1, "b", "aa")]
ROW_1 = [insert(1, "b", "aa"), insert(2, "b", "bb"), insert(3, "b", "bb"), insert(4, "c", "cc", ptn=6)]

# --------------------------------------------------------------------------- Open Protocol
#: Every Open Protocol pair in the corpus → the events README §1a / §2 state, in order.
OPEN_EXPECTED: dict[str, list[Summary]] = {
    # §1a tibigdata/json (TiBigData JsonDecoderTest, 2021)
    "tibigdata/ddl_0": [("ddl", 423497695015731209, "a", "", CREATE_SCHEMA, "create database a;")],
    "tibigdata/ddl_1": [
        ("ddl", 423497695015731209, "a", "", CREATE_SCHEMA, "create database a;"),
        ("ddl", 423497695015731210, "a", "", DROP_SCHEMA, "drop database a;"),
        ("ddl", 423497695015731211, "a", "", CREATE_SCHEMA, "create database a;"),
        ("ddl", 423497714284101642, "a", "c", CREATE_TABLE, "create table c(id int primary key);"),
    ],
    "tibigdata/ddl_2": [],
    "tibigdata/row_0": ROW_0,
    "tibigdata/row_1": ROW_1,
    "tibigdata/row_2": [],
    "tibigdata/rts_0": [("resolved", 1)],
    "tibigdata/rts_1": [("resolved", 1), ("resolved", 2), ("resolved", 3)],
    "tibigdata/rts_2": [],
    # §2 tiflow-java-demo (TiCDC's 2020 encoder, json_test.go batch cases)
    "java-demo/ddl_0": [("ddl", 1, "a", "b", 1, "create table a")],
    # the type/query mismatch is synthetic in the source
    "java-demo/ddl_1": [("ddl", 1, "a", "b", 1, "create table a"), ("ddl", 2, "a", "b", 2, "create table b"),
                        ("ddl", 3, "a", "b", 3, "create table c")],
    "java-demo/ddl_2": [],
    "java-demo/row_0": ROW_0,
    "java-demo/row_1": ROW_1,
    "java-demo/row_2": [],
    "java-demo/rts_0": [("resolved", 1)],
    "java-demo/rts_1": [("resolved", 1), ("resolved", 2), ("resolved", 3)],
    "java-demo/rts_2": [],
    # §3 tiflow-case-set (2021-01): the events are checked against expected.txt and below
    "case-set/simple": ROW_1,
    "case-set/expand_char": [insert(ts, "b", text) for ts, text in enumerate([
        "你好《》？：「」|+——￥", "💋💼🕶💼👛💄💋💇", "にほんご", "~!@#$%^&*()_+\"'[]\\;',./|:>?`",
        "Ω≈ç√∫µ≤≥µæ…¬˚∆˙©ƒ∂ßåœ∑®†¥øπ“‘«≠–ºª•¶§∞¢£™¡"], start=1)],
    "case-set/lang_event": [insert(1, "8" * i, "8" * i) for i in range(1024)],
}
CASE_SET = ("simple", "expand_char", "lang_event")


def open_pairs(real: Path) -> dict[str, tuple[Path, Path]]:
    """Every Open Protocol key/value pair in the corpus, found by listing its directories."""
    pairs: dict[str, tuple[Path, Path]] = {}
    tibigdata = real / "tibigdata" / "json"
    keys = names(tibigdata / "key")
    assert keys == names(tibigdata / "value"), "tibigdata key and value files pair by name"
    for name in keys:
        pairs[f"tibigdata/{name}"] = (tibigdata / "key" / name, tibigdata / "value" / name)
    demo = real / "tiflow-java-demo" / "data"
    assert names(demo) == ["key", "value"]
    keys = names(demo / "key")
    # X_key_i pairs with X_value_i; sorted key and value names pair one to one.
    assert [k.replace("_key_", "_value_") for k in keys] == names(demo / "value")
    for name in keys:
        pairs[f"java-demo/{name.replace('_key', '')}"] = (
            demo / "key" / name, demo / "value" / name.replace("_key_", "_value_"))
    cases = real / "tiflow-case-set"
    assert names(cases) == sorted([*CASE_SET, "README.upstream.md"])
    for case in names(cases):
        if (cases / case).is_dir():
            assert names(cases / case) == ["expected.txt", "key.bin", "value.bin"]
            pairs[f"case-set/{case}"] = (cases / case / "key.bin", cases / case / "value.bin")
    return pairs


def decode_open(real: Path, name: str) -> list[Event]:
    """Decode one corpus pair with a fresh Open Protocol decoder."""
    key, value = open_pairs(real)[name]
    return open_protocol.Decoder().decode(value.read_bytes(), key.read_bytes())


def test_every_open_pair_is_found_and_expected(real_dir: Path) -> None:
    pairs = open_pairs(real_dir)
    # README: 21 pairs (42 files) plus 3 expected.txt, 1 060 events in all.
    assert len(pairs) == 21
    assert len({path for pair in pairs.values() for path in pair}) == 42
    assert sorted(pairs) == sorted(OPEN_EXPECTED)
    assert sum(len(events) for events in OPEN_EXPECTED.values()) == 1060


@pytest.mark.parametrize("name", sorted(OPEN_EXPECTED))
def test_open_pair_decodes_to_the_stated_events(real_dir: Path, name: str) -> None:
    events = decode_open(real_dir, name)
    assert [summary(e) for e in events] == OPEN_EXPECTED[name]
    # README: ts non-decreasing within every batch.
    stamps = [stamp(e) for e in events]
    assert stamps == sorted(stamps)


@pytest.mark.parametrize("name", sorted(n for n, events in OPEN_EXPECTED.items() if not events))
def test_empty_batches_are_a_version_only_key_and_no_value(real_dir: Path, name: str) -> None:
    key, value = open_pairs(real_dir)[name]
    assert (key.read_bytes(), value.read_bytes()) == (VERSION_ONLY_KEY, b"")


@pytest.mark.parametrize("name", ["tibigdata/rts_0", "tibigdata/rts_1", "java-demo/rts_0", "java-demo/rts_1"])
def test_resolved_values_are_8_zero_bytes_per_event(real_dir: Path, name: str) -> None:
    _, value = open_pairs(real_dir)[name]
    assert value.read_bytes() == bytes(8 * len(OPEN_EXPECTED[name]))


def test_resolved_ts_non_decreasing_across_files(real_dir: Path) -> None:
    for source in ("tibigdata", "java-demo"):
        stamps = [e.resolved_ts for n in ("rts_0", "rts_1", "rts_2")
                  for e in decode_open(real_dir, f"{source}/{n}") if isinstance(e, Watermark)]
        assert stamps == sorted(stamps) and len(stamps) == 4


def test_legacy_rows_have_no_flags_on_the_wire(real_dir: Path) -> None:
    # The 2020 encoder's column object is {"t","v"}; the 2021 one adds "f".
    for name in ("tibigdata/row_1", "java-demo/row_1", "case-set/simple"):
        key, value = open_pairs(real_dir)[name]
        view = open_protocol.explain(value.read_bytes(), key.read_bytes())
        columns = [e["value_json"]["u"]["col1"] for e in view["events"]]
        assert [sorted(c) for c in columns] == [["f", "t", "v"] if name.startswith("case") else ["t", "v"]] * 4


def test_byte_identical_copies(real_dir: Path) -> None:
    pairs = open_pairs(real_dir)
    for suffix in ("row_0", "row_1", "row_2", "rts_0", "rts_1", "rts_2"):
        for a, b in zip(pairs[f"tibigdata/{suffix}"], pairs[f"java-demo/{suffix}"]):
            assert a.read_bytes() == b.read_bytes()
    assert pairs["tibigdata/row_1"][0].read_bytes() == pairs["case-set/simple"][0].read_bytes()


# --------------------------------------------------------------------------- tiflow-case-set expected.txt
def expected_events(text: str) -> list[tuple[str, str]]:
    """expected.txt: ``key JSON\\nvalue JSON\\n\\n`` per event → (key, value) text pairs."""
    lines = text.split("\n")
    assert len(lines) % 3 == 1 and lines[-1] == ""
    pairs = []
    for i in range(0, len(lines) - 1, 3):
        assert lines[i + 2] == "", f"event {i // 3}: no blank line after the value"
        pairs.append((lines[i], lines[i + 1]))
    return pairs


def frame_payloads(data: bytes, start: int) -> list[bytes]:
    """The u64be length-prefixed payloads of an Open key (start 8) or value (start 0)."""
    payloads = []
    while start < len(data):
        (length,) = U64.unpack_from(data, start)
        payloads.append(data[start + 8:start + 8 + length])
        start += 8 + length
    assert start == len(data)
    return payloads


def check_against_expected(event: Event, key: dict[str, Any], value: dict[str, Any]) -> None:
    """One decoded event against the key and value JSON the generating test printed."""
    assert key["t"] == MESSAGE_TYPE_ROW and isinstance(event, RowChange)
    assert event.commit_ts == key["ts"]
    assert event.schema == key.get("scm", "") and event.table == key.get("tbl", "")
    assert event.row_id == key.get("rid", 0)
    assert event.physical_table_id == key.get("ptn", 0)
    assert event.table_info is not None and event.table_info.is_partition == ("ptn" in key)
    images = {part: value[part] for part in ("u", "p", "d") if part in value}
    assert set(value) == set(images)
    decoded: dict[str, Row | None]
    if "d" in images:
        assert event.op is Op.DELETE and event.pre_columns is not None and event.columns is None
        decoded = {"d": event.pre_columns}
    else:
        assert event.op is (Op.UPDATE if "p" in images else Op.INSERT)
        decoded = {"u": event.columns, "p": event.pre_columns} if "p" in images else {"u": event.columns}
    types = {c.name: (c.type_code, c.flags) for c in event.table_info.columns}
    for part, columns in images.items():
        image = decoded[part]
        assert image is not None and sorted(image) == sorted(columns)
        for name, column in columns.items():
            assert types[name] == (column["t"], column.get("f", 0))
            # Every column here is TINYINT without BinaryFlag carrying text: the decoder keeps
            # the JSON value as it is (the text tolerance).
            assert column["t"] == 1 and not column.get("f", 0) & 1
            assert image[name] == column["v"] and type(image[name]) is type(column["v"])


@pytest.mark.parametrize("case", CASE_SET)
def test_case_set_matches_expected_txt(real_dir: Path, case: str) -> None:
    folder = real_dir / "tiflow-case-set" / case
    key, value = (folder / "key.bin").read_bytes(), (folder / "value.bin").read_bytes()
    expected = expected_events((folder / "expected.txt").read_text(encoding="utf-8"))
    # One message (max-batch-size was MaxInt64): the framing reproduces expected.txt exactly.
    assert key[:8] == VERSION_ONLY_KEY
    assert frame_payloads(key, 8) == [k.encode() for k, _ in expected]
    assert frame_payloads(value, 0) == [v.encode() for _, v in expected]
    events = open_protocol.Decoder().decode(value, key)
    assert len(events) == len(expected) == len(OPEN_EXPECTED[f"case-set/{case}"])
    for event, (key_text, value_text) in zip(events, expected):
        check_against_expected(event, json.loads(key_text), json.loads(value_text))


def test_lang_event_is_one_large_message(real_dir: Path) -> None:
    folder = real_dir / "tiflow-case-set" / "lang_event"
    key, value = (folder / "key.bin").read_bytes(), (folder / "value.bin").read_bytes()
    assert (len(key), len(value)) == (565_759, 567_808)
    # Far beyond max-batch-size 16 and 1 MB: the decoder must not apply a batch sanity limit.
    events = open_protocol.Decoder({"max-batch-size": 16, "max-message-bytes": 1 << 20}).decode(value, key)
    assert len(events) == 1024
    assert frame_payloads(key, 8)[0] == b'{"ts":1,"scm":"a","t":1}'  # i = 0: no "tbl"
    first = events[0]
    assert isinstance(first, RowChange) and first.table == "" and first.columns is not None
    assert dict(first.columns) == {"col1": ""}


def test_expand_char_html_escapes_on_the_wire(real_dir: Path) -> None:
    value = (real_dir / "tiflow-case-set" / "expand_char" / "value.bin").read_bytes()
    assert b"\\u0026" in value and b"\\u003e" in value and b"&" not in value and b">" not in value
    event = open_protocol.decode(value, (real_dir / "tiflow-case-set" / "expand_char" / "key.bin").read_bytes())[3]
    assert isinstance(event, RowChange) and event.columns is not None
    assert "&" in str(event.columns["col1"]) and ">" in str(event.columns["col1"])


# --------------------------------------------------------------------------- strictness kept
def _cuts(size: int, limit: int = 400) -> range:
    """Cut positions to try: all of a small buffer, an even sample of a large one."""
    return range(0, size, max(1, size // limit))


@pytest.mark.parametrize("name", sorted(n for n, events in OPEN_EXPECTED.items() if events))
def test_truncated_open_pairs_raise_decode_error(real_dir: Path, name: str) -> None:
    key_path, value_path = open_pairs(real_dir)[name]
    key, value = key_path.read_bytes(), value_path.read_bytes()
    decoder = open_protocol.Decoder()
    full = decoder.decode(value, key)
    resolved_only = all(isinstance(e, Watermark) for e in full)
    for cut in _cuts(len(key)):
        with pytest.raises(DecodeError):
            decoder.decode(value, key[:cut])
    for cut in _cuts(len(value)):
        if resolved_only and cut % 8 == 0:
            # Dropping whole (empty) resolved values reads as the docs form without a value.
            assert decoder.decode(value[:cut], key) == full
            continue
        with pytest.raises(DecodeError):
            decoder.decode(value[:cut], key)


def _framed(*keys: bytes) -> bytes:
    return VERSION_ONLY_KEY + b"".join(U64.pack(len(k)) + k for k in keys)


def _values(*values: bytes) -> bytes:
    return b"".join(U64.pack(len(v)) + v for v in values)


ROW_KEY = b'{"ts":1,"scm":"a","tbl":"b","t":1}'


@pytest.mark.parametrize(("column", "expected"), [
    (b'{"t":1,"v":"aa"}', "aa"),  # 2020: no "f"
    (b'{"t":1,"f":0,"v":"8"}', "8"),  # 2021 lang_event: numeric text stays text
    (b'{"t":1,"f":0,"v":""}', ""),
    (b'{"t":1,"f":128,"v":"x"}', "x"),  # UNSIGNED, still no BinaryFlag
    (b'{"t":1,"f":0,"v":7}', 7),
])
def test_text_in_tinyint_columns_without_binary_flag_is_kept(column: bytes, expected: object) -> None:
    (event,) = open_protocol.decode(_values(b'{"u":{"c":' + column + b"}}"), _framed(ROW_KEY))
    assert isinstance(event, RowChange) and event.columns is not None and dict(event.columns) == {"c": expected}


@pytest.mark.parametrize("column", [
    b'{"t":1,"f":1,"v":"aa"}',  # BinaryFlag: a column TiDB mounted as a number
    b'{"t":3,"f":65,"v":"1"}',
    b'{"t":3,"f":0,"v":""}',  # only TINYINT, the one type seen carrying text
    b'{"t":8,"f":128,"v":"x"}',
    b'{"t":2,"v":"aa"}',
    b'{"t":16,"f":0,"v":"aa"}',  # BIT, ENUM, SET: no tolerance
    b'{"t":247,"v":"aa"}',
    b'{"t":1,"v":true}',  # only text is tolerated, not other JSON types
    b'{"t":1,"f":0,"v":1.5}',
    b'{"t":1,"v":[1]}',
])
def test_other_type_mismatches_stay_errors(column: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        open_protocol.decode(_values(b'{"u":{"c":' + column + b"}}"), _framed(ROW_KEY))
    assert info.value.at == "$.u.c.v"


def test_several_ddl_and_resolved_events_pair_in_order() -> None:
    ddl = b'{"ts":5,"scm":"a","t":2}'
    events = open_protocol.decode(
        _values(b'{"q":"create database a;","t":1}', b"", b'{"q":"drop database a;","t":2}', b""),
        _framed(ddl, b'{"ts":6,"t":3}', ddl, b'{"ts":7,"t":3}'))
    assert [summary(e) for e in events] == [
        ("ddl", 5, "a", "", 1, "create database a;"), ("resolved", 6),
        ("ddl", 5, "a", "", 2, "drop database a;"), ("resolved", 7)]


@pytest.mark.parametrize(("keys", "values", "at"), [
    # A resolved event paired with a non-empty value: that value belongs to another event.
    ([b'{"ts":1,"t":3}', ROW_KEY], [b'{"u":{}}'], 8),
    # A DDL without its value, and values without keys.
    ([b'{"ts":1,"t":3}', b'{"ts":2,"scm":"a","t":2}'], [b""], 8),
    ([b'{"ts":1,"t":3}'], [b"", b""], 8),
    ([], [b""], 0),
])
def test_unpaired_frames_raise(keys: Sequence[bytes], values: Sequence[bytes], at: int) -> None:
    with pytest.raises(DecodeError) as info:
        open_protocol.decode(_values(*values), _framed(*keys))
    assert info.value.at == at
