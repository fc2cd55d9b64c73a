"""A small MySQL tokenizer and column-definition reader.

TiCDC's Debezium DDL encoder re-parses the DDL text (`helper.go:parseColumns`) and lets the
column definitions it finds there override parts of the table metadata (ticdc-reference.md §5.3).
Only the statement shapes that carry column definitions are understood: ``CREATE TABLE (...)`` and
``ALTER TABLE ... ADD/MODIFY/CHANGE [COLUMN]``. ``INSERT ... VALUES`` is read as well, for tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "ColumnDef",
    "CreateTable",
    "Insert",
    "Literal",
    "Token",
    "parse_create_table",
    "parse_insert",
    "statement_column_defs",
    "tokenize",
    "top_level_split",
]


@dataclass(frozen=True)
class Token:
    """One lexical token: ``kind`` is ident, qident (backticked), str, num, op or word."""

    kind: str
    text: str

    @property
    def upper(self) -> str:
        """The token text upper-cased (keywords compare this)."""
        return self.text.upper()

    def is_word(self, *words: str) -> bool:
        """Whether this is an unquoted word equal (case-insensitively) to one of ``words``."""
        return self.kind == "ident" and self.upper in words


_TOKEN: Final = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>--[^\n]*|\#[^\n]*|/\*.*?\*/)
  | (?P<qident>`(?:[^`]|``)*`)
  | (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<hexlit>[xX]'[0-9a-fA-F]*'|0x[0-9a-fA-F]+)
  | (?P<bitlit>[bB]'[01]*'|0b[01]+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_$\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*)
  | (?P<op>[(),;.=+\-*/<>!@:])
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES: Final = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "\\": "\\", "'": "'",
                   '"': '"'}


def _unquote(text: str) -> str:
    quote = text[0]
    body = text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt if nxt in "%_" else nxt))
            i += 2
        elif c == quote and i + 1 < len(body) and body[i + 1] == quote:
            out.append(quote)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokenize(sql: str) -> list[Token] | None:
    """The tokens of ``sql`` (strings unquoted, backticks removed); None if something is not lexable."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(sql):
        m = _TOKEN.match(sql, pos)
        if m is None:
            return None
        pos = m.end()
        kind = m.lastgroup or ""
        text = m.group()
        if kind in ("space", "comment"):
            continue
        if kind == "qident":
            tokens.append(Token("qident", text[1:-1].replace("``", "`")))
        elif kind == "str":
            tokens.append(Token("str", _unquote(text)))
        else:
            tokens.append(Token(kind, text))
    return tokens


