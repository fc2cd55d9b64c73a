"""``pyticdc decode``: print the events of capture files or Kafka topics as JSON Lines or readable text.

    pyticdc decode -p canal-json -o enable-tidb-extension=true capture.jsonl
    pyticdc decode -b broker:9092 -t cdc --output-format text
    pyticdc decode -p craft dump.parquet --kind row --limit 20 -O events.jsonl

Input, codec and progress flags are the shared ones (:mod:`pyticdc.cli.common`); the protocol is detected
from the first records unless ``-p`` names it. ``--output-format jsonl`` (default) prints one JSON object
per event with the fields of the Spark event DataFrame (images as objects, TSOs as exact integers, raw
bytes base64); ``text`` one readable line per event. A capture line that is not a record becomes an
``error`` event (topic ``file:PATH``, offset = its byte position). Works with the base install: only
Parquet captures need pyarrow.

Exit status: 0 when every record decoded, 1 when some did not (they are printed as ``error`` events),
2 on a usage or configuration error.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from pyticdc.cli.common import (
    FAILURE,
    REPORTED,
    USAGE,
    add_codec_arguments,
    add_input_arguments,
    add_progress_argument,
    counted,
    open_input,
    progress_bar,
    report,
    resolve_codec,
)

__all__ = ["add_parser", "format_text"]

KINDS = ("row", "ddl", "watermark", "bootstrap", "error")


def add_parser(subparsers: Any) -> None:
    """Register ``decode``."""
    parser = subparsers.add_parser(
        "decode", help="print the events of capture files or topics as JSON Lines or text",
        description="Decode TiCDC Kafka messages from capture files or Kafka topics and print one line per event.")
    add_input_arguments(parser)
    add_codec_arguments(parser, detect=True)
    group = parser.add_argument_group("output")
    group.add_argument("-O", "--output", type=Path, metavar="FILE",
                       help="write the events to this file (default: standard output)")
    group.add_argument("--output-format", default="jsonl", choices=("jsonl", "text"),
                       help="jsonl: one JSON object per event; text: one readable line per event (default jsonl)")
    group.add_argument("--kind", action="append", choices=KINDS,
                       help="print only events of this kind, repeatable (default: every kind)")
    group.add_argument("--limit", type=int, default=None, metavar="N",
                       help="stop after printing N events (default: no limit)")
    add_progress_argument(parser)
    parser.set_defaults(run=run_decode)


_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def _quote(text: str | None, base64: bool = False) -> str:
    # Numbers print bare, text as a JSON string literal, base64 (binary) values with a b64: prefix.
    if text is None:
        return "NULL"
    if not base64 and _NUMBER.fullmatch(text):
        return text
    return ("b64:" if base64 else "") + orjson.dumps(text).decode()


def format_text(event: dict[str, Any]) -> str:
    """One readable line for an event dict (``row_dict`` shape)."""
    where = f"{event['topic']}/{event['partition']}@{event['offset']}"
    if event["event_index"]:
        where += f"#{event['event_index']}"
    kind = event["kind"]
    if kind == "error":
        return f"{where} ERROR {event['error']}"
    if kind == "watermark":
        return f"{where} watermark resolved_ts={event['commit_ts']}"
    table = f"{event['schema']}.{event['table']}"
    if kind == "ddl":
        return f"{where} ddl {table} commit_ts={event['commit_ts']} type={event['ddl_type']} {event['ddl_query']}"
    if kind == "bootstrap":
        return f"{where} bootstrap {table} schema_version={event['schema_version']}"
    encoded = set(event["base64_columns"] or ())
    post, pre = event["columns"], event["pre_columns"]
    if event["op"] == "update" and post is not None and pre is not None:
        parts = []
        for name, value in post.items():
            old = pre.get(name, value)
            text = _quote(value, name in encoded)
            parts.append(f"{name}={_quote(old, name in encoded)}->{text}" if old != value else f"{name}={text}")
    else:
        image = post if post is not None else pre or {}
        parts = [f"{name}={_quote(value, name in encoded)}" for name, value in image.items()]
    flag = " handle-key-only" if event["handle_key_only"] else ""
    return f"{where} {event['op']} {table} commit_ts={event['commit_ts']}{flag} " + " ".join(parts)


def run_decode(args: argparse.Namespace) -> int:
    """Print events; 1 if any record failed to decode, 2 on a usage or configuration error."""
    from pyticdc.capture import BadLine
    from pyticdc.model import KafkaRecord
    from pyticdc.spark.rows import RecordDecoder, new_decoder, row_dict

    bad_lines: list[BadLine] = []
    try:
        if args.limit is not None and args.limit < 1:
            raise ValueError("--limit must be >= 1")
        source = open_input(args, on_bad_line=bad_lines.append)
        protocol, options, records = resolve_codec(args, source.records)
        new_decoder(protocol, options)  # an unknown or invalid option fails now, naming the valid ones
        out: IO[str] = sys.stdout if args.output is None else open(args.output, "w", encoding="utf-8")
    except REPORTED as exc:
        return report(args, exc, USAGE)
    decoder = RecordDecoder(protocol, options, reuse=False)

    def flush_bad_lines() -> None:
        for item in bad_lines:
            decoder.add_error(KafkaRecord(topic=f"file:{item.path}", partition=-1, offset=item.position,
                                          value=item.line), f"capture: {item.reason}")
        bad_lines.clear()

    def checked() -> Iterator[KafkaRecord]:
        for record in records:
            flush_bad_lines()
            yield record
        flush_bad_lines()

    kinds = set(args.kind or KINDS)
    printed = failures = 0
    progress = progress_bar(args, "decode", source.total, shares_terminal=args.output is None and out.isatty())
    try:
        with progress:
            for row in _chain(decoder.decode_rows(counted(checked(), progress.update)), decoder):
                event = row_dict(row)
                failures += event["kind"] == "error"
                if event["kind"] not in kinds:
                    continue
                out.write((format_text(event) if args.output_format == "text" else orjson.dumps(event).decode())
                          + "\n")
                printed += 1
                if args.limit is not None and printed >= args.limit:
                    break
        out.flush()
    except BrokenPipeError:
        raise  # the reader went away (| head): not an error, see pyticdc.cli.main
    except REPORTED as exc:
        return report(args, exc, FAILURE)
    finally:
        if out is not sys.stdout:
            out.close()
    if failures:
        return report(args, f"{failures} records failed to decode", FAILURE)
    return 0


def _chain(rows: Iterator[tuple[Any, ...]], decoder: Any) -> Iterator[tuple[Any, ...]]:
    yield from rows
    yield from decoder.finish_rows()
