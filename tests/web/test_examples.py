"""The SQL examples the pages offer run on the demo's data as written (issue 16, item 3): every
"Insert example" snippet of the Create-stream page validates against the demo's schema
(``streams_app.services.demo.schema_sql``) with no database selected, and the demo finds its
dataset in the repository's own copy first."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from streams_app.services import demo
from streams_app.services.sql import sql_execute, sql_validate

CREATE_PAGE = Path(__file__).resolve().parents[2] / "frontend/src/pages/CreatePage.tsx"


def snippets() -> list[str]:
    """The SQL text of every snippet of ``SNIPPETS`` (template literals without substitutions)."""
    block = CREATE_PAGE.read_text().split("export const SNIPPETS", 1)[1].split("\n];", 1)[0]
    texts = re.findall(r"sql: \(\) => `([^`]*)`", block)
    assert len(texts) == block.count("label:"), "every snippet is a plain template literal"
    return texts


@pytest.mark.parametrize("index", range(3))
def test_create_page_examples_validate_on_the_demo_schema(admin, lake, index: int) -> None:
    stations = pd.DataFrame({"station": ["dongsi", "tiantan"], "station_name": ["Dongsi", "Tiantan"]})
    for sql in demo.schema_sql(stations):
        sql_execute(sql=sql, user=admin)
    texts = snippets()
    assert len(texts) == 3
    result = sql_validate(sql=texts[index], user=admin)
    assert result["ok"] is True, result
    assert result["statement"].startswith("CREATE STREAM")


def test_demo_dataset_is_the_repository_copy_unless_told(monkeypatch, tmp_path, settings) -> None:
    monkeypatch.delenv("TDWEB_DATASET", raising=False)
    assert demo.dataset_dir() == Path(settings.BASE_DIR) / "data/beijing-air-quality"
    for i in range(12):
        (tmp_path / f"PRSA_Data_S{i}_20130301-20170228.csv.gz").write_bytes(b"")
    monkeypatch.setenv("TDWEB_DATASET", str(tmp_path))
    assert demo.dataset_dir() == tmp_path
