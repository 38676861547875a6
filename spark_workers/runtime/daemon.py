"""Spark's Python daemon (``pyspark.daemon``) with the stream step's modules imported before it
forks workers (``spark.python.daemon.module``, set by :mod:`spark_workers.runtime.session`).

Spark starts one daemon per executor and forks every Python worker from it; a worker then
imports what the task's function needs. For the ``applyInPandasWithState`` step of every stream
(:func:`spark_workers.runtime.query.make_state_func`) that is pandas, pyarrow and the engine —
about 0.5 s of CPU per worker, paid again by each worker a restarted worker's queries start at
once (docs/PERFORMANCE.md, "Recovery after kill -9"); for the ``tdlake`` source's reads it is the
change feed, DuckDB (stage 1 of packed and pre-aggregated streams) and packing; and every worker
imports ``pyspark.worker``, which Spark's ``PYTHONPATH`` takes from ``pyspark.zip``, compiled
again in every process (about 1.2 s of CPU for pyspark's SQL modules here). Imported here, the
forked workers share them. Nothing else changes: the daemon's protocol is
``pyspark.daemon.manager``'s.
"""

from __future__ import annotations

import pandas  # noqa: F401
import pyarrow  # noqa: F401
import pyspark.worker  # noqa: F401
from pyspark import daemon

import spark_workers.lake.spark_source
import spark_workers.query.duck
import spark_workers.runtime.kernel
import spark_workers.runtime.packing
import spark_workers.runtime.premerge
import spark_workers.runtime.query  # noqa: F401

if __name__ == "__main__":
    daemon.manager()
