"""Lake tests also run on an S3 server (tests/s3_server.py)."""

from tests.s3_server import s3_server

__all__ = ["s3_server"]
