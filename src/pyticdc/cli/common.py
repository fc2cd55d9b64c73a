"""What every ``pyticdc`` command shares: one flag vocabulary, the progress bar, reading and writing records.

The same flag means the same thing in every command:

==================================  ==========================================================================
flag                                meaning
==================================  ==========================================================================
``CAPTURE ...`` (positional)        capture files, directories or globs to read
``-b/--bootstrap-servers``          the Kafka to read from (``produce``, which reads none, takes it as the
                                    Kafka to write to)
``-t/--topic``                      topics to read: repeat, comma-separate, or one regular expression
``--starting-offsets``,             the offsets to read, in the syntax of Spark's Kafka source
``--ending-offsets``
``--poll-timeout``,                 give up on a silent partition; whether deleted offsets are an error
``--fail-on-data-loss``
``-X NAME=VALUE``                   a librdkafka setting (every Kafka client the command opens)
``--capture-format``                format of the capture files read
``-p/--protocol``, ``-o/--option``  the codec of the messages read (``produce``: written), options by
                                    their TiCDC names
``-O/--output``,                    the file to write and its format
``--output-format``
``--output-bootstrap-servers``,     the Kafka to write to; the topic (expression) to write to
``--output-topic``
``--progress/--no-progress``        a progress bar on stderr
==================================  ==========================================================================

Exit status: 0 done; 1 the command ran and failed (records that do not decode, a Kafka or file error
while reading or writing); 2 a usage or configuration error found before anything was read or written.
Every error is one line on stderr: ``pyticdc COMMAND: error: ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, TypeVar

from pyticdc.errors import ConfigError, PyticdcError
from pyticdc.io.chunks import chunked
from pyticdc.model import KafkaRecord

if TYPE_CHECKING:
    from pyticdc.io.capture import BadLine
    from pyticdc.io.kafka import OffsetRange

__all__ = [
    "CONTAINERS",
    "FAILURE",
    "FILE_PARTITION",
    "REPORTED",
    "SCHEMA_EVOLUTIONS",
    "STDIN",
    "USAGE",
    "Input",
    "ProgressBar",
    "add_codec_arguments",
    "add_input_arguments",
    "add_modelling_flags",
    "add_output_arguments",
    "add_progress_argument",
    "add_raw_arguments",
    "add_routing_arguments",
    "add_settings_argument",
    "check_output",
    "codec_options",
    "counted",
    "input_topics",
    "is_stdin",
    "kafka_config",
    "load_rules",
    "modelling_from_args",
    "open_input",
    "parse_assignments",
    "progress_bar",
    "raw_input",
    "read_file",
    "report",
    "resolve_codec",
    "routing",
    "split_container",
    "split_lines",
    "with_offsets",
    "write_records",
    "written_atomically",
]

#: Exit status of a command that ran and failed.
FAILURE: Final = 1
#: Exit status of a usage or configuration error (nothing was read or written).
USAGE: Final = 2
#: Exceptions a command reports as one line (its own errors, bad values, unbuilt protocols, files).
REPORTED: Final = (PyticdcError, ValueError, NotImplementedError, OSError)
#: Records sampled to detect a protocol (``--protocol auto``).
DETECT_SAMPLE: Final = 200
#: Records produced to Kafka per producer flush (a flush waits for every delivery report).
_KAFKA_CHUNK: Final = 5000
#: Characters that make a ``-t/--topic`` value a regular expression (``.`` is common in topic names).
_REGEX_CHARS: Final = frozenset("*?[](){}|+^$\\")
_PROTOCOLS: Final = "open-protocol, canal-json, craft, debezium, simple"
#: A file argument naming standard input.
STDIN: Final = "-"
#: ``--container`` name → the terminator between messages (TiCDC storage sink ``terminator``).
CONTAINERS: Final = {"crlf": b"\r\n", "lf": b"\n"}
#: Partition of records that are not Kafka records: raw messages printed by ``decode``, bad capture lines.
FILE_PARTITION: Final = -1
_T = TypeVar("_T")


def report(args: argparse.Namespace, exc: BaseException | str, status: int) -> int:
    """Print ``pyticdc COMMAND: error: ...`` on stderr; returns ``status``."""
    command = getattr(args, "command", None)
    print(f"pyticdc{' ' + command if command else ''}: error: {exc}", file=sys.stderr)
    return status


def parse_assignments(items: Sequence[str] | None, flag: str, *, hint: str = "") -> dict[str, str]:
    """``["name=value", ...]`` as a dict; ConfigError naming ``flag`` (and a ``hint``) for an item without ``=``."""
    result: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{flag} takes NAME=VALUE, got {item!r}{hint}")
        result[name.strip()] = value.strip()
    return result


# --------------------------------------------------------------------------- progress
class ProgressBar:
    """Progress on a stream (stderr): count, rate and ETA; silent unless enabled.

    On a terminal the line is redrawn in place at most 10 times a second; elsewhere (a log file) a line is
    written at every tenth of a known total, and a last one when closed.
    """

    def __init__(self, label: str, total: int | None = None, *, enabled: bool = True, stream: IO[str] | None = None,
                 unit: str = "records") -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.count = 0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._start = time.monotonic()
        self._drawn = 0.0
        self._width = 0
        self._tenth = -1

    def update(self, count: int = 1) -> None:
        """Advance by ``count``."""
        self.count += count
        if not self.enabled:
            return
        if self._tty:
            if time.monotonic() - self._drawn >= 0.1:
                self._draw(final=False)
        elif self.total:
            tenth = min(10, self.count * 10 // self.total)
            if tenth > self._tenth:
                self._tenth = tenth
                self._draw(final=False)

    def text(self) -> str:
        """The progress line as it stands."""
        elapsed = max(time.monotonic() - self._start, 1e-9)
        rate = self.count / elapsed
        if not self.total:
            return f"{self.label} {self.count} {self.unit} {rate:,.0f}/s"
        done = min(1.0, self.count / self.total)
        filled = int(done * 30)
        eta = (self.total - self.count) / rate if rate > 0 and self.count < self.total else 0.0
        return (f"{self.label} [{'#' * filled}{'-' * (30 - filled)}] {self.count}/{self.total} {self.unit} "
                f"{done:4.0%} {rate:,.0f}/s ETA {eta:,.0f}s")

    def _draw(self, final: bool) -> None:
        self._drawn = time.monotonic()
        text = self.text()
        if self._tty:
            self.stream.write("\r" + text.ljust(self._width) + ("\n" if final else ""))
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state (on a terminal: end the line)."""
        if self.enabled and (self._tty or self._tenth < 10):
            self._draw(final=True)
            self._tenth = 10

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def counted(items: Iterable[_T], step: Callable[[], object]) -> Iterator[_T]:
    """``items``, calling ``step`` after each (a progress bar's ``update``)."""
    for item in items:
        yield item
        step()


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress``."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress bar on stderr; on a non-terminal a line per tenth of the work "
                             "(default: when stderr is a terminal)")


