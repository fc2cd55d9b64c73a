"""Every decoder's fast path equals its reference path on the same generated inputs.

Like pyiceberg running its suite over every available decoder: for each protocol and option
set, the messages of generated rows (valid, truncated and mutated) go through ``decode`` on a
warm decoder and through ``decode_reference`` on a fresh one; both give the same events or the
same DecodeError.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc import DecodeError, Event, RowChange
from pyticdc.codec import PROTOCOLS, make_decoder, make_encoder
from strategies import row_changes

# The option sets each decoder reads differently (decoder options only; the encoders' options
# shape the messages).
CONFIGS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("open-protocol", {}, {}),
    ("open-protocol", {"only-output-updated-columns": True}, {}),
    ("canal-json", {}, {}),
    ("canal-json", {"enable-tidb-extension": True}, {"enable-tidb-extension": True}),
    ("canal-json", {"content-compatible": True, "enable-tidb-extension": True}, {"enable-tidb-extension": True}),
    ("craft", {}, {}),
    ("craft", {"max-batch-size": 2}, {}),
    ("debezium", {}, {}),
    ("debezium", {"enable-tidb-extension": True}, {"enable-tidb-extension": True}),
    ("debezium", {"debezium-disable-schema": True}, {}),
    ("simple", {}, {}),
    ("simple", {"encoding-format": "avro"}, {"encoding-format": "avro"}),
]


def test_every_protocol_is_covered() -> None:
    assert {protocol for protocol, _, _ in CONFIGS} == set(PROTOCOLS)


def _outcome(decode: Any, value: bytes | None, key: bytes | None) -> tuple[str, Any]:
    try:
        events: list[Event] = decode(value, key)
    except DecodeError as exc:
        return ("error", (exc.protocol, exc.reason, exc.at))
    return ("events", events)


def _difference(fast: tuple[str, Any], slow: tuple[str, Any], value: bytes,
                history: list[tuple[bytes, bytes | None]]) -> str:
    """Where the two outcomes differ, for the failure message."""
    lines = [f"input {value!r} after {len(history)} earlier inputs {[h for h, _ in history]!r}"]
    if fast[0] == slow[0] == "events" and len(fast[1]) == len(slow[1]):
        for one, other in zip(fast[1], slow[1]):
            lines += [f"{name}: fast {getattr(one, name)!r} reference {getattr(other, name)!r}"
                      for name in one.__struct_fields__ if getattr(one, name) != getattr(other, name)]
    else:
        lines.append(f"fast {fast!r}\nreference {slow!r}")
    return "\n".join(lines)


def _variants(value: bytes, rng: random.Random) -> list[bytes]:
    out = [value, value[: len(value) // 2], value[:-1]]
    for _ in range(4):
        mutated = bytearray(value)
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        out.append(bytes(mutated))
    return out


@pytest.mark.parametrize(("protocol", "encoder_options", "decoder_options"), CONFIGS,
                         ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(CONFIGS)])
@settings(max_examples=30)
@given(rows=row_changes(max_rows=4), seed=st.integers(0, 2**32))
def test_fast_path_equals_reference(protocol: str, encoder_options: dict[str, Any],
                                    decoder_options: dict[str, Any], rows: list[RowChange], seed: int) -> None:
    rng = random.Random(seed)
    messages = make_encoder(protocol, encoder_options, clock=lambda: 1_700_000_000_000).encode(rows)
    warm = make_decoder(protocol, decoder_options)
    history: list[tuple[bytes, bytes | None]] = []
    for message in messages:
        assert message.value is not None
        for value in _variants(message.value, rng):
            # The warm decoder's caches see every earlier input; a fresh decoder replays the same
            # inputs on the reference path (Simple's schemas and held rows are decoder state).
            reference = make_decoder(protocol, decoder_options)
            for earlier_value, earlier_key in history:
                _outcome(reference.decode_reference, earlier_value, earlier_key)
            fast = _outcome(warm.decode, value, message.key)
            slow = _outcome(reference.decode_reference, value, message.key)
            assert fast == slow, _difference(fast, slow, value, history)
            history.append((value, message.key))
    assert len(history) == 7 * len(messages)
