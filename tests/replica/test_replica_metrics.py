"""Replication metrics: the Prometheus text, the HTTP endpoint and the per-batch log line."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

from pyticdc.replica.metrics import MetricsServer, ReplicationMetrics, batch_log_line
from pyticdc.replica.pipeline import BatchReport

#: 2023-11-14T22:13:20Z as a TSO (physical ms << 18).
_TS = 1_700_000_000_000 << 18


def parse(text: str) -> dict[str, float]:
    """Prometheus text → {"name{labels}": value}; comments checked for HELP/TYPE of every family."""
    samples: dict[str, float] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
        elif line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            family = name.split("{")[0]
            assert family in typed or family.rsplit("_", 1)[0] in typed, line
            samples[name] = float(value)
    return samples


def _report(version: int, records: int, rows: dict[tuple[str, str], int], *, rejected: int = 0,
            consistency: str = "watermark") -> BatchReport:
    report = BatchReport(version=version, records=records, rows_applied=sum(rows.values()), consistent_ts=_TS,
                         rejected=rejected, seconds=0.25 * version, consistency=consistency, rows_by_table=rows)
    report.tables = {key: Any for key in rows}  # type: ignore[misc]
    return report


def test_the_log_line_says_what_the_batch_did() -> None:
    line = batch_log_line(_report(3, 120, {("s", "t"): 40}, rejected=2), now=1_700_000_005.5)
    assert line == ("batch 3: records_read=120 rows_applied=40 quarantined=2 watermark_lag=5.5s "
                    "consistency=watermark seconds=0.75")


def test_metrics_accumulate_batches_in_the_prometheus_text_format() -> None:
    metrics = ReplicationMetrics(clock=lambda: 1_700_000_010.0)
    metrics.observe(_report(1, 100, {("shop", "orders"): 30, ("shop", 'we"ird'): 2}, rejected=1))
    metrics.observe(_report(2, 50, {("shop", "orders"): 5}, consistency="batch"))
    samples = parse(metrics.render())
    assert samples["pyticdc_records_read_total"] == 150
    assert samples['pyticdc_rows_applied_total{schema="shop",table="orders"}'] == 35
    assert samples['pyticdc_rows_applied_total{schema="shop",table="we\\"ird"}'] == 2
    assert samples["pyticdc_records_quarantined_total"] == 1
    assert samples["pyticdc_batches_total"] == 2
    assert samples["pyticdc_batch_duration_seconds"] == 0.5
    assert samples["pyticdc_batch_duration_seconds_sum"] == 0.75
    assert samples["pyticdc_batch_duration_seconds_count"] == 2
    assert samples["pyticdc_last_batch_timestamp_seconds"] == 1_700_000_010.0
    # The replica is complete up to 1_700_000_000 s; the clock says 10 s later.
    assert samples['pyticdc_watermark_lag_seconds{schema="shop",table="orders"}'] == pytest.approx(10.0)
    assert samples["pyticdc_global_watermark_lag_seconds"] == pytest.approx(10.0)
    assert samples["pyticdc_consistency_batch"] == 1


def test_the_endpoint_serves_the_metrics_and_frees_its_port() -> None:
    metrics = ReplicationMetrics()
    server = MetricsServer(metrics, 0, "127.0.0.1")
    try:
        metrics.observe(_report(1, 7, {("a", "b"): 3}))
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as answer:
            assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert parse(answer.read().decode())["pyticdc_records_read_total"] == 7
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/other", timeout=10)
    finally:
        server.close()