def progress_bar(args: argparse.Namespace, label: str, total: int | None, *, unit: str = "records",
                 shares_terminal: bool = False) -> ProgressBar:
    """The command's progress bar: ``--progress``, or by default when stderr is a terminal the output does not
    share (``shares_terminal``: the command prints its results there)."""
    enabled = args.progress
    if enabled is None:
        enabled = bool(sys.stderr.isatty()) and not shares_terminal
    return ProgressBar(label, total, enabled=bool(enabled), unit=unit)


# --------------------------------------------------------------------------- input
def add_settings_argument(group: argparse._ActionsContainer) -> None:
    """``-X NAME=VALUE`` librdkafka settings."""
    group.add_argument("-X", dest="kafka_settings", action="append", metavar="NAME=VALUE",
                       help="librdkafka setting for every Kafka client of the command, repeatable, e.g. "
                            "-X security.protocol=SASL_SSL (default: librdkafka's)")


def add_input_arguments(parser: argparse.ArgumentParser, *, files: bool = True) -> None:
    """Where records come from: capture files (``files``) or ``-b``/``-t`` Kafka topics, with the offsets to read."""
    group = parser.add_argument_group("input: capture files or Kafka" if files else "input: Kafka")
    if files:
        group.add_argument("captures", nargs="*", type=Path, metavar="CAPTURE",
                           help="capture files, directories or globs to read: pyticdc JSON Lines (.jsonl, "
                                ".jsonl.gz), Parquet with Spark's Kafka columns, or kcat -J output "
                                "(default: none; read Kafka with -b and -t instead)")
        group.add_argument("--capture-format", default="auto", choices=("auto", "jsonl", "parquet", "kcat"),
                           help="format of the capture files (default auto: parquet for .parquet names and "
                                "directories, else from the first line)")
    need = "" if files else "required"
    group.add_argument("-b", "--bootstrap-servers", metavar="HOST:PORT[,...]", required=not files,
                       help=f"Kafka brokers to read from ({need or 'default: none, read capture files'})")
    group.add_argument("-t", "--topic", dest="topics", action="append", metavar="TOPIC", required=not files,
                       help="topic to read; repeat or comma-separate for several, or give one regular expression "
                            f"(full match) ({need or 'required with -b'})")
    group.add_argument("--starting-offsets", default="earliest", metavar="SPEC",
                       help='first offsets to read: earliest, latest or JSON {"topic": {"0": 23}} (default earliest)')
    group.add_argument("--ending-offsets", default="latest", metavar="SPEC",
                       help='where to stop (exclusive): latest (the high watermark when reading starts) or JSON '
                            '{"topic": {"0": 50}} (default latest)')
    group.add_argument("--poll-timeout", type=float, default=60.0, metavar="SECONDS",
                       help="give up on a partition that delivers nothing for this long (default 60)")
    group.add_argument("--fail-on-data-loss", action=argparse.BooleanOptionalAction, default=True,
                       help="fail when offsets to read were deleted; --no-fail-on-data-loss reads what is left "
                            "(default: fail)")
    add_settings_argument(group)


