"""The INTERVAL stream benchmark (docs/PERFORMANCE.md, ``bench/stream_bench.py --only interval``)
embedded and on a cluster, in the same run, each in its own process (one SparkSession each):

- **embedded**: lake in a local folder, SQLite catalog, Spark ``local[*]``;
- **cluster**: lake on S3 (moto's server on 127.0.0.1, behind a request counter), the PostgreSQL
  catalog (database ``tdweb_bench_cluster``, created if missing; its ``tdweb_catalog`` schema is
  dropped before each run), a Spark standalone cluster of one master and two workers
  (``tests/spark_cluster.py``; the application takes 2 cores, 1 GiB per executor);
- **objectstore** (optional, ``--modes embedded,objectstore,cluster``): S3 lake and PostgreSQL
  catalog as the cluster run, Spark ``local[*]``: tells the storage's share from Spark's.

    .venv/bin/python bench/cluster_bench.py [--rows 1000000] [--devices 1000] [--rows-per-commit 100000]
        [--modes embedded,cluster] [--pg postgres://postgres@127.0.0.1:5432/tdweb_bench_cluster]
        [--port-base 17110]

Each process first runs a 100,000-row warm-up (as stream_bench does), then the measured run; the
workload, the writer and the measurement are stream_bench's (``run_tdweb``). Besides rows/s, the
runs with the lake on S3 report the S3 requests made from the writer's first commit to the end (the
writer's and the stream's: counted by the server by kind, LIST, GET, HEAD, PUT, conditional PUT =
a Delta commit, DELETE, and by table, log or data file) per micro-batch, and the catalog
transactions (PostgreSQL ``pg_stat_database.xact_commit + xact_rollback`` of the database, which
counts every autocommit statement) of the setup and of the streaming part. Ports: ``--port-base``
(S3), +10 (Spark UI), +20.. (cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.spark_cluster import SparkCluster  # noqa: E402 (after the repository root is on the path)

BUCKET = "tdweb-bench"
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/tdweb_bench_cluster"
# mode -> (lake and catalog on S3 + PostgreSQL, Spark standalone cluster)
MODES = {"embedded": (False, False), "objectstore": (True, False), "cluster": (True, True)}


# ---------------------------------------------------------------- S3 server with a request counter


def serve_s3(port: int) -> None:
    """moto's S3 server on 127.0.0.1:``port``, each request counted by (operation, directory):
    ``GET /__counts`` returns the counts since the last ``POST /__counts`` (which resets them)."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import run_simple

    app = DomainDispatcherApplication(create_backend_app)
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def counted(environ: dict[str, Any], start_response: Any) -> Any:
        path = urllib.parse.unquote(environ.get("PATH_INFO", ""))
        if path == "/__counts":
            with lock:
                body = json.dumps(dict(counts)).encode()
                if environ["REQUEST_METHOD"] == "POST":
                    counts.clear()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        method = environ["REQUEST_METHOD"]
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        if method == "GET" and path.count("/") == 1:  # /bucket?list-type=2&prefix=...
            op, where = "LIST", "/" + path.strip("/") + "/" + query.get("prefix", [""])[0]
        else:
            op = "PUT_IF_NONE_MATCH" if method == "PUT" and environ.get("HTTP_IF_NONE_MATCH") else method
            where = path.rsplit("/", 1)[0] + "/"
        with lock:
            counts[f"{op} {where}"] += 1
        return app(environ, start_response)

    run_simple("127.0.0.1", port, counted, threaded=True)


def s3_counts(endpoint: str, reset: bool = False) -> dict[str, int]:
    """The request counts of :func:`serve_s3` (and reset them when ``reset``)."""
    req = urllib.request.Request(f"{endpoint}/__counts", method="POST" if reset else "GET")
    with urllib.request.urlopen(req, timeout=10) as r:
        out: dict[str, int] = json.load(r)
    return out


def classify(counts: dict[str, int], lake_uri: str, tables: dict[str, str]) -> dict[str, int]:
    """Raw counts (``"<op> /bucket/<dir>/"``) -> ``"<op> <table> <log|data>"``; ``tables`` maps a
    label to the table's URI (``s3://bucket/...``); requests elsewhere count as ``other``."""
    prefixes = {label: "/" + uri.split("://", 1)[1].rstrip("/") + "/" for label, uri in tables.items()}
    out: Counter[str] = Counter()
    for key, n in counts.items():
        op, where = key.split(" ", 1)
        label = next(
            (lb for lb, p in prefixes.items() if where.startswith(p) or p.startswith(where)), "other"
        )
        kind = "log" if "/_delta_log" in where else "data"
        out[f"{op} {label} {kind}" if label != "other" else f"{op} other"] += n
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- PostgreSQL catalog


