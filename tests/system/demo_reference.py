"""Independent pandas computations of the demo streams' outputs, read straight from the CSVs (not
through tdweb's loader). Times are epoch milliseconds (UTC)."""

from __future__ import annotations

import numpy as np
import pandas as pd

LOCAL_TZ = "Asia/Shanghai"
HOUR_MS = 3_600_000


def raw() -> pd.DataFrame:
    """Every reading: ``station`` (as in the CSV), ``ts`` (epoch ms), pm25, temp, rain, wd, wspm."""
    from streams_app.services.demo import dataset_dir

    frames = []
    for f in sorted(dataset_dir().glob("PRSA_Data_*.csv.gz")):
        df = pd.read_csv(f, na_values=["NA", "", " "], keep_default_na=False)
        local = pd.to_datetime(df[["year", "month", "day", "hour"]]).dt.tz_localize(LOCAL_TZ)
        ts = local.dt.tz_convert("UTC").astype("int64") // 1_000_000
        frames.append(
            pd.DataFrame(
                {
                    "station": df["station"],
                    "ts": ts,
                    "pm25": df["PM2.5"],
                    "temp": df["TEMP"],
                    "rain": df["RAIN"],
                    "wd": df["wd"],
                    "wspm": df["WSPM"],
                }
            )
        )
    return pd.concat(frames).sort_values(["station", "ts"], kind="stable").reset_index(drop=True)


def _runs(key: pd.Series, station: pd.Series) -> pd.Series:
    """Run id of consecutive equal ``key`` values within each station."""
    new = (key != key.shift()) | (station != station.shift())
    return new.cumsum()


def wd_states(d: pd.DataFrame) -> pd.DataFrame:
    """STATE_WINDOW(wd) per station: runs of one wind direction (rows without one skipped); the
    last run of each station is still open and not written (WINDOW_CLOSE)."""
    x = d[d["wd"].notna()].copy()
    x["run"] = _runs(x["wd"], x["station"])
    out = (
        x.groupby("run")
        .agg(
            station=("station", "first"),
            wstart=("ts", "min"),
            wend=("ts", "max"),
            wd=("wd", "first"),
            n=("ts", "size"),
            avg_wspm=("wspm", "mean"),
        )
        .reset_index(drop=True)
    )
    last = out.groupby("station")["wstart"].transform("max")
    return out[out["wstart"] < last].reset_index(drop=True)


def rain_sessions(d: pd.DataFrame, gap_hours: int = 3) -> pd.DataFrame:
    """SESSION(ts, 3h) per station over the rows with rain > 0; ``wend`` = last row + 3 h; the last
    session of each station is open (no later rainy row has come)."""
    x = d[d["rain"] > 0].copy()
    gap = x["ts"].diff()
    x["s"] = ((gap > gap_hours * HOUR_MS) | (x["station"] != x["station"].shift())).cumsum()
    out = (
        x.groupby("s")
        .agg(
            station=("station", "first"),
            wstart=("ts", "min"),
            last=("ts", "max"),
            rain_mm=("rain", "sum"),
            max_rain=("rain", "max"),
            hours=("ts", "size"),
        )
        .reset_index(drop=True)
    )
    out["wend"] = out["last"] + gap_hours * HOUR_MS
    last = out.groupby("station")["wstart"].transform("max")
    return out[out["wstart"] < last].drop(columns="last").reset_index(drop=True)


def temp_24h(d: pd.DataFrame) -> pd.DataFrame:
    """COUNT_WINDOW(24) per station: every 24 consecutive readings (all full: 35,064 rows each)."""
    x = d.copy()
    x["i"] = x.groupby("station").cumcount() // 24
    return (
        x.groupby(["station", "i"])
        .agg(
            wstart=("ts", "min"),
            wend=("ts", "max"),
            avg_temp=("temp", "mean"),
            min_temp=("temp", "min"),
            max_temp=("temp", "max"),
            n=("ts", "size"),
        )
        .reset_index()
        .drop(columns="i")
    )


def compare(
    got: pd.DataFrame, ref: pd.DataFrame, keys: list[str], exact: list[str], floats: list[str]
) -> None:
    """Assert ``got`` has exactly ``ref``'s rows (by ``keys``), equal in ``exact`` columns and within
    1e-9 relative in ``floats`` (NULL where pandas has NaN)."""
    merged = ref.merge(got, on=keys, how="outer", suffixes=("_ref", "_got"), indicator=True)
    bad = merged[merged["_merge"] != "both"]
    assert bad.empty, f"{len(bad)} rows differ, e.g.\n{bad.head()}"
    for c in exact:
        assert (merged[f"{c}_ref"] == merged[f"{c}_got"]).all(), c
    for c in floats:
        a = merged[f"{c}_ref"].to_numpy(float)
        b = merged[f"{c}_got"].to_numpy(float)
        assert np.array_equal(np.isnan(a), np.isnan(b)), c
        assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-9), c


def pollution_episodes(d: pd.DataFrame) -> pd.DataFrame:
    """EVENT_WINDOW(START WITH pm25 > 150 END WITH pm25 <= 75) per station: an episode opens at a
    reading above 150 when none is open and closes at the first reading at or below 75, that
    reading included (readings without PM2.5 belong to the open episode, and neither open nor close
    one); ``wend`` is the closing reading; episodes still open at the end are not written."""
    out = []
    for station, g in d.groupby("station", sort=False):
        ts = g["ts"].to_numpy()
        pm = g["pm25"].to_numpy(float)
        start = None
        for i in range(len(ts)):
            v = pm[i]
            if start is None:
                if v > 150:
                    start = i
                continue
            if v <= 75:
                seg = pm[start : i + 1]
                out.append((station, int(ts[start]), int(ts[i]), i + 1 - start, float(np.nanmax(seg))))
                start = None
    return pd.DataFrame(out, columns=["station", "wstart", "wend", "nrows", "peak_pm25"])


def ingested_per_minute(lake_root: str, db: str, table: str, after_ms: int) -> dict[int, int]:
    """Rows appended to a lake table per PERIOD(1m) trigger, read from its Delta log: each commit
    after ``after_ms`` counts its files' ``numRecords`` at the first minute boundary at or after
    its commit timestamp (the trigger whose ``%%trows`` holds it)."""
    import json
    from pathlib import Path

    log = Path(lake_root) / db / table / "_delta_log"
    out: dict[int, int] = {}
    for f in sorted(log.glob("*.json")):
        info, rows = None, 0
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                info = action["commitInfo"]
            if "add" in action and action["add"].get("stats"):
                rows += json.loads(action["add"]["stats"])["numRecords"]
        if info is None or info["timestamp"] <= after_ms or not rows:
            continue
        minute = -(-int(info["timestamp"]) // 60_000) * 60_000
        out[minute] = out.get(minute, 0) + rows
    return out
