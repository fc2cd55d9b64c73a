"""``pyticdc demo``: the main job on its embedded default."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pyticdc.codec import built_protocols, make_decoder, make_encoder
from pyticdc.model import DDLEvent, RowChange, Watermark
from pyticdc.sample import sample_events

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Register ``demo``."""
    parser = subparsers.add_parser("demo", help="encode an embedded change stream in every protocol and decode it back")
    parser.add_argument("--protocol", action="append", help="only these protocols (repeatable)")
    parser.set_defaults(run=run_demo)


def _describe(event: object) -> str:
    if isinstance(event, RowChange):
        image = event.columns if event.columns is not None else event.pre_columns
        key = dict(image or {}).get("id")
        return f"{event.op.value:<6} {event.schema}.{event.table} id={key} commit_ts={event.commit_ts}"
    if isinstance(event, DDLEvent):
        return f"ddl    {event.query[:48]} commit_ts={event.commit_ts}"
    if isinstance(event, Watermark):
        return f"watermark resolved_ts={event.resolved_ts}"
    return type(event).__name__.lower()


def run_demo(args: argparse.Namespace) -> int:
    """Encode the sample in each protocol, decode it back, print a summary; 1 if any differs."""
    events = sample_events()
    protocols = args.protocol or built_protocols()
    if not protocols:
        print("no protocol is built yet", file=sys.stderr)
        return 1
    print(f"sample stream: {len(events)} events on shop.orders")
    failures = 0
    for protocol in protocols:
        options = {"enable-tidb-extension": True} if protocol in ("canal-json", "debezium") else {}
        encoder = make_encoder(protocol, options)
        decoder = make_decoder(protocol, options)
        messages = encoder.encode(events)
        decoded = [e for m in messages for e in decoder.decode(m.value, m.key) if e.kind != "bootstrap"]
        expected = [p for e in events if (p := encoder.project(e)) is not None]
        size = sum(len(m.value or b"") + len(m.key or b"") for m in messages)
        same = [(_describe(a) == _describe(b)) for a, b in zip(decoded, expected)]
        ok = len(decoded) == len(expected) and all(same)
        failures += not ok
        print(f"\n== {protocol} {options or ''}: {len(messages)} messages, {size} bytes, "
              f"round trip {'OK' if ok else 'DIFFERS'}")
        for event in decoded:
            print("   ", _describe(event))
    return 1 if failures else 0
