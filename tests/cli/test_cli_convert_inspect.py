"""``pyticdc convert`` and ``pyticdc inspect`` on capture files."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pyticdc.cli import main
from pyticdc.io.capture import read_capture, write_capture
from pyticdc.model import KafkaRecord
from pyticdc.sim.workload import History, WorkloadConfig, simulate
from replays import FULL_OPTIONS, assert_replica_matches, replicate, source_records


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
    assert main(["convert", str(capture), "--output-protocol", "simple", "--output-topic", "dst", "--partitions", "2",
                 "-O", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "detected protocol open-protocol" in err
    warning_at = err.index("warning: simple carries more schema")
    assert warning_at < err.index("converted ")
    assert err.count("BOOTSTRAP built from the source's schema") == 1
    records = list(read_capture(out))
    assert {r.topic for r in records} == {"dst"}
    assert_replica_matches(replicate(records, "simple", {"dst": 2}), history, "open-protocol", "simple")


def test_convert_no_allow_loss_refuses(tmp_path: Path, capture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "canal.jsonl"
    assert main(["convert", str(capture), "-p", "open-protocol", "--output-protocol", "canal-json", "-O", str(out),
                 "--no-allow-loss"]) == 1
    err = capsys.readouterr().err
    assert "no resolved ts" in err
    assert err.splitlines()[-1] == "pyticdc convert: error: refusing to convert with losses (--no-allow-loss)"
    assert not out.exists()
    assert main(["convert", str(capture), "-p", "open-protocol", "--output-protocol", "craft", "-O", str(out),
                 "--no-allow-loss", "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_convert_quarantines_bad_records(tmp_path: Path, history: History, capsys: pytest.CaptureFixture[str]) -> None:
    records = source_records(history, "craft", partitions=1)
    bad = KafkaRecord(topic="src", partition=0, offset=len(records), value=b"\x01\x02junk")
    source = tmp_path / "craft.jsonl"
    write_capture(source, [*records, bad])
    quarantine = tmp_path / "bad.jsonl"
    out = tmp_path / "open.jsonl"
    status = main(["convert", str(source), "--protocol", "craft", "--output-protocol", "open-protocol", "-O", str(out),
                   "--quarantine", str(quarantine), "--no-progress"])
    assert status == 1
    assert f"src/0@{len(records)}" in capsys.readouterr().err
    assert [r.value for r in read_capture(quarantine)] == [bad.value]
    assert_replica_matches(replicate(list(read_capture(out)), "open-protocol"), history, "craft", "open-protocol")


def test_convert_errors(tmp_path: Path, capture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def error() -> str:
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("pyticdc convert: error: ")
        return lines[0]

    out = str(tmp_path / "x.jsonl")
    assert main(["convert", str(tmp_path / "missing.jsonl"), "--output-protocol", "craft", "-O", out]) == 2
    assert "no such capture file" in error()
    assert main(["convert", str(capture), "--output-protocol", "nope", "-O", out]) == 2
    assert "unknown protocol 'nope'" in error()
    assert main(["convert", str(capture), "--output-protocol", "craft"]) == 2
    assert "-O/--output FILE or --output-bootstrap-servers" in error()
    assert main(["convert", str(capture), "--output-protocol", "craft", "--output-option", "bogus", "-O", out]) == 2
    assert "--output-option takes NAME=VALUE, got 'bogus'" in error()
    # -o is the codec option now; the old habit of -o FILE gets a pointer to -O.
    assert main(["convert", str(capture), "--output-protocol", "craft", "-o", out]) == 2
    assert "(the output file is -O/--output)" in error()
    assert main(["convert", str(capture), "-b", "localhost:9", "-t", "x", "--output-protocol", "craft", "-O", out]) == 2
    assert "not both" in error()
    assert not Path(out).exists()


def test_inspect_text_json_and_plot(tmp_path: Path, capture: Path, history: History,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "lag.png"
    assert main(["inspect", str(capture), "--plot", str(plot), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "detected protocol open-protocol" in captured.err
    assert "sim.t_int" in captured.out and "DDL timeline" in captured.out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["inspect", str(capture), "--protocol", "open-protocol", "--output-format", "json",
                 "--no-progress"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["protocol"] == "open-protocol"
    assert data["global_resolved_ts"] == history.final_resolved_ts
    assert len(data["partitions"]) == 3 and data["bad_records"] == []


def test_inspect_reports_bad_records_with_status_1(tmp_path: Path, history: History,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "canal.jsonl"
    records = source_records(history, "canal-json", partitions=1)
    write_capture(path, [*records, KafkaRecord(topic="src", partition=0, offset=len(records), value=b"{not json")])
    assert main(["inspect", str(path), "-p", "canal-json", "-o", "enable-tidb-extension=true",
                 "--no-progress"]) == 1
    assert f"src/0@{len(records)}: canal-json" in capsys.readouterr().out
    assert FULL_OPTIONS["canal-json"]


def test_inspect_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err == f"pyticdc inspect: error: no such capture file: {tmp_path / 'missing.jsonl'}\n"
    assert main(["inspect"]) == 2
    assert capsys.readouterr().err == ("pyticdc inspect: error: give capture files to read, or -b/--bootstrap-servers "
                                       "with -t/--topic\n")
    assert main(["inspect", "-b", "localhost:9"]) == 2
    assert "-t/--topic is required with -b/--bootstrap-servers" in capsys.readouterr().err
