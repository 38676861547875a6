"""Streams: both CREATE STREAM syntaxes, stream commands (DROP/PAUSE/RESUME/START/STOP STREAM) and
RECALCULATE STREAM.

The legacy syntax (seed 000, "Creating Stream Computing": ``stream_options`` then ``INTO stb AS
query`` and ``NOTIFY``) and the 3.3.7 syntax (seed 002, "Create a Stream": a trigger type, FROM,
PARTITION BY, ``STREAM_OPTIONS(...)``, ``NOTIFY(...)``, INTO, OUTPUT_SUBTABLE, TAGS with
expressions, AS query) share output columns, tag definitions and notification URL and event lists.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from spark_workers.sql import ast, lexer
from spark_workers.sql.ast import Span, TableName
from spark_workers.sql.parser.base import COMMA, L_PAREN, PIPE, R_PAREN
from spark_workers.sql.parser.queries import QueriesParser

_LEGACY_TRIGGERS = frozenset(
    {"AT_ONCE", "WINDOW_CLOSE", "MAX_DELAY", "FORCE_WINDOW_CLOSE", "CONTINUOUS_WINDOW_CLOSE"}
)
_LEGACY_OPTION_WORDS = frozenset(
    {"TRIGGER", "WATERMARK", "IGNORE", "DELETE_MARK", "FILL_HISTORY", "EVENT_TIME", "INTO", "AS"}
)
# legacy stream option word -> attribute of ast.LegacyStreamOptions (IGNORE EXPIRED/UPDATE apart)
_LEGACY_OPTIONS = {
    "TRIGGER": "trigger",
    "WATERMARK": "watermark",
    "DELETE_MARK": "delete_mark",
    "FILL_HISTORY": "fill_history",
    "EVENT_TIME": "event_time",
}
_TRIGGER_WORDS = frozenset(
    {"PERIOD", "INTERVAL", "SLIDING", "SESSION", "STATE_WINDOW", "EVENT_WINDOW", "COUNT_WINDOW"}
)
_LEGACY_EVENTS = frozenset({"WINDOW_OPEN", "WINDOW_CLOSE"})
_NOTIFY_EVENTS = frozenset({"WINDOW_OPEN", "WINDOW_CLOSE", "ON_TIME"})
_STREAM_FLAGS = {
    "IGNORE_DISORDER": "ignore_disorder",
    "DELETE_RECALC": "delete_recalc",
    "DELETE_OUTPUT_TABLE": "delete_output_table",
    "CALC_NOTIFY_ONLY": "calc_notify_only",
    # seed 002 prints the option so in its "Stream Creation Example" (count window, sm2): accepted
    # as written, the same option
    "CALC_ONTIFY_ONLY": "calc_notify_only",
    "LOW_LATENCY_CALC": "low_latency_calc",
    "FORCE_OUTPUT": "force_output",
    "IGNORE_NODATA_TRIGGER": "ignore_nodata_trigger",
}
_STREAM_DURATIONS = {"WATERMARK": "watermark", "EXPIRED_TIME": "expired_time", "MAX_DELAY": "max_delay"}
# Words after which a 3.3.7 clause list (PARTITION BY, NOTIFY ... WHERE) ends.
_STREAM_CLAUSES = frozenset(
    {
        ("STREAM_OPTIONS",),
        ("NOTIFY",),
        ("NOTIFY_OPTIONS",),
        ("INTO",),
        ("OUTPUT_SUBTABLE",),
        ("TAGS",),
        ("AS",),
    }
)


class StreamsParser(QueriesParser):
    """Stream statements; a stream's query and window trigger types are :class:`QueriesParser`'s."""

    def drop_stream(self) -> ast.StreamCommand:
        """``DROP STREAM [IF EXISTS] [db.]name`` (after DROP STREAM)."""
        ie = self.if_exists()
        s = self.table_name("a stream name")
        return ast.StreamCommand(action="drop", name=s.name, db=s.db, if_exists=ie)

    def stream_command(self) -> ast.StreamCommand:
        t = self.toks[self.i]
        action = lexer.words(t)[0].lower()
        self.i += 1
        self.expect("STREAM", message=f"syntax error: expected STREAM after {action.upper()}")
        ie = self.if_exists()
        ignore = False
        if action in ("resume", "start"):
            ignore = bool(self.accept("IGNORE", "UNTREATED"))
        s = self.table_name("a stream name")
        return ast.StreamCommand(action=action, name=s.name, db=s.db, if_exists=ie, ignore_untreated=ignore)

    def recalculate(self) -> ast.RecalculateStream:
        self.expect("RECALCULATE")
        self.expect("STREAM", message="syntax error: expected STREAM after RECALCULATE")
        s = self.table_name("a stream name")
        self.expect("FROM", message="syntax error: expected FROM start_time")
        lo = self.i
        hi = self.scan(lo, lambda j: self.at_index(j, "TO"))
        start = self.constant(lo, hi, "a start time", after="start time")
        self.i = hi
        end = None
        if self.accept("TO"):
            end = self.constant(self.i, self.end, "an end time", after="end time")
            self.i = self.end
        return ast.RecalculateStream(name=s.name, db=s.db, start=start, end=end)

    # ------------------------------------------------------------------ CREATE STREAM

    def create_stream(self) -> ast.Statement:
        ine = self.if_not_exists()
        s = self.table_name("a stream name")
        w = self.word()
        if w and w[0] in _LEGACY_OPTION_WORDS:
            return self.legacy_stream(s, ine)
        if w and w[0] in _TRIGGER_WORDS:
            return self.stream_337(s, ine)
        raise self.error(
            "syntax error: expected stream options, INTO or a trigger type "
            "(PERIOD, INTERVAL, SLIDING, SESSION, STATE_WINDOW, EVENT_WINDOW, COUNT_WINDOW) "
            "after the stream name"
        )

    def legacy_stream(self, s: TableName, ine: bool) -> ast.CreateStreamLegacy:
        """Legacy CREATE STREAM (seed 000, "Creating Stream Computing")."""
        opts = self.legacy_options()
        into: TableName | None = None
        columns, tags, subtable = None, None, None
        as_at = self.tok()
        if self.accept("INTO"):
            into = self.table_name("an output supertable name")
            columns = self.output_columns() if self.is_type(L_PAREN) else None
            tags = self.tag_defs(with_expr=False) if self.accept("TAGS") else None
            if self.accept("SUBTABLE"):
                subtable = self.paren_expression("SUBTABLE")
        elif as_at is None or lexer.words(as_at) != ("AS",):
            # seed 000's notification example has no INTO: AS directly after the options
            if as_at is not None and lexer.is_word(as_at):
                raise self.error(
                    f"unexpected '{self.text_of(as_at)}': expected a stream option or INTO", as_at
                )
            raise self.error("syntax error: expected INTO after the stream options")
        self.expect("AS", message="syntax error: expected AS subquery")
        q_lo = self.i
        implicit = self.implicit_select(q_lo)
        q_hi = self.scan(q_lo, lambda j: self.at_index(j, "NOTIFY"))
        stray = self.seed_stray_paren(q_hi)
        if q_hi < self.end and self.toks[q_hi].token_type == R_PAREN and not stray:
            raise self.err_at("syntax error: unmatched ')'", q_hi)
        query = self.query(q_lo, q_hi)
        if implicit:
            query.implicit_select = True
        self.i = q_hi + 1 if stray else q_hi
        notify = self.legacy_notify() if self.at("NOTIFY") else None
        if into is None and notify is None:
            assert as_at is not None
            raise self.error(
                "syntax error: expected INTO stb_name before AS (a stream without INTO only notifies: "
                "it needs NOTIFY)",
                as_at,
            )
        return ast.CreateStreamLegacy(
            name=s.name,
            db=s.db,
            if_not_exists=ine,
            options=opts,
            into=into,
            columns=columns,
            tags=tags,
            subtable=subtable,
            query=query,
            notify=notify,
            text=self.sql,
            span=Span(0, len(self.sql)),
        )

    def seed_stray_paren(self, j: int) -> bool:
        """Whether token ``j``, where the scan of a legacy stream's AS query stopped, is the one
        unmatched ``)`` seeds 000 and 001 print at the end of their custom-tag examples: seed 000
        "streams2" and seed 001 "output_tag" ("Custom tag" sections) end with ``... interval(10s));``.

        Tolerated only as the statement's very last token (the optional ``;`` is split off
        before), so a statement printed so runs as written and means the same as without the
        ``)``; the ``)`` is not part of the query (its span and text end before it, and a
        rendered statement has no ``)``). An unmatched ``)`` anywhere else, or two of them,
        stays a syntax error."""
        return j == self.end - 1 and self.toks[j].token_type == R_PAREN

    def implicit_select(self, j: int) -> bool:
        """Seed 004 prints its streams' queries without the SELECT keyword (``CREATE STREAM
        power_stream INTO power_stream_output_stb AS concat_ws(...) AS meter_location, ...
        FROM meters WHERE voltage > 100``): when the query at token ``j`` does not start with
        SELECT, WITH or ``(`` but has a FROM at depth 0, a SELECT token is put in front of it.
        Returns whether one was."""
        t = self.toks[j] if j < self.end else None
        if t is None or t.token_type == L_PAREN or lexer.words(t)[:1] in (("SELECT",), ("WITH",)):
            return False
        if self.scan(j, lambda k: self.at_index(k, "FROM")) >= self.end:
            return False
        select = Token(TokenType.SELECT, "SELECT", t.line, t.col, t.start, t.start - 1)
        self.toks.insert(j, select)
        self.end += 1
        self._index_of = {tok.start: k for k, tok in enumerate(self.toks) if tok is not select}
        return True

    def legacy_options(self) -> ast.LegacyStreamOptions:
        """Legacy ``stream_options`` (seed 000) up to the first other word, each at most once."""
        opts = ast.LegacyStreamOptions()
        while True:
            start = self.i
            t = self.tok()
            if t is None:
                break
            option = self.legacy_option_at(t)
            if option is None:
                break
            key, label = option
            if key in opts.spans:
                raise self.error(f"duplicate stream option {label}", t)
            self.i += len(label.split())
            self.legacy_option_value(opts, key)
            opts.spans[key] = self.span(start, self.i)
        return opts

    def legacy_option_at(self, t: Token) -> tuple[str, str] | None:
        """``(attribute, label)`` of the legacy stream option starting at token ``t`` (the cursor),
        or None when ``t`` starts none."""
        w = lexer.words(t)
        if w == ("IGNORE",):
            nxt = self.word(1)
            if nxt == ("EXPIRED",):
                return "ignore_expired", "IGNORE EXPIRED"
            if nxt == ("UPDATE",):
                return "ignore_update", "IGNORE UPDATE"
            raise self.error("syntax error: expected EXPIRED or UPDATE after IGNORE", self.tok(1) or None)
        if len(w) == 1 and w[0] in _LEGACY_OPTIONS:
            return _LEGACY_OPTIONS[w[0]], w[0]
        return None

    def legacy_option_value(self, opts: ast.LegacyStreamOptions, key: str) -> None:
        """The value of legacy stream option ``key`` at the cursor, set on ``opts``."""
        if key == "trigger":
            self.legacy_trigger(opts)
        elif key == "watermark":
            opts.watermark = self.duration("a WATERMARK time")
        elif key == "delete_mark":
            opts.delete_mark = self.duration("a DELETE_MARK time")
        elif key == "fill_history":
            opts.fill_history = self.flag01("FILL_HISTORY")
            opts.fill_history_async = bool(self.accept("ASYNC"))
        elif key == "event_time":
            opts.event_time = self.flag01("EVENT_TIME")
        elif key == "ignore_expired":
            opts.ignore_expired = self.flag01("IGNORE EXPIRED")
        else:
            opts.ignore_update = self.flag01("IGNORE UPDATE")

    def legacy_trigger(self, opts: ast.LegacyStreamOptions) -> None:
        """``AT_ONCE | WINDOW_CLOSE | MAX_DELAY time | FORCE_WINDOW_CLOSE | CONTINUOUS_WINDOW_CLOSE
        [RECALCULATE time]`` after TRIGGER, set on ``opts``."""
        mode_tok = self.tok()
        mode = lexer.words(mode_tok) if mode_tok is not None else ()
        if len(mode) != 1 or mode[0] not in _LEGACY_TRIGGERS:
            raise self.error(
                "syntax error: expected AT_ONCE, WINDOW_CLOSE, MAX_DELAY time, "
                "FORCE_WINDOW_CLOSE or CONTINUOUS_WINDOW_CLOSE after TRIGGER"
            )
        self.i += 1
        opts.trigger = mode[0]
        if mode[0] == "MAX_DELAY":
            d_start = self.i
            opts.max_delay = self.duration("a MAX_DELAY time")
            opts.spans["max_delay"] = self.span(d_start, self.i)
        elif mode[0] == "CONTINUOUS_WINDOW_CLOSE" and self.at("RECALCULATE"):
            r_start = self.i
            self.i += 1
            opts.recalculate = self.duration("a RECALCULATE time")
            opts.spans["recalculate"] = self.span(r_start, self.i)

    def paren_expression(self, clause: str) -> exp.Expr:
        items, _, close = self.paren_items(f"after {clause} expression")
        if len(items) != 1:
            raise self.err_at(f"syntax error: {clause} takes one expression", items[1][0] if items else close)
        lo, hi = items[0]
        return self.sg(lo, hi, exp.Condition, f"a {clause} expression")

    def output_columns(self) -> list[ast.OutputColumn]:
        items, _, close = self.paren_items("after output column names")
        if not items:
            raise self.err_at("syntax error: expected an output column name", close)
        out = []
        for lo, hi in items:
            with self.bounded(hi):
                self.i = lo
                name = self.name("an output column name")[0]
                composite = bool(self.accept("COMPOSITE", "KEY") or self.accept("PRIMARY", "KEY"))
                if not self.done():
                    raise self.error("syntax error: expected ',' or ')' after output column name")
            out.append(
                ast.OutputColumn(
                    name=name, composite_key=composite, span=self.span(lo, hi) if lo < hi else None
                )
            )
        self.i = close + 1
        return out

    def tag_defs(self, with_expr: bool) -> list[ast.OutputTagDef]:
        """Legacy ``TAGS (name [type [COMMENT 's']])`` or 3.3.7 ``TAGS (name type [COMMENT 's'] AS expr)``."""
        items, _, close = self.paren_items("after tag definitions")
        if not items:
            raise self.err_at("syntax error: expected a tag definition", close)
        out = []
        for lo, hi in items:
            with self.bounded(hi):
                self.i = lo
                name = self.name("a tag name")[0]
                # legacy TAGS (name, ...): tags named, their types those of the existing supertable
                tdtype = None if not with_expr and self.done() else self.data_type()
                comment = self.string("a tag comment") if self.accept("COMMENT") else None
                expr = None
                if with_expr:
                    self.expect("AS", message="syntax error: expected AS expr in the tag definition")
                    expr = self.sg(self.i, hi, exp.Condition, "a tag value expression")
                    self.i = hi
                if not self.done():
                    raise self.error("syntax error: expected ',' or ')' after tag definition")
            out.append(
                ast.OutputTagDef(name=name, type=tdtype, expr=expr, comment=comment, span=self.span(lo, hi))
            )
        self.i = close + 1
        return out

    def url_list(self, spans: list[Span] | None = None) -> list[str]:
        """``('url', ...)``: quoted URLs (single or double quotes); their spans go to ``spans``."""
        items, _, close = self.paren_items("after notification URLs")
        if not items:
            raise self.err_at("syntax error: expected a notification URL", close)
        urls = []
        for lo, hi in items:
            t = self.toks[lo] if lo < hi else None
            if t is None or hi != lo + 1 or t.token_type != TokenType.STRING:
                raise self.err_at("syntax error: expected a quoted notification URL", lo)
            urls.append(t.text)
            if spans is not None:
                spans.append(self.span(lo, hi))
        return urls

    def event_list(self, allowed: frozenset[str], what: str) -> list[str]:
        """``(ev | ev)`` or ``('EV', 'EV')``: quoted or bare names separated by ``|`` or ``,``."""
        items, _, close = self.paren_items(f"after {what}", seps=(COMMA, PIPE))
        if not items:
            raise self.err_at(f"syntax error: expected {what}", close)
        out: list[str] = []
        for lo, hi in items:
            t = self.toks[lo] if lo < hi else None
            ok = t is not None and hi == lo + 1 and (t.token_type == TokenType.STRING or lexer.is_word(t))
            name = t.text.upper() if ok and t is not None else ""
            if not ok or name not in allowed:
                text = self.sql[self.toks[lo].start : self.toks[hi - 1].end + 1] if lo < hi else ""
                raise self.err_at(
                    f"syntax error: unknown event type {text}, expected one of {', '.join(sorted(allowed))}",
                    lo,
                )
            if name in out:
                raise self.err_at(f"duplicate event type {name}", lo)
            out.append(name)
        return out

    def legacy_notify(self) -> ast.NotifyDef:
        """``NOTIFY (url, ...) ON (event, ...) [NOTIFY_HISTORY 0|1] [ON_FAILURE DROP|PAUSE]`` (seed 000)."""
        start = self.i
        self.expect("NOTIFY")
        urls = self.url_list()
        self.expect("ON", message="syntax error: expected ON (event_type, ...) after the notification URLs")
        events = self.event_list(_LEGACY_EVENTS, "event types")
        notify = ast.NotifyDef(urls=urls, events=events)
        seen: set[str] = set()
        while not self.done():
            t = self.tok()
            assert t is not None
            w = lexer.words(t)
            if w == ("NOTIFY_HISTORY",):
                if "history" in seen:
                    raise self.error("duplicate notification option NOTIFY_HISTORY", t)
                seen.add("history")
                self.i += 1
                notify.history = bool(self.flag01("NOTIFY_HISTORY"))
            elif w == ("ON_FAILURE",):
                if "failure" in seen:
                    raise self.error("duplicate notification option ON_FAILURE", t)
                seen.add("failure")
                self.i += 1
                mode = self.word()
                if mode not in (("DROP",), ("PAUSE",)):
                    raise self.error("syntax error: expected DROP or PAUSE after ON_FAILURE")
                self.i += 1
                notify.on_failure = mode[0]
            else:
                raise self.unexpected()
        notify.span = self.span(start, self.i)
        return notify

    def stream_337(self, s: TableName, ine: bool) -> ast.CreateStream337:
        """TDengine 3.3.7 CREATE STREAM (seed 002, "Create a Stream")."""
        trigger = self.trigger_337()
        from_table = self.table_name("a trigger table name") if self.accept("FROM") else None
        partition_by: list[ast.PartitionItem] = []
        if self.accept("PARTITION", "BY"):
            partition_by = self.partition_items(self.stop_words(_STREAM_CLAUSES))
        options = self.stream_options() if self.at("STREAM_OPTIONS") else ast.StreamOptions337()
        notify = self.notify_337() if self.at("NOTIFY") else None
        into = self.table_name("an output table name") if self.accept("INTO") else None
        output_subtable = None
        if self.accept("OUTPUT_SUBTABLE"):
            output_subtable = self.paren_expression("OUTPUT_SUBTABLE")
        columns = self.output_columns() if self.is_type(L_PAREN) else None
        tags = self.tag_defs(with_expr=True) if self.accept("TAGS") else None
        query = None
        if self.accept("AS"):
            query = self.query(self.i, self.end)
            self.i = self.end
        if not self.done():
            raise self.unexpected()
        return ast.CreateStream337(
            name=s.name,
            db=s.db,
            if_not_exists=ine,
            trigger=trigger,
            from_table=from_table,
            partition_by=partition_by,
            options=options,
            notify=notify,
            into=into,
            output_subtable=output_subtable,
            columns=columns,
            tags=tags,
            query=query,
            text=self.sql,
            span=Span(0, len(self.sql)),
        )

    def trigger_337(self) -> ast.Trigger337:
        start = self.i
        if self.accept("PERIOD"):
            items, _, _ = self.paren_items("after PERIOD arguments")
            if len(items) not in (1, 2):
                raise self.err_at("syntax error: PERIOD expects (period_time[, offset_time])", start)
            period = self.duration_range(*items[0], "a period")
            offset = self.duration_range(*items[1], "an offset") if len(items) == 2 else None
            return ast.PeriodTrigger(period=period, offset=offset)
        if self.at("INTERVAL") or self.at("SLIDING"):
            interval = interval_offset = None
            if self.accept("INTERVAL"):
                interval, interval_offset = self.interval_args()
                if not self.at("SLIDING"):
                    raise self.error(
                        "syntax error: expected SLIDING(...) after INTERVAL(...) in a stream trigger"
                    )
            s_start = self.i
            self.expect("SLIDING")
            items, _, _ = self.paren_items("after SLIDING arguments")
            if len(items) not in (1, 2):
                raise self.err_at("syntax error: SLIDING expects (sliding_val[, offset_time])", s_start)
            sliding = self.duration_range(*items[0], "a sliding time")
            sliding_offset = self.duration_range(*items[1], "an offset") if len(items) == 2 else None
            return ast.SlidingTrigger(
                sliding=sliding,
                interval=interval,
                interval_offset=interval_offset,
                sliding_offset=sliding_offset,
            )
        window = self.window_clause(stream_trigger=True)
        assert not isinstance(window, ast.IntervalWindow | ast.EkuiperWindow)
        return window

    def stream_options(self) -> ast.StreamOptions337:
        """``STREAM_OPTIONS(opt | opt ...)`` (seed 002, "Stream Processing Control Options")."""
        self.expect("STREAM_OPTIONS")
        items, _, close = self.paren_items("after stream options", seps=(PIPE,))
        if not items:
            raise self.err_at("syntax error: expected a stream option", close)
        opts = ast.StreamOptions337()
        for lo, hi in items:
            if lo >= hi:
                raise self.err_at("syntax error: expected a stream option", lo)
            t = self.toks[lo]
            w = lexer.words(t)
            key = w[0] if len(w) == 1 else self.text_of(t)
            attr = _STREAM_FLAGS.get(key, key.lower())
            if (
                key not in _STREAM_FLAGS
                and key not in _STREAM_DURATIONS
                and key not in ("FILL_HISTORY", "FILL_HISTORY_FIRST", "PRE_FILTER", "EVENT_TYPE")
            ):
                raise self.err_at(f"unknown stream option {key}", lo)
            if attr in opts.spans:
                raise self.err_at(f"duplicate stream option {key}", lo)
            with self.bounded(hi):
                self.i = lo + 1
                if key in _STREAM_FLAGS:
                    setattr(opts, _STREAM_FLAGS[key], True)
                elif key in _STREAM_DURATIONS:
                    args, _, _ = self.paren_items(f"after {key} argument")
                    if len(args) != 1:
                        raise self.err_at(f"syntax error: {key} expects one duration", lo)
                    setattr(opts, _STREAM_DURATIONS[key], self.duration_range(*args[0], "a duration"))
                elif key in ("FILL_HISTORY", "FILL_HISTORY_FIRST"):
                    setattr(opts, attr, True)
                    if self.is_type(L_PAREN):
                        args, _, _ = self.paren_items(f"after {key} start time")
                        if len(args) != 1:
                            raise self.err_at(f"syntax error: {key} expects one start time", lo)
                        opts.fill_history_start = self.constant(*args[0], "a start time", after="start time")
                elif key == "PRE_FILTER":
                    args, _, _ = self.paren_items("after PRE_FILTER condition")
                    if len(args) != 1:
                        raise self.err_at("syntax error: PRE_FILTER expects one condition", lo)
                    opts.pre_filter = self.sg(*args[0], exp.Condition, "a PRE_FILTER condition")
                else:
                    opts.event_type = self.event_list(_LEGACY_EVENTS, "EVENT_TYPE event types")
                if not self.done():
                    raise self.error(f"syntax error: expected '|' or ')' after stream option {key}")
            opts.spans[attr] = self.span(lo, hi)
        self.i = close + 1
        return opts

    def notify_337(self) -> ast.NotifyDef:
        """``NOTIFY(url, ...) [ON (ev|ev)] [WHERE cond] [NOTIFY_OPTIONS(opt|opt)]`` (seed 002)."""
        start = self.i
        self.expect("NOTIFY")
        spans: list[Span] = []
        notify = ast.NotifyDef(urls=self.url_list(spans), url_spans=spans)
        if self.accept("ON"):
            notify.events = self.event_list(_NOTIFY_EVENTS, "event types")
        if self.accept("WHERE"):
            lo = self.i
            hi = self.scan(lo, self.stop_words(_STREAM_CLAUSES))
            notify.where = self.sg(lo, hi, exp.Condition, "a notification condition")
            self.i = hi
        if self.accept("NOTIFY_OPTIONS"):
            items, _, close = self.paren_items("after notification options", seps=(PIPE,))
            if not items:
                raise self.err_at("syntax error: expected NOTIFY_HISTORY or ON_FAILURE_PAUSE", close)
            seen: set[str] = set()
            for lo, hi in items:
                w = lexer.words(self.toks[lo]) if lo < hi else ()
                if hi != lo + 1 or w not in (("NOTIFY_HISTORY",), ("ON_FAILURE_PAUSE",)):
                    raise self.err_at("syntax error: expected NOTIFY_HISTORY or ON_FAILURE_PAUSE", lo)
                if w[0] in seen:
                    raise self.err_at(f"duplicate notification option {w[0]}", lo)
                seen.add(w[0])
                if w[0] == "NOTIFY_HISTORY":
                    notify.history = True
                else:
                    notify.on_failure = "PAUSE"
        notify.span = self.span(start, self.i)
        return notify
