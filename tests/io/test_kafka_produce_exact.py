"""Producing to the embedded broker (tansu) loses nothing: one record per batch by default, end offsets checked."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from pyticdc.cli import main
from pyticdc.errors import KafkaReadError
from pyticdc.io.capture import read_capture
from pyticdc.io.kafka import create_topic, list_partitions, offset_ranges, produce_records, read_range
from pyticdc.model import KafkaRecord

pytestmark = pytest.mark.kafka


def _records(topic: str, count: int) -> list[KafkaRecord]:
    return [KafkaRecord(topic=topic, partition=i % 3, key=f"k{i}".encode(), value=f"v{i}".encode())
            for i in range(count)]


def _read_all(config: dict[str, Any], topic: str) -> list[KafkaRecord]:
    return [r for span in offset_ranges(config, subscribe=topic) for r in read_range(config, span)]


def test_default_producer_settings_leave_every_record_readable(kafka_broker: Any) -> None:
    # Only bootstrap.servers: before, librdkafka batched and tansu's end offset hid all but one record a batch.
    topic = f"exact-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.config, topic, 3)
    sent = _records(topic, 337)
    produce_records(kafka_broker.config, sent)
    read = _read_all(kafka_broker.config, topic)
    # Every value sent is non-empty, so a record read back without one still fails the comparison.
    assert sorted(r.value or b"" for r in read) == sorted(r.value or b"" for r in sent)


def test_batched_settings_are_caught_by_the_end_offset_check(kafka_broker: Any) -> None:
    topic = f"batched-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.config, topic, 3)
    config = {**kafka_broker.config, "batch.num.messages": 1000, "linger.ms": 50}
    with pytest.raises(KafkaReadError, match=rf"not readable: {topic}/0 ends at \d+, acknowledged up to offset 112"):
        produce_records(config, _records(topic, 337))


def test_produce_command_writes_what_it_says(kafka_broker: Any, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # The case: produce -p open-protocol to the embedded broker, then read the topic back.
    topic = f"op-{uuid.uuid4().hex[:8]}"
    status = main(["produce", "-p", "open-protocol", "-b", kafka_broker.bootstrap, "--topic", topic, "--seed", "3",
                   "--transactions", "60", "--start-ms", "1763780000000", "--no-progress"])
    assert status == 0
    err = capsys.readouterr().err
    wrote = int(err.split("wrote ")[1].split()[0])
    # The same workload to a file gives the records the topic must hold.
    capture = tmp_path / "op.jsonl"
    assert main(["produce", "-p", "open-protocol", "-O", str(capture), "--topic", topic, "--seed", "3",
                 "--transactions", "60", "--start-ms", "1763780000000", "--no-progress"]) == 0
    expected = list(read_capture(capture))
    read = _read_all(kafka_broker.config, topic)
    assert wrote == len(expected) == len(read) > 100
    assert sorted((r.partition, r.value) for r in read) == sorted((r.partition, r.value) for r in expected)


def test_broker_command_prints_its_address_and_stops_on_ctrl_c() -> None:
    process = subprocess.Popen([sys.executable, "-m", "pyticdc", "broker", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        address = process.stdout.readline().decode().strip()
        host, _, port = address.partition(":")
        assert host == "127.0.0.1" and int(port) > 0
        assert isinstance(list_partitions({"bootstrap.servers": address}), dict)  # it answers Kafka requests
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert out == b"" and err.decode().strip().endswith("broker stopped")
    assert b"Traceback" not in err


def test_broker_command_refuses_a_bad_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["broker", "--port", "70000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["pyticdc broker: error: --port must be between 0 and 65535, got 70000"]