def pg_reset(url: str) -> None:
    """Create the catalog's database if missing and drop its ``tdweb_catalog`` schema (a fresh
    catalog: the bench's database ``b`` must not exist yet)."""
    import psycopg

    from spark_workers.lake.catalog import PG_SCHEMA_NAME

    base, dbname = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as con:
        if not con.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone():
            con.execute(f'CREATE DATABASE "{dbname}"')
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA_NAME} CASCADE")


def pg_transactions(url: str) -> int:
    """Transactions committed + rolled back in the catalog's database so far (statistics are
    flushed by each backend within 10 s of going idle, so wait that long after the work)."""
    import psycopg

    dbname = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("SELECT pg_stat_clear_snapshot()")
        row = con.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (dbname,)
        ).fetchone()
    return int(row[0]) if row else 0


def count_statements() -> list[int]:
    """Count the SQL statements this process sends through psycopg from now on (the catalog's
    round trips; an ``executemany``, which psycopg pipelines, counts once); returns a one-item
    list holding the count."""
    import psycopg

    counter = [0]
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        counter[0] += 1
        return execute(self, *a, **k)

    def counted_many(self: Any, *a: Any, **k: Any) -> Any:
        counter[0] += 1
        return executemany(self, *a, **k)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    psycopg.Cursor.executemany = counted_many  # type: ignore[method-assign]
    return counter


# ---------------------------------------------------------------- one measured process


def child(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """Warm-up and measured INTERVAL run in this process; ``mode`` is one of :data:`MODES` (the
    environment carries SPARK_MASTER and, for a lake on S3, the AWS_* variables)."""
    from bench.stream_bench import run_tdweb, setup_devices, writer
    from spark_workers.lake.store import Lake
    from spark_workers.runtime.session import spark_session

    master = os.environ.get("SPARK_MASTER", "local[*]")
    remote, on_cluster = MODES[mode]
    extra = {}
    if on_cluster:
        # 2 cores as local[*] has here; the standalone master spreads them over both workers
        extra = {
            "spark.cores.max": "2",
            "spark.executor.memory": "1g",
            "spark.executorEnv.PYTHONPATH": str(ROOT),
        }
    spark = spark_session(master, ui_port=args.port_base + 10, extra=extra)

    def lake_uri() -> str:
        return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}" if remote else ""

    catalog_url = args.pg if remote else ""
    if catalog_url:
        pg_reset(catalog_url)
    run_tdweb(spark, "interval", 100, 100_000, 100_000, lake_uri=lake_uri(), catalog_url=catalog_url)
    uri = lake_uri()
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
    marks: list[int] = []

    statements = count_statements()

    def before_write() -> None:
        # the setup (1,000 subtables, the stream's DDL) is done: count from here
        if catalog_url:
            time.sleep(11)  # the setup's catalog statistics reach pg_stat_database
            marks.append(pg_transactions(catalog_url))
            s3_counts(endpoint, reset=True)
            marks.append(statements[0])

    if catalog_url:
        pg_reset(catalog_url)
        time.sleep(11)
        marks.append(pg_transactions(catalog_url))
    r = run_tdweb(
        spark,
        "interval",
        args.devices,
        args.rows,
        args.rows_per_commit,
        lake_uri=uri,
        catalog_url=catalog_url,
        before_write=before_write,
    )
    r["mode"], r["master"] = mode, master
    if remote:
        raw = s3_counts(endpoint)
        lake = Lake(uri, catalog_url)
        tables = {
            name: lake.table_uri("b", lake.catalog.require_table("b", name).storage) for name in ("m", "o")
        }
        r["s3"] = classify(raw, uri, tables)
        r["catalog_statements_driver"] = statements[0] - marks[2]
        time.sleep(11)
        r["catalog_transactions_setup"] = marks[1] - marks[0]
        r["catalog_transactions"] = pg_transactions(catalog_url) - marks[1]
        # the writer's share of the S3 requests: the same commits with no stream reading them
        wlake, _reg, _ex = setup_devices(lake_uri(), args.devices)  # SQLite catalog: no S3 requests
        s3_counts(endpoint, reset=True)
        writer(wlake, args.devices, args.rows, args.rows_per_commit, {})
        r["s3_writer_alone"] = classify(s3_counts(endpoint), wlake.uri, {"m": wlake.table_uri("b", "m")})
    spark.stop()
    return r


# ---------------------------------------------------------------- orchestration


