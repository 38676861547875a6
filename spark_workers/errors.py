"""Typed errors shared by the SQL layer, the lake and the engine.

Every error carries a TDengine-style numeric ``code`` (the values follow TDengine's
``taoserror.h`` where an equivalent exists) and a human message. SQL errors also carry the
character offset in the statement where the problem is, so the REST endpoint, the shell and the
designer can point at it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class Code:
    """TDengine error codes used by tdweb: every value is the one TDengine 3.x defines in
    ``include/util/taoserror.h`` for the same condition (hex values as TDengine prints them);
    ``tests/test_error_codes.py`` checks each against that table."""

    INVALID_OPERATION = 0x0200
    SYNTAX_ERROR = 0x2600
    INCOMPLETE_SQL = 0x2601
    INVALID_COLUMN = 0x2602
    TABLE_NOT_EXIST = 0x2603
    AMBIGUOUS_COLUMN = 0x2604
    WRONG_VALUE_TYPE = 0x2605
    INVALID_FUNCTION = 0x2800  # TSDB_CODE_FUNC_FUNTION_ERROR "Function error"
    NOT_SUPPORTED = 0x0100  # TSDB_CODE_OPS_NOT_SUPPORT "Operation not supported"
    DB_NOT_SPECIFIED = 0x2616
    INVALID_WINDOW = 0x2650  # TSDB_CODE_PAR_NOT_ALLOWED_WIN_QUERY "Window query not supported"
    INVALID_STREAM_QUERY = 0x2645  # TSDB_CODE_PAR_INVALID_STREAM_QUERY "Invalid stream query"
    PRIMARY_KEY_IS_NULL = 0x267B  # TSDB_CODE_PAR_PRIMARY_KEY_IS_NULL "Primary key column should not be null"
    # TSDB_CODE_PAR_INVALID_FILL_TIME_RANGE "Start(end) time of query range required or time range too large"
    INVALID_FILL_TIME_RANGE = 0x263B
    # SQL sandbox and limits (spark_workers/sql/sandbox.py, limits.py)
    INVALID_FUNCTION_NAME = 0x264D  # TSDB_CODE_PAR_INVALID_FUNCTION_NAME "Invalid function name"
    TIMEOUT = 0x012C  # TSDB_CODE_TIMEOUT_ERROR "Operation timeout"
    QUERY_MEM_EXHAUSTED = 0x073A  # TSDB_CODE_QRY_QUERY_MEM_EXHAUSTED "Query memory exhausted"
    RESULT_TOO_LARGE = 0x0711  # TSDB_CODE_QRY_RESULT_TOO_LARGE (2.x) "Result set too large"
    TOO_MANY_TIMEWINDOW = 0x070A  # TSDB_CODE_QRY_TOO_MANY_TIMEWINDOW "Too many time window in query"
    EXCEED_SQL_LIMIT = 0x0219  # TSDB_CODE_TSC_EXCEED_SQL_LIMIT "SQL statement too long"
    # users, privileges and names
    INVALID_IDENTIFIER_NAME = 0x2617  # TSDB_CODE_PAR_INVALID_IDENTIFIER_NAME
    NAME_OR_PASSWD_TOO_LONG = 0x2610  # TSDB_CODE_PAR_NAME_OR_PASSWD_TOO_LONG
    INVALID_PASSWD = 0x2648  # TSDB_CODE_PAR_INVALID_PASSWD
    PERMISSION_DENIED = 0x2644  # TSDB_CODE_PAR_PERMISSION_DENIED
    NO_RIGHTS = 0x0303  # TSDB_CODE_MND_NO_RIGHTS
    USER_ALREADY_EXIST = 0x0350  # TSDB_CODE_MND_USER_ALREADY_EXIST
    USER_NOT_EXIST = 0x0351  # TSDB_CODE_MND_USER_NOT_EXIST
    INVALID_USER_FORMAT = 0x0352  # TSDB_CODE_MND_INVALID_USER_FORMAT
    INVALID_PASS_FORMAT = 0x0353  # TSDB_CODE_MND_INVALID_PASS_FORMAT
    INVALID_ALTER_OPER = 0x0356  # TSDB_CODE_MND_INVALID_ALTER_OPER
    DB_NOT_EXIST = 0x0388
    DB_ALREADY_EXIST = 0x0381  # TSDB_CODE_MND_DB_ALREADY_EXIST "Database already exists"
    STB_ALREADY_EXIST = 0x0360
    STB_NOT_EXIST = 0x0362
    TABLE_ALREADY_EXIST = 0x0613
    INVALID_TAG_VALUE = 0x2605  # TSDB_CODE_PAR_WRONG_VALUE_TYPE (a tag value)
    INVALID_COLUMNS_NUM = 0x263F  # TSDB_CODE_PAR_INVALID_COLUMNS_NUM "Illegal number of columns"
    INVALID_DELETE_WHERE = 0x2655  # "The DELETE statement must have a definite time window range"
    COLUMN_COUNT_MISMATCH = 0x263F  # TSDB_CODE_PAR_INVALID_COLUMNS_NUM "Illegal number of columns"
    VALUE_OUT_OF_RANGE = 0x0224  # TSDB_CODE_TSC_VALUE_OUT_OF_RANGE "Value out of range"
    STREAM_ALREADY_EXIST = 0x03F0
    STREAM_NOT_EXIST = 0x03F1
    STREAM_OUTPUT_CONFLICT = 0x03F2
    AUTH_FAILURE = 0x0357
    # virtual tables (TDengine SQL manual "Virtual Tables"; error codes "parser", "virtual table")
    INVALID_REF_COLUMN = 0x268D  # TSDB_CODE_PAR_INVALID_REF_COLUMN "Invalid virtual table's ref column"
    INVALID_TABLE_TYPE = 0x268E  # TSDB_CODE_PAR_INVALID_TABLE_TYPE "Invalid table type"
    INVALID_REF_COLUMN_TYPE = 0x268F  # TSDB_CODE_PAR_INVALID_REF_COLUMN_TYPE "Invalid ref column type"
    CHILD_OF_VIRTUAL_STABLE = 0x2690  # "Create child table using virtual super table"
    VTABLE_PRIMTS_HAS_REF = 0x6202  # "Virtual table prim timestamp column should not has ref"
    VTABLE_NOT_VIRTUAL_STABLE = 0x6203  # "Create virtual child table must use virtual super table"
    VTABLE_NO_DECIMAL = 0x6204  # "Virtual table not support decimal type"
    VTABLE_NOT_SUPPORT_STMT = 0x6205  # "Virtual table not support in STMT query and STMT insert"
    # parser and function errors of TDengine's error table (taoserror.h, terror.c; the parser's
    # function messages are "Invalid parameter data type : <function>" and "Invalid number of
    # parameters : <function>", builtins.c)
    WRONG_NUMBER_OF_SELECT = 0x2609  # TSDB_CODE_PAR_WRONG_NUMBER_OF_SELECT (an ORDER BY position)
    INCORRECT_NUM_OF_COL = 0x2634  # TSDB_CODE_PAR_INCORRECT_NUM_OF_COL (UNION operands)
    ILLEGAL_USE_AGG_FUNCTION = 0x2608  # TSDB_CODE_PAR_ILLEGAL_USE_AGG_FUNCTION "There mustn't be aggregation"
    AGG_FUNC_NESTING = 0x2627  # TSDB_CODE_PAR_AGG_FUNC_NESTING "Aggregate functions do not support nesting"
    FUNC_PARA_NUM = 0x2801  # TSDB_CODE_FUNC_FUNTION_PARA_NUM "Invalid function para number"
    FUNC_PARA_TYPE = 0x2802  # TSDB_CODE_FUNC_FUNTION_PARA_TYPE "Invalid function para type"
    FUNC_PARA_VALUE = 0x2803  # TSDB_CODE_FUNC_FUNTION_PARA_VALUE "Invalid function para value"
    # "Function(s) only allowed in SELECT list, cannot mixed with non scalar functions or columns"
    NOT_ALLOWED_FUNC = 0x264F  # TSDB_CODE_PAR_NOT_ALLOWED_FUNC
    INTERNAL = 0x0138  # TSDB_CODE_INTERNAL_ERROR "Internal error"
    # JSON, VARBINARY, GEOMETRY and DECIMAL (TDengine SQL manual "Data Types", "JSON Type")
    INVALID_JSON = 0x0221  # TSDB_CODE_TSC_INVALID_JSON "Invalid JSON format"
    INVALID_JSON_TYPE = 0x0222  # TSDB_CODE_TSC_INVALID_JSON_TYPE "Invalid JSON data type"
    ONLY_ONE_JSON_TAG = 0x2633  # TSDB_CODE_PAR_ONLY_ONE_JSON_TAG "Only one tag if there is a json tag"
    INVALID_COL_JSON = 0x2652  # TSDB_CODE_PAR_INVALID_COL_JSON "Only tag can be json type"
    INVALID_VARBINARY = 0x266A  # TSDB_CODE_PAR_INVALID_VARBINARY "Invalidate varbinary value"
    DECIMAL_OVERFLOW = 0x013D  # TSDB_CODE_DECIMAL_OVERFLOW "Decimal value overflow"
    # query clauses (TDengine SQL manual, "Data Querying": INTERP, SLIMIT, MATCH/NMATCH)
    INVALID_INTERP_CLAUSE = 0x265D  # TSDB_CODE_PAR_INVALID_INTERP_CLAUSE "Invalid interp clause"
    # TSDB_CODE_PAR_SLIMIT_LEAK_PARTITION_GROUP_BY "slimit/soffset only available for PARTITION/GROUP BY
    # query"
    SLIMIT_LEAK_PARTITION_GROUP_BY = 0x2638
    REGULAR_EXPRESSION_ERROR = (
        0x2681  # TSDB_CODE_PAR_REGULAR_EXPRESSION_ERROR "Syntax error in regular expression"
    )
    # joins (TDengine SQL manual "Join Queries"; parTranslater.c, planner's join checks)
    NOT_UNIQUE_TABLE_ALIAS = 0x2663  # TSDB_CODE_PAR_NOT_UNIQUE_TABLE_ALIAS "Not unique table/alias"
    NOT_SUPPORT_JOIN = 0x2664  # TSDB_CODE_PAR_NOT_SUPPORT_JOIN "Not supported join since '%s'"
    INVALID_WJOIN_HAVING_EXPR = 0x2672  # TSDB_CODE_PAR_INVALID_WJOIN_HAVING_EXPR
    INVALID_WIN_OFFSET_UNIT = 0x2673  # TSDB_CODE_PAR_INVALID_WIN_OFFSET_UNIT
    EXPECTED_TS_EQUAL = 0x2701  # TSDB_CODE_PLAN_EXPECTED_TS_EQUAL "Expect ts equal"
    NOT_SUPPORT_CROSS_JOIN = 0x2702  # TSDB_CODE_PLAN_NOT_SUPPORT_CROSS_JOIN "Cross join not support"
    NOT_SUPPORT_JOIN_COND = 0x2703  # TSDB_CODE_PLAN_NOT_SUPPORT_JOIN_COND "Not supported join conditions"
    # ALTER DATABASE / STABLE / TABLE (TDengine SQL manual "Manage Databases", "Manage Supertables",
    # "Manage Tables"; statements/alter.py)
    INVALID_ALTER_TABLE = 0x2649  # TSDB_CODE_PAR_INVALID_ALTER_TABLE "Invalid alter table statement"
    CANNOT_DROP_PRIMARY_KEY = 0x264A  # TSDB_CODE_PAR_CANNOT_DROP_PRIMARY_KEY
    INVALID_MODIFY_COL = 0x264B  # TSDB_CODE_PAR_INVALID_MODIFY_COL "Only ... length could be modified"
    INVALID_DROP_COL = 0x2651  # TSDB_CODE_PAR_INVALID_DROP_COL "No columns can be dropped"
    COMMENT_TOO_LONG = 0x264E  # TSDB_CODE_PAR_COMMENT_TOO_LONG "Comment too long"
    TAG_ALREADY_EXIST = 0x0369  # TSDB_CODE_MND_TAG_ALREADY_EXIST "Tag already exists"
    TAG_NOT_EXIST = 0x036A  # TSDB_CODE_MND_TAG_NOT_EXIST "Tag does not exist"
    COLUMN_ALREADY_EXIST = 0x036B  # TSDB_CODE_MND_COLUMN_ALREADY_EXIST "Column already exists"
    COLUMN_NOT_EXIST = 0x036C  # TSDB_CODE_MND_COLUMN_NOT_EXIST "Column does not exist"
    TOO_MANY_TAGS = 0x0364  # TSDB_CODE_MND_TOO_MANY_TAGS "Too many tags"
    TOO_MANY_COLUMNS = 0x0365  # TSDB_CODE_MND_TOO_MANY_COLUMNS "Too many columns"
    DB_OPTION_UNCHANGED = 0x038A  # TSDB_CODE_MND_DB_OPTION_UNCHANGED "Database options not changed"
    INVALID_DB_OPTION = 0x2619  # TSDB_CODE_PAR_INVALID_DB_OPTION "Invalid database option"
    INVALID_TABLE_OPTION = 0x261A  # TSDB_CODE_PAR_INVALID_TABLE_OPTION "Invalid table option"
    TIMESTAMP_OUT_OF_RANGE = 0x060B  # TSDB_CODE_TDB_TIMESTAMP_OUT_OF_RANGE "Timestamp data out of range"
    # schemaless writing (spark_workers/statements/schemaless.py)
    SML_INVALID_PRECISION_TYPE = 0x3001  # TSDB_CODE_SML_INVALID_PRECISION_TYPE "Invalid timestamp precision"
    SML_INVALID_DATA = 0x3002  # TSDB_CODE_SML_INVALID_DATA "Invalid data format"
    SML_NOT_SAME_TYPE = 0x3004  # TSDB_CODE_SML_NOT_SAME_TYPE "Not the same type as before"
    TSC_INVALID_VALUE = 0x0203  # TSDB_CODE_TSC_INVALID_VALUE "Invalid value in client"


class TdError(Exception):
    """Base class: an error with a TDengine code and a message a user can act on."""

    code: int = Code.INTERNAL

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    @property
    def desc(self) -> str:
        """The ``desc`` string of TDengine's REST error answer."""
        return self.message


