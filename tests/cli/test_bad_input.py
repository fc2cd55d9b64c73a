"""Every command end to end on broken input: exit status, stderr, nothing lost, nothing partial (issue 14)."""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pyticdc.cli import main
from pyticdc.io.capture import read_capture, write_capture
from pyticdc.model import KafkaRecord
from pyticdc.replica import read_table
from pyticdc.sim.workload import History, WorkloadConfig, simulate
from replays import source_records

GARBAGE = b'{"topic": "src", "partition": 0, "offset": 3, "value": "not base64!"'
NOT_JSON = b"this line is not JSON"


@pytest.fixture(scope="module")
def history() -> History:
    return simulate(29, WorkloadConfig(transactions=25))


@pytest.fixture(scope="module")
def records(history: History) -> list[KafkaRecord]:
    return source_records(history, "canal-json", partitions=2)


@pytest.fixture()
def clean(tmp_path: Path, records: list[KafkaRecord]) -> Path:
    path = tmp_path / "clean.jsonl"
    write_capture(path, records)
    return path


@pytest.fixture()
def broken(tmp_path: Path, clean: Path) -> Path:
    """The clean capture with a non-JSON line in the middle and a truncated last line."""
    lines = clean.read_bytes().splitlines(keepends=True)
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"".join([*lines[:5], NOT_JSON + b"\n", *lines[5:], GARBAGE]))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    # A few lines at most: the detected protocol, loss warnings, up to three examples, the error line.
    assert len(captured.err.splitlines()) <= 8, captured.err
    return status, captured.out, captured.err


def error_line(err: str, command: str) -> str:
    last = err.splitlines()[-1]
    assert last.startswith(f"pyticdc {command}: error: "), err
    return last


CANAL = ("-p", "canal-json", "-o", "enable-tidb-extension=true")


# --------------------------------------------------------------------------- decode / inspect / convert
def test_decode_prints_every_good_event_and_each_bad_line_as_an_error(
    capsys: pytest.CaptureFixture[str], clean: Path, broken: Path,
) -> None:
    status, out, _ = run(capsys, "decode", str(clean), *CANAL)
    assert status == 0
    good = out.split("\n")[:-1]
    status, out, err = run(capsys, "decode", str(broken), *CANAL)
    assert status == 1
    error_line(err, "decode")
    objects = [orjson.loads(line) for line in out.split("\n")[:-1]]
    errors = [o for o in objects if o["kind"] == "error"]
    assert sorted(base64.b64decode(e["raw_value"]["base64"]) for e in errors) == sorted([NOT_JSON, GARBAGE])
    assert [orjson.dumps({k: v for k, v in o.items() if k != "topic"}) for o in objects if o["kind"] != "error"] == \
        [orjson.dumps({k: v for k, v in orjson.loads(g).items() if k != "topic"}) for g in good]


def test_inspect_summarizes_the_good_records_and_lists_the_bad_lines(
    capsys: pytest.CaptureFixture[str], clean: Path, broken: Path,
) -> None:
    status, out, _ = run(capsys, "inspect", str(clean), *CANAL, "--output-format", "json")
    assert status == 0
    want = orjson.loads(out)
    status, out, err = run(capsys, "inspect", str(broken), *CANAL, "--output-format", "json")
    assert status == 1
    assert "2 records did not decode" in error_line(err, "inspect")
    got = orjson.loads(out)
    assert (got["rows"], got["ddls"], got["watermarks"]) == (want["rows"], want["ddls"], want["watermarks"])
    assert got["tables"] == want["tables"]
    bad = got["bad_records"]
    assert [(b["partition"], b["topic"]) for b in bad] == [(-1, f"file:{broken}")] * 2
    offsets = {b["offset"] for b in bad}
    data = broken.read_bytes()
    assert {data[o:o + len(NOT_JSON)] for o in offsets} >= {NOT_JSON}


