"""The main job on real data: ``manage.py demo`` (what ``make demo`` runs).

With the demo running, the ``taosrest`` client reads ``air.pm25_daily`` (one row per closed UTC day
per station) and the STATE_WINDOW, SESSION and COUNT_WINDOW streams' tables, each equal to an
independent pandas computation over the CSVs (``demo_reference``). ``--once`` exits 0 after
printing the summary table.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.system import demo_reference as dref
from tests.system.conftest import REDIS, flush_redis, free_port, system_env, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
LOCAL_TZ = "Asia/Shanghai"


def pandas_daily() -> pd.DataFrame:
    """Independent reference read straight from the CSVs (not tdweb's loader): per station and UTC
    day, avg/max of PM2.5 (NA skipped) and the row count, without each station's last (open) day."""
    from streams_app.services.demo import dataset_dir

    frames = []
    for f in sorted(dataset_dir().glob("PRSA_Data_*.csv.gz")):
        df = pd.read_csv(f, na_values=["NA", "", " "], keep_default_na=False)
        local = pd.to_datetime(df[["year", "month", "day", "hour"]]).dt.tz_localize(LOCAL_TZ)
        day = local.dt.tz_convert("UTC").dt.floor("D")
        frames.append(pd.DataFrame({"station": df["station"], "day": day, "pm25": df["PM2.5"]}))
    d = pd.concat(frames)
    ref = (
        d.groupby(["station", "day"])
        .agg(avg_pm25=("pm25", "mean"), max_pm25=("pm25", "max"), n=("pm25", "size"))
        .reset_index()
    )
    last = ref.groupby("station")["day"].transform("max")
    return ref[ref["day"] < last].reset_index(drop=True)


def start_demo(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], dict[str, str], list[str]]:
    flush_redis(REDIS)
    port = free_port()
    env = {**os.environ, **system_env(tmp_path, port)}
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--speed", "0", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return proc, env, lines


