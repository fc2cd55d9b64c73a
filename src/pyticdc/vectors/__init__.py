"""Golden-vector runner: checks cases in the ``shared/vectors`` layout against the codecs."""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pyticdc.vectors.generic import check_encode

__all__ = ["CaseResult", "adapter_name", "check_file", "check_paths"]


@dataclass(frozen=True)
class CaseResult:
    """Outcome of one vector case."""

    file: str
    name: str
    passed: bool
    reason: str = ""


_PROTOCOL_ADAPTERS = {
    "open": "open_protocol", "open-protocol": "open_protocol", "canal-json": "canal_json",
    "craft": "craft", "debezium": "debezium", "simple": "simple",
}


def adapter_name(meta: dict[str, Any]) -> str:
    """Which adapter module handles a vector file (by its ``protocol`` / ``kind``)."""
    if meta.get("kind") == "partition_dispatch":
        return "dispatch"
    protocol = meta.get("protocol", "")
    if protocol not in _PROTOCOL_ADAPTERS:
        raise ValueError(f"unknown vector file kind (protocol={protocol!r}, kind={meta.get('kind')!r})")
    return _PROTOCOL_ADAPTERS[protocol]


def _run_case(adapter: Any, meta: dict[str, Any], case: dict[str, Any], base: Path) -> str | None:
    if hasattr(adapter, "check_case"):
        result: str | None = adapter.check_case(case, meta, base)
        return result
    direction = case.get("direction", "encode")
    if direction == "decode":
        result = adapter.check_decode(case, meta, base)
        return result
    if hasattr(adapter, "check_encode"):
        result = adapter.check_encode(case, meta, base)
        return result
    return check_encode(adapter.PROTOCOL, case)


def check_file(path: Path) -> list[CaseResult]:
    """Run every case of one vector file."""
    meta = orjson.loads(path.read_bytes())
    cases = meta.get("cases", [])
    name = adapter_name(meta)
    try:
        adapter = importlib.import_module(f"pyticdc.vectors.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"pyticdc.vectors.{name}":
            raise
        adapter = None
    results = []
    for case in cases:
        case_name = case.get("name") or case.get("column_ddl") or "?"
        if adapter is None:
            results.append(CaseResult(path.name, case_name, False, "not implemented"))
            continue
        try:
            reason = _run_case(adapter, meta, case, path.parent)
        except NotImplementedError as exc:
            reason = f"not implemented ({exc})" if str(exc) else "not implemented"
        except Exception as exc:  # noqa: BLE001 - a crash is a failing case, reported with its cause
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            reason = f"{type(exc).__name__}: {exc} ({Path(frame.filename).name}:{frame.lineno})"
        results.append(CaseResult(path.name, case_name, reason is None, reason or ""))
    return results


def check_paths(paths: Iterable[Path]) -> list[CaseResult]:
    """Run every case of every vector file under ``paths`` (files or directories)."""
    results: list[CaseResult] = []
    for path in paths:
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        for file in files:
            if file.name.endswith("schema.message.json"):
                continue  # the Simple Avro schema, not a case file
            results.extend(check_file(file))
    return results