def test_convert_writes_the_good_records_completely_and_quarantines_the_bad_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clean: Path, broken: Path,
) -> None:
    want_path, got_path, bad_path = tmp_path / "want.jsonl", tmp_path / "got.jsonl", tmp_path / "bad.jsonl"
    assert run(capsys, "convert", str(clean), *CANAL, "--output-protocol", "craft", "-O", str(want_path))[0] == 0
    status, _, err = run(capsys, "convert", str(broken), *CANAL, "--output-protocol", "craft", "-O", str(got_path),
                         "--quarantine", str(bad_path))
    assert status == 1
    assert "2 source records did not decode" in error_line(err, "convert")
    assert got_path.read_bytes() == want_path.read_bytes()
    assert sorted(r.value or b"" for r in read_capture(bad_path)) == sorted([NOT_JSON, GARBAGE])
    assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []


def test_convert_failing_midway_leaves_no_output_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clean: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pyticdc.io.capture import CaptureWriter

    write = CaptureWriter.write

    def failing(self: CaptureWriter, record: KafkaRecord) -> None:
        if self.count == 3:
            raise OSError("disk full")
        write(self, record)

    monkeypatch.setattr(CaptureWriter, "write", failing)
    out = tmp_path / "out.jsonl"
    status, _, err = run(capsys, "convert", str(clean), *CANAL, "--output-protocol", "craft", "-O", str(out))
    assert status == 1 and "disk full" in error_line(err, "convert")
    assert list(tmp_path.iterdir()) == [clean]


def test_a_wrong_protocol_is_an_error_not_an_empty_success(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clean: Path,
) -> None:
    status, _, err = run(capsys, "inspect", str(clean), "-p", "open-protocol")
    assert status == 1
    error_line(err, "inspect")
    status, _, err = run(capsys, "convert", str(clean), "-p", "craft", "--output-protocol", "simple", "-O",
                         str(tmp_path / "x.jsonl"))
    assert status == 1
    error_line(err, "convert")


def test_bad_options_fail_before_anything_is_read_or_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clean: Path,
) -> None:
    out = tmp_path / "out.jsonl"
    for argv in (["decode", str(clean), "-p", "canal-json", "-o", "bogus=1", "-O", str(out)],
                 ["inspect", str(clean), "-p", "canal-json", "-o", "bogus=1"],
                 ["convert", str(clean), "-p", "canal-json", "-o", "bogus=1", "--output-protocol", "craft", "-O",
                  str(out)],
                 ["convert", str(clean), "--output-protocol", "craft", "--output-option", "bogus=1", "-O", str(out)],
                 ["replicate", "--from", str(clean), *CANAL, "-o", "bogus=1", "--to", str(tmp_path / "wh")],
                 ["replicate", "--from", str(clean), *CANAL, "--time-zone", "Mars/Base", "--to", str(tmp_path / "wh")],
                 ["replicate", "--from", str(clean), *CANAL, "--table", "a.[", "--to", str(tmp_path / "wh")],
                 ["inspect", "--value", str(tmp_path / "missing.bin")]):
        status, _, err = run(capsys, *argv)
        assert status == 2, argv
        assert len(err.splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl"]


# --------------------------------------------------------------------------- raw inputs (finding 6)
def _raw_lines(tmp_path: Path, records: list[KafkaRecord]) -> Path:
    # One partition's messages, one per line, as TiCDC's storage sink or a test resource would hold them.
    path = tmp_path / "messages.txt"
    path.write_bytes(b"".join((r.value or b"") + b"\n" for r in records if r.partition == 0))
    return path


def test_every_reading_command_takes_raw_message_files_and_stdin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, records: list[KafkaRecord], monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = _raw_lines(tmp_path, records)
    messages = [r for r in records if r.partition == 0]
    status, out, _ = run(capsys, "inspect", "--lines", str(lines), *CANAL, "--output-format", "json")
    assert status == 0
    summary = orjson.loads(out)
    assert summary["records"] == len(messages)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines.read_bytes())))
    status, out, _ = run(capsys, "inspect", "--lines", "-", *CANAL, "--output-format", "json")
    assert status == 0 and orjson.loads(out)["rows"] == summary["rows"]
    out_path = tmp_path / "converted.jsonl"
    status, _, err = run(capsys, "convert", "--lines", str(lines), *CANAL, "--output-protocol", "craft", "-O",
                         str(out_path))
    assert status == 0, err
    assert f"({summary['rows']} row changes after de-duplication" in err
    # A capture on standard input.
    capture = tmp_path / "clean.jsonl"
    write_capture(capture, records)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(capture.read_bytes())))
    status, out, _ = run(capsys, "inspect", "-", *CANAL, "--output-format", "json")
    assert status == 0 and orjson.loads(out)["records"] == len(records)


