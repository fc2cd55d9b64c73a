"""Spark source throughput: decoded events/s of ``format("pyticdc")`` against a hand-rolled ``from_json``
Canal-JSON pipeline on the same capture file, measured in the same run on ``local[2]`` (2 cores).

    .venv/bin/python benchmarks/bench_spark_source.py [--rows 100000] [--repeat 3] [--protocols craft,simple]

Both pipelines read the same bytes: one pyticdc JSON Lines capture file of Canal-JSON messages (with the
TiDB extension), and produce one row per change event, forced with the ``noop`` sink so every column is
computed:

baseline   ``spark.read.json`` → ``unbase64(value)`` → ``from_json`` with the Canal-JSON schema →
           ``explode(data)``: a row per event with ``data``/``old`` as ``map<string,string>`` (what a team
           writes by hand; no TSO from ``_tidb``, no types, no errors kept, DDL/watermarks mixed in as rows
           with empty data)
pyticdc    ``spark.read.format("pyticdc")``: full event rows (Kafka coordinates, exact ``commit_ts``,
           canonical-text images, ``table_info``, errors as rows) decoded in Python in the executors

The ratio is pyticdc / baseline events per second (best of ``--repeat`` runs after a warm-up). Other
protocols (``--protocols``) read capture files of the same rows in their own encoding; their ratio is
against the same Canal-JSON baseline, for scale.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_codecs import make_rows
from pyticdc.codec import PROTOCOLS, make_encoder
from pyticdc.io.capture import write_capture
from pyticdc.model import Event, KafkaRecord

OPTIONS: dict[str, dict[str, str]] = {"canal-json": {"enable-tidb-extension": "true"},
                                      "debezium": {"enable-tidb-extension": "true"}}


def write_protocol_capture(
    directory: Path, protocol: str, events: list[Event], partitions: int = 3,
) -> tuple[Path, int]:
    """A capture file of ``events`` in ``protocol`` spread over partitions; returns it and its event count."""
    encoder = make_encoder(protocol, OPTIONS.get(protocol, {}))
    messages = encoder.encode(events)
    offsets = [0] * partitions
    records = []
    for index, message in enumerate(messages):
        partition = index % partitions
        records.append(KafkaRecord(topic="cdc", partition=partition, offset=offsets[partition], key=message.key,
                                   value=message.value, timestamp_ms=1_763_780_000_000 + index))
        offsets[partition] += 1
    path = directory / f"{protocol}.jsonl"
    write_capture(path, records)
    return path, sum(len(m.events) for m in messages)


def canal_baseline(spark: Any, path: Path) -> Any:
    """The hand-rolled pipeline: JSON Lines → base64 value → from_json(Canal-JSON) → one row per event."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    capture = StructType([StructField("topic", StringType()), StructField("partition", LongType()),
                          StructField("offset", LongType()), StructField("timestamp", LongType()),
                          StructField("key", StringType()), StructField("value", StringType())])
    rows = ArrayType(MapType(StringType(), StringType()))
    canal = StructType([
        StructField("id", LongType()), StructField("database", StringType()), StructField("table", StringType()),
        StructField("pkNames", ArrayType(StringType())), StructField("isDdl", BooleanType()),
        StructField("type", StringType()), StructField("es", LongType()), StructField("ts", LongType()),
        StructField("sql", StringType()), StructField("sqlType", MapType(StringType(), LongType())),
        StructField("mysqlType", MapType(StringType(), StringType())), StructField("data", rows),
        StructField("old", rows), StructField("_tidb", StructType([StructField("commitTs", LongType())])),
    ])
    messages = spark.read.schema(capture).json(str(path)).select(
        "topic", "partition", "offset", F.from_json(F.unbase64("value").cast("string"), canal).alias("m"))
    return messages.select(
        "topic", "partition", "offset", F.col("m.database").alias("schema"), F.col("m.table").alias("table"),
        F.col("m.type").alias("op"), F.col("m._tidb.commitTs").alias("commit_ts"),
        F.posexplode_outer("m.data").alias("event_index", "columns"),
        F.col("m.old").alias("old"))


def pyticdc_source(spark: Any, path: Path, protocol: str) -> Any:
    """The pyticdc data source on the capture file."""
    reader = spark.read.format("pyticdc").option("protocol", protocol).option("minPartitions", "2")
    for name, value in OPTIONS.get(protocol, {}).items():
        reader = reader.option(name, value)
    return reader.load(str(path))


def timed(build: Callable[[], Any], repeat: int) -> float:
    """Best wall-clock seconds of ``repeat`` full evaluations (``noop`` sink), after one warm-up."""
    build().write.format("noop").mode("overwrite").save()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        build().write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table of events/s and ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="row events in the capture (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per pipeline (best is kept)")
    parser.add_argument("--protocols", default="", help="more protocols to time, comma-separated (or 'all')")
    args = parser.parse_args(argv)

    from pyticdc.spark.session import spark_session

    spark = spark_session("pyticdc-bench", "local[2]", {"spark.sql.shuffle.partitions": "2"})
    spark.sparkContext.setLogLevel("ERROR")
    events: list[Event] = list(make_rows(args.rows))  # the rows bench_codecs measures
    extra = list(PROTOCOLS) if args.protocols == "all" else [p for p in args.protocols.split(",") if p]
    protocols = ["canal-json", *[p for p in extra if p != "canal-json"]]
    results: list[tuple[str, int, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="pyticdc-bench-") as tmp:
        captures = {p: write_protocol_capture(Path(tmp), p, events) for p in protocols}
        canal_path, _ = captures["canal-json"]
        baseline_rows = canal_baseline(spark, canal_path).count()
        baseline = timed(lambda: canal_baseline(spark, canal_path), args.repeat)
        results.append(("from_json baseline (canal-json)", baseline_rows, baseline, canal_path.stat().st_size))
        for protocol in protocols:
            path, count = captures[protocol]
            seconds = timed(lambda p=path, q=protocol: pyticdc_source(spark, p, q), args.repeat)  # type: ignore[misc]
            results.append((f"pyticdc source ({protocol})", count, seconds, path.stat().st_size))
    spark.stop()
    base_rate = results[0][1] / results[0][2]
    print(f"\nSpark source throughput, local[2] on {os.cpu_count()} cores, {args.rows} row events, "
          f"best of {args.repeat} (Python {sys.version.split()[0]})")
    print(f"{'pipeline':<36} {'events':>9} {'MB':>7} {'seconds':>8} {'events/s':>10} {'ratio':>7}")
    for name, count, seconds, size in results:
        rate = count / seconds
        print(f"{name:<36} {count:>9} {size / 1e6:>7.1f} {seconds:>8.2f} {rate:>10,.0f} {rate / base_rate:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
