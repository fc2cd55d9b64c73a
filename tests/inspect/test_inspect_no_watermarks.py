"""``inspect`` on streams without watermarks says so, instead of an epoch lag or a wrong hint (issue 14)."""

from __future__ import annotations

from pyticdc.inspect.summary import format_summary, summarize
from pyticdc.model import KafkaRecord, Watermark
from pyticdc.routing import Router
from pyticdc.sim.workload import WorkloadConfig, simulate


def _records(protocol: str, options: dict[str, object]) -> list[KafkaRecord]:
    history = simulate(5, WorkloadConfig(transactions=10))
    router = Router(protocol, options, default_topic="t", partitions=2)
    return router.route([e for e in history.events if not isinstance(e, Watermark)])


def test_a_partition_without_watermarks_has_no_lag_number() -> None:
    summary = summarize(_records("open-protocol", {}), "open-protocol")
    assert summary.partitions and all(p.lag_ms is None and p.resolved_ts == 0 for p in summary.partitions)
    text = format_summary(summary)
    assert "no watermarks" in text
    # Open Protocol always sends watermarks: the option of Canal-JSON/Debezium is no explanation here.
    assert "enable-tidb-extension" not in text


def test_canal_json_without_watermarks_points_at_the_extension() -> None:
    text = format_summary(summarize(_records("canal-json", {}), "canal-json"))
    assert "enable-tidb-extension=true" in text
