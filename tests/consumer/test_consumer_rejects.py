"""Records the consumer cannot apply are quarantined, never dropped as replays (issue 14, finding 2)."""

from __future__ import annotations

import pytest

from builders import column, insert, table
from pyticdc.codec.base import BaseDecoder
from pyticdc.codec.options import CodecOptions
from pyticdc.consumer import Consumer
from pyticdc.model import Event, KafkaRecord, RowChange, Watermark

INFO = table(column("id", 8, 0))


class Scripted(BaseDecoder):
    """Returns the events scripted for each value, as a lenient decoder of the wrong protocol might."""

    PROTOCOL = "scripted"
    OPTIONS = frozenset()

    def __init__(self, script: dict[bytes, list[Event]]) -> None:
        self.options = CodecOptions()
        self.claim_check = None
        self.script = script

    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        return list(self.script[value or b""])

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        return self.decode(value, key)


@pytest.mark.parametrize("row", [
    insert(INFO, {"id": 1}, commit_ts=0),
    insert(table(column("id", 8, 0), schema="", name=""), {"id": 1}),
], ids=["no-commit-ts", "no-table"])
def test_a_row_of_no_table_or_no_commit_ts_is_quarantined_with_its_bytes(row: RowChange) -> None:
    good = insert(INFO, {"id": 2})
    decoder = Scripted({b"bad": [row], b"good": [good], b"wm": [Watermark(resolved_ts=good.commit_ts)]})
    consumer = Consumer("scripted", partitions={"t": 1}, decoder=decoder)
    units = []
    for offset, value in enumerate([b"bad", b"good", b"wm"]):
        units += consumer.consume(KafkaRecord(topic="t", partition=0, offset=offset, key=b"k", value=value))
    quarantined = [q for u in units for q in u.quarantined]
    assert [(q.offset, q.value, q.key) for q in quarantined] == [(0, b"bad", b"k")]
    assert "no table or no commit ts" in quarantined[0].reason
    assert [r for u in units for r in u.rows] == [good]
    # Not hidden among the re-sends: the stats say where it went.
    assert consumer.stats.rows_replayed == 0 and consumer.stats.quarantined == 1


def test_a_held_simple_row_that_does_not_fit_its_schema_is_quarantined_with_its_bytes() -> None:
    # Finding 14 in the consumer: three rows wait for the BOOTSTRAP, the middle one's INT is "abc".
    from builders import PK
    from pyticdc.codec import make_encoder
    from pyticdc.model import TypeCode

    info = table(column("id", TypeCode.LONG, PK), column("a", TypeCode.LONG))
    out = make_encoder("simple").encode([insert(info, {"id": i, "a": i}, commit_ts=1000 + i) for i in range(3)]
                                        + [Watermark(resolved_ts=2000)])
    values = [m.value for m in out]
    bootstrap, rows, watermark = values[0], values[1:4], values[4]
    assert rows[1] is not None and b'"a":"1"' in rows[1]
    rows[1] = rows[1].replace(b'"a":"1"', b'"a":"abc"')
    consumer = Consumer("simple", partitions={"t": 1})
    units = []
    for offset, value in enumerate([*rows, bootstrap, watermark]):
        units += consumer.consume(KafkaRecord(topic="t", partition=0, offset=offset, key=b"k", value=value))
    quarantined = [q for u in units for q in u.quarantined]
    assert [(q.offset, q.value, q.key) for q in quarantined] == [(1, rows[1], b"k")]
    assert "abc" in quarantined[0].reason
    assert [(r.commit_ts, r.columns) for u in units for r in u.rows] == [
        (1000, {"id": 0, "a": 0}), (1002, {"id": 2, "a": 2})]
    assert consumer.stats.quarantined == 1


@pytest.mark.parametrize("protocol", ["debezium", "canal-json"])
def test_a_watermark_less_feed_is_refused_in_its_own_protocols_words(protocol: str) -> None:
    # Finding 15: the Debezium refusal used to say "(and canal-json no commit ts)".
    from pyticdc.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        Consumer(protocol, partitions={"t": 1})
    message = str(refused.value)
    assert message.startswith(f"{protocol} without enable-tidb-extension carries no watermarks")
    other = "canal-json" if protocol == "debezium" else "debezium"
    assert other not in message
    assert ("commit ts" in message) == (protocol == "canal-json")  # Debezium keeps its exact commit ts
