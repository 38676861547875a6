"""The layer order of docs/architecture.md holds (the import contracts are in pyproject.toml).

- no import circle among the modules of ``spark_workers`` and ``streams_app`` (at most the one
  two-file pair docs/architecture.md names);
- ``lint-imports`` keeps every contract, and fails on an import that breaks the layer order;
- the web process (Daphne's ``tdweb.asgi``) runs without loading pyspark;
- no function is longer than 80 lines.
"""

from __future__ import annotations

import ast
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
    """The check can fail: on a copy of the tree with the project's own contracts
    (pyproject.toml), the language layer importing the query layer, and a selector importing a
    service above it, break the layer contracts."""
    for pkg in ("spark_workers", "streams_app", "tdweb"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "spark_workers" / "sql" / "probe.py").write_text("from spark_workers.query import planner\n")
    (tmp_path / "streams_app" / "probe.py").write_text("from streams_app.services import streams\n")
    selectors = tmp_path / "streams_app" / "selectors.py"
    selectors.write_text(selectors.read_text() + "\nfrom streams_app import probe  # noqa\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, env=env, check=False
    )
    assert r.returncode != 0
    assert "spark_workers.sql.probe -> spark_workers.query.planner" in r.stdout
    assert "streams_app.selectors -> streams_app.probe" in r.stdout
    assert "Contracts: 2 kept, 2 broken." in r.stdout


def test_no_function_is_longer_than_80_lines() -> None:
    """docs/architecture.md: no function over 80 lines in spark_workers/ or streams_app/ (the
    ones kept longer, with the reason, are listed there; none today)."""
    long = []
    for pkg in ("spark_workers", "streams_app"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = (node.end_lineno or node.lineno) - node.lineno + 1
                    if n > 80:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert long == [], long


def test_the_web_process_does_not_load_pyspark() -> None:
    code = (
        "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tdweb.settings_test');"
        "import tdweb.asgi, tdweb.urls;"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "print(sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.')))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]", r.stdout
