"""Data-source options (pure): names as Spark and TiCDC spell them, clear errors."""

from __future__ import annotations

import pytest

from pyticdc.errors import ConfigError
from pyticdc.spark.options import SourceOptions, is_stateful


def test_kafka_options() -> None:
    options = SourceOptions.parse({
        "protocol": "canal_json", "enable-tidb-extension": "true", "kafka.bootstrap.servers": "h:9092",
        "kafka.security.protocol": "SSL", "subscribe": "cdc", "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "1000", "failOnDataLoss": "false", "kafkaConsumer.pollTimeoutMs": "5000",
        "groupIdPrefix": "etl",
    })
    assert options.protocol == "canal-json" and options.is_kafka and not options.stateful
    assert options.codec_options == {"enable-tidb-extension": "true"}
    assert options.kafka == {"bootstrap.servers": "h:9092", "security.protocol": "SSL"}
    assert (options.max_offsets_per_trigger, options.fail_on_data_loss, options.poll_timeout_ms) == (1000, False, 5000)
    assert options.client_config["group.id"].startswith("etl-")
    assert options.min_partitions is None


def test_capture_options_and_spark_lowercased_keys() -> None:
    options = SourceOptions.parse({"PROTOCOL": "simple", "path": "/data/a.jsonl", "captureformat": "KCAT",
                                   "maxpartitionbytes": "1024", "minpartitions": "3", "output": "records"})
    assert (options.paths, options.capture_format, options.max_partition_bytes) == ("/data/a.jsonl", "kcat", 1024)
    assert options.min_partitions == 3 and options.output == "records" and options.stateful and not options.is_kafka
    assert SourceOptions.parse({"protocol": "craft", "path": "x"}).min_partitions >= 1  # type: ignore[operator]


@pytest.mark.parametrize(("options", "message"), [
    ({}, "protocol is required"),
    ({"protocol": "avro"}, "unknown protocol"),
    ({"protocol": "craft"}, "no source"),
    ({"protocol": "craft", "path": "x", "kafka.bootstrap.servers": "h"}, "not both"),
    ({"protocol": "craft", "kafka.group.id": "g"}, "bootstrap.servers is required"),
    ({"protocol": "craft", "path": "x", "enable-tidb-extension": "true"}, "does not apply"),
    ({"protocol": "canal-json", "path": "x", "enable-tidb-extensions": "true"}, "unknown option"),
    ({"protocol": "craft", "path": "x", "output": "rows"}, "output"),
    ({"protocol": "craft", "path": "x", "captureFormat": "csv"}, "captureFormat"),
    ({"protocol": "craft", "path": "x", "minPartitions": "0"}, ">= 1"),
    ({"protocol": "craft", "path": "x", "failOnDataLoss": "maybe"}, "true or false"),
    ({"protocol": "craft", "path": "x", "batchRows": "many"}, "integer"),
])
def test_bad_options_fail_with_the_reason(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SourceOptions.parse(options)


def test_only_simple_is_stateful() -> None:
    assert [p for p in ("open-protocol", "canal-json", "craft", "debezium", "simple") if is_stateful(p)] == ["simple"]
