"""Codecs for TiCDC's Kafka protocols and the registry keyed by TiCDC's protocol names."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any, Final

from pyticdc.codec.base import BaseDecoder, BaseEncoder, ClaimCheckStore, Message
from pyticdc.codec.options import Clock, CodecOptions
from pyticdc.errors import ConfigError
from pyticdc.model import Event

__all__ = [
    "PROTOCOLS",
    "BaseDecoder",
    "BaseEncoder",
    "CodecOptions",
    "Message",
    "canonical_protocol",
    "codec_module",
    "decode",
    "encode",
    "make_decoder",
    "make_encoder",
]

#: TiCDC protocol name → implementing module.
PROTOCOLS: Final[dict[str, str]] = {
    "open-protocol": "pyticdc.codec.open_protocol",
    "canal-json": "pyticdc.codec.canal_json",
    "craft": "pyticdc.codec.craft",
    "debezium": "pyticdc.codec.debezium",
    "simple": "pyticdc.codec.simple",
}
_ALIASES: Final = {"open": "open-protocol", "canal_json": "canal-json", "open_protocol": "open-protocol"}


def canonical_protocol(name: str) -> str:
    """TiCDC's spelling of a protocol name; ConfigError naming the valid ones otherwise."""
    name = _ALIASES.get(name, name)
    if name not in PROTOCOLS:
        raise ConfigError(f"unknown protocol {name!r}; valid protocols: {', '.join(PROTOCOLS)}")
    return name


def codec_module(protocol: str) -> ModuleType:
    """The package implementing ``protocol`` (``pyticdc.codec.<protocol>``)."""
    return importlib.import_module(PROTOCOLS[canonical_protocol(protocol)])


def make_encoder(
    protocol: str, options: Mapping[str, Any] | None = None, *, clock: Clock | None = None,
    claim_check: ClaimCheckStore | None = None, **kwargs: Any,
) -> BaseEncoder:
    """An encoder for ``protocol`` with TiCDC-named options."""
    encoder: BaseEncoder = codec_module(protocol).Encoder(options, clock=clock, claim_check=claim_check, **kwargs)
    return encoder


def make_decoder(
    protocol: str, options: Mapping[str, Any] | None = None, *, claim_check: ClaimCheckStore | None = None,
    **kwargs: Any,
) -> BaseDecoder:
    """A decoder for ``protocol`` with TiCDC-named options."""
    decoder: BaseDecoder = codec_module(protocol).Decoder(options, claim_check=claim_check, **kwargs)
    return decoder


def encode(protocol: str, events: Iterable[Event], **options: Any) -> list[Message]:
    """Encode ``events`` with a one-shot encoder."""
    return make_encoder(protocol, options).encode(events)


def decode(protocol: str, value: bytes | None, key: bytes | None = None, **options: Any) -> list[Event]:
    """Decode one Kafka message with a one-shot decoder."""
    return make_decoder(protocol, options).decode(value, key)
