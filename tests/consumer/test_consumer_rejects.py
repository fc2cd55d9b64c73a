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
