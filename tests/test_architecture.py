"""The layer order of docs/architecture.md holds (the import contracts are in pyproject.toml).

- no import circle among the modules of ``spark_workers`` and ``streams_app`` (at most the one
  two-file pair docs/architecture.md names);
- ``lint-imports`` keeps every contract, and fails on an import that breaks the layer order;
- the web process (Daphne's ``tdweb.asgi``) runs without loading pyspark.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))
# the one two-file pair docs/architecture.md allows (none today)
ALLOWED_PAIRS: set[frozenset[str]] = set()


def _circles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [
            (root, iter(sorted(m for m in graph.find_modules_directly_imported_by(root) if m in modules)))
        ]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append(
                        (
                            w,
                            iter(
                                sorted(m for m in graph.find_modules_directly_imported_by(w) if m in modules)
                            ),
                        )
                    )
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_circles() -> None:
    graph = grimp.build_graph("spark_workers", "streams_app", cache_dir=None)  # no stale cache
    modules = {m for m in graph.modules if m.startswith(("spark_workers", "streams_app"))}
    circles = _circles(graph, modules)
    assert [c for c in circles if len(c) > 2] == []
    pairs = [frozenset(c) for c in circles if len(c) == 2]
    assert set(pairs) <= ALLOWED_PAIRS, pairs


def test_import_contracts_are_kept() -> None:
    r = subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken" not in r.stdout.lower().replace("0 broken", "")


def test_an_import_against_the_layer_order_fails_the_contract(tmp_path: Path) -> None:
    """The check can fail: the language layer importing the query layer breaks the contract."""
    shutil.copytree(
        ROOT / "spark_workers", tmp_path / "spark_workers", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "spark_workers" / "sql" / "probe.py").write_text("from spark_workers.query import planner\n")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = spark_workers\n\n"
        "[importlinter:contract:layers]\nname = layers\ntype = layers\n"
        "layers =\n    spark_workers.query\n    spark_workers.sql\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, env=env, check=False
    )
    assert r.returncode != 0
    assert "spark_workers.sql.probe -> spark_workers.query.planner" in r.stdout


def test_the_web_process_does_not_load_pyspark() -> None:
    code = (
        "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tdweb.settings_test');"
        "import tdweb.asgi, tdweb.urls;"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "print(sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.')))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]", r.stdout
