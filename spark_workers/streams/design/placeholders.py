"""Placeholders: the palette of names a computation may use with each trigger type (seed 002,
Placeholders table), with what each stands for.
"""

from __future__ import annotations

from spark_workers.streams.design.document import WINDOW_TRIGGERS

_PLACEHOLDERS = {
    "_twstart": "start timestamp of the window",
    "_twend": "end timestamp of the window",
    "_twduration": "duration of the window (database precision units)",
    "_twrownum": "number of rows in the window (3.3.7 syntax)",
    "_tprev_ts": "event time of the previous trigger",
    "_tcurrent_ts": "event time of the current trigger",
    "_tnext_ts": "event time of the next trigger",
    "_tprev_localtime": "system time of the previous trigger",
    "_tnext_localtime": "system time of the next trigger",
    "_tgrpid": "id of the trigger group (BIGINT; 3.3.7 syntax)",
    "_tlocaltime": "system time of the current trigger (3.3.7 syntax)",
    "%%1": "value of the 1st PARTITION BY item (%%2 the 2nd...; 3.3.7 syntax)",
    "%%tbname": "the trigger group's subtable when PARTITION BY has tbname (FROM, SELECT, WHERE; 3.3.7)",
    "%%trows": "the rows of the trigger group that caused this trigger (FROM only, no WHERE or joins)",
}


def placeholders_for(trigger_type: str, partitioned: bool) -> list[dict[str, str]]:
    """Placeholders the computation may use with a trigger type (seed 002, Placeholders table;
    ``streams.v337.check_placeholders``): ``_tw*`` for window triggers, ``_tprev_ts`` /
    ``_tcurrent_ts`` / ``_tnext_ts`` for SLIDING, ``_tprev_localtime`` / ``_tnext_localtime`` for
    PERIOD, ``_tgrpid`` / ``_tlocaltime`` / ``%%trows`` for all, ``%%n`` and ``%%tbname`` when
    partitioned. eKuiper windows (legacy only) have ``_twstart`` / ``_twend`` / ``_twduration``
    (the design's names of ``_wstart`` / ``_wend`` / ``_wduration``) and ``%%trows``; a legacy
    stream without a window (``none``) only ``%%trows``, the rows written.

    Returns:
        ``[{"name": "_twstart", "description": "..."}]`` in palette order; unknown types: ``[]``.
    """
    if trigger_type == "ekuiper":
        names = ["_twstart", "_twend", "_twduration", "%%trows"]
    elif trigger_type == "none":  # legacy, no window: the rows written (seed 000)
        names = ["%%trows"]
    elif trigger_type in WINDOW_TRIGGERS:
        names = ["_twstart", "_twend", "_twduration", "_twrownum"]
    elif trigger_type == "sliding":
        names = ["_tprev_ts", "_tcurrent_ts", "_tnext_ts"]
    elif trigger_type == "period":
        names = ["_tprev_localtime", "_tnext_localtime"]
    else:
        return []
    if trigger_type not in ("ekuiper", "none"):
        names += ["_tgrpid", "_tlocaltime", "%%trows"]
        if partitioned:
            names += ["%%1", "%%tbname"]
    return [{"name": n, "description": _PLACEHOLDERS[n]} for n in names]
