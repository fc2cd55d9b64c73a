"""``pyticdc replicate`` under a supervisor: a log line per batch, Prometheus metrics, the streaming checkpoint."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import IO, Any

from pyticdc.errors import ConfigError

__all__ = ["Operations", "add_operation_arguments", "detect_source_protocol"]


def add_operation_arguments(group: Any) -> None:
    """``--metrics-port``, ``--metrics-host`` and ``--checkpoint`` (in the command's "running" group)."""
    group.add_argument("--metrics-port", type=int, metavar="PORT",
                       help="serve Prometheus text metrics at http://HOST:PORT/metrics while replicating (records "
                            "read, rows applied per table, quarantined, watermark lag per table, batch duration, "
                            "last batch time); 0 picks a free port, said on stderr (default: no metrics)")
    group.add_argument("--metrics-host", default="0.0.0.0", metavar="ADDRESS",
                       help="address the metrics endpoint listens on (default 0.0.0.0)")
    group.add_argument("--checkpoint", metavar="DIR",
                       help="with --stream: Structured Streaming checkpoint directory (default "
                            "WAREHOUSE/_pyticdc/checkpoint); it only spares re-reading, the progress decides")


class Operations:
    """What runs beside the batches: the metrics endpoint, and a log line per batch when stderr is no terminal.

    Build it before any work (a port that cannot be bound is a usage error); call it with each committed
    batch's report after ``then`` (the progress display); ``close`` when done.
    """

    def __init__(self, args: argparse.Namespace, then: Callable[[Any], None], *,
                 stream: IO[str] | None = None) -> None:
        from pyticdc.replica.metrics import MetricsServer, ReplicationMetrics

        self._then = then
        self._stream = stream or sys.stderr
        terminal = bool(getattr(self._stream, "isatty", lambda: False)())
        #: One line per batch: streaming under a supervisor (stderr a pipe or file), unless --no-progress.
        self.log_lines = bool(args.stream) and not terminal and args.progress is not False
        self.metrics = ReplicationMetrics()
        self.server: MetricsServer | None = None
        port = args.metrics_port
        if port is not None:
            if not 0 <= port <= 65535:
                raise ConfigError(f"--metrics-port must be 0..65535, got {port}")
            try:
                self.server = MetricsServer(self.metrics, port, args.metrics_host)
            except OSError as exc:
                raise ConfigError(f"--metrics-port {port}: cannot listen on {args.metrics_host}: "
                                  f"{exc.strerror or exc}") from None

    def describe(self) -> str | None:
        """The line saying where the metrics are, if served."""
        if self.server is None:
            return None
        return f"metrics at http://{self.server.host_for_humans}:{self.server.port}/metrics"

    def __call__(self, report: Any) -> None:
        """Record one committed batch."""
        from pyticdc.replica.metrics import batch_log_line

        self._then(report)
        self.metrics.observe(report)
        if self.log_lines:
            self._stream.write(batch_log_line(report) + "\n")
            self._stream.flush()

    def close(self) -> None:
        """Stop the metrics endpoint."""
        if self.server is not None:
            self.server.close()
            self.server = None


def detect_source_protocol(source: Any, sample: int) -> tuple[str, dict[str, Any]]:
    """(protocol, options) detected from the first ``sample`` records of a ReplicationSource, as ``decode`` does."""
    import itertools

    from pyticdc.inspect.summary import detect_protocol

    if source.is_kafka:
        from pyticdc.io import kafka

        config = dict(source.kafka)
        ranges = kafka.offset_ranges(config, subscribe=source.topics, pattern=source.pattern, starting="earliest",
                                     ending="latest", fail_on_data_loss=False)

        def records() -> Any:
            for offset_range in ranges:
                yield from kafka.read_range(config, offset_range, poll_timeout=30.0, fail_on_data_loss=False)

        head = list(itertools.islice(records(), sample))
    else:
        from pyticdc.io.capture import read_capture

        head = list(itertools.islice(read_capture(source.paths.split(","), source.capture_format), sample))
    return detect_protocol(head)
