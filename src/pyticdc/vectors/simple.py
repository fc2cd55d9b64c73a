"""Vector adapter for the Simple protocol: ``simple_json.json`` and ``simple_avro.json``.

Encode cases run an Encoder with ``auto_bootstrap=False``: the cases give the events TiCDC's
*codec* receives (BOOTSTRAP events explicitly), while TiCDC's bootstrap worker, which our
encoder can emulate, sits outside the codec. A case that asks for a large-message option
without a ``max_message_bytes`` gets the largest limit its full message exceeds. Avro results
are compared byte for byte modulo map entry order (Go map iteration is random) and, decoded
with fastavro against the case's schema file, with ``decoded_native``.
"""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from pyticdc.codec.base import Message
from pyticdc.codec.simple import OPTIONS, Decoder, Encoder
from pyticdc.codec.simple.decoder import parse_avro
from pyticdc.codec.simple.message import Wire
from pyticdc.errors import ConfigError, DecodeError
from pyticdc.model import Bootstrap, DDLEvent, Event, RowChange, Watermark
from pyticdc.vectors.compare import diff_bytes, diff_json, expected_bytes, json_span, jsonable
from pyticdc.vectors.generic import MemoryClaimCheck as _MemoryClaimCheck
from pyticdc.vectors.inputs import events_from_vector, options_from_vector, table_from_vector

__all__ = ["PROTOCOL", "MemoryClaimCheck", "check_decode", "check_encode"]

PROTOCOL = "simple"
_OVERHEAD = 36



def MemoryClaimCheck(uri: str = "") -> _MemoryClaimCheck:
    """The shared in-memory store with this adapter's deterministic location names."""
    return _MemoryClaimCheck(uri or "file:///claim-check", PROTOCOL, name_format="{n}.json", first=0)