def input_topics(args: argparse.Namespace) -> list[str]:
    """The ``-t/--topic`` values: comma-separated names split, a regular expression kept whole."""
    topics: list[str] = []
    for item in getattr(args, "topics", None) or ():
        if _REGEX_CHARS & set(item):
            topics.append(item.strip())
        else:
            topics.extend(t.strip() for t in item.split(",") if t.strip())
    return topics


def kafka_config(args: argparse.Namespace, servers: str | None = None) -> dict[str, str]:
    """librdkafka configuration from ``-X`` settings and ``servers`` (default ``-b/--bootstrap-servers``)."""
    config = parse_assignments(getattr(args, "kafka_settings", None), "-X")
    chosen = servers or getattr(args, "bootstrap_servers", None)
    if chosen:
        config["bootstrap.servers"] = chosen
    if not config.get("bootstrap.servers"):
        raise ConfigError("Kafka needs -b/--bootstrap-servers HOST:PORT (or -X bootstrap.servers=...)")
    return config


@dataclass
class Input:
    """Records to read, and what is known of them before reading."""

    records: Iterable[KafkaRecord]
    #: How many records (None: unknown until read, e.g. capture files).
    total: int | None = None
    #: Partition count of each topic read (None: unknown, e.g. capture files).
    partitions: dict[str, int] | None = None
    #: The Kafka offset ranges read, in reading order (empty for capture files).
    ranges: list[OffsetRange] = field(default_factory=list)


def add_raw_arguments(parser: argparse.ArgumentParser) -> None:
    """``--value/--key/--lines/--container``: raw message files instead of captures or Kafka."""
    raw = parser.add_argument_group("input: raw message files (instead of captures or Kafka)")
    raw.add_argument("--value", type=Path, metavar="FILE",
                     help="a file holding one message value, as the Kafka record carried it; - reads standard "
                          "input (default: none)")
    raw.add_argument("--key", type=Path, metavar="FILE",
                     help="with --value: the message's Kafka key (Open Protocol needs it; Craft has none) "
                          "(default: no key)")
    raw.add_argument("--lines", type=Path, metavar="FILE",
                     help="a file of messages, one per line; blank lines and /* ... */, # and // comment lines "
                          "are skipped; - reads standard input (default: none)")
    raw.add_argument("--container", choices=tuple(CONTAINERS),
                     help="with --value: the file is a TiCDC storage-sink file of several messages separated by "
                          "CRLF or LF, the last terminator optional (default: one message)")


def split_container(data: bytes, terminator: bytes) -> list[bytes]:
    """The messages of a storage-sink file: ``data`` split at ``terminator``, a final terminator optional."""
    if not data:
        return []
    parts = data.split(terminator)
    if not parts[-1]:
        parts.pop()  # the file ended with a terminator
    return parts


