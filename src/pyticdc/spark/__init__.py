"""PySpark for TiCDC's Kafka protocols: the ``pyticdc`` data source, decode, typed rows, Delta sinks.

==========================  ==================================================================
name                        what
==========================  ==================================================================
``spark_session``           a local SparkSession with pyticdc's defaults, data source registered
``register``                register ``format("pyticdc")`` with an existing session
``decode_kafka``            decode a DataFrame with Kafka source columns (JVM connector output)
``typed_rows``              one table's rows with typed columns
``table_infos``             the latest TableInfo of every table in a decoded stream
``event_schema``            Spark schema of decoded events
``delta_sink``              ``foreachBatch`` writer: changelog + quarantine Delta tables
``write_events``            the same for a batch DataFrame
==========================  ==================================================================

Importing this package does not import pyspark; each name loads its module on first use. The typed
rows and Arrow types these build on are in :mod:`pyticdc.arrow` (pyarrow only); ``options`` and
``sinks``' Arrow helpers need only pyarrow too.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

from pyticdc.spark.archives import drop_installed_archives

__all__ = [
    "decode_kafka",
    "delta_sink",
    "event_schema",
    "register",
    "spark_session",
    "table_infos",
    "typed_rows",
    "write_events",
]

# In a Spark Python worker, which imports this package to unpickle pyticdc's functions: see archives.py.
drop_installed_archives()

_HOMES: Final = {
    "decode_kafka": "frames", "event_schema": "frames", "table_infos": "frames", "typed_rows": "frames",
    "register": "session", "spark_session": "session", "delta_sink": "sinks", "write_events": "sinks",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pyticdc.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pyticdc.spark.{home}"), name)
