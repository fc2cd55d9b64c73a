"""Table-filter syntax: the cases of pingcap/tidb ``pkg/util/table-filter/table_filter_test.go``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.errors import ConfigError
from pyticdc.routing import TableFilter, parse_table_filter

# (patterns, [(schema, table)], accepted case-sensitive, accepted case-insensitive) — TestMatchTables.
MATCH_TABLES = [
    ([], [("foo", "bar")], [False], [False]),
    (["*.*"], [("foo", "bar")], [True], [True]),
    (["foo.*"], [("foo", "bar"), ("foo1", "bar"), ("foo2", "bar")], [True, False, False], [True, False, False]),
    (["*.*", "!foo1.*"], [("foo", "bar"), ("foo1", "bar"), ("foo2", "bar")], [True, False, True],
     [True, False, True]),
    (["foo.bar1"], [("foo", "bar"), ("foo", "bar1"), ("fff", "bar1")], [False, True, False], [False, True, False]),
    (["*.*", "!foo.bar"], [("foo", "bar"), ("foo", "bar1"), ("fff", "bar1")], [False, True, True],
     [False, True, True]),
    (["/^foo/.*", r"!/^foo/./^sbtest-\d/"], [("foo", "sbtest"), ("foo1", "sbtest-1"), ("fff", "bar")],
     [True, False, False], [True, False, False]),
    (["*.*", "!foo[bar].*", "!bar?.*", "!special\\\\.*"],
     [("foor", "a"), ("foo[bar]", "b"), ("ba", "c"), ("bar?", "d"), ("special\\", "e"), ("special\\\\", "f"),
      ("bazzz", "g"), ("special\\$", "h"), ("afooa", "i")],
     [False, True, True, False, False, True, True, True, True],
     [False, True, True, False, False, True, True, True, True]),
    (["*.*", "!/^FOO/.*", "!*./FoO$/"],
     [("FOO1", "a"), ("foo2", "b"), ("BoO3", "cFoO"), ("Foo4", "dfoo"), ("5", "5")],
     [False, True, False, True, True], [False, False, False, False, True]),
    (["*.*", "!a?b?./f[0-9]/"], [("abbd", "f1"), ("aaaa", "f2"), ("5", "5"), ("abbc", "fa")],
     [False, True, True, True], [False, True, True, True]),
    (["*.*", "!/t[0-8]/.a??"], [("t1", "a01"), ("t9", "a02"), ("5", "5"), ("t8", "a001")],
     [False, True, True, True], [False, True, True, True]),
    (["*.*", "!a*.A*"], [("aB", "Ab"), ("AaB", "aab"), ("acB", "Afb")], [False, True, False], [False, False, False]),
    (["BAR.*"], [("bar", "a"), ("BAR", "a")], [False, True], [True, True]),
    (["# comment", "x.y", "   \t"], [("x", "y"), ("y", "y")], [True, False], [True, False]),
    (["p_123$.45", "中文.表名"], [("p_123", "45"), ("p_123$", "45"), ("英文", "表名"), ("中文", "表名")],
     [False, True, False, True], [False, True, False, True]),
    (["\\\\\\..*"], [("\\.", "a"), ("\\\\\\.", "b"), ("\\a", "c")], [True, False, False], [True, False, False]),
    (["[!a-z].[^a-z]"],
     [("!", "z"), ("!", "^"), ("!", "9"), ("a", "z"), ("a", "^"), ("a", "9"), ("1", "z"), ("1", "^"), ("1", "9")],
     [True, True, False, False, False, False, True, True, False],
     [True, True, False, False, False, False, True, True, False]),
    (['"some ""quoted""".`identifiers?`'],
     [('some "quoted"', "identifiers?"), ('some "quoted"', "identifiers!"), ('some ""quoted""', "identifiers?"),
      ('SOME "QUOTED"', "IDENTIFIERS?"), ('some\t"quoted"', "identifiers?")],
     [True, False, False, False, False], [True, False, False, True, False]),
    (["db*.*", "!*.cfg*", "*.cfgsample"],
     [("irrelevant", "table"), ("db1", "tbl1"), ("db1", "cfg1"), ("db1", "cfgsample"), ("else", "cfgsample")],
     [False, True, False, True, True], [False, True, False, True, True]),
    (["*.*", "!S.D[!a-d]"], [("S", "D1"), ("S", "Da"), ("S", "Db"), ("S", "Daa")],
     [False, True, True, True], [False, True, True, True]),
    (["*.*", "!S.D[a-d]"], [("S", "D1"), ("S", "Da"), ("S", "Db"), ("S", "Daa")],
     [True, False, False, True], [True, False, False, True]),
]


@pytest.mark.parametrize(("patterns", "tables", "accepted_cs", "accepted_ci"), MATCH_TABLES,
                         ids=[" ".join(c[0]) or "empty" for c in MATCH_TABLES])
def test_match_tables(patterns: list[str], tables: list[tuple[str, str]], accepted_cs: list[bool],
                      accepted_ci: list[bool]) -> None:
    sensitive = parse_table_filter(patterns, case_sensitive=True)
    insensitive = parse_table_filter(patterns, case_sensitive=False)
    assert [sensitive.match_table(s, t) for s, t in tables] == accepted_cs
    assert [insensitive.match_table(s, t) for s, t in tables] == accepted_ci


