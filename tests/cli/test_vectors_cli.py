"""``pyticdc vectors check`` on files that are not vector files (issue 14, finding 8): one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyticdc.cli import main


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyticdc vectors: error: "), captured.err
    assert "passed" not in captured.out and "Traceback" not in captured.err
    return lines[0]


def test_non_vector_inputs_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = tmp_path / "sim.jsonl"
    lines.write_text('{"topic":"t","partition":0}\n{"topic":"t","partition":1}\n')
    assert main(["vectors", "check", str(lines)]) == 2
    assert "sim.jsonl: not a vector file" in _one_error(capsys)

    others = tmp_path / "others"
    others.mkdir()
    (others / "a.json").write_text(json.dumps({"payload": {"id": 1}}))
    (others / "b.json").write_text(json.dumps([1, 2]))
    assert main(["vectors", "check", str(others)]) == 2
    assert "a.json: not a vector file" in _one_error(capsys)

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["vectors", "check", str(empty)]) == 2
    assert "no vector files" in _one_error(capsys)

    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"protocol": "avro-confluent", "cases": [{"name": "x"}]}))
    assert main(["vectors", "check", str(unknown)]) == 2
    assert "unknown vector file kind" in _one_error(capsys)


def test_a_bad_file_stops_before_any_case_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "dispatch.json"
    good.write_text(json.dumps({"kind": "partition_dispatch", "cases": [{"name": "never run"}]}))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff not json")
    assert main(["vectors", "check", str(good), str(bad)]) == 2
    assert "bad.json: not a vector file (not one JSON document" in _one_error(capsys)


def test_a_glob_over_the_corpus_skips_the_avro_schema_file(capsys: pytest.CaptureFixture[str]) -> None:
    """`vectors check ../shared/vectors/*.json` names the Simple Avro schema too: it is not a case file."""
    from conftest import VECTORS

    files = sorted(str(p) for p in VECTORS.glob("*.json"))
    assert any(f.endswith("schema.message.json") for f in files)
    assert main(["vectors", "check", *files]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("0 failed") and int(out.split()[-4]) > 0
