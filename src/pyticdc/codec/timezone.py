"""Time-zone lookup for TIMESTAMP rendering (TiCDC's changefeed ``time-zone``)."""

from __future__ import annotations

from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pyticdc.errors import ConfigError

__all__ = ["load_zone"]


@lru_cache(maxsize=64)
def load_zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (``UTC``, ``Asia/Shanghai``); ConfigError if unknown."""
    try:
        return ZoneInfo("UTC" if name in ("", "Local", "System") else name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown time zone {name!r}; use an IANA name such as 'UTC' or 'Asia/Shanghai'") from None
