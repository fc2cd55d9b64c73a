"""The one codec surface every protocol module implements.

A protocol module (``pyticdc.codec.<name>``) exports the same names:

``PROTOCOL``   TiCDC's protocol name (``"canal-json"``).
``OPTIONS``    the option fields (CodecOptions) the protocol accepts.
``Encoder``    ``Encoder(options=None, *, clock=None, **opts)``; ``.encode(events) -> list[Message]``.
``Decoder``    ``Decoder(options=None, **opts)``; ``.decode(value, key=None) -> list[Event]``.
``encode``     ``encode(events, **opts)``: one-shot Encoder.
``decode``     ``decode(value, key=None, **opts)``: one-shot Decoder.
``explain``    ``explain(value, key=None) -> dict``: the wire structure, for people and tools.

Buffers are positional; options keyword-only, spelled as TiCDC spells them or as Python
identifiers. Encoders are deterministic given options and the injected ``clock``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Protocol

import msgspec

from pyticdc.codec.options import Clock, CodecOptions, parse_options, system_clock_ms
from pyticdc.model import Event

__all__ = ["BaseDecoder", "BaseEncoder", "ClaimCheckStore", "Message"]


class ClaimCheckStore(Protocol):
    """Where large-message claim-check puts full messages (injected: codecs do no I/O)."""

    def put(self, key: bytes | None, value: bytes) -> str:
        """Store one message (``{"key","value"}`` JSON or raw value); return its location URI."""

    def get(self, location: str) -> tuple[bytes | None, bytes]:
        """Read back a stored message as (key, value); DecodeError if it is missing or corrupt."""


# gc=False: an encoder makes one per row, and tracking them made the collector walk every batch
# (~10% of a narrow-table encode); a Message only points down at bytes and events, never in a cycle.
class Message(msgspec.Struct, frozen=True, gc=False):
    """One Kafka message as a protocol encodes it: key, value and the events it carries."""

    key: bytes | None
    value: bytes | None
    #: The events this message carries (one, or several rows for Open/Craft batches).
    events: tuple[Event, ...] = ()

    @property
    def rows(self) -> int:
        """Number of row events in the message."""
        return sum(1 for e in self.events if e.kind == "row")

    @property
    def length(self) -> int:
        """TiCDC ``Message.Length()``: key + value + 36 bytes record overhead."""
        return len(self.key or b"") + len(self.value or b"") + 36


class BaseEncoder(ABC):
    """Shared construction of encoders: option parsing and the injected clock."""

    PROTOCOL: ClassVar[str]
    OPTIONS: ClassVar[frozenset[str]]

    def __init__(
        self, options: Mapping[str, Any] | CodecOptions | None = None, *, clock: Clock | None = None,
        claim_check: ClaimCheckStore | None = None, **kwargs: Any,
    ) -> None:
        if isinstance(options, CodecOptions):
            self.options = options if not kwargs else parse_options(
                self.PROTOCOL, self.OPTIONS, {**msgspec.structs.asdict(options), **kwargs}
            )
        else:
            self.options = parse_options(self.PROTOCOL, self.OPTIONS, options, **kwargs)
        #: Milliseconds since the epoch; TiCDC uses time.Now() for Canal ts, Simple buildTs, Debezium ts_ms.
        self.clock: Clock = clock or system_clock_ms
        #: Storage for large-message claim-check (required when that option is on).
        self.claim_check = claim_check
        self._validate()

    def _validate(self) -> None:
        """Check option combinations TiCDC rejects (override per protocol)."""
        return None

    @abstractmethod
    def encode(self, events: Iterable[Event]) -> list[Message]:
        """Encode events bound for one topic partition, batching as TiCDC does."""

    def project(self, event: Event) -> Event | None:
        """The event as a decoder sees it after this encoder (what the protocol can carry).

        None means the encoder emits nothing for it (e.g. a watermark without the extension).
        """
        return event


class BaseDecoder(ABC):
    """Shared construction of decoders."""

    PROTOCOL: ClassVar[str]
    OPTIONS: ClassVar[frozenset[str]]

    def __init__(
        self, options: Mapping[str, Any] | CodecOptions | None = None, *,
        claim_check: ClaimCheckStore | None = None, **kwargs: Any,
    ) -> None:
        if isinstance(options, CodecOptions):
            self.options = options
        else:
            self.options = parse_options(self.PROTOCOL, self.OPTIONS, options, **kwargs)
        #: Storage to resolve claim-check locations from (None: such rows stay handle-key-only).
        self.claim_check = claim_check

    @abstractmethod
    def decode(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode one Kafka message into events; bad bytes raise only DecodeError."""

    def decode_reference(self, value: bytes | None, key: bytes | None = None) -> list[Event]:
        """Decode on the reference path only (no fast-path caches): the oracle of ``decode``."""
        # A decoder without a fast path is its own reference; the five codecs override this.
        return self.decode(value, key)