@dataclass(frozen=True)
class SqlPosition:
    """A place in a SQL text: 0-based character ``offset`` plus 1-based ``line`` and ``column``."""

    offset: int
    line: int
    column: int

    @classmethod
    def of(cls, sql: str, offset: int) -> SqlPosition:
        """Build the position of ``offset`` (clamped into ``sql``)."""
        offset = max(0, min(offset, len(sql)))
        before = sql[:offset]
        line = before.count("\n") + 1
        column = offset - (before.rfind("\n") + 1) + 1
        return cls(offset=offset, line=line, column=column)


class SqlError(TdError):
    """A statement that cannot be executed because of what it says (syntax, names, types).

    Args:
        message: what is wrong, in the user's terms.
        sql: the statement text, when known.
        offset: 0-based character offset of the offending token in ``sql``.
        code: TDengine error code; defaults to ``Code.SYNTAX_ERROR``.
    """

    code = Code.SYNTAX_ERROR

    def __init__(
        self, message: str, *, sql: str | None = None, offset: int | None = None, code: int | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.sql = sql
        self.offset = offset
        self.position = SqlPosition.of(sql, offset) if sql is not None and offset is not None else None

    def shifted(self, sql: str, delta: int) -> SqlError:
        """This error re-anchored in a larger text ``sql`` where its own text starts at ``delta``."""
        if self.offset is None:
            return SqlError(self.message, sql=sql, offset=delta if self.sql is None else None, code=self.code)
        return SqlError(self.message, sql=sql, offset=self.offset + delta, code=self.code)

    def at(self, sql: str, offset: int | None) -> SqlError:
        """Return this error anchored in ``sql`` (used when a sub-parser did not know the text)."""
        if self.position is not None or offset is None:
            return self
        return SqlError(self.message, sql=sql, offset=offset, code=self.code)

    @property
    def desc(self) -> str:
        if self.position is None or self.sql is None:
            return self.message
        near = self.sql[self.position.offset : self.position.offset + 24].split("\n")[0]
        return f'{self.message} (line {self.position.line}, column {self.position.column}, near "{near}")'


class CatalogError(TdError):
    """A database, table or stream is missing, already exists, or does not fit."""


class ValidationError(SqlError):
    """A statement that parses but breaks a rule of the seeds (window bounds, option limits...)."""

    code = Code.INVALID_OPERATION


class LakeError(TdError):
    """The lake could not complete a read or write; nothing was changed."""


def para_type_error(function: str, *, sql: str | None = None, offset: int | None = None) -> SqlError:
    """TDengine's answer to a function given an argument of a type it does not take:
    ``0x2802`` (TSDB_CODE_FUNC_FUNTION_PARA_TYPE) with the parser's words "Invalid parameter data
    type : <function>" (TDengine ``builtins.c``, ``invaildFuncParaTypeErrMsg``), positioned at the
    call when ``sql`` and ``offset`` are given."""
    return SqlError(
        f"Invalid parameter data type : {function}", sql=sql, offset=offset, code=Code.FUNC_PARA_TYPE
    )


def function_offset(sql: str, function: str) -> int | None:
    """0-based offset of the first call ``function(`` in ``sql`` (case-insensitive), or None: the
    position of an error found after planning, when only the function's name is known."""
    m = re.search(rf"(?<![\w.]){re.escape(function)}\s*\(", sql, re.IGNORECASE)
    return m.start() if m else None