def split_lines(data: bytes) -> tuple[list[bytes], int]:
    """(messages, lines skipped) of a one-message-per-line file.

    Lines end at LF, CRLF or CR (Java ``readAllLines``). Skipped: blank lines, ``#`` and ``//`` lines and
    ``/* ... */`` blocks (test resources such as Paimon's start with a licence comment); a message line
    never starts with those (JSON starts with ``{``).
    """
    messages: list[bytes] = []
    skipped = 0
    in_comment = False
    for line in data.splitlines():
        text = line.strip()
        if in_comment:
            skipped += 1
            in_comment = b"*/" not in text
        elif not text or text.startswith((b"#", b"//")):
            skipped += 1
        elif text.startswith(b"/*"):
            skipped += 1
            in_comment = b"*/" not in text[2:]
        else:
            messages.append(line)
    return messages, skipped


def is_stdin(path: Path | str | None) -> bool:
    """Whether a file argument is ``-`` (standard input)."""
    return path is not None and str(path) == STDIN


def read_file(path: Path, what: str) -> bytes:
    """The bytes of ``path`` (``-``: standard input); ConfigError naming the flag ``what`` when unreadable."""
    if is_stdin(path):
        return sys.stdin.buffer.read()
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None


def raw_input(args: argparse.Namespace, *, partition: int = FILE_PARTITION) -> Input | None:
    """The records of ``--value``/``--key``/``--lines``/``--container``, or None when none is given.

    A message is a record of topic ``file:PATH`` and offset = its index in the file; ``partition`` is -1
    for a command that only prints (not a Kafka partition), 0 for one that consumes (a consumer needs one).
    """
    value: Path | None = getattr(args, "value", None)
    lines: Path | None = getattr(args, "lines", None)
    key: Path | None = getattr(args, "key", None)
    container: str | None = getattr(args, "container", None)
    if value is None and lines is None:
        if key is not None or container is not None:
            raise ConfigError(f"{'--key' if key is not None else '--container'} needs --value FILE")
        return None
    if getattr(args, "captures", None) or getattr(args, "bootstrap_servers", None) or getattr(args, "topics", None):
        raise ConfigError("read either raw message files (--value, --lines) or capture files or Kafka, not both")
    if value is not None and lines is not None:
        raise ConfigError("give --value FILE (one message, or a --container file) or --lines FILE, not both")
    if is_stdin(key) and (is_stdin(value) or is_stdin(lines)):
        raise ConfigError("only one of --value and --key can be - (standard input)")
    if lines is not None:
        if key is not None or container is not None:
            raise ConfigError("--key and --container go with --value, not --lines")
        path: Path = lines
        values, skipped = split_lines(read_file(path, "--lines"))
        if skipped:
            print(f"skipped {skipped} blank or comment lines of {path}", file=sys.stderr)
        keys: list[bytes | None] = [None] * len(values)
    elif container is not None:
        if key is not None:
            raise ConfigError("--key does not go with --container (storage-sink files carry no keys)")
        assert value is not None
        path = value
        values = split_container(read_file(path, "--value"), CONTAINERS[container])
        keys = [None] * len(values)
    else:
        assert value is not None
        path = value
        values = [read_file(path, "--value")]
        keys = [None if key is None else read_file(key, "--key")]
    topic = f"file:{path}"
    records = [KafkaRecord(topic=topic, partition=partition, offset=i, key=k, value=v)
               for i, (k, v) in enumerate(zip(keys, values))]
    return Input(records, total=len(records), partitions={topic: 1} if partition >= 0 else None)


