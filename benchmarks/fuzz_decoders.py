"""Mutation fuzzer of every decoder: bad bytes give a DecodeError, never an escape, and the same bytes
give the same result whatever the decoder saw before.

    .venv/bin/python benchmarks/fuzz_decoders.py [--inputs 100000] [--seed 1] [--only PROTOCOL]

For every protocol configuration (options and compressed variants) the messages the encoders write
for a simulated workload (every column type, DDL, watermarks, Simple BOOTSTRAPs) are mutated: bytes
flipped, inserted, deleted, duplicated and truncated, other messages spliced in, JSON values
replaced by hostile ones (deep nesting, huge integers, ``-0``, invalid UTF-8, lone surrogate
escapes). Each input is decoded twice:

- by a *warm* decoder, which has decoded the whole valid stream and every earlier input;
- by a *fresh* decoder, which has seen only the stream's schema messages (Simple's BOOTSTRAPs and
  DDLs; nothing for the protocols that carry their schema in every message).

Counted per configuration: escapes (any exception but DecodeError, from either decoder), unprintable
events (``pyticdc.io.eventjson`` cannot render one) and warm/fresh differences (different events, or
one decodes and the other raises). The table goes to stdout; the exit status is 1 if any count is
not zero. ``run`` is the same loop for the bounded test in ``tests/codec/test_fuzz_decoders.py``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyticdc.codec import make_decoder
from pyticdc.codec.base import BaseDecoder
from pyticdc.codec.compression import compress, decompress
from pyticdc.errors import DecodeError
from pyticdc.io.eventjson import dumps, event_to_json
from pyticdc.model import Bootstrap, DDLEvent, Event
from pyticdc.sim import WorkloadConfig, produce, simulate

#: (label, protocol, options): every decoder configuration with the options its encoder needs.
CONFIGS: list[tuple[str, str, dict[str, Any]]] = [
    ("open-protocol", "open-protocol", {}),
    ("open-protocol snappy", "open-protocol", {"large-message-handle-compression": "snappy"}),
    ("open-protocol lz4", "open-protocol", {"large-message-handle-compression": "lz4"}),
    ("craft", "craft", {}),
    ("canal-json", "canal-json", {}),
    ("canal-json ext", "canal-json", {"enable-tidb-extension": True}),
    ("canal-json content-compatible", "canal-json", {"enable-tidb-extension": True, "content-compatible": True}),
    ("canal-json ext snappy", "canal-json",
     {"enable-tidb-extension": True, "large-message-handle-compression": "snappy"}),
    ("canal-json ext lz4", "canal-json", {"enable-tidb-extension": True, "large-message-handle-compression": "lz4"}),
    ("debezium", "debezium", {}),
    ("debezium ext", "debezium", {"enable-tidb-extension": True}),
    ("debezium no-schema", "debezium", {"debezium-disable-schema": True}),
    ("debezium snappy", "debezium", {"large-message-handle-compression": "snappy"}),
    ("simple-json", "simple", {}),
    ("simple-json snappy", "simple", {"large-message-handle-compression": "snappy"}),
    ("simple-avro", "simple", {"encoding-format": "avro"}),
    ("simple-avro lz4", "simple", {"encoding-format": "avro", "large-message-handle-compression": "lz4"}),
]

#: Options the decoder reads (the rest shape only what the encoder writes).
_DECODER_OPTIONS = ("enable-tidb-extension", "large-message-handle-compression", "encoding-format")

#: Hostile JSON values a field is replaced with.
_HOSTILE: list[bytes] = [
    b"-0", b'"-0"', b"-0.0", b'"-0.0"', b"1e400", b'"1e400"', b"null", b"true", b"[]", b"{}", b'""', b"-1",
    b"18446744073709551616", b'"18446744073709551616"', b"9" * 5000, b'"' + b"9" * 5000 + b'"',
    b'"-' + b"9" * 4301 + b'"', b'"NaN"', b'"\\ud800"', b'"\\udc00x"', b'"\xff\xfe"', b"\"\xed\xa0\x80\"",
    b"[" * 3000, b'{"a":' * 3000, b"[" * 3000 + b"]" * 3000, b'"2023-13-45 25:61:61"', b"0.5", b"1.5e308",
    b'"\\u0000"', b"[1,2,3]", b'{"x":1}', b'"abc"', b"123456789012345678901234567890",
]
#: Raw byte strings inserted anywhere (binary protocols and JSON alike).
_JUNK: list[bytes] = [
    b"\x00", b"\xff", b"\x80", b"\xff" * 8, b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
    b"\xfe\xff\xff\xff\x0f", b'"', b"{", b"}", b"[", b"]", b",", b":", b"\\", b"\xed\xa0\x80",
]


@dataclass
class Counts:
    """What one configuration's inputs gave."""

    inputs: int = 0
    decoded: int = 0
    errors: int = 0
    escapes: int = 0
    unprintable: int = 0
    differences: int = 0
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)

    def bad(self) -> int:
        """Escapes, unprintable events and warm/fresh differences."""
        return self.escapes + self.unprintable + self.differences