def test_demo_running_serves_daily_averages_equal_to_pandas(tmp_path: Path) -> None:
    from taosrest import RestClient

    from streams_app.services.demo import cutoff_ms

    proc, env, lines = start_demo(tmp_path)
    try:
        wait_for(
            lambda: any("demo caught up" in ln for ln in lines) or proc.poll() is not None,
            900,
            "the demo to catch up",
            interval=2,
        )
        assert proc.poll() is None, "\n".join(lines[-40:])
        client = RestClient(
            f"http://127.0.0.1:{env['TDWEB_PORT']}",
            user="root",
            password="taosdata",
            timezone="UTC",
            timeout=120,
        )
        r = client.sql("SELECT station, wstart, avg_pm25, max_pm25, n FROM air.pm25_daily")
        got = pd.DataFrame(r["data"], columns=[m[0] for m in r["column_meta"]])
        got["day"] = pd.to_datetime(got["wstart"], utc=True)
        ref = pandas_daily()
        merged = ref.merge(got, on=["station", "day"], how="outer", suffixes=("_ref", "_got"), indicator=True)
        assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"].head()
        assert len(got) == len(ref) == 12 * 1461  # every closed UTC day of every station, once
        assert (merged["n_ref"] == merged["n_got"]).all()
        for col in ("avg_pm25", "max_pm25"):
            a, b = merged[f"{col}_ref"].to_numpy(float), merged[f"{col}_got"].to_numpy(float)
            assert np.array_equal(np.isnan(a), np.isnan(b)), col
            assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-12), col
        six = client.sql("SELECT count(*) FROM air.pm25_6h")["data"][0][0]
        assert six == 12 * 36  # the closed 6-hour windows of the replayed days

        def table(sql: str) -> pd.DataFrame:
            r = client.sql(sql)
            t = pd.DataFrame(r["data"], columns=[m[0] for m in r["column_meta"]])
            for c in ("wstart", "wend"):
                t[c] = pd.to_datetime(t[c], utc=True).astype("int64") // 1_000_000
            return t

        d = dref.raw()
        dref.compare(
            table("SELECT station, wstart, wend, wd, n, avg_wspm FROM air.wd_states"),
            dref.wd_states(d),
            ["station", "wstart"],
            ["wend", "wd", "n"],
            ["avg_wspm"],
        )
        dref.compare(
            table("SELECT station, wstart, wend, rain_mm, max_rain, hours FROM air.rain_sessions"),
            dref.rain_sessions(d),
            ["station", "wstart"],
            ["wend", "hours"],
            ["rain_mm", "max_rain"],
        )
        dref.compare(
            table("SELECT station, wstart, wend, avg_temp, min_temp, max_temp, n FROM air.temp_24h"),
            dref.temp_24h(d),
            ["station", "wstart"],
            ["wend", "n"],
            ["avg_temp", "min_temp", "max_temp"],
        )
        episodes = dref.pollution_episodes(d)
        episodes["station"] = episodes["station"].str.lower()  # the subtable: tag_tbname
        assert len(episodes) > 100
        dref.compare(
            table("SELECT tag_tbname AS station, wstart, wend, nrows, peak_pm25 FROM air.pollution_episodes"),
            episodes,
            ["station", "wstart"],
            ["wend", "nrows"],
            ["peak_pm25"],
        )
        created = client.sql(
            "SELECT create_time FROM information_schema.ins_streams WHERE stream_name = 'ingest_per_minute'"
        )["data"][0][0]
        after = int(pd.Timestamp(created).timestamp() * 1000)
        per_minute = client.sql("SELECT ts, rows_ingested FROM air.ingest_per_minute")["data"]
        got_minutes = {int(pd.Timestamp(t).timestamp() * 1000): n for t, n in per_minute if n}
        ref_minutes = dref.ingested_per_minute(env["TDWEB_LAKE"], "air", "quality", after)
        assert got_minutes == ref_minutes
        assert sum(ref_minutes.values()) == int((d["ts"] >= cutoff_ms()).sum())  # every replayed row
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
    assert proc.returncode == 0, "\n".join(lines[-30:])
    assert any("stopping" in ln for ln in lines)


def test_demo_once_exits_zero_after_printing_the_summary(tmp_path: Path) -> None:
    proc, _env, lines = start_demo(tmp_path, "--once")
    try:
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = "\n".join(lines)
    assert proc.returncode == 0, text[-3000:]
    header = next(ln for ln in lines if ln.startswith("| stream"))
    assert "rows in" in header and "windows out" in header and "notifications sent" in header
    rows = {
        ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
        for ln in lines
        if ln.startswith(("| pm25", "| wd_", "| rain_", "| temp_", "| pollution_", "| ingest_"))
    }
    assert set(rows) == {
        "pm25_daily",
        "pm25_6h_alerts",
        "wd_states",
        "rain_sessions",
        "temp_24h",
        "pollution_episodes",
        "ingest_per_minute",
    }
    d = dref.raw()
    assert rows["wd_states"][1] == rows["temp_24h"][1] == "420,768"
    assert rows["rain_sessions"][1] == f"{int((d['rain'] > 0).sum()):,}"  # WHERE rain > 0
    assert rows["temp_24h"][2] == f"{len(dref.temp_24h(d)):,}"
    assert rows["pm25_daily"][1] == "420,768"  # every row, history and replay
    assert rows["pm25_6h_alerts"][1] == "2,592"  # the replayed rows only (no FILL_HISTORY)
    assert rows["pm25_6h_alerts"][3] == "432"  # one notification per closed 6-hour window
    assert rows["pollution_episodes"][1] == "420,768"  # FILL_HISTORY: every row
    assert rows["pollution_episodes"][2] == f"{len(dref.pollution_episodes(d)):,}"
    assert rows["ingest_per_minute"][1] == "2,592"  # the rows written after it was created
