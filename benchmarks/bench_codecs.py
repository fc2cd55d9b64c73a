"""Codec speed: encode and decode of every protocol as ratios against ``orjson`` on the same messages.

    taskset -c 0 .venv/bin/python benchmarks/bench_codecs.py [--rows 5000] [--repeat 7] [--tables wide,narrow]
        [--protocols canal-json,simple-json,...]

Measured side by side in one process, pinned to one core, interleaved (every round runs every
measurement once; the best round counts), by the CPU time of the measuring thread (robust when the
machine is loaded), on messages the project's own encoders wrote for

wide    20 columns of mixed types: int, tinyint, bigint unsigned, two decimals, two varchars, text,
        datetime, timestamp(6), date, json, blob, float, double, enum, set, bit, char(36), a nullable int
narrow  sysbench's ``sbtest``: id, k, char(120), char(60)
sample  the 9-column demo table (``pyticdc.sim.sample``), with ``--tables sample``

with 60% inserts, 30% updates carrying the full old image and 10% deletes, in transactions of 1-4
rows whose commit ts are TSOs (physical milliseconds << 18, logical part) with varying gaps.

For JSON protocols the baseline parses (``orjson.loads``) and writes (``orjson.dumps``) exactly the
JSON documents the codec produced (Open Protocol: the key and value documents inside its framing).
Binary protocols (Craft, Simple-Avro) have no JSON of their own: their decode compares with the
Canal-JSON decoder on the Canal-JSON messages of the same rows, their encode with ``orjson.dumps`` of
those Canal-JSON documents. A ratio is baseline time ÷ codec time (1.0 = as fast as the baseline).

``fresh`` is a new decoder's cost for the first row message of a stream (for Simple: the BOOTSTRAP
before it too) divided by a warm decoder's cost for the same messages: what a short-lived decoder
(one per Spark task, one per CLI call) pays on top of the steady state.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import struct
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import orjson

from pyticdc.codec import make_decoder, make_encoder
from pyticdc.codec.base import Message
from pyticdc.model import ColumnFlag, ColumnInfo, IndexInfo, Op, Row, RowChange, TableInfo
from pyticdc.sim.sample import SAMPLE_TABLE

F = ColumnFlag

#: (label, protocol, encoder options); decoders get only ``encoding-format``.
CONFIGS: list[tuple[str, str, dict[str, object]]] = [
    ("canal-json", "canal-json", {"enable-tidb-extension": True}),
    ("open-protocol", "open-protocol", {}),
    ("debezium", "debezium", {}),
    ("simple-json", "simple", {"encoding-format": "json"}),
    ("craft", "craft", {}),
    ("simple-avro", "simple", {"encoding-format": "avro"}),
]
BINARY = {"craft", "simple-avro"}


def _col(name: str, type_code: int, flags: int = 0, *, text: bool = False, **kw: Any) -> ColumnInfo:
    """A column as TiDB describes it: binary charset and the Binary flag unless ``text``."""
    if text:
        kw = {"charset": "utf8mb4", "collation": "utf8mb4_bin", **kw}
    else:
        flags |= F.BINARY
    if kw.get("unsigned"):
        flags |= F.UNSIGNED
    if kw.get("nullable", True):
        flags |= F.NULLABLE
    return ColumnInfo(name=name, type_code=type_code, flags=int(flags), **kw)


PK = int(F.PRIMARY_KEY | F.HANDLE_KEY)

WIDE_TABLE = TableInfo(
    schema="bench", table="wide", table_id=201, schema_version=449_000_000_000_000_001, pk_is_handle=True,
    columns=(
        _col("id", 3, PK, flen=11, decimal=0, nullable=False, type_desc="int(11)"),
        _col("tiny", 1, flen=4, decimal=0, type_desc="tinyint(4)"),
        _col("ubig", 8, flen=20, decimal=0, unsigned=True, type_desc="bigint(20) unsigned"),
        _col("price", 246, flen=10, decimal=2, type_desc="decimal(10,2)"),
        _col("ratio", 246, flen=20, decimal=6, type_desc="decimal(20,6)"),
        _col("name", 15, text=True, flen=64, decimal=0, type_desc="varchar(64)"),
        _col("email", 15, text=True, flen=255, decimal=0, type_desc="varchar(255)"),
        _col("body", 252, text=True, flen=65535, decimal=0, type_desc="text"),
        _col("created", 12, flen=19, decimal=0, type_desc="datetime"),
        _col("updated", 7, flen=26, decimal=6, type_desc="timestamp(6)"),
        _col("birthday", 10, flen=10, decimal=0, type_desc="date"),
        _col("attrs", 245, flen=4294967295, decimal=0, type_desc="json"),
        _col("payload", 252, flen=65535, decimal=0, type_desc="blob"),
        _col("score", 4, flen=12, decimal=-1, type_desc="float"),
        _col("weight", 5, flen=22, decimal=-1, type_desc="double"),
        _col("state", 247, text=True, elems=("new", "active", "suspended", "closed"),
             type_desc="enum('new','active','suspended','closed')"),
        _col("tags", 248, text=True, elems=("a", "b", "c", "d", "e"), type_desc="set('a','b','c','d','e')"),
        _col("bits", 16, flen=8, decimal=0, unsigned=True, type_desc="bit(8)"),
        _col("uuid", 254, text=True, flen=36, decimal=0, type_desc="char(36)"),
        _col("k", 3, flen=11, decimal=0, type_desc="int(11)"),
    ),
    indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),),
)

NARROW_TABLE = TableInfo(
    schema="sbtest", table="sbtest1", table_id=202, schema_version=449_000_000_000_000_002, pk_is_handle=True,
    columns=(
        _col("id", 3, PK, flen=11, decimal=0, nullable=False, type_desc="int(11)"),
        _col("k", 3, F.MULTIPLE_KEY, flen=11, decimal=0, nullable=False, type_desc="int(11)"),
        _col("c", 254, text=True, flen=120, decimal=0, nullable=False, type_desc="char(120)"),
        _col("pad", 254, text=True, flen=60, decimal=0, nullable=False, type_desc="char(60)"),
    ),
    indexes=(IndexInfo(name="PRIMARY", columns=("id",), primary=True, unique=True),
             IndexInfo(name="k_1", columns=("k",))),
)

WORDS = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "eta", "θeta", "iota", "kappa", "lambda", "mu",
         "订单", "ready", "shipped", "the", "quick", "brown", "fox", "<b>", "a&b", "line\nbreak"]


def _maybe(rng: random.Random, value: object, null_share: float = 0.15) -> object:
    return None if rng.random() < null_share else value


def _wide_image(rng: random.Random, key: int) -> dict[str, object]:
    """A wide row as TiCDC's row model carries it (strings as bytes, times as TiDB prints them)."""
    words = rng.sample(WORDS, 6)
    day = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    clock = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
    return {
        "id": key, "tiny": rng.randrange(-128, 128), "ubig": rng.randrange(2**64),
        "price": str(Decimal(rng.randrange(10**7)) / 100),
        "ratio": _maybe(rng, str(Decimal(rng.randrange(-10**12, 10**12)) / 10**6)),
        "name": " ".join(words[:2]).encode(), "email": _maybe(rng, f"{words[2]}.{key}@example.com".encode()),
        "body": _maybe(rng, " ".join(words * rng.randrange(1, 6)).encode()),
        "created": f"{day} {clock}", "updated": f"{day} {clock}.{rng.randrange(10**6):06d}",
        "birthday": _maybe(rng, f"{rng.randrange(1950, 2010)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"),
        "attrs": _maybe(rng, f'{{"k": {rng.randrange(1000)}, "tag": "{words[3]}", "on": true}}'),
        "payload": _maybe(rng, rng.randbytes(rng.randrange(4, 48))),
        "score": _maybe(rng, struct.unpack("<f", struct.pack("<f", rng.random() * 100))[0]),
        "weight": rng.random() * 1e4, "state": rng.randrange(1, 5), "tags": rng.randrange(32),
        "bits": rng.randrange(256), "uuid": str(rng.getrandbits(128).to_bytes(16, "big").hex()).encode(),
        "k": _maybe(rng, rng.randrange(10**6)),
    }


