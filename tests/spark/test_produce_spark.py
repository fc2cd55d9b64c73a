"""Replaying a changelog at cluster scale: a decoded-event DataFrame → TiCDC records through Spark."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from pyticdc.io.capture import read_capture, write_capture
from pyticdc.model import KafkaRecord
from pyticdc.sim.workload import History, WorkloadConfig, simulate
from pyticdc.spark.writer import (
    TARGET_PARTITION,
    TARGET_TOPIC,
    ChangelogDataSource,
    WriterOptions,
    encode_changelog,
    events_from_rows,
    order_changelog,
)
from replays import FULL_OPTIONS, assert_replica_matches, replicate, source_records

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def history() -> History:
    return simulate(23, WorkloadConfig(transactions=30))


@pytest.fixture(scope="module")
def changelog(spark: Any, history: History, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The history decoded by the pyticdc source from a 3-partition Canal-JSON capture."""
    path = tmp_path_factory.mktemp("capture") / "canal.jsonl"
    write_capture(path, source_records(history, "canal-json", partitions=3))
    return (spark.read.format("pyticdc").option("protocol", "canal-json")
            .option("enable-tidb-extension", "true").load(str(path)))


def by_partition(records: list[KafkaRecord]) -> dict[tuple[str, int], list[tuple[bytes | None, bytes | None]]]:
    out: dict[tuple[str, int], list[tuple[bytes | None, bytes | None]]] = collections.defaultdict(list)
    for record in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        out[(record.topic, record.partition)].append((record.key, record.value))
    return dict(out)


@pytest.mark.parametrize("target", ["craft", "open-protocol", "simple"])
def test_write_changelog_replays_to_the_truth(spark: Any, changelog: Any, history: History, tmp_path: Path,
                                              target: str) -> None:
    from pyticdc.spark.writer import write_changelog

    out = tmp_path / "out"
    written = write_changelog(changelog, protocol=target, topic="replay", partitions=2, path=str(out))
    assert [(t, p) for t, p, _ in written] == [("replay", 0), ("replay", 1)]
    records = list(read_capture(out))
    assert len(records) == sum(n for _, _, n in written)
    assert_replica_matches(replicate(records, target, {"replay": 2}), history, "canal-json", target,
                           at_ts=history.final_resolved_ts)
    if target != "simple":
        # Partition by partition the same bytes one router over the whole changelog sends (Simple differs only
        # in when each partition's BOOTSTRAP goes out).
        rows = [r.asDict(recursive=False) for r in changelog.collect()]
        options = WriterOptions.parse({"protocol": target, "topic": "replay", "partitions": "2", "path": "x"})
        local = list(encode_changelog(order_changelog(events_from_rows(rows)), target, default_topic="replay",
                                      partitions=2, clock=None))
        assert options.protocol == target
        assert by_partition(records) == by_partition(_offsets(local))


def _offsets(records: list[KafkaRecord]) -> list[KafkaRecord]:
    from replays import numbered

    return numbered(records)


def test_format_writer_needs_an_arranged_frame(spark: Any, changelog: Any, history: History,
                                               tmp_path: Path) -> None:
    from pyticdc.spark.writer import arrange_changelog

    spark.dataSource.register(ChangelogDataSource)
    out = tmp_path / "fmt"
    options = {"protocol": "open-protocol", "topic": "t", "partitions": "3", "path": str(out)}
    arranged = arrange_changelog(changelog, options)
    assert {TARGET_TOPIC, TARGET_PARTITION} <= set(arranged.columns)
    arranged.write.format("pyticdc_changelog").options(**options).mode("append").save()
    records = list(read_capture(out))
    assert_replica_matches(replicate(records, "open-protocol", {"t": 3}), history, "canal-json", "open-protocol",
                           at_ts=history.final_resolved_ts)
    with pytest.raises(Exception, match="arrange_changelog"):
        changelog.write.format("pyticdc_changelog").options(**{**options, "path": str(tmp_path / "x")}) \
            .mode("append").save()
    assert FULL_OPTIONS


CHANGE_COLUMNS = ("kind", "op", "schema", "table", "table_id", "physical_table_id", "commit_ts", "schema_version",
                  "columns", "pre_columns", "base64_columns", "handle_key_only", "ddl_query", "ddl_type",
                  "table_info", "pre_table_info")


def changes(df: Any) -> collections.Counter[tuple[Any, ...]]:
    """Every row change and DDL of a decoded DataFrame (once per copy), without where it was read from."""
    def freeze(value: Any) -> Any:
        return tuple(sorted(value.items())) if isinstance(value, dict) else tuple(value) \
            if isinstance(value, list) else value

    rows = df.filter("kind in ('row', 'ddl')").select(*CHANGE_COLUMNS).collect()
    return collections.Counter(tuple(freeze(v) for v in r.asDict(recursive=True).values()) for r in rows)


def test_format_pyticdc_writes_what_it_reads(spark: Any, changelog: Any, tmp_path: Path) -> None:
    """``df.write.format("pyticdc")`` to capture files, read back with ``spark.read.format("pyticdc")``: the same
    changes, DDL and watermarks as the decoded topic it was written from."""
    from pyticdc.spark.writer import arrange_changelog

    out = tmp_path / "written"
    # Writer options (topic, partitions, ...) are not read options: the source must not parse them as such.
    options = {"protocol": "canal-json", "enable-tidb-extension": "true", "topic": "cdc", "partitions": "3",
               "resolved-interval-ms": "0"}
    arrange_changelog(changelog, options).write.format("pyticdc").options(**options).mode("append").save(str(out))
    assert sorted(p.name for p in out.iterdir()) == ["cdc-0.jsonl", "cdc-1.jsonl", "cdc-2.jsonl"]
    back = (spark.read.format("pyticdc").option("protocol", "canal-json").option("enable-tidb-extension", "true")
            .load(str(out)))
    assert back.filter("kind = 'error'").count() == 0
    written = changes(back)
    assert written == changes(changelog)
    assert sum(written.values()) > 30
    marks = [{r[0] for r in df.filter("kind = 'watermark'").select("commit_ts").collect()} for df in (back, changelog)]
    assert marks[0] == marks[1] and len(marks[0]) > 1
    assert {r[0] for r in back.select("topic").distinct().collect()} == {"cdc"}
    # Reading still checks its options (when it reads): a writer option is no read option.
    with pytest.raises(Exception, match="unknown option"):
        spark.read.format("pyticdc").options(**options).load(str(out)).count()
