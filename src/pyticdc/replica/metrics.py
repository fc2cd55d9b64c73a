"""Operating a replication: Prometheus text metrics over HTTP and the per-batch log line (stdlib only).

    metrics = ReplicationMetrics()
    server = MetricsServer(metrics, port=9464)      # GET http://HOST:9464/metrics
    ...
    metrics.observe(report)                          # after each committed batch (BatchReport)
    server.close()

Metrics (all prefixed ``pyticdc_``): ``records_read_total``, ``rows_applied_total{schema,table}``,
``records_quarantined_total``, ``batches_total``, ``batch_duration_seconds`` (last batch) and
``batch_duration_seconds_sum``/``_count``, ``last_batch_timestamp_seconds`` (Unix time of the last commit),
``watermark_lag_seconds{schema,table}`` (now minus the commit time each table is complete up to),
``global_watermark_lag_seconds`` and ``consistency_batch`` (1 for a feed without watermarks, whose
tables are complete up to what was read).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pyticdc.model import physical_ms
from pyticdc.replica.pipeline import BatchReport

__all__ = ["MetricsServer", "ReplicationMetrics", "batch_log_line"]

_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _lag(tso: int, now: float) -> float | None:
    return None if tso <= 0 else max(0.0, now - physical_ms(tso) / 1000)


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def batch_log_line(report: BatchReport, now: float | None = None) -> str:
    """One line for a log: records read, rows applied, quarantined, global watermark lag, batch seconds."""
    lag = _lag(report.consistent_ts, time.time() if now is None else now)
    lag_text = "-" if lag is None else f"{lag:.1f}s"
    return (f"batch {report.version}: records_read={report.records} rows_applied={report.rows_applied} "
            f"quarantined={report.rejected} watermark_lag={lag_text} consistency={report.consistency} "
            f"seconds={report.seconds:.2f}")


class ReplicationMetrics:
    """Counters and gauges of one replication run, rendered in the Prometheus text format; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.records = 0
        self.quarantined = 0
        self.batches = 0
        self.duration_sum = 0.0
        self.last_duration = 0.0
        self.last_batch_time = 0.0
        self.rows: dict[tuple[str, str], int] = {}
        self.complete_ts: dict[tuple[str, str], int] = {}
        self.global_ts = 0
        self.batch_consistency = False

    def observe(self, report: BatchReport) -> None:
        """Count one committed batch."""
        with self._lock:
            self.records += report.records
            self.quarantined += report.rejected
            self.batches += 1
            self.duration_sum += report.seconds
            self.last_duration = report.seconds
            self.last_batch_time = self._clock()
            for key, count in report.rows_by_table.items():
                self.rows[key] = self.rows.get(key, 0) + count
            # Every table of the replica is complete up to the batch's consistent ts.
            self.complete_ts = {key: report.consistent_ts for key in report.tables}
            self.global_ts = report.consistent_ts
            self.batch_consistency = report.consistency == "batch"

    def render(self) -> str:
        """The metrics in the Prometheus text exposition format (version 0.0.4)."""
        with self._lock:
            now = self._clock()
            lines: list[str] = []

            def metric(name: str, kind: str, text: str, samples: list[tuple[str, float]]) -> None:
                lines.append(f"# HELP pyticdc_{name} {text}")
                lines.append(f"# TYPE pyticdc_{name} {kind}")
                for labels, value in samples:
                    lines.append(f"pyticdc_{name}{labels} {value:.17g}")

            def table(key: tuple[str, str]) -> str:
                return f'{{schema="{_label(key[0])}",table="{_label(key[1])}"}}'

            metric("records_read_total", "counter", "Kafka records read.", [("", self.records)])
            metric("rows_applied_total", "counter", "Row changes written to replica tables.",
                   [(table(key), count) for key, count in sorted(self.rows.items())])
            metric("records_quarantined_total", "counter", "Records sent to the quarantine.",
                   [("", self.quarantined)])
            metric("batches_total", "counter", "Committed batches.", [("", self.batches)])
            lines.append("# HELP pyticdc_batch_duration_seconds Seconds the last batch took (sum and count: all).")
            lines.append("# TYPE pyticdc_batch_duration_seconds gauge")
            lines.append(f"pyticdc_batch_duration_seconds {self.last_duration:.17g}")
            lines.append(f"pyticdc_batch_duration_seconds_sum {self.duration_sum:.17g}")
            lines.append(f"pyticdc_batch_duration_seconds_count {self.batches}")
            metric("last_batch_timestamp_seconds", "gauge", "Unix time the last batch committed (0: none yet).",
                   [("", self.last_batch_time)])
            lags = [(table(key), lag) for key, ts in sorted(self.complete_ts.items())
                    if (lag := _lag(ts, now)) is not None]
            metric("watermark_lag_seconds", "gauge", "Now minus the commit time each table is complete up to.", lags)
            global_lag = _lag(self.global_ts, now)
            metric("global_watermark_lag_seconds", "gauge", "Now minus the commit time the replica is complete up to.",
                   [] if global_lag is None else [("", global_lag)])
            metric("consistency_batch", "gauge", "1: a feed without watermarks, complete up to what was read.",
                   [("", 1.0 if self.batch_consistency else 0.0)])
            return "\n".join(lines) + "\n"


class MetricsServer:
    """Serves ``metrics.render()`` at ``/metrics`` on ``host:port`` from a daemon thread (port 0: any free one)."""

    def __init__(self, metrics: ReplicationMetrics, port: int, host: str = "0.0.0.0") -> None:
        render = metrics.render

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                """Answer a scrape."""
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404, "only /metrics is here")
                    return
                body = render().encode()
                self.send_response(200)
                self.send_header("Content-Type", _CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                # Scrapes every few seconds must not flood the replication's stderr.
                return

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        #: The port it listens on (the one chosen when ``port`` was 0).
        self.port = int(self._server.server_address[1])
        #: An address to reach it at from this machine.
        self.host_for_humans = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
        self._thread = threading.Thread(target=self._server.serve_forever, name="pyticdc-metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