def _wide_change(rng: random.Random, old: dict[str, object]) -> dict[str, object]:
    fresh = _wide_image(rng, int(old["id"]))  # type: ignore[call-overload]
    return {**old, **{name: fresh[name] for name in rng.sample(["tiny", "price", "name", "updated", "k", "body"], 3)}}


def _sysbench_text(rng: random.Random, groups: int) -> bytes:
    return "-".join(f"{rng.randrange(10**11):011d}" for _ in range(groups)).encode()


def _narrow_image(rng: random.Random, key: int) -> dict[str, object]:
    return {"id": key, "k": rng.randrange(1, 10**6), "c": _sysbench_text(rng, 10), "pad": _sysbench_text(rng, 5)}


def _narrow_change(rng: random.Random, old: dict[str, object]) -> dict[str, object]:
    # sysbench's update_index (k + 1) and update_non_index (a new c), half each
    if rng.random() < 0.5:
        return {**old, "k": int(old["k"]) + 1}  # type: ignore[call-overload]
    return {**old, "c": _sysbench_text(rng, 10)}


def table_rows(table: TableInfo, count: int, seed: int = 7) -> list[RowChange]:
    """``count`` changes of ``table``: 60% insert, 30% update (full old image), 10% delete, TSO commit ts."""
    rng = random.Random(seed)
    image, change = {"wide": (_wide_image, _wide_change), "sbtest1": (_narrow_image, _narrow_change),
                     "orders": (_sample_image, _sample_change)}[table.table]
    live: dict[int, dict[str, object]] = {}
    keys: list[int] = []  # the live keys, for a uniform pick and an O(1) removal
    rows: list[RowChange] = []
    ms, logical, left_in_txn, next_id = 1_763_780_000_000, 0, 0, 1
    for _ in range(count):
        if left_in_txn == 0:  # a new transaction: a new TSO after a gap of a few ms (sometimes none)
            ms += int(rng.expovariate(1 / 3))
            logical = rng.randrange(1, 200)
            left_in_txn = rng.randrange(1, 5)
        left_in_txn -= 1
        ts = (ms << 18) | logical
        draw = rng.random()
        if draw < 0.6 or len(live) < 10:
            key, next_id = next_id, next_id + 1
            post = image(rng, key)
            live[key] = post
            keys.append(key)
            op, pre = Op.INSERT, None
        else:
            at = rng.randrange(len(keys))
            key = keys[at]
            if draw < 0.9:
                op, pre, post = Op.UPDATE, live[key], change(rng, live[key])
                live[key] = post
            else:
                op, pre, post = Op.DELETE, live.pop(key), None
                keys[at] = keys[-1]
                keys.pop()
        rows.append(RowChange(
            op=op, schema=table.schema, table=table.table, commit_ts=ts, columns=Row(post) if post else None,
            pre_columns=Row(pre) if pre else None, table_id=table.table_id, physical_table_id=table.table_id,
            row_id=key, table_info=table))
    return rows


