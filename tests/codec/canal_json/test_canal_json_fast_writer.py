"""Canal-JSON writer fast paths against the per-value writer: orjson-written images with easyjson's
escapes fixed up, and the positional double format."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import PK, column, insert, table
from pyticdc.codec import canal_json as cj
from pyticdc.codec.canal_json import encoder as canal_encoder
from pyticdc.codec.canal_json.values import _positional, format_double
from pyticdc.codec.jsontext import format_float_f
from pyticdc.model import Row, RowChange
from strategies import row_changes

#: Every test here runs with the fast paths' C helpers and with their pure-Python forms.
pytestmark = pytest.mark.usefixtures("fast_path_form")

#: Text pieces around every escape rule where orjson and easyjson differ or could be confused.
_NASTY = ["<", ">", "&", "\b", "\f", "\\b", "\\f", "\\", '"', "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\u2028",
          "\u2029", "é", "加", "😀", "\\\b", "b", "f", "u003c"]


def _salted(rows: list[RowChange], salt: list[str], invalid: bool) -> list[RowChange]:
    """Every bytes value with the salt appended (and an invalid UTF-8 byte when ``invalid``)."""
    extra = "".join(salt).encode() + (b"\xff" if invalid else b"")

    def image(values: Row | None) -> Row | None:
        if values is None:
            return None
        return Row({k: v + extra if isinstance(v, bytes) else v for k, v in values.items()})
    return [RowChange(op=r.op, schema=r.schema, table=r.table, commit_ts=r.commit_ts, columns=image(r.columns),
                      pre_columns=image(r.pre_columns), table_id=r.table_id, physical_table_id=r.physical_table_id,
                      row_id=r.row_id, table_info=r.table_info) for r in rows]


@settings(max_examples=200, deadline=None)
@given(rows=row_changes(max_rows=4), salt=st.lists(st.sampled_from(_NASTY), max_size=6), invalid=st.booleans())
def test_fast_image_writer_is_the_per_value_writer(rows: list[RowChange], salt: list[str], invalid: bool) -> None:
    encoder = cj.Encoder({"enable-tidb-extension": True})
    for row in _salted(rows, salt, invalid):
        plan = encoder._plan(row)
        for image in (row.columns, row.pre_columns):
            if not image:
                continue
            # new_map={} takes the per-value writer and filters nothing.
            reference = encoder._fill(plan, image, {}, False)
            try:
                fast: Any = canal_encoder._fill_fast(plan, image)
            except (KeyError, UnicodeError, canal_encoder._Slow):
                fast = None
            if fast is not None:
                assert fast == reference
            assert encoder._fill(plan, image, None, False) == reference


def test_fast_writer_takes_escapes_and_binary_controls() -> None:
    info = table(column("id", 3, PK), column("t", 15, text=True), column("b", 252), column("f", 4), column("d", 5),
                 column("s", 246))
    image = Row({"id": 1, "t": "<a&b> \b \\b \f \u2028 \\".encode(), "b": bytes(range(256)), "f": 1.5,
                 "d": 1e300, "s": "12.50"})
    encoder = cj.Encoder()
    plan = encoder._plan(insert(info, image))
    assert canal_encoder._fill_fast(plan, image) == encoder._fill(plan, image, {}, False)


@settings(max_examples=1000)
@given(value=st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                       st.floats(1e-5, 1e17), st.floats(-1e17, -1e-5), st.integers(-10**17, 10**17).map(float)))
def test_format_double_is_the_positional_rewrite(value: float) -> None:
    expected = format_float_f(value, 64) if value == 0 else _positional(repr(value))
    assert format_double(value) == expected == format_float_f(value, 64)