def _options(case: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    return options_from_vector(case.get("config", {}), OPTIONS)


def _encoder(options: dict[str, Any], clock: Any, store: _MemoryClaimCheck | None) -> Encoder:
    return Encoder(options, clock=clock, claim_check=store, auto_bootstrap=False)


def encode_case(case: dict[str, Any]) -> list[Message]:
    """Encode a case's input events as TiCDC's codec would for one partition."""
    options, clock = _options(case)
    events = events_from_vector(case["input"])
    option = options.get("large-message-handle-option", "none")
    store = None
    if option == "claim-check":
        store = MemoryClaimCheck(options.get("claim-check-storage-uri") or "file:///claim-check")
    if option != "none" and "max-message-bytes" not in options:
        # "emitted when the full message exceeds max-message-bytes": pick the largest such limit.
        plain = {**options, "large-message-handle-option": "none"}
        plain.pop("claim-check-storage-uri", None)
        full = _encoder(plain, clock, None).encode([e for e in events if isinstance(e, RowChange)])
        if full:
            options["max-message-bytes"] = max(len(m.value or b"") + _OVERHEAD for m in full) - 1
    return _encoder(options, clock, store).encode(events)


def _blank(data: bytes, keys: list[str]) -> bytes:
    for path in keys:
        span = json_span(data, path.removeprefix("$."))
        if span is not None:
            data = data[:span[0]] + b"null" + data[span[1]:]
    return data


def _compare_json(case: dict[str, Any], message: Message) -> str | None:
    found = diff_bytes("key", expected_bytes(case.get("expected_key")), message.key)
    if found:
        return found
    expected = expected_bytes(case.get("expected_value"))
    actual = message.value
    compare = case.get("compare") or {}
    if compare.get("mode") == "json" and case.get("expected_value_json") is not None:
        return diff_json(case["expected_value_json"], orjson.loads(actual or b"null"))
    if expected is not None and actual is not None:
        # Ignored fields other than buildTs (pinned through config.build_ts) are blanked on both sides.
        ignore = [p for p in compare.get("ignore", []) if p != "$.buildTs"]
        if ignore:
            expected, actual = _blank(expected, ignore), _blank(actual, ignore)
    return diff_bytes("value", expected, actual)


@lru_cache(maxsize=4)
def _fastavro() -> Any:
    # An independent Avro reader, an optional dependency (pyticdc[vectors]): imported on first use.
    try:
        import fastavro
    except ImportError:
        raise ConfigError("checking Simple-Avro vectors needs fastavro: pip install 'pyticdc[vectors]'") from None
    return fastavro


def _fastavro_schema(path: str) -> Any:
    return _fastavro().parse_schema(orjson.loads(Path(path).read_bytes()))


def _plain(value: Any) -> Any:
    """fastavro output in the vectors' JSON form: tuples → lists, bytes → hex."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def fastavro_native(data: bytes, schema_path: str) -> Any:
    """Decode one Simple Avro message with fastavro (record names kept), in the vectors' JSON form."""
    record = _fastavro().schemaless_reader(io.BytesIO(data), _fastavro_schema(schema_path), None,
                                        return_record_name=True, handle_unicode_errors="surrogateescape")
    return _plain(record)


def _wire_fields(wire: Wire) -> dict[str, Any]:
    return {name: getattr(wire, name) for name in Wire.__slots__}


def _compare_avro(case: dict[str, Any], meta: dict[str, Any], base: Path, message: Message) -> str | None:
    found = diff_bytes("key", expected_bytes(case.get("expected_key")), message.key)
    if found:
        return found
    expected = expected_bytes(case.get("expected_value"))
    actual = message.value
    if expected != actual:
        if expected is None or actual is None or len(expected) != len(actual):
            return diff_bytes("value", expected, actual)
        # Same length: equal modulo map entry order iff every field parses to the same value.
        try:
            want, got = _wire_fields(parse_avro(expected, tagged=True)), _wire_fields(parse_avro(actual, tagged=True))
        except DecodeError as exc:
            return f"value: {exc}"
        if want != got:
            return diff_bytes("value", expected, actual)
    if "decoded_native" in case and actual is not None:
        schema_path = str(base / meta.get("schema_file", "simple_avro_schema.message.json"))
        try:
            native = fastavro_native(actual, schema_path)
        except Exception as exc:  # noqa: BLE001 - any fastavro failure means our bytes are not valid Avro
            return f"value: fastavro cannot read it ({type(exc).__name__}: {exc})"
        found = diff_json(case["decoded_native"], native)
        if found:
            return f"decoded_native: {found}"
    return None


def check_encode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Run one encode case of either file."""
    messages = encode_case(case)
    mode = (case.get("compare") or {}).get("mode", "exact")
    if mode == "no_message" or ("expected_value" in case and case["expected_value"] is None
                                and "expected_messages" not in case):
        return None if not messages else f"expected no message, got {len(messages)}"
    if "expected_messages" in case:
        wanted = case["expected_messages"]
        if len(messages) != len(wanted):
            return f"expected {len(wanted)} messages, got {len(messages)}"
        for i, (want, got) in enumerate(zip(wanted, messages)):
            sub = {**case, "expected_key": {"hex": want["key_hex"]} if want.get("key_hex") is not None else None,
                   "expected_value": {"hex": want["value_hex"]}}
            found = (_compare_avro(sub, meta, base, got) if meta.get("encoding") == "avro"
                     else _compare_json(sub, got))
            if found:
                return f"message {i}: {found}"
        return None
    if len(messages) != 1:
        return f"expected 1 message, got {len(messages)}"
    if meta.get("encoding") == "avro":
        return _compare_avro(case, meta, base, messages[0])
    return _compare_json(case, messages[0])




def event_summary(event: Event) -> dict[str, Any]:
    """A decoded event as plain JSON values (for ``expected_decoded`` comparisons)."""
    if isinstance(event, RowChange):
        return {"kind": "row", "type": event.op.value.upper(), "op": event.op.value, "schema": event.schema,
                "table": event.table, "commit_ts": event.commit_ts, "table_id": event.physical_table_id,
                "schema_version": event.schema_version, "handle_key_only": event.handle_key_only,
                "claim_check_location": event.claim_check_location,
                "columns": jsonable(dict(event.columns)) if event.columns is not None else None,
                "pre_columns": jsonable(dict(event.pre_columns)) if event.pre_columns is not None else None}
    if isinstance(event, DDLEvent):
        return {"kind": "ddl", "query": event.query, "ddl_type": event.ddl_type, "commit_ts": event.commit_ts,
                "schema": event.schema, "table": event.table}
    if isinstance(event, Watermark):
        return {"kind": "watermark", "type": "WATERMARK", "resolved_ts": event.resolved_ts,
                "commit_ts": event.resolved_ts}
    assert isinstance(event, Bootstrap)
    return {"kind": "bootstrap", "type": "BOOTSTRAP", "schema": event.table_info.schema,
            "table": event.table_info.table, "build_ts": event.build_ts}


def check_decode(case: dict[str, Any], meta: dict[str, Any], base: Path) -> str | None:
    """Decode ``encoded_value`` and compare with ``decoded_native`` / ``expected_decoded``."""
    options, _ = _options(case)
    value = expected_bytes(case.get("encoded_value"))
    decoder = Decoder(options)
    for table in (case.get("input") or {}).get("tables", []):
        decoder.register_table(table_from_vector(table))
    try:
        events = decoder.decode(value, expected_bytes(case.get("encoded_key")))
    except DecodeError as exc:
        return f"decode failed: {exc}"
    if "decoded_native" in case and meta.get("encoding") == "avro" and value is not None:
        native = fastavro_native(value, str(base / meta.get("schema_file", "simple_avro_schema.message.json")))
        found = diff_json(case["decoded_native"], native)
        if found:
            return f"decoded_native: {found}"
    expected = case.get("expected_decoded")
    if expected is None:
        return None
    summary = event_summary(events[0])
    wire = orjson.loads(value) if meta.get("encoding") != "avro" and value else {}
    for key, want in expected.items():
        if key in summary:
            found = diff_json(want, summary[key], f"$.{key}")
        elif isinstance(wire, dict) and key in wire:
            found = diff_json(want, wire[key], f"$.{key}")
        else:
            found = f"$.{key}: not produced by the decoder"
        if found:
            return found
    return None
