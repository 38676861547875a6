"""TDengine SQL front door: :func:`parse` / :func:`parse_one` text into typed statements
(:mod:`spark_workers.sql.ast`) and :func:`render` them back to canonical TDengine SQL."""

from spark_workers.sql.parser import parse, parse_expression, parse_one
from spark_workers.sql.render import expr_sql, render

__all__ = ["expr_sql", "parse", "parse_expression", "parse_one", "render"]
