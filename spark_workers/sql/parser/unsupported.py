"""TDengine statements tdweb does not run, refused by name with the reason (never a syntax error,
never accepted and ignored).

Each entry is the statement's leading words as TDengine's grammar (``sql.y``) spells them and why
tdweb has no equivalent; the refusal is ``0x0100`` (TSDB_CODE_OPS_NOT_SUPPORT, "Operation not
supported") positioned at the statement's first word. ``docs/sql.md`` lists them as refused.
"""

from __future__ import annotations

from spark_workers.errors import Code
from spark_workers.sql.parser.base import ParserBase

_NODES = "tdweb is one server whose storage is the lake: it has no dnodes, mnodes, qnodes, snodes or vgroups"
_TMQ = "data subscription (TMQ) is not available; streams and their notifications deliver new rows"
_MAINTENANCE = "the lake (Delta tables) has no vnode files to flush, compact, trim or move"

UNSUPPORTED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("CREATE", "TOPIC"), _TMQ),
    (("DROP", "TOPIC"), _TMQ),
    (("DROP", "CONSUMER", "GROUP"), _TMQ),
    (("CREATE", "INDEX"), "tag indexes: the lake's tables are read without them"),
    (("DROP", "INDEX"), "tag indexes: the lake's tables are read without them"),
    (("CREATE", "TSMA"), "time-range small materialized aggregates: use a stream into an output table"),
    (("CREATE", "RECURSIVE", "TSMA"), "time-range small materialized aggregates: use a stream"),
    (("DROP", "TSMA"), "time-range small materialized aggregates: use a stream into an output table"),
    (("CREATE", "SMA"), "small materialized aggregates: use a stream into an output table"),
    (("CREATE", "VIEW"), "views are not available"),
    (("CREATE", "OR", "REPLACE", "VIEW"), "views are not available"),
    (("DROP", "VIEW"), "views are not available"),
    (("SHOW", "CREATE", "VIEW"), "views are not available"),
    (("CREATE", "FUNCTION"), "user-defined functions would run user code on the server"),
    (("CREATE", "AGGREGATE", "FUNCTION"), "user-defined functions would run user code on the server"),
    (("CREATE", "OR", "REPLACE", "FUNCTION"), "user-defined functions would run user code on the server"),
    (("CREATE", "OR", "REPLACE", "AGGREGATE"), "user-defined functions would run user code on the server"),
    (("DROP", "FUNCTION"), "user-defined functions would run user code on the server"),
    (("CREATE", "DNODE"), _NODES),
    (("DROP", "DNODE"), _NODES),
    (("ALTER", "DNODE"), _NODES),
    (("ALTER", "ALL", "DNODES"), _NODES),
    (("ALTER", "LOCAL"), "client settings are the server's (TDWEB_* settings, SHOW LOCAL VARIABLES)"),
    (("CREATE", "MNODE"), _NODES),
    (("DROP", "MNODE"), _NODES),
    (("CREATE", "QNODE"), _NODES),
    (("DROP", "QNODE"), _NODES),
    (("CREATE", "SNODE"), _NODES),
    (("DROP", "SNODE"), _NODES),
    (("CREATE", "BNODE"), _NODES),
    (("DROP", "BNODE"), _NODES),
    (("CREATE", "ANODE"), "analysis nodes (TDgpt) are not available"),
    (("DROP", "ANODE"), "analysis nodes (TDgpt) are not available"),
    (("RESTORE",), _NODES),
    (("BALANCE", "VGROUP"), _NODES),
    (("REDISTRIBUTE", "VGROUP"), _NODES),
    (("SPLIT", "VGROUP"), _NODES),
    (("MERGE", "VGROUP"), _NODES),
    (("FLUSH", "DATABASE"), _MAINTENANCE),
    (("COMPACT",), _MAINTENANCE),
    (("TRIM", "DATABASE"), _MAINTENANCE),
    (("S3MIGRATE", "DATABASE"), _MAINTENANCE),
    (("SSMIGRATE", "DATABASE"), _MAINTENANCE),
    (("KILL", "QUERY"), "tdweb keeps no list of running statements (SHOW QUERIES is empty)"),
    (("KILL", "CONNECTION"), "a REST request is not a connection (SHOW CONNECTIONS is empty)"),
    (("KILL", "TRANSACTION"), "tdweb's writes are single Delta commits (SHOW TRANSACTIONS is empty)"),
    (("KILL", "COMPACT"), _MAINTENANCE),
    (("EXPLAIN",), "query plans are the backend's, not TDengine's"),
    (("SHOW", "GRANTS"), "tdweb has no TDengine licence"),
    (("SHOW", "LICENCES"), "tdweb has no TDengine licence"),
    (("SHOW", "LICENSES"), "tdweb has no TDengine licence"),
    (("SHOW", "TABLE", "DISTRIBUTED"), "the lake's files are not TDengine's blocks"),
    (("SHOW", "TSMAS"), "time-range small materialized aggregates are not available"),
    (("SHOW", "ARBGROUPS"), _NODES),
    (("SHOW", "ENCRYPTIONS"), "database encryption is not available"),
    (("SHOW", "ANODES"), "analysis nodes (TDgpt) are not available"),
    (("CREATE", "ENCRYPT_KEY"), "database encryption is not available"),
)
"""``(leading words, reason)`` of every TDengine statement tdweb refuses."""


def refuse_unsupported(p: ParserBase) -> None:
    """Raise ``0x0100`` when the statement at the parser's position is one of :data:`UNSUPPORTED`
    (also ``SHOW db.DISK_INFO``), naming it and why.

    Raises:
        SqlError: NOT_SUPPORTED, positioned at the statement's first word.
    """
    for words, reason in UNSUPPORTED:
        if p.at(*words):
            raise p.error(f"{' '.join(words)} is not supported: {reason}", p.tok(), code=Code.NOT_SUPPORTED)
    if p.at("SHOW") and any(p.at_index(j, "DISK_INFO") for j in range(p.i + 1, min(p.i + 4, p.end))):
        raise p.error("SHOW DISK_INFO is not supported: " + _MAINTENANCE, p.tok(), code=Code.NOT_SUPPORTED)
