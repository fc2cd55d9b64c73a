"""The encode check shared by every protocol's vector cases (standard layout)."""

from __future__ import annotations

from typing import Any

import orjson

from pyticdc.codec import codec_module
from pyticdc.codec.base import Message
from pyticdc.errors import DecodeError
from pyticdc.vectors.compare import diff_bytes, diff_json, diff_unordered, expected_bytes
from pyticdc.vectors.inputs import events_from_vector, options_from_vector

__all__ = ["MemoryClaimCheck", "check_encode", "check_messages", "compare_message", "encode_case"]


class MemoryClaimCheck:
    """A deterministic in-memory claim-check store: locations ``<uri>/<name_format with n>``."""

    def __init__(self, uri: str, protocol: str, *, name_format: str = "{n}.json", first: int = 0) -> None:
        self.uri = uri.rstrip("/")
        self.protocol = protocol
        self.name_format = name_format
        self.first = first
        self.stored: dict[str, tuple[bytes | None, bytes]] = {}

    def put(self, key: bytes | None, value: bytes) -> str:
        """Keep one message; return its location."""
        location = f"{self.uri}/{self.name_format.format(n=len(self.stored) + self.first)}"
        self.stored[location] = (key, value)
        return location

    def get(self, location: str) -> tuple[bytes | None, bytes]:
        """Return a kept message; DecodeError if unknown."""
        if location not in self.stored:
            raise DecodeError(self.protocol, f"no claim-check message at {location}")
        return self.stored[location]


def encode_case(protocol: str, case: dict[str, Any], extra: dict[str, Any] | None = None) -> list[Message]:
    """Encode a case's input events with its config, as one topic partition would."""
    module = codec_module(protocol)
    options, clock = options_from_vector({**case.get("config", {}), **(extra or {})}, module.OPTIONS)
    encoder = module.Encoder(options, clock=clock)
    messages: list[Message] = encoder.encode(events_from_vector(case["input"]))
    return messages


def compare_message(case: dict[str, Any], message: Message) -> str | None:
    """Compare one encoded message with the case's expected key and value."""
    compare = case.get("compare") or {"mode": "exact"}
    mode = compare.get("mode", "exact")
    for what, expected_spec, actual in (
        ("key", case.get("expected_key"), message.key),
        ("value", case.get("expected_value"), message.value),
    ):
        json_expectation = case.get(f"expected_{what}_json")
        if mode == "json" and json_expectation is not None:
            if actual is None:
                return f"{what}: expected JSON, got no bytes"
            try:
                found = diff_json(json_expectation, orjson.loads(actual))
            except orjson.JSONDecodeError as exc:
                return f"{what}: not JSON ({exc})"
            if found:
                return f"{what}: {found}"
            continue
        expected = expected_bytes(expected_spec)
        if mode == "exact_except" and compare.get("unordered_object_keys") and expected and actual:
            found = diff_unordered(what, expected, actual, compare["unordered_object_keys"])
        else:
            found = diff_bytes(what, expected, actual)
        if found:
            return found
    return None


def check_encode(protocol: str, case: dict[str, Any], extra: dict[str, Any] | None = None) -> str | None:
    """Run one encode case; None when it passes, else the reason."""
    return check_messages(case, encode_case(protocol, case, extra))


def check_messages(case: dict[str, Any], messages: list[Message]) -> str | None:
    """Compare encoded messages with a case's expectations (no message, a batch list, or one message)."""
    mode = (case.get("compare") or {}).get("mode", "exact")
    if mode == "no_message" or ("expected_value" in case and case["expected_value"] is None
                                and "expected_messages" not in case):
        return None if not messages else f"expected no message, got {len(messages)}"
    if "expected_messages" in case:
        expected = case["expected_messages"]
        if len(messages) != len(expected):
            return f"expected {len(expected)} messages, got {len(messages)}"
        for i, (want, got) in enumerate(zip(expected, messages)):
            want_key = bytes.fromhex(want["key_hex"]) if want.get("key_hex") is not None else None
            found = (diff_bytes(f"message {i} key", want_key, got.key)
                     or diff_bytes(f"message {i} value", bytes.fromhex(want["value_hex"]), got.value))
            if found:
                return found
            if "rows" in want and got.rows != want["rows"]:
                return f"message {i}: expected {want['rows']} rows, got {got.rows}"
        return None
    if len(messages) != 1:
        return f"expected 1 message, got {len(messages)}"
    return compare_message(case, messages[0])
