"""``pyticdc replicate`` of TiCDC's default Canal-JSON and Debezium (no watermarks), and operated streaming."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pyticdc.cli import main
from pyticdc.codec import make_encoder
from pyticdc.io.capture import write_capture
from pyticdc.model import physical_ms
from pyticdc.replica import compare_replica, read_table
from pyticdc.replica.check import projection_options
from pyticdc.replica.progress import read_progress
from pyticdc.replica.store import DeltaStore
from pyticdc.routing import Router
from pyticdc.sim import TruthProjector, WorkloadConfig, simulate

pytestmark = pytest.mark.spark


def numbered(records: Any) -> list[Any]:
    """Records with offsets 0, 1, ... per partition, in the order written."""
    import msgspec

    offsets: dict[int, int] = {}
    out = []
    for record in records:
        out.append(msgspec.structs.replace(record, offset=offsets.get(record.partition, 0)))
        offsets[record.partition] = offsets.get(record.partition, 0) + 1
    return out

_COMMIT_COLUMNS = ("_commit_ts", "_commit_time")


def _contents(warehouse: Path) -> dict[tuple[str, str], list[str]]:
    out = {}
    for key, entry in read_progress(DeltaStore(warehouse)).tables.items():
        table = read_table(str(warehouse / entry.path))
        rows = table.select([n for n in table.column_names if n not in _COMMIT_COLUMNS]).to_pylist()
        out[key] = sorted(repr(sorted(row.items())) for row in rows)
    return out


def _big_unsigned(warehouse: Path) -> int:
    # BIGINT UNSIGNED values from 2**63 up: Debezium without the extension carries them as their int64 twin.
    count = 0
    for entry in read_progress(DeltaStore(warehouse)).tables.values():
        table = read_table(str(warehouse / entry.path))
        for name in ("seq", "c_bigint_u"):
            if name in table.column_names:
                count += sum(1 for v in table.column(name).to_pylist() if v is not None and v >= 2**63)
    return count


@pytest.mark.parametrize("protocol", ["canal-json", "debezium"])
def test_produce_without_the_extension_replicates_like_with_it(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], protocol: str) -> None:
    contents = {}
    for extension in (True, False):
        capture = tmp_path / f"{extension}.jsonl"
        options = ["-o", "enable-tidb-extension=true"] if extension else []
        assert main(["produce", "-p", protocol, *options, "--seed", "7", "--transactions", "120", "--partitions", "3",
                     "--start-ms", "1700000000000", "-O", str(capture)]) == 0
        warehouse = tmp_path / f"wh-{extension}"
        assert main(["replicate", "--from", str(capture), "-p", protocol, *options, "--to", str(warehouse),
                     "--batch-records", "300", "--engine", "auto"]) == 0
        err = capsys.readouterr().err
        assert ("consistency: batch" in err) is not extension
        assert read_progress(DeltaStore(warehouse)).source.get("consistency", "watermark") == (
            "watermark" if extension else "batch")
        contents[extension] = _contents(warehouse)
        assert _big_unsigned(warehouse) >= 3
    assert contents[True] and any(contents[True].values())
    assert contents[False] == contents[True]


def test_debezium_without_the_extension_replicates_what_it_carries(spark: Any, tmp_path: Path) -> None:
    # Debezium without the extension carries some values differently (DECIMAL as a double; BIGINT UNSIGNED above
    # 2**63 as its signed twin and binary columns as base64 "string", both read back from the DDL's types), so
    # the replica is compared with the truth as the protocol carries it, read back (projection_options).
    history = simulate(7, WorkloadConfig(transactions=120))
    fixed = physical_ms(history.final_resolved_ts)
    router = Router("debezium", {}, default_topic="cdc", partitions=3, clock=lambda: fixed)
    capture = tmp_path / "dbz.jsonl"
    write_capture(capture, numbered(router.route(history.events)))
    warehouse = tmp_path / "wh"
    assert main(["replicate", "--from", str(capture), "-p", "debezium", "--to", str(warehouse),
                 "--batch-records", "300"]) == 0
    projector = TruthProjector(make_encoder("debezium", projection_options("debezium", {}), clock=lambda: fixed))
    truth = history.truth_at(history.final_resolved_ts)
    assert compare_replica(warehouse, projector.snapshot(truth), {k: t.info for k, t in truth.items()}) is None


def test_require_watermarks_refuses_and_distributed_says_why(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.jsonl"
    assert main(["produce", "-p", "debezium", "--transactions", "5", "-O", str(capture)]) == 0
    capsys.readouterr()
    assert main(["replicate", "--from", str(capture), "-p", "debezium", "--to", str(tmp_path / "w"),
                 "--require-watermarks"]) == 2
    assert "carries no watermarks" in capsys.readouterr().err
    assert main(["replicate", "--from", str(capture), "-p", "debezium", "--to", str(tmp_path / "w"),
                 "--engine", "distributed"]) == 2
    assert "use --engine driver or auto" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def _scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_a_streaming_run_serves_metrics_and_logs_a_line_per_batch(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    assert main(["produce", "-p", "canal-json", "--seed", "3", "--transactions", "60", "--partitions", "2",
                 "-O", str(source / "a.jsonl")]) == 0
    command = [sys.executable, "-m", "pyticdc", "replicate", "--from", str(source), "-p", "canal-json",
               "--to", str(tmp_path / "wh"), "--stream", "--trigger", "1", "--metrics-port", "0",
               "--metrics-host", "127.0.0.1"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    stderr = process.stderr

    def pump() -> None:
        for line in stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    port = 0
    samples: dict[str, float] = {}
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
                seen.append(line)
                if line.startswith("metrics at http://"):
                    port = int(line.rsplit(":", 1)[1].split("/")[0])
            except queue.Empty:
                pass
            if port:
                samples = _scrape(port)
                if samples.get("pyticdc_records_read_total", 0) > 0 and any(text.startswith("batch ") for text in seen):
                    break
            assert process.poll() is None, "".join(seen)
        assert port, "".join(seen)
        assert samples["pyticdc_records_read_total"] > 0 and samples["pyticdc_batches_total"] >= 1
        assert samples["pyticdc_consistency_batch"] == 1
        assert any(k.startswith("pyticdc_rows_applied_total{schema=\"sim\"") and v > 0 for k, v in samples.items())
        assert any(k.startswith("pyticdc_watermark_lag_seconds{") for k in samples)
        assert samples["pyticdc_last_batch_timestamp_seconds"] > time.time() - 600
        batch_lines = [text for text in seen if text.startswith("batch ")]
        assert batch_lines and "records_read=" in batch_lines[0] and "rows_applied=" in batch_lines[0]
        assert all(" seconds=" in text and "watermark_lag=" in text and "quarantined=" in text for text in batch_lines)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            status = process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
        finally:
            stderr.close()
    assert status == 0, "".join(seen)
