"""Helpers of the fast-equals-reference tests: each codec's fast path switched off or called alone, and outcomes
to compare (messages or the error's text; events with floats by their bits)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest

from pyticdc.codec import open_protocol, simple
from pyticdc.codec._fastpath import DECLINES, native
from pyticdc.codec.base import Message
from pyticdc.errors import DecodeError, EncodeError
from pyticdc.model import Event, RowChange, TableInfo

__all__ = ["ReferenceEncoder", "answers_of", "assert_avro_readers_agree", "avro_outcome", "c_helpers", "encoded",
           "open_fast_decode"]


class ReferenceEncoder(simple.Encoder):
    """A Simple encoder taking every row through the general path (no per-table fast writer)."""

    def _fast_json_message(self, row: RowChange) -> Message | None:
        return None


def encoded(encoder: simple.Encoder, events: list[Event]) -> list[Message] | str:
    """The messages of ``events``, or the EncodeError's text: what two encoders must agree on."""
    try:
        return encoder.encode(events)
    except EncodeError as exc:
        return f"EncodeError: {exc}"


def _without_images(event: Any) -> Any:
    """The event with its images taken out (they are compared by bits)."""
    fields = {name: None for name in ("columns", "pre_columns") if getattr(event, name, None) is not None}
    return msgspec.structs.replace(event, **fields) if fields else event


def avro_outcome(decoder: simple.Decoder, value: bytes, reference: bool) -> Any:
    """What a Simple decoder makes of ``value`` by its fast or its reference path, floats compared by bits."""
    try:
        events = decoder.decode_reference(value) if reference else decoder.decode(value)
    except DecodeError as exc:
        return "DecodeError", exc.reason, exc.at
    # Floats by their bits: -0.0 and 0.0 differ, as do NaN payloads.
    # The images compared apart, by bits: an event holding NaN never equals itself.
    return [(_without_images(e), [(k, struct.pack("<d", v) if isinstance(v, float) else v)
                 for image in (getattr(e, "columns", None), getattr(e, "pre_columns", None)) if image
                 for k, v in image.items()]) for e in events]


def assert_avro_readers_agree(encoder: simple.Encoder, table: TableInfo, values: Iterable[bytes]) -> simple.Decoder:
    """Every value decodes alike by the fast and the reference path (both bootstrapped); the fast decoder."""
    fast = simple.Decoder({"encoding-format": "avro"})
    reference = simple.Decoder({"encoding-format": "avro"})
    bootstrap = encoder.bootstrap_message(table).value
    assert bootstrap is not None
    for decoder in (fast, reference):
        decoder.decode(bootstrap)
    for value in values:
        assert avro_outcome(fast, value, False) == avro_outcome(reference, value, True), value
    return fast


def open_fast_decode(decoder: open_protocol.Decoder, key: bytes, value: bytes) -> list[Event] | None:
    """The Open Protocol fast path's events for one message; None where it declines."""
    assert decoder._fast is not None
    try:
        return decoder._fast.decode(key, value)
    except DECLINES:
        return None


@contextmanager
def answers_of(generated: Callable[..., Any], name: str) -> Iterator[list[Any]]:
    """The answers of the C helper ``name`` that the ``generated`` function calls, while the block runs (None: a
    decline): how a test sees that the C form took the rows itself."""
    namespace = generated.__globals__
    helper = namespace[name]
    answers: list[Any] = []

    def counting(*args: Any) -> Any:
        answers.append(helper(*args))
        return answers[-1]
    namespace[name] = counting
    try:
        yield answers
    finally:
        namespace[name] = helper


def c_helpers() -> Any:
    """The C helpers in use (``pyticdc.codec._native``); the test is skipped in the pure-Python form."""
    helpers = native()
    if helpers is None:
        pytest.skip("the pure-Python form: no C helper to check")
    return helpers
