"""An unreachable broker is one error line, not librdkafka's FAIL log (issue 14, finding 8). No broker needed."""

from __future__ import annotations

import pytest

from pyticdc.errors import KafkaReadError
from pyticdc.io import kafka


def test_unreachable_broker_is_one_quiet_error(capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("confluent_kafka")
    with pytest.raises(KafkaReadError) as failed:
        kafka.list_partitions({"bootstrap.servers": "127.0.0.1:1"}, timeout=1.5)
    out, err = capfd.readouterr()
    # librdkafka retries every few ms, each retry a FAIL line on stderr unless its log is taken over.
    assert "FAIL" not in err and "rdkafka" not in err and out == ""
    message = str(failed.value)
    assert "\n" not in message and message.startswith("cannot list topics at 127.0.0.1:1")
    assert "Connection refused" in message  # the broker log's cause is kept in the one line


def test_asking_for_the_log_keeps_it() -> None:
    config = {"bootstrap.servers": "h:1"}
    assert kafka.client_config(config)["logger"] is kafka.LIBRDKAFKA_LOGGER
    for name, value in (("log_level", "7"), ("debug", "broker")):
        assert "logger" not in kafka.client_config({**config, name: value})