def test_a_raw_file_given_as_a_capture_says_how_to_read_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, records: list[KafkaRecord],
) -> None:
    lines = _raw_lines(tmp_path, records)
    status, _, err = run(capsys, "inspect", str(lines))
    assert status == 2
    assert "--lines FILE" in error_line(err, "inspect")


# --------------------------------------------------------------------------- replicate (Spark)
def _replica(warehouse: Path) -> dict[str, list[dict[str, Any]]]:
    tables = {}
    for schema_dir in sorted(p for p in warehouse.iterdir() if not p.name.startswith("_")):
        for table_dir in sorted(schema_dir.iterdir()):
            rows = read_table(str(table_dir)).to_pylist()
            tables[f"{schema_dir.name}.{table_dir.name}"] = sorted(rows, key=repr)
    return tables


def _quarantine(warehouse: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = read_table(str(warehouse / "_pyticdc" / "quarantine")).to_pylist()
    return rows


@pytest.mark.spark
def test_replicate_quarantines_bad_lines_and_applies_every_good_record(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, clean: Path, broken: Path,
) -> None:
    assert run(capsys, "replicate", "--from", str(clean), *CANAL, "--to", str(tmp_path / "want"))[0] == 0
    status, out, err = run(capsys, "replicate", "--from", str(broken), *CANAL, "--to", str(tmp_path / "got"))
    assert status == 1
    assert "2 records did not decode" in error_line(err, "replicate")
    assert "2 records quarantined" in out
    assert _replica(tmp_path / "got") == _replica(tmp_path / "want")
    bad = _quarantine(tmp_path / "got")
    assert sorted(b["value"] for b in bad) == sorted([NOT_JSON, GARBAGE])
    assert {b["partition"] for b in bad} == {-1} and all(b["reason"].startswith("capture:") for b in bad)


@pytest.mark.spark
def test_replicate_with_the_wrong_protocol_quarantines_everything_and_fails(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, clean: Path, records: list[KafkaRecord],
) -> None:
    # Debezium reading Canal-JSON: whatever the decoder makes of it, nothing may vanish silently.
    warehouse = tmp_path / "wh"
    status, _, err = run(capsys, "replicate", "--from", str(clean), "-p", "debezium", "-o",
                           "enable-tidb-extension=true", "--to", str(warehouse))
    assert status == 1
    error_line(err, "replicate")
    assert len(_quarantine(warehouse)) == len(records)
    # Open Protocol on Canal-JSON: every record quarantined, exit 1 (it was 0).
    status, _, err = run(capsys, "replicate", "--from", str(clean), "-p", "open-protocol",
                         "--to", str(tmp_path / "wh2"))
    assert status == 1 and f"{len(records)} records did not decode" in error_line(err, "replicate")
    # The first warehouse is Debezium's: continuing it from Canal-JSON is refused before Spark runs a job.
    status, _, err = run(capsys, "replicate", "--from", str(clean), *CANAL, "--to", str(warehouse))
    assert status == 2 and "debezium changefeed" in error_line(err, "replicate")


@pytest.mark.spark
def test_replicate_records_of_no_table_are_quarantined(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    nameless = [KafkaRecord(topic="t", partition=0, offset=i, value=b'{"type":"INSERT","data":[{"x":1}]}')
                for i in range(5)]
    write_capture(tmp_path / "nameless.jsonl", nameless)
    warehouse = tmp_path / "wh"
    status, _, err = run(capsys, "replicate", "--from", str(tmp_path / "nameless.jsonl"), "-p", "debezium",
                           "-o", "enable-tidb-extension=true", "--to", str(warehouse))
    assert status == 1 and "5 records did not decode" in error_line(err, "replicate")
    assert sorted(b["offset"] for b in _quarantine(warehouse)) == list(range(5))


@pytest.mark.spark
def test_replicate_raw_lines_and_a_table_filter_matching_nothing(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, records: list[KafkaRecord],
) -> None:
    lines = _raw_lines(tmp_path, [r for r in records if r.partition == 0])
    status, out, err = run(capsys, "replicate", "--lines", str(lines), *CANAL, "--to", str(tmp_path / "wh"))
    assert status == 0, err
    assert "0 records quarantined" in out and _replica(tmp_path / "wh")
    status, out, err = run(capsys, "replicate", "--lines", str(lines), *CANAL, "--to", str(tmp_path / "wh2"),
                           "--table", "nosuch.*")
    assert status == 1
    line = error_line(err, "replicate")
    assert "--table nosuch.* matched none of the tables read" in line and "sim." in line
    assert "of tables --table leaves out" in out


@pytest.mark.spark
@pytest.mark.parametrize("engine", ["driver", "distributed"])
def test_replicate_an_all_garbage_capture_quarantines_every_line(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, engine: str,
) -> None:
    # Not one record: neither the format detection nor the partition scan may end the run before the
    # lines are quarantined (it used to say "no records to replicate", or "first line is not JSON").
    lines = [NOT_JSON, GARBAGE, b"\x00\x01 binary"]
    capture = tmp_path / "garbage.jsonl"
    capture.write_bytes(b"\n".join(lines) + b"\n")
    warehouse = tmp_path / "wh"
    status, _, err = run(capsys, "replicate", "--from", str(capture), *CANAL, "--to", str(warehouse),
                         "--engine", engine)
    assert status == 1
    assert "3 records did not decode" in error_line(err, "replicate")
    bad = sorted(_quarantine(warehouse), key=lambda b: b["offset"])
    starts = [0, len(NOT_JSON) + 1, len(NOT_JSON) + len(GARBAGE) + 2]
    assert [(b["value"], b["offset"], b["partition"]) for b in bad] == [(v, s, -1) for v, s in zip(lines, starts)]
    assert all(b["topic"] == f"file:{capture}" and b["reason"].startswith("capture:") for b in bad)
    assert _replica(warehouse) == {}


@pytest.mark.spark
@pytest.mark.parametrize(("engine", "name"), [("driver", "capture.parquet"), ("distributed", "capture.parquet"),
                                              ("driver", "capture.bin"), ("distributed", "capture.bin")])
def test_replicate_quarantines_a_parquet_row_without_its_partition_by_its_row(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, clean: Path, engine: str, name: str,
) -> None:
    # A Parquet capture row with a null partition is no Kafka record: it is quarantined with its row number and
    # value (it used to end the run with a TypeError), and every other record is applied. The reason is the
    # reader's, whatever the file's name (capture.bin, read with --capture-format parquet, used to get a JSON
    # Lines wording: the engines worded it again from the bytes).
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pyticdc.io.capture import records_to_arrow

    records = list(read_capture(clean))
    table = pa.Table.from_batches([records_to_arrow(records)])
    partitions = table.column("partition").to_pylist()
    partitions[7] = None
    table = table.set_column(table.schema.get_field_index("partition"), "partition", pa.array(partitions, pa.int32()))
    capture = tmp_path / name
    pq.write_table(table, capture, row_group_size=10)
    good = tmp_path / "good.parquet"
    pq.write_table(table.filter(pa.array([i != 7 for i in range(len(records))])), good)
    warehouse = tmp_path / "got"
    assert run(capsys, "replicate", "--from", str(good), *CANAL, "--to", str(tmp_path / "want"),
               "--engine", engine)[0] == 0
    status, _, err = run(capsys, "replicate", "--from", str(capture), *CANAL, "--to", str(warehouse),
                         "--engine", engine, "--capture-format", "parquet")
    assert status == 1 and "1 records did not decode" in error_line(err, "replicate")
    assert _replica(warehouse) == _replica(tmp_path / "want")
    [bad] = _quarantine(warehouse)
    assert (bad["topic"], bad["partition"], bad["offset"], bad["key"], bad["value"]) == (
        f"file:{capture}", -1, 7, None, records[7].value)
    assert bad["reason"] == f"capture: {capture} (row 7): a null topic, partition or offset (a record has all)"
