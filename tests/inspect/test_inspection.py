"""Stream inspection: per-table and per-partition counts, watermarks, DDL timeline, bad records, the plot."""

from __future__ import annotations

import collections
from pathlib import Path

import msgspec
import orjson
import pytest

from pyticdc.codec import PROTOCOLS
from pyticdc.inspect.summary import detect_protocol, format_summary, format_ts, summarize
from pyticdc.model import DDLEvent, KafkaRecord, RowChange, Watermark, physical_ms
from pyticdc.routing import Router, split_updates
from pyticdc.sim.workload import History, WorkloadConfig, simulate
from replays import FULL_OPTIONS, clock_for, numbered, source_records


@pytest.fixture(scope="module")
def history() -> History:
    return simulate(5, WorkloadConfig(transactions=40))


def expected_table_ops(history: History) -> dict[tuple[str, str], collections.Counter[str]]:
    """Row operations per table after TiCDC splits key-changing UPDATEs (one transaction per table and ts)."""
    groups: dict[tuple[int, str, str], list[RowChange]] = {}
    for event in history.events:
        if isinstance(event, RowChange):
            groups.setdefault((event.commit_ts, event.schema, event.table), []).append(event)
    counts: dict[tuple[str, str], collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for (_, schema, table), rows in groups.items():
        for row in split_updates(rows):
            counts[(schema, table)][row.op.value] += 1
    return counts


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_summary_matches_the_history(history: History, protocol: str) -> None:
    records = source_records(history, protocol, partitions=3)
    summary = summarize(records, protocol, FULL_OPTIONS.get(protocol))
    assert summary.records == len(records)
    assert summary.bad_records == []
    expected = expected_table_ops(history)
    got = {(t.schema, t.table): collections.Counter({"insert": t.insert, "update": t.update, "delete": t.delete})
           for t in summary.tables}
    assert {k: +v for k, v in got.items()} == {k: +v for k, v in expected.items()}
    assert summary.rows == sum(sum(c.values()) for c in expected.values())
    commits = [e.commit_ts for e in history.events if isinstance(e, RowChange | DDLEvent)]
    assert summary.min_commit_ts == min(commits) and summary.max_commit_ts == max(commits)
    ddls = [(e.commit_ts, e.query) for e in history.events if isinstance(e, DDLEvent)]
    assert [(d.commit_ts, d.query) for d in summary.ddl_timeline] == sorted(ddls)
    broadcast = [0] if protocol == "canal-json" else [0, 1, 2]
    assert all(d.partitions == broadcast for d in summary.ddl_timeline)
    assert [(p.topic, p.partition) for p in summary.partitions] == [("src", 0), ("src", 1), ("src", 2)]
    for part in summary.partitions:
        assert part.resolved_ts == history.final_resolved_ts
        assert part.lag_ms == 0
        assert part.watermark_regressions == 0 and part.late_events == 0 and part.offset_gaps == 0
        assert part.first_offset == 0 and part.last_offset == part.records - 1
    assert summary.global_resolved_ts == history.final_resolved_ts
    assert summary.watermarks == 3 * len({e.resolved_ts for e in history.events if isinstance(e, Watermark)})


def test_bad_records_are_listed_with_offset_and_reason(history: History) -> None:
    records = source_records(history, "craft", partitions=2)
    bad = KafkaRecord(topic="src", partition=1, offset=records[-1].offset + 1, value=b"\x01garbage")
    summary = summarize([*records, bad], "craft")
    assert [(b.topic, b.partition, b.offset) for b in summary.bad_records] == [("src", 1, bad.offset)]
    assert summary.bad_records[0].reason.startswith("craft:")
    assert summary.partitions[1].bad_records == 1
    capped = summarize([*records, bad, msgspec.structs.replace(bad, offset=bad.offset + 1)], "craft",
                       max_bad_records=1)
    assert len(capped.bad_records) == 1 and capped.bad_records_omitted == 1
    text = format_summary(summary)
    assert f"src/1@{bad.offset}: craft:" in text


def test_a_restarted_changefeed_shows_as_regressions_and_late_rows(history: History) -> None:
    records = source_records(history, "open-protocol", partitions=1)
    # TiCDC restarted from an old checkpoint: the second half of the partition is sent again.
    replay = records[len(records) // 2:]
    summary = summarize(numbered([*records, *replay]), "open-protocol")
    part = summary.partitions[0]
    assert part.watermark_regressions > 0
    assert part.late_events > 0
    # The DDL timeline still lists each DDL once.
    assert len(summary.ddl_timeline) == sum(isinstance(e, DDLEvent) for e in history.events)


def test_lag_of_a_partition_that_stopped_receiving_watermarks(history: History) -> None:
    records = source_records(history, "simple", partitions=2)
    values = [e.resolved_ts for e in history.events if isinstance(e, Watermark)]
    first = values[0]
    # Partition 1 lost every watermark after its first one: its resolved ts stays there.
    stalled = summarize([r for r in records if r.partition == 0] + _only_first_watermark(records, 1, first),
                        "simple")
    lagging = stalled.partitions[1]
    assert lagging.resolved_ts == first
    assert lagging.lag_ms == physical_ms(stalled.max_commit_ts) - physical_ms(first)
    assert stalled.global_resolved_ts == first


def _only_first_watermark(records: list[KafkaRecord], partition: int, first: int) -> list[KafkaRecord]:
    from pyticdc.codec import make_decoder

    decoder = make_decoder("simple")
    out = []
    for record in records:
        if record.partition != partition:
            continue
        events = decoder.decode(record.value, record.key)
        if any(isinstance(e, Watermark) and e.resolved_ts > first for e in events):
            continue
        out.append(record)
    return out


def test_time_series_use_kafka_timestamps_when_present(history: History) -> None:
    records = source_records(history, "canal-json", partitions=2)
    base = physical_ms(history.final_resolved_ts)
    stamped = [msgspec.structs.replace(r, timestamp_ms=base + 100 + i) for i, r in enumerate(records)]
    summary = summarize(stamped, "canal-json", FULL_OPTIONS["canal-json"], bucket_ms=50)
    assert summary.kafka_timestamps
    assert summary.bucket_ms == 50
    assert sum(sum(s.values()) for s in summary.events_over_time.values()) == summary.rows
    for name, points in summary.lag_over_time.items():
        assert points, name
        # Every watermark was produced at least 100 ms after the final resolved ts: so lag >= 100 ms.
        assert all(p.lag_ms >= 100 for p in points)
    unstamped = summarize(records, "canal-json", FULL_OPTIONS["canal-json"])
    assert not unstamped.kafka_timestamps
    assert sum(sum(s.values()) for s in unstamped.events_over_time.values()) == unstamped.rows
    assert all(p.lag_ms >= 0 for series in unstamped.lag_over_time.values() for p in series)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_detect_protocol(history: History, protocol: str) -> None:
    records = numbered(Router(protocol, FULL_OPTIONS.get(protocol), default_topic="t",
                              clock=clock_for(history)).route(history.events))
    detected, options = detect_protocol(records)
    assert detected == protocol
    assert options == FULL_OPTIONS.get(protocol, {})
    avro = numbered(Router("simple", {"encoding-format": "avro"}, default_topic="t").route(history.events))
    assert detect_protocol(avro) == ("simple", {"encoding-format": "avro"})


def test_detect_protocol_refuses_noise() -> None:
    from pyticdc.errors import ConfigError

    with pytest.raises(ConfigError, match="none of the protocols"):
        detect_protocol([KafkaRecord(topic="t", partition=0, offset=0, value=b"\x00\x01")])


def test_format_ts_and_summary_text(history: History) -> None:
    assert format_ts(0) == "-"
    assert format_ts(446_088_544_174_555_137).endswith("UTC)")
    text = format_summary(summarize(source_records(history, "simple"), "simple"))
    for heading in ("tables", "partitions", "DDL timeline", "bad records (0)", "resolved"):
        assert heading in text


def test_plot_writes_a_png(history: History, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pyticdc.inspect.plot import plot_summary

    records = source_records(history, "canal-json", partitions=3)
    stamped = [msgspec.structs.replace(r, timestamp_ms=physical_ms(history.final_resolved_ts) + i)
               for i, r in enumerate(records)]
    path = plot_summary(summarize(stamped, "canal-json", FULL_OPTIONS["canal-json"]), tmp_path / "out" / "p.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000
    empty = plot_summary(summarize([], "craft"), tmp_path / "empty.png")
    assert empty.read_bytes()[:4] == b"\x89PNG"


def test_detect_protocol_picks_no_protocol_on_bare_json_rows() -> None:
    # A bare JSON object names no table: Debezium reads it as an unwrapped row only with default-table,
    # so detection (which passes no such option) finds no protocol rather than inventing rows of "".
    bare = [KafkaRecord(topic="t", partition=0, offset=i, value=orjson.dumps({"id": i, "name": "x"}))
            for i in range(5)]
    from pyticdc.errors import ConfigError

    with pytest.raises(ConfigError, match="none of the protocols"):
        detect_protocol(bare)
