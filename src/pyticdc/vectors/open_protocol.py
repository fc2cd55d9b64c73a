"""Vector adapter for ``open.json``: encode cases via the generic check, decode cases here.

A decode case gives ``encoded_key``/``encoded_value`` and ``expected_decoded`` (one event, or a
list): the model fields (``type``, ``op``, ``commit_ts``, ``schema``, ``table``, ``columns``, …)
are compared with what the decoder returns, and the wire-level ``key_json``/``value_json`` with
``explain`` of the same message.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Final

from pyticdc.codec import open_protocol
from pyticdc.codec.base import Message
from pyticdc.codec.jsontext import float32_round
from pyticdc.errors import DecodeError
from pyticdc.model import DDLEvent, Event, RowChange, TableInfo, Value, Watermark
from pyticdc.vectors.compare import diff_bytes, diff_json, expected_bytes
from pyticdc.vectors.generic import MemoryClaimCheck as _MemoryClaimCheck
from pyticdc.vectors.generic import check_encode as generic_check_encode
from pyticdc.vectors.generic import compare_message
from pyticdc.vectors.inputs import events_from_vector, options_from_vector

__all__ = ["PROTOCOL", "MemoryClaimCheck", "check_decode", "check_encode"]

PROTOCOL: Final = "open-protocol"



def MemoryClaimCheck(uri: str = "") -> _MemoryClaimCheck:
    """The shared in-memory store with this adapter's deterministic location names."""
    return _MemoryClaimCheck(uri or "memory://claim-check", PROTOCOL, name_format="claim-check-{n}.json", first=1)



def _bytes_of(spec: Any) -> bytes | None:
    """``encoded_*`` as bytes: ``{"hex": …}``, text, or ``{"json": …}`` framed as one event."""
    if isinstance(spec, dict) and "hex" not in spec and "base64" in spec:
        return base64.b64decode(spec["base64"])
    return expected_bytes(spec)


def _implied_limit(case: dict[str, Any]) -> int:
    """One byte below the largest full single-row message: the limit a "shape" case implies."""
    config = {k: v for k, v in case.get("config", {}).items()
              if k not in ("large_message_handle_option", "claim_check_storage_uri")}
    options, _ = options_from_vector(config, open_protocol.OPTIONS)
    encoder = open_protocol.Encoder(options, max_batch_size=1)
    lengths = [m.length for m in encoder.encode(events_from_vector(case["input"])) if m.rows]
    return max(lengths) - 1


def check_encode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Encode cases; claim-check cases get an in-memory store (locations are deterministic).

    A large-message case without ``max_message_bytes`` shows the shape of the re-encoded
    message "after the original exceeded max-message-bytes": the limit is set just below the
    full encoding of its largest row so that the large-message path is taken, as the note says.
    """
    config = dict(case.get("config", {}))
    large = config.get("large_message_handle_option", "none") != "none"
    if large and "max_message_bytes" not in config:
        config["max_message_bytes"] = _implied_limit(case)
        case = {**case, "config": config}
    if config.get("large_message_handle_option") != "claim-check":
        return generic_check_encode(PROTOCOL, case)
    options, clock = options_from_vector(config, open_protocol.OPTIONS)
    store = MemoryClaimCheck(config.get("claim_check_storage_uri", ""))
    messages: list[Message] = open_protocol.Encoder(options, clock=clock, claim_check=store).encode(
        events_from_vector(case["input"]))
    if "expected_messages" in case:
        if len(messages) != len(case["expected_messages"]):
            return f"expected {len(case['expected_messages'])} messages, got {len(messages)}"
        for i, (want, got) in enumerate(zip(case["expected_messages"], messages)):
            found = (diff_bytes(f"message {i} key", bytes.fromhex(want["key_hex"]), got.key)
                     or diff_bytes(f"message {i} value", bytes.fromhex(want["value_hex"]), got.value))
            if found:
                return found
        return None
    if len(messages) != 1:
        return f"expected 1 message, got {len(messages)}"
    return compare_message(case, messages[0])


def _vector_value(value: Value) -> Any:
    """A model value in the vectors' JSON form (bytes → text when UTF-8, else ``{"hex"}``)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": value.hex()}
    return value


