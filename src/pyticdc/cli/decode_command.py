"""``pyticdc decode``: print the events of a capture file or a Kafka topic as JSON Lines or readable text.

    pyticdc decode --protocol canal-json -o enable-tidb-extension=true capture.jsonl
    pyticdc decode --protocol simple -b broker:9092 -t cdc --format text
    pyticdc decode --protocol craft dump.parquet --kind row --limit 20

Options
    ``-p/--protocol``        open-protocol | canal-json | craft | debezium | simple (required)
    ``-o name=value``        a TiCDC codec option (``enable-tidb-extension=true``, ``encoding-format=avro``)
    ``PATH ...``             capture files (pyticdc JSON Lines, Parquet with Kafka columns, ``kcat -J``), or:
    ``-b/--bootstrap-servers`` with ``-t/--topic`` (and ``--starting-offsets``/``--ending-offsets``, Spark
                             syntax, default earliest..latest, ``-X name=value`` librdkafka settings)
    ``--capture-format``     auto (default) | jsonl | parquet | kcat
    ``--format``             ``jsonl`` (default): one JSON object per event with the fields of the Spark
                             event DataFrame (images as objects, TSOs as exact integers, raw bytes base64);
                             ``text``: one readable line per event
    ``--kind``               only these kinds (repeatable): row, ddl, watermark, bootstrap, error
    ``--limit N``            stop after N printed events

Undecodable records are printed as ``error`` events and make the exit status 1 (0 when all decoded).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

__all__ = ["add_parser", "format_text"]

KINDS = ("row", "ddl", "watermark", "bootstrap", "error")


def add_parser(subparsers: Any) -> None:
    """Register ``decode``."""
    parser = subparsers.add_parser(
        "decode", help="print a capture file's or a topic's events as JSON Lines or text",
        description="Decode TiCDC Kafka messages from capture files or a topic and print the events.")
    parser.add_argument("paths", nargs="*", type=Path, help="capture files (or use -b/-t for Kafka)")
    parser.add_argument("-p", "--protocol", required=True, help="TiCDC protocol name")
    parser.add_argument("-o", dest="options", action="append", metavar="NAME=VALUE", help="TiCDC codec option")
    parser.add_argument("-b", "--bootstrap-servers", help="read Kafka instead of files")
    parser.add_argument("-t", "--topic", action="append", help="topic (repeatable, or a,b)")
    parser.add_argument("--starting-offsets", default="earliest", help="earliest | latest | Spark offsets JSON")
    parser.add_argument("--ending-offsets", default="latest", help="latest | Spark offsets JSON")
    parser.add_argument("-X", dest="settings", action="append", metavar="NAME=VALUE", help="librdkafka setting")
    parser.add_argument("--capture-format", default="auto", choices=("auto", "jsonl", "parquet", "kcat"))
    parser.add_argument("--format", default="jsonl", choices=("jsonl", "text"), help="output format")
    parser.add_argument("--kind", action="append", choices=KINDS, help="only these event kinds (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="stop after this many events")
    parser.set_defaults(run=run_decode)


def _options(pairs: list[str] | None) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"-o expects name=value, got {pair!r}")
        options[name.strip()] = value.strip()
    return options


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


def _records(args: argparse.Namespace) -> Iterator[Any]:
    from pyticdc.capture import plan_splits as splits
    from pyticdc.capture import read_split

    if args.bootstrap_servers:
        from pyticdc.cli.capture_command import client_settings
        from pyticdc.kafka import offset_ranges, read_range

        config = {**client_settings(args.settings), "bootstrap.servers": args.bootstrap_servers}
        for offset_range in offset_ranges(config, subscribe=",".join(args.topic or []),
                                          starting=args.starting_offsets, ending=args.ending_offsets):
            yield from read_range(config, offset_range)
        return
    for split in splits([str(p) for p in args.paths], args.capture_format, splittable=False):
        yield from read_split(split, lenient=True)  # records, and BadLine for malformed lines


def run_decode(args: argparse.Namespace) -> int:
    """Print events; 1 if any record failed to decode, 2 on a usage or source error."""
    from pyticdc.capture import BadLine, CaptureError
    from pyticdc.kafka import KafkaReadError
    from pyticdc.model import ConfigError, KafkaRecord

    if bool(args.paths) == bool(args.bootstrap_servers):
        print("pyticdc decode: give capture files, or -b/--bootstrap-servers with -t/--topic", file=sys.stderr)
        return 2
    if args.bootstrap_servers and not args.topic:
        print("pyticdc decode: -t/--topic is required with -b/--bootstrap-servers", file=sys.stderr)
        return 2
    try:
        from pyticdc.spark.rows import RecordDecoder, row_dict
    except ImportError as exc:  # pyarrow is part of the spark extra
        print(f"pyticdc decode needs pyarrow ({exc}); pip install 'pyticdc[spark]'", file=sys.stderr)
        return 2
    kinds = set(args.kind or KINDS)
    printed = failures = 0
    out = sys.stdout
    try:
        decoder = RecordDecoder(args.protocol, _options(args.options), reuse=False)

        def records() -> Iterator[KafkaRecord]:
            for item in _records(args):
                if isinstance(item, BadLine):
                    decoder.add_error(KafkaRecord(topic=f"file:{item.path}", partition=-1, offset=item.position,
                                                  value=item.line), f"capture: {item.reason}")
                else:
                    yield item

        for row in _chain(decoder.decode_rows(records()), decoder):
            event = row_dict(row)
            failures += event["kind"] == "error"
            if event["kind"] not in kinds:
                continue
            line = format_text(event) if args.format == "text" else orjson.dumps(event).decode()
            out.write(line + "\n")
            printed += 1
            if args.limit is not None and printed >= args.limit:
                break
    except (ConfigError, CaptureError, KafkaReadError) as exc:
        print(f"pyticdc decode: {exc}", file=sys.stderr)
        return 2
    out.flush()
    if failures:
        print(f"pyticdc decode: {failures} records failed to decode", file=sys.stderr)
    return 1 if failures else 0


def _chain(rows: Iterator[tuple[Any, ...]], decoder: Any) -> Iterator[tuple[Any, ...]]:
    yield from rows
    yield from decoder.finish_rows()