def open_input(args: argparse.Namespace, *, on_bad_line: Callable[[BadLine], None] | None = None,
               raw_partition: int = FILE_PARTITION) -> Input:
    """The records the input arguments name; errors (missing files, unknown topics, bad offsets) are raised now.

    Raw message files (:func:`raw_input`, records of partition ``raw_partition``) when the command has those
    flags, else capture files (``-``: JSON Lines on standard input), else Kafka. ``on_bad_line`` receives
    capture lines that are not records (instead of failing with CaptureError).
    """
    raw = raw_input(args, partition=raw_partition)
    if raw is not None:
        return raw
    captures: Sequence[Path] = getattr(args, "captures", None) or ()
    topics = input_topics(args)
    if captures and (topics or args.bootstrap_servers):
        raise ConfigError("read either capture files or Kafka (-b/--bootstrap-servers with -t/--topic), not both")
    if captures:
        return _capture_input(captures, args.capture_format, on_bad_line)
    if not topics:
        if args.bootstrap_servers:
            raise ConfigError("-t/--topic is required with -b/--bootstrap-servers")
        raise ConfigError("give capture files to read, or -b/--bootstrap-servers with -t/--topic")
    from pyticdc.io import kafka

    config = kafka_config(args)
    patterns = [t for t in topics if _REGEX_CHARS & set(t)]
    if patterns and len(topics) > 1:
        raise ConfigError(f"-t/--topic takes topic names or one regular expression, not both: {', '.join(topics)}")
    ranges = kafka.offset_ranges(config, subscribe=None if patterns else ",".join(topics),
                                 pattern=patterns[0] if patterns else None, starting=args.starting_offsets,
                                 ending=args.ending_offsets, fail_on_data_loss=args.fail_on_data_loss)
    counts: dict[str, int] = {}
    for offset_range in ranges:
        counts[offset_range.topic] = max(counts.get(offset_range.topic, 0), offset_range.partition + 1)

    def records() -> Iterator[KafkaRecord]:
        for offset_range in ranges:
            yield from kafka.read_range(config, offset_range, poll_timeout=args.poll_timeout,
                                        fail_on_data_loss=args.fail_on_data_loss)

    return Input(records(), sum(r.size for r in ranges), counts, ranges)


def _capture_input(paths: Sequence[Path], capture_format: str,
                   on_bad_line: Callable[[BadLine], None] | None) -> Input:
    from pyticdc.io.capture import BadLine, CaptureSplit, capture_files, detect_format, import_parquet, read_split

    if any(is_stdin(p) for p in paths):
        if len(paths) > 1:
            raise ConfigError("- (a capture on standard input) cannot be combined with capture files")
        return Input(_stdin_records(capture_format, on_bad_line))
    files = capture_files(list(paths))
    formats = [detect_format(path, capture_format) for path in files]
    if "parquet" in formats:
        import_parquet()

    def records() -> Iterator[KafkaRecord]:
        for path, kind in zip(files, formats):
            for item in read_split(CaptureSplit(str(path), kind), lenient=on_bad_line is not None):
                if isinstance(item, BadLine):
                    assert on_bad_line is not None
                    on_bad_line(item)
                else:
                    yield item

    return Input(records())


def _stdin_records(capture_format: str, on_bad_line: Callable[[BadLine], None] | None) -> Iterator[KafkaRecord]:
    """The records of a JSON Lines capture (pyticdc or ``kcat -J``) on standard input."""
    from pyticdc.errors import CaptureError
    from pyticdc.io.capture import BadLine, parse_line

    if capture_format == "parquet":
        raise ConfigError("a capture on standard input (-) is JSON Lines (pyticdc or kcat -J), not Parquet")
    kind = capture_format
    position = 0
    for line in sys.stdin.buffer:
        at = position
        position += len(line)
        if not line.strip():
            continue
        if kind == "auto":
            kind = "kcat" if b'"payload"' in line and b'"value"' not in line else "jsonl"
        try:
            yield parse_line(line, kind, f"{STDIN} (byte {at})")
        except CaptureError as exc:
            if on_bad_line is None:
                raise
            on_bad_line(BadLine(STDIN, at, line.rstrip(b"\r\n"), str(exc)))


# --------------------------------------------------------------------------- codec
def add_codec_arguments(parser: argparse.ArgumentParser, *, detect: bool, title: str = "codec",
                        aliases: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())) -> None:
    """``-p/--protocol`` and ``-o/--option``: of the messages read (``detect``: auto by default) or written.

    ``aliases`` adds more flags for the protocol and for the option (convert: ``--from``, ``--from-option``).
    """
    group = parser.add_argument_group(title)
    if detect:
        group.add_argument("-p", "--protocol", *aliases[0], default="auto", metavar="PROTOCOL",
                           help=f"protocol of the messages read: {_PROTOCOLS}, or auto (default auto: the one "
                                f"that decodes most of the first {DETECT_SAMPLE} records)")
    else:
        group.add_argument("-p", "--protocol", *aliases[0], required=True, metavar="PROTOCOL",
                           help=f"protocol to write: {_PROTOCOLS} (required)")
    group.add_argument("-o", "--option", *aliases[1], dest="options", action="append", metavar="NAME=VALUE",
                       help="codec option by its TiCDC name, repeatable, e.g. -o enable-tidb-extension=true "
                            "(default: TiCDC's defaults" + (", plus what auto detection finds)" if detect else ")"))


