"""The canonical text of row images: the C row_text and its Python twin agree on every kind of value."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from fast_paths import c_helpers
from pyticdc.arrow import rows
from pyticdc.model import Row

_VALUES = st.one_of(
    st.none(), st.text(), st.integers(), st.floats(), st.booleans(), st.binary(max_size=20),
    st.text(max_size=8).map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=6).map(bytearray),
    st.binary(max_size=6).map(lambda b: memoryview(b)), st.decimals(allow_nan=False), st.just(dt.date(2025, 1, 2)),
)


def _forms(image: Any, binary: frozenset[str], names: list[str] | None) -> tuple[Any, Any]:
    helpers = c_helpers()
    c_names = None if names is None else list(names)
    py_names = None if names is None else list(names)
    return ((helpers.row_text(image, binary, c_names), c_names),
            (rows.python_row_text(image, binary, py_names), py_names))


@settings(max_examples=300)
@given(image=st.dictionaries(st.sampled_from(["a", "b", "c", "é", "bin"]), _VALUES), as_row=st.booleans(),
       binary=st.frozensets(st.sampled_from(["a", "bin", "zz"])),
       names=st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "x"]), max_size=2)))
def test_c_row_text_is_the_python_one(image: dict[str, Any], as_row: bool, binary: frozenset[str],
                                      names: list[str] | None) -> None:
    c_form, python_form = _forms(Row(image) if as_row else image, binary, names)
    assert c_form == python_form
    # str of an int, repr of a float: the same objects' texts, their types too
    assert [type(t) for t in c_form[0][1]] == [type(t) for t in python_form[0][1]]


@settings(max_examples=300)
@given(image=st.dictionaries(st.sampled_from(["a", "b", "c", "é", "bin", "<&>", 'q"\\', "\u2028"]), _VALUES),
       as_row=st.booleans(), binary=st.frozensets(st.sampled_from(["a", "bin", "zz"])),
       names=st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "x"]), max_size=2)))
def test_c_row_json_is_the_python_row_text_as_json(image: dict[str, Any], as_row: bool, binary: frozenset[str],
                                                   names: list[str] | None) -> None:
    helpers = c_helpers()
    c_names = None if names is None else list(names)
    py_names = None if names is None else list(names)
    text = helpers.row_json(Row(image) if as_row else image, binary, c_names)
    keys, texts = rows.python_row_text(image, binary, py_names)
    if any(isinstance(t, str) and _has_lone_surrogate(t) for t in [*keys, *texts]):
        assert text is None  # a decline: the Python form words it
        return
    assert text is not None
    assert list(orjson.loads(text).items()) == list(zip(keys, texts))  # the same texts, in the image's order
    assert c_names == py_names
    assert rows.row_json(image, binary) == text


def _has_lone_surrogate(text: str) -> bool:
    # What UTF-8 cannot encode (a str holds no surrogate pairs).
    return any("\ud800" <= char <= "\udfff" for char in text)


def test_row_json_declines_a_lone_surrogate_to_the_python_form() -> None:
    helpers = c_helpers()
    assert helpers.row_json({"a": "\ud800"}, frozenset(), None) is None
    try:
        rows.row_json({"a": "\ud800"}, frozenset())
    except TypeError as exc:  # orjson's words, as before the C form
        assert "surrogates" in str(exc)
    else:
        raise AssertionError("a lone surrogate has no JSON text")


def test_row_text_takes_the_c_form_only_for_dicts() -> None:
    image = {"a": b"\xff", "b": 1.5, "c": True, "d": Decimal("1.10")}
    names: list[str] = []
    assert rows.row_text(image, frozenset(), names) == (["a", "b", "c", "d"], ["/w==", "1.5", "True", "1.10"])
    assert names == ["a"]

    class Image(dict[str, Any]):
        pass
    assert rows.row_text(Image(image), frozenset({"a"})) == rows.python_row_text(image, frozenset({"a"}))
