"""``--engine delta-spark`` and ``--apply-engine delta-spark`` without the delta-spark jar: a usage error, no Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.cli import main


@pytest.mark.parametrize("command", ["replicate", "selftest"])
def test_delta_spark_without_its_jar_is_one_usage_line_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str,
) -> None:
    monkeypatch.setenv("PYTICDC_JARS", str(tmp_path))  # a folder without jars
    capture = tmp_path / "c.jsonl"
    capture.write_text("")
    args = (["replicate", "--from", str(capture), "-p", "canal-json", "-o", "enable-tidb-extension=true", "--to",
             str(tmp_path / "wh"), "--engine", "delta-spark"] if command == "replicate"
            else ["selftest", "--engine", "spark", "--apply-engine", "delta-spark", "--seeds", "1"])
    assert main(args) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "delta-spark jar" in lines[0] and "io.delta:delta-spark_2.13" in lines[0]
    assert not (tmp_path / "wh").exists()
