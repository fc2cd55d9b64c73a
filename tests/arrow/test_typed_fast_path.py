"""typed_arrays' fast path (Arrow's casts over whole columns) gives what the reference conversion gives, value for
value and error for error, and declines what it cannot read exactly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyticdc.arrow.types as types
from builders import column, table
from pyticdc.arrow.types import typed_arrays
from pyticdc.model import TypeCode
from pyticdc.replica.progress import tso_time, tso_times

INFO = table(
    column("i", TypeCode.LONG, flen=11),
    column("t", TypeCode.TINY, flen=4),
    column("u", TypeCode.TINY, flen=3, unsigned=True),
    column("b", TypeCode.LONGLONG, flen=20),
    column("y", TypeCode.YEAR, flen=4),
    column("d", TypeCode.NEWDECIMAL, flen=12, decimal=2),
    column("w", TypeCode.NEWDECIMAL, flen=30, decimal=4),
    column("dt", TypeCode.DATETIME, flen=26, decimal=6),
)

INTS = ["0", "-1", "7", "127", "128", "-128", "-129", "255", "32767", "2147483647", "2147483648",
        "-9223372036854775808", "9223372036854775808", "+5", "007", "-0", " 5", "5 ", "1_0", "", "x", "\u0663", "1.0",
        "9" * 30]
DECIMALS = ["0", "1.5", "1.505", "-12.34", "1e3", "1E-2", "9999999999.99", "99999999999.99", ".5", "1.", "+1", "NaN",
            "inf", "-Infinity", "1_0", " 1", "0012.50", "12.500", "12.501", "-0.00", "1e400", "", "1,5",
            "12345678901234567890123456.1234", "123456789012345678901234567.1234"]
DATETIMES = ["2025-01-02 03:04:05", "2025-01-02 03:04:05.1", "2025-01-02 03:04:05.123456",
             "2025-01-02 03:04:05.1234567", "0000-00-00 00:00:00", "0000-01-01 00:00:00", "2025-00-10 00:00:00",
             "2025-02-29 00:00:00",
             "2024-02-29 00:00:00", "1900-02-29 00:00:00", "2000-02-29 12:00:00", "2025-13-01 00:00:00",
             "2025-04-31 10:00:00", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "2025-01-02T03:04:05",
             "2025-1-2 3:4:5", "2025-01-02 24:00:00", "2025-01-02 23:59:60", " 2025-01-02 03:04:05",
             "2025-01-02 03:04:05.", "2025-01-02", "abc", ""]
POOLS = {"i": INTS, "t": INTS, "u": INTS, "b": INTS, "y": INTS, "d": DECIMALS, "w": DECIMALS, "dt": DATETIMES}
VALID = {"i": ["0", "-1", "42", "2147483647"], "t": ["0", "-5", "127"], "u": ["0", "255"],
         "b": ["-9223372036854775808", "9223372036854775807", "3"], "y": ["2025", "0"],
         "d": ["1.50", "-12.34", "0", "9999999999.99"], "w": ["1.5", "-0.0001", "12345678901234567890123456.1234"],
         "dt": ["2025-01-02 03:04:05", "2025-11-13 10:00:00.123456", "0001-01-01 00:00:00.5"]}


def outcome(images: list[dict[str, str | None]], *, fast: bool) -> Any:
    """The typed columns (values and types), or the error's type and text."""
    try:
        arrays = typed_arrays(images, [frozenset()] * len(images), INFO, fast=fast)
    except ValueError as exc:
        return type(exc).__name__, str(exc)
    return {name: (array.type, array.to_pylist()) for name, array in arrays.items()}


@contextmanager
def counted() -> Iterator[dict[str, int]]:
    """Counts the columns the fast path converts and the ones it declines."""
    counts = {"taken": 0, "declined": 0}
    original = types._arrow_column

    def arrow_column(*args: Any) -> pa.Array | None:
        try:
            result = original(*args)
        except ValueError:
            counts["declined"] += 1
            raise
        counts["taken" if result is not None else "declined"] += 1
        return result

    types._arrow_column = arrow_column  # type: ignore[assignment]
    try:
        yield counts
    finally:
        types._arrow_column = original


def texts(valid: float) -> st.SearchStrategy[dict[str, str | None]]:
    """One image: each column absent, NULL, a valid text or (with 1 - ``valid``) any text of its pool."""
    def value(name: str) -> st.SearchStrategy[str | None]:
        return st.one_of(st.none(), st.sampled_from(VALID[name]) if valid >= 1 else st.one_of(
            st.sampled_from(VALID[name]), st.sampled_from(POOLS[name])))
    return st.fixed_dictionaries({}, optional={name: value(name) for name in POOLS})


@settings(max_examples=400, deadline=None)
@given(st.lists(texts(0.5), min_size=1, max_size=6))
def test_fast_and_reference_agree_on_any_texts(images: list[dict[str, str | None]]) -> None:
    assert outcome(images, fast=True) == outcome(images, fast=False)


@pytest.mark.parametrize(("name", "text"), [(name, text) for name, pool in POOLS.items() for text in pool])
def test_fast_and_reference_agree_on_every_text_of_the_pools(name: str, text: str) -> None:
    cases: list[list[dict[str, str | None]]] = [[{name: text}], [{name: VALID[name][0]}, {name: text}, {name: None}]]
    for images in cases:
        assert outcome(images, fast=True) == outcome(images, fast=False)


@settings(max_examples=100, deadline=None)
@given(st.lists(texts(1.0), min_size=1, max_size=6))
def test_valid_texts_take_the_fast_path(images: list[dict[str, str | None]]) -> None:
    with counted() as counts:
        fast = outcome(images, fast=True)
    assert fast == outcome(images, fast=False)
    assert counts == {"taken": len(INFO.columns), "declined": 0}


@pytest.mark.parametrize(("name", "text"), [
    ("dt", "0000-00-00 00:00:00"), ("dt", "2025-02-29 00:00:00"), ("dt", "2025-01-02 03:04:05.1234567"),
    ("dt", "0000-01-01 00:00:00"), ("d", "1.505"), ("d", "1_0"), ("i", " 5"), ("i", "2147483648"),
    ("w", "123456789012345678901234567.1234"),
])
def test_what_only_the_reference_reads_is_declined(name: str, text: str) -> None:
    images: list[dict[str, str | None]] = [{name: VALID[name][0]}, {name: text}]
    with counted() as counts:
        fast = outcome(images, fast=True)
    assert fast == outcome(images, fast=False)
    assert counts["declined"] >= 1


def test_a_decimal_of_more_digits_than_pythons_default_context_is_read() -> None:
    # 30 digits: Python's default decimal context (28) would refuse it; MySQL's DECIMAL has up to 65.
    for fast in (True, False):
        assert outcome([{"w": "12345678901234567890123456.1234"}], fast=fast)["w"][1] == [
            Decimal("12345678901234567890123456.1234")]


def test_tso_times_is_tso_time_for_every_row() -> None:
    values = [0, None, -5, 1, (1 << 18) - 1, 1 << 18, 462159872000262144, (1 << 63) - 1,
              *range(1 << 40, (1 << 63) - 1, (1 << 63) // 997)]
    column_of = tso_times(pa.array(values, pa.int64())).to_pylist()
    assert column_of == [None if v is None else tso_time(v) for v in values]
    moment = tso_time(462159872000262144)  # 1 ms past a second: exact, where a float division was not always
    assert moment is not None and moment.microsecond == 1000
