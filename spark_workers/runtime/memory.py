"""Memory sampling of a worker process, for tracing native memory growth (docs/PERFORMANCE.md,
"Worker memory soak"): what the process holds beside its Python objects, as one JSON-ready dict.

A diagnostic, off by default (``TDWEB_MEMORY_SAMPLES_DIR``); :func:`memory_sample` reads
``/proc/self`` (Linux), the Arrow default pool, glibc's ``mallinfo2`` (when the C library has
it), DuckDB's jemalloc, the Delta table snapshots cached by every
:class:`~spark_workers.lake.store.Lake` of the process and DuckDB's pool of idle databases.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from spark_workers.lake.store import Lake
from spark_workers.query import duck


class _Mallinfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (glibc 2.33+; every field a ``size_t``, bytes or counts)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",  # bytes of the heaps from sbrk and of the non-main arenas
            "ordblks",
            "smblks",
            "hblks",  # chunks from mmap
            "hblkhd",  # bytes from mmap
            "usmblks",
            "fsmblks",
            "uordblks",  # bytes in use
            "fordblks",  # bytes free inside the arenas
            "keepcost",
        )
    ]


def _mallinfo2() -> dict[str, int] | None:
    """glibc's ``mallinfo2()`` as ``{arena, hblkhd, uordblks, fordblks}`` bytes; None without
    glibc 2.33+ (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _Mallinfo2
    mi = fn()
    return {k: int(getattr(mi, k)) for k in ("arena", "hblkhd", "uordblks", "fordblks")}


def _duckdb_jemalloc() -> dict[str, int] | None:
    """DuckDB's own jemalloc (its Linux builds link one, prefixed ``duckdb_je_``):
    ``{allocated, resident, retained}`` bytes after refreshing its statistics (``epoch``); None
    where the DuckDB library has no such allocator."""
    try:
        import _duckdb  # type: ignore[import-not-found]

        fn = ctypes.CDLL(_duckdb.__file__).duckdb_je_mallctl
    except (ImportError, OSError, AttributeError):
        return None
    fn.argtypes = [
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.c_void_p,
        ctypes.c_size_t,
    ]
    epoch = ctypes.c_uint64(1)
    if fn(b"epoch", None, None, ctypes.byref(epoch), ctypes.sizeof(epoch)) != 0:
        return None
    out: dict[str, int] = {}
    for key in ("allocated", "resident", "retained"):
        value = ctypes.c_size_t(0)
        size = ctypes.c_size_t(ctypes.sizeof(value))
        if fn(f"stats.{key}".encode(), ctypes.byref(value), ctypes.byref(size), None, 0) == 0:
            out[key] = int(value.value)
    return out


def _proc_status() -> dict[str, int]:
    """``VmRSS``, ``RssAnon``, ``RssFile``, ``VmData`` of ``/proc/self/status`` in bytes, and the
    number of mappings (``/proc/self/maps`` lines); empty where there is no ``/proc``."""
    out: dict[str, int] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmData"):
                out[key] = int(rest.split()[0]) * 1024
        with open("/proc/self/maps", "rb") as f:
            out["maps"] = sum(1 for _ in f)
    except OSError:
        pass
    return out


def lake_snapshots(lakes: list[Lake]) -> dict[str, int]:
    """The Delta table snapshots the ``lakes`` cache (``Lake._tables``):
    ``{lakes, tables, files, applied}``, ``files`` the sum of their snapshots' data-file counts
    (``DeltaTable.file_uris``), ``applied`` the sum of the versions each handle was brought
    forward by incremental updates since it was opened (bounded by
    :data:`~spark_workers.lake.store.SNAPSHOT_REOPEN_VERSIONS` per table); a table whose listing
    fails counts 0."""
    tables = files = applied = 0
    for lake in lakes:
        with lake._lock:
            cached = [(dt, opened) for dt, _, opened in lake._tables.values()]
        tables += len(cached)
        for dt, opened in cached:
            with contextlib.suppress(Exception):  # a table dropped meanwhile: a diagnostic
                files += len(dt.file_uris())
                applied += int(dt.version()) - opened
    return {"lakes": len(lakes), "tables": tables, "files": files, "applied": applied}


def memory_sample() -> dict[str, Any]:
    """One sample of this process's memory, JSON-ready.

    Returns:
        ``t`` (epoch seconds), ``rss``/``rss_anon``/``rss_file``/``vm_data`` (bytes) and ``maps``
        (mappings) from ``/proc/self``; ``threads`` (OS threads); ``arrow_allocated`` (bytes,
        ``pa.total_allocated_bytes``), ``arrow_pool`` (backend name), ``arrow_max`` (bytes, the
        pool's high-water mark); ``malloc`` (glibc ``mallinfo2`` bytes: ``arena`` from sbrk and
        arenas, ``hblkhd`` from mmap, ``uordblks`` in use, ``fordblks`` free; None without
        glibc 2.33+); ``duck_jemalloc`` (DuckDB's jemalloc: ``allocated``, ``resident``,
        ``retained`` bytes; None without it); ``delta`` (:func:`lake_snapshots`); ``duck_idle``
        (pooled idle DuckDB databases); ``py_objects`` (objects tracked by the garbage collector).
        Cost: a walk over the collector's objects and one file listing per cached table
        (milliseconds to a few tenths of a second).
    """
    pool = pa.default_memory_pool()
    proc = _proc_status()
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threads = 0
    objects = gc.get_objects()
    # type(), not isinstance(): a weak proxy whose object is gone raises on __class__
    lakes = [o for o in objects if issubclass(type(o), Lake)]
    n_objects = len(objects)
    del objects
    with duck._pool_lock:
        duck_idle = len(duck._idle)
    return {
        "t": round(time.time(), 3),
        "rss": proc.get("VmRSS", 0),
        "rss_anon": proc.get("RssAnon", 0),
        "rss_file": proc.get("RssFile", 0),
        "vm_data": proc.get("VmData", 0),
        "maps": proc.get("maps", 0),
        "threads": threads,
        "arrow_allocated": int(pa.total_allocated_bytes()),
        "arrow_pool": pool.backend_name,
        "arrow_max": int(pool.max_memory() or 0),
        "malloc": _mallinfo2(),
        "duck_jemalloc": _duckdb_jemalloc(),
        "delta": lake_snapshots(lakes),
        "duck_idle": duck_idle,
        "py_objects": n_objects,
    }