def _decoder_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k in _DECODER_OPTIONS}


class Corpus:
    """The messages an encoder writes for a simulated workload, and the schema messages per table."""

    def __init__(self, protocol: str, options: dict[str, Any], seed: int = 3) -> None:
        history = simulate(seed, WorkloadConfig(transactions=40, bootstrap_every=5))
        logs = produce(history, protocol, options, partitions=1)
        #: (key, value) of every message, in order.
        self.messages: list[tuple[bytes | None, bytes]] = []
        #: Per message, the table it names ("" for none).
        self.tables: list[str] = []
        #: Per table, the messages that first bring each of its schema versions (Simple needs them).
        self.schema: dict[str, list[tuple[bytes | None, bytes]]] = {}
        #: Indexes of the messages that carry a schema.
        self.schema_indexes: set[int] = set()
        probe = make_decoder(protocol, _decoder_options(options))
        seen: set[tuple[str, str, int]] = set()
        for sent in next(iter(logs.values())):
            record = sent.record
            if record.value is None:
                continue
            events = probe.decode(record.value, record.key)
            names = [_table_of(e) for e in events]
            self.tables.append(names[0] if names else "")
            if any(isinstance(e, (Bootstrap, DDLEvent)) for e in events):
                self.schema_indexes.add(len(self.messages))
                for event in events:
                    info = event.table_info if isinstance(event, (Bootstrap, DDLEvent)) else None
                    if info is not None and (info.schema, info.table, info.schema_version) not in seen:
                        seen.add((info.schema, info.table, info.schema_version))
                        self.schema.setdefault(info.table, []).append((record.key, record.value))
            self.messages.append((record.key, record.value))

    def schema_messages(self, table: str | None = None) -> list[tuple[bytes | None, bytes]]:
        """The schema messages of ``table`` (of every table if None), in stream order."""
        if table is not None:
            return self.schema.get(table, [])
        return [m for messages in self.schema.values() for m in messages]


def _table_of(event: Event) -> str:
    info = getattr(event, "table_info", None)
    if info is not None:
        return str(info.table)
    return str(getattr(event, "table", ""))


def _replace_value(rng: random.Random, data: bytes) -> bytes:
    """Replace one JSON value after a ``":`` with a hostile one."""
    starts = [i for i in range(len(data) - 1) if data[i] == 0x22 and data[i + 1] == 0x3A]
    if not starts:
        return data + rng.choice(_HOSTILE)
    at = rng.choice(starts) + 2
    end = at
    depth = 0
    in_string = False
    while end < len(data):
        c = data[end]
        if in_string:
            if c == 0x5C:
                end += 1
            elif c == 0x22:
                in_string = False
                if depth == 0:
                    end += 1
                    break
        elif c == 0x22:
            in_string = True
        elif c in b"[{":
            depth += 1
        elif c in b"]}":
            if depth == 0:
                break
            depth -= 1
            if depth == 0:
                end += 1
                break
        elif c == 0x2C and depth == 0:
            break
        end += 1
    return data[:at] + rng.choice(_HOSTILE) + data[end:]


