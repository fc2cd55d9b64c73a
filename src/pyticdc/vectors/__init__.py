"""Golden-vector runner: checks cases in the ``shared/vectors`` layout against the codecs."""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pyticdc.errors import ConfigError
from pyticdc.vectors.generic import check_encode

__all__ = ["CaseResult", "adapter_name", "check_file", "check_paths", "load_vector_file", "vector_files"]


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


def load_vector_file(path: Path) -> dict[str, Any]:
    """A vector file's JSON, checked to be one: ConfigError naming the file and why it is not."""
    try:
        meta = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a vector file (not one JSON document: {exc})") from None
    cases = meta.get("cases") if isinstance(meta, dict) else None
    if not isinstance(cases, list) or not cases or not all(isinstance(c, dict) for c in cases):
        raise ConfigError(f'{path}: not a vector file (a JSON object with a non-empty "cases" list of objects)')
    try:
        adapter_name(meta)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return dict(meta)


def vector_files(paths: Iterable[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Every vector file under ``paths`` (files, or directories of ``*.json``), loaded and checked before any case
    runs; ConfigError for a path that is not a vector file or a directory without one."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for path in paths:
        if not path.is_dir():
            if not _is_schema_file(path):  # named beside the cases (a shell glob), as the old runner took it
                found.append((path, load_vector_file(path)))
            continue
        files = [f for f in sorted(path.glob("*.json")) if not _is_schema_file(f)]
        if not files:
            raise ConfigError(f"{path}: no vector files (*.json) in this directory")
        found.extend((file, load_vector_file(file)) for file in files)
    if not found:
        raise ConfigError("no vector files among the paths given")
    return found


def _is_schema_file(path: Path) -> bool:
    # The Simple Avro schema the Avro cases name (schema_file), not a case file.
    return path.name.endswith("schema.message.json")


def check_file(path: Path, meta: dict[str, Any] | None = None) -> list[CaseResult]:
    """Run every case of one vector file (``meta``: its JSON, when already loaded)."""
    if meta is None:
        meta = load_vector_file(path)
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
    """Run every case of every vector file under ``paths`` (files or directories; the Simple Avro schema file
    ``*schema.message.json`` beside them is not a case file); ConfigError, before any case runs, for a path that
    is not a vector file."""
    results: list[CaseResult] = []
    for file, meta in vector_files(paths):
        results.extend(check_file(file, meta))
    return results
