"""Offset parsing and range planning (pure: no broker)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyticdc.errors import ConfigError, KafkaReadError
from pyticdc.io.kafka import (
    EARLIEST,
    LATEST,
    OffsetRange,
    cap_offsets,
    kafka_options,
    offsets_from_json,
    offsets_json,
    parse_offsets,
    plan_ranges,
    select_topics,
    split_range,
)

BOUNDS = {("a", 0): (0, 10), ("a", 1): (5, 20), ("b", 0): (0, 0)}


def test_parse_offsets() -> None:
    assert parse_offsets(None, ending=False, default="earliest") == "earliest"
    assert parse_offsets(" LATEST ", ending=True, default="latest") == "latest"
    assert parse_offsets('{"a": {"0": 3, "1": -2}}', ending=False, default="latest") == {("a", 0): 3, ("a", 1): -2}
    for bad, match in [("soon", "must be 'earliest'"), ('["a"]', "must map topics"),
                       ('{"a": {"x": 1}}', "not a number"), ('{"a": {"0": -3}}', ">= -2"),
                       ('{"a": {"0": true}}', ">= -2")]:
        with pytest.raises(ConfigError, match=match):
            parse_offsets(bad, ending=False, default="earliest")
    with pytest.raises(ConfigError, match="cannot be 'earliest'"):
        parse_offsets("earliest", ending=True, default="latest")
    with pytest.raises(ConfigError, match="-2"):
        parse_offsets('{"a": {"0": -2}}', ending=True, default="latest")


def test_plan_ranges_like_spark() -> None:
    assert plan_ranges(BOUNDS, "earliest", "latest") == [
        OffsetRange("a", 0, 0, 10), OffsetRange("a", 1, 5, 20), OffsetRange("b", 0, 0, 0)]
    assert plan_ranges(BOUNDS, "latest", "latest") == [
        OffsetRange("a", 0, 10, 10), OffsetRange("a", 1, 20, 20), OffsetRange("b", 0, 0, 0)]
    # Partitions absent from JSON start at earliest and end at latest; -1/-2 sentinels resolve.
    ranges = plan_ranges(BOUNDS, {("a", 0): 4, ("a", 1): EARLIEST}, {("a", 0): 8, ("b", 0): LATEST})
    assert ranges == [OffsetRange("a", 0, 4, 8), OffsetRange("a", 1, 5, 20), OffsetRange("b", 0, 0, 0)]
    assert sum(r.size for r in ranges) == 19


def test_plan_ranges_errors_and_data_loss() -> None:
    with pytest.raises(KafkaReadError, match="do not exist"):
        plan_ranges(BOUNDS, {("c", 0): 1}, "latest")
    with pytest.raises(KafkaReadError, match="before the earliest available offset 5"):
        plan_ranges(BOUNDS, {("a", 1): 2}, "latest")
    assert plan_ranges(BOUNDS, {("a", 1): 2}, "latest", fail_on_data_loss=False)[1] == OffsetRange("a", 1, 5, 20)
    with pytest.raises(KafkaReadError, match="before starting offset"):
        plan_ranges(BOUNDS, {("a", 0): 9}, {("a", 0): 3})


def test_offsets_json_round_trip() -> None:
    offsets = {("b", 0): 1, ("a", 10): 7, ("a", 2): 3}
    document = offsets_json(offsets)
    assert list(document) == ["a", "b"] and list(document["a"]) == ["2", "10"]
    assert offsets_from_json(document) == offsets


@given(start=st.integers(0, 1000), size=st.integers(0, 1000), parts=st.integers(1, 50))
def test_split_range_is_a_partition(start: int, size: int, parts: int) -> None:
    pieces = split_range(OffsetRange("t", 0, start, start + size), parts)
    assert pieces[0].start == start and pieces[-1].end == start + size
    assert all(a.end == b.start for a, b in itertools.pairwise(pieces))
    assert len(pieces) <= max(1, parts)
    assert max(p.size for p in pieces) - min(p.size for p in pieces) <= 1
    assert split_range(OffsetRange("t", 0, EARLIEST, 9), 4) == [OffsetRange("t", 0, EARLIEST, 9)]


@given(backlogs=st.lists(st.integers(0, 10_000), min_size=1, max_size=6), budget=st.integers(1, 5000))
def test_cap_offsets_respects_budget_and_progresses(backlogs: list[int], budget: int) -> None:
    start = {("t", i): 100 for i in range(len(backlogs))}
    latest = {("t", i): 100 + b for i, b in enumerate(backlogs)}
    capped = cap_offsets(start, latest, budget)
    moved = sum(capped[tp] - start[tp] for tp in latest)
    assert all(start[tp] <= capped[tp] <= latest[tp] for tp in latest)
    assert moved <= max(budget, 1)
    if sum(backlogs):
        assert moved > 0
    if sum(backlogs) <= budget:
        assert capped == latest
    assert cap_offsets(start, latest, None) == latest


def test_select_topics() -> None:
    topics = {"cdc-a": 3, "cdc-b": 1, "other": 2}
    assert select_topics(topics, subscribe="cdc-b, other") == [("cdc-b", 0), ("other", 0), ("other", 1)]
    assert select_topics(topics, pattern="cdc-.*") == [("cdc-a", 0), ("cdc-a", 1), ("cdc-a", 2), ("cdc-b", 0)]
    assert select_topics(topics, assign='{"cdc-a": [2, 0]}') == [("cdc-a", 0), ("cdc-a", 2)]
    with pytest.raises(ConfigError, match="exactly one"):
        select_topics(topics)
    with pytest.raises(ConfigError, match="exactly one"):
        select_topics(topics, subscribe="a", pattern="b")
    with pytest.raises(KafkaReadError, match="not found"):
        select_topics(topics, subscribe="nope")
    with pytest.raises(KafkaReadError, match="not found"):
        select_topics(topics, assign='{"cdc-b": [1]}')
    with pytest.raises(ConfigError, match="regular expression"):
        select_topics(topics, pattern="(")


def test_kafka_options_strip_prefix() -> None:
    assert kafka_options({"kafka.bootstrap.servers": "h:1", "Kafka.security.protocol": "SSL", "subscribe": "t"}) == {
        "bootstrap.servers": "h:1", "security.protocol": "SSL"}
