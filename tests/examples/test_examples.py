"""Every script in examples/ runs against a capture file made with `pyticdc produce` (so they cannot rot)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NO_CONNECTOR = 3  # examples/decode_kafka.py's exit status without the spark-sql-kafka jar


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A canal-json capture of a seeded workload (every column type, DDL, watermarks) in its own directory."""
    pytest.importorskip("pyspark")
    folder = tmp_path_factory.mktemp("capture")
    done = subprocess.run([sys.executable, "-m", "pyticdc", "produce", "-p", "canal-json", "-o",
                           "enable-tidb-extension=true", "--seed", "2", "--transactions", "60", "--start-ms",
                           "1700000000000", "-O", str(folder / "cdc.jsonl")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return folder / "cdc.jsonl"


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          env=env, timeout=600)


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_every_example_has_a_test() -> None:
    tested = {"read_typed_rows.py", "stream_changelog.py", "replicate.py", "decode_kafka.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_read_typed_rows(capture: Path) -> None:
    line = _last_line(_run("read_typed_rows.py", str(capture), "--table", "sim.t_comp"))
    assert line.startswith("t_comp: ") and line.endswith("; 0 undecodable records")
    assert int(line.split()[1]) > 0


def test_stream_changelog(capture: Path, tmp_path: Path) -> None:
    import pyarrow as pa

    from pyticdc.arrow.rows import decode_records
    from pyticdc.io.capture import read_capture

    rows = _last_line(_run("stream_changelog.py", str(capture.parent), str(tmp_path)))
    truth = pa.Table.from_batches(list(decode_records(list(read_capture(str(capture))), "canal-json",
                                                      {"enable-tidb-extension": "true"})))
    expected = truth.filter(pa.compute.equal(truth["kind"], "row")).num_rows
    assert rows == f"changelog: {expected} row changes; quarantine: 0 records"
    # A second run with the same checkpoint has nothing new: the tables are unchanged.
    assert _last_line(_run("stream_changelog.py", str(capture.parent), str(tmp_path))) == rows


def test_replicate(capture: Path, tmp_path: Path) -> None:
    done = _run("replicate.py", str(capture), str(tmp_path))
    _last_line(done)
    tables = [line for line in done.stdout.splitlines() if line.startswith("sim.")]
    assert len(tables) >= 3, done.stdout
    again = _run("replicate.py", str(capture), str(tmp_path))  # resumes from the progress: same tables
    assert [line for line in again.stdout.splitlines() if line.startswith("sim.")] == tables


def test_decode_kafka_on_capture_records(capture: Path, tmp_path: Path) -> None:
    line = _last_line(_run("decode_kafka.py", str(capture), str(tmp_path)))
    assert line.startswith("changelog: ") and line.endswith("quarantine: 0 records") and " 0 row" not in line


@pytest.mark.kafka
def test_decode_kafka_stream(spark: Any, kafka_broker: Any, capture: Path, tmp_path: Path) -> None:
    from pyticdc.spark.session import has_kafka_source

    if not has_kafka_source(spark):
        pytest.skip("the spark-sql-kafka connector is not on the classpath: format('kafka') cannot run here")
    topic = kafka_broker.new_topic(partitions=1, prefix="examples")
    servers = kafka_broker.config["bootstrap.servers"]
    produced = subprocess.run([sys.executable, "-m", "pyticdc", "produce", "-p", "canal-json", "-o",
                               "enable-tidb-extension=true", "--seed", "2", "--transactions", "20", "--partitions", "1",
                               "--output-bootstrap-servers", servers, "--output-topic", topic],
                              capture_output=True, text=True)
    assert produced.returncode == 0, produced.stderr
    done = _run("decode_kafka.py", f"kafka://{servers}/{topic}", str(tmp_path))
    if done.returncode == NO_CONNECTOR:
        pytest.skip(f"examples/decode_kafka.py: {done.stderr.strip().splitlines()[-1]}")
    line = _last_line(done)
    assert line.startswith("changelog: ") and line.endswith("quarantine: 0 records") and " 0 row" not in line
