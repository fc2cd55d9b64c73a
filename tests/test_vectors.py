"""Every golden vector case in ../shared/vectors, through the same runner as `pyticdc vectors check`."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import VECTORS
from pyticdc.codec import PROTOCOLS, canonical_protocol
from pyticdc.vectors import adapter_name, check_file
from pyticdc.vectors.inputs import events_from_vector

VECTOR_FILES = sorted(p for p in VECTORS.glob("*.json") if not p.name.endswith("schema.message.json"))


def test_the_vector_corpus_is_there() -> None:
    """A missing corpus must fail, not collect zero cases."""
    assert VECTORS.is_dir(), f"golden vectors not found at {VECTORS} (set PYTICDC_VECTORS)"
    assert len(VECTOR_FILES) >= 5, f"only {len(VECTOR_FILES)} vector files in {VECTORS}"


def _protocol_of(meta: dict[str, object]) -> str:
    name = adapter_name(meta)
    return "dispatch" if name == "dispatch" else canonical_protocol(str(meta["protocol"]))


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_vector_file(path: Path) -> None:
    meta = orjson.loads(path.read_bytes())
    protocol = _protocol_of(meta)
    results = check_file(path)
    failures = [f"{r.name}: {r.reason}" for r in results if not r.passed]
    assert protocol == "dispatch" or protocol in PROTOCOLS
    assert results, f"{path.name} has no cases"
    assert not failures, "\n".join(failures)


def test_vector_inputs_build_valid_events() -> None:
    """The normalized input layout converts into model events for every encode case with a table."""
    converted = 0
    for path in VECTOR_FILES:
        meta = orjson.loads(path.read_bytes())
        if "protocol" not in meta:
            continue  # dispatch and other non-codec layouts
        for case in meta.get("cases", []):
            inp = case.get("input")
            if case.get("direction", "encode") == "encode" and isinstance(inp, dict) and "events" in inp:
                if "column_groups" in str(inp):
                    continue  # craft's wire-model layout, converted by its adapter
                events = events_from_vector(inp)
                assert len(events) == len(inp["events"])
                converted += 1
    assert converted > 30