def codec_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``-o/--option`` assignments (ConfigError for one without ``=``, pointing at ``-O`` for a file name)."""
    return dict(parse_assignments(args.options, "-o/--option", hint=" (the output file is -O/--output)"))


def resolve_codec(
    args: argparse.Namespace, records: Iterable[KafkaRecord],
) -> tuple[str, dict[str, Any], Iterator[KafkaRecord]]:
    """(protocol, options, records): ``--protocol auto`` detected from the first records (said on stderr)."""
    from pyticdc.codec import canonical_protocol

    options = codec_options(args)
    iterator = iter(records)
    if args.protocol != "auto":
        return canonical_protocol(args.protocol), options, iterator
    from pyticdc.inspect.summary import detect_protocol

    head = list(itertools.islice(iterator, DETECT_SAMPLE))
    protocol, detected = detect_protocol(head)
    said = "".join(f" -o {k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in detected.items())
    print(f"detected protocol {protocol}" + (f" ({said.strip()})" if said else ""), file=sys.stderr)
    return protocol, {**detected, **options}, itertools.chain(head, iterator)


# --------------------------------------------------------------------------- replica tables
#: ``--schema-evolution`` modes, as ``Modelling.schema_evolution`` takes them.
SCHEMA_EVOLUTIONS: Final = ("follow", "add-only", "fail", "rescue")
_MODELLING_HELP: Final = {
    "--metadata-columns": "comma-separated metadata columns to add to every replica table: _op (last change), "
                          "_ingested_at, _source_topic, _source_partition, _source_offset (the record the last "
                          "change was read from; driver engine) (default none); _commit_ts and _commit_time are "
                          "always there (naming them is allowed)",
    "--soft-delete": "keep deleted rows with _is_deleted = true (a re-insert brings them back); default: delete them",
    "--table-key": "find rows of tables matching the TiDB table-filter PATTERN by these columns, for tables whose "
                   "messages name no usable key (e.g. shop.orders=order_no,line), repeatable (default: the key the "
                   "messages name, else _tidb_rowid, else a digest of the row)",
    "--on-truncate": "an upstream TRUNCATE TABLE empties the replica table (apply, default) or is ignored",
    "--history": "keep every version of every row of tables matching this TiDB table filter in a history table "
                 "(SCD type 2) next to the replica, repeatable or comma-separated (driver engine; default none)",
    "--history-columns": "with --history: open a new version only when one of these columns changes (other changes "
                         "update the current version), e.g. 'shop.orders=status', repeatable (default: every change "
                         "opens one)",
    "--history-table-name": "name of a history table, {table} being its replica table's name (after --table-name; "
                            "default {table}__history)",
    "--columns": "replicate only these (upstream) columns of tables matching the TiDB table-filter PATTERN, e.g. "
                 "'shop.orders=id,amount', repeatable, first match wins (default: every column)",
    "--exclude-columns": "leave these columns out of tables matching PATTERN, e.g. 'shop.*=secret', repeatable, first "
                         "match wins (handle and --table-key columns cannot be left out)",
    "--rename-column": "name the replica column of upstream column COL of tables matching PATTERN NEW, e.g. "
                       "'shop.orders.amt=amount' (kept across upstream renames), repeatable",
    "--table-name": "replica table name of upstream tables matching PATTERN, {schema} and {table} standing for the "
                    "upstream names, e.g. 'shop.*=bronze.shop_{table}', repeatable, first match wins",
    "--schema-evolution": "what column DDL does to replica tables: follow (default), add-only (drops and renames keep "
                          "the old column), fail (stop before it, exit 1), rescue (values the table cannot hold go to "
                          "a _rescued_data JSON column)",
}


def add_modelling_flags(parser: argparse.ArgumentParser, *, description: str | None = None, on_truncate: bool = True,
                        evolutions: Sequence[str] = SCHEMA_EVOLUTIONS, helps: Mapping[str, str] | None = None) -> None:
    """The "replica tables" group: how upstream tables become replica tables (read by :func:`modelling_from_args`).

    ``on_truncate`` adds ``--on-truncate``; ``evolutions`` are the ``--schema-evolution`` modes offered; ``helps``
    replaces help texts by flag, for a command that checks replicas rather than writing them (selftest).
    """
    texts = {**_MODELLING_HELP, **(helps or {})}
    if set(texts) != set(_MODELLING_HELP):
        raise ValueError(f"help for unknown flag(s) {', '.join(sorted(set(texts) - set(_MODELLING_HELP)))}")
    group = parser.add_argument_group("replica tables", description)
    group.add_argument("--metadata-columns", metavar="NAMES", help=texts["--metadata-columns"])
    group.add_argument("--soft-delete", action="store_true", help=texts["--soft-delete"])
    group.add_argument("--table-key", dest="keys", action="append", default=[], metavar="PATTERN=COL[,COL...]",
                       help=texts["--table-key"])
    if on_truncate:
        group.add_argument("--on-truncate", choices=("apply", "ignore"), default="apply", help=texts["--on-truncate"])
    group.add_argument("--history", action="append", default=[], metavar="PATTERN", help=texts["--history"])
    group.add_argument("--history-columns", action="append", default=[], metavar="PATTERN=COL[,COL...]",
                       help=texts["--history-columns"])
    group.add_argument("--history-table-name", metavar="TEMPLATE", help=texts["--history-table-name"])
    group.add_argument("--columns", dest="include_columns", action="append", default=[],
                       metavar="PATTERN=COL[,COL...]", help=texts["--columns"])
    group.add_argument("--exclude-columns", action="append", default=[], metavar="PATTERN=COL[,COL...]",
                       help=texts["--exclude-columns"])
    group.add_argument("--rename-column", action="append", default=[], metavar="PATTERN.COL=NEW",
                       help=texts["--rename-column"])
    group.add_argument("--table-name", action="append", default=[], metavar="PATTERN=SCHEMA.TABLE",
                       help=texts["--table-name"])
    group.add_argument("--schema-evolution", choices=tuple(evolutions), default="follow",
                       help=texts["--schema-evolution"])


def modelling_from_args(args: argparse.Namespace) -> Any:
    """The Modelling the "replica tables" flags describe (ConfigError for a bad one; ``apply`` without
    ``--on-truncate``)."""
    from pyticdc.replica.mapping import NameMapping
    from pyticdc.replica.modelling import Modelling

    mapping = NameMapping.parse(columns=args.include_columns, exclude_columns=args.exclude_columns,
                                rename_columns=args.rename_column, table_names=args.table_name)
    return Modelling.parse(metadata_columns=args.metadata_columns, soft_delete=args.soft_delete, keys=args.keys,
                           on_truncate=getattr(args, "on_truncate", "apply"), history=args.history,
                           history_columns=args.history_columns, history_table_name=args.history_table_name,
                           mapping=mapping, schema_evolution=args.schema_evolution)


# --------------------------------------------------------------------------- output
def add_output_arguments(parser: argparse.ArgumentParser, *, kafka: bool, required: bool = False,
                         kafka_aliases: tuple[str, ...] = (), settings: bool = False) -> None:
    """``-O/--output FILE`` and ``--output-format``; with ``kafka``, ``--output-bootstrap-servers`` as the other
    destination (``kafka_aliases``: more flags for it) and, with ``settings``, ``-X``."""
    group = parser.add_argument_group("output (one of)" if kafka else "output")
    group.add_argument("-O", "--output", type=Path, metavar="FILE", required=required,
                       help="capture file to write: .jsonl, .jsonl.gz (gzip) or .parquet "
                            f"({'required' if required else 'default: none'})")
    group.add_argument("--output-format", choices=("auto", "jsonl", "parquet"), default="auto",
                       help="format of the --output file (default auto: parquet for a .parquet name, else jsonl)")
    if kafka:
        group.add_argument("--output-bootstrap-servers", *kafka_aliases, metavar="HOST:PORT[,...]",
                           help="Kafka brokers to write to instead; topics are created with --partitions "
                                "partitions, -X settings apply (default: none)")
        if settings:
            add_settings_argument(group)


def add_routing_arguments(parser: argparse.ArgumentParser, *, topic_aliases: tuple[str, ...] = ()) -> None:
    """``--output-topic`` (``topic_aliases``: more flags for it), ``--default-topic``, ``--dispatchers``,
    ``--partitions``: TiCDC's routing of what is written."""
    group = parser.add_argument_group("routing (as a TiCDC changefeed would)")
    group.add_argument("--output-topic", *topic_aliases, dest="output_topic", default="ticdc", metavar="EXPR",
                       help="topic to write: a name (the sink URI's topic), or a TiCDC topic expression like "
                            "cdc_{schema}_{table} for every table the dispatch rules do not place (default ticdc)")
    group.add_argument("--default-topic", default="ticdc", metavar="NAME",
                       help="with an --output-topic expression: the topic of schema-level DDL and watermarks "
                            "(default ticdc)")
    group.add_argument("--dispatchers", type=Path, metavar="FILE",
                       help="TiCDC changefeed config TOML whose [[sink.dispatchers]] rules route rows and DDL "
                            "(default: none, TiCDC's default dispatch)")
    group.add_argument("--partitions", type=int, default=3, metavar="N",
                       help="partitions of every topic written (default 3, as TiCDC creates topics)")


