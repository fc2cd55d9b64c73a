"""The Debezium reader's ZonedTimestamp fast path (UTC) against the general reading of the same text."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from pyticdc.codec.debezium import readers
from pyticdc.errors import DecodeError

_TWO = st.integers(0, 99).map(lambda n: f"{n:02d}")


def _field(high: int, low: int = 0) -> st.SearchStrategy[str]:
    """A two-digit field, mostly in range (so the fast path's form is common), now and then not."""
    return st.one_of(st.integers(low, high).map(lambda n: f"{n:02d}"), _TWO)


@st.composite
def _zoned_texts(draw: st.DrawFn) -> str:
    year = draw(st.sampled_from(["0000", "0001", "1969", "1970", "2024", "2025", "9999", "٢٠٢٤"]))
    text = (f"{year}-{draw(_field(12, 1))}-{draw(_field(31, 1))}{draw(st.sampled_from(['T', 'T', ' ']))}"
            f"{draw(_field(23))}:{draw(_field(59))}:{draw(_field(59))}")
    digits = draw(st.integers(0, 9))
    if digits:
        text += "." + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=digits, max_size=digits)))
    return text + draw(st.sampled_from(["Z", "Z", "Z", "+00:00", "z", "Zx"]))


def _read(convert: object, text: str) -> object:
    assert callable(convert)
    try:
        return convert(text, "$.after.t")
    except DecodeError as exc:
        return str(exc)


def _general(text: str) -> object:
    """The UTC converter's reading with the fast path's pattern made to match nothing."""
    saved = readers._ZONED_UTC
    readers._ZONED_UTC = re.compile(r"(?!)")  # type: ignore[misc]
    try:
        return _read(readers._timestamp_converter(ZoneInfo("UTC")), text)
    finally:
        readers._ZONED_UTC = saved  # type: ignore[misc]


@settings(max_examples=2000, deadline=None)
@given(text=_zoned_texts())
def test_utc_fast_path_equals_the_general_reading(text: str) -> None:
    assert _read(readers._timestamp_converter(ZoneInfo("UTC")), text) == _general(text)


def test_utc_fast_path_reads_what_ticdc_writes() -> None:
    convert = readers._timestamp_converter(ZoneInfo("UTC"))
    assert convert("2025-04-02T02:27:26.303677Z", "$") == "2025-04-02 02:27:26.303677"
    assert convert("2024-02-29T23:59:59Z", "$") == "2024-02-29 23:59:59"
