"""Canal-JSON row writer: the remembered float texts (FLOAT and DOUBLE) give the reference path's
bytes whether a value is met for the first time or again, zeros of either sign included."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import PK, column, insert, table, update
from pyticdc.codec import canal_json as cj
from pyticdc.codec.canal_json import writer
from pyticdc.model import RowChange

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

_INFO = table(column("id", 3, PK), column("f", 4), column("d", 5), schema="s", name="floats")
_FLOATS = [0.0, -0.0, 1.5, -1.5, 0.1, 1e-7, 1e22, 3.4e38, 16777216.0, 0.000123, -524.0707458162173, 2.5e-45,
           float("nan"), float("inf"), float("-inf"), 123456.789, 1 / 3,
           # Doubles just beyond MaxFloat32 (float32 rounding brings the first back to it): render's "0".
           3.402823466385289e38, -3.402823466385289e38, 3.4028235677973366e38]


def _rows(values: list[float]) -> list[RowChange]:
    rows = [insert(_INFO, {"id": i, "f": v, "d": v}, commit_ts=10 + i) for i, v in enumerate(values)]
    rows += [update(_INFO, {"id": 0, "f": v, "d": -v}, {"id": 0, "f": v, "d": v}, commit_ts=99) for v in values]
    return rows


def _check(rows: list[RowChange]) -> None:
    encoder = cj.Encoder({"enable-tidb-extension": True}, clock=lambda: 7)
    for row in rows:
        fast = encoder._encode_row(row)
        reference = encoder._encode_row_reference(row)
        assert fast is not None and reference is not None
        assert fast.value == reference.value


@pytest.mark.parametrize("warm", [False, True])
def test_float_texts_cold_and_remembered(warm: bool) -> None:
    writer._F32_TEXTS.clear()
    writer._F64_TEXTS.clear()
    if warm:
        _check(_rows(_FLOATS))  # every text remembered once
    _check(_rows(_FLOATS))
    _check(_rows(_FLOATS[::-1]))
    assert 0.0 not in writer._F32_TEXTS and 0.0 not in writer._F64_TEXTS  # -0.0 == 0.0: never a key


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=6))
def test_float_texts_of_any_double(values: list[float]) -> None:
    _check(_rows(values))
    _check(_rows(values))


def test_float_texts_stay_bounded() -> None:
    writer._F32_TEXTS.clear()
    for i in range(writer._FLOAT_TEXTS_MAX + 10):
        writer._f32_text(1.0 + i / 7)
    assert 0 < len(writer._F32_TEXTS) <= writer._FLOAT_TEXTS_MAX
