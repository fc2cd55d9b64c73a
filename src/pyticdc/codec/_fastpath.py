"""The one fast-path mechanism every decoder uses: generated code, declines, speculation.

A protocol's fast path is an optimisation checked against its reference path (the twin readers
of fastavro): it returns the events of the inputs it understands and *declines* everything
else (returns None or raises one of ``DECLINES``); the reference path then judges the message
again and alone reports errors. The conformance suite runs both on the same inputs.

Generated code is compiled here and only here. Names from the wire (column names) enter the
generated source only as ``repr()`` literals (``literal``), never as identifiers.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final, TypeVar

import msgspec

from pyticdc.errors import DecodeError

__all__ = ["DECLINES", "Decline", "compile_function", "literal", "speculate"]

R = TypeVar("R")


class Decline(Exception):  # a control-flow signal, not an error
    """Raised inside a fast path: this input is for the reference path."""


#: What a fast path may raise to decline an input. Lookup, value, range, struct and msgspec
#: errors are how a specialised reader trips over an input outside its assumptions (a missing
#: key, an unexpected type or length); TypeError is deliberately absent: it means a bug.
DECLINES: Final = (
    Decline, DecodeError, LookupError, ValueError, OverflowError, RecursionError, struct.error,
    msgspec.DecodeError,
)


def speculate(fast: Callable[..., R | None], reference: Callable[..., R], *args: Any) -> R:
    """``fast(*args)``, or ``reference(*args)`` when the fast path declines (None or a DECLINES error)."""
    try:
        result = fast(*args)
    except DECLINES:
        result = None
    return reference(*args) if result is None else result


def literal(name: str) -> str:
    """A wire name as a Python literal for generated source (never an identifier)."""
    return repr(name)


def compile_function(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """Compile generated ``source`` defining function ``name`` in ``namespace``; return the function."""
    code = compile(source, f"<pyticdc fast path {name}>", "exec")
    exec(code, namespace)  # the one exec site: sources are built from literal() names only
    function: Callable[..., Any] = namespace[name]
    return function