def top_level_split(tokens: list[Token], separator: str = ",") -> list[list[Token]]:
    """Split tokens on ``separator`` outside parentheses."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in tokens:
        if tok.kind == "op" and tok.text == "(":
            depth += 1
        elif tok.kind == "op" and tok.text == ")":
            depth -= 1
        if depth == 0 and tok.kind == "op" and tok.text == separator:
            parts.append([])
            continue
        parts[-1].append(tok)
    return parts


def _paren_group(tokens: list[Token], start: int) -> tuple[list[Token], int] | None:
    """The tokens inside the parenthesis opening at ``start`` and the index after its close."""
    if start >= len(tokens) or tokens[start].text != "(" or tokens[start].kind != "op":
        return None
    depth = 0
    for i in range(start, len(tokens)):
        tok = tokens[i]
        if tok.kind == "op" and tok.text == "(":
            depth += 1
        elif tok.kind == "op" and tok.text == ")":
            depth -= 1
            if depth == 0:
                return tokens[start + 1:i], i + 1
    return None


@dataclass(frozen=True)
class Literal:
    """A literal value: kind is str, int, dec, float, null, bool, bits (b'..'), hex (x'..') or func."""

    kind: str
    text: str


@dataclass
class ColumnDef:
    """A column definition as written in DDL text."""

    name: str
    type_name: str
    args: list[str] = field(default_factory=list)
    unsigned: bool = False
    zerofill: bool = False
    binary_attr: bool = False
    charset: str | None = None
    collate: str | None = None
    not_null: bool = False
    default: Literal | None = None
    has_default: bool = False
    primary: bool = False
    unique: bool = False
    auto_increment: bool = False
    comment: str | None = None
    generated: bool = False
    stored: bool = False


_CONSTRAINT_WORDS: Final = frozenset(
    {"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK"}
)
_NOW_FUNCS: Final = frozenset({"CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"})


def _literal(tokens: list[Token], i: int) -> tuple[Literal | None, int]:
    """The literal expression starting at ``i`` (a sign, a function call, …) and the index after it."""
    if i >= len(tokens):
        return None, i
    tok = tokens[i]
    sign = ""
    if tok.kind == "op" and tok.text in "+-" and i + 1 < len(tokens) and tokens[i + 1].kind == "num":
        sign = "-" if tok.text == "-" else ""
        i += 1
        tok = tokens[i]
    if tok.kind == "str":
        return Literal("str", tok.text), i + 1
    if tok.kind == "num":
        text = sign + tok.text
        kind = "float" if "e" in tok.text.lower() else ("dec" if "." in tok.text else "int")
        return Literal(kind, text), i + 1
    if tok.kind == "hexlit":
        digits = tok.text[2:-1] if tok.text[1] == "'" else tok.text[2:]
        return Literal("hex", digits), i + 1
    if tok.kind == "bitlit":
        digits = tok.text[2:-1] if tok.text[1] == "'" else tok.text[2:]
        return Literal("bits", digits), i + 1
    if tok.kind == "ident":
        word = tok.upper
        if word == "NULL":
            return Literal("null", "NULL"), i + 1
        if word in ("TRUE", "FALSE"):
            return Literal("bool", word), i + 1
        group = _paren_group(tokens, i + 1)
        end = group[1] if group is not None else i + 1
        name = "CURRENT_TIMESTAMP" if word in _NOW_FUNCS else tok.text
        return Literal("func", name), end
    if tok.kind == "op" and tok.text == "(":
        group = _paren_group(tokens, i)
        if group is not None:
            inner, end = group
            lit, _ = _literal(inner, 0)
            return (Literal("expr", lit.text) if lit is not None else None), end
    return None, i + 1


def parse_column_def(tokens: list[Token]) -> ColumnDef | None:
    """A ColumnDef from the tokens of one ``name type [attributes] [options]`` element."""
    if len(tokens) < 2 or tokens[0].kind not in ("ident", "qident"):
        return None
    if tokens[0].kind == "ident" and tokens[0].upper in _CONSTRAINT_WORDS:
        return None
    if tokens[1].kind != "ident":
        return None
    col = ColumnDef(name=tokens[0].text, type_name=tokens[1].upper)
    i = 2
    if col.type_name == "DOUBLE" and i < len(tokens) and tokens[i].is_word("PRECISION"):
        i += 1
    if col.type_name in ("CHARACTER", "NATIONAL", "LONG") and i < len(tokens) and tokens[i].kind == "ident":
        # CHARACTER VARYING, NATIONAL CHAR, LONG VARCHAR: fold into the second word
        col.type_name = tokens[i].upper
        i += 1
    group = _paren_group(tokens, i)
    if group is not None:
        inner, i = group
        col.args = ["".join(t.text for t in part) for part in top_level_split(inner)]
    while i < len(tokens):
        tok = tokens[i]
        word = tok.upper if tok.kind == "ident" else ""
        if word == "UNSIGNED":
            col.unsigned = True
        elif word == "SIGNED":
            pass
        elif word == "ZEROFILL":
            col.zerofill = True
            col.unsigned = True
        elif word == "BINARY":
            col.binary_attr = True
        elif word in ("CHARSET", "CHARACTER"):
            if word == "CHARACTER" and i + 1 < len(tokens) and tokens[i + 1].is_word("SET"):
                i += 1
            if i + 1 < len(tokens):
                col.charset = tokens[i + 1].text.lower()
                i += 1
        elif word == "COLLATE":
            if i + 1 < len(tokens):
                col.collate = tokens[i + 1].text.lower()
                i += 1
        elif word == "NOT" and i + 1 < len(tokens) and tokens[i + 1].is_word("NULL"):
            col.not_null = True
            i += 1
        elif word == "NULL":
            col.not_null = False
        elif word == "DEFAULT":
            lit, nxt = _literal(tokens, i + 1)
            col.default = lit
            col.has_default = True
            i = nxt
            continue
        elif word == "PRIMARY":
            col.primary = True
            if i + 1 < len(tokens) and tokens[i + 1].is_word("KEY"):
                i += 1
        elif word == "KEY":
            col.primary = True
        elif word == "UNIQUE":
            col.unique = True
            if i + 1 < len(tokens) and tokens[i + 1].is_word("KEY"):
                i += 1
        elif word in ("AUTO_INCREMENT", "AUTO_RANDOM", "SERIAL"):
            col.auto_increment = True
        elif word == "COMMENT":
            if i + 1 < len(tokens) and tokens[i + 1].kind == "str":
                col.comment = tokens[i + 1].text
                i += 1
        elif word in ("GENERATED", "AS"):
            col.generated = True
            if word == "GENERATED":
                i += 1  # ALWAYS
            while i < len(tokens) and not (tokens[i].kind == "op" and tokens[i].text == "("):
                i += 1
            group = _paren_group(tokens, i)
            if group is not None:
                i = group[1]
                continue
        elif word == "STORED":
            col.stored = True
        elif word == "ON" and i + 2 < len(tokens) and tokens[i + 1].is_word("UPDATE"):
            _, i = _literal(tokens, i + 2)
            continue
        i += 1
    return col


@dataclass
class CreateTable:
    """What ``CREATE TABLE`` says: names, columns and key definitions."""

    schema: str | None
    table: str
    columns: list[ColumnDef]
    primary: list[str]
    uniques: list[list[str]]
    indexes: list[list[str]]
    charset: str | None = None
    collate: str | None = None


def _qualified_name(tokens: list[Token], i: int) -> tuple[str | None, str, int] | None:
    if i >= len(tokens) or tokens[i].kind not in ("ident", "qident"):
        return None
    first = tokens[i].text
    if i + 2 < len(tokens) and tokens[i + 1].kind == "op" and tokens[i + 1].text == "." \
            and tokens[i + 2].kind in ("ident", "qident"):
        return first, tokens[i + 2].text, i + 3
    return None, first, i + 1


def _key_columns(tokens: list[Token]) -> list[str]:
    for i, tok in enumerate(tokens):
        if tok.kind == "op" and tok.text == "(":
            group = _paren_group(tokens, i)
            if group is None:
                return []
            return [part[0].text for part in top_level_split(group[0]) if part]
    return []


def parse_create_table(sql: str) -> CreateTable | None:
    """The table a ``CREATE TABLE name (...)`` statement defines, or None."""
    tokens = tokenize(sql)
    if not tokens or not tokens[0].is_word("CREATE"):
        return None
    i = 1
    while i < len(tokens) and tokens[i].is_word("TEMPORARY", "GLOBAL", "LOCAL"):
        i += 1
    if i >= len(tokens) or not tokens[i].is_word("TABLE"):
        return None
    i += 1
    if i + 2 < len(tokens) and tokens[i].is_word("IF") and tokens[i + 1].is_word("NOT") \
            and tokens[i + 2].is_word("EXISTS"):
        i += 3
    name = _qualified_name(tokens, i)
    if name is None:
        return None
    schema, table, i = name
    group = _paren_group(tokens, i)
    if group is None:
        return CreateTable(schema, table, [], [], [], [])
    inner, end = group
    result = CreateTable(schema, table, [], [], [], [])
    for part in top_level_split(inner):
        if not part:
            continue
        head = part[0]
        if head.kind == "ident" and head.upper in _CONSTRAINT_WORDS:
            words = [t.upper for t in part if t.kind == "ident"]
            cols = _key_columns(part)
            if "PRIMARY" in words:
                result.primary = cols
            elif "UNIQUE" in words:
                result.uniques.append(cols)
            elif words and words[0] in ("KEY", "INDEX"):
                result.indexes.append(cols)
            continue
        col = parse_column_def(part)
        if col is not None:
            result.columns.append(col)
    rest = tokens[end:]
    for j, tok in enumerate(rest):
        if tok.is_word("CHARSET") or (tok.is_word("SET") and j > 0 and rest[j - 1].is_word("CHARACTER")):
            k = j + 1 + (1 if j + 1 < len(rest) and rest[j + 1].text == "=" else 0)
            if k < len(rest):
                result.charset = rest[k].text.lower()
        elif tok.is_word("COLLATE"):
            k = j + 1 + (1 if j + 1 < len(rest) and rest[j + 1].text == "=" else 0)
            if k < len(rest):
                result.collate = rest[k].text.lower()
    return result


def _alter_column_defs(tokens: list[Token]) -> list[ColumnDef]:
    i = 2
    name = _qualified_name(tokens, i)
    if name is None:
        return []
    defs: list[ColumnDef] = []
    for spec in top_level_split(tokens[name[2]:]):
        if not spec:
            continue
        word = spec[0].upper if spec[0].kind == "ident" else ""
        rest = spec[1:]
        if rest and rest[0].is_word("COLUMN"):
            rest = rest[1:]
        if word == "ADD":
            group = _paren_group(rest, 0)
            elements = top_level_split(group[0]) if group is not None else [rest]
            for element in elements:
                col = parse_column_def(element)
                if col is not None:
                    defs.append(col)
        elif word == "MODIFY":
            col = parse_column_def(rest)
            if col is not None:
                defs.append(col)
        elif word == "CHANGE":
            col = parse_column_def(rest[1:])
            if col is not None:
                defs.append(col)
    return defs


def statement_column_defs(sql: str) -> list[ColumnDef] | None:
    """Every column definition a DDL statement writes out; None if the statement is not understood."""
    tokens = tokenize(sql)
    if not tokens:
        return None
    if tokens[0].is_word("CREATE"):
        table = parse_create_table(sql)
        return table.columns if table is not None else []
    if len(tokens) > 2 and tokens[0].is_word("ALTER") and tokens[1].is_word("TABLE"):
        return _alter_column_defs(tokens)
    return []


@dataclass
class Insert:
    """An ``INSERT INTO t [(cols)] VALUES (...), ...`` statement."""

    schema: str | None
    table: str
    columns: list[str] | None
    rows: list[list[Literal | None]]


def parse_insert(sql: str) -> Insert | None:
    """The rows of an ``INSERT ... VALUES`` statement, or None."""
    tokens = tokenize(sql)
    if not tokens or not tokens[0].is_word("INSERT", "REPLACE"):
        return None
    i = 1
    while i < len(tokens) and tokens[i].is_word("IGNORE", "INTO", "LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY"):
        i += 1
    name = _qualified_name(tokens, i)
    if name is None:
        return None
    schema, table, i = name
    columns: list[str] | None = None
    group = _paren_group(tokens, i)
    if group is not None:
        columns = [part[0].text for part in top_level_split(group[0]) if part]
        i = group[1]
    if i >= len(tokens) or not tokens[i].is_word("VALUES", "VALUE"):
        return None
    i += 1
    rows: list[list[Literal | None]] = []
    while i < len(tokens):
        group = _paren_group(tokens, i)
        if group is None:
            break
        inner, i = group
        rows.append([_literal(part, 0)[0] if part else None for part in top_level_split(inner)])
        if i < len(tokens) and tokens[i].kind == "op" and tokens[i].text == ",":
            i += 1
    return Insert(schema, table, columns, rows)
