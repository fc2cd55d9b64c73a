"""One conformance suite that every registered protocol runs: round trip against the codec's
documented projection, and bad bytes raising nothing but DecodeError."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc import DDLEvent, DecodeError, Event, RowChange, Watermark
from pyticdc.codec import PROTOCOLS as PROTOCOL_NAMES
from pyticdc.codec import make_decoder, make_encoder
from strategies import row_changes, tsos

PROTOCOLS = list(PROTOCOL_NAMES)
# Option sets each protocol is exercised with (TiCDC names); the first is the default.
OPTION_SETS: dict[str, list[dict[str, Any]]] = {
    "open-protocol": [{}, {"open-protocol.output-old-value": False}, {"only-output-updated-columns": True},
                      {"delete-only-output-handle-key-columns": True}, {"max-batch-size": 1}],
    "canal-json": [{}, {"enable-tidb-extension": True}, {"content-compatible": True, "enable-tidb-extension": True},
                   {"delete-only-output-handle-key-columns": True, "enable-tidb-extension": True}],
    "craft": [{}, {"max-batch-size": 2}, {"delete-only-output-handle-key-columns": True}],
    "debezium": [{}, {"enable-tidb-extension": True}, {"debezium-disable-schema": True},
                 {"debezium-output-old-value": False}],
    "simple": [{}, {"encoding-format": "avro"}],
}

def comparable(event: Event) -> tuple[Any, ...]:
    """The parts of an event every protocol must carry faithfully (table_info is protocol-shaped)."""
    if isinstance(event, RowChange):
        return ("row", event.op, event.schema, event.table, event.commit_ts,
                dict(event.columns) if event.columns is not None else None,
                dict(event.pre_columns) if event.pre_columns is not None else None, event.handle_key_only)
    if isinstance(event, DDLEvent):
        return ("ddl", event.commit_ts, event.query, event.ddl_type, event.schema, event.table)
    if isinstance(event, Watermark):
        return ("watermark", event.resolved_ts)
    return ("bootstrap", event.table_info.schema, event.table_info.table)


def round_trip(protocol: str, options: dict[str, Any], events: list[Event]) -> tuple[list[Any], list[Any]]:
    """(decoded events, projected events) for one encode → decode pass."""
    encoder = make_encoder(protocol, options, clock=lambda: 1_700_000_000_000)
    decoder = make_decoder(protocol, {k: v for k, v in options.items() if k in _DECODER_OPTIONS})
    messages = encoder.encode(events)
    decoded = [comparable(e) for m in messages for e in decoder.decode(m.value, m.key)
               if e.kind != "bootstrap"]
    projected = [comparable(p) for e in events if (p := encoder.project(e)) is not None]
    return decoded, projected


# Options a decoder must be told because the bytes do not say (TiCDC consumers take the same).
_DECODER_OPTIONS = {"encoding-format", "enable-tidb-extension", "large-message-handle-compression", "time-zone"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=60)
@given(data=st.data())
def test_row_round_trip_equals_projection(protocol: str, data: st.DataObject) -> None:
    options = data.draw(st.sampled_from(OPTION_SETS.get(protocol, [{}])), label="options")
    rows = data.draw(row_changes(), label="rows")
    decoded, projected = round_trip(protocol, options, list(rows))
    assert decoded == projected


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=30)
@given(resolved_ts=tsos, commit_ts=tsos)
def test_ddl_and_watermark_round_trip(protocol: str, resolved_ts: int, commit_ts: int) -> None:
    for options in OPTION_SETS.get(protocol, [{}]):
        ddl = DDLEvent(query="ALTER TABLE `t` ADD COLUMN `c` INT", ddl_type=5, commit_ts=commit_ts,
                       schema="test", table="t")
        decoded, projected = round_trip(protocol, options, [ddl, Watermark(resolved_ts=resolved_ts)])
        assert decoded == projected


def _valid_messages(protocol: str, rows: list[RowChange]) -> list[tuple[bytes | None, bytes | None]]:
    encoder = make_encoder(protocol, clock=lambda: 1_700_000_000_000)
    return [(m.key, m.value) for m in encoder.encode(rows)]


def _decode_or_decode_error(protocol: str, value: bytes | None, key: bytes | None) -> None:
    try:
        make_decoder(protocol).decode(value, key)
    except DecodeError as exc:
        assert exc.protocol == protocol
        assert exc.reason


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=150)
@given(value=st.binary(max_size=200), key=st.one_of(st.none(), st.binary(max_size=60)))
def test_random_bytes_raise_only_decode_error(protocol: str, value: bytes, key: bytes | None) -> None:
    _decode_or_decode_error(protocol, value, key)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=25)
@given(rows=row_changes(max_rows=2), seed=st.integers(0, 2**32))
def test_truncated_and_mutated_messages_raise_only_decode_error(protocol: str, rows: list[RowChange],
                                                                seed: int) -> None:
    rng = random.Random(seed)
    for key, value in _valid_messages(protocol, rows):
        assert value is not None
        cuts = sorted({rng.randrange(len(value) + 1) for _ in range(8)} | {0, len(value) - 1})
        for cut in cuts:
            _decode_or_decode_error(protocol, value[:cut], key)
            if key:
                _decode_or_decode_error(protocol, value, key[:cut % (len(key) + 1)])
        for _ in range(8):
            mutated = bytearray(value)
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            _decode_or_decode_error(protocol, bytes(mutated), key)


_CONFUSERS: list[Any] = [None, 0, -1, 2**64 - 1, -(2**63), 1.5, "", "x", [], {}, [None], {"a": None}, True]


def _confuse(node: Any, rng: random.Random) -> Any:
    """Replace one random JSON node of ``node`` by a value of another type."""
    if isinstance(node, dict) and node and rng.random() < 0.8:
        key = rng.choice(list(node))
        return {**node, key: _confuse(node[key], rng)}
    if isinstance(node, list) and node and rng.random() < 0.8:
        i = rng.randrange(len(node))
        return [*node[:i], _confuse(node[i], rng), *node[i + 1:]]
    return rng.choice(_CONFUSERS)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=25)
@given(rows=row_changes(max_rows=1), seed=st.integers(0, 2**32))
def test_type_confused_json_raises_only_decode_error(protocol: str, rows: list[RowChange], seed: int) -> None:
    rng = random.Random(seed)
    for key, value in _valid_messages(protocol, rows):
        assert value is not None
        try:
            document = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue  # a binary or framed protocol: covered by the byte mutations above
        for _ in range(12):
            confused = orjson.dumps(_confuse(document, rng))
            _decode_or_decode_error(protocol, confused, key)
