"""When TiCDC sends a Simple-protocol BOOTSTRAP (``pkg/sink/codec/bootstraper.go``, reference §6.3).

TiCDC's bootstrap worker keeps one record per table (keyed by physical table id): the first row
of a table it has not seen (or has forgotten) makes it send a BOOTSTRAP before that row; after
that a 5 s ticker sends one whenever ``send-bootstrap-interval-in-sec`` has passed since the last
one or ``send-bootstrap-in-msg-count`` rows arrived since. Tables without rows for 30 minutes are
forgotten. The worker only runs when both settings are > 0 (``SinkConfig.ShouldSendBootstrapMsg``);
so 0 in either (in particular both, as the docs say) disables BOOTSTRAP messages.

``BootstrapPolicy`` is that bookkeeping as a pure object fed explicit times: ``should_emit`` for
each arriving row (or batch of rows of one table) and ``due`` for a ticker pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyticdc.codec.options import CodecOptions
from pyticdc.model import TableInfo

__all__ = ["DEFAULT_MAX_INACTIVE_MS", "TICKER_INTERVAL_MS", "BootstrapPolicy", "TableRecord"]

#: ``defaultMaxInactiveDuration``: a table with no rows for this long is forgotten.
DEFAULT_MAX_INACTIVE_MS: Final = 30 * 60 * 1000
#: ``bootstrapWorkerTickerInterval``: how often TiCDC re-checks every table.
TICKER_INTERVAL_MS: Final = 5000


@dataclass(slots=True)
class TableRecord:
    """What the policy keeps of one table: its latest info, its last row, its last BOOTSTRAP."""

    table_info: TableInfo
    last_row_ms: int
    last_sent_ms: int
    rows_since_sent: int


class BootstrapPolicy:
    """Per-table BOOTSTRAP bookkeeping: which tables need one now (pure; times are passed in)."""

    def __init__(
        self, interval_sec: int = 120, msg_count: int = 10000, *, to_all_partitions: bool = True,
        max_inactive_ms: int = DEFAULT_MAX_INACTIVE_MS,
    ) -> None:
        self.interval_ms = interval_sec * 1000
        self.msg_count = msg_count
        #: ``send-bootstrap-to-all-partition``: every partition of the topic, or partition 0 only.
        self.to_all_partitions = to_all_partitions
        self.max_inactive_ms = max_inactive_ms
        self._tables: dict[int, TableRecord] = {}

    @classmethod
    def from_options(cls, options: CodecOptions) -> BootstrapPolicy:
        """The policy a Simple changefeed with these options runs."""
        return cls(options.send_bootstrap_interval_in_sec, options.send_bootstrap_in_msg_count,
                   to_all_partitions=options.send_bootstrap_to_all_partition)

    @property
    def enabled(self) -> bool:
        """Whether BOOTSTRAP messages are sent at all (both settings > 0)."""
        return self.interval_ms > 0 and self.msg_count > 0

    def should_emit(
        self, table_info: TableInfo, now_ms: int, row_count: int = 1, *, table_key: int | None = None
    ) -> bool:
        """Record ``row_count`` rows of a table arriving at ``now_ms``; True if a BOOTSTRAP goes first.

        A table seen for the first time (or forgotten after ``max_inactive_ms`` without rows) is
        bootstrapped at once and its first row is not counted, as in ``addEvent``; otherwise the
        ticker condition (interval elapsed or ``msg_count`` rows since the last one) is checked
        before these rows are counted. ``table_key`` defaults to ``table_info.table_id``; pass the
        physical (partition) table id for partitioned tables, as TiCDC keys by it.
        """
        interval_ms = self.interval_ms
        if interval_ms <= 0 or self.msg_count <= 0:  # not enabled; spelt out: this runs once per row
            return False
        key = table_info.table_id if table_key is None else table_key
        state = self._tables.get(key)
        if state is None or now_ms - state.last_row_ms > self.max_inactive_ms:
            self._tables[key] = TableRecord(table_info, now_ms, now_ms, max(row_count - 1, 0))
            return True
        due = now_ms - state.last_sent_ms >= interval_ms or state.rows_since_sent >= self.msg_count  # _is_due
        if due:
            state.last_sent_ms = now_ms
            state.rows_since_sent = 0
        state.rows_since_sent += row_count
        state.last_row_ms = now_ms
        # Rename keeps UpdateTS but changes the name: either refreshes the table info to send.
        current = state.table_info
        if current is not table_info and (
                current.schema_version != table_info.schema_version or current.table != table_info.table
                or current.schema != table_info.schema):
            state.table_info = table_info
        return due

    def record(self, table_key: int) -> TableRecord | None:
        """The record of a table, for a caller that counts a quiet row itself (see ``quiet``)."""
        return self._tables.get(table_key)

    def quiet(self, record: TableRecord, table_info: TableInfo, now_ms: int) -> bool:
        """Whether ``should_emit`` of a row arriving at ``now_ms`` would just count it in ``record``.

        That is: the table is not forgotten, no BOOTSTRAP is due, and ``table_info`` needs no
        refresh (it is the info the last ``should_emit`` of this table was given, or that record's
        own). The caller then does the counting itself, ``rows_since_sent += 1`` and
        ``last_row_ms = now_ms``, per row and without a call (the Simple encoder inlines this test).
        """
        return (table_info is record.table_info and now_ms - record.last_sent_ms < self.interval_ms
                and record.rows_since_sent < self.msg_count and now_ms - record.last_row_ms <= self.max_inactive_ms)

    def _is_due(self, state: TableRecord, now_ms: int) -> bool:
        return now_ms - state.last_sent_ms >= self.interval_ms or state.rows_since_sent >= self.msg_count

    def due(self, now_ms: int) -> list[TableInfo]:
        """A ticker pass: the tables that need a BOOTSTRAP now (marked as sent); forgets idle tables."""
        self.forget_idle(now_ms)
        result = []
        for state in self._tables.values():
            if self._is_due(state, now_ms):
                state.last_sent_ms = now_ms
                state.rows_since_sent = 0
                result.append(state.table_info)
        return result

    def forget_idle(self, now_ms: int) -> list[TableInfo]:
        """Drop tables without rows for more than ``max_inactive_ms``; returns what was dropped."""
        idle = [k for k, s in self._tables.items() if now_ms - s.last_row_ms > self.max_inactive_ms]
        return [self._tables.pop(k).table_info for k in idle]

    def partitions(self, partition_count: int) -> range:
        """The partitions a BOOTSTRAP goes to: all of them, or only partition 0."""
        return range(partition_count if self.to_all_partitions else min(partition_count, 1))

    def tracked(self) -> list[TableInfo]:
        """The table infos currently tracked (latest version seen per table)."""
        return [s.table_info for s in self._tables.values()]