def _sample_image(rng: random.Random, key: int) -> dict[str, object]:
    return {
        "id": key, "customer": f"customer-{rng.randrange(10**6)}".encode(),
        "amount": str(Decimal(rng.randrange(10**7)) / 100), "quantity": rng.randrange(1000),
        "rating": struct.unpack("<f", struct.pack("<f", rng.random() * 5))[0],
        "created_at": f"2025-11-{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:00.000",
        "status": rng.randrange(1, 4), "note": rng.choice([b"", b"gift wrap", "加急".encode()]),
        "big": rng.randrange(2**64),
    }


def _sample_change(rng: random.Random, old: dict[str, object]) -> dict[str, object]:
    return {**old, "quantity": rng.randrange(1000), "status": rng.randrange(1, 4)}


def make_rows(count: int, seed: int = 7) -> list[RowChange]:
    """Changes of the sample table (``bench_spark_source`` uses these)."""
    return table_rows(SAMPLE_TABLE, count, seed)


def json_documents(protocol: str, messages: list[Message]) -> list[bytes]:
    """The JSON documents inside JSON-protocol messages (Open Protocol: inside its framing)."""
    docs: list[bytes] = []
    for m in messages:
        for part in (m.key, m.value):
            if not part:
                continue
            if protocol == "open-protocol":
                at = 8 if part is m.key else 0
                while at + 8 <= len(part):
                    (length,) = struct.unpack_from(">Q", part, at)
                    if length:
                        docs.append(part[at + 8: at + 8 + length])
                    at += 8 + length
            else:
                docs.append(part)
    return docs


