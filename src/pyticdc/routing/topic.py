"""Topic expressions: which Kafka topic a table's events go to (reference §1.6).

A port of tiflow ``cdc/sink/dmlsink/mq/dispatcher/topic/{expression.go,dispatcher.go}`` and the topic part
of ``event_router.go:getTopicDispatcher`` (Kafka scheme).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from pyticdc.errors import ConfigError

__all__ = [
    "KAFKA_TOPIC_NAME_MAX_LENGTH",
    "TopicDispatcher",
    "is_static_topic",
    "make_topic_dispatcher",
    "sanitize_topic_part",
    "substitute_topic",
    "validate_topic_expression",
]

#: Kafka's longest topic name (``Topic.java``), the truncation length of a substituted expression.
KAFKA_TOPIC_NAME_MAX_LENGTH: Final = 249

_HARD_CODE_TOPIC_RE: Final = re.compile(r"[A-Za-z0-9._\-]+")
_TOPIC_EXPRESSION_RE: Final = re.compile(r"[A-Za-z0-9._\-]*(\{schema\})?([A-Za-z0-9._\-]*\{table\})?[A-Za-z0-9._\-]*")
_KAFKA_FORBID_RE: Final = re.compile(r"[^a-zA-Z0-9._\-]")


def is_static_topic(rule: str) -> bool:
    """Whether a topic rule is a hard-coded topic name (Go ``topic.IsHardCode``)."""
    return _HARD_CODE_TOPIC_RE.fullmatch(rule) is not None


def validate_topic_expression(expression: str) -> None:
    """ConfigError unless ``expression`` is ``[prefix]{schema}[middle][{table}][suffix]``-shaped (Go ``Validate``)."""
    if _TOPIC_EXPRESSION_RE.fullmatch(expression) is None:
        raise ConfigError(
            f"invalid topic expression {expression!r}: it must look like [prefix][{{schema}}][middle][{{table}}]"
            "[suffix], where prefix/middle/suffix use only [A-Za-z0-9._-] and {schema} comes before {table}"
        )


def sanitize_topic_part(name: str) -> str:
    """A schema or table name with every character outside ``[A-Za-z0-9._-]`` replaced by ``_``."""
    return _KAFKA_FORBID_RE.sub("_", name)


def substitute_topic(expression: str, schema: str, table: str) -> str:
    """Go ``Expression.Substitute``: fill ``{schema}``/``{table}``, truncate to 249, fix ``.``/``..``."""
    topic = expression.replace("{schema}", sanitize_topic_part(schema)).replace("{table}", sanitize_topic_part(table))
    encoded = topic.encode("utf-8", "surrogateescape")
    if len(encoded) > KAFKA_TOPIC_NAME_MAX_LENGTH:
        # Go slices the string's bytes; a validated expression is ASCII, so this never splits a character.
        return encoded[:KAFKA_TOPIC_NAME_MAX_LENGTH].decode("utf-8", "surrogateescape")
    if topic == ".":
        return "_"
    if topic == "..":
        return "__"
    return topic


@dataclass(frozen=True)
class TopicDispatcher:
    """A rule's topic: a static name, or an expression substituted per table (Go ``topic.Dispatcher``)."""

    expression: str
    static: bool

    def substitute(self, schema: str, table: str) -> str:
        """The topic for ``schema.table``."""
        if self.static:
            return self.expression
        return substitute_topic(self.expression, schema, table)


def make_topic_dispatcher(rule: str, default_topic: str) -> TopicDispatcher:
    """Go ``getTopicDispatcher``: empty → default topic, hard-coded name → itself, else a validated expression."""
    if rule == "":
        return TopicDispatcher(default_topic, static=True)
    if is_static_topic(rule):
        return TopicDispatcher(rule, static=True)
    validate_topic_expression(rule)
    return TopicDispatcher(rule, static=False)
