"""Comparisons the vector runner reports: first differing byte, first differing JSON path."""

from __future__ import annotations

from enum import Enum
from typing import Any

import orjson

__all__ = ["describe", "diff_bytes", "diff_json", "expected_bytes", "json_span"]


def expected_bytes(spec: Any) -> bytes | None:
    """Bytes of an ``expected_*`` field: text (UTF-8), ``{"hex": …}``, or None."""
    if spec is None:
        return None
    if isinstance(spec, dict):
        return bytes.fromhex(spec["hex"])
    if isinstance(spec, str):
        return spec.encode("utf-8")
    raise ValueError(f"unsupported expectation {spec!r}")


def jsonable(value: Any) -> Any:
    """Decoded model values as plain JSON values: UTF-8 bytes as text, other bytes as ``{"hex": …}``."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": value.hex()}
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value


def describe(data: bytes | None, at: int, width: int = 24) -> str:
    """A short window of ``data`` around byte ``at`` for a failure line."""
    if data is None:
        return "None"
    window = data[max(0, at - 4): at + width]
    return repr(window)


def diff_bytes(what: str, expected: bytes | None, actual: bytes | None) -> str | None:
    """None if equal, else where they first differ."""
    if expected == actual:
        return None
    if expected is None or actual is None:
        return f"{what}: expected {describe(expected, 0)}, got {describe(actual, 0)}"
    limit = min(len(expected), len(actual))
    at = next((i for i in range(limit) if expected[i] != actual[i]), limit)
    return (f"{what}: first differing byte {at} (expected {len(expected)} bytes, got {len(actual)}): "
            f"expected …{describe(expected, at)}, got …{describe(actual, at)}")


def diff_json(expected: Any, actual: Any, path: str = "$") -> str | None:
    """None if semantically equal JSON values, else the first differing JSON path."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            if key not in actual:
                return f"{path}.{key}: missing"
            found = diff_json(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        for key in actual:
            if key not in expected:
                return f"{path}.{key}: unexpected"
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{path}: expected {len(expected)} items, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = diff_json(e, a, f"{path}[{i}]")
            if found:
                return found
        return None
    # JSON has one number type: 1 == 1.0, but a bool is not a number.
    if type(expected) is bool or type(actual) is bool:
        same = type(expected) is type(actual) and expected == actual
    else:
        same = expected == actual
    return None if same else f"{path}: expected {expected!r}, got {actual!r}"


def _skip_value(text: bytes, i: int) -> int:
    """Index just past the JSON value starting at ``i`` (text is valid JSON)."""
    depth = 0
    in_string = False
    n = len(text)
    start = i
    while i < n:
        c = text[i]
        if in_string:
            if c == 0x5C:
                i += 2
                continue
            if c == 0x22:
                in_string = False
                if depth == 0:
                    return i + 1
        elif c == 0x22:
            in_string = True
        elif c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and c in b",}" and i > start:
            return i
        i += 1
    return i


def json_span(text: bytes, key: str) -> tuple[int, int] | None:
    """Byte span of the value of top-level ``key`` in a JSON object text, or None."""
    needle = b'"' + key.encode() + b'":'
    depth = 0
    in_string = False
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if in_string:
            if c == 0x5C:
                i += 2
                continue
            if c == 0x22:
                in_string = False
        elif c == 0x22:
            if depth == 1 and text.startswith(needle, i):
                begin = i + len(needle)
                return begin, _skip_value(text, begin)
            in_string = True
        elif c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
        i += 1
    return None


def diff_unordered(what: str, expected: bytes, actual: bytes, keys: list[str]) -> str | None:
    """Byte comparison where the listed top-level objects may have any key order."""
    for path in keys:
        key = path.removeprefix("$.")
        span_e, span_a = json_span(expected, key), json_span(actual, key)
        if span_e is None or span_a is None:
            continue
        obj_e = orjson.loads(expected[span_e[0]:span_e[1]])
        obj_a = orjson.loads(actual[span_a[0]:span_a[1]])
        found = diff_json(obj_e, obj_a, path)
        if found:
            return f"{what}: {found}"
        expected = expected[:span_e[0]] + b"{}" + expected[span_e[1]:]
        actual = actual[:span_a[0]] + b"{}" + actual[span_a[1]:]
    return diff_bytes(what, expected, actual)