def first_rows(protocol: str, options: dict[str, object], messages: list[Message]) -> list[Message]:
    """The messages up to and including the first one that holds a row (Simple: BOOTSTRAP, then a row)."""
    decoder = make_decoder(protocol, options)
    for i, m in enumerate(messages):
        if any(isinstance(e, RowChange) for e in decoder.decode(m.value, m.key)):
            return messages[: i + 1]
    raise SystemExit(f"{protocol}: no row among {len(messages)} messages")


class Bench:
    """Named measurements, run round-robin ``repeat`` times; the best time of each counts."""

    def __init__(self) -> None:
        self.tasks: dict[str, Callable[[], object]] = {}
        self.best: dict[str, float] = {}

    def add(self, name: str, fn: Callable[[], object]) -> None:
        """Register a measurement."""
        self.tasks[name] = fn
        self.best[name] = float("inf")

    def run(self, repeat: int) -> None:
        """Every measurement once per round, ``repeat`` rounds; GC settled before each."""
        for _ in range(repeat):
            for name, fn in self.tasks.items():
                gc.collect()
                # CPU time of this thread, not wall time: when other processes share the core the
                # scheduler's preemptions inflate wall-clock rounds (best-of-N swung 2x under load),
                # while the CPU time actually spent running the measured code barely moves.
                start = time.thread_time_ns()
                fn()
                self.best[name] = min(self.best[name], (time.thread_time_ns() - start) / 1e9)


def decode_all(protocol: str, options: dict[str, object], messages: list[Message]) -> Callable[[], object]:
    """A fresh decoder over all messages, warmed once first so the run shows the steady state."""
    warm = make_decoder(protocol, options)
    for m in messages:
        warm.decode(m.value, m.key)

    def run() -> None:
        decode = warm.decode
        for m in messages:
            decode(m.value, m.key)
    return run


def fresh_first(protocol: str, options: dict[str, object], head: list[Message], repeat: int,
                warm: bool) -> Callable[[], object]:
    """``head`` decoded ``repeat`` times by a new decoder each time, or by one warm decoder."""
    decoder = make_decoder(protocol, options)
    for m in head:
        decoder.decode(m.value, m.key)

    def run() -> None:
        for _ in range(repeat):
            d = decoder if warm else make_decoder(protocol, options)
            for m in head:
                d.decode(m.value, m.key)
    return run


