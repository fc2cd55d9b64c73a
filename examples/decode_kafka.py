"""Decode your own format("kafka") DataFrame with decode_kafka: Spark's JVM Kafka connector reads, pyticdc decodes.

    python examples/decode_kafka.py kafka://broker:9092/cdc OUT_DIR [--protocol canal-json]
    python examples/decode_kafka.py CAPTURE OUT_DIR          # the same decode on a capture file's records

``format("kafka")`` needs the spark-sql-kafka connector on the classpath, e.g.
``spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<your Spark version>`` or
``--packages`` here (sets ``spark.jars.packages``; Maven Central must be reachable). Without it the script
says so on stderr and exits 3. A capture file needs no connector: its records (``output=records`` of the
``pyticdc`` source) have the same columns as the connector's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyspark
from deltalake import DeltaTable
from pyspark.errors import AnalysisException

from pyticdc.replica import read_table
from pyticdc.spark import decode_kafka, delta_sink, spark_session

#: Exit status when the Kafka connector is not on the classpath.
NO_CONNECTOR = 3


def main() -> int:
    """Decode a Kafka stream (or a capture file's records) into changelog/quarantine Delta tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", help="kafka://HOST:PORT/TOPIC, or a capture file/directory/glob")
    parser.add_argument("out", type=Path, help="directory for changelog/, quarantine/ and _checkpoint/")
    parser.add_argument("--protocol", default="canal-json")
    parser.add_argument("--option", action="append", default=["enable-tidb-extension=true"],
                        help="TiCDC codec option NAME=VALUE (repeatable)")
    parser.add_argument("--packages", action="store_true",
                        help="fetch spark-sql-kafka for this Spark version through spark.jars.packages")
    args = parser.parse_args()
    options = dict(option.partition("=")[::2] for option in args.option)

    config: dict[str, str] = {}
    if args.packages:
        config["spark.jars.packages"] = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    spark = spark_session("decode-kafka", config=config)
    changelog, quarantine = str(args.out / "changelog"), str(args.out / "quarantine")
    if args.source.startswith("kafka://"):
        servers, _, topic = args.source[len("kafka://"):].partition("/")
        try:
            raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers)
                   .option("subscribe", topic).option("startingOffsets", "earliest").load())
        except AnalysisException as exc:
            print(f"decode_kafka: the spark-sql-kafka connector is not on the classpath ({exc.getMessage()}); "
                  "run with --packages or spark-submit --packages", file=sys.stderr)
            spark.stop()
            return NO_CONNECTOR
        # For Simple, give decode_kafka the brokers too: it can then look back for schemas sent before
        # the first micro-batch (kafka={"bootstrap.servers": servers}).
        events = decode_kafka(raw, args.protocol, options, kafka={"bootstrap.servers": servers})
        query = (events.writeStream
                 .foreachBatch(delta_sink(changelog, quarantine, args.protocol, app_id="decode-kafka"))
                 .option("checkpointLocation", str(args.out / "_checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
    else:
        raw = spark.read.format("pyticdc").option("protocol", args.protocol).option("output", "records") \
            .load(args.source)
        events = decode_kafka(raw, args.protocol, options)
        delta_sink(changelog, quarantine, args.protocol, app_id="decode-kafka")(events, 0)
    spark.stop()

    rows = read_table(changelog).num_rows if DeltaTable.is_deltatable(changelog) else 0
    bad = read_table(quarantine).num_rows if DeltaTable.is_deltatable(quarantine) else 0
    print(f"changelog: {rows} row changes; quarantine: {bad} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
