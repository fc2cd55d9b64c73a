"""Every error pyticdc raises on purpose, under one base class."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = [
    "BrokerError",
    "CaptureError",
    "ChangelogError",
    "ConfigError",
    "DecodeError",
    "EncodeError",
    "KafkaReadError",
    "OracleMismatch",
    "PyticdcError",
    "ReplicaError",
    "raise_decode",
]


class PyticdcError(Exception):
    """Base class of every error pyticdc raises on purpose."""


class DecodeError(PyticdcError):
    """Bytes that are not a valid message of a protocol; names where it went wrong."""

    def __init__(self, protocol: str, reason: str, at: int | str | None = None) -> None:
        self.protocol = protocol
        self.reason = reason
        # A byte offset (binary protocols, framing) or a JSON path ("$.data[0].id").
        self.at = at
        where = "" if at is None else (f" at byte {at}" if isinstance(at, int) else f" at {at}")
        super().__init__(f"{protocol}: {reason}{where}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.protocol, self.reason, self.at))


class EncodeError(PyticdcError):
    """An event a protocol cannot carry with the given options (e.g. message too large)."""

    def __init__(self, protocol: str, reason: str) -> None:
        self.protocol = protocol
        self.reason = reason
        super().__init__(f"{protocol}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.protocol, self.reason))


class ConfigError(PyticdcError, ValueError):
    """An unknown option, or a value outside the option's valid values."""


class ChangelogError(ConfigError):
    """A changelog row that cannot be turned into an event (names the row and the field)."""


class CaptureError(PyticdcError, ValueError):
    """A capture file that cannot be read: missing, unknown format, or a malformed line."""


class KafkaReadError(PyticdcError):
    """Kafka could not deliver what was asked: broker unreachable, offsets gone (data loss), timeout."""


class BrokerError(PyticdcError):
    """The embedded broker is not installed, did not start, or died."""


class ReplicaError(PyticdcError):
    """Changes a replica cannot apply faithfully: a row applied twice or missing, an unknown table."""


class OracleMismatch(PyticdcError, AssertionError):
    """A replica differs from the ground truth; the message names the first differing table and row."""


def raise_decode(protocol: str, reason: str, at: int | str | None = None) -> NoReturn:
    """Raise a DecodeError (a helper so hot paths stay one line)."""
    raise DecodeError(protocol, reason, at)