def load_rules(path: Path | None) -> list[Any]:
    """Dispatch rules from a changefeed TOML file (none when no file)."""
    if path is None:
        return []
    from pyticdc.routing import rules_from_toml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read dispatchers file {path}: {exc.strerror}") from None
    return rules_from_toml(text)


def routing(args: argparse.Namespace) -> tuple[str, list[Any]]:
    """(default topic, dispatch rules) from ``--output-topic``, ``--default-topic`` and ``--dispatchers``.

    A static topic is the default topic, as the topic of a TiCDC sink URI; an expression becomes a last
    catch-all rule (``matcher = ["*.*"]``), as if written in the changefeed's ``[[sink.dispatchers]]``.
    """
    from pyticdc.routing import is_static_topic, validate_topic_expression

    if args.partitions < 1:
        raise ConfigError("--partitions must be >= 1")
    rules = load_rules(args.dispatchers)
    if is_static_topic(args.output_topic):
        return args.output_topic, rules
    validate_topic_expression(args.output_topic)
    return args.default_topic, [*rules, {"matcher": ["*.*"], "topic": args.output_topic}]


def check_output(args: argparse.Namespace) -> str:
    """Check the destination before anything is read; returns its capture format (``kafka`` for Kafka)."""
    from pyticdc.io.capture import import_parquet, writable_format

    servers = getattr(args, "output_bootstrap_servers", None)
    if (args.output is None) == (servers is None):
        raise ConfigError("give one destination: -O/--output FILE or --output-bootstrap-servers HOST:PORT")
    if servers is not None:
        kafka_config(args, servers)
        return "kafka"
    kind = writable_format(args.output, args.output_format)
    if kind == "parquet":
        import_parquet()
    return kind


