"""Charts of an inspected stream (matplotlib, imported only when a chart is drawn).

:func:`plot_summary` draws two panels sharing a time axis: row changes per second and watermark lag,
one line per partition, so a stalled partition or a burst shows at a glance.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from pyticdc.inspect.summary import StreamSummary

__all__ = ["plot_summary"]


def _times(values: list[int]) -> list[datetime.datetime]:
    return [datetime.datetime.fromtimestamp(v / 1000, tz=datetime.timezone.utc) for v in values]


def _lag_unit(max_lag_ms: int) -> tuple[float, str]:
    if max_lag_ms >= 120_000:
        return 60_000.0, "min"
    if max_lag_ms >= 5_000:
        return 1000.0, "s"
    return 1.0, "ms"


def plot_summary(summary: StreamSummary, path: str | Path, *, title: str | None = None, dpi: int = 120) -> Path:
    """Write a PNG of events per second and watermark lag over time, one line per partition; returns the path."""
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("plotting needs matplotlib: pip install 'pyticdc[plot]'") from None
    matplotlib.use("Agg")  # no display needed: this only ever writes files
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    path = Path(path)
    names = sorted(set(summary.events_over_time) | set(summary.lag_over_time),
                   key=lambda n: (n.rsplit("/", 1)[0], int(n.rsplit("/", 1)[1])))
    figure, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 7), constrained_layout=True)
    colors = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    bucket_s = summary.bucket_ms / 1000
    max_lag = max((p.lag_ms for series in summary.lag_over_time.values() for p in series), default=0)
    scale, unit = _lag_unit(max_lag)
    drawn_events = drawn_lag = False
    for index, name in enumerate(names):
        color: Any = colors(index % colors.N)
        events = summary.events_over_time.get(name, {})
        if events:
            starts = sorted(events)
            # Fill empty buckets with zero so a quiet partition drops to the axis instead of being interpolated.
            full = list(range(starts[0], starts[-1] + summary.bucket_ms, summary.bucket_ms))
            rates = [events.get(t, 0) / bucket_s for t in full]
            top.step(_times(full), rates, where="post", color=color, label=f"partition {name}", linewidth=1.4)
            drawn_events = True
        lags = summary.lag_over_time.get(name, [])
        if lags:
            # Watermarks are broadcast, so partitions often share one lag curve: earlier partitions are drawn
            # wider underneath, so every partition's colour stays visible where the lines coincide.
            width = 1.2 + 2.4 * (len(names) - 1 - index) / max(len(names) - 1, 1)
            bottom.step(_times([p.time_ms for p in lags]), [p.lag_ms / scale for p in lags], where="post",
                        color=color, label=f"partition {name}", linewidth=width, alpha=0.9)
            drawn_lag = True
    clock = "Kafka record time" if summary.kafka_timestamps else "commit time (records carry no Kafka timestamp)"
    top.set_ylabel(f"row changes per second\n({summary.bucket_ms} ms buckets)")
    top.set_title(title or f"{summary.protocol}: {summary.records} records, {summary.rows} row changes, "
                           f"{len(summary.partitions)} partitions")
    bottom.set_ylabel(f"watermark lag ({unit})")
    bottom.set_xlabel(f"{clock}, UTC")
    for axis, drawn, empty in ((top, drawn_events, "no row changes"), (bottom, drawn_lag, "no watermarks")):
        axis.grid(True, alpha=0.3)
        axis.set_ylim(bottom=0)
        if drawn:
            axis.legend(loc="upper left", fontsize="small", ncol=max(1, min(4, len(names) // 6 + 1)))
        else:
            axis.text(0.5, 0.5, empty, transform=axis.transAxes, ha="center", va="center", color="grey")
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path
