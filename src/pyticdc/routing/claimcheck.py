"""Claim-check storage: where large messages go when ``large-message-handle-option=claim-check`` (§8).

A port of tiflow ``pkg/sink/kafka/claimcheck/claim_check.go`` over a ``file://`` external storage
(``br/pkg/storage`` LocalStorage): the message is written to ``<dir>/<uuid4>.json`` and its location
``<uri>/<file>`` travels in the Kafka message instead.
"""

from __future__ import annotations

import base64
import binascii
import os
import uuid
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

import orjson

from pyticdc.errors import ConfigError, DecodeError

__all__ = ["FileClaimCheckStore", "claim_check_file_name", "claim_check_store"]

_PROTOCOL: Final = "claim-check"
SUPPORTED_SCHEMES: Final = ("file",)


def claim_check_file_name() -> str:
    """Go ``claimcheck.NewFileName``: a random UUID v4 plus ``.json``."""
    return f"{uuid.uuid4()}.json"


def _directory_of(uri: str) -> Path:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        raise ConfigError(
            f"unsupported claim-check storage URI {uri!r}: scheme {parts.scheme or '(none)'!r}; "
            f"supported schemes: {', '.join(SUPPORTED_SCHEMES)}"
        )
    if parts.netloc not in ("", "localhost"):
        # file://dir/x would silently drop "dir"; TiCDC wants an absolute path (file:///dir/x).
        raise ConfigError(f"claim-check storage URI {uri!r} has a host part; use file:///absolute/path")
    path = unquote(parts.path)
    if not path:
        raise ConfigError(f"claim-check storage URI {uri!r} has no path; use file:///absolute/path")
    return Path(path)


class FileClaimCheckStore:
    """A ``ClaimCheckStore`` over a local directory named by a ``file://`` URI."""

    def __init__(self, uri: str, *, raw_value: bool = False) -> None:
        self.directory = _directory_of(uri)
        #: ``claim-check-raw-value``: store the value bytes alone instead of the ``{"key","value"}`` JSON.
        self.raw_value = raw_value
        # LocalStorage.URI() is "file://" + base; FileNameWithPrefix trims one trailing "/" then adds "/" + name.
        self.uri = "file://" + str(self.directory).rstrip("/")

    def location(self, file_name: str) -> str:
        """The location TiCDC puts in the Kafka message (Go ``FileNameWithPrefix``)."""
        return f"{self.uri}/{file_name}"

    def put(self, key: bytes | None, value: bytes) -> str:
        """Write one message as ``<uuid4>.json`` and return its location."""
        file_name = claim_check_file_name()
        if self.raw_value:
            data = bytes(value)
        else:
            # Go json.Marshal of ClaimCheckMessage{Key, Value []byte}: std base64, nil → null, no spaces.
            data = orjson.dumps({
                "key": None if key is None else base64.b64encode(key).decode("ascii"),
                "value": base64.b64encode(value).decode("ascii"),
            })
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / file_name
        # LocalStorage.WriteFile writes a temporary file and renames it, so readers never see half a file.
        temporary = self.directory / f"{file_name}.tmp.{uuid.uuid4()}"
        temporary.write_bytes(data)
        os.replace(temporary, target)
        return self.location(file_name)

    def get(self, location: str) -> tuple[bytes | None, bytes]:
        """Read a stored message back as (key, value); DecodeError if it is missing or corrupt.

        As TiCDC's consumer does, only the file name of ``location`` is used, read from this store.
        """
        file_name = location.rstrip("/").rsplit("/", 1)[-1]
        if not file_name or file_name in (".", ".."):
            raise DecodeError(_PROTOCOL, f"location {location!r} names no file")
        try:
            data = (self.directory / file_name).read_bytes()
        except FileNotFoundError:
            raise DecodeError(_PROTOCOL, f"no stored message at {location!r}") from None
        except OSError as exc:
            raise DecodeError(_PROTOCOL, f"cannot read {location!r}: {exc}") from None
        if self.raw_value:
            return None, data
        return _parse_envelope(data, location)


def _parse_envelope(data: bytes, location: str) -> tuple[bytes | None, bytes]:
    try:
        envelope = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(_PROTOCOL, f"{location}: not JSON ({exc})") from None
    if not isinstance(envelope, dict):
        raise DecodeError(_PROTOCOL, f"{location}: expected a JSON object", "$")
    decoded: dict[str, bytes | None] = {}
    for field in ("key", "value"):
        raw = envelope.get(field)
        if raw is None:
            decoded[field] = None
            continue
        if not isinstance(raw, str):
            raise DecodeError(_PROTOCOL, f"{location}: expected base64 text or null", f"$.{field}")
        try:
            decoded[field] = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise DecodeError(_PROTOCOL, f"{location}: invalid base64", f"$.{field}") from None
    value = decoded["value"]
    # Go unmarshals a null []byte as nil; a message value is never nil, so treat it as empty.
    return decoded["key"], value if value is not None else b""


def claim_check_store(uri: str, *, raw_value: bool = False) -> FileClaimCheckStore:
    """The claim-check store for ``claim-check-storage-uri``; ConfigError for unsupported schemes."""
    return FileClaimCheckStore(uri, raw_value=raw_value)