def run_child(mode: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", mode, *sys.argv[1:]]
    proc = subprocess.run(
        cmd, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True, timeout=args.timeout, check=False
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{mode} run failed (exit {proc.returncode}); its stderr is above")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def per_batch(s3: dict[str, int], batches: int) -> list[str]:
    return [f"  {k:<34} {n:>7,}  {n / batches:8.1f} per micro-batch" for k, n in s3.items()]


def start_s3(port: int, work: Path) -> subprocess.Popen[bytes]:
    """:func:`serve_s3` in a child process (its own session), with the bench's bucket."""
    import boto3

    from tests.s3_server import _wait_port

    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-s3", str(port)],
        stdout=(work / "s3.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_port(port, proc)
        env = aws_env(port)
        boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name=env["AWS_REGION"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        ).create_bucket(Bucket=BUCKET)
    except BaseException:
        proc.terminate()
        proc.wait(timeout=10)
        raise
    return proc


def aws_env(port: int) -> dict[str, str]:
    """The AWS_* variables of the lake on the bench's S3 server."""
    return {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ALLOW_HTTP": "true",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--rows-per-commit", type=int, default=100_000)
    ap.add_argument("--pg", default=DEFAULT_PG, help="PostgreSQL catalog database (created if missing)")
    ap.add_argument("--port-base", type=int, default=17110, help="S3 server port; the cluster's are above")
    ap.add_argument(
        "--modes", default="embedded,cluster", help=f"comma-separated, in this order: {', '.join(MODES)}"
    )
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per run")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--serve-s3", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_s3:
        serve_s3(args.serve_s3)
        return
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args)), flush=True)
        return

    modes = args.modes.split(",")
    if unknown := set(modes) - set(MODES):
        ap.error(f"unknown modes {sorted(unknown)}")
    results: dict[str, dict[str, Any]] = {}
    work = Path(tempfile.mkdtemp(prefix="tdweb-cluster-bench-"))
    env = {"TDWEB_VAR": str(work / "var"), "PYTHONPATH": str(ROOT), "SPARK_MASTER": "local[*]"}
    s3: subprocess.Popen[bytes] | None = None
    cluster: SparkCluster | None = None
    try:
        for mode in modes:
            remote, on_cluster = MODES[mode]
            if remote and s3 is None:
                s3 = start_s3(args.port_base, work)
                env.update(aws_env(args.port_base))
            if on_cluster and cluster is None:
                ports = iter(range(args.port_base + 20, args.port_base + 90)).__next__
                cluster = SparkCluster(work / "cluster", workers=2, cores=2, memory="2g", ports=ports)
                cluster.start()
            results[mode] = run_child(
                mode, args, {**env, **(cluster.env() if on_cluster and cluster else {})}
            )
            print(f"{mode}: {results[mode]['rows_per_s']:,.0f} rows/s", flush=True)
    except BaseException:
        print(f"logs kept in {work}", file=sys.stderr)
        raise
    finally:
        if cluster is not None:
            cluster.stop()
        if s3 is not None:
            s3.terminate()
            s3.wait(timeout=10)
    shutil.rmtree(work, ignore_errors=True)

    print()
    print(f"INTERVAL(1m), {args.devices:,} devices, {args.rows:,} rows, {args.rows_per_commit:,} per commit")
    keys = [
        ("rows_per_s", "sustained rows/s", "{:,.0f}"),
        ("seconds", "seconds (first write -> caught up)", "{:.1f}"),
        ("write_rows_per_s", "writer rows/s", "{:,.0f}"),
        ("batches", "micro-batches with input", "{}"),
        ("triggers", "micro-batches (all)", "{}"),
        ("batch_ms_median", "batch median ms", "{:,.0f}"),
        ("batch_ms_p95", "batch p95 ms", "{:,.0f}"),
        ("windows_out", "windows out", "{:,}"),
    ]
    modes = list(results)
    print(f"{'':<38}" + "".join(f"{m:>14}" for m in modes))
    for k, label, fmt in keys:
        print(f"{label:<38}" + "".join(f"{fmt.format(results[m][k]):>14}" for m in modes))
    for mode in [m for m in results if MODES[m][0]]:
        c = results[mode]
        print(f"{mode}: S3 requests ({c['commits']} writer commits, {c['triggers']} micro-batches):")
        print("\n".join(per_batch(c["s3"], c["triggers"])))
        total = sum(c["s3"].values())
        print(f"  {'total':<34} {total:>7,}  {total / c['triggers']:8.1f} per micro-batch")
        w = c["s3_writer_alone"]
        wtotal = sum(w.values())
        print(
            f"  the writer alone (same {c['commits']} commits, no stream): {wtotal:,} requests = "
            f"{wtotal / c['commits']:.1f} per commit ({', '.join(f'{k} {n}' for k, n in w.items())}); "
            f"so the stream made about {total - wtotal:,} = {(total - wtotal) / c['triggers']:.1f} "
            "per micro-batch"
        )
        print(
            f"{mode}: catalog statements sent by the driver (sink, writer) while streaming: "
            f"{c['catalog_statements_driver']:,}"
        )
        print(
            f"{mode}: catalog transactions: setup (database, supertable, {args.devices:,} subtables, "
            f"stream) {c['catalog_transactions_setup']:,}; while streaming {c['catalog_transactions']:,} "
            f"({c['catalog_transactions'] / c['triggers']:.1f} per micro-batch)"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