def mutate(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    """One to three random mutations of ``data``."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        n = len(data)
        how = rng.randrange(9)
        at = rng.randrange(n + 1)
        if how == 0 and n:
            data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
        elif how == 1:
            data = data[:at] + rng.choice(_JUNK) + data[at:]
        elif how == 2:
            data = data[:at] + data[at + rng.randrange(1, 64):]
        elif how == 3:
            data = data[:at]
        elif how == 4 and n:
            start = rng.randrange(n)
            data = data[:at] + data[start:start + rng.randrange(1, 64)] + data[at:]
        elif how == 5 and others:
            other = rng.choice(others)
            cut = rng.randrange(len(other) + 1)
            data = data[:at] + other[cut:] if rng.random() < 0.5 else other[:cut] + data[at:]
        elif how == 6 and n:
            data = data[:at] + bytes([data[at - 1] ^ (1 << rng.randrange(8))]) + data[at:] if at else data
        else:
            data = _replace_value(rng, data)
    return data


def _frames(value: bytes) -> tuple[bytes, list[bytes]] | None:
    """Open Protocol's framing: the 8-byte version, then (8-byte big-endian length, bytes) frames."""
    at, frames = 8, []
    while at + 8 <= len(value):
        size = int.from_bytes(value[at:at + 8], "big")
        frames.append(value[at + 8:at + 8 + size])
        at += 8 + size
    return (value[:8], frames) if at == len(value) else None


def _plain(protocol: str, method: str, value: bytes) -> bytes:
    """The uncompressed bytes of a value (Open Protocol: of its first frame)."""
    if protocol == "open-protocol":
        split = _frames(value)
        return decompress(method, split[1][0], protocol) if split and split[1] else value
    return decompress(method, value, protocol)


def _edit(protocol: str, value: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """``value`` with ``change`` applied to its compressed unit (Open Protocol: one frame, length fixed)."""
    if protocol != "open-protocol":
        return change(value)
    split = _frames(value)
    if not split or not split[1]:
        return change(value)
    version, frames = split
    index = len(frames) // 2
    frames[index] = change(frames[index])
    return version + b"".join(len(f).to_bytes(8, "big") + f for f in frames)


def _recompress(protocol: str, method: str, value: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """``value`` with its plain bytes (Open Protocol: one frame's) changed and compressed again."""
    def recompressed(unit: bytes) -> bytes:
        try:
            plain = decompress(method, unit, protocol)
        except DecodeError:  # not a compressed unit (an Open Protocol value without frames)
            return change(unit)
        return compress(method, change(plain))
    return _edit(protocol, value, recompressed)


def _huge_snappy(unit: bytes) -> bytes:
    """A snappy block declaring 2 GB of output (the uvarint length replaced), the rest as it was."""
    at = 0
    while at < len(unit) and unit[at] & 0x80:
        at += 1
    return b"\x80\xa8\xd6\xb9\x07" + unit[at + 1:]


def _fresh(protocol: str, options: dict[str, Any], schema: list[tuple[bytes | None, bytes]]) -> BaseDecoder:
    decoder = make_decoder(protocol, options)
    for key, value in schema:
        decoder.decode(value, key)
    return decoder


def _forget_held(decoder: BaseDecoder) -> None:
    """Drop Simple's held rows: they would come back with a later input's events."""
    release = getattr(decoder, "release_held", None)
    if release is not None:
        release()


def _outcome(decoder: BaseDecoder, value: bytes, key: bytes | None) -> tuple[str, list[Event] | None]:
    """('ok', events) or ('error', None); any other exception propagates."""
    try:
        return "ok", decoder.decode(value, key)
    except DecodeError:
        return "error", None


def run(label: str, protocol: str, options: dict[str, Any], inputs: int, seed: int = 1,
        log: Callable[[str], None] | None = None) -> Counts:
    """Fuzz one configuration with ``inputs`` mutated messages."""
    rng = random.Random(f"{seed}/{label}")
    corpus = Corpus(protocol, options)
    messages = corpus.messages
    decoder_options = _decoder_options(options)
    method = str(options.get("large-message-handle-compression", "none"))
    values = [v for _, v in messages]
    plain = values if method == "none" else [_plain(protocol, method, v) for v in values]
    keys = [k for k, _ in messages if k is not None]
    # Only Simple learns schemas from messages: its fresh decoder knows the message's table, and its
    # warm decoder forgets a schema message's mutation (a fresh one would not know it).
    learns = protocol == "simple"

    def make_warm() -> BaseDecoder:
        decoder = make_decoder(protocol, decoder_options)
        for k, v in messages:
            decoder.decode(v, k)
        return decoder

    warm = make_warm()
    counts = Counts()
    started = time.perf_counter()
    for _ in range(inputs):
        index = rng.randrange(len(messages))
        key, value = messages[index]
        # Mostly mutate what is inside the compression (and Open Protocol's framing), else the bytes as sent.
        if (method != "none" or protocol == "open-protocol") and rng.random() < 0.7:
            value = _recompress(protocol, method, value, lambda data: mutate(rng, data, plain))
        elif method == "snappy" and rng.random() < 0.05:
            value = _edit(protocol, value, _huge_snappy)
        else:
            value = mutate(rng, value, values)
        if key is not None and rng.random() < 0.2:
            key = mutate(rng, key, keys)
        counts.inputs += 1
        schema = corpus.schema_messages() if learns else []
        try:
            warm_outcome = _outcome(warm, value, key)
            fresh_outcome = _outcome(_fresh(protocol, decoder_options, schema), value, key)
        except Exception as exc:  # noqa: BLE001 - an escape is what the fuzzer counts
            counts.escapes += 1
            if len(counts.examples) < 5:
                counts.examples.append(f"escape {type(exc).__name__}: {exc!s:.200} value={value[:300]!r} "
                                       f"key={key!r:.200}\n{traceback.format_exc(limit=-3)}")
            warm = make_warm()
            continue
        if warm_outcome[0] == "ok":
            counts.decoded += 1
        else:
            counts.errors += 1
        for events in (warm_outcome[1], fresh_outcome[1]):
            for event in events or ():
                try:
                    dumps(event_to_json(event, source_protocol=protocol))
                except Exception as exc:  # noqa: BLE001 - counted
                    counts.unprintable += 1
                    if len(counts.examples) < 5:
                        counts.examples.append(f"unprintable {type(exc).__name__}: {exc!s:.200} {event!r:.300}")
        if repr(warm_outcome) != repr(fresh_outcome):
            counts.differences += 1
            if len(counts.examples) < 5:
                w, f = repr(warm_outcome), repr(fresh_outcome)
                at = next((i for i, (a, b) in enumerate(zip(w, f)) if a != b), min(len(w), len(f)))
                counts.examples.append(f"difference value={value!r} key={key!r}\n"
                                       f"  warm:  ...{w[max(0, at - 300):at + 300]}\n"
                                       f"  fresh: ...{f[max(0, at - 300):at + 300]}")
        if learns and (index in corpus.schema_indexes or any(
                isinstance(e, (Bootstrap, DDLEvent)) for e in warm_outcome[1] or ())):
            warm = _fresh(protocol, decoder_options, corpus.schema_messages())
        _forget_held(warm)
        # Keep the warm decoder warm on valid data too (caches keyed by the last message).
        if rng.random() < 0.3:
            k, v = messages[rng.randrange(len(messages))]
            warm.decode(v, k)
    counts.seconds = time.perf_counter() - started
    if log is not None:
        for example in counts.examples:
            log(f"  {label}: {example}")
    return counts


def main(argv: list[str] | None = None) -> int:
    """Fuzz every configuration (or ``--only`` one protocol) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--inputs", type=int, default=100_000, help="mutated inputs per configuration")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default=None, help="only configurations whose label contains this")
    args = parser.parse_args(argv)
    header = f"{'configuration':32} {'inputs':>8} {'decoded':>8} {'errors':>8} {'escapes':>8} " \
             f"{'unprint':>8} {'differ':>8} {'seconds':>8}"
    print(header, flush=True)
    bad = 0
    for label, protocol, options in CONFIGS:
        if args.only and args.only not in label:
            continue
        c = run(label, protocol, options, args.inputs, args.seed, log=lambda s: print(s, file=sys.stderr))
        bad += c.bad()
        print(f"{label:32} {c.inputs:8} {c.decoded:8} {c.errors:8} {c.escapes:8} {c.unprintable:8} "
              f"{c.differences:8} {c.seconds:8.1f}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
