"""``pyticdc convert`` and ``pyticdc inspect`` on capture files."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pyticdc.capture import read_capture, write_capture
from pyticdc.cli import main
from pyticdc.model import KafkaRecord
from pyticdc.sim.workload import History, WorkloadConfig, simulate
from test_conversion import FULL_OPTIONS, assert_replica_matches, replicate, source_records


@pytest.fixture(scope="module")
def history() -> History:
    return simulate(13, WorkloadConfig(transactions=30))


@pytest.fixture()
def capture(tmp_path: Path, history: History) -> Path:
    path = tmp_path / "open.jsonl"
    write_capture(path, source_records(history, "open-protocol", partitions=3))
    return path


def test_convert_detects_the_source_and_warns_before_converting(
    tmp_path: Path, capture: Path, history: History, capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "simple.parquet"
    assert main(["convert", str(capture), "--to", "simple", "--topic", "dst", "--partitions", "2", "-o", str(out),
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "detected source protocol open-protocol" in err
    warning_at = err.index("warning: simple carries more schema")
    assert warning_at < err.index("converted ")
    assert err.count("BOOTSTRAP built from the source's schema") == 1
    records = list(read_capture(out))
    assert {r.topic for r in records} == {"dst"}
    assert_replica_matches(replicate(records, "simple", {"dst": 2}), history, "open-protocol", "simple")


def test_convert_no_allow_loss_refuses(tmp_path: Path, capture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "canal.jsonl"
    assert main(["convert", str(capture), "--from", "open-protocol", "--to", "canal-json", "-o", str(out),
                 "--no-allow-loss"]) == 3
    err = capsys.readouterr().err
    assert "no resolved ts" in err and "refusing" in err
    assert not out.exists()
    assert main(["convert", str(capture), "--from", "open-protocol", "--to", "craft", "-o", str(out),
                 "--no-allow-loss", "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_convert_quarantines_bad_records(tmp_path: Path, history: History, capsys: pytest.CaptureFixture[str]) -> None:
    records = source_records(history, "craft", partitions=1)
    bad = KafkaRecord(topic="src", partition=0, offset=len(records), value=b"\x01\x02junk")
    source = tmp_path / "craft.jsonl"
    write_capture(source, [*records, bad])
    quarantine = tmp_path / "bad.jsonl"
    out = tmp_path / "open.jsonl"
    status = main(["convert", str(source), "--from", "craft", "--to", "open-protocol", "-o", str(out),
                   "--quarantine", str(quarantine), "--no-progress"])
    assert status == 1
    assert f"src/0@{len(records)}" in capsys.readouterr().err
    assert [r.value for r in read_capture(quarantine)] == [bad.value]
    assert_replica_matches(replicate(list(read_capture(out)), "open-protocol"), history, "craft", "open-protocol")


def test_convert_errors(tmp_path: Path, capture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(tmp_path / "missing.jsonl"), "--to", "craft", "-o", str(tmp_path / "x")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["convert", str(capture), "--to", "nope", "-o", str(tmp_path / "x")]) == 2
    assert "unknown protocol" in capsys.readouterr().err
    assert main(["convert", str(capture), "--to", "craft"]) == 2
    assert "--output" in capsys.readouterr().err
    assert main(["convert", str(capture), "--to", "craft", "--to-option", "bogus", "-o", str(tmp_path / "x")]) == 2
    assert "name=value" in capsys.readouterr().err


def test_inspect_text_json_and_plot(tmp_path: Path, capture: Path, history: History,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "lag.png"
    assert main(["inspect", str(capture), "--plot", str(plot), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "detected protocol open-protocol" in captured.err
    assert "sim.t_int" in captured.out and "DDL timeline" in captured.out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["inspect", str(capture), "--protocol", "open-protocol", "--json", "--no-progress"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["protocol"] == "open-protocol"
    assert data["global_resolved_ts"] == history.final_resolved_ts
    assert len(data["partitions"]) == 3 and data["bad_records"] == []


def test_inspect_reports_bad_records_with_status_1(tmp_path: Path, history: History,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "canal.jsonl"
    records = source_records(history, "canal-json", partitions=1)
    write_capture(path, [*records, KafkaRecord(topic="src", partition=0, offset=len(records), value=b"{not json")])
    assert main(["inspect", str(path), "--protocol", "canal-json", "--option", "enable-tidb-extension=true",
                 "--no-progress"]) == 1
    assert f"src/0@{len(records)}: canal-json" in capsys.readouterr().out
    assert FULL_OPTIONS["canal-json"]


def test_inspect_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["inspect"]) == 2
    assert "capture files" in capsys.readouterr().err
