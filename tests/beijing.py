"""The Beijing air-quality CSVs (``data/beijing-air-quality``) as the conformance tests read them:
one place that parses a station's hourly readings and turns its wall-clock hours into epoch
milliseconds, so every test computes its expected values from the same independent reading.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data/beijing-air-quality"


def station_csv(name: str, nrows: int | None = None) -> pd.DataFrame:
    """Station ``name``'s CSV (e.g. ``"Aotizhongxin"``) as pandas reads it, ``NA`` as NaN."""
    return pd.read_csv(
        DATA / f"PRSA_Data_{name}_20130301-20170228.csv.gz", na_values=["NA"], low_memory=False, nrows=nrows
    )


def epoch_ms(df: pd.DataFrame, tz: str | None = "Asia/Shanghai") -> pd.Series:
    """Epoch milliseconds (int64) of the rows' ``year, month, day, hour``, read as wall-clock
    hours in ``tz`` (None: as UTC hours)."""
    local = pd.to_datetime(df[["year", "month", "day", "hour"]])
    if tz is not None:
        local = local.dt.tz_localize(tz).dt.tz_convert("UTC")
    return local.astype("int64") // 1_000_000


def readings(
    stations: dict[str, str], columns: dict[str, str], tz: str | None = "Asia/Shanghai"
) -> pd.DataFrame:
    """``tbname``, ``ts`` (:func:`epoch_ms`) and ``columns`` (output name -> CSV column, e.g.
    ``{"pm25": "PM2.5"}``) of every station of ``stations`` (subtable name -> station name), in
    file order."""
    frames = []
    for tb, name in stations.items():
        df = station_csv(name)
        cols = {out: df[src] for out, src in columns.items()}
        frames.append(pd.DataFrame({"tbname": tb, "ts": epoch_ms(df, tz), **cols}))
    return pd.concat(frames, ignore_index=True)
