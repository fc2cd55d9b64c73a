"""Topic expressions: the cases of tiflow ``dispatcher/topic/expression_test.go`` plus the static/default rules."""

from __future__ import annotations

import pytest

from pyticdc.errors import ConfigError
from pyticdc.routing import (
    KAFKA_TOPIC_NAME_MAX_LENGTH,
    is_static_topic,
    make_topic_dispatcher,
    substitute_topic,
    validate_topic_expression,
)

# (expression, schema, table, expected topic) — TestSubstituteTopicExpression, valid cases.
SUBSTITUTIONS = [
    ("{schema}", "abc", "", "abc"),
    ("abc{schema}", "def", "", "abcdef"),
    ("{schema}def", "hello", "", "hellodef"),
    ("abc{schema}def", "hello", "", "abchellodef"),
    ("abc{schema}", "DEF", "", "abcDEF"),
    ("abc._-def{schema}abc", "HELLO", "", "abc._-defHELLOabc"),
    ("abc_def{schema}", "!@#$%^&*()_+.{}", "", "abc_def____________.__"),
    ("abc{schema}def", "你好", "", "abc__def"),
    ("{schema}_{table}", "hello", "world", "hello_world"),
    ("{schema}_{table}", "HELLO", "WORLD", "HELLO_WORLD"),
    ("{schema}_{table}", "hello", "!@#$%^&*", "hello_________"),
    ("{schema}_{table}", "()_+.{}", "world", "____.___world"),
    ("ab.-c_{schema}_{table}_de.-f", "hello", "WORLD", "ab.-c_hello_WORLD_de.-f"),
    ("abc_{schema}de._-{table}_fhi", "hello", "world", "abc_hellode._-world_fhi"),
    ("{schema}_{table}", "你好", "世界", "_____"),
    ("{schema}", ".", "", "_"),
    ("{schema}", "..", "", "__"),
    ("prefix_{table}", "test", "table1", "prefix_table1"),  # TestSchemaOptional
    ("prefix_{schema}", "test", "abc", "prefix_test"),  # TestTableOptional
]


@pytest.mark.parametrize(("expression", "schema", "table", "expected"), SUBSTITUTIONS)
def test_substitute(expression: str, schema: str, table: str, expected: str) -> None:
    validate_topic_expression(expression)
    assert substitute_topic(expression, schema, table) == expected
    assert make_topic_dispatcher(expression, "default").substitute(schema, table) == expected


@pytest.mark.parametrize("expression", [
    "{{{{schema}", "你好{schema}", "{schema}}}}}", "{xxx}", "abc{sch}", "{sch}_{tab}",
    "{schema}!@#$%^&*()+{}你好{table}", "{table}_{schema}",
])
def test_invalid_expressions(expression: str) -> None:
    with pytest.raises(ConfigError, match="invalid topic expression"):
        validate_topic_expression(expression)
    with pytest.raises(ConfigError, match="invalid topic expression"):
        make_topic_dispatcher(expression, "default")


def test_truncated_to_kafka_limit() -> None:
    topic = substitute_topic("{schema}_{table}", "s" * 200, "t" * 200)
    assert len(topic) == KAFKA_TOPIC_NAME_MAX_LENGTH == 249
    assert topic == ("s" * 200 + "_" + "t" * 200)[:249]


def test_static_and_default_topics() -> None:
    assert make_topic_dispatcher("", "cdc-default").substitute("db", "t") == "cdc-default"
    assert is_static_topic("hard_code_topic") and not is_static_topic("x_{schema}")
    static = make_topic_dispatcher("hard.code-topic_1", "cdc-default")
    assert static.static and static.substitute("db", "t") == "hard.code-topic_1"
    # A hard-coded name is used verbatim: the '.'/'..' rewrite only applies to substituted expressions.
    assert make_topic_dispatcher(".", "d").substitute("db", "t") == "."