def with_offsets(records: Iterable[KafkaRecord]) -> Iterator[KafkaRecord]:
    """Records numbered per partition from 0 as Kafka would (records that have an offset keep it)."""
    import msgspec

    next_offset: dict[tuple[str, int], int] = {}
    for record in records:
        tp = (record.topic, record.partition)
        if record.offset < 0:
            record = msgspec.structs.replace(record, offset=next_offset.get(tp, 0))
        next_offset[tp] = record.offset + 1
        yield record


@contextlib.contextmanager
def written_atomically(path: Path) -> Iterator[Path]:
    """A temporary name next to ``path`` to write to, renamed to ``path`` when the block ends without error and
    removed when it raises: a command that fails midway leaves no partial output file."""
    # Same directory (a rename within one file system) and the same suffix (.gz, .parquet pick the format).
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}{''.join(path.suffixes)}")
    try:
        yield partial
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def write_records(
    args: argparse.Namespace, records: Iterable[KafkaRecord], partition_count: Callable[[str], int] | None = None,
) -> tuple[int, str]:
    """Write records to ``--output`` or ``--output-bootstrap-servers`` (see :func:`check_output`); (how many, where).

    ``partition_count`` gives the partitions of a Kafka topic to create (default ``--partitions``).
    """
    kind = check_output(args)
    if kind != "kafka":
        from pyticdc.io.capture import CaptureWriter

        with written_atomically(args.output) as partial, CaptureWriter(partial, kind) as writer:
            writer.write_all(with_offsets(records))
        return writer.count, f"{args.output} ({kind})"
    from pyticdc.io import kafka

    config = kafka_config(args, args.output_bootstrap_servers)
    created: set[str] = set()
    count = 0
    for chunk in chunked(records, _KAFKA_CHUNK):
        for topic in sorted({r.topic for r in chunk} - created):
            kafka.create_topic(config, topic, partition_count(topic) if partition_count else args.partitions)
            created.add(topic)
        count += len(kafka.produce_records(config, chunk))
    return count, f"Kafka {config['bootstrap.servers']} topics {', '.join(sorted(created)) or '-'}"
