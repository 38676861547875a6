"""An S3-compatible server (moto's, on 127.0.0.1) for the tests that run the lake on object storage
(import the ``s3_server`` fixture into a conftest or test module)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

BUCKET = "tdweb-lake"


@dataclass(frozen=True)
class S3Server:
    """A running moto server: its endpoint and the AWS_* variables a client needs."""

    endpoint: str
    env: dict[str, str]

    def fresh_uri(self) -> str:
        """``s3://<bucket>/<new prefix>``: an empty lake location."""
        return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"


def _free_port() -> int:
    """A port the OS says is free on 127.0.0.1 (so parallel runs do not meet on one server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server in a child process (delta-rs holds the GIL in some calls, so a server
    thread in the test process would stall), with one bucket; the AWS_* variables are set for the
    session (the lake reads them as on a real deployment) and restored afterwards."""
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ALLOW_HTTP": "true",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        _wait_port(port, proc)
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield S3Server(endpoint, env)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        proc.wait(timeout=10)


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto server not listening on port {port}")
