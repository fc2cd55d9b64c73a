"""``pyticdc decode``: print the events of capture files, Kafka topics or raw message files as event JSON or text.

    pyticdc decode -p canal-json -o enable-tidb-extension=true capture.jsonl
    pyticdc decode -b broker:9092 -t cdc --format text
    pyticdc decode -p open-protocol --value value.bin --key key.bin
    pyticdc decode -p craft --value row_0
    pyticdc decode -p canal-json --lines canal-data.txt --kind row --limit 20 -O events.jsonl
    pyticdc decode -p canal-json -o enable-tidb-extension=true --value CDC000001.json --container crlf

Input: capture files or Kafka (the shared flags, :mod:`pyticdc.cli.common`), or raw message bytes:
``--value FILE [--key FILE]`` (one message), ``--lines FILE`` (one message per line; blank lines and
``/* ... */``, ``#`` and ``//`` comment lines are skipped and counted on stderr) or ``--value FILE
--container crlf|lf`` (a TiCDC storage-sink file: messages separated by CRLF or LF, the last
terminator optional). A raw message is a record of topic ``file:PATH``, partition -1 and offset = its
index in the file (0-based). The protocol is detected from the first records unless ``-p`` names it
(for raw files too; name it when a file is too small to tell).

Output (``--format``, alias ``--output-format``): ``jsonl`` (default) one event-JSON object per line
(:mod:`pyticdc.io.eventjson`, documented in ``docs/event-json.md``); ``text`` the same events, one
readable line each. A record that does not decode, and a capture line that is not a record (topic
``file:PATH``, offset = its byte position), is a ``kind: "error"`` object. Works with the base install:
only Parquet captures need pyarrow.

Exit status: 0 when every record decoded, 1 when some did not (they are printed as ``error`` events)
or reading failed midway, 2 on a usage or configuration error (nothing printed).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pyticdc.cli.common import (
    CONTAINERS,
    FAILURE,
    REPORTED,
    USAGE,
    add_codec_arguments,
    add_input_arguments,
    add_progress_argument,
    add_raw_arguments,
    counted,
    open_input,
    progress_bar,
    report,
    resolve_codec,
    split_container,
    split_lines,
)
from pyticdc.io.eventjson import KINDS, dumps, error_to_json, event_to_json, event_to_text
from pyticdc.model import Event, KafkaRecord

if TYPE_CHECKING:
    from pyticdc.arrow.rows import RecordDecoder

__all__ = ["CONTAINERS", "add_parser", "split_container", "split_lines"]



def add_parser(subparsers: Any) -> None:
    """Register ``decode``."""
    parser = subparsers.add_parser(
        "decode", help="print the events of capture files, topics or raw message files as event JSON or text",
        description="Decode TiCDC Kafka messages from capture files, Kafka topics or raw message files and print "
                    "one line per event (event JSON, documented in docs/event-json.md, or text).")
    add_input_arguments(parser)
    add_raw_arguments(parser)
    add_codec_arguments(parser, detect=True)
    group = parser.add_argument_group("output")
    group.add_argument("-O", "--output", type=Path, metavar="FILE",
                       help="write the events to this file (default: standard output)")
    group.add_argument("--format", "--output-format", dest="format", default="jsonl", choices=("jsonl", "text"),
                       help="jsonl: one event-JSON object per line (docs/event-json.md); text: one readable line "
                            "per event (default jsonl)")
    group.add_argument("--kind", action="append", choices=KINDS,
                       help="print only events of this kind, repeatable (default: every kind)")
    group.add_argument("--limit", type=int, default=None, metavar="N",
                       help="stop after printing N events (default: no limit)")
    add_progress_argument(parser)
    parser.set_defaults(run=run_decode)


# --------------------------------------------------------------------------- decoding
def _event_stream(decoder: RecordDecoder, records: Iterator[KafkaRecord]) -> Iterator[tuple[Any, ...]]:
    """(record, index, event or None, reason or None) in output order, through the Spark decode path's
    per-partition decoders (which hold Simple rows until their schema arrives)."""
    from pyticdc.arrow.rows import EventRowBuilder

    class Collector(EventRowBuilder):
        """Keeps the events themselves instead of building DataFrame rows."""

        def add_event(self, record: KafkaRecord, index: int, event: Event) -> None:
            self.rows.append((record, index, event, None))

        def add_error(self, record: KafkaRecord, reason: str) -> None:
            self.rows.append((record, 0, None, reason))

    decoder.out = Collector()
    yield from decoder.decode_rows(records)
    yield from decoder.finish_rows()


def run_decode(args: argparse.Namespace) -> int:
    """Print events; 1 if any record failed to decode, 2 on a usage or configuration error."""
    from pyticdc.arrow.rows import RecordDecoder, new_decoder
    from pyticdc.io.capture import BadLine, bad_line_record

    bad_lines: list[BadLine] = []
    try:
        if args.limit is not None and args.limit < 1:
            raise ValueError("--limit must be >= 1")
        source = open_input(args, on_bad_line=bad_lines.append)
        protocol, options, records = resolve_codec(args, source.records)
        new_decoder(protocol, options)  # an unknown or invalid option fails now, naming the valid ones
        # Written under a temporary name, renamed once complete: a failure midway leaves no partial file.
        partial = None if args.output is None else args.output.with_name(f".{args.output.name}.partial-{os.getpid()}")
        out: IO[str] = sys.stdout if partial is None else open(partial, "w", encoding="utf-8")
    except REPORTED as exc:
        return report(args, exc, USAGE)
    decoder = RecordDecoder(protocol, options, reuse=False)

    def flush_bad_lines() -> None:
        for item in bad_lines:
            decoder.add_error(bad_line_record(item), item.why)
        bad_lines.clear()

    def checked() -> Iterator[KafkaRecord]:
        for record in records:
            flush_bad_lines()
            yield record
        flush_bad_lines()

    kinds = set(args.kind or KINDS)
    text = args.format == "text"
    printed = failures = 0
    complete = False
    progress = progress_bar(args, "decode", source.total, shares_terminal=args.output is None and out.isatty())
    try:
        with progress:
            for record, index, event, reason in _event_stream(decoder, counted(checked(), progress.update)):
                if event is not None:
                    try:
                        obj = event_to_json(event, source_protocol=protocol, record=record, index=index)
                    except TypeError as exc:  # a decoder handed over a value outside the model
                        obj = error_to_json(record, f"{protocol}: {exc}", source_protocol=protocol)
                else:
                    obj = error_to_json(record, reason, source_protocol=protocol)
                failures += obj["kind"] == "error"
                if obj["kind"] not in kinds:
                    continue
                out.write((event_to_text(obj) if text else dumps(obj).decode()) + "\n")
                printed += 1
                if args.limit is not None and printed >= args.limit:
                    break
        out.flush()
        complete = True
    except BrokenPipeError:
        raise  # the reader went away (| head): not an error, see pyticdc.cli.main
    except REPORTED as exc:
        return report(args, exc, FAILURE)
    finally:
        if out is not sys.stdout:
            out.close()
            if partial is not None and complete:
                os.replace(partial, args.output)
            elif partial is not None:
                partial.unlink(missing_ok=True)
    if failures:
        return report(args, f"{failures} records failed to decode", FAILURE)
    return 0