def bench_table(table: TableInfo, count: int, repeat: int, labels: list[str] | None = None) -> list[str]:
    """The result lines of one table (of the protocols in ``labels``, all by default)."""
    rows = table_rows(table, count)
    bench = Bench()
    notes: dict[str, tuple[str, str]] = {}
    chosen = [c for c in CONFIGS if labels is None or c[0] in labels]
    if any(c[0] in BINARY for c in chosen) and not any(c[0] == "canal-json" for c in chosen):
        chosen.insert(0, CONFIGS[0])  # the binary protocols' baseline is Canal-JSON's decode and dumps
    for label, protocol, options in chosen:
        dec_options = {k: v for k, v in options.items() if k == "encoding-format"}
        messages = make_encoder(protocol, options, clock=lambda: 0).encode(rows)

        def encode(protocol: str = protocol, options: dict[str, object] = options) -> object:
            return make_encoder(protocol, options, clock=lambda: 0).encode(rows)
        bench.add(f"{label} encode", encode)
        bench.add(f"{label} decode", decode_all(protocol, dec_options, messages))
        head = first_rows(protocol, dec_options, messages)
        bench.add(f"{label} fresh", fresh_first(protocol, dec_options, head, 20, warm=False))
        bench.add(f"{label} warm", fresh_first(protocol, dec_options, head, 20, warm=True))
        if label in BINARY:
            continue
        docs = json_documents(protocol, messages)
        parsed = [orjson.loads(d) for d in docs]

        # Like the codec runs, the baselines keep no results alive (a growing list would tax them with GC).
        def loads_all(docs: list[bytes] = docs) -> None:
            for d in docs:
                orjson.loads(d)

        def dumps_all(parsed: list[Any] = parsed) -> None:
            for p in parsed:
                orjson.dumps(p)
        bench.add(f"{label} loads", loads_all)
        bench.add(f"{label} dumps", dumps_all)
        notes[label] = (f"{label} loads", f"{label} dumps")
    bench.run(repeat)
    b = bench.best
    lines = []
    for label, _, _ in chosen:
        loads, dumps = notes.get(label, ("canal-json decode", "canal-json dumps"))
        dec_ratio = b[loads] / b[f"{label} decode"]
        enc_ratio = b[dumps] / b[f"{label} encode"]
        fresh = b[f"{label} fresh"] / b[f"{label} warm"]
        against = "canal-json decode" if label in BINARY else "orjson.loads"
        lines.append(f"{label:<15}{count / b[f'{label} encode']:>12,.0f}{count / b[f'{label} decode']:>12,.0f}"
                     f"{dec_ratio:>10.2f}{enc_ratio:>10.2f}{fresh:>8.1f}  decode vs {against}")
    return lines


def main() -> int:
    """Run the benchmark and print the ratios per table and protocol."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--tables", default="wide,narrow", help="comma-separated: wide, narrow, sample")
    known = [label for label, _, _ in CONFIGS]
    parser.add_argument("--protocols", default=",".join(known), help=f"comma-separated among: {', '.join(known)}")
    args = parser.parse_args()
    tables = {"wide": WIDE_TABLE, "narrow": NARROW_TABLE, "sample": SAMPLE_TABLE}
    chosen = [t.strip() for t in args.tables.split(",") if t.strip()]
    labels = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if (args.rows < 10 or args.repeat < 1 or not chosen or any(t not in tables for t in chosen)
            or not labels or any(p not in known for p in labels)):
        print(f"bench_codecs: need --rows >= 10, --repeat >= 1, --tables among {', '.join(tables)}, "
              f"--protocols among {', '.join(known)}", file=sys.stderr)
        return 2
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the issue asks
    from pyticdc.cli import version_text

    print(f"{args.rows} changes per table (60% insert, 30% update, 10% delete), best of {args.repeat} "
          f"interleaved rounds, one core, thread CPU time; {version_text()}")
    header = (f"{'protocol':<15}{'enc rows/s':>12}{'dec rows/s':>12}{'dec/base':>10}{'enc/dumps':>10}"
              f"{'fresh':>8}")
    for name in chosen:
        table = tables[name]
        print(f"\n{name}: {table.schema}.{table.table} ({len(table.columns)} columns)")
        print(header)
        print("-" * (len(header) + 28))
        for line in bench_table(table, args.rows, args.repeat, labels):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
