"""TiDB table-filter syntax (``db.*``, ``db.t?``, ``[abc]``, ``!neg``, backquotes, ``/regex/``).

A port of ``pingcap/tidb pkg/util/table-filter`` (``parser.go``, ``matchers.go``, ``table_filter.go``), the
matcher language of TiCDC's ``[[sink.dispatchers]]`` rules (reference §1.6).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Union

from pyticdc.errors import ConfigError

__all__ = ["TableFilter", "parse_table_filter"]


# --------------------------------------------------------------------------- matchers
@dataclass(frozen=True)
class _StringMatcher:
    text: str

    def match(self, name: str) -> bool:
        return name == self.text

    def lower(self) -> _Matcher:
        return _StringMatcher(self.text.lower())


@dataclass(frozen=True)
class _TrueMatcher:
    def match(self, name: str) -> bool:
        return True

    def lower(self) -> _Matcher:
        return self


@dataclass(frozen=True)
class _RegexMatcher:
    pattern: re.Pattern[str]

    def match(self, name: str) -> bool:
        # Go regexp.MatchString is a search (anchors come from the pattern itself).
        return self.pattern.search(name) is not None

    def lower(self) -> _Matcher:
        # Go prefixes "(?i)" to the pattern.
        return _RegexMatcher(re.compile(self.pattern.pattern, self.pattern.flags | re.IGNORECASE))


_Matcher = Union[_StringMatcher, _TrueMatcher, _RegexMatcher]


@dataclass(frozen=True)
class _TableRule:
    schema: _Matcher
    table: _Matcher
    positive: bool


# --------------------------------------------------------------------------- parser
_REGEXP_RE: Final = re.compile(r"/(?:\\.|[^/])+/", re.DOTALL)
_DOUBLE_QUOTED_RE: Final = re.compile(r'"(?:""|[^"])+"', re.DOTALL)
_BACKQUOTED_RE: Final = re.compile(r"`(?:``|[^`])+`", re.DOTALL)
_WILDCARD_RANGE_RE: Final = re.compile(r"\[!?(?:\\[^0-9a-zA-Z]|[^\\\]])+\]", re.DOTALL)
#: Characters that Python's ``re`` treats specially inside a class (nested sets, set operations) but RE2 does not.
_CLASS_ESCAPES: Final = {"[": r"\[", "&": r"\&", "~": r"\~", "|": r"\|"}


def _is_ascii_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


class _Parser:
    def __init__(self, file_name: str = "<cmdline>") -> None:
        self.file_name = file_name
        self.line_number = 1
        self.rules: list[_TableRule] = []

    def error(self, message: str) -> ConfigError:
        return ConfigError(f"table filter: at {self.file_name}:{self.line_number}: {message}")

    def parse(self, line: str, can_import: bool) -> None:
        line = line.strip(" \t")
        if not line:
            return
        positive = True
        if line[0] == "#":
            return
        if line[0] == "!":
            positive = False
            line = line[1:]
        elif line[0] == "@":
            if not can_import:
                raise self.error("importing filter files recursively is not allowed")
            self.import_file(line[1:])
            return
        schema, line = self.parse_pattern(line)
        if not line:
            raise self.error("wrong table pattern")
        if line[0] != ".":
            raise self.error("syntax error: missing '.' between schema and table patterns")
        table, line = self.parse_pattern(line[1:])
        if line:
            raise self.error("syntax error: stray characters after table pattern")
        self.rules.append(_TableRule(schema, table, positive))

    def import_file(self, file_name: str) -> None:
        try:
            lines = Path(file_name).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise self.error(f"cannot open filter file: {exc}") from None
        outer = (self.file_name, self.line_number)
        self.file_name, self.line_number = file_name, 1
        for text in lines:
            self.parse(text, False)
            self.line_number += 1
        self.file_name, self.line_number = outer

    def parse_pattern(self, line: str) -> tuple[_Matcher, str]:
        if not line:
            raise self.error("syntax error: missing pattern")
        first = line[0]
        if first == "/":
            found = _REGEXP_RE.match(line)
            if found is None:
                raise self.error("syntax error: incomplete regexp")
            return self.regex_matcher(line[1:found.end() - 1]), line[found.end():]
        if first in ('"', "`"):
            found = (_DOUBLE_QUOTED_RE if first == '"' else _BACKQUOTED_RE).match(line)
            if found is None:
                raise self.error("syntax error: incomplete quoted identifier")
            name = line[1:found.end() - 1].replace(first * 2, first)
            return _StringMatcher(name), line[found.end():]
        return self.parse_wildcard(line)

    def regex_matcher(self, pattern: str, *, flags: int = 0) -> _Matcher:
        try:
            return _RegexMatcher(re.compile(pattern, flags))
        except re.error as exc:
            raise self.error(f"invalid pattern: {exc}") from None

    def parse_wildcard(self, line: str) -> tuple[_Matcher, str]:
        literal: list[str] = []
        wildcard: list[str] = []
        is_literal = True
        i = 0
        while i < len(line):
            char = line[i]
            if char == "\\":
                if i == len(line) - 1:
                    raise self.error("syntax error: cannot place \\ at end of line")
                escaped = line[i + 1]
                if _is_ascii_alnum(escaped):
                    raise self.error(
                        f"cannot escape a letter or number (\\{escaped}), it is reserved for future extension"
                    )
                literal.append(escaped)
                wildcard.append(re.escape(escaped))
                i += 2
            elif char == ".":
                break  # the schema/table separator ends the pattern
            elif char == "*":
                is_literal = False
                wildcard.append(".*")
                i += 1
            elif char == "?":
                is_literal = False
                wildcard.append(".")
                i += 1
            elif char == "[":
                is_literal = False
                found = _WILDCARD_RANGE_RE.match(line, i)
                if found is None:
                    raise self.error("syntax error: failed to parse character class")
                body = line[i + 1:found.end() - 1]
                if body.startswith("!"):
                    prefix, body = "[^", body[1:]
                elif body.startswith("^"):
                    # `[^` is not special in a glob: the caret is a member of the class.
                    prefix, body = "[\\^", body[1:]
                else:
                    prefix = "["
                wildcard.append(prefix + _class_body(body) + "]")
                i = found.end()
            else:
                if not (char == "$" or char == "_" or _is_ascii_alnum(char) or ord(char) >= 0x80):
                    raise self.error(f"unexpected special character '{char}'")
                literal.append(char)
                # Go copies '$' into the regexp, where (like here) it is an end-of-text anchor.
                wildcard.append(r"\Z" if char == "$" else re.escape(char))
                i += 1
        rest = line[i:]
        if is_literal:
            return _StringMatcher("".join(literal)), rest
        body = "".join(wildcard)
        if body == ".*":
            return _TrueMatcher(), rest  # Go special-cases the `*` pattern
        # Go: "(?s)^" + … + "$" with RE2's `$` = end of text, i.e. Python's \Z.
        return self.regex_matcher(r"\A" + body + r"\Z", flags=re.DOTALL), rest


def _class_body(body: str) -> str:
    out = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            # The range syntax only lets a non-alphanumeric character be escaped: it stands for itself.
            out.append("\\" + body[i + 1] if body[i + 1].isascii() else body[i + 1])
            i += 2
            continue
        out.append(_CLASS_ESCAPES.get(body[i], body[i]))
        i += 1
    return "".join(out)


# --------------------------------------------------------------------------- filter
class TableFilter:
    """A parsed list of table patterns; the last pattern that matches a table decides (Go ``tableFilter``)."""

    def __init__(self, rules: Sequence[_TableRule], *, case_sensitive: bool = True) -> None:
        # Go reverses the parsed rules, so the first match in this list is the last pattern written.
        self._rules = tuple(reversed(rules))
        self.case_sensitive = case_sensitive
        self._lower: Callable[[str], str] = (lambda s: s) if case_sensitive else str.lower

    @classmethod
    def parse(cls, patterns: Sequence[str], *, case_sensitive: bool = True) -> TableFilter:
        """Parse patterns (Go ``filter.Parse``; ``CaseInsensitive`` when not case-sensitive)."""
        if isinstance(patterns, str):
            patterns = [patterns]
        parser = _Parser()
        for pattern in patterns:
            parser.parse(pattern, True)
        rules = parser.rules
        if not case_sensitive:
            rules = [_TableRule(r.schema.lower(), r.table.lower(), r.positive) for r in rules]
        return cls(rules, case_sensitive=case_sensitive)

    def match_table(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` is accepted; no matching pattern means not accepted."""
        schema, table = self._lower(schema), self._lower(table)
        for rule in self._rules:
            if rule.schema.match(schema) and rule.table.match(table):
                return rule.positive
        return False

    def match_schema(self, schema: str) -> bool:
        """Whether any table of ``schema`` may be accepted (Go ``MatchSchema``)."""
        schema = self._lower(schema)
        for rule in self._rules:
            if rule.schema.match(schema) and (rule.positive or isinstance(rule.table, _TrueMatcher)):
                return rule.positive
        return False


def parse_table_filter(patterns: Sequence[str], *, case_sensitive: bool = False) -> TableFilter:
    """A TableFilter for TiCDC matcher patterns; case-insensitive unless ``case_sensitive`` (§1.6)."""
    return TableFilter.parse(patterns, case_sensitive=case_sensitive)
