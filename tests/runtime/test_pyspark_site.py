"""``spark_workers/runtime/tdweb_pyspark_site.pth`` (installed by ``make install`` and the image):
a Python process started with Spark's PYTHONPATH imports pyspark from the installed package and
its bytecode cache instead of compiling the package's own ``pyspark.zip`` again; nothing else on
the path is touched. Spark's own Python workers are checked in tests/spark/test_stream_query.py."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PURELIB = Path(sysconfig.get_paths()["purelib"])
LIB = PURELIB / "pyspark" / "python" / "lib"
PROBE = "import json, sys, pyspark; print(json.dumps([pyspark.__file__, sys.path]))"


def _run(pythonpath: str) -> tuple[str, list[str]]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stderr == "", out.stderr  # a .pth line that fails prints here, in every process
    file, path = json.loads(out.stdout)
    return file, path


def test_the_installed_file_is_the_repositorys() -> None:
    installed = PURELIB / "tdweb_pyspark_site.pth"
    assert installed.read_text() == (ROOT / "spark_workers/runtime/tdweb_pyspark_site.pth").read_text()


def test_sparks_pythonpath_imports_pyspark_from_the_package() -> None:
    py4j = next(LIB.glob("py4j-*-src.zip"))
    # SPARK_HOME as pip's pyspark sets it ends in "/.": the same zip under another spelling
    file, path = _run(f"{PURELIB}/pyspark/./python/lib/pyspark.zip:{py4j}")
    assert Path(file) == PURELIB / "pyspark" / "__init__.py"
    assert not [p for p in path if p.endswith("pyspark.zip")]
    assert str(py4j) in path  # only the pyspark zip goes


def test_another_pyspark_zip_stays_first() -> None:
    file, path = _run("/nonexistent/spark/python/lib/pyspark.zip")
    assert path[1] == "/nonexistent/spark/python/lib/pyspark.zip"  # after the script's ''
    assert Path(file) == PURELIB / "pyspark" / "__init__.py"  # nothing there: the package
