"""The one fast-path mechanism every decoder uses: generated code, declines, speculation.

A protocol's fast path is an optimisation checked against its reference path (the twin readers
of fastavro): it returns the events of the inputs it understands and *declines* everything
else (returns None or raises one of ``DECLINES``); the reference path then judges the message
again and alone reports errors. The conformance suite runs both on the same inputs.

Generated code is compiled here and only here. Names from the wire (column names) enter the
generated source only as ``repr()`` literals (``literal``), never as identifiers.

Some fast paths also have C helpers (``pyticdc.codec._native``, built when a C compiler is present at
install). ``native()`` answers that module, or None when it is absent or the environment variable
``PYTICDC_PURE_PYTHON`` is set; the fast path then takes its pure-Python form. Both forms decline
the same way and are checked against the same reference.
"""

from __future__ import annotations

import importlib
import os
import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final, TypeVar

import msgspec

from pyticdc.errors import DecodeError

__all__ = ["DECLINES", "Decline", "compile_function", "in_form", "literal", "native", "speculate", "use_native"]

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


def _load_native() -> ModuleType | None:
    try:
        return importlib.import_module("pyticdc.codec._native")
    except ImportError:  # no C compiler at install: the pure-Python forms
        return None


_NATIVE: Final = _load_native()
_native_in_use: list[ModuleType | None] = [None if os.environ.get("PYTICDC_PURE_PYTHON") else _NATIVE]


def native() -> ModuleType | None:
    """The C helpers the fast paths use now, or None (absent, or ``PYTICDC_PURE_PYTHON`` set)."""
    return _native_in_use[0]


def in_form(name: str) -> str:
    """``name`` of a cache of generated code, for the form in use: code made with the C helpers and code
    made without them are kept apart."""
    return name if _native_in_use[0] is None else f"{name}-native"


def use_native(enabled: bool) -> bool:
    """Use the C helpers (when built) or the pure-Python forms from now on; True if the C ones are in use.

    Code generated before keeps the form it was generated with: callers clear their caches."""
    _native_in_use[0] = _NATIVE if enabled else None
    return _native_in_use[0] is not None
