"""Streaming: capture files (or a topic) → append-only changelog and quarantine Delta tables.

    python examples/stream_changelog.py CAPTURE_DIR OUT_DIR [--protocol canal-json]
    python examples/stream_changelog.py kafka://broker:9092/cdc OUT_DIR --protocol simple

``trigger(availableNow=True)`` processes what is there now in micro-batches and stops; drop it (or use
``processingTime``) to keep the query running. Restarted with the same checkpoint it resumes where it
stopped, and a replayed micro-batch is not written twice (Delta application transactions).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from deltalake import DeltaTable

from pyticdc.replica import read_table
from pyticdc.spark import delta_sink, spark_session


def main() -> None:
    """Run the stream until it has read everything available, then print the tables' row counts."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", help="directory (or glob) of capture files, or kafka://HOST:PORT/TOPIC")
    parser.add_argument("out", type=Path, help="directory for changelog/, quarantine/ and _checkpoint/")
    parser.add_argument("--protocol", default="canal-json")
    parser.add_argument("--option", action="append", default=["enable-tidb-extension=true"],
                        help="TiCDC codec option NAME=VALUE (repeatable)")
    args = parser.parse_args()

    spark = spark_session("stream-changelog")
    reader = spark.readStream.format("pyticdc").option("protocol", args.protocol)
    for option in args.option:
        name, _, value = option.partition("=")
        reader = reader.option(name, value)
    if args.source.startswith("kafka://"):
        servers, _, topic = args.source[len("kafka://"):].partition("/")
        reader = (reader.option("kafka.bootstrap.servers", servers).option("subscribe", topic)
                  .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "100000"))
    else:
        reader = reader.option("path", args.source)  # new files are picked up in name order
    changelog, quarantine = str(args.out / "changelog"), str(args.out / "quarantine")
    query = (reader.load().writeStream
             .foreachBatch(delta_sink(changelog, quarantine, args.protocol, app_id="stream-changelog"))
             .option("checkpointLocation", str(args.out / "_checkpoint"))
             .trigger(availableNow=True)
             .start())
    query.awaitTermination()
    spark.stop()

    rows = read_table(changelog).num_rows if DeltaTable.is_deltatable(changelog) else 0
    bad = read_table(quarantine).num_rows if DeltaTable.is_deltatable(quarantine) else 0
    print(f"changelog: {rows} row changes; quarantine: {bad} records")


if __name__ == "__main__":
    main()