# TestMatchSchemas.
MATCH_SCHEMAS = [
    ([], ["foo"], [False], [False]),
    (["*.*"], ["foo"], [True], [True]),
    (["foo.*"], ["foo", "foo1"], [True, False], [True, False]),
    (["*.*", "!foo1.*"], ["foo", "foo1"], [True, False], [True, False]),
    (["foo.bar1"], ["foo", "foo1"], [True, False], [True, False]),
    (["*.*", "!foo.bar"], ["foo", "foo1"], [True, True], [True, True]),
    (["/^foo/.*", r"!/^foo/./^sbtest-\d/"], ["foo", "foo2"], [True, True], [True, True]),
    (["*.*", "!FOO*.*", "!*.*FoO"], ["foo", "FOO", "foobar", "FOOBAR", "bar", "BAR"],
     [True, False, True, False, True, True], [False, False, False, False, True, True]),
]


@pytest.mark.parametrize(("patterns", "schemas", "accepted_cs", "accepted_ci"), MATCH_SCHEMAS)
def test_match_schemas(patterns: list[str], schemas: list[str], accepted_cs: list[bool],
                       accepted_ci: list[bool]) -> None:
    assert [parse_table_filter(patterns, case_sensitive=True).match_schema(s) for s in schemas] == accepted_cs
    assert [parse_table_filter(patterns, case_sensitive=False).match_schema(s) for s in schemas] == accepted_ci


# TestParseFailures2 (Go's lookaround errors come from RE2; Python's re accepts lookarounds, so those
# two cases are not carried over).
PARSE_FAILURES = [
    ("a.b.c", "stray characters after table pattern"),
    ("a%b.c", "unexpected special character '%'"),
    ("a\\tb.c", r"cannot escape a letter or number \(\\t\)"),
    ("[].*", "failed to parse character class"),
    ("[!].*", "invalid pattern"),
    ("[.*", "failed to parse character class"),
    ("[\\d\\D].*", "failed to parse character class"),
    ("db", "wrong table pattern"),
    ("db.", "missing pattern"),
    ("`db`*.*", r"missing '\.' between schema and table patterns"),
    ("/db.*", "incomplete regexp"),
    ("`db.*", "incomplete quoted identifier"),
    ('"db.*', "incomplete quoted identifier"),
    ("db\\", "cannot place \\\\ at end of line"),
    ("db.tbl#not comment", "unexpected special character '#'"),
]


@pytest.mark.parametrize(("pattern", "message"), PARSE_FAILURES)
def test_parse_failures(pattern: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TableFilter.parse([pattern])


def test_import_files(tmp_path: Path) -> None:
    # TestImport2 / TestRecursiveImport2.
    first, second = tmp_path / "1.txt", tmp_path / "2.txt"
    first.write_text("\n\t\tdb?.tbl?\n\t\tdb02.tbl02\n\t")
    second.write_text("\n\t\tdb03.tbl03\n\t\t!db4.tbl4\n\t")
    table_filter = TableFilter.parse([f"@{first}", f"@{second}", "db04.tbl04"])
    for schema, table, accepted in [("db1", "tbl1", True), ("db2", "tbl2", True), ("db3", "tbl3", True),
                                    ("db4", "tbl4", False), ("db01", "tbl01", False), ("db02", "tbl02", True),
                                    ("db03", "tbl03", True), ("db04", "tbl04", True)]:
        assert table_filter.match_table(schema, table) is accepted, (schema, table)
    nested = tmp_path / "4.txt"
    (tmp_path / "3.txt").write_text("db1.tbl1")
    nested.write_text(f"# comment\n\n@{tmp_path / '3.txt'}")
    with pytest.raises(ConfigError, match=r"4\.txt:3: importing filter files recursively is not allowed"):
        TableFilter.parse([f"@{nested}"])
    with pytest.raises(ConfigError, match="cannot open filter file"):
        TableFilter.parse([f"@{tmp_path / '5.txt'}"])


def test_default_is_case_insensitive() -> None:
    assert parse_table_filter(["Db.T?"]).match_table("DB", "t1")
    assert not TableFilter.parse(["Db.T?"]).match_table("DB", "t1")


def test_dollar_in_a_wildcard_pattern_is_an_anchor_as_in_go() -> None:
    # Go copies '$' into the wildcard regexp, where it means end of text: "a$*" only matches "a".
    table_filter = parse_table_filter(["a$*.t"], case_sensitive=True)
    assert table_filter.match_table("a", "t")
    assert not table_filter.match_table("a$", "t")
    assert parse_table_filter(["a$.t"], case_sensitive=True).match_table("a$", "t")  # literal, no wildcard


def test_character_class_members_python_treats_specially() -> None:
    table_filter = parse_table_filter(["[[&|~].t"], case_sensitive=True)
    assert [table_filter.match_table(s, "t") for s in ("[", "&", "|", "~", "a")] == [True, True, True, True, False]
