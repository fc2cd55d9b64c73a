"""An S3-compatible server (moto's server mode) on a free loopback port, for object-store warehouse tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["S3Server", "start_s3_server"]


@dataclass
class S3Server:
    """A running moto server: its endpoint and the storage options that reach it."""

    endpoint: str
    process: subprocess.Popen[bytes]
    log: Path
    buckets: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS environment variables pointing at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}

    def create_bucket(self, name: str) -> str:
        """Create a bucket and return its ``s3://`` URL."""
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        client.create_bucket(Bucket=name)
        self.buckets.append(name)
        return f"s3://{name}"

    def stop(self) -> None:
        """Stop the server process."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_s3_server(log_dir: Path, *, timeout: float = 60.0) -> S3Server:
    """Start ``moto.server`` on 127.0.0.1 and wait until it answers."""
    port = _free_port()
    log = log_dir / "moto.log"
    env = {**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"}
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT, env=env)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2) as response:
                response.read()
            return S3Server(endpoint=endpoint, process=process, log=log)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"moto server did not start: {log.read_text(errors='replace')[-2000:]}") from None
            time.sleep(0.2)
