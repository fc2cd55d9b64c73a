"""confluent-kafka helpers and the capture/decode commands against a real (tansu) broker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pyticdc.cli import main
from pyticdc.codec import make_encoder
from pyticdc.errors import KafkaReadError
from pyticdc.io.capture import read_capture
from pyticdc.io.kafka import (
    EARLIEST,
    OffsetRange,
    list_partitions,
    offset_ranges,
    read_range,
    watermarks,
)
from pyticdc.model import KafkaRecord
from pyticdc.sim.sample import sample_events

pytestmark = pytest.mark.kafka


def _records(topic: str, count: int) -> list[KafkaRecord]:
    return [KafkaRecord(topic=topic, partition=i % 3, key=None if i % 4 == 0 else f"k{i}".encode(),
                        value=bytes([i % 256]) * (i + 1), timestamp_ms=1_763_780_000_000 + i) for i in range(count)]


def _without_offsets(records: list[KafkaRecord]) -> list[tuple[Any, ...]]:
    return sorted((r.topic, r.partition, r.key or b"", r.value) for r in records)


def test_produce_list_and_read_back(kafka_broker: Any) -> None:
    topic = kafka_broker.new_topic(3)
    sent = kafka_broker.produce(_records(topic, 30))
    assert [(r.partition, r.offset) for r in sent if r.partition == 1] == [(1, i) for i in range(10)]
    assert list_partitions(kafka_broker.config)[topic] == 3
    assert watermarks(kafka_broker.config, [(topic, p) for p in range(3)]) == {(topic, p): (0, 10) for p in range(3)}
    ranges = offset_ranges(kafka_broker.config, subscribe=topic)
    assert ranges == [OffsetRange(topic, p, 0, 10) for p in range(3)]
    read = [r for offset_range in ranges for r in read_range(kafka_broker.config, offset_range)]
    assert read == sorted(sent, key=lambda r: (r.partition, r.offset))
    assert all(r.timestamp_ms >= 1_763_780_000_000 for r in read)


def test_a_finished_range_returns_with_its_last_record(kafka_broker: Any) -> None:
    # consume() waits for as many messages as asked (or its 1 s timeout): asking for no more than the range
    # holds makes each range end at its last record instead of idling a second per partition.
    import time

    topic = kafka_broker.new_topic(3)
    sent = kafka_broker.produce(_records(topic, 30))
    ranges = offset_ranges(kafka_broker.config, subscribe=topic)
    list(read_range(kafka_broker.config, ranges[0]))  # warm the connection
    started = time.monotonic()
    read = [r for offset_range in ranges for r in read_range(kafka_broker.config, offset_range)]
    elapsed = time.monotonic() - started
    assert read == sorted(sent, key=lambda r: (r.partition, r.offset))
    assert elapsed < 1.5, f"3 finished ranges took {elapsed:.2f}s"
    started = time.monotonic()
    assert [r.offset for r in read_range(kafka_broker.config, OffsetRange(topic, 1, EARLIEST, 10))] == list(range(10))
    assert time.monotonic() - started < 1.0


def test_read_subranges_and_earliest(kafka_broker: Any) -> None:
    topic = kafka_broker.new_topic(3)
    sent = kafka_broker.produce(_records(topic, 15))
    part0 = [r for r in sent if r.partition == 0]
    middle = list(read_range(kafka_broker.config, OffsetRange(topic, 0, 1, 4)))
    assert middle == part0[1:4]
    assert list(read_range(kafka_broker.config, OffsetRange(topic, 0, EARLIEST, 2))) == part0[:2]
    assert list(read_range(kafka_broker.config, OffsetRange(topic, 0, 3, 3))) == []
    ranges = offset_ranges(kafka_broker.config, subscribe=topic, starting=f'{{"{topic}": {{"2": 4}}}}',
                           ending=f'{{"{topic}": {{"0": 2, "2": -1}}}}')
    assert ranges == [OffsetRange(topic, 0, 0, 2), OffsetRange(topic, 1, 0, 5), OffsetRange(topic, 2, 4, 5)]


def test_range_beyond_the_end_is_data_loss(kafka_broker: Any) -> None:
    topic = kafka_broker.new_topic(1)
    sent = kafka_broker.produce([KafkaRecord(topic=topic, partition=0, value=b"v%d" % i) for i in range(3)])
    with pytest.raises(KafkaReadError, match="failOnDataLoss"):
        list(read_range(kafka_broker.config, OffsetRange(topic, 0, 0, 50), poll_timeout=5))
    assert list(read_range(kafka_broker.config, OffsetRange(topic, 0, 0, 50), poll_timeout=5,
                           fail_on_data_loss=False)) == sent


def test_capture_command_copies_every_partition(kafka_broker: Any, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    topic = kafka_broker.new_topic(3)
    sent = kafka_broker.produce(_records(topic, 40))
    for name in ("all.jsonl", "all.parquet"):
        assert main(["capture", "-b", kafka_broker.bootstrap, "-t", topic, "-O", str(tmp_path / name),
                     "--progress"]) == 0
        err = capsys.readouterr().err
        assert "40/40 records 100%" in err and f"captured 40 records from 3 partitions of {topic}" in err
        captured = list(read_capture(tmp_path / name))
        assert captured == sorted(sent, key=lambda r: (r.partition, r.offset))
    assert main(["capture", "-b", kafka_broker.bootstrap, "-t", topic, "--no-progress", "--starting-offsets",
                 f'{{"{topic}": {{"0": 10, "1": 12, "2": 13}}}}', "-O", str(tmp_path / "tail.jsonl")]) == 0
    assert "records 100%" not in capsys.readouterr().err
    assert len(list(read_capture(tmp_path / "tail.jsonl"))) == 4 + 1 + 0
    assert main(["capture", "-b", kafka_broker.bootstrap, "-t", "no-such-topic", "-O", str(tmp_path / "x.jsonl")]) == 2
    assert capsys.readouterr().err == "pyticdc capture: error: topics not found on the broker: no-such-topic\n"
    assert not (tmp_path / "x.jsonl").exists()


def test_decode_command_reads_a_topic(kafka_broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    topic = kafka_broker.new_topic(1)
    messages = make_encoder("open-protocol").encode(sample_events())
    kafka_broker.produce([KafkaRecord(topic=topic, partition=0, key=m.key, value=m.value) for m in messages])
    assert main(["decode", "-p", "open-protocol", "-b", kafka_broker.bootstrap, "-t", topic, "--kind", "row"]) == 0
    rows = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["op"], r["partition"]) for r in rows] == [("insert", 0), ("insert", 0), ("update", 0), ("delete", 0)]


def test_lookback_chunks_read_backwards_in_growing_windows(kafka_broker: Any) -> None:
    from pyticdc.io.kafka import lookback_chunks

    topic = kafka_broker.new_topic(1)
    sent = kafka_broker.produce([KafkaRecord(topic=topic, partition=0, value=b"v%d" % i) for i in range(30)])
    chunks = list(lookback_chunks(kafka_broker.config, topic, 0, 25, first_chunk=2))
    assert [[r.offset for r in c] for c in chunks] == [[23, 24], list(range(15, 23)), list(range(0, 15))]
    assert [r.value for c in reversed(chunks) for r in c] == [r.value for r in sent[:25]]
    limited = list(lookback_chunks(kafka_broker.config, topic, 0, 25, first_chunk=2, limit=5))
    assert [[r.offset for r in c] for c in limited] == [[23, 24], [20, 21, 22]]