def _diff_columns(expected: Any, row: dict[str, Value] | None, table: TableInfo | None, path: str) -> str | None:
    if expected is None or row is None:
        return None if expected is None and row is None else f"{path}: expected {expected!r}, got {row!r}"
    if set(expected) != set(row):
        return f"{path}: expected columns {sorted(expected)}, got {sorted(row)}"
    columns = table.column_by_name if table is not None else {}
    for name, want in expected.items():
        got = row[name]
        column = columns.get(name)
        if isinstance(want, dict) and "hex" in want:
            same = isinstance(got, bytes) and got == bytes.fromhex(want["hex"])
        elif isinstance(got, bytes) and isinstance(want, str):
            same = got == want.encode("utf-8")
        elif column is not None and column.type_code == 4 and isinstance(want, (int, float)):
            same = isinstance(got, float) and got == float32_round(float(want))
        else:
            same = diff_json(want, got) is None
        if not same:
            return f"{path}.{name}: expected {want!r}, got {_vector_value(got)!r}"
    return None


def _diff_event(expected: dict[str, Any], event: Event, wire: dict[str, Any], path: str) -> str | None:
    kind = {"row": "row", "ddl": "ddl", "watermark": "resolved"}.get(event.kind, event.kind)
    actual: dict[str, Any] = {"type": kind, "key_json": wire.get("key_json"), "value_json": wire.get("value_json")}
    if isinstance(event, RowChange):
        actual.update(op=event.op.value, commit_ts=event.commit_ts, schema=event.schema, table=event.table,
                      row_id=event.row_id, physical_table_id=event.physical_table_id,
                      handle_key_only=event.handle_key_only, claim_check_location=event.claim_check_location)
    elif isinstance(event, DDLEvent):
        actual.update(commit_ts=event.commit_ts, schema=event.schema, table=event.table, query=event.query,
                      ddl_type=event.ddl_type)
    elif isinstance(event, Watermark):
        actual.update(commit_ts=event.resolved_ts, resolved_ts=event.resolved_ts, ts=event.resolved_ts)
    for field, want in expected.items():
        if field == "type":
            if want not in (kind, event.kind):
                return f"{path}.type: expected {want!r}, got {kind!r}"
        elif field in ("columns", "pre_columns"):
            if not isinstance(event, RowChange):
                return f"{path}.{field}: not a row event"
            found = _diff_columns(want, getattr(event, field), event.table_info, f"{path}.{field}")
            if found:
                return found
        elif field not in actual:
            return f"{path}.{field}: expectation not supported by the open-protocol adapter"
        else:
            found = diff_json(want, actual[field], f"{path}.{field}")
            if found:
                return found
    return None


def check_decode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Decode ``encoded_key``/``encoded_value`` and compare with ``expected_decoded``."""
    options, _ = options_from_vector(case.get("config", {}), open_protocol.OPTIONS)
    key = _bytes_of(case.get("encoded_key"))
    value = _bytes_of(case.get("encoded_value"))
    expects_error = case.get("expected_error") is not None or case.get("expected_decoded", {}) is None
    try:
        events = open_protocol.Decoder(options).decode(value, key)
        wire = open_protocol.explain(value, key, compression=options.get("large-message-handle-compression"))
    except DecodeError as exc:
        return None if expects_error else f"DecodeError: {exc}"
    if expects_error:
        return f"expected a DecodeError, decoded {len(events)} event(s)"
    expected = case["expected_decoded"]
    expected_list = expected if isinstance(expected, list) else [expected]
    if len(events) != len(expected_list):
        return f"expected {len(expected_list)} events, got {len(events)}"
    for i, (want, event) in enumerate(zip(expected_list, events)):
        path = "$" if not isinstance(expected, list) else f"$[{i}]"
        found = _diff_event(want, event, wire["events"][i], path)
        if found:
            return found
    return None
