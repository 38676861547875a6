"""Where streams keep their state (runtime/paths.py): the lake's local folder by default,
``TDWEB_CHECKPOINTS`` (a shared path or an object-store/Hadoop URI) when set; tdweb's own state
files (PERIOD's ``period.json``) are read, replaced whole and removed there, on a real S3 server."""

from __future__ import annotations

from pathlib import Path

import boto3

from spark_workers.lake.location import local_root
from spark_workers.runtime.paths import StreamState, checkpoint_location, checkpoints_root
from tests.s3_server import BUCKET, S3Server, s3_server  # noqa: F401 (fixture)


def test_default_root_is_the_lakes_local_folder(tmp_path: Path) -> None:
    assert checkpoints_root(tmp_path / "lake") == str(tmp_path / "lake" / "_streams")
    want = tmp_path / "lake" / "_streams" / "k1" / "checkpoint"
    assert checkpoint_location(tmp_path / "lake", "k1") == str(want)
    remote = "s3://bucket/lake"  # a remote lake without TDWEB_CHECKPOINTS: this host's var folder
    assert checkpoints_root(remote) == str(local_root(remote) / "_streams")


def test_tdweb_checkpoints_wins_whatever_the_lake(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    assert checkpoint_location("s3://bucket/lake", "k1", str(shared)) == str(shared / "k1" / "checkpoint")
    assert checkpoint_location(tmp_path, "k1", f"file://{shared}") == str(shared / "k1" / "checkpoint")
    assert (
        checkpoint_location(tmp_path, "k1", "s3a://ck-bucket/tdweb/") == "s3a://ck-bucket/tdweb/k1/checkpoint"
    )
    assert checkpoint_location(tmp_path, "k1", "hdfs://nn:8020/tdweb") == "hdfs://nn:8020/tdweb/k1/checkpoint"


def test_local_state_files(tmp_path: Path) -> None:
    st = StreamState(tmp_path / "lake", "k1", str(tmp_path / "ck"))
    assert st.read_text("period.json") is None
    st.write_text("period.json", '{"version": 3}')
    st.write_text("period.json", '{"version": 4}')
    assert st.read_text("period.json") == '{"version": 4}'
    assert not (tmp_path / "ck" / "k1" / "period.json.tmp").exists()
    st.make_parent()
    Path(st.checkpoint).mkdir()
    (Path(st.checkpoint) / "offsets").write_text("0")
    StreamState(tmp_path / "lake", "k2", str(tmp_path / "ck")).write_text("period.json", "{}")
    st.remove()
    assert not (tmp_path / "ck" / "k1").exists() and (tmp_path / "ck" / "k2" / "period.json").exists()
    st.remove()  # nothing there: fine


def test_state_files_on_s3(s3_server: S3Server) -> None:  # noqa: F811
    """``s3a://`` (Hadoop's name, what Spark's checkpoint needs) is the same bucket for tdweb's own
    files; a second host (a new StreamState) reads what the first wrote; remove takes only this
    stream's objects."""
    prefix = s3_server.fresh_uri().removeprefix(f"s3://{BUCKET}/")
    root = f"s3a://{BUCKET}/{prefix}/checkpoints"
    a = StreamState("s3://other/lake", "k1", root)
    assert a.checkpoint == f"{root}/k1/checkpoint"
    assert a.read_text("period.json") is None
    a.write_text("period.json", '{"last_trigger_ms": 1}')
    assert StreamState("s3://other/lake", "k1", root).read_text("period.json") == '{"last_trigger_ms": 1}'
    StreamState("s3://other/lake", "k2", root).write_text("period.json", "{}")
    s3 = boto3.client("s3", endpoint_url=s3_server.endpoint, region_name="us-east-1")
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/checkpoints/k1/checkpoint/offsets/0", Body=b"v1")
    a.remove()
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    files = [o["Key"] for o in listed if not o["Key"].endswith("/")]  # not pyarrow's folder markers
    assert files == [f"{prefix}/checkpoints/k2/period.json"]
